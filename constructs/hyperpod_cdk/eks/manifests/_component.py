"""The :class:`Component` record and the rules every component follows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hyperpod_cdk.eks.manifests._k8s import Manifest

# Apply order inside a component: what others refer to first (Namespace, then the CRDs, then the
# identities and permissions), the workloads that use them last.
KIND_ORDER: tuple[str, ...] = (
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "Deployment",
    "DaemonSet",
)

POD_TEMPLATE_KINDS: frozenset[str] = frozenset({"Deployment", "DaemonSet"})


@dataclass(frozen=True)
class Component:
    """One HyperPod dependency as Kubernetes objects, applied together as one manifest.

    :param key: the ``eks.dependencies`` config key (an ``EksDependencies`` field) that turns it on.
    :param title: a human name, for logs and the README.
    :param namespace: the namespace its namespaced objects live in (cluster-scoped objects too
        belong to the component, whatever this says).
    :param manifests: the objects, in apply order: Namespace, CRDs, RBAC, then workloads.
    :param images: every container image its pods run, fully qualified and pinned.
    """

    key: str
    title: str
    namespace: str
    manifests: tuple[dict[str, Any], ...]
    images: tuple[str, ...]


def pod_specs(manifests: Iterable[Manifest]) -> Iterator[Manifest]:
    """The pod specs of the workloads among ``manifests``."""
    for obj in manifests:
        if obj["kind"] in POD_TEMPLATE_KINDS:
            yield obj["spec"]["template"]["spec"]


def images_of(manifests: Iterable[Manifest]) -> tuple[str, ...]:
    """Every container image (init containers included) of ``manifests``, first use first."""
    seen: dict[str, None] = {}
    for spec in pod_specs(manifests):
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            seen.setdefault(container["image"], None)
    return tuple(seen)


def make_component(key: str, title: str, namespace: str, objects: Iterable[Manifest]) -> Component:
    """A component of ``objects``, put in apply order, with its images listed."""
    ordered = tuple(sorted(objects, key=lambda obj: KIND_ORDER.index(obj["kind"])))
    return Component(
        key=key, title=title, namespace=namespace, manifests=ordered, images=images_of(ordered)
    )

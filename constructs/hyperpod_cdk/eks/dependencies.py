"""What HyperPod needs on its EKS cluster, applied before the HyperPod cluster is created."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from hyperpod_cdk.eks.manifests import Component, dependency_components, namespace_manifests


class ManifestTarget(Protocol):
    """An EKS cluster construct that can apply Kubernetes objects."""

    def add_manifest(self, construct_id: str, *objects: dict[str, Any]) -> eks.KubernetesManifest:
        """Apply ``objects`` in order."""
        ...


class HyperPodDependencies(Construct):
    """The HyperPod dependencies on an EKS cluster, one manifest per component.

    Each component (health monitoring agent, deep health check, job
    auto-restart and patching permissions, training and MPI operators, device
    plugins) is a set of Kubernetes objects written in this project, with
    version-pinned images, applied by the cluster's kubectl handler. Nothing
    comes from a git repository at deploy time.

    :param cluster: a :class:`~hyperpod_cdk.eks.cluster.HyperPodEksCluster`
        or :class:`~hyperpod_cdk.eks.cluster.AdoptedEksCluster`.
    :param region: the cluster's region (some images are regional).
    :param enabled: the component keys to install (``EksDependencies.enabled()``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: ManifestTarget,
        region: str,
        enabled: Iterable[str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.components: list[Component] = dependency_components(
            region=region, enabled=enabled, include_namespaces=False
        )
        # The namespaces are shared by several components: one manifest owns them,
        # so switching a component off never deletes a namespace another uses.
        namespaces = namespace_manifests(self.components)
        self.namespaces = cluster.add_manifest("Namespaces", *namespaces) if namespaces else None
        self.manifests: dict[str, eks.KubernetesManifest] = {}
        for component in self.components:
            construct_name = "".join(part.capitalize() for part in component.key.split("_"))
            manifest = cluster.add_manifest(construct_name, *component.manifests)
            if self.namespaces is not None:
                manifest.node.add_dependency(self.namespaces)
            self.manifests[component.key] = manifest

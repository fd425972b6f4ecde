"""What HyperPod needs on its EKS cluster, installed as Helm releases before the HyperPod cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from hyperpod_cdk.eks.cluster import ChartRelease
from hyperpod_cdk.facts.chart import CHART_DIR, Release, release_values, releases_for


class ChartTarget(Protocol):
    """An EKS cluster construct that can install Helm charts (created or adopted)."""

    def add_chart(self, construct_id: str, spec: ChartRelease) -> eks.HelmChart:
        """Install the release ``spec``."""
        ...


class HyperPodDependencies(Construct):
    """The HyperPod dependencies on an EKS cluster: releases of the project's own chart.

    The chart (``hyperpod_cdk/eks/charts/hyperpod-cdk-dependencies``, shipped in the
    package) is uploaded as a CDK asset, so the kubectl handler fetches it from the
    CDK asset bucket (through the S3 gateway endpoint in a closed network): nothing
    comes from a git repository or a public chart repository at deploy time. It is
    installed as one release per namespace (:data:`hyperpod_cdk.facts.chart.RELEASES`)
    holding only the components switched on, with ``wait`` off: the DaemonSets target
    nodes that do not exist until the HyperPod cluster is created.

    Helm refuses to take over an object another release or ``kubectl`` created, so on a
    shared cluster nothing the owner manages is overwritten: the install fails instead,
    and ``make preflight`` names the config change that avoids it.

    :param cluster: a :class:`~hyperpod_cdk.eks.cluster.HyperPodEksCluster` or
        :class:`~hyperpod_cdk.eks.cluster.AdoptedEksCluster`.
    :param region: the cluster's region (the regional images).
    :param enabled: the component keys to install (``EksDependencies.enabled()``).
    :param image_registry: pull every image from this registry (``eks.image_registry``).
    :param extra_tolerations: Kubernetes tolerations added to every pod.
    :param extra_instance_types: ``{nvidiaGpu|neuron|efa: [...]}`` appended to the chart's lists.
    :param image_tags: ``{component key: tag}`` instead of the pinned tags.
    :param workload_namespaces: the task governance teams' namespaces (``hyperpod-ns-<team>``):
        the workload pod admission policy holds their pods as it holds the scientists'
        (no privileged pod, host namespace, hostPath or other ServiceAccount; docs/security.md).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: ChartTarget,
        region: str,
        enabled: Iterable[str],
        image_registry: str | None = None,
        extra_tolerations: Sequence[Mapping[str, Any]] = (),
        extra_instance_types: Mapping[str, Sequence[str]] | None = None,
        image_tags: Mapping[str, str] | None = None,
        workload_namespaces: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        wanted = list(enabled)
        self.releases: list[Release] = releases_for(wanted, workload_namespaces)
        self.charts: dict[str, eks.HelmChart] = {}
        """The Helm releases, by release name."""
        self.chart_asset: s3_assets.Asset | None = None
        if not self.releases:
            return
        self.chart_asset = s3_assets.Asset(self, "ChartAsset", path=str(CHART_DIR))
        for release in self.releases:
            values = release_values(
                release,
                region=region,
                enabled=wanted,
                image_registry=image_registry,
                extra_tolerations=extra_tolerations,
                extra_instance_types=extra_instance_types,
                image_tags=image_tags,
                workload_namespaces=workload_namespaces,
            )
            spec = ChartRelease(
                self.chart_asset, release.name, release.namespace, release.create_namespace, values
            )
            self.charts[release.name] = cluster.add_chart(release.construct_id, spec)

"""The ``hyperpod-cdk-cluster-objects`` chart: what needs the HyperPod cluster to exist.

The chart (``charts/hyperpod-cdk-cluster-objects`` beside this module, shipped in the wheel)
holds, per ``cluster.node_pools`` entry, one ``HyperpodNodeClass`` and one Karpenter
``NodePool`` (HyperPod's managed autoscaling scales nothing without them), and per task
governance team a Role and RoleBinding in the team's namespace. It is released once, as
``hyperpod-cdk-cluster-objects``, by the ``eks-addons`` stack: after the HyperPod cluster and
after the teams' compute quotas (which make their namespaces), never in the dependencies chart
that is installed before the cluster exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct, IDependable

from hyperpod_cdk.config.autoscaling import NodePool
from hyperpod_cdk.config.task_governance import kubernetes_group_of, namespace_of
from hyperpod_cdk.eks.cluster import ChartRelease, install_chart

CHART_DIR = Path(__file__).parent / "charts" / "hyperpod-cdk-cluster-objects"
CHART_NAME = "hyperpod-cdk-cluster-objects"
RELEASE = "hyperpod-cdk-cluster-objects"
# the release's own record (Helm's secret) lives here; the objects are cluster-scoped or in
# the teams' namespaces
NAMESPACE = "aws-hyperpod"


def cluster_objects_values(
    *,
    cluster_arn: str,
    node_pools: Sequence[NodePool] = (),
    teams: Sequence[str] = (),
    hyperpod_training_operator: bool = False,
) -> dict[str, Any]:
    """The chart's values.

    :param cluster_arn: the HyperPod cluster's ARN (a token read from the parameter that
        changes with the cluster, so a replaced cluster changes the release).
    :param node_pools: ``cluster.node_pools``.
    :param teams: the task governance team names.
    :param hyperpod_training_operator: the HyperPod training operator add-on is on (the team
        Role may then submit HyperPodPyTorchJobs too).
    """
    return {
        "clusterArn": cluster_arn,
        "nodePools": [
            {
                "name": pool.name,
                "instanceGroups": list(pool.instance_groups),
                "limits": pool.limits.as_kubernetes(),
            }
            for pool in node_pools
        ],
        "teams": [
            {"name": team, "namespace": namespace_of(team), "group": kubernetes_group_of(team)}
            for team in teams
        ],
        "hyperpodTrainingOperator": hyperpod_training_operator,
    }


class HyperPodClusterObjects(Construct):
    """The release of the cluster-objects chart on the EKS cluster of a HyperPod cluster.

    ``wait`` is off and Helm's timeout is 5 minutes: a ``HyperpodNodeClass`` becomes Ready
    only once the cluster's autoscaling is InService, which Helm's wait cannot see (it waits for
    workloads, not for a custom object's status), so waiting would only hold the stack for
    the timeout. The objects are applied; ``kubectl get hyperpodnodeclass,nodepool`` shows when
    they are Ready.

    :param cluster: the EKS cluster (its kubectl handler installs the release).
    :param cluster_arn: the HyperPod cluster's ARN, through the parameter that changes with it.
    :param node_pools: ``cluster.node_pools``.
    :param teams: the task governance team names (their namespaces must exist: wait for the
        quotas with :meth:`wait_for`).
    :param hyperpod_training_operator: the HyperPod training operator add-on is on.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        cluster_arn: str,
        node_pools: Sequence[NodePool] = (),
        teams: Sequence[str] = (),
        hyperpod_training_operator: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.values = cluster_objects_values(
            cluster_arn=cluster_arn,
            node_pools=node_pools,
            teams=teams,
            hyperpod_training_operator=hyperpod_training_operator,
        )
        self.chart_asset = s3_assets.Asset(self, "ChartAsset", path=str(CHART_DIR))
        self.chart = install_chart(
            self,
            "Release",
            cluster,
            ChartRelease(self.chart_asset, RELEASE, NAMESPACE, True, self.values),
        )

    def wait_for(self, *dependencies: IDependable) -> None:
        """Install the release after ``dependencies`` (the quotas, the HyperPod nodes)."""
        for dependency in dependencies:
            self.chart.node.add_dependency(dependency)

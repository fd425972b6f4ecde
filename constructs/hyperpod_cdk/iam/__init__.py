"""IAM of a HyperPod environment."""

from hyperpod_cdk.iam.cluster_role import ClusterAutoScalingRole
from hyperpod_cdk.iam.execution_role import CLUSTER_INSTANCE_POLICY, ExecutionRole

__all__ = ["CLUSTER_INSTANCE_POLICY", "ClusterAutoScalingRole", "ExecutionRole"]

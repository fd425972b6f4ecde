"""The role HyperPod assumes to scale an EKS-orchestrated cluster (Karpenter autoscaling)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from hyperpod_cdk.compliance.nag import acknowledge, nag_account, nag_partition, nag_region


class ClusterAutoScalingRole(Construct):
    """The ``ClusterRole`` of a HyperPod cluster with Karpenter autoscaling.

    Trusted by ``hyperpod.sagemaker.amazonaws.com``; it may add and delete
    nodes of HyperPod clusters in this account and region, and create KMS
    grants for encrypted node volumes only through SageMaker (HyperPod user
    guide "Create an IAM role for HyperPod autoscaling with Karpenter").

    To use an existing role instead, pass its ARN to
    :class:`~hyperpod_cdk.cluster.HyperPodCluster` (``cluster_role_arn``).

    :param role_path: IAM path of the role; ``/`` when left out.
    """

    def __init__(self, scope: Construct, construct_id: str, *, role_path: str = "/") -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        clusters = stack.format_arn(service="sagemaker", resource="cluster", resource_name="*")
        keys = stack.format_arn(service="kms", resource="key", resource_name="*")
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("hyperpod.sagemaker.amazonaws.com"),
            description="HyperPod autoscaling (Karpenter) of the cluster's instance groups",
            path=role_path,
        )
        policy = iam.ManagedPolicy(
            self,
            "Policy",
            statements=[
                iam.PolicyStatement(
                    sid="ScaleClusterNodes",
                    actions=["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
                    resources=[clusters],
                ),
                iam.PolicyStatement(
                    sid="GrantsForNodeVolumes",
                    actions=["kms:CreateGrant", "kms:DescribeKey"],
                    resources=[keys],
                    conditions={
                        "StringEquals": {
                            "kms:ViaService": f"sagemaker.{stack.region}.amazonaws.com"
                        },
                        "Bool": {"kms:GrantIsForAWSResource": "true"},
                    },
                ),
            ],
        )
        policy.attach_to_role(self.role)
        where = f"{nag_partition(self)}:{{}}:{nag_region(self)}:{nag_account(self)}"
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{where.format('sagemaker')}:cluster/*]",
            "The role is a property of the cluster it scales, so the cluster's id-based ARN cannot be "
            "named in it; limited to HyperPod clusters of this account and region.",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{where.format('kms')}:key/*]",
            "Grants on the volume keys of new nodes, only through SageMaker and only for AWS resources "
            "(kms:ViaService and kms:GrantIsForAWSResource conditions).",
        )
        self.policy = policy

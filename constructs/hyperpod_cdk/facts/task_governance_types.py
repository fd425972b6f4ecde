"""Which regions CloudFormation offers the task governance types in, and the custom-resource
types that stand in elsewhere (pure Python: ``make preflight`` reads it without the CDK)."""

from __future__ import annotations

SCHEDULER_CONFIG_TYPE = "AWS::SageMaker::ClusterSchedulerConfig"
COMPUTE_QUOTA_TYPE = "AWS::SageMaker::ComputeQuota"

# Where CloudFormation has each type natively: the regions of facts.REGIONS where every source
# AWS publishes agrees (read 2026-11-27); anywhere else the custom resource makes the object.
# - cfn-lint 1.58.0's regional registry data (data/schemas/providers/<region>.json, registry data
#   of 2026-10-20T22:11:15Z; me-south-1 has no file there) names the type in the region;
# - where the type's registry schema lists its regions (AWS::SageMaker::ComputeQuota: "Available
#   in 15 regions (...)" in its description, cfn-lint data/schemas/resources/37c2673eb8818672.json,
#   also on the CDK CfnComputeQuota page, aws-cdk-lib v2.277.0), the region is on that list. The
#   two disagree on ca-central-1 (in the provider data, not in the schema's list): it takes the
#   custom resource until both agree. ClusterSchedulerConfig's schema lists no regions, so the
#   provider data alone decides.
# `make preflight` asks CloudFormation (DescribeType) in the config's region, which settles it
# on the account; tests/eks/test_task_governance_types.py holds this table to the intersection,
# reading cfn-lint's data at test time.
NATIVE_REGIONS_SOURCE = (
    "cfn-lint 1.58.0 data/schemas/providers (registry data of 2026-10-20) intersected with the "
    "regions a type's registry schema lists (ComputeQuota: 15 regions)"
)
NATIVE_REGIONS: dict[str, frozenset[str]] = {
    SCHEDULER_CONFIG_TYPE: frozenset({
        "ap-northeast-1", "ap-south-1", "eu-central-1", "eu-north-1", "eu-south-2",
        "us-east-1", "us-west-1",
    }),
    COMPUTE_QUOTA_TYPE: frozenset({
        "ap-south-1", "ap-southeast-1", "ap-southeast-2", "eu-central-1",
        "eu-west-1", "eu-west-2", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
    }),
}  # fmt: skip

CUSTOM_TYPES = {
    SCHEDULER_CONFIG_TYPE: "Custom::HyperPodClusterSchedulerConfig",
    COMPUTE_QUOTA_TYPE: "Custom::HyperPodComputeQuota",
}


def is_native(resource_type: str, region: str) -> bool:
    """True when CloudFormation offers ``resource_type`` in ``region`` (:data:`NATIVE_REGIONS`)."""
    return region in NATIVE_REGIONS[resource_type]


__all__ = [
    "COMPUTE_QUOTA_TYPE",
    "CUSTOM_TYPES",
    "NATIVE_REGIONS",
    "NATIVE_REGIONS_SOURCE",
    "SCHEDULER_CONFIG_TYPE",
    "is_native",
]

"""Which regions CloudFormation offers the task governance types in, and the custom-resource
types that stand in elsewhere (pure Python: ``make preflight`` reads it without the CDK)."""

from __future__ import annotations

SCHEDULER_CONFIG_TYPE = "AWS::SageMaker::ClusterSchedulerConfig"
COMPUTE_QUOTA_TYPE = "AWS::SageMaker::ComputeQuota"

# Where CloudFormation has each type: the regions of facts.REGIONS whose resource provider
# list in cfn-lint 1.58.0 (data/schemas/providers/<region>.json, registry data of
# 2026-10-20T22:11:15Z, read 2026-11-25) names it. Elsewhere (me-south-1 has no file there) the
# custom resource makes the object. `make preflight` asks CloudFormation (DescribeType) in the
# config's region; tests/eks/test_task_governance.py holds this table to cfn-lint's data.
NATIVE_REGIONS_SOURCE = "cfn-lint 1.58.0 data/schemas/providers, registry data of 2026-10-20"
NATIVE_REGIONS: dict[str, frozenset[str]] = {
    SCHEDULER_CONFIG_TYPE: frozenset({
        "ap-northeast-1", "ap-south-1", "eu-central-1", "eu-north-1", "eu-south-2",
        "us-east-1", "us-west-1",
    }),
    COMPUTE_QUOTA_TYPE: frozenset({
        "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ca-central-1", "eu-central-1",
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

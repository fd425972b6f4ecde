"""Preflight of eks.task_governance: the path of each type in the region (DescribeType), and
existing access entries of team principals on an adopted cluster (ListAccessEntries)."""

from __future__ import annotations

from ops_testkit import StubbedAws, by_name, environment

from hyperpod_cdk.facts.task_governance_types import COMPUTE_QUOTA_TYPE, SCHEDULER_CONFIG_TYPE
from hyperpod_ops import task_governance

ADOPTED = "arn:aws:eks:us-west-2:111122223333:cluster/shared"
RESEARCH = "arn:aws:iam::111122223333:role/ResearchScientists"


def described(aws: StubbedAws, type_name: str) -> None:
    aws.stub("cloudformation").add_response(
        "describe_type",
        {"TypeName": type_name, "Type": "RESOURCE"},
        {"Type": "RESOURCE", "TypeName": type_name},
    )


def test_us_west_2_takes_the_custom_resource_for_the_policy(aws: StubbedAws) -> None:
    aws.error("cloudformation", "describe_type", "TypeNotFoundException")
    described(aws, COMPUTE_QUOTA_TYPE)
    checks = by_name(task_governance.check_types(environment("eks-full"), aws("cloudformation")))
    policy = checks["task governance ClusterSchedulerConfig"]
    assert (policy.outcome, policy.detail) == ("pass", "us-west-2: custom resource (SageMaker API)")
    quota = checks["task governance ComputeQuota"]
    assert (quota.outcome, quota.detail) == ("pass", "us-west-2: CloudFormation type")


def test_a_type_the_table_wrongly_calls_native_fails(aws: StubbedAws) -> None:
    aws.error("cloudformation", "describe_type", "TypeNotFoundException")
    aws.error("cloudformation", "describe_type", "TypeNotFoundException")
    checks = by_name(task_governance.check_types(environment("eks-full"), aws("cloudformation")))
    quota = checks["task governance ComputeQuota"]
    assert quota.outcome == "fail" and "remove the region from NATIVE_REGIONS" in (quota.fix or "")


def test_a_region_that_now_offers_the_type_passes_with_advice(aws: StubbedAws) -> None:
    described(aws, SCHEDULER_CONFIG_TYPE)
    described(aws, COMPUTE_QUOTA_TYPE)
    checks = by_name(task_governance.check_types(environment("eks-full"), aws("cloudformation")))
    assert "now offers" in checks["task governance ClusterSchedulerConfig"].detail


def test_skipped_without_task_governance(aws: StubbedAws) -> None:
    (check,) = task_governance.check_types(environment("default"), aws("cloudformation"))
    assert check.outcome == "skip"


def _adopted_with_teams() -> object:
    return environment(
        "eks-existing-cluster",
        {
            "eks.addons.task_governance": True,
            "eks.task_governance": {
                "teams": [
                    {
                        "name": "research",
                        "quota": [{"instance_type": "ml.g6e.12xlarge", "count": 1}],
                        "principals": [RESEARCH],
                    }
                ]
            },
        },
    )


def test_a_team_principal_with_an_entry_on_the_adopted_cluster_fails_by_name(
    aws: StubbedAws,
) -> None:
    config = _adopted_with_teams()
    name = config.eks.cluster_arn.rsplit("/", 1)[1]  # type: ignore[attr-defined]
    aws.stub("eks").add_response(
        "list_access_entries", {"accessEntries": [RESEARCH]}, {"clusterName": name}
    )
    (check,) = task_governance.check_team_access_entries(config, aws("eks"))  # type: ignore[arg-type]
    assert check.outcome == "fail"
    assert check.detail.startswith(f"{RESEARCH} already has an access entry on {name}")


def test_team_principals_without_entries_pass(aws: StubbedAws) -> None:
    config = _adopted_with_teams()
    name = config.eks.cluster_arn.rsplit("/", 1)[1]  # type: ignore[attr-defined]
    aws.stub("eks").add_response(
        "list_access_entries",
        {"accessEntries": ["arn:aws:iam::111122223333:role/Other"]},
        {"clusterName": name},
    )
    (check,) = task_governance.check_team_access_entries(config, aws("eks"))  # type: ignore[arg-type]
    assert check.outcome == "pass"


def test_created_cluster_skips_the_access_entry_check(aws: StubbedAws) -> None:
    (check,) = task_governance.check_team_access_entries(environment("eks-full"), aws("eks"))
    assert check.outcome == "skip"

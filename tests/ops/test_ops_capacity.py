"""Preflight capacity checks: AZ IDs, cluster-usage quotas, training plans."""

from __future__ import annotations

import pytest
from ops_testkit import (
    ACCOUNT,
    REGION,
    StubbedAws,
    availability_zones,
    by_name,
    environment,
    quotas,
    training_plan,
)

from hyperpod_ops.capacity import (
    check_availability_zones,
    check_quotas,
    check_training_plans,
    referenced_az_ids,
)

PLAN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/p5-reserved"

# -- availability zones ----------------------------------------------------------------------


def test_every_az_id_of_the_config_is_looked_up() -> None:
    config = environment("full")
    assert sorted(referenced_az_ids(config)) == ["usw2-az1", "usw2-az2", "usw2-az3"]
    assert (
        "cluster.instance_groups[3].availability_zone_id" in referenced_az_ids(config)["usw2-az3"]
    )


def test_existing_az_ids_pass(aws: StubbedAws) -> None:
    config = environment("default")
    availability_zones(aws, {"usw2-az2": "us-west-2b"})
    (check,) = check_availability_zones(config, aws("ec2"))
    assert check.outcome == "pass"
    assert "us-west-2b" in check.detail


def test_an_unknown_az_id_fails_with_the_key_that_names_it(aws: StubbedAws) -> None:
    config = environment("default", {"network.availability_zone_id": "usw2-az9"})
    availability_zones(aws, {}, wanted=["usw2-az9"])
    (check,) = check_availability_zones(config, aws("ec2"))
    assert check.outcome == "fail"
    assert "usw2-az9" in check.detail and "network.availability_zone_id" in check.detail
    assert check.fix and "describe-availability-zones" in check.fix


def test_one_missing_az_among_several(aws: StubbedAws) -> None:
    config = environment("full")
    availability_zones(
        aws,
        {"usw2-az1": "us-west-2a", "usw2-az2": "us-west-2b"},
        wanted=["usw2-az1", "usw2-az2", "usw2-az3"],
    )
    checks = by_name(check_availability_zones(config, aws("ec2")))
    assert checks["availability zone usw2-az1"].outcome == "pass"
    assert checks["availability zone usw2-az3"].outcome == "fail"


def test_an_impaired_az_fails(aws: StubbedAws) -> None:
    config = environment("default")
    availability_zones(aws, {"usw2-az2": "us-west-2b"}, states={"usw2-az2": "impaired"})
    (check,) = check_availability_zones(config, aws("ec2"))
    assert check.outcome == "fail" and "impaired" in check.detail


# -- quotas ----------------------------------------------------------------------------------


def test_quotas_that_cover_the_groups_pass(aws: StubbedAws) -> None:
    config = environment("default")  # m5.2xlarge x1, m5.4xlarge x1, p5.48xlarge x2
    quotas(aws, {"ml.m5.2xlarge": 1, "ml.m5.4xlarge": 4, "ml.p5.48xlarge": 2})
    checks = by_name(check_quotas(config, aws("service-quotas")))
    assert {c.outcome for c in checks.values()} == {"pass"}
    assert set(checks) == {"quota ml.m5.2xlarge", "quota ml.m5.4xlarge", "quota ml.p5.48xlarge"}


def test_counts_of_one_type_are_summed_over_the_groups(aws: StubbedAws) -> None:
    # existing-vpc-fsx: controller and login are both ml.m5.2xlarge (1 + 1)
    config = environment("existing-vpc-fsx")
    quotas(aws, {"ml.m5.2xlarge": 1, "ml.g5.12xlarge": 2})
    checks = by_name(check_quotas(config, aws("service-quotas")))
    low = checks["quota ml.m5.2xlarge"]
    assert low.outcome == "fail"
    assert "is 1; groups controller, login ask for 2" in low.detail
    assert low.fix and "--quota-code L-00000001" in low.fix and "--desired-value 2" in low.fix
    assert checks["quota ml.g5.12xlarge"].outcome == "pass"


def test_a_quota_too_low_fails(aws: StubbedAws) -> None:
    config = environment("default")
    quotas(aws, {"ml.m5.2xlarge": 1, "ml.m5.4xlarge": 1, "ml.p5.48xlarge": 0})
    check = by_name(check_quotas(config, aws("service-quotas")))["quota ml.p5.48xlarge"]
    assert check.outcome == "fail"
    assert '"ml.p5.48xlarge for cluster usage" is 0; group gpu asks for 2' in check.detail
    assert check.fix and "request-service-quota-increase" in check.fix


def test_a_missing_quota_fails(aws: StubbedAws) -> None:
    config = environment("default")
    # only the training-job quota of p5 exists (the helper always adds it): not cluster usage
    quotas(aws, {"ml.m5.2xlarge": 1, "ml.m5.4xlarge": 1})
    check = by_name(check_quotas(config, aws("service-quotas")))["quota ml.p5.48xlarge"]
    assert check.outcome == "fail"
    assert 'no quota "ml.p5.48xlarge for cluster usage"' in check.detail
    assert check.fix and "Service Quotas" in check.fix


def test_quotas_are_read_from_every_page(aws: StubbedAws) -> None:
    config = environment("default")
    quotas(aws, {"ml.m5.2xlarge": 1, "ml.m5.4xlarge": 1, "ml.p5.48xlarge": 2}, pages=3)
    checks = check_quotas(config, aws("service-quotas"))
    assert [c.outcome for c in checks] == ["pass", "pass", "pass"]


def test_a_flexible_group_needs_room_left_by_the_fixed_groups(aws: StubbedAws) -> None:
    # full: flex asks for 4 of g6e.12xlarge | g6e.24xlarge | g5.12xlarge
    values = {
        "ml.m5.4xlarge": 2,
        "ml.p5.48xlarge": 4,
        "ml.p4d.24xlarge": 2,
        "ml.c5.9xlarge": 2,
        "ml.g6e.12xlarge": 1,
        "ml.g6e.24xlarge": 1,
        "ml.g5.12xlarge": 1,
    }
    quotas(aws, values)
    check = by_name(check_quotas(environment("full"), aws("service-quotas")))["quota group flex"]
    assert check.outcome == "fail" and "room for 3" in check.detail
    quotas(aws, {**values, "ml.g5.12xlarge": 2})
    check = by_name(check_quotas(environment("full"), aws("service-quotas")))["quota group flex"]
    assert check.outcome == "pass"


# -- training plans --------------------------------------------------------------------------


def test_no_training_plan_is_skipped(aws: StubbedAws) -> None:
    (check,) = check_training_plans(environment("default"), aws("sagemaker"))
    assert check.outcome == "skip"


def test_an_active_matching_plan_passes(aws: StubbedAws) -> None:
    training_plan(aws, "p5-reserved", count=4)
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.name == "training plan of gpu-reserved"
    assert check.outcome == "pass", check


def test_a_missing_plan_fails(aws: StubbedAws) -> None:
    aws.error("sagemaker", "describe_training_plan", "ResourceNotFound",
              {"TrainingPlanName": "p5-reserved"})  # fmt: skip
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.outcome == "fail" and "does not exist" in check.detail


@pytest.mark.parametrize("status", ["Scheduled", "Expired", "Pending", "Failed"])
def test_a_plan_that_is_not_active_fails(aws: StubbedAws, status: str) -> None:
    training_plan(aws, "p5-reserved", status=status)
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.outcome == "fail" and f"is {status}" in check.detail


def test_a_plan_of_another_instance_type_fails(aws: StubbedAws) -> None:
    training_plan(aws, "p5-reserved", instance_type="ml.p4d.24xlarge")
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.outcome == "fail"
    assert "ml.p4d.24xlarge in usw2-az2" in check.detail and "runs ml.p5.48xlarge" in check.detail


def test_a_plan_in_another_az_fails(aws: StubbedAws) -> None:
    training_plan(aws, "p5-reserved", az_id="usw2-az1")
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.outcome == "fail" and "usw2-az1" in check.detail and "in usw2-az2" in check.detail


def test_the_group_az_id_is_the_one_compared(aws: StubbedAws) -> None:
    config = environment(
        "default",
        {
            "network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"},
            "cluster.instance_groups[2].training_plan_arn": PLAN,
            "cluster.instance_groups[2].availability_zone_id": "usw2-az3",
        },
    )
    training_plan(aws, "p5-reserved", az_id="usw2-az2", count=2)
    (check,) = check_training_plans(config, aws("sagemaker"))
    assert check.outcome == "fail" and "in usw2-az3" in check.detail


def test_a_plan_for_training_jobs_only_fails(aws: StubbedAws) -> None:
    training_plan(aws, "p5-reserved", targets=("training-job",))
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.outcome == "fail" and "hyperpod-cluster" in check.detail


def test_a_plan_smaller_than_the_group_fails(aws: StubbedAws) -> None:
    training_plan(aws, "p5-reserved", count=2)  # full's gpu-reserved asks for 4
    (check,) = check_training_plans(environment("full"), aws("sagemaker"))
    assert check.outcome == "fail" and "reserves 2" in check.detail and "ask for 4" in check.detail

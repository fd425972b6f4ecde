"""Preflight checks of the instance groups (issue 15): the customer managed EBS keys, the AMI
under an external accounting database, and the Slurm node types and partitions of a deployed
cluster."""

from __future__ import annotations

from ops_testkit import (
    ACCOUNT,
    StubbedAws,
    ami_dates,
    cluster_absent,
    cluster_present,
    ebs_key,
    environment,
    key_policy,
)

from hyperpod_cdk import facts
from hyperpod_ops.instance_groups import (
    check_accounting_ami,
    check_ebs_keys,
    check_partitions,
)

G = "cluster.instance_groups"
KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
AMI = "ami-0123456789abcdef0"

# -- EBS keys ----------------------------------------------------------------------------------


def one_key_check(aws: StubbedAws, **key: object) -> object:
    config = environment("full", {f"{G}[2].ebs_kms_key_arn": KEY})
    ebs_key(aws, KEY, **key)  # type: ignore[arg-type]
    (check,) = check_ebs_keys(config, aws("kms"))
    aws.verify()
    return check


def test_the_default_key_policy_lets_the_execution_role_create_grants() -> None:
    check = one_key_check(StubbedAws())
    assert check.outcome == "pass"
    assert check.name == "ebs keys: gpu-reserved"


def test_a_disabled_key_fails() -> None:
    check = one_key_check(StubbedAws(), state="Disabled")
    assert check.failed and "its state is Disabled, not Enabled" in check.detail


def test_an_asymmetric_key_fails() -> None:
    check = one_key_check(StubbedAws(), spec="RSA_2048")
    assert check.failed and "EBS takes symmetric keys only" in check.detail


def test_a_policy_without_create_grant_for_the_account_fails() -> None:
    policy = key_policy(
        Effect="Allow",
        Principal={"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
        Action=["kms:Encrypt", "kms:Decrypt"],
        Resource="*",
    )
    check = one_key_check(StubbedAws(), policy=policy)
    assert check.failed
    assert "create grants" in check.detail
    assert f"arn:aws:iam::{ACCOUNT}:root" in check.fix


def test_create_grant_only_under_an_encryption_context_fails() -> None:
    """HyperPod passes no encryption context (SageMaker developer guide)."""
    policy = key_policy(
        Effect="Allow",
        Principal={"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
        Action="kms:Create*",
        Resource="*",
        Condition={"StringEquals": {"kms:EncryptionContext:team": "ml"}},
    )
    check = one_key_check(StubbedAws(), policy=policy)
    assert check.failed and "encryption-context" in check.detail


def test_a_configured_execution_role_named_in_the_policy_passes() -> None:
    role = f"arn:aws:iam::{ACCOUNT}:role/hyperpod-nodes"
    config = environment(
        "full", {f"{G}[2].ebs_kms_key_arn": KEY, "cluster.execution_role_arn": role}
    )
    aws = StubbedAws()
    policy = key_policy(
        Effect="Allow", Principal={"AWS": [role]}, Action="kms:CreateGrant", Resource="*"
    )
    ebs_key(aws, KEY, policy=policy)
    (check,) = check_ebs_keys(config, aws("kms"))
    assert check.outcome == "pass"


def test_a_missing_key_fails_with_its_key_path() -> None:
    aws = StubbedAws()
    config = environment("full", {f"{G}[2].ebs_kms_key_arn": KEY})
    aws.error("kms", "describe_key", "NotFoundException", {"KeyId": KEY})
    (check,) = check_ebs_keys(config, aws("kms"))
    assert check.failed and "does not exist" in check.detail
    assert f"{G}[2].ebs_kms_key_arn" in check.fix


def test_an_unreadable_policy_is_skipped_with_the_reason() -> None:
    aws = StubbedAws()
    config = environment("full", {f"{G}[2].ebs_kms_key_arn": KEY})
    ebs_key(aws, KEY, readable=False)
    (check,) = check_ebs_keys(config, aws("kms"))
    assert check.outcome == "skip" and "kms:GetKeyPolicy denied" in check.detail


def test_groups_sharing_a_key_are_checked_once() -> None:
    config = environment("full", {f"{G}[2].ebs_kms_key_arn": KEY, f"{G}[1].ebs_kms_key_arn": KEY})
    aws = StubbedAws()
    ebs_key(aws, KEY)
    (check,) = check_ebs_keys(config, aws("kms"))
    assert check.name == "ebs keys: login, gpu-reserved"


def test_no_keys_nothing_asked() -> None:
    config = environment("full", {f"{G}[2].ebs_kms_key_arn": None})
    (check,) = check_ebs_keys(config, StubbedAws()("kms"))
    assert check.outcome == "skip"


# -- the AMI under an external accounting database -----------------------------------------------


NO_IMAGE = {f"{G}[5].image_id": None}  # the cpu group of the full example has one


def test_new_groups_without_image_get_the_current_ami() -> None:
    aws = StubbedAws()
    config = environment("full", NO_IMAGE)
    cluster_absent(aws, config.cluster_name)
    checks = check_accounting_ami(config, aws("ec2"), aws("sagemaker"))
    assert [c.outcome for c in checks] == ["pass"]
    assert "HyperPod's current AMI" in checks[0].detail


def test_an_image_released_before_the_minimum_fails() -> None:
    aws = StubbedAws()
    config = environment("full", {**NO_IMAGE, f"{G}[2].image_id": AMI})
    cluster_absent(aws, config.cluster_name)
    ami_dates(aws, {AMI: "2026-05-01T10:00:00.000Z"})
    checks = {c.name: c for c in check_accounting_ami(config, aws("ec2"), aws("sagemaker"))}
    check = checks["accounting database AMI: gpu-reserved"]
    assert check.failed
    assert f"released after {facts.ACCOUNTING_MIN_AMI_DATE}" in check.detail
    assert "update-cluster-software" in check.fix


def test_a_deployed_group_is_judged_by_the_ami_it_runs() -> None:
    aws = StubbedAws()
    config = environment("full", NO_IMAGE)
    groups = [
        {
            "InstanceGroupName": g.name,
            "CurrentImageId": AMI,
            "CurrentCount": 1,
            "TargetCount": 1,
            "InstanceType": "ml.m5.2xlarge",
        }
        for g in config.cluster.instance_groups
    ]
    cluster_present(aws, config.cluster_name, groups=groups)
    ami_dates(aws, {AMI: "2026-10-02T00:00:00.000Z"})
    (check,) = check_accounting_ami(config, aws("ec2"), aws("sagemaker"))
    assert check.outcome == "pass"
    assert check.detail == f"{AMI} was released on 2026-10-02"


def test_an_image_that_cannot_be_described_is_skipped() -> None:
    aws = StubbedAws()
    config = environment("full", {**NO_IMAGE, f"{G}[2].image_id": AMI})
    cluster_absent(aws, config.cluster_name)
    aws.stub("ec2").add_response("describe_images", {"Images": []}, {"ImageIds": [AMI]})
    checks = {c.name: c for c in check_accounting_ami(config, aws("ec2"), aws("sagemaker"))}
    assert checks["accounting database AMI: gpu-reserved"].outcome == "skip"


def test_no_accounting_database_nothing_asked() -> None:
    (check,) = check_accounting_ami(environment("minimal"), StubbedAws()("ec2"), None)
    assert check.outcome == "skip"


# -- node types and partitions of a deployed cluster -----------------------------------------------


def deployed(config, **changes: dict) -> list[dict]:
    groups = []
    for group in config.cluster.instance_groups:
        slurm = {"NodeType": group.effective_node_type}
        if group.effective_partition:
            slurm["PartitionNames"] = [group.effective_partition]
        slurm.update(changes.get(group.name, {}))
        groups.append(
            {
                "InstanceGroupName": group.name,
                "CurrentCount": 1,
                "TargetCount": 1,
                "InstanceType": "ml.m5.2xlarge",
                "SlurmConfig": slurm,
            }
        )
    return groups


def test_a_new_cluster_has_every_partition_free() -> None:
    aws = StubbedAws()
    config = environment("full")
    cluster_absent(aws, config.cluster_name)
    (check,) = check_partitions(config, aws("sagemaker"))
    assert check.outcome == "pass" and "is new" in check.detail


def test_a_changed_node_type_fails() -> None:
    aws = StubbedAws()
    config = environment("full")
    cluster_present(
        aws, config.cluster_name, groups=deployed(config, login={"NodeType": "Compute"})
    )
    (check,) = check_partitions(config, aws("sagemaker"))
    assert check.failed and "login is a Compute group, not Login" in check.detail


def test_a_renamed_partition_is_reported() -> None:
    aws = StubbedAws()
    config = environment("full")
    cluster_present(
        aws,
        config.cluster_name,
        groups=deployed(config, **{"gpu-reserved": {"PartitionNames": ["old"]}}),
    )
    (check,) = check_partitions(config, aws("sagemaker"))
    assert check.outcome == "pass"
    assert (
        f"gpu-reserved: old -> {config.cluster.instance_groups[2].effective_partition}"
        in check.detail
    )


def test_eks_has_no_partitions() -> None:
    (check,) = check_partitions(environment("eks-minimal"), None)
    assert check.outcome == "skip"

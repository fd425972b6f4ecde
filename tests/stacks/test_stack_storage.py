"""The storage stack: FSx for Lustre from the config, the data bucket, retention and pinned logical ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Annotations, Match
from stack_testkit import get_att, ref, shipped_params

CREATED_FSX = shipped_params(
    lambda c: c.storage.fsx.enabled and c.storage.fsx.file_system_id is None
)
ADOPTED_FSX = shipped_params(
    lambda c: c.storage.fsx.enabled and c.storage.fsx.file_system_id is not None
)


def file_system(synth) -> dict:
    return synth.template("storage")["Resources"]["FileSystem"]


def lustre(synth) -> dict:
    return file_system(synth)["Properties"]["LustreConfiguration"]


@pytest.mark.parametrize("path", CREATED_FSX)
def test_file_system_is_persistent_2_lustre_on_ssd(path: Path, synthesized) -> None:
    synth = synthesized(path)
    props = file_system(synth)["Properties"]
    assert (props["FileSystemType"], props["StorageType"]) == ("LUSTRE", "SSD")
    assert lustre(synth)["DeploymentType"] == "PERSISTENT_2"


@pytest.mark.parametrize("path", CREATED_FSX)
def test_file_system_capacity_version_and_throughput_come_from_the_config(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    fsx = synth.config.storage.fsx
    props = file_system(synth)["Properties"]
    assert props["StorageCapacity"] == fsx.storage_capacity_gib
    assert props["FileSystemTypeVersion"] == fsx.lustre_version
    assert lustre(synth)["PerUnitStorageThroughput"] == fsx.throughput_per_tib
    assert lustre(synth)["DataCompressionType"] == fsx.compression
    assert lustre(synth)["AutomaticBackupRetentionDays"] == fsx.backup_retention_days


@pytest.mark.parametrize("path", CREATED_FSX)
def test_file_system_efa_flag_comes_from_the_config(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert lustre(synth).get("EfaEnabled", False) is synth.config.storage.fsx.efa_enabled


@pytest.mark.parametrize("path", CREATED_FSX)
def test_file_system_metadata_mode_comes_from_metadata_iops(path: Path, synthesized) -> None:
    synth = synthesized(path)
    iops = synth.config.storage.fsx.metadata_iops
    expected = {"Mode": "USER_PROVISIONED", "Iops": iops} if iops else {"Mode": "AUTOMATIC"}
    assert lustre(synth)["MetadataConfiguration"] == expected


def test_file_system_lustre_2_12_has_no_metadata_configuration(build_variant) -> None:
    synth = build_variant({"storage.fsx.lustre_version": "2.12"}, base="minimal")
    assert "MetadataConfiguration" not in lustre(synth)
    assert file_system(synth)["Properties"]["FileSystemTypeVersion"] == "2.12"


@pytest.mark.parametrize("path", CREATED_FSX)
def test_file_system_is_in_the_compute_subnet_only(path: Path, synthesized) -> None:
    synth = synthesized(path)
    subnet_ids = synth.resolve(file_system(synth)["Properties"]["SubnetIds"])
    assert subnet_ids == [synth.outputs("network")["ComputeSubnetId"]["Value"]]


@pytest.mark.parametrize("path", CREATED_FSX)
def test_file_system_is_encrypted_with_a_rotating_key_of_its_own(path: Path, synthesized) -> None:
    synth = synthesized(path)
    key_id = file_system(synth)["Properties"]["KmsKeyId"]["Ref"]
    key = synth.template("storage")["Resources"][key_id]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"
    # its own: the data bucket has another key
    assert data_bucket_key_id(synth) != key_id


def test_file_system_uses_the_configured_kms_key(build_variant) -> None:
    arn = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    synth = build_variant({"storage.fsx.kms_key_arn": arn}, base="minimal")
    # only the data bucket's key is left
    assert list(synth.resources("storage", "AWS::KMS::Key")) == [data_bucket_key_id(synth)]
    assert file_system(synth)["Properties"]["KmsKeyId"] == "1234abcd-12ab-34cd-56ef-1234567890ab"


# -- two keys to delete data ---------------------------------------------------------------

DESTROY = {"storage.fsx.removal_policy": "destroy"}
FLAG = {"destroy_data": "true"}
STATEFUL = ["FileSystem", "DataBucket"]


@pytest.mark.parametrize("path", CREATED_FSX)
def test_stateful_resources_are_retained_by_default(path: Path, synthesized) -> None:
    synth = synthesized(path)
    resources = synth.template("storage")["Resources"]
    for logical_id in STATEFUL:
        assert resources[logical_id]["DeletionPolicy"] == "Retain", logical_id
        assert resources[logical_id]["UpdateReplacePolicy"] == "Retain", logical_id


def test_destroy_flag_alone_keeps_retain(build_variant) -> None:
    synth = build_variant(None, base="minimal", context=FLAG)
    resources = synth.template("storage")["Resources"]
    assert [resources[k]["DeletionPolicy"] for k in STATEFUL] == ["Retain", "Retain"]
    assert synth.artifact("storage").termination_protection is True


def test_removal_policy_destroy_without_the_flag_keeps_retain(build_variant) -> None:
    synth = build_variant(DESTROY, base="minimal")
    resources = synth.template("storage")["Resources"]
    assert [resources[k]["DeletionPolicy"] for k in STATEFUL] == ["Retain", "Retain"]
    assert synth.artifact("storage").termination_protection is True


def test_removal_policy_destroy_without_the_flag_warns(build_variant) -> None:
    synth = build_variant(DESTROY, base="minimal")
    Annotations.from_stack(synth.stack("storage")).has_warning(
        "/minimal-storage",
        Match.string_like_regexp("removal_policy is destroy.*-c destroy_data=true"),
    )


def test_retain_gives_no_retention_warning(synthesized) -> None:
    warnings = Annotations.from_stack(synthesized("minimal").stack("storage")).find_warning(
        "*", Match.string_like_regexp("destroy_data")
    )
    assert warnings == []


def test_removal_policy_destroy_with_the_flag_deletes(build_variant) -> None:
    synth = build_variant(DESTROY, base="minimal", context=FLAG)
    resources = synth.template("storage")["Resources"]
    assert [resources[k]["DeletionPolicy"] for k in STATEFUL] == ["Delete", "Delete"]
    assert synth.artifact("storage").termination_protection is False


@pytest.mark.parametrize("path", shipped_params())
def test_storage_stack_has_termination_protection_by_default(path: Path, synthesized) -> None:
    assert synthesized(path).artifact("storage").termination_protection is True


@pytest.mark.parametrize("path", shipped_params())
def test_stacks_without_data_have_no_termination_protection(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for kind in ("network", "nodes", "cluster"):
        assert synth.artifact(kind).termination_protection is False, kind


# -- data bucket ---------------------------------------------------------------------------


def data_bucket(synth) -> dict:
    return synth.template("storage")["Resources"]["DataBucket"]["Properties"]


def test_data_bucket_is_versioned(shipped) -> None:
    assert data_bucket(shipped)["VersioningConfiguration"] == {"Status": "Enabled"}


def data_bucket_key_id(synth) -> str:
    (rule,) = data_bucket(synth)["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    return str(rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]["Fn::GetAtt"][0])


def test_data_bucket_is_encrypted_with_a_rotating_retained_key_and_bucket_keys(shipped) -> None:
    (rule,) = data_bucket(shipped)["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert rule["BucketKeyEnabled"] is True
    key = shipped.template("storage")["Resources"][data_bucket_key_id(shipped)]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == key["UpdateReplacePolicy"] == "Retain"


def test_data_bucket_key_names_no_fsx_role_itself(shipped) -> None:
    """The FSx guide's statement names the file system's own service-linked role, which exists
    only once an association does: the data-repositories stack writes it
    (test_stack_data_repositories). The key's own policy has the account's administration
    statement only, no pattern over every FSx role of the account."""
    key = shipped.template("storage")["Resources"][data_bucket_key_id(shipped)]
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    assert all("FSx" not in json.dumps(s) for s in statements)
    assert all("aws:PrincipalArn" not in json.dumps(s) for s in statements)


def test_data_bucket_blocks_public_access(shipped) -> None:
    block = data_bucket(shipped)["PublicAccessBlockConfiguration"]
    assert block == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )


def test_data_bucket_denies_requests_without_tls(shipped) -> None:
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in shipped.resources("storage", "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == ref("DataBucket")
    ]
    (statements,) = policies
    deny = [s for s in statements if s["Effect"] == "Deny"]
    assert any(
        s["Action"] == "s3:*"
        and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        and get_att("DataBucket", "Arn") in s["Resource"]
        for s in deny
    ), deny


def test_data_bucket_logs_access_to_a_bucket_of_its_own(shipped) -> None:
    logging = data_bucket(shipped)["LoggingConfiguration"]
    target = logging["DestinationBucketName"]["Ref"]
    assert target != "DataBucket"
    assert shipped.template("storage")["Resources"][target]["Type"] == "AWS::S3::Bucket"
    assert logging["LogFilePrefix"]


# -- logical ids: a refactor must never replace stateful resources ---------------------------


@pytest.mark.parametrize(
    ("kind", "logical_id", "resource_type"),
    [
        ("storage", "DataBucket", "AWS::S3::Bucket"),
        ("storage", "FileSystem", "AWS::FSx::FileSystem"),
        ("cluster", "HyperPodCluster", "AWS::SageMaker::Cluster"),
    ],
)
@pytest.mark.parametrize("name", ["default", "full", "minimal"])
def test_logical_id_is_pinned(
    name: str, kind: str, logical_id: str, resource_type: str, synthesized
) -> None:
    assert synthesized(name).template(kind)["Resources"][logical_id]["Type"] == resource_type


def test_accounting_database_logical_id_is_pinned(synthesized) -> None:
    resources = synthesized("full").template("storage")["Resources"]
    assert resources["SlurmAccountingDatabase"]["Type"] == "AWS::RDS::DBInstance"


def test_accounting_database_is_private_and_encrypted(synthesized) -> None:
    synth = synthesized("full")
    settings = synth.config.cluster.slurm_settings
    props = synth.template("storage")["Resources"]["SlurmAccountingDatabase"]["Properties"]
    assert props["PubliclyAccessible"] is False
    assert props["StorageEncrypted"] is True
    assert props["DBInstanceClass"] == settings.accounting_instance_class
    assert props["MultiAZ"] is settings.accounting_multi_az


def test_accounting_database_is_retained_and_protected_by_default(synthesized) -> None:
    resource = synthesized("full").template("storage")["Resources"]["SlurmAccountingDatabase"]
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["Properties"]["DeletionProtection"] is True


def test_accounting_database_is_deleted_after_a_snapshot_with_both_keys(build_variant) -> None:
    # nag=False: whether AwsSolutions accepts it is test_stack_nag's business
    synth = build_variant(DESTROY, base="full", context=FLAG, nag=False)
    resource = synth.template("storage")["Resources"]["SlurmAccountingDatabase"]
    assert resource["DeletionPolicy"] == "Snapshot"
    assert resource["Properties"]["DeletionProtection"] is False


def test_data_bucket_is_emptied_only_when_it_is_deleted(synthesized, build_variant) -> None:
    auto_delete = "Custom::S3AutoDeleteObjects"
    retained = synthesized("minimal").resources("storage", auto_delete)
    assert retained == {}
    destroyed = build_variant(DESTROY, base="minimal", context=FLAG).resources(
        "storage", auto_delete
    )
    emptied = [r["Properties"]["BucketName"] for r in destroyed.values()]
    # the data bucket and its access-log bucket: a non-empty log bucket would stop the deletion
    assert len(emptied) == 2
    assert ref("DataBucket") in emptied
    (log_bucket,) = [b for b in emptied if b != ref("DataBucket")]
    assert log_bucket["Ref"].startswith("DataAccessLogs")


# -- adopted or no file system -------------------------------------------------------------


@pytest.mark.parametrize("path", ADOPTED_FSX)
def test_adopted_file_system_is_not_created(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert synth.resources("storage", "AWS::FSx::FileSystem") == {}
    fsx = synth.config.storage.fsx
    outputs = synth.outputs("storage")
    assert outputs["FileSystemId"]["Value"] == fsx.file_system_id
    assert outputs["FileSystemDnsName"]["Value"] == fsx.dns_name
    assert outputs["FileSystemMountName"]["Value"] == fsx.mount_name


@pytest.fixture(scope="module")
def without_fsx(build_variant):
    return build_variant({"storage.fsx.enabled": False}, base="minimal")


def test_no_file_system_when_fsx_is_disabled(without_fsx) -> None:
    assert without_fsx.resources("storage", "AWS::FSx::FileSystem") == {}
    assert "FileSystemId" not in without_fsx.outputs("storage")
    assert not without_fsx.has("data-repositories")


def test_nothing_is_mounted_when_fsx_is_disabled(without_fsx) -> None:
    groups = without_fsx.template("cluster")["Resources"]["HyperPodCluster"]["Properties"][
        "InstanceGroups"
    ]
    for group in groups:
        assert all("FsxLustreConfig" not in c for c in group.get("InstanceStorageConfigs", [])), (
            group["InstanceGroupName"]
        )

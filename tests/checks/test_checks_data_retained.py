"""HyperPod-DataRetained: FSx file systems and data buckets have DeletionPolicy and
UpdateReplacePolicy Retain; buckets whose content the app recreates are not data buckets."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from checks_testkit import (
    COMPLIANT,
    NON_COMPLIANT,
    NOT_APPLICABLE,
    check,
    new_app,
    resource,
    retain,
    stack,
)

from hyperpod_cdk.compliance.rules import DATA_RETAINED


def test_retained_file_system_and_bucket_comply() -> None:
    app = new_app()
    storage = stack(app, "storage")
    fs = resource(storage, "FileSystem", "AWS::FSx::FileSystem", {"FileSystemType": "LUSTRE"})
    bucket = resource(storage, "Data", "AWS::S3::Bucket")
    retain(fs, bucket)
    checked = check(app)
    assert checked.verdict(DATA_RETAINED, fs) == COMPLIANT
    assert checked.verdict(DATA_RETAINED, bucket) == COMPLIANT
    assert not checked.failed


@pytest.mark.parametrize(
    ("deletion", "replace"),
    [
        pytest.param(None, None, id="no-policy"),
        pytest.param(cdk.CfnDeletionPolicy.DELETE, cdk.CfnDeletionPolicy.DELETE, id="delete"),
        pytest.param(cdk.CfnDeletionPolicy.RETAIN, None, id="replaced-with-the-data"),
    ],
)
@pytest.mark.parametrize("resource_type", ["AWS::FSx::FileSystem", "AWS::S3::Bucket"])
def test_storage_deleted_with_the_stack_is_a_finding(
    resource_type: str,
    deletion: cdk.CfnDeletionPolicy | None,
    replace: cdk.CfnDeletionPolicy | None,
) -> None:
    app = new_app()
    data = resource(stack(app, "storage"), "Data", resource_type)
    data.cfn_options.deletion_policy = deletion
    data.cfn_options.update_replace_policy = replace
    checked = check(app)
    assert checked.verdict(DATA_RETAINED, data) == NON_COMPLIANT
    assert checked.found(DATA_RETAINED, data)


def test_retain_except_on_create_keeps_the_data() -> None:
    app = new_app()
    fs = resource(stack(app, "storage"), "FileSystem", "AWS::FSx::FileSystem")
    fs.cfn_options.deletion_policy = cdk.CfnDeletionPolicy.RETAIN_EXCEPT_ON_CREATE
    fs.cfn_options.update_replace_policy = cdk.CfnDeletionPolicy.RETAIN
    assert check(app).verdict(DATA_RETAINED, fs) == COMPLIANT


def test_buckets_the_app_refills_are_not_data_but_data_access_logs_are() -> None:
    app = new_app()
    nodes = stack(app, "nodes")
    script_logs = resource(nodes, "ScriptLogs", "AWS::S3::Bucket")
    scripts = resource(
        nodes,
        "Scripts",
        "AWS::S3::Bucket",
        {"LoggingConfiguration": {"DestinationBucketName": script_logs.ref}},
    )
    # a BucketDeployment uploads the lifecycle scripts again on every deploy
    resource(
        nodes,
        "Upload",
        "Custom::CDKBucketDeployment",
        {
            "ServiceToken": "arn:aws:lambda:us-west-2:111122223333:function:x",
            "DestinationBucketName": scripts.ref,
        },
    )
    storage = stack(app, "storage")
    data_logs = resource(storage, "DataLogs", "AWS::S3::Bucket")
    data = resource(
        storage,
        "Data",
        "AWS::S3::Bucket",
        {"LoggingConfiguration": {"DestinationBucketName": data_logs.ref}},
    )
    retain(data)
    checked = check(app)
    assert checked.verdict(DATA_RETAINED, scripts) == NOT_APPLICABLE
    assert checked.verdict(DATA_RETAINED, script_logs) == NOT_APPLICABLE
    assert checked.verdict(DATA_RETAINED, data) == COMPLIANT
    # the audit trail of the data goes with the data
    assert checked.verdict(DATA_RETAINED, data_logs) == NON_COMPLIANT
    assert checked.findings == {DATA_RETAINED.id: {data_logs.node.path}}


def test_an_acknowledged_destroy_passes() -> None:
    # what the app does for `removal_policy: destroy` with `-c destroy_data=true`
    from hyperpod_cdk.compliance.nag import acknowledge

    app = new_app()
    storage = stack(app, "storage")
    owner = cdk.Resource(storage, "Lustre")  # the construct that owns the file system
    fs = resource(storage, "FileSystem", "AWS::FSx::FileSystem")
    fs_below = cdk.CfnResource(owner, "Resource", type="AWS::FSx::FileSystem")
    acknowledge(
        owner,
        DATA_RETAINED.id,
        "storage.fsx.removal_policy is destroy and the deploy passed -c destroy_data=true",
    )
    checked = check(app)
    assert checked.verdict(DATA_RETAINED, fs_below) == NON_COMPLIANT
    assert not checked.found(DATA_RETAINED, fs_below)
    assert checked.found(DATA_RETAINED, fs)

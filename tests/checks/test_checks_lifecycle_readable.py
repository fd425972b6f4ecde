"""HyperPod-LifecycleReadable: each instance group's execution role may list the lifecycle bucket
and read the objects below SourceS3Uri (policies in any stack, wildcards counted)."""

from __future__ import annotations

from typing import Any

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

from hyperpod_cdk.compliance.rules import LIFECYCLE_READABLE
from hyperpod_cdk.compliance.rules.lifecycle_readable import split_s3_uri

PREFIX = "lifecycle/0123456789abcdef0123/"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}

# what the app writes (ExecutionRole.grant_lifecycle_read)
LIST = {
    "Effect": "Allow",
    "Action": "s3:ListBucket",
    "Resource": "{bucket_arn}",
    "Condition": {"StringLike": {"s3:prefix": [PREFIX, PREFIX + "*"]}},
}
GET = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "{bucket_arn}/" + PREFIX + "*"}


def _fill(value: Any, bucket: cdk.CfnResource) -> Any:
    """Statements with ``{bucket_arn}`` replaced by a reference to the bucket's ARN."""
    if isinstance(value, dict):
        return {k: _fill(v, bucket) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, bucket) for v in value]
    if isinstance(value, str) and "{bucket_arn}" in value:
        before, after = value.split("{bucket_arn}", 1)
        return cdk.Fn.join("", [before, bucket.get_att("Arn").to_string(), after])
    return value


def environment(
    statements: list[dict[str, Any]],
    *,
    inline: bool = False,
    managed: list[str] | None = None,
    role_arn: str | None = None,
    source: str | None = None,
) -> tuple[cdk.App, cdk.CfnResource]:
    """A nodes stack (bucket, role, policy) and a cluster stack whose group uses them."""
    app = new_app()
    nodes = stack(app, "nodes")
    bucket = resource(nodes, "Scripts", "AWS::S3::Bucket")
    retain(bucket)
    document = {"Version": "2012-10-17", "Statement": _fill(statements, bucket)}
    role_properties: dict[str, Any] = {"AssumeRolePolicyDocument": TRUST}
    if inline:
        role_properties["Policies"] = [{"PolicyName": "lifecycle", "PolicyDocument": document}]
    if managed:
        role_properties["ManagedPolicyArns"] = managed
    role = resource(nodes, "Role", "AWS::IAM::Role", role_properties)
    if not inline:
        resource(
            nodes,
            "Read",
            "AWS::IAM::Policy",
            {"PolicyName": "read", "Roles": [role.ref], "PolicyDocument": document},
        )
    uri = source or cdk.Fn.join("", ["s3://", bucket.ref, "/" + PREFIX])
    hyperpod = resource(
        stack(app, "cluster"),
        "Cluster",
        "AWS::SageMaker::Cluster",
        {
            "InstanceGroups": [
                {
                    "InstanceGroupName": "gpu",
                    "ExecutionRole": role_arn or role.get_att("Arn"),
                    "LifeCycleConfig": {"SourceS3Uri": uri, "OnCreate": "on_create.sh"},
                }
            ]
        },
    )
    return app, hyperpod


def test_the_statements_the_app_writes_comply() -> None:
    app, hyperpod = environment([LIST, GET])
    checked = check(app)
    assert checked.verdict(LIFECYCLE_READABLE, hyperpod) == COMPLIANT
    assert not checked.failed


@pytest.mark.parametrize(
    "statements",
    [
        pytest.param([{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}], id="s3-star"),
        pytest.param(
            [
                {
                    "Effect": "Allow",
                    "Action": ["s3:List*", "s3:Get*"],
                    "Resource": ["{bucket_arn}", "{bucket_arn}/*"],
                }
            ],
            id="action-wildcards",
        ),
        pytest.param([{"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}], id="not-action"),
    ],
)
def test_wildcards_count(statements: list[dict[str, Any]]) -> None:
    app, hyperpod = environment(statements)
    assert check(app).verdict(LIFECYCLE_READABLE, hyperpod) == COMPLIANT


def test_an_inline_policy_of_the_role_counts() -> None:
    app, hyperpod = environment([LIST, GET], inline=True)
    assert check(app).verdict(LIFECYCLE_READABLE, hyperpod) == COMPLIANT


@pytest.mark.parametrize(
    "statements",
    [
        # the classic mistake: the bucket ARN where the objects' ARN belongs
        pytest.param([LIST, {**GET, "Resource": "{bucket_arn}"}], id="bucket-arn-for-objects"),
        pytest.param([GET], id="no-list-bucket"),
        pytest.param(
            [LIST, {**GET, "Resource": "{bucket_arn}/lifecycle/old/*"}], id="other-prefix"
        ),
        pytest.param(
            [{**LIST, "Condition": {"StringEquals": {"s3:prefix": "lifecycle/old/"}}}, GET],
            id="list-condition-on-another-prefix",
        ),
        pytest.param(
            [LIST, GET, {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "*"}],
            id="explicit-deny",
        ),
    ],
)
def test_a_role_that_cannot_read_the_scripts_is_a_finding(statements: list[dict[str, Any]]) -> None:
    app, hyperpod = environment(statements)
    checked = check(app)
    assert checked.verdict(LIFECYCLE_READABLE, hyperpod) == NON_COMPLIANT
    assert checked.found(LIFECYCLE_READABLE, hyperpod)


def test_the_managed_policy_reads_only_sagemaker_buckets() -> None:
    managed = [
        cdk.Fn.join(
            "",
            [
                "arn:",
                cdk.Aws.PARTITION,
                ":iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy",
            ],
        )
    ]
    app, hyperpod = environment(
        [], managed=managed, source="s3://sagemaker-lifecycle-111122223333/scripts/"
    )
    assert check(app).verdict(LIFECYCLE_READABLE, hyperpod) == COMPLIANT
    app, hyperpod = environment([], managed=managed, source="s3://my-lifecycle-scripts/scripts/")
    assert check(app).verdict(LIFECYCLE_READABLE, hyperpod) == NON_COMPLIANT


def test_a_role_from_outside_the_app_is_not_applicable() -> None:
    app, hyperpod = environment([], role_arn="arn:aws:iam::111122223333:role/hyperpod-nodes")
    checked = check(app)
    assert checked.verdict(LIFECYCLE_READABLE, hyperpod) == NOT_APPLICABLE
    assert not checked.failed


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bucket/lifecycle/abc/", ("bucket", "lifecycle/abc/")),
        ("s3://bucket/lifecycle/abc", ("bucket", "lifecycle/abc/")),
        ("s3://bucket", ("bucket", "")),
        ("https://bucket/x", None),
    ],
)
def test_split_s3_uri(uri: str, expected: tuple[str, str] | None) -> None:
    assert split_s3_uri(uri) == expected

"""The model the rules read: cross-stack references followed, values rendered to comparable text,
IAM wildcards."""

from __future__ import annotations

from typing import Any

import pytest

from hyperpod_cdk.compliance import AppModel, Ref, Value
from hyperpod_cdk.compliance.iam import allows, wildcard_match
from hyperpod_cdk.compliance.model import PARTITION

NETWORK = {
    "Resources": {
        "Sg": {"Type": "AWS::EC2::SecurityGroup", "Properties": {}},
        "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {}},
        "Named": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "my-bucket"}},
    },
    "Outputs": {
        "WeakSg": {"Value": {"Fn::GetAtt": ["Sg", "GroupId"]}},
        "StrongSg": {"Value": {"Ref": "Sg"}, "Export": {"Name": "network:Sg"}},
        "BucketName": {"Value": {"Ref": "Bucket"}},
    },
}


def value(raw: Any, templates: dict[str, Any] | None = None) -> tuple[Value, AppModel]:
    model = AppModel.from_templates(
        {"network": NETWORK, "consumer": {"Resources": {}}, **(templates or {})}
    )
    stack = next(a for a in model.assemblies.values()).stacks["consumer"]
    return Value(stack, raw), model


def _resource(model: AppModel, stack: str, logical_id: str) -> Any:
    found = model.resource(f"<memory>/{stack}.template.json", logical_id)
    assert found is not None
    return found


def test_weak_and_strong_references_lead_to_the_resource() -> None:
    weak, model = value({"Fn::GetStackOutput": {"StackName": "network", "OutputName": "WeakSg"}})
    sg = _resource(model, "network", "Sg")
    assert weak.target() == Ref(sg, "GroupId")
    strong, model = value({"Fn::ImportValue": "network:Sg"})
    assert strong.target() == Ref(_resource(model, "network", "Sg"), None)


def test_an_ssm_parameters_value_leads_to_what_it_was_created_with() -> None:
    """A ready parameter passes a value on (and makes its reader wait): the rules see through it."""
    nodes = {
        "Resources": {
            "Scripts": {"Type": "AWS::S3::Bucket", "Properties": {}},
            "Ready": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Type": "String",
                    "Value": {"Fn::Join": ["", ["s3://", {"Ref": "Scripts"}, "/x/"]]},
                },
            },
            "Other": {"Type": "AWS::SNS::Topic", "Properties": {}},
        },
        "Outputs": {
            "Uri": {"Value": {"Fn::GetAtt": ["Ready", "Value"]}},
            "Topic": {"Value": {"Fn::GetAtt": ["Other", "TopicName"]}},
        },
    }
    uri, model = value(
        {"Fn::GetStackOutput": {"StackName": "nodes", "OutputName": "Uri"}}, {"nodes": nodes}
    )
    assert uri.text() == "s3://⟦nodes.Scripts⟧/x/"
    # only a parameter's Value is followed: other attributes are the resource's own
    topic, model = value(
        {"Fn::GetStackOutput": {"StackName": "nodes", "OutputName": "Topic"}}, {"nodes": nodes}
    )
    assert topic.target() == Ref(_resource(model, "nodes", "Other"), "TopicName")


def test_a_reference_to_a_stack_outside_the_app_is_not_followed() -> None:
    outside, _ = value({"Fn::GetStackOutput": {"StackName": "elsewhere", "OutputName": "X"}})
    assert outside.target() is None
    assert outside.text() is None


def test_values_render_to_comparable_text() -> None:
    bucket = {"Fn::GetStackOutput": {"StackName": "network", "OutputName": "BucketName"}}
    joined, _ = value({"Fn::Join": ["", ["s3://", bucket, "/lifecycle/"]]})
    assert joined.text() == "s3://⟦network.Bucket⟧/lifecycle/"
    arn, _ = value({"Fn::Sub": ["arn:${AWS::Partition}:s3:::${Name}/*", {"Name": "b"}]})
    assert arn.text() == f"arn:{PARTITION}:s3:::b/*"
    own, _ = value({"Fn::Sub": "${Bucket.Arn}/${!Literal}"}, {"consumer": NETWORK})
    assert own.text() == f"arn:{PARTITION}:s3:::⟦consumer.Bucket⟧/${{Literal}}"
    # a literal partition compares with the pseudo parameter
    literal, _ = value("arn:aws-us-gov:s3:::b/*")
    assert literal.text() == arn.text()
    parameter, _ = value({"Fn::Join": ["", ["x", {"Ref": "SomeParameter"}]]})
    assert parameter.text() is None


def test_a_named_bucket_renders_its_name() -> None:
    _, model = value("")
    named = _resource(model, "network", "Named")
    assert named.reference_text("Arn") == f"arn:{PARTITION}:s3:::my-bucket"


@pytest.mark.parametrize(
    ("pattern", "candidate", "expected"),
    [
        ("s3:Get*", "s3:GetObject", True),
        ("s3:get*", "s3:GetObject", False),  # resources and values: case matters
        ("arn:*:s3:::b/*", f"arn:{PARTITION}:s3:::b/x/y", True),
        ("arn:*:s3:::b/*", f"arn:{PARTITION}:s3:::b", False),
        ("a?c", "abc", True),
    ],
)
def test_wildcards(pattern: str, candidate: str, expected: bool) -> None:
    assert wildcard_match(pattern, candidate) is expected


def test_actions_match_ignoring_case_and_deny_wins() -> None:
    stack = next(iter(AppModel.from_templates({"s": {}}).assemblies.values())).stacks["s"]
    allow = Value(stack, {"Effect": "Allow", "Action": "S3:getobject", "Resource": "*"})
    deny = Value(stack, {"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"})
    assert allows([allow], "s3:GetObject", f"arn:{PARTITION}:s3:::b/k")
    assert not allows([allow, deny], "s3:GetObject", f"arn:{PARTITION}:s3:::b/k")


@pytest.mark.parametrize(
    ("head", "is_role"),
    [
        (["arn:aws:iam::111122223333:role/hyperpod/"], True),
        (["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":role/"], True),
        (["arn:aws:iam::111122223333:policy/"], False),
        (["arn:aws:iam::111122223333:role/x/", "suffix-"], False),
    ],
)
def test_a_role_arn_built_from_its_path_and_name_leads_to_the_role(
    head: list[Any], is_role: bool
) -> None:
    """The app writes a role's ARN as its literal path plus its name (issue 19)."""
    nodes = {
        "Resources": {"Role": {"Type": "AWS::IAM::Role", "Properties": {}}},
        "Outputs": {"RoleName": {"Value": {"Ref": "Role"}}},
    }
    name = {"Fn::GetStackOutput": {"StackName": "nodes", "OutputName": "RoleName"}}
    arn, model = value({"Fn::Join": ["", [*head, name]]}, {"nodes": nodes})
    role = _resource(model, "nodes", "Role")
    assert (arn.target() == Ref(role, "Arn")) is is_role

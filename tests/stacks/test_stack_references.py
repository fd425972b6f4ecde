"""Every cross-stack reference of every shipped config, in one table (issue 19).

The app's cross-stack references are weak (``Fn::GetStackOutput``): CloudFormation reads one when
it creates or updates the consumer resource, never on its own. ``cdk deploy`` skips a stack whose
template did not change. So a value that can change while its consumer exists must also change
the consumer's own template; the table says, per value, whether it can change on day 2 and how
the consumer learns of it. A new reference fails the test until it has a row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stack_testkit import SHIPPED_CONFIGS, STACK_KINDS, config_id

from stacks.layout import cluster_identity

ENVIRONMENTS = [pytest.param(p, id=config_id(p)) for p in SHIPPED_CONFIGS]


@dataclass(frozen=True)
class Row:
    """One kind of value that crosses stacks."""

    value: str
    changes: str | None  # how it can change while its consumers exist; None: it cannot
    travels: str  # how the consumer learns of a change
    # checks, on the consumer's template, that a change reaches it; None: nothing to check
    reaches: Callable[[Any, dict[str, Any]], bool] | None = None


_FIXED = "weak: the value is fixed while its consumers exist"


def _has_identity(synth: Any, consumer: dict[str, Any]) -> bool:
    return f"(cluster identity {cluster_identity(synth.config)})" in str(consumer)


_NEW_PATH = "a new iam.role_path replaces the role (a role's path is create-only)"
_PATH_TRAVELS = (
    "weak, and the consumer names the path literally: the cluster builds the role's ARN from "
    "the path and the role's name, and every customer managed policy has the roles' path "
    "(RolePath), so a new path changes the consumer's template and it reads the new name"
)


def _names_the_role_path(synth: Any, consumer: dict[str, Any]) -> bool:
    path = synth.config.iam.role_path
    if consumer["Type"] == "AWS::IAM::ManagedPolicy":
        # "/" is CloudFormation's default: a new path adds the property, which changes it
        return consumer["Properties"].get("Path", "/") == path
    return f"role/{path.lstrip('/')}" in json.dumps(consumer)


# (producer kind, resource type, attribute) -> Row
TABLE: dict[tuple[str, str, str], Row] = {
    ("network", "AWS::EC2::VPC", "Ref"): Row("VPC id", None, _FIXED),
    ("network", "AWS::EC2::VPC", "DefaultSecurityGroup"): Row("default group id", None, _FIXED),
    ("network", "AWS::EC2::Subnet", "Ref"): Row(
        "subnet id",
        None,
        f"{_FIXED} (a subnet is replaced only with its CIDR or AZ, which replaces FSx and the "
        "HyperPod cluster: test_stack_data_safety finds that)",
    ),
    ("network", "AWS::EC2::RouteTable", "Ref"): Row("route table id", None, _FIXED),
    ("network", "AWS::EC2::SecurityGroup", "GroupId"): Row("node security group id", None, _FIXED),
    ("network", "AWS::KMS::Key", "Arn"): Row("logs key ARN (retained)", None, _FIXED),
    ("storage", "AWS::KMS::Key", "Arn"): Row(
        "data key ARN (retained; the FSx role's key policy statement writes into it)", None, _FIXED
    ),
    ("storage", "AWS::FSx::FileSystem", "Ref"): Row("file system id (retained)", None, _FIXED),
    ("storage", "AWS::FSx::FileSystem", "DNSName"): Row("file system DNS name", None, _FIXED),
    ("storage", "AWS::FSx::FileSystem", "LustreMountName"): Row("mount name", None, _FIXED),
    ("storage", "AWS::S3::Bucket", "Ref"): Row("data bucket name (retained)", None, _FIXED),
    ("storage", "AWS::RDS::DBInstance", "Endpoint.Address"): Row(
        "accounting database endpoint (retained, never replaced: test_stack_data_safety)",
        None,
        _FIXED,
    ),
    ("storage", "AWS::SecretsManager::SecretTargetAttachment", "Ref"): Row(
        "accounting secret ARN (retained)", None, _FIXED
    ),
    ("nodes", "AWS::SSM::Parameter", "Value"): Row(
        "lifecycle bucket name (ScriptsReady, set after the upload)",
        None,
        "weak; read only as the cluster's wait for the upload (a tag): the bucket name (from "
        "the config) and the content-hashed prefix, which changes with every script or setting, "
        "are literals of the cluster's own template (test_stack_day2, test_stack_cluster)",
    ),
    ("nodes", "AWS::IAM::Role", "Ref"): Row(
        "execution (or autoscaling) role name",
        _NEW_PATH,
        _PATH_TRAVELS,
        reaches=_names_the_role_path,
    ),
    ("eks", "AWS::EKS::Cluster", "Ref"): Row(
        "EKS cluster name", None, f"{_FIXED} (the name is in the config)"
    ),
    ("eks", "AWS::EKS::Cluster", "Arn"): Row("EKS cluster ARN", None, _FIXED),
    ("eks", "AWS::EKS::Cluster", "OpenIdConnectIssuerUrl"): Row(
        "EKS cluster OIDC issuer URL (the IAM OIDC provider of eks.addons.inference)",
        None,
        f"{_FIXED} (EKS assigns it when the cluster is created and never changes it in place)",
    ),
    ("eks-dependencies", "AWS::SSM::Parameter", "Value"): Row(
        "EKS cluster ARN (Ready, set after the dependencies)", None, _FIXED
    ),
    ("eks-dependencies", "AWS::IAM::Role", "Ref"): Row(
        "node wait handler role name", _NEW_PATH, _PATH_TRAVELS, reaches=_names_the_role_path
    ),
    ("eks-dependencies", "AWS::Lambda::Function", "Arn"): Row(
        "node wait service token", None, f"{_FIXED} (the function is updated in place)"
    ),
    ("cluster", "AWS::SNS::Topic", "Ref"): Row(
        "alerts topic ARN (where the workspace's alert manager sends, EKS or Slurm)",
        None,
        f"{_FIXED} (the app sets no create-only property of the topic, so it is never replaced; "
        "an existing topic, alerts.sns_topic_arn, is a literal of the consumer's own template)",
    ),
    ("cluster", "AWS::SageMaker::Cluster", "ClusterArn"): Row(
        "HyperPod cluster ARN",
        "a new cluster name or VPC configuration replaces the cluster",
        "weak, into the HyperPodReady (eks-addons) or ClusterReady (metrics) parameter only, "
        "whose description carries the digest of the cluster's create-only inputs "
        "(stacks.layout.cluster_identity)",
        reaches=_has_identity,
    ),
}


def _kind(stack_name: str) -> str:
    return next(
        k for k in sorted(STACK_KINDS, key=len, reverse=True) if stack_name.endswith(f"-{k}")
    )


def _outputs(node: Any) -> Iterator[dict[str, str]]:
    if isinstance(node, dict):
        if "Fn::GetStackOutput" in node:
            yield node["Fn::GetStackOutput"]
        for value in node.values():
            yield from _outputs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _outputs(value)


def references(synth: Any) -> Iterator[tuple[tuple[str, str, str], str, dict[str, Any]]]:
    """``(table key, consumer kind, consumer resource)`` of every weak reference."""
    for name, template in synth.templates.items():
        for resource in template.get("Resources", {}).values():
            for ref in _outputs(resource):
                producer = synth.templates[ref["StackName"]]
                value = producer["Outputs"][ref["OutputName"]]["Value"]
                logical_id, attribute = (
                    (value["Ref"], "Ref") if "Ref" in value else value["Fn::GetAtt"]
                )
                kind = producer["Resources"][logical_id]["Type"]
                yield (_kind(ref["StackName"]), kind, attribute), _kind(name), resource


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_every_cross_stack_reference_has_a_row(path: Path, synthesized) -> None:
    missing = {key for key, _, _ in references(synthesized(path))} - set(TABLE)
    assert not missing, f"add a row to TABLE for each of {sorted(missing)}"


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_a_value_that_can_change_reaches_its_consumer(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for key, consumer, resource in references(synth):
        row = TABLE[key]
        if row.changes is None:
            continue
        assert row.reaches is not None, f"{key} can change ({row.changes}) and travels weakly"
        assert row.reaches(synth, resource), f"{key} into {consumer}: {row.travels}"


def test_every_row_is_still_used(synthesized) -> None:
    found = {key for path in SHIPPED_CONFIGS for key, _, _ in references(synthesized(path))}
    assert set(TABLE) <= found, f"rows no shipped config uses: {sorted(set(TABLE) - found)}"

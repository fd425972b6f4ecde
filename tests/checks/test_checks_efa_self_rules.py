"""HyperPod-EfaSelfRules: every security group on the HyperPod nodes allows all traffic from and
to itself (inline or as separate rules, in any stack)."""

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
    stack,
)

from hyperpod_cdk.compliance import AppModel
from hyperpod_cdk.compliance.rules import EFA_SELF_RULES

SG = "AWS::EC2::SecurityGroup"


def security_group(scope: cdk.Stack, name: str, **properties: Any) -> cdk.CfnResource:
    return resource(scope, name, SG, {"GroupDescription": name, "VpcId": "vpc-1", **properties})


def self_rule(
    scope: cdk.Stack, group: cdk.CfnResource, direction: str, protocol: str = "-1"
) -> None:
    group_id = group.get_att("GroupId")
    if direction == "in":
        properties = {"SourceSecurityGroupId": group_id}
        resource_type = "AWS::EC2::SecurityGroupIngress"
    else:
        properties = {"DestinationSecurityGroupId": group_id}
        resource_type = "AWS::EC2::SecurityGroupEgress"
    resource(
        scope,
        f"{group.node.id}Self{direction}",
        resource_type,
        {"GroupId": group_id, "IpProtocol": protocol, **properties},
    )


def cluster(scope: cdk.Stack, groups: list[Any], override: list[Any] | None = None) -> None:
    instance_group: dict[str, Any] = {"InstanceGroupName": "gpu", "InstanceCount": 1}
    if override is not None:
        instance_group["OverrideVpcConfig"] = {
            "SecurityGroupIds": override,
            "Subnets": ["subnet-2"],
        }
    resource(
        scope,
        "Cluster",
        "AWS::SageMaker::Cluster",
        {
            "VpcConfig": {"SecurityGroupIds": groups, "Subnets": ["subnet-1"]},
            "InstanceGroups": [instance_group],
        },
    )


@pytest.mark.parametrize("weak_references", [True, False], ids=["GetStackOutput", "ImportValue"])
def test_self_rules_in_both_directions_comply_across_stacks(weak_references: bool) -> None:
    app = new_app(weak_references=weak_references)
    network = stack(app, "network")
    nodes = security_group(network, "Nodes")
    self_rule(network, nodes, "in")
    self_rule(network, nodes, "out")
    cluster(stack(app, "cluster"), [nodes.get_att("GroupId")])
    checked = check(app)
    assert checked.verdict(EFA_SELF_RULES, nodes) == COMPLIANT
    assert not checked.failed


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param({"in": "-1"}, id="no-self-egress"),
        pytest.param({"out": "-1"}, id="no-self-ingress"),
        pytest.param({"in": "tcp", "out": "-1"}, id="ingress-tcp-only"),
    ],
)
def test_a_missing_or_partial_self_rule_is_a_finding(rules: dict[str, str]) -> None:
    app = new_app()
    network = stack(app, "network")
    nodes = security_group(
        network,
        "Nodes",
        # all traffic to anywhere is not all traffic to the group itself
        SecurityGroupEgress=[{"CidrIp": "0.0.0.0/0", "IpProtocol": "-1"}],
    )
    for direction, protocol in rules.items():
        self_rule(network, nodes, direction, protocol)
    cluster(stack(app, "cluster"), [nodes.get_att("GroupId")])
    checked = check(app)
    assert checked.verdict(EFA_SELF_RULES, nodes) == NON_COMPLIANT
    assert checked.found(EFA_SELF_RULES, nodes)
    assert checked.failed


def test_a_group_of_an_instance_group_override_is_checked_too() -> None:
    app = new_app()
    network = stack(app, "network")
    nodes, extra = security_group(network, "Nodes"), security_group(network, "Extra")
    for direction in ("in", "out"):
        self_rule(network, nodes, direction)
    self_rule(network, extra, "in")
    cluster(stack(app, "cluster"), [nodes.ref], override=[nodes.ref, extra.ref])
    checked = check(app)
    assert checked.verdict(EFA_SELF_RULES, nodes) == COMPLIANT
    assert checked.found(EFA_SELF_RULES, extra)
    assert not checked.found(EFA_SELF_RULES, nodes)


def test_groups_not_on_the_nodes_are_not_applicable() -> None:
    # an endpoint group, and the app's group when the cluster names an adopted group by id
    app = new_app()
    network = stack(app, "network")
    endpoints = security_group(network, "Endpoints")
    cluster(stack(app, "cluster"), ["sg-0123456789abcdef0"])
    checked = check(app)
    assert checked.verdict(EFA_SELF_RULES, endpoints) == NOT_APPLICABLE
    assert not checked.failed


def test_inline_self_rules_count() -> None:
    # CloudFormation forbids a group naming itself inline (a circular reference), but a template
    # of another tool may carry them: the rule reads either form
    group_id = {"Fn::GetAtt": ["Nodes", "GroupId"]}
    model = AppModel.from_templates(
        {
            "one": {
                "Resources": {
                    "Nodes": {
                        "Type": SG,
                        "Properties": {
                            "SecurityGroupIngress": [
                                {"IpProtocol": -1, "SourceSecurityGroupId": group_id}
                            ],
                            "SecurityGroupEgress": [
                                {"IpProtocol": "-1", "DestinationSecurityGroupId": {"Ref": "Nodes"}}
                            ],
                        },
                    },
                    "Cluster": {
                        "Type": "AWS::SageMaker::Cluster",
                        "Properties": {"VpcConfig": {"SecurityGroupIds": [group_id]}},
                    },
                }
            }
        }
    )
    nodes = model.resource("<memory>/one.template.json", "Nodes")
    assert nodes is not None
    assert EFA_SELF_RULES(nodes) == COMPLIANT

"""The EFA security group of the nodes (and FSx): all traffic from and to itself, nothing open inbound."""

from __future__ import annotations

import pytest
from stack_testkit import get_att, walk


def node_group_id(synth) -> str:
    """Logical id of the EFA group (the NodeSecurityGroupId output)."""
    return synth.outputs("network")["NodeSecurityGroupId"]["Value"]["Fn::GetAtt"][0]


def standalone_rules(synth, resource_type: str) -> list[dict]:
    group = get_att(node_group_id(synth), "GroupId")
    return [
        r["Properties"]
        for r in synth.resources("network", resource_type).values()
        if r["Properties"]["GroupId"] == group
    ]


def test_node_group_allows_all_traffic_from_itself(shipped) -> None:
    group = get_att(node_group_id(shipped), "GroupId")
    rules = standalone_rules(shipped, "AWS::EC2::SecurityGroupIngress")
    assert any(
        r["IpProtocol"] == "-1" and r.get("SourceSecurityGroupId") == group for r in rules
    ), rules


def test_node_group_allows_all_traffic_to_itself(shipped) -> None:
    # EFA fails its health check without the self egress rule; 0.0.0.0/0 egress does not count
    group = get_att(node_group_id(shipped), "GroupId")
    rules = standalone_rules(shipped, "AWS::EC2::SecurityGroupEgress")
    assert any(
        r["IpProtocol"] == "-1" and r.get("DestinationSecurityGroupId") == group for r in rules
    ), rules


def test_node_group_has_no_all_traffic_egress_to_the_internet(shipped) -> None:
    # allow_all_outbound=False: CDK would otherwise drop the self egress rule
    group = shipped.template("network")["Resources"][node_group_id(shipped)]["Properties"]
    for rule in group.get("SecurityGroupEgress", []):
        assert rule["IpProtocol"] != "-1", rule
    assert {(r["FromPort"], r["ToPort"]) for r in group["SecurityGroupEgress"]} >= {
        (443, 443),
        (988, 988),
        (1018, 1023),
    }


def test_node_group_has_no_http_egress_in_a_closed_network(build_variant) -> None:
    synth = build_variant({"network.closed_network": True}, base="minimal")
    egress = synth.template("network")["Resources"][node_group_id(synth)]["Properties"][
        "SecurityGroupEgress"
    ]
    assert 80 not in {r["FromPort"] for r in egress}


OPEN = {"0.0.0.0/0", "::/0"}


def test_nothing_is_open_to_the_internet_inbound(shipped) -> None:
    for name, template in shipped.templates.items():
        for logical_id, resource in template["Resources"].items():
            props = resource.get("Properties", {})
            if resource["Type"] == "AWS::EC2::SecurityGroupIngress":
                rules = [props]
            elif resource["Type"] == "AWS::EC2::SecurityGroup":
                rules = props.get("SecurityGroupIngress", [])
            else:
                continue
            for rule in rules:
                assert rule.get("CidrIp") not in OPEN and rule.get("CidrIpv6") not in OPEN, (
                    name,
                    logical_id,
                )


def test_extra_security_groups_go_on_the_nodes_next_to_the_efa_group(synthesized) -> None:
    synth = synthesized("existing-vpc-fsx")
    groups = synth.resolve(
        synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"]["VpcConfig"][
            "SecurityGroupIds"
        ]
    )
    assert groups == [
        get_att(node_group_id(synth), "GroupId"),
        *synth.config.network.security_group_ids,
    ]


@pytest.mark.parametrize("name", ["default", "full", "minimal"])
def test_file_system_sits_in_the_efa_group(name: str, synthesized) -> None:
    synth = synthesized(name)
    fs = synth.template("storage")["Resources"]["FileSystem"]["Properties"]
    assert synth.resolve(fs["SecurityGroupIds"]) == [get_att(node_group_id(synth), "GroupId")]


@pytest.mark.parametrize("name", ["default", "full", "minimal"])
def test_efa_group_rules_exist_before_the_file_system(name: str, synthesized) -> None:
    # FSx creation fails with InvalidNetworkSettings when the group's rules are missing. The rules
    # are in the network stack, which the storage stack waits for as a whole.
    synth = synthesized(name)
    assert "network" in synth.dependencies("storage")
    assert standalone_rules(synth, "AWS::EC2::SecurityGroupIngress")
    assert standalone_rules(synth, "AWS::EC2::SecurityGroupEgress")
    lustre = synth.stacks.storage.node.find_child("Lustre").node.find_child("Resource")
    waits_for = {d.node.path for d in lustre.node.dependencies}
    assert synth.stacks.network.network.efa.node.path in waits_for


def test_accounting_database_is_reachable_from_the_nodes_only(synthesized) -> None:
    synth = synthesized("full")
    node_group = get_att(node_group_id(synth), "GroupId")
    (ingress,) = synth.resources("storage", "AWS::EC2::SecurityGroupIngress").values()
    assert synth.resolve(ingress["Properties"]["SourceSecurityGroupId"]) == node_group
    assert (ingress["Properties"]["FromPort"], ingress["Properties"]["ToPort"]) == (3306, 3306)
    (egress,) = synth.resources("storage", "AWS::EC2::SecurityGroupEgress").values()
    assert synth.resolve(egress["Properties"]["GroupId"]) == node_group
    assert (egress["Properties"]["FromPort"], egress["Properties"]["ToPort"]) == (3306, 3306)


def test_no_security_group_allows_all_outbound_by_default(shipped) -> None:
    # Every group the app creates lists its egress explicitly.
    for name, template in shipped.templates.items():
        for path, value in walk(template.get("Resources", {})):
            if (
                isinstance(value, dict)
                and value.get("CidrIp") == "0.0.0.0/0"
                and ".SecurityGroupEgress" in path
            ):
                assert value["IpProtocol"] == "tcp", (name, path)


# -- network.node_egress ------------------------------------------------------------------------


def _egress(synth) -> list[dict]:
    group = synth.template("network")["Resources"][node_group_id(synth)]
    return group["Properties"].get("SecurityGroupEgress", [])


def _self_egress_survives(synth) -> None:
    group = get_att(node_group_id(synth), "GroupId")
    assert any(
        r["IpProtocol"] == "-1" and r.get("DestinationSecurityGroupId") == group
        for r in standalone_rules(synth, "AWS::EC2::SecurityGroupEgress")
    )


def test_all_egress_is_one_explicit_rule_and_keeps_the_efa_self_rule(build_variant) -> None:
    synth = build_variant({"network.node_egress": "all"}, base="minimal")
    assert _egress(synth) == []  # nothing inline: one standalone rule
    group = get_att(node_group_id(synth), "GroupId")
    (everything,) = [
        (logical_id, r)
        for logical_id, r in synth.resources("network", "AWS::EC2::SecurityGroupEgress").items()
        if r["Properties"].get("CidrIp") == "0.0.0.0/0" and r["Properties"]["GroupId"] == group
    ]
    assert everything[1]["Properties"]["IpProtocol"] == "-1"
    assert {s["id"] for s in everything[1]["Metadata"]["checkov"]["skip"]} == {"CKV_AWS_382"}
    _self_egress_survives(synth)


def test_listed_egress_rules_add_to_the_default_ones(build_variant) -> None:
    rules = [
        {"port": 22, "cidr": "0.0.0.0/0", "description": "git over SSH"},
        {"port": 5000, "to_port": 5010, "protocol": "udp", "cidr": "10.20.0.0/16"},
    ]
    synth = build_variant({"network.node_egress": rules}, base="minimal")
    egress = {(r["IpProtocol"], r["FromPort"], r["ToPort"], r["CidrIp"]) for r in _egress(synth)}
    assert egress >= {
        ("tcp", 443, 443, "0.0.0.0/0"),
        ("tcp", 22, 22, "0.0.0.0/0"),
        ("udp", 5000, 5010, "10.20.0.0/16"),
    }
    assert not any(r["IpProtocol"] == "-1" for r in _egress(synth))
    _self_egress_survives(synth)
    group = synth.template("network")["Resources"][node_group_id(synth)]
    assert "checkov" not in group.get("Metadata", {})


def test_the_default_egress_is_unchanged(shipped) -> None:
    assert shipped.config.network.node_egress == "default"
    _self_egress_survives(shipped)

"""The network stack: a new VPC made by AZ ID, its subnets, NAT, endpoints and flow logs; an adopted VPC."""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_testkit import STACK_KINDS, depends_on, get_att, ref, shipped_params

from hyperpod_cdk.facts import CLOSED_NETWORK_ENDPOINTS

NEW_VPC = shipped_params(lambda c: c.network.vpc_id is None)
ADOPTED_VPC = shipped_params(lambda c: c.network.vpc_id is not None)

SUBNET = "AWS::EC2::Subnet"


def compute_subnet_id(synth) -> str:
    """Logical id of the main HyperPod subnet (the ComputeSubnetId output)."""
    return synth.outputs("network")["ComputeSubnetId"]["Value"]["Ref"]


def interface_services(synth) -> set[str]:
    prefix = f"com.amazonaws.{synth.config.region}."
    return {
        r["Properties"]["ServiceName"].removeprefix(prefix)
        for r in synth.network_resources("AWS::EC2::VPCEndpoint").values()
        if r["Properties"]["VpcEndpointType"] == "Interface"
    }


@pytest.mark.parametrize("path", NEW_VPC)
def test_every_subnet_is_placed_by_az_id_never_by_az_name(path: Path, synthesized) -> None:
    synth = synthesized(path)
    subnets = synth.network_resources(SUBNET)
    assert subnets
    for logical_id, subnet in subnets.items():
        props = subnet["Properties"]
        assert "AvailabilityZone" not in props, logical_id
        assert props["AvailabilityZoneId"].startswith("usw2-az"), logical_id


@pytest.mark.parametrize("path", NEW_VPC)
def test_compute_subnet_uses_the_whole_compute_cidr_in_the_main_az(path: Path, synthesized) -> None:
    synth = synthesized(path)
    subnet = synth.network_resources()[compute_subnet_id(synth)]["Properties"]
    assert subnet["CidrBlock"] == str(synth.config.network.compute_cidr)
    assert subnet["AvailabilityZoneId"] == synth.config.network.availability_zone_id
    assert subnet["MapPublicIpOnLaunch"] is False


@pytest.mark.parametrize("path", NEW_VPC)
def test_compute_subnet_waits_for_its_secondary_cidr_block(path: Path, synthesized) -> None:
    synth = synthesized(path)
    blocks = synth.network_resources("AWS::EC2::VPCCidrBlock")
    (block_id,) = [
        k
        for k, b in blocks.items()
        if b["Properties"]["CidrBlock"] == str(synth.config.network.compute_cidr)
    ]
    vpc_id, _ = synth.one("network", "AWS::EC2::VPC")
    assert blocks[block_id]["Properties"]["VpcId"] == ref(vpc_id)
    subnet = synth.network_resources()[compute_subnet_id(synth)]
    assert block_id in depends_on(subnet)


@pytest.mark.parametrize("path", NEW_VPC)
def test_vpc_primary_cidr_is_the_configured_cidr(path: Path, synthesized) -> None:
    synth = synthesized(path)
    _, vpc = synth.one("network", "AWS::EC2::VPC")
    assert vpc["Properties"]["CidrBlock"] == str(synth.config.network.cidr)


@pytest.mark.parametrize("path", NEW_VPC)
def test_nat_gateway_count_is_nat_gateways(path: Path, synthesized) -> None:
    synth = synthesized(path)
    net = synth.config.network
    expected = 0 if net.closed_network else net.nat_gateways
    assert len(synth.network_resources("AWS::EC2::NatGateway")) == expected


def test_each_compute_subnet_uses_the_nat_gateway_of_its_own_az(synthesized) -> None:
    synth = synthesized("full")
    resources = synth.network_resources()
    nat_az = {
        k: resources[n["Properties"]["SubnetId"]["Ref"]]["Properties"]["AvailabilityZoneId"]
        for k, n in synth.network_resources("AWS::EC2::NatGateway").items()
    }
    table_az = {
        a["Properties"]["RouteTableId"]["Ref"]: resources[a["Properties"]["SubnetId"]["Ref"]][
            "Properties"
        ]["AvailabilityZoneId"]
        for a in synth.network_resources("AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["SubnetId"]["Ref"].startswith("NetworkCompute")
    }
    routes = [r["Properties"] for r in synth.network_resources("AWS::EC2::Route").values()]
    via_nat = {
        r["RouteTableId"]["Ref"]: r["NatGatewayId"]["Ref"] for r in routes if "NatGatewayId" in r
    }
    assert len(table_az) == 2
    for table, az_id in table_az.items():
        assert nat_az[via_nat[table]] == az_id, table


@pytest.mark.parametrize("path", NEW_VPC)
def test_compute_subnets_route_to_the_internet_through_nat_only(path: Path, synthesized) -> None:
    synth = synthesized(path)
    routes = synth.network_resources("AWS::EC2::Route")
    default_routes = [
        r["Properties"]
        for r in routes.values()
        if r["Properties"]["DestinationCidrBlock"] == "0.0.0.0/0"
    ]
    via_nat = [r for r in default_routes if "NatGatewayId" in r]
    # one per HyperPod subnet (plus the EKS subnets' table, whose kubectl handler calls the
    # EKS and STS APIs), and the public route table's route to the internet gateway
    eks_table = not synth.config.is_slurm and synth.config.eks_settings.cluster_arn is None
    assert len(via_nat) == 1 + len(synth.config.network.additional_compute_cidrs) + eks_table
    assert len(default_routes) == len(via_nat) + 1


@pytest.mark.parametrize("path", NEW_VPC)
def test_s3_gateway_endpoint_serves_every_private_route_table(path: Path, synthesized) -> None:
    synth = synthesized(path)
    gateways = [
        r["Properties"]
        for r in synth.network_resources("AWS::EC2::VPCEndpoint").values()
        if r["Properties"]["VpcEndpointType"] == "Gateway"
    ]
    assert [g["ServiceName"] for g in gateways] == [f"com.amazonaws.{synth.config.region}.s3"]
    compute_tables = {
        a["Properties"]["RouteTableId"]["Ref"]
        for a in synth.network_resources("AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["SubnetId"]["Ref"].startswith("NetworkCompute")
    }
    assert compute_tables <= {t["Ref"] for t in gateways[0]["RouteTableIds"]}


def test_interface_endpoints_are_exactly_the_configured_ones(synthesized) -> None:
    synth = synthesized("full")
    assert interface_services(synth) == set(synth.config.network.interface_endpoints)


@pytest.mark.parametrize("path", NEW_VPC)
def test_interface_endpoints_sit_in_the_compute_subnets_with_private_dns(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    compute_refs = [
        {"Ref": k} for k in synth.network_resources(SUBNET) if k.startswith("NetworkCompute")
    ]
    for logical_id, endpoint in synth.network_resources("AWS::EC2::VPCEndpoint").items():
        props = endpoint["Properties"]
        if props["VpcEndpointType"] == "Interface":
            assert props["PrivateDnsEnabled"] is True, logical_id
            assert sorted(props["SubnetIds"], key=str) == sorted(compute_refs, key=str), logical_id


def test_no_interface_endpoints_unless_configured(synthesized) -> None:
    assert interface_services(synthesized("minimal")) == set()


@pytest.fixture(scope="module")
def closed(build_variant):
    return build_variant({"network.closed_network": True}, base="minimal")


def test_closed_network_gets_every_endpoint_the_nodes_need(closed) -> None:
    assert interface_services(closed) == set(CLOSED_NETWORK_ENDPOINTS)


def test_closed_network_keeps_configured_endpoints_too(build_variant) -> None:
    synth = build_variant(
        {"network.closed_network": True, "network.interface_endpoints": ["secretsmanager", "ssm"]},
        base="minimal",
    )
    assert interface_services(synth) == set(CLOSED_NETWORK_ENDPOINTS) | {"secretsmanager"}


def test_closed_network_reaches_secrets_manager_where_a_secret_is_read(build_variant) -> None:
    """slurmdbd reads the accounting database's secret; the nodes read a directory's secrets."""
    accounting = build_variant(
        {
            "network.closed_network": True,
            "cluster.slurm.accounting_database": True,
            "cluster.slurm.accounting_availability_zone_ids": ["usw2-az1", "usw2-az2"],
        },
        base="minimal",
    )
    assert interface_services(accounting) == set(CLOSED_NETWORK_ENDPOINTS) | {"secretsmanager"}


@pytest.mark.parametrize(
    "resource_type",
    [
        "AWS::EC2::InternetGateway",
        "AWS::EC2::VPCGatewayAttachment",
        "AWS::EC2::NatGateway",
        "AWS::EC2::EIP",
    ],
)
def test_closed_network_has_no_internet_path(closed, resource_type: str) -> None:
    assert closed.network_resources(resource_type) == {}


def test_closed_network_has_no_public_subnet_or_default_route(closed) -> None:
    assert all(not k.startswith("NetworkPublic") for k in closed.network_resources(SUBNET))
    routes = closed.network_resources("AWS::EC2::Route").values()
    assert [r for r in routes if r["Properties"]["DestinationCidrBlock"] == "0.0.0.0/0"] == []


def test_closed_network_still_has_the_s3_gateway_endpoint(closed) -> None:
    gateways = [
        r
        for r in closed.network_resources("AWS::EC2::VPCEndpoint").values()
        if r["Properties"]["VpcEndpointType"] == "Gateway"
    ]
    assert len(gateways) == 1


@pytest.mark.parametrize(
    "path", shipped_params(lambda c: c.network.vpc_id is None and c.network.flow_logs)
)
def test_flow_log_of_all_traffic_to_a_retained_log_group(path: Path, synthesized) -> None:
    synth = synthesized(path)
    ((_, flow_log),) = synth.network_resources("AWS::EC2::FlowLog").items()
    vpc_id, _ = synth.one("network", "AWS::EC2::VPC")
    props = flow_log["Properties"]
    assert props["ResourceId"] == ref(vpc_id)
    assert props["ResourceType"] == "VPC"
    assert props["TrafficType"] == "ALL"
    log_group = synth.network_resources()[props["LogGroupName"]["Ref"]]
    assert log_group["DeletionPolicy"] == "Retain"
    assert log_group["Properties"]["RetentionInDays"] > 0


def test_every_log_group_is_encrypted_with_the_environments_logs_key(shipped) -> None:
    """Every log group of every stack, those of CDK's own framework functions included (the
    EncryptLogGroups aspect; their bodies are scrubbed from the snapshots), uses the network
    stack's logs key."""
    (key_id,) = [
        k for k in shipped.resources("network", "AWS::KMS::Key") if k.startswith("NetworkLogsKey")
    ]
    groups = {
        (kind, logical_id): group
        for kind in STACK_KINDS
        if shipped.has(kind)
        for logical_id, group in shipped.resources(kind, "AWS::Logs::LogGroup").items()
    }
    assert groups
    for where, group in groups.items():
        assert shipped.resolve(group["Properties"]["KmsKeyId"]) == get_att(key_id, "Arn"), where


def test_no_flow_log_when_flow_logs_is_false(build_variant) -> None:
    # nag=False: whether AwsSolutions accepts it is test_stack_nag's business
    synth = build_variant({"network.flow_logs": False}, base="minimal", nag=False)
    assert synth.network_resources("AWS::EC2::FlowLog") == {}
    assert synth.network_resources("AWS::Logs::LogGroup") == {}


def test_each_additional_compute_cidr_gets_a_private_subnet_in_its_az(synthesized) -> None:
    synth = synthesized("full")
    subnets = {
        s["Properties"]["AvailabilityZoneId"]: s
        for k, s in synth.network_resources(SUBNET).items()
        if k.startswith("NetworkCompute")
    }
    expected = {synth.config.network.availability_zone_id: synth.config.network.compute_cidr}
    expected.update(synth.config.network.additional_compute_cidrs)
    assert {az: s["Properties"]["CidrBlock"] for az, s in subnets.items()} == {
        az: str(c) for az, c in expected.items()
    }
    blocks = {
        b["Properties"]["CidrBlock"]: k
        for k, b in synth.network_resources("AWS::EC2::VPCCidrBlock").items()
    }
    for az_id, cidr in synth.config.network.additional_compute_cidrs.items():
        assert blocks[str(cidr)] in depends_on(subnets[az_id]), az_id


def test_additional_compute_subnet_is_an_output(synthesized) -> None:
    synth = synthesized("full")
    for az_id in synth.config.network.additional_compute_cidrs:
        assert f"ComputeSubnetId{az_id.replace('-', '')}" in synth.outputs("network")


def test_database_subnets_are_isolated_in_the_accounting_azs(synthesized) -> None:
    synth = synthesized("full")
    subnets = {
        k: s["Properties"]
        for k, s in synth.network_resources(SUBNET).items()
        if k.startswith("NetworkDatabase")
    }
    expected = synth.config.cluster.slurm_settings.accounting_availability_zone_ids
    assert sorted(s["AvailabilityZoneId"] for s in subnets.values()) == sorted(expected)
    isolated = {
        a["Properties"]["SubnetId"]["Ref"]: a["Properties"]["RouteTableId"]["Ref"]
        for a in synth.network_resources("AWS::EC2::SubnetRouteTableAssociation").values()
    }
    routes = synth.network_resources("AWS::EC2::Route").values()
    tables_with_routes = {r["Properties"]["RouteTableId"]["Ref"] for r in routes}
    assert all(isolated[k] not in tables_with_routes for k in subnets)


@pytest.mark.parametrize("path", ADOPTED_VPC)
@pytest.mark.parametrize(
    "resource_type",
    [
        "AWS::EC2::VPC",
        SUBNET,
        "AWS::EC2::VPCCidrBlock",
        "AWS::EC2::RouteTable",
        "AWS::EC2::InternetGateway",
        "AWS::EC2::NatGateway",
        "AWS::EC2::VPCEndpoint",
        "AWS::EC2::FlowLog",
    ],
)
def test_adopted_vpc_creates_no_network_resources(
    path: Path, resource_type: str, synthesized
) -> None:
    assert synthesized(path).network_resources(resource_type) == {}


@pytest.mark.parametrize("path", ADOPTED_VPC)
def test_adopted_vpc_gets_the_node_security_group_in_the_given_vpc(path: Path, synthesized) -> None:
    synth = synthesized(path)
    (group,) = synth.network_resources("AWS::EC2::SecurityGroup").values()
    assert group["Properties"]["VpcId"] == synth.config.network.vpc_id


@pytest.mark.parametrize("path", ADOPTED_VPC)
def test_adopted_vpc_outputs_the_given_ids(path: Path, synthesized) -> None:
    synth = synthesized(path)
    outputs = synth.outputs("network")
    assert outputs["VpcId"]["Value"] == synth.config.network.vpc_id
    assert outputs["ComputeSubnetId"]["Value"] == synth.config.network.compute_subnet_id


# -- what waits for the egress ---------------------------------------------------------------

EGRESS_ONLY = (
    "AWS::EC2::InternetGateway",
    "AWS::EC2::NatGateway",
    "AWS::EC2::EIP",
    "AWS::EC2::Route",
    "AWS::EC2::FlowLog",
    "Custom::VpcRestrictDefaultSG",
)


@pytest.mark.parametrize("path", NEW_VPC)
def test_network_stack_holds_nothing_slow_that_fsx_and_eks_do_not_need(
    path: Path, synthesized
) -> None:
    """FSx, the database and the EKS control plane wait for the network stack: NAT, endpoints,
    flow logs and the default-security-group handler are in the egress stack instead."""
    synth = synthesized(path)
    network = synth.resources("network")
    assert [k for k, r in network.items() if r["Type"] in EGRESS_ONLY] == []
    assert [k for k, r in network.items() if r["Type"] == "AWS::Lambda::Function"] == []
    interface = [
        k
        for k, r in network.items()
        if r["Type"] == "AWS::EC2::VPCEndpoint"
        and r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert interface == []
    egress = {r["Type"] for r in synth.resources("egress").values()}
    assert "Custom::VpcRestrictDefaultSG" in egress
    if not synth.config.network.closed_network:
        assert {"AWS::EC2::InternetGateway", "AWS::EC2::NatGateway"} <= egress


@pytest.mark.parametrize("path", shipped_params(lambda c: True))
def test_only_the_cluster_and_the_kubectl_handler_wait_for_the_egress(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    waiting = {
        kind
        for kind in ("storage", "nodes", "eks", "eks-dependencies", "cluster", "data-repositories")
        if synth.has(kind) and "egress" in synth.dependencies(kind)
    }
    expected = {"cluster", "eks-dependencies"} if synth.has("egress") else set()
    assert waiting == {kind for kind in expected if synth.has(kind)}

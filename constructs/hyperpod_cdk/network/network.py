"""The VPC of a HyperPod environment: created by AZ ID, or adopted."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.config.network import NEW_VPC_KEYS, NetworkConfig
from hyperpod_cdk.facts import CLOSED_NETWORK_ENDPOINTS
from hyperpod_cdk.log_encryption import LogsKey
from hyperpod_cdk.network.default_security_group import restrict_default_security_group
from hyperpod_cdk.network.security_group import EfaSecurityGroup

# The primary CIDR of a new VPC is cut in quarters, one per kind of small
# subnet, so that adding a subnet of one kind never moves another's CIDR
# (a changed CIDR replaces the subnet).
_PUBLIC, _EKS, _DATABASE = 0, 1, 2
_SMALL_SUBNET_PREFIX = 24


# The subnet tag the AWS Load Balancer Controller discovers internal load balancer subnets by
# (AWS Load Balancer Controller docs, "Subnet auto-discovery"; read 2026-11-24).
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"


def small_subnet_cidr(
    primary: ipaddress.IPv4Network, kind: int, index: int
) -> ipaddress.IPv4Network:
    """The ``index``-th /24 (or smaller) subnet of quarter ``kind`` of ``primary``."""
    quarter = list(primary.subnets(prefixlen_diff=2))[kind]
    return list(quarter.subnets(new_prefix=max(_SMALL_SUBNET_PREFIX, quarter.prefixlen)))[index]


# what only a VPC the construct creates uses: set in the config of an adopted ec2.IVpc, it
# would be silently ignored (the EKS subnets of an ec2.IVpc come by id, eks_subnet_ids)
_NEW_VPC_KEYS = (*NEW_VPC_KEYS, "eks_availability_zone_ids")


def _check_adopted_objects(
    net: NetworkConfig, vpc: ec2.IVpc | None, subnets: Mapping[str, ec2.ISubnet] | None
) -> None:
    """Every way ``vpc=`` / ``compute_subnets=`` contradict the config, in one error."""
    problems = []
    if vpc is None:
        if subnets is not None:
            problems.append("compute_subnets= needs vpc= (the VPC they are in)")
    else:
        if net.vpc_id is not None:
            problems.append(
                f"both vpc= and network.vpc_id ({net.vpc_id}) name the VPC; give only one"
            )
        for key in ("compute_subnet_id", "additional_compute_subnet_ids"):
            if net.is_set(key):
                problems.append(f"network.{key} is set: with vpc=, give compute_subnets= instead")
        for key in _NEW_VPC_KEYS:
            if net.is_set(key):
                problems.append(f"network.{key} applies only to a VPC the construct creates")
        if subnets is None or net.availability_zone_id not in subnets:
            problems.append(
                "vpc= needs compute_subnets= with the HyperPod subnet of "
                f"network.availability_zone_id ({net.availability_zone_id})"
            )
    if problems:
        raise ValueError("HyperPodNetwork: " + "; ".join(problems))


def _az_logical_suffix(az_id: str) -> str:
    return "".join(part.capitalize() for part in az_id.split("-"))


class HyperPodNetwork(Construct):
    """Network of a HyperPod environment.

    A new VPC (``network.vpc_id`` unset) gets: the primary CIDR for small
    subnets (public subnets with NAT gateways, database and EKS subnets), the
    secondary ``compute_cidr`` used whole as the private HyperPod subnet of
    ``availability_zone_id``, one more HyperPod subnet per
    ``additional_compute_cidrs`` entry, an S3 gateway endpoint, optional
    interface endpoints, and flow logs; its default security group is closed.
    Every subnet is created by AZ *ID*, so
    no AZ name (real or dummy) is ever written into the template. With
    ``closed_network`` there is no internet gateway or NAT, and the interface
    endpoints the nodes need are added.

    An adopted VPC (``network.vpc_id`` set) is referenced by id; the HyperPod
    subnets are ``compute_subnet_id`` and ``additional_compute_subnet_ids``.

    In both cases the construct creates the :class:`EfaSecurityGroup` of the
    nodes; ``network.security_group_ids`` are added beside it.

    A VPC that is already an ``ec2.IVpc`` in your app (your own ``ec2.Vpc``, or
    ``ec2.Vpc.from_vpc_attributes``) is adopted with ``vpc=`` and its HyperPod
    subnets with ``compute_subnets=`` (by AZ ID); the config then names no VPC
    or subnet ids and none of the new-VPC keys.

    :param network: the ``network`` section of the config.
    :param vpc: an existing ``ec2.IVpc`` to adopt, instead of ``network.vpc_id``.
    :param compute_subnets: with ``vpc``: its HyperPod subnets by AZ ID, the
        main ``network.availability_zone_id`` among them (instead of
        ``compute_subnet_id`` and ``additional_compute_subnet_ids``).
    :param database_az_ids: AZ IDs of the database subnets to create (new VPC);
        none when left out.
    :param database_subnet_ids: adopted database subnets (adopted VPC); none
        when left out.
    :param eks_az_ids: AZ IDs of EKS control-plane subnets to create (new VPC);
        none when left out.
    :param eks_subnet_ids: adopted EKS control-plane subnets; none when left out.
    :param closed_network_endpoints: the interface endpoints a closed network
        gets (besides ``interface_endpoints``); add ``eks``, ``eks-auth`` for EKS.
        When left out: the endpoints a Slurm cluster needs.
    :param logs_key: the KMS key of the flow logs (and, through
        :class:`~hyperpod_cdk.log_encryption.EncryptLogGroups`, of the environment's
        other log groups); default: a new :class:`~hyperpod_cdk.log_encryption.LogsKey`.
    :param egress_scope: where to create what only the nodes (and the kubectl
        handler) wait for: the internet gateway, public subnets, NAT gateways and
        default routes, the interface endpoints, the flow logs and the closure of
        the default security group. Give a construct in a stack of its own, and
        the stacks that need only the VPC, its subnets and security groups (FSx,
        the database, the EKS control plane) do not wait for them; default: this
        construct.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        network: NetworkConfig,
        vpc: ec2.IVpc | None = None,
        compute_subnets: Mapping[str, ec2.ISubnet] | None = None,
        database_az_ids: Sequence[str] = (),
        database_subnet_ids: Sequence[str] = (),
        eks_az_ids: Sequence[str] = (),
        eks_subnet_ids: Sequence[str] = (),
        closed_network_endpoints: Sequence[str] = CLOSED_NETWORK_ENDPOINTS,
        logs_key: kms.IKey | None = None,
        egress_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = network
        self.egress_scope: Construct = egress_scope or self
        # every log group of the environment (flow logs here, the others through the
        # EncryptLogGroups aspect) is encrypted with this key
        self.logs_key: kms.IKey = logs_key or LogsKey(self, "LogsKey").key
        self.compute_subnets: dict[str, ec2.ISubnet] = {}
        self.database_subnets: list[ec2.ISubnet] = []
        self.eks_subnets: list[ec2.ISubnet] = []
        # the EKS subnets this construct creates (none in an adopted VPC)
        self._created_eks_subnets: list[ec2.CfnSubnet] = []
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        _check_adopted_objects(network, vpc, compute_subnets)
        if vpc is not None:
            self.vpc = vpc
            self.cidr_blocks: list[str] = []
            self.compute_subnets = dict(compute_subnets or {})
            self._adopt_subnets(database_subnet_ids, eks_subnet_ids)
        elif network.vpc_id is None:
            self._create_vpc(network, database_az_ids, eks_az_ids)
        else:
            self._adopt_vpc(network, database_subnet_ids, eks_subnet_ids)
        self.efa = EfaSecurityGroup(
            self,
            "NodeSecurityGroup",
            vpc=self.vpc,
            closed_network=network.closed_network,
            node_egress=network.node_egress,
        )
        self.extra_security_groups = [
            ec2.SecurityGroup.from_security_group_id(self, f"Extra{i}", sg_id, mutable=False)
            for i, sg_id in enumerate(network.security_group_ids)
        ]
        endpoints = list(network.interface_endpoints)
        if network.closed_network:
            endpoints += [e for e in closed_network_endpoints if e not in endpoints]
        if endpoints:
            self._add_interface_endpoints(endpoints)

    @property
    def compute_subnet(self) -> ec2.ISubnet:
        """The HyperPod subnet of the main AZ."""
        return self.compute_subnets[self.config.availability_zone_id]

    @property
    def node_security_groups(self) -> list[ec2.ISecurityGroup]:
        """Every security group put on the HyperPod nodes: the EFA group first."""
        return [self.efa.security_group, *self.extra_security_groups]

    # -- new VPC -------------------------------------------------------------

    def _create_vpc(
        self, net: NetworkConfig, database_az_ids: Sequence[str], eks_az_ids: Sequence[str]
    ) -> None:
        cfn_vpc = ec2.CfnVPC(
            self,
            "Vpc",
            cidr_block=str(net.cidr),
            enable_dns_hostnames=True,
            enable_dns_support=True,
        )
        cdk.Tags.of(cfn_vpc).add("Name", f"{cdk.Stack.of(self).stack_name}-vpc")
        egress = self.egress_scope
        restrict_default_security_group(egress, cfn_vpc)
        if egress is not self:
            acknowledge_controls(
                cfn_vpc,
                "VPCDefaultSecurityGroupClosed",
                "The default security group is closed by the Custom::VpcRestrictDefaultSG resource "
                f"at {egress.node.path} (the environment's egress stack), so that the stacks that "
                "need only the VPC do not wait for its Lambda function; nothing uses the group.",
            )
        self.vpc = ec2.Vpc.from_vpc_attributes(
            self,
            "VpcRef",
            vpc_id=cfn_vpc.ref,
            vpc_cidr_block=cfn_vpc.attr_cidr_block,
            # never rendered: every subnet is made by AZ ID below
            availability_zones=[cdk.Fn.select(0, cdk.Fn.get_azs())],
        )
        self.cidr_blocks = [
            str(net.cidr),
            str(net.compute_cidr),
            *(str(c) for c in net.additional_compute_cidrs.values()),
        ]
        compute_azs = {net.availability_zone_id: net.compute_cidr, **net.additional_compute_cidrs}
        secondary: dict[str, ec2.CfnVPCCidrBlock] = {}
        for az_id, block in compute_azs.items():
            name = (
                "ComputeCidr"
                if az_id == net.availability_zone_id
                else f"ComputeCidr{_az_logical_suffix(az_id)}"
            )
            secondary[az_id] = ec2.CfnVPCCidrBlock(
                self, name, vpc_id=cfn_vpc.ref, cidr_block=str(block)
            )

        nat_by_az: dict[str, ec2.CfnNatGateway] = {}
        if not net.closed_network:
            igw = ec2.CfnInternetGateway(egress, "InternetGateway")
            attach = ec2.CfnVPCGatewayAttachment(egress, "InternetGatewayAttachment", vpc_id=cfn_vpc.ref,
                                                 internet_gateway_id=igw.ref)  # fmt: skip
            public_rt = ec2.CfnRouteTable(egress, "PublicRouteTable", vpc_id=cfn_vpc.ref)
            route = ec2.CfnRoute(egress, "PublicDefaultRoute", route_table_id=public_rt.ref,
                                 destination_cidr_block="0.0.0.0/0", gateway_id=igw.ref)  # fmt: skip
            route.node.add_dependency(attach)
            acknowledge_controls(
                route,
                "VPCNoUnrestrictedRouteToIGW",
                "Only the public subnets use this route, and they hold only the NAT gateways that give "
                "the private HyperPod subnets outbound access; nothing in them has a public address "
                "(closed_network: true removes the route).",
            )
            for index, az_id in enumerate(compute_azs):
                subnet = self._subnet(f"Public{_az_logical_suffix(az_id)}", cfn_vpc, az_id,
                                      small_subnet_cidr(net.cidr, _PUBLIC, index), public=True)  # fmt: skip
                ec2.CfnSubnetRouteTableAssociation(egress, f"Public{_az_logical_suffix(az_id)}Association",
                                                   subnet_id=subnet.ref, route_table_id=public_rt.ref)  # fmt: skip
                if index < net.nat_gateways:
                    eip = ec2.CfnEIP(egress, f"NatIp{_az_logical_suffix(az_id)}", domain="vpc")
                    nat = ec2.CfnNatGateway(egress, f"Nat{_az_logical_suffix(az_id)}", subnet_id=subnet.ref,
                                            allocation_id=eip.attr_allocation_id)  # fmt: skip
                    nat.node.add_dependency(route)
                    nat_by_az[az_id] = nat

        private_route_tables: list[str] = []
        first_nat = next(iter(nat_by_az.values()), None)
        for az_id, block in compute_azs.items():
            suffix = "" if az_id == net.availability_zone_id else _az_logical_suffix(az_id)
            rt = ec2.CfnRouteTable(self, f"ComputeRouteTable{suffix}", vpc_id=cfn_vpc.ref)
            route_nat = nat_by_az.get(az_id, first_nat)
            if route_nat is not None:
                ec2.CfnRoute(egress, f"ComputeDefaultRoute{suffix}", route_table_id=rt.ref,
                             destination_cidr_block="0.0.0.0/0", nat_gateway_id=route_nat.ref)  # fmt: skip
            subnet = self._subnet(f"Compute{suffix}", cfn_vpc, az_id, block, public=False)
            subnet.node.add_dependency(secondary[az_id])
            ec2.CfnSubnetRouteTableAssociation(self, f"Compute{suffix}Association", subnet_id=subnet.ref,
                                               route_table_id=rt.ref)  # fmt: skip
            private_route_tables.append(rt.ref)
            self.compute_subnets[az_id] = ec2.Subnet.from_subnet_attributes(
                self, f"Compute{suffix}Ref", subnet_id=subnet.ref, route_table_id=rt.ref,
                availability_zone=subnet.attr_availability_zone, ipv4_cidr_block=str(block),
            )  # fmt: skip

        # Database subnets are isolated. EKS control-plane subnets also host the
        # kubectl handler, which calls the EKS and STS APIs: they route through
        # NAT when there is one (a closed network reaches them by endpoints).
        for kind, label, az_ids, into, route_nat in (
            (_DATABASE, "Database", database_az_ids, self.database_subnets, None),
            (_EKS, "Eks", eks_az_ids, self.eks_subnets, first_nat),
        ):
            if not az_ids:
                continue
            # (the database table keeps its first name: renaming would replace it)
            table_name = "IsolatedRouteTable" if kind == _DATABASE else f"{label}RouteTable"
            table = ec2.CfnRouteTable(self, table_name, vpc_id=cfn_vpc.ref)
            private_route_tables.append(table.ref)
            if route_nat is not None:
                ec2.CfnRoute(egress, f"{label}DefaultRoute", route_table_id=table.ref,
                             destination_cidr_block="0.0.0.0/0", nat_gateway_id=route_nat.ref)  # fmt: skip
            for index, az_id in enumerate(az_ids):
                name = f"{label}{_az_logical_suffix(az_id)}"
                block = small_subnet_cidr(net.cidr, kind, index)
                subnet = self._subnet(name, cfn_vpc, az_id, block, public=False)
                if kind == _EKS:
                    self._created_eks_subnets.append(subnet)
                ec2.CfnSubnetRouteTableAssociation(self, f"{name}Association", subnet_id=subnet.ref,
                                                   route_table_id=table.ref)  # fmt: skip
                into.append(ec2.Subnet.from_subnet_attributes(
                    self, f"{name}Ref", subnet_id=subnet.ref, route_table_id=table.ref,
                    availability_zone=subnet.attr_availability_zone, ipv4_cidr_block=str(block),
                ))  # fmt: skip

        # the nodes read their lifecycle scripts through it: beside the route tables
        ec2.CfnVPCEndpoint(
            self,
            "S3GatewayEndpoint",
            vpc_id=cfn_vpc.ref,
            service_name=f"com.amazonaws.{cdk.Stack.of(self).region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=private_route_tables,
        )
        if not net.flow_logs:
            acknowledge(
                cfn_vpc,
                "AwsSolutions-VPC7",
                "Flow logs are switched off explicitly by the environment config (network.flow_logs: false).",
            )
        if net.flow_logs:
            log_group = logs.LogGroup(egress, "FlowLogs", retention=logs.RetentionDays.ONE_YEAR,
                                      encryption_key=self.logs_key,
                                      removal_policy=cdk.RemovalPolicy.RETAIN)  # fmt: skip
            flow_log = ec2.FlowLog(
                egress,
                "FlowLog",
                resource_type=ec2.FlowLogResourceType.from_vpc(self.vpc),
                destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group),
                traffic_type=ec2.FlowLogTrafficType.ALL,
            )
            acknowledge_controls(
                flow_log.node.find_child("IAMRole").node.find_child("DefaultPolicy"),
                "IAMNoInlinePolicy",
                "CDK generates this policy for the flow-log delivery role: it writes to the one flow-log "
                "group and passes only this role; nothing else uses it.",
            )
            if egress is not self:
                # the flow-log rules look for the flow log in the VPC's own stack
                reason = (
                    f"The VPC's flow log (all traffic) is {flow_log.node.path}, in the "
                    "environment's egress stack, so that FSx and EKS do not wait for it."
                )
                acknowledge(cfn_vpc, "AwsSolutions-VPC7", reason)
                acknowledge_controls(cfn_vpc, "VPCFlowLogsEnabled", reason)

    def _subnet(
        self, name: str, vpc: ec2.CfnVPC, az_id: str, block: ipaddress.IPv4Network, *, public: bool
    ) -> ec2.CfnSubnet:
        # public subnets hold only the NAT gateways: they go with the egress
        subnet = ec2.CfnSubnet(
            self.egress_scope if public else self,
            name,
            vpc_id=vpc.ref,
            cidr_block=str(block),
            availability_zone_id=az_id,
            map_public_ip_on_launch=False,
        )
        cdk.Tags.of(subnet).add("Name", f"{cdk.Stack.of(self).stack_name}-{name.lower()}")
        cdk.Tags.of(subnet).add("network", "public" if public else "private")
        return subnet

    def tag_internal_load_balancer_subnets(self) -> list[ec2.CfnSubnet]:
        """Tag the EKS subnets this construct created ``kubernetes.io/role/internal-elb: 1``, where
        the AWS Load Balancer Controller puts internal load balancers (the inference operator's
        endpoints; an ALB needs subnets in two AZs, which the EKS subnets span). Adopted subnets
        are not touched (preflight says which lack the tag). Returns the tagged subnets."""
        for subnet in self._created_eks_subnets:
            cdk.Tags.of(subnet).add(INTERNAL_ELB_TAG, "1")
        return list(self._created_eks_subnets)

    # -- adopted VPC ---------------------------------------------------------

    def _adopt_vpc(
        self, net: NetworkConfig, database_subnet_ids: Sequence[str], eks_subnet_ids: Sequence[str]
    ) -> None:
        assert (
            net.vpc_id is not None and net.compute_subnet_id is not None
        )  # guaranteed by the config rules
        self.vpc = ec2.Vpc.from_vpc_attributes(
            self, "Vpc", vpc_id=net.vpc_id, availability_zones=[cdk.Fn.select(0, cdk.Fn.get_azs())]
        )
        self.cidr_blocks = []
        subnet_ids = {
            net.availability_zone_id: net.compute_subnet_id,
            **net.additional_compute_subnet_ids,
        }
        for az_id, subnet_id in subnet_ids.items():
            suffix = "" if az_id == net.availability_zone_id else _az_logical_suffix(az_id)
            self.compute_subnets[az_id] = ec2.Subnet.from_subnet_id(
                self, f"Compute{suffix}", subnet_id
            )
        self._adopt_subnets(database_subnet_ids, eks_subnet_ids)

    def _adopt_subnets(
        self, database_subnet_ids: Sequence[str], eks_subnet_ids: Sequence[str]
    ) -> None:
        self.database_subnets = [
            ec2.Subnet.from_subnet_id(self, f"Database{i}", subnet_id)
            for i, subnet_id in enumerate(database_subnet_ids)
        ]
        self.eks_subnets = [
            ec2.Subnet.from_subnet_id(self, f"Eks{i}", subnet_id)
            for i, subnet_id in enumerate(eks_subnet_ids)
        ]
        cdk.Validations.of(self).acknowledge(
            cdk.Acknowledgment(
                id="Annotation::@aws-cdk/aws-ec2:noSubnetRouteTableId",
                reason="The app adds no routes to an adopted VPC, so adopted subnets need no route table id.",
            )
        )

    # -- endpoints -----------------------------------------------------------

    def _add_interface_endpoints(self, services: Sequence[str]) -> None:
        scope = self.egress_scope
        endpoint_sg = ec2.SecurityGroup(
            scope,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="Interface VPC endpoints: HTTPS from the HyperPod nodes",
        )
        endpoint_sg.add_ingress_rule(
            self.efa.security_group, ec2.Port.tcp(443), "HTTPS from the HyperPod nodes"
        )
        for block in self.cidr_blocks:
            endpoint_sg.add_ingress_rule(
                ec2.Peer.ipv4(block), ec2.Port.tcp(443), f"HTTPS from {block}"
            )
        subnets = ec2.SubnetSelection(subnets=list(self.compute_subnets.values()))
        for service in services:
            name = "".join(p.capitalize() for p in service.replace(".", "-").split("-"))
            self.interface_endpoints[service] = ec2.InterfaceVpcEndpoint(
                scope,
                f"{name}Endpoint",
                vpc=self.vpc,
                service=ec2.InterfaceVpcEndpointAwsService(service),
                subnets=subnets,
                security_groups=[endpoint_sg],
                private_dns_enabled=True,
                open=False,
            )

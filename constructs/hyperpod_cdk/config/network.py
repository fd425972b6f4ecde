"""The ``network`` section: the VPC, created or adopted, and its rules.

The model checks each key; the rules check what relates keys: CIDR blocks that overlap or leave
no room, keys of a new VPC given with an adopted one, AZ IDs of another region.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, StringConstraints, Tag, field_validator, model_validator

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import (
    WHOLE_NUMBER,
    AzId,
    Cidr,
    IssueSink,
    StrictModel,
    SubnetId,
    eks_only,
    matching,
    unique,
)

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# Subnets of a new VPC's primary CIDR are /24s.
SERVICE_SUBNET_PREFIX = 24

RFC1918 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))

VpcId = Annotated[str, matching(r"^vpc-[0-9a-f]{8,17}$", "a VPC id like vpc-0123456789abcdef0")]
SecurityGroupId = Annotated[
    str, matching(r"^sg-[0-9a-f]{8,17}$", "a security group id like sg-0123456789abcdef0")
]


# the network keys only a VPC the app creates uses (an adopted VPC has them already)
NEW_VPC_KEYS = (
    "cidr",
    "compute_cidr",
    "additional_compute_cidrs",
    "nat_gateways",
    "closed_network",
)


class EgressRule(StrictModel):
    """One more egress rule of the nodes' security group (``network.node_egress``)."""

    port: Annotated[int, Field(ge=1, le=65535), WHOLE_NUMBER] = Field(
        description="The port, or the first port of a range."
    )
    to_port: Annotated[int, Field(ge=1, le=65535), WHOLE_NUMBER] | None = Field(
        default=None, description="The last port of a range (default: port)."
    )
    protocol: Literal["tcp", "udp"] = Field(default="tcp", description="tcp or udp; default tcp.")
    cidr: Cidr = Field(description="Where to, e.g. 0.0.0.0/0 or 10.20.0.0/16.")
    description: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        default=None,
        description="The rule's description in the security group; left out: network.node_egress: "
        "<protocol> <ports> to <cidr>.",
    )

    @model_validator(mode="after")
    def _range(self) -> EgressRule:
        if self.to_port is not None and self.to_port < self.port:
            raise ValueError(f"to_port {self.to_port} is below port {self.port}")
        return self


# network.node_egress is a word or a list of rules: the value's own type picks the branch, so a
# problem is reported in that branch only; the tags are dropped from the reported key path
# (UNION_TAG_PREFIX, read by the loader).
UNION_TAG_PREFIX = "<"
NodeEgress = Annotated[
    Annotated[Literal["default", "all"], Tag("<word>")]
    | Annotated[list[EgressRule], Tag("<rules>")],
    Discriminator(lambda value: "<rules>" if isinstance(value, list) else "<word>"),
]


class NetworkConfig(StrictModel):
    """The VPC: created (public subnets, NAT, a HyperPod subnet per AZ) or adopted."""

    vpc_id: VpcId | None = Field(
        default=None, description="Adopt this VPC; then compute_subnet_id is required."
    )
    cidr: Cidr = Field(
        default=ipaddress.IPv4Network("10.0.0.0/16"), description="Primary CIDR of a new VPC."
    )
    compute_cidr: Cidr = Field(
        default=ipaddress.IPv4Network("10.1.0.0/16"),
        description="Secondary CIDR of a new VPC, used whole for the HyperPod subnet (and FSx).",
    )
    availability_zone_id: AzId = Field(
        description="AZ ID of the HyperPod nodes and of FSx, e.g. usw2-az2."
    )
    additional_compute_cidrs: dict[AzId, Cidr] = Field(
        default_factory=dict,
        description="A further HyperPod subnet per AZ ID, for groups with their own "
        "availability_zone_id.",
    )
    additional_compute_subnet_ids: dict[AzId, SubnetId] = Field(
        default_factory=dict,
        description="Adopted VPC: the HyperPod subnet of each further AZ ID used by a group.",
    )
    eks_availability_zone_ids: list[AzId] = Field(
        default_factory=list,
        description="AZ IDs of the EKS control-plane subnets (>= 2).",
        json_schema_extra=eks_only(),
    )
    nat_gateways: Annotated[int, Field(ge=0, le=16), WHOLE_NUMBER] = Field(
        default=1, description="NAT gateways of a new VPC (0 with closed_network)."
    )
    compute_subnet_id: SubnetId | None = Field(
        default=None, description="Adopted VPC: the private HyperPod subnet."
    )
    eks_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description="Adopted VPC: the EKS control-plane subnets (at least two, in two AZs).",
        json_schema_extra=eks_only(),
    )
    security_group_ids: list[SecurityGroupId] = Field(
        default_factory=list,
        description="Extra groups put on the nodes; each must allow all traffic from and to itself"
        " (EFA).",
    )
    interface_endpoints: list[str] = Field(
        default_factory=list,
        description="Interface VPC endpoints to create, e.g. [ssm, logs, ecr.api].",
    )
    closed_network: bool = Field(
        default=False,
        description="No internet gateway or NAT; every endpoint the environment needs.",
    )
    flow_logs: bool = Field(default=True, description="VPC flow logs to CloudWatch Logs (new VPC).")
    node_egress: NodeEgress = Field(
        default="default",
        description="Egress of the nodes' security group besides the group itself (EFA): "
        "default: HTTPS (443), HTTP (80, not in a closed network) and the Lustre ports, so a "
        "job reaches nothing else (no git over SSH); all: every port everywhere (AWS's console "
        "default); a list of {port, to_port, protocol, cidr}: the default rules plus these.",
    )

    @field_validator("interface_endpoints")
    @classmethod
    def _known_endpoints(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in facts.INTERFACE_ENDPOINT_SERVICES]
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not an interface endpoint service this app creates; allowed: "
                + ", ".join(facts.INTERFACE_ENDPOINT_SERVICES)
            )
        return unique(value, "interface endpoints")

    @field_validator("eks_availability_zone_ids", "eks_subnet_ids", "security_group_ids")
    @classmethod
    def _no_repeats(cls, value: list[str]) -> list[str]:
        return unique(value, "entries")


# -- cross-key rules --------------------------------------------------------------------------


def check_network(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``network`` into ``out``."""
    _check_network(cfg.network, cfg, out)


def check_az_ids(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Every AZ ID of the config (network, groups, accounting database) is one of the region."""
    _check_az_ids(cfg, out)


def _az_ids(cfg: EnvironmentConfig) -> Iterable[tuple[str, str]]:
    net = cfg.network
    yield "network.availability_zone_id", net.availability_zone_id
    for az in net.additional_compute_cidrs:
        yield f"network.additional_compute_cidrs.{az}", az
    for az in net.additional_compute_subnet_ids:
        yield f"network.additional_compute_subnet_ids.{az}", az
    for i, az in enumerate(net.eks_availability_zone_ids):
        yield f"network.eks_availability_zone_ids[{i}]", az
    for i, az in enumerate(cfg.cluster.slurm_settings.accounting_availability_zone_ids):
        yield f"cluster.slurm.accounting_availability_zone_ids[{i}]", az
    for i, group in enumerate(cfg.cluster.instance_groups):
        if group.availability_zone_id:
            yield f"cluster.instance_groups[{i}].availability_zone_id", group.availability_zone_id


def _check_az_ids(cfg: EnvironmentConfig, out: IssueSink) -> None:
    prefix = facts.az_id_prefix(cfg.region)
    if prefix is None:
        return
    for path, az in _az_ids(cfg):
        if not az.startswith(prefix + "-"):
            out.error(
                path,
                f"{az!r} is not an AZ ID of {cfg.region}; its AZ IDs look like {prefix}-az1; to "
                f"map AZ names to AZ IDs in your account, run: {facts.az_mapping_command(cfg.region)}",
            )


def _check_cidr_block(path: str, block: ipaddress.IPv4Network, out: IssueSink) -> None:
    # VPC user guide "VPC CIDR blocks": a block is between /16 and /28.
    if not 16 <= block.prefixlen <= 28:
        out.error(path, f"{block} has a /{block.prefixlen} mask; a VPC CIDR block is /16 to /28")


def _rfc1918_range(block: ipaddress.IPv4Network) -> ipaddress.IPv4Network | None:
    return next((r for r in RFC1918 if block.subnet_of(r)), None)


def _service_subnet_counts(cfg: EnvironmentConfig) -> dict[str, int]:
    """How many small subnets of each kind a new VPC carves from its primary CIDR."""
    net = cfg.network
    settings = cfg.cluster.slurm_settings
    return {
        "public": 0 if net.closed_network else 1 + len(net.additional_compute_cidrs),
        "EKS": len(net.eks_availability_zone_ids) if not cfg.is_slurm else 0,
        "database": len(settings.accounting_availability_zone_ids)
        if settings.accounting_database
        else 0,
    }


def small_subnets_per_kind(primary: ipaddress.IPv4Network) -> int:
    """Subnets of one kind that fit in ``primary``.

    The network construct gives each kind (public, EKS, database) a quarter of
    the primary CIDR, cut into /24s (a quarter smaller than a /24 is one
    subnet), so adding a subnet of one kind never moves another's CIDR.
    """
    quarter_prefix = primary.prefixlen + 2
    if quarter_prefix > 28:  # AWS's smallest subnet is a /28
        return 0
    return int(2 ** max(0, SERVICE_SUBNET_PREFIX - quarter_prefix))


def _check_network(net: NetworkConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    if net.vpc_id is None:
        _check_new_vpc(net, cfg, out)
    else:
        _check_adopted_vpc(net, out)
    _check_node_egress(net, out)
    for key in ("additional_compute_cidrs", "additional_compute_subnet_ids"):
        if net.availability_zone_id in getattr(net, key):
            out.error(
                f"network.{key}.{net.availability_zone_id}",
                "is the main HyperPod AZ (network.availability_zone_id), which has its subnet "
                "already; list only other AZs",
            )
    if len(net.security_group_ids) > facts.MAX_SECURITY_GROUPS - 1:
        out.error(
            "network.security_group_ids",
            f"{len(net.security_group_ids)} groups; at most {facts.MAX_SECURITY_GROUPS - 1} "
            f"(HyperPod allows {facts.MAX_SECURITY_GROUPS} per cluster and the app adds its EFA group)",
        )
    if net.closed_network and net.is_set("nat_gateways") and net.nat_gateways > 0:
        out.error("network.nat_gateways", "must be 0 (or left out) with closed_network: true")
    if net.closed_network and net.vpc_id is None:
        return
    if net.vpc_id is None and net.nat_gateways == 0:
        out.error(
            "network.nat_gateways",
            "0 leaves the HyperPod nodes with no route to AWS APIs; use at least 1, "
            "or closed_network: true for VPC endpoints instead",
        )


def _check_new_vpc(net: NetworkConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    only_adopted = "applies only when network.vpc_id adopts a VPC"
    for key in (
        "compute_subnet_id",
        "additional_compute_subnet_ids",
        "eks_subnet_ids",
        "security_group_ids",
    ):
        if getattr(net, key):
            out.error(f"network.{key}", only_adopted)
    if cfg.cluster.slurm_settings.accounting_subnet_ids:
        out.error("cluster.slurm.accounting_subnet_ids", only_adopted)

    blocks = [("network.cidr", net.cidr), ("network.compute_cidr", net.compute_cidr)]
    blocks += [
        (f"network.additional_compute_cidrs.{az}", c)
        for az, c in net.additional_compute_cidrs.items()
    ]
    for path, block in blocks:
        _check_cidr_block(path, block, out)
    for i, (path_a, a) in enumerate(blocks):
        for path_b, b in blocks[i + 1 :]:
            if a.overlaps(b):
                out.error(
                    path_b, f"{b} overlaps {path_a} ({a}); the VPC's CIDR blocks must not overlap"
                )
    # VPC user guide "IPv4 CIDR block association restrictions": once a VPC has
    # a block from one RFC 1918 range, blocks from the other ranges are refused.
    primary_range = _rfc1918_range(net.cidr)
    for path, block in blocks[1:]:
        block_range = _rfc1918_range(block)
        if primary_range and block_range and block_range != primary_range:
            out.error(
                path,
                f"{block} is in {block_range}, the primary CIDR in {primary_range}; AWS refuses "
                "secondary blocks from another RFC 1918 range",
            )
    room = small_subnets_per_kind(net.cidr)
    for kind, needed in _service_subnet_counts(cfg).items():
        if needed > room:
            out.error(
                "network.cidr",
                f"{net.cidr} has room for {room} {kind} subnet(s) (a quarter of the block, in /24s); this "
                f"environment needs {needed}: use a larger block, e.g. a /{min(net.cidr.prefixlen, 20)}",
            )
    _check_compute_subnet_room(net, cfg, out)
    public_azs = 1 + len(net.additional_compute_cidrs)
    if not net.closed_network and net.nat_gateways > public_azs:
        out.error(
            "network.nat_gateways",
            f"{net.nat_gateways} is more than the {public_azs} AZ(s) with a "
            "public subnet; use at most one per AZ",
        )


def _check_compute_subnet_room(net: NetworkConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Each HyperPod subnet has an address for every node placed in its AZ."""
    nodes: dict[str, int] = {}
    for group in cfg.cluster.instance_groups:
        az = group.availability_zone_id or net.availability_zone_id
        nodes[az] = nodes.get(az, 0) + group.count
    subnets = {net.availability_zone_id: ("network.compute_cidr", net.compute_cidr)}
    subnets.update(
        {
            az: (f"network.additional_compute_cidrs.{az}", c)
            for az, c in net.additional_compute_cidrs.items()
        }
    )
    for az, count in nodes.items():
        if az not in subnets:
            continue  # reported on the group: no HyperPod subnet in that AZ
        path, block = subnets[az]
        # VPC user guide "Subnet CIDR blocks": AWS reserves 5 addresses of every subnet.
        usable = block.num_addresses - facts.SUBNET_RESERVED_ADDRESSES
        if count > usable:
            out.error(
                path,
                f"{block} has {usable} usable addresses; the {count} nodes in {az} need at least "
                "one each (accelerated instances take one per EFA network card): use a larger block, "
                "e.g. a /16",
            )


def _check_adopted_vpc(net: NetworkConfig, out: IssueSink) -> None:
    if net.compute_subnet_id is None:
        out.error(
            "network.compute_subnet_id",
            "is required with network.vpc_id: the private HyperPod subnet",
        )
    only_new = "applies only to a VPC the app creates (network.vpc_id is set)"
    for key in NEW_VPC_KEYS:
        if net.is_set(key):
            out.error(f"network.{key}", only_new)


def _check_node_egress(net: NetworkConfig, out: IssueSink) -> None:
    """The list form of network.node_egress: no rule twice; in a closed network, a rule to the
    internet reaches nothing (no NAT, no internet gateway)."""
    if isinstance(net.node_egress, str):
        if net.node_egress == "all" and net.closed_network:
            out.warn(
                "network.node_egress",
                "all egress in a closed network reaches only the VPC and its endpoints (no NAT, "
                "no internet gateway)",
            )
        return
    seen: dict[tuple[Any, ...], int] = {}
    for i, rule in enumerate(net.node_egress):
        key = (rule.protocol, rule.port, rule.to_port or rule.port, rule.cidr)
        if key in seen:
            out.error(
                f"network.node_egress[{i}]",
                f"repeats network.node_egress[{seen[key]}] ({rule.protocol} {rule.port} to "
                f"{rule.cidr}); give each rule once",
            )
        seen.setdefault(key, i)
        if net.closed_network and rule.cidr.prefixlen == 0:
            out.warn(
                f"network.node_egress[{i}].cidr",
                f"{rule.cidr} in a closed network reaches only the VPC and its endpoints (no NAT, "
                "no internet gateway)",
            )

"""Rules that relate several keys of an environment config.

Each rule adds :class:`Issue` objects to a list instead of raising, so that one
run reports every problem. The field-level limits live on the models; the
rules here are the ones CloudFormation or HyperPod would only reject at deploy
time (HYPERPOD_FACTS.md), checked before anything reaches AWS.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hyperpod_cdk import facts
from hyperpod_cdk.config.alerts import check_alerts
from hyperpod_cdk.config.autoscaling import check_autoscaling
from hyperpod_cdk.config.chart_instance_types import check_chart_instance_types
from hyperpod_cdk.config.inference import check_inference
from hyperpod_cdk.config.models import (
    NEW_VPC_KEYS,
    ClusterConfig,
    EnvironmentConfig,
    InstanceGroup,
    NetworkConfig,
)
from hyperpod_cdk.config.node_setup import check_node_setup
from hyperpod_cdk.config.observability import check_observability
from hyperpod_cdk.config.storage import check_kms_key_region, check_storage
from hyperpod_cdk.config.task_governance import check_task_governance

# The file the cluster's LifeCycleConfig names; it must exist in the uploaded
# directory at create time (AWS::SageMaker::Cluster LifeCycleConfig).
LIFECYCLE_ENTRY_SCRIPT = "entrypoint.sh"
# A provisioning_parameters.json beside the scripts makes API-driven Slurm
# updates fail and roll back (HyperPod "Migrating to API-driven Slurm
# configuration", Troubleshooting).
LEGACY_SLURM_FILE = "provisioning_parameters.json"
# Tags the app adds itself; AWS allows 50 per resource.
MAX_USER_TAGS = 45
# Subnets of a new VPC's primary CIDR are /24s.
SERVICE_SUBNET_PREFIX = 24

RFC1918 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


@dataclass(frozen=True)
class Issue:
    """One problem (or warning) found in a config, at a dotted key path."""

    path: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        prefix = "config error" if self.severity == "error" else "config warning"
        return f"{prefix}: {self.path}: {self.message}"


class _Collector:
    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def error(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message))

    def warn(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message, "warning"))


# The most of the address space eks.public_access_cidrs may open together: a /8 of IPv4 (16.7
# million addresses, wider than any one organisation's networks) and a /32 of IPv6.
PUBLIC_ENDPOINT_MAX_V4 = ipaddress.ip_network("10.0.0.0/8")
PUBLIC_ENDPOINT_MAX_V6 = ipaddress.ip_network("2001:db8::/32")


def check_environment(cfg: EnvironmentConfig, project_root: Path | None = None) -> list[Issue]:
    """Every cross-key problem of ``cfg``, in the order of the file."""
    out = _Collector()
    _check_tags(cfg, out)
    _check_arn_accounts(cfg, out)
    _check_az_ids(cfg, out)
    _check_orchestrator_keys(cfg, out)
    _check_network(cfg.network, cfg, out)
    check_storage(cfg, out)
    _check_cluster(cfg.cluster, cfg, out)
    _check_groups(cfg.cluster, cfg, out)
    check_autoscaling(cfg, out)
    _check_instance_types(cfg, out)
    _check_eks(cfg, out)
    _check_eks_dependencies(cfg, out)
    _check_eks_addons(cfg, out)
    check_task_governance(cfg, out)
    check_inference(cfg, out)
    check_node_setup(cfg, project_root, out)
    check_alerts(cfg, out)
    check_observability(cfg, out)
    if project_root is not None:
        _check_lifecycle_dir(cfg.cluster, project_root, out)
    return out.issues


def _check_tags(cfg: EnvironmentConfig, out: _Collector) -> None:
    if len(cfg.tags) > MAX_USER_TAGS:
        out.error(
            "tags",
            f"{len(cfg.tags)} tags; at most {MAX_USER_TAGS} (AWS allows 50 per resource, the app adds some)",
        )


# Why each ARN a config adopts must belong to the environment's own account. Left out, because
# AWS lets them be in another account: eks.admin_principal_arns (STANDARD access entries take
# principals of any account: EKS user guide "Create access entries") and the KMS keys
# storage.fsx.kms_key_arn and instance_groups[].ebs_kms_key_arn (a key policy can let other
# accounts use a key: KMS developer guide "Allowing users in other accounts to use a KMS key";
# their region is checked apart).
_SAME_ACCOUNT_BOUNDARY = "a permissions boundary is a managed policy of the roles' own account"
_SAME_ACCOUNT_ROLE = "HyperPod is passed roles of its own account only"
_SAME_ACCOUNT_PLAN = "a training plan reserves capacity for its own account"
_SAME_ACCOUNT_EKS = "HyperPod is orchestrated by an EKS cluster of its own account"
_SAME_ACCOUNT_KUBECTL = (
    "it is the execution role of the kubectl handler Lambda function, which takes a role of its "
    "own account"
)


def _same_account_arns(cfg: EnvironmentConfig) -> Iterable[tuple[str, str, str]]:
    """(key path, ARN, why it must be in the environment's account) of every such ARN set."""
    cluster = cfg.cluster
    if cfg.iam.permissions_boundary_arn:
        yield (
            "iam.permissions_boundary_arn",
            cfg.iam.permissions_boundary_arn,
            _SAME_ACCOUNT_BOUNDARY,
        )
    for key in ("execution_role_arn", "cluster_role_arn"):
        arn = getattr(cluster, key)
        if arn:
            yield f"cluster.{key}", arn, _SAME_ACCOUNT_ROLE
    for i, group in enumerate(cluster.instance_groups):
        path = f"cluster.instance_groups[{i}]"
        if group.execution_role_arn:
            yield f"{path}.execution_role_arn", group.execution_role_arn, _SAME_ACCOUNT_ROLE
        if group.training_plan_arn:
            yield f"{path}.training_plan_arn", group.training_plan_arn, _SAME_ACCOUNT_PLAN
    eks = cfg.eks
    if eks is not None and eks.cluster_arn:
        yield "eks.cluster_arn", eks.cluster_arn, _SAME_ACCOUNT_EKS
    if eks is not None and eks.kubectl_role_arn:
        yield "eks.kubectl_role_arn", eks.kubectl_role_arn, _SAME_ACCOUNT_KUBECTL


def _check_arn_accounts(cfg: EnvironmentConfig, out: _Collector) -> None:
    """The ARNs that must belong to the deploying account belong to ``account`` when it is set."""
    if cfg.account is None:
        return
    for path, arn, why in _same_account_arns(cfg):
        account = arn.split(":")[4]
        if account not in (cfg.account, "aws"):  # "aws": an AWS managed policy
            out.error(
                path,
                f"belongs to account {account} but the key account says {cfg.account}; {why}: "
                "fix one of the two",
            )


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


def _check_az_ids(cfg: EnvironmentConfig, out: _Collector) -> None:
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


def _check_orchestrator_keys(cfg: EnvironmentConfig, out: _Collector) -> None:
    net, cluster = cfg.network, cfg.cluster
    if cfg.is_slurm:
        fix = "applies only with orchestrator: eks; set orchestrator: eks to use it, or remove it"
        if cfg.eks is not None:
            out.error("eks", f"section {fix}")
        if net.eks_availability_zone_ids:
            out.error("network.eks_availability_zone_ids", fix)
        if net.eks_subnet_ids:
            out.error("network.eks_subnet_ids", fix)
        if cluster.auto_scaling:
            out.error("cluster.auto_scaling", fix)
        if cluster.tiered_storage is not None:
            out.error("cluster.tiered_storage", fix)
        for i, group in enumerate(cluster.instance_groups):
            for key in ("image_release_version", "labels", "taints"):
                if group.is_set(key) and getattr(group, key):
                    out.error(f"cluster.instance_groups[{i}].{key}", fix)
    else:
        fix = (
            "applies only with orchestrator: slurm; set orchestrator: slurm to use it, or remove it"
        )
        if cluster.slurm is not None:
            out.error("cluster.slurm", f"section {fix}")
        for i, group in enumerate(cluster.instance_groups):
            for key in ("node_type", "partition"):
                if getattr(group, key) is not None:
                    out.error(f"cluster.instance_groups[{i}].{key}", fix)


def _check_cidr_block(path: str, block: ipaddress.IPv4Network, out: _Collector) -> None:
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


def _check_network(net: NetworkConfig, cfg: EnvironmentConfig, out: _Collector) -> None:
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


def _check_new_vpc(net: NetworkConfig, cfg: EnvironmentConfig, out: _Collector) -> None:
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


def _check_compute_subnet_room(net: NetworkConfig, cfg: EnvironmentConfig, out: _Collector) -> None:
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


def _check_adopted_vpc(net: NetworkConfig, out: _Collector) -> None:
    if net.compute_subnet_id is None:
        out.error(
            "network.compute_subnet_id",
            "is required with network.vpc_id: the private HyperPod subnet",
        )
    only_new = "applies only to a VPC the app creates (network.vpc_id is set)"
    for key in NEW_VPC_KEYS:
        if net.is_set(key):
            out.error(f"network.{key}", only_new)


def _check_cluster(cluster: ClusterConfig, cfg: EnvironmentConfig, out: _Collector) -> None:
    settings = cluster.slurm_settings
    need_continuous = "needs cluster.node_provisioning_mode: Continuous"
    if not cluster.continuous:
        if settings.accounting_database:
            out.error("cluster.slurm.accounting_database", need_continuous)
        if cluster.auto_scaling:
            out.error("cluster.auto_scaling", need_continuous)
    elif settings.config_strategy is not None:
        out.error(
            "cluster.slurm.config_strategy",
            "must stay null under Continuous provisioning (HyperPod rejects any SlurmConfigStrategy then)",
        )
    if cluster.auto_scaling and cluster.node_recovery != "Automatic":
        out.error("cluster.auto_scaling", "needs cluster.node_recovery: Automatic")
    if cfg.is_slurm and cluster.lifecycle_hook == "OnCreate":
        # OnCreate = the scripts own the whole node setup (AWS: "customer managed" mode); the
        # shipped scripts extend HyperPod's own setup (Slurm from the API config, Docker, FSx)
        # and never start slurmctld or slurmd themselves
        out.error(
            "cluster.lifecycle_hook",
            "OnCreate is not supported on Slurm: the lifecycle scripts run after HyperPod has set "
            "up Slurm, Docker and FSx (OnInitComplete) and do not start slurmctld or slurmd "
            "themselves; use OnInitComplete (the default)",
        )
    if not cfg.is_slurm and cluster.lifecycle_hook == "OnInitComplete":
        out.warn(
            "cluster.lifecycle_hook",
            "OnInitComplete is documented for Slurm only; on EKS the scripts move containerd "
            "and kubelet onto the group's EBS volume before the node joins (OnCreate, the "
            "default), and leave them on the root volume of a node that has joined: remove the "
            "key to use OnCreate",
        )
    if not settings.accounting_database:
        for key in (
            "accounting_instance_class",
            "accounting_multi_az",
            "accounting_availability_zone_ids",
            "accounting_subnet_ids",
        ):
            if settings.is_set(key):
                out.error(
                    f"cluster.slurm.{key}",
                    "applies only with cluster.slurm.accounting_database: true",
                )
        return
    if cfg.network.vpc_id is None:
        if len(set(settings.accounting_availability_zone_ids)) < 2:
            out.error(
                "cluster.slurm.accounting_availability_zone_ids",
                "needs at least two distinct AZ IDs: an RDS subnet group spans two AZs",
            )
        return
    if settings.accounting_availability_zone_ids:
        out.error(
            "cluster.slurm.accounting_availability_zone_ids",
            "applies only to a VPC the app creates; with network.vpc_id give accounting_subnet_ids",
        )
    if len(settings.accounting_subnet_ids) < 2:
        out.error(
            "cluster.slurm.accounting_subnet_ids",
            "needs at least two private subnets in two AZs of the adopted VPC (an RDS subnet group spans two AZs)",
        )


def _check_groups(cluster: ClusterConfig, cfg: EnvironmentConfig, out: _Collector) -> None:
    groups = cluster.instance_groups
    seen: dict[str, int] = {}
    for i, group in enumerate(groups):
        path = f"cluster.instance_groups[{i}]"
        if group.name in seen:
            out.error(
                f"{path}.name",
                f"{group.name!r} is already the name of instance_groups[{seen[group.name]}]",
            )
        seen.setdefault(group.name, i)
        _check_group(group, path, cluster, cfg, out)
    if cfg.is_slurm:
        _check_slurm_topology(groups, cluster, out)


def _check_group(group: InstanceGroup, path: str, cluster: ClusterConfig, cfg: EnvironmentConfig,
                 out: _Collector) -> None:  # fmt: skip
    need_continuous = "needs cluster.node_provisioning_mode: Continuous"
    if group.instance_type and group.instance_types:
        out.error(f"{path}.instance_types", "give instance_type or instance_types, not both")
    elif not group.instance_type and not group.instance_types:
        out.error(
            f"{path}.instance_type", "is required (or instance_types under Continuous provisioning)"
        )
    if not cluster.continuous:
        if group.instance_types:
            out.error(f"{path}.instance_types", need_continuous)
        if group.min_count is not None:
            out.error(f"{path}.min_count", need_continuous)
        if group.capacity_type == "spot":
            out.error(f"{path}.capacity_type", f"spot {need_continuous}")
        if group.ebs_kms_key_arn:
            # SageMaker developer guide, "Customer managed AWS KMS key encryption for SageMaker
            # HyperPod": supported for clusters in continuous node provisioning mode only
            out.error(f"{path}.ebs_kms_key_arn", f"a customer managed EBS key {need_continuous}")
    if group.min_count is not None and group.min_count > group.count:
        out.error(f"{path}.min_count", f"{group.min_count} is more than count ({group.count})")
    if group.deep_health_checks:
        cpu_types = [t for t in group.all_instance_types if not facts.is_accelerated(t)]
        if cpu_types:
            out.error(
                f"{path}.deep_health_checks",
                f"deep health checks run on GPU and Trainium instances only, not {cpu_types[0]}; remove them",
            )
        if group.taints:
            out.error(
                f"{path}.taints", "custom taints are not allowed on a group with deep_health_checks"
            )
    if group.ebs_kms_key_arn:
        check_kms_key_region(group.ebs_kms_key_arn, f"{path}.ebs_kms_key_arn", cfg, out)
    if group.training_plan_arn:
        _check_training_plan(group.training_plan_arn, f"{path}.training_plan_arn", cfg, out)
        if group.capacity_type == "spot":
            out.error(
                f"{path}.capacity_type", "spot cannot use a training plan's reserved capacity"
            )
    for key in ("scheduled_update", "auto_patch"):
        update = getattr(group, key)
        if (
            update is not None
            and update.batch_percent is not None
            and update.batch_count is not None
        ):
            out.error(f"{path}.{key}", "give batch_percent or batch_count, not both")
    az = group.availability_zone_id
    net = cfg.network
    if az and az != net.availability_zone_id:
        if net.vpc_id is None and az not in net.additional_compute_cidrs:
            out.error(
                f"{path}.availability_zone_id",
                f"{az} has no HyperPod subnet; add network.additional_compute_cidrs.{az}",
            )
        if net.vpc_id is not None and az not in net.additional_compute_subnet_ids:
            out.error(
                f"{path}.availability_zone_id",
                f"{az} has no HyperPod subnet; add network.additional_compute_subnet_ids.{az}",
            )


def _instance_types(cfg: EnvironmentConfig) -> Iterable[tuple[str, str]]:
    """(key path, instance type) of every instance type the config names."""
    for i, group in enumerate(cfg.cluster.instance_groups):
        path = f"cluster.instance_groups[{i}]"
        if group.instance_type:
            yield f"{path}.instance_type", group.instance_type
        for j, instance_type in enumerate(group.instance_types):
            yield f"{path}.instance_types[{j}]", instance_type
    if cfg.eks is not None:
        extra = cfg.eks.chart_values.extra_instance_types
        for key in type(extra).model_fields:
            for j, instance_type in enumerate(getattr(extra, key)):
                yield f"eks.chart_values.extra_instance_types.{key}[{j}]", instance_type


def _check_instance_types(cfg: EnvironmentConfig, out: _Collector) -> None:
    """An instance type the table of HyperPod's types does not know is a warning: the model has
    refused every name not shaped like one, and AWS may have launched the type since."""
    for path, instance_type in _instance_types(cfg):
        if instance_type in facts.HYPERPOD_INSTANCE_TYPES:
            continue
        guess = facts.close_instance_type(instance_type)
        hint = f" (did you mean {guess!r}?)" if guess else ""
        out.warn(
            path,
            f"{instance_type!r} is not an instance type HyperPod offered on "
            f"{facts.HYPERPOD_INSTANCE_TYPES_AS_OF}{hint}; right if AWS has launched it since, "
            "else HyperPod refuses it at deploy time",
        )


def _check_training_plan(arn: str, path: str, cfg: EnvironmentConfig, out: _Collector) -> None:
    parts = arn.split(":")
    if parts[3] != cfg.region:
        out.error(
            path,
            f"the plan is in {parts[3]}, the environment in {cfg.region}; a plan is used in its region",
        )


def _check_slurm_topology(
    groups: list[InstanceGroup], cluster: ClusterConfig, out: _Collector
) -> None:
    controllers = [i for i, g in enumerate(groups) if g.effective_node_type == "Controller"]
    logins = [i for i, g in enumerate(groups) if g.effective_node_type == "Login"]
    if not controllers:
        out.error(
            "cluster.instance_groups",
            "a Slurm cluster needs exactly one group with node_type: Controller",
        )
    for i in controllers[1:]:
        out.error(
            f"cluster.instance_groups[{i}].node_type",
            f"a second Controller group; instance_groups[{controllers[0]}] is the controller",
        )
    for i in logins[1:]:
        out.error(
            f"cluster.instance_groups[{i}].node_type",
            f"a second Login group; at most one (instance_groups[{logins[0]}])",
        )
    for i, group in enumerate(groups):
        path = f"cluster.instance_groups[{i}]"
        node_type = group.effective_node_type
        if node_type != "Compute":
            if group.partition is not None:
                out.error(
                    f"{path}.partition", f"only Compute groups have a partition, not {node_type}"
                )
            if group.instance_types:
                out.error(f"{path}.instance_types", f"a {node_type} group runs one instance_type")
        elif group.effective_partition in facts.RESERVED_PARTITIONS:
            out.error(
                f"{path}.partition",
                f"{group.effective_partition!r} is HyperPod's built-in partition; "
                "choose another name",
            )
        if node_type == "Controller":
            if group.count < 1:
                out.error(f"{path}.count", "the Controller group needs at least one instance")
            elif cluster.continuous and group.count > 1:
                out.error(
                    f"{path}.count",
                    f"{group.count}: multi-head controllers are not supported under "
                    "Continuous provisioning; use 1",
                )
            if group.capacity_type == "spot":
                out.error(f"{path}.capacity_type", "the Controller runs on on_demand capacity")


def _check_eks(cfg: EnvironmentConfig, out: _Collector) -> None:
    if cfg.is_slurm:
        return
    eks = cfg.eks
    net = cfg.network
    adopted = eks is not None and eks.cluster_arn is not None
    if not adopted and net.vpc_id is None and len(set(net.eks_availability_zone_ids)) < 2:
        out.error(
            "network.eks_availability_zone_ids",
            "needs at least two distinct AZ IDs: the EKS control plane spans two AZs",
        )
    if not adopted and net.vpc_id is not None and len(net.eks_subnet_ids) < 2:
        out.error(
            "network.eks_subnet_ids", "needs at least two subnets in two AZs of the adopted VPC"
        )
    if eks is None:
        return
    if adopted and eks.cluster_arn is not None:
        if not eks.is_set("kubernetes_version"):
            out.error(
                "eks.kubernetes_version",
                'give the adopted cluster\'s version (e.g. "1.33"): it picks the kubectl layer '
                "and the add-on versions",
            )
        if eks.cluster_arn.split(":")[3] != cfg.region:
            out.error(
                "eks.cluster_arn",
                f"is not in {cfg.region}; HyperPod uses an EKS cluster in its own region",
            )
        for key in (
            "endpoint_access",
            "public_access_cidrs",
            "admin_principal_arns",
            "logging",
        ):
            if eks.is_set(key):
                out.error(
                    f"eks.{key}",
                    "applies only to an EKS cluster the app creates (eks.cluster_arn is set)",
                )
    elif eks.kubectl_role_arn is not None:
        out.error("eks.kubectl_role_arn", "applies only with eks.cluster_arn (an adopted cluster)")
    if eks.endpoint_access == "private" and eks.public_access_cidrs:
        out.error("eks.public_access_cidrs", "needs endpoint_access public or public_and_private")
    if eks.endpoint_access != "private" and not eks.public_access_cidrs and not adopted:
        out.error(
            "eks.public_access_cidrs",
            f"endpoint_access {eks.endpoint_access} needs the networks allowed to reach the public "
            "endpoint; an empty list opens the Kubernetes API to the internet",
        )
    for i, block in enumerate(eks.public_access_cidrs):
        if block.prefixlen == 0:
            out.error(
                f"eks.public_access_cidrs[{i}]",
                "0.0.0.0/0 opens the API endpoint to the internet; list the networks that need it",
            )
    # several wide blocks are the internet too (0.0.0.0/1 + 128.0.0.0/1; security review L1):
    # what the blocks cover together is measured, not each block's prefix
    if not any(block.prefixlen == 0 for block in eks.public_access_cidrs):
        for version, limit in ((4, PUBLIC_ENDPOINT_MAX_V4), (6, PUBLIC_ENDPOINT_MAX_V6)):
            blocks = [b for b in eks.public_access_cidrs if b.version == version]
            covered = sum(n.num_addresses for n in ipaddress.collapse_addresses(blocks))
            if covered > limit.num_addresses:
                out.error(
                    "eks.public_access_cidrs",
                    f"the IPv{version} blocks together cover {covered:,} addresses "
                    f"({covered / 2**limit.max_prefixlen:.1%} of the address space), more than a "
                    f"/{limit.prefixlen}; list the networks that need the API endpoint",
                )


# The lifecycle scripts this package ships (package data, hyperpod_cdk/lifecycle/assets; the
# repository's lifecycle_assets/ is a symlink to it). A library app's default (build_node_settings)
# lives in site-packages, outside any project, and is the product's own, not a folder a user
# controls. Every module that needs the folder takes it from here.
PACKAGED_SCRIPTS = (Path(__file__).parent.parent / "lifecycle" / "assets").resolve()


def _packaged_scripts(directory: Path) -> bool:
    """``directory`` is the scripts folder of an installed ``hyperpod_cdk`` (this one, or the
    one a library app synthesized with, whose environment file the ops commands read here)."""
    package = directory.parent
    root = package.parent
    return directory == PACKAGED_SCRIPTS or (
        directory.name == "assets"
        and package.name == "lifecycle"
        and root.name == "hyperpod_cdk"
        and (root / "__init__.py").is_file()
        and (package / "settings.py").is_file()
    )


def _check_lifecycle_dir(cluster: ClusterConfig, project_root: Path, out: _Collector) -> None:
    path = "cluster.lifecycle_scripts"
    directory = (project_root / cluster.lifecycle_scripts).resolve()
    # every file there is uploaded to a bucket all nodes read: never a folder outside the
    # project (../outside, /elsewhere; security review L3). The path as written is checked: a
    # link the project itself holds may point where the project keeps its scripts.
    written = Path(os.path.normpath(project_root.absolute() / cluster.lifecycle_scripts))
    if not _packaged_scripts(directory) and not written.is_relative_to(
        Path(os.path.normpath(project_root.absolute()))
    ):
        out.error(
            path,
            f"{cluster.lifecycle_scripts!r} is outside the project ({written}); give a folder "
            f"under {project_root}",
        )
        return
    if not directory.is_dir():
        out.error(path, f"{cluster.lifecycle_scripts!r} is not a directory under {project_root}")
        return
    if not (directory / LIFECYCLE_ENTRY_SCRIPT).is_file():
        out.error(
            path,
            f"{cluster.lifecycle_scripts!r} has no {LIFECYCLE_ENTRY_SCRIPT}, the entry script the "
            "cluster runs",
        )
    if any(directory.rglob(LEGACY_SLURM_FILE)):
        out.error(
            path,
            f"contains {LEGACY_SLURM_FILE}; with API-driven Slurm it makes cluster updates fail "
            "and roll back: remove it",
        )


def _check_eks_dependencies(cfg: EnvironmentConfig, out: _Collector) -> None:
    if cfg.is_slurm:
        return
    # pure data, no CDK: safe to import during validation
    from hyperpod_cdk.facts import chart

    eks = cfg.eks_settings
    deps = eks.dependencies
    path = "eks.dependencies"
    cluster = cfg.cluster
    enabled = deps.enabled()
    if eks.cluster_arn is not None:
        _check_adopted_choices(cfg, out)
    if not eks.image_registry:
        for component, image in chart.unsupported_region_images(enabled, cfg.region).items():
            out.error(
                f"{path}.{component}",
                f"its image is not published in {cfg.region} (AWS publishes it in "
                f"{', '.join(sorted(chart.image_regions(image)))}); switch it off, or mirror it "
                "and set eks.image_registry",
            )
    if not deps.health_monitoring_agent:
        if cluster.node_recovery == "Automatic":
            out.error(
                f"{path}.health_monitoring_agent",
                "cluster.node_recovery: Automatic needs the health monitoring agent, which reports "
                "faulty nodes; switch it on or set cluster.node_recovery: None",
            )
        if cluster.auto_scaling:
            out.error(
                f"{path}.health_monitoring_agent",
                "cluster.auto_scaling (Karpenter) needs the health monitoring agent; switch it on",
            )
    if not deps.deep_health_check:
        for i, group in enumerate(cluster.instance_groups):
            if group.deep_health_checks:
                out.error(
                    f"cluster.instance_groups[{i}].deep_health_checks",
                    f"needs {path}.deep_health_check: true (the RBAC the checks run with)",
                )
    for component in eks.chart_values.image_tags:
        if component not in enabled:
            out.error(
                f"eks.chart_values.image_tags.{component}",
                f"{path}.{component} is off: nothing would use this tag",
            )
    if cfg.network.closed_network:
        _check_closed_network_images(cfg, enabled, out)
    check_chart_instance_types(cfg, out)


def _check_adopted_choices(cfg: EnvironmentConfig, out: _Collector) -> None:
    """On an adopted (shared) cluster the config says what to install, component by component."""
    eks = cfg.eks_settings
    deps = eks.dependencies
    unsaid = [key for key in type(deps).model_fields if not deps.is_set(key)]
    if unsaid:
        where = "eks.dependencies" if len(unsaid) > 1 else f"eks.dependencies.{unsaid[0]}"
        out.error(
            where,
            "eks.cluster_arn adopts a cluster that may already run some of these: say for each "
            f"whether the app installs it (true) or the cluster's owner has it (false): "
            f"{', '.join(unsaid)}",
        )
    addons = eks.addons
    if cfg.storage.fsx.enabled and not addons.is_set("fsx_csi_driver"):
        out.error(
            "eks.addons.fsx_csi_driver",
            "eks.cluster_arn adopts a cluster that may already have the FSx CSI driver add-on: "
            "say whether the app installs it (true) or the cluster has it (false)",
        )


def _check_closed_network_images(
    cfg: EnvironmentConfig, enabled: list[str], out: _Collector
) -> None:
    """A closed network reaches private Amazon ECR registries (through endpoints) only."""
    from hyperpod_cdk.facts import chart

    registry = cfg.eks_settings.image_registry
    if registry:
        if not _is_private_ecr(registry):
            out.error(
                "eks.image_registry",
                "a closed network reaches only private Amazon ECR registries (through the "
                "ecr.api/ecr.dkr endpoints); use an ECR pull-through cache or mirror "
                "(<account>.dkr.ecr.<region>.amazonaws.com/<prefix>)",
            )
        return
    for component in enabled:
        try:
            images = chart.component_images(component, cfg.region)
        except KeyError:
            continue  # not published in the region: reported above
        public = [i for i in images if not _is_private_ecr(i)]
        if public:
            out.error(
                f"eks.dependencies.{component}",
                f"a closed network cannot pull {public[0]} (no NAT); mirror the chart's images "
                "into an Amazon ECR registry and set eks.image_registry, switch the component "
                "off, or give the network a NAT (closed_network: false)",
            )


def _is_private_ecr(image: str) -> bool:
    """True for an image (or registry) in a private Amazon ECR registry (reachable through
    endpoints)."""
    host = image.split("/", 1)[0]
    return ".dkr.ecr." in host and host.endswith(".amazonaws.com")


def _check_eks_addons(cfg: EnvironmentConfig, out: _Collector) -> None:
    if cfg.is_slurm:
        return
    addons = cfg.eks_settings.addons
    # (with inference the driver is wanted for the operator's own volumes, without a file system)
    if (
        addons.fsx_csi_driver is True
        and not cfg.storage.fsx.enabled
        and addons.inference_settings is None
    ):
        out.error(
            "eks.addons.fsx_csi_driver",
            "needs a file system (storage.fsx.enabled: true): the driver mounts it into pods; "
            "or ask for {dynamic_provisioning: true}, where claims create their file systems",
        )
    needs_nodes = cfg.needs_eks_addons
    if needs_nodes and not cfg.cluster.system_pod_groups():
        what = (
            "CoreDNS and the add-ons in eks.addons"
            if cfg.eks_settings.cluster_arn is None
            else "the add-ons in eks.addons"
        )
        message = (
            f"{what} run on an instance group with a count above 0 and no NoSchedule or "
            "NoExecute taint, and every group here has count 0 or such a taint"
        )
        if cfg.eks_settings.cluster_arn is None:
            out.error(
                "cluster.instance_groups",
                f"{message}: add one (e.g. 2 x ml.m5.2xlarge) or untaint one",
            )
        else:
            out.warn(
                "cluster.instance_groups",
                f"{message}: they can start only on the adopted cluster's own nodes",
            )


def _check_node_egress(net: NetworkConfig, out: _Collector) -> None:
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

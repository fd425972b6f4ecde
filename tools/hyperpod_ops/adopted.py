"""Preflight checks of the resources a config adopts: VPC, subnets, security groups, FSx, EKS."""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.aws import call_or_none
from hyperpod_ops.check import Check, failed, passed, skipped

# HyperPod accepts an EKS cluster with access entries (EKS user guide "Grant IAM users access
# to Kubernetes with EKS access entries"; HyperPod EKS prerequisites): not CONFIG_MAP alone.
EKS_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
# File system states in which a client can mount it.
FSX_USABLE_STATES = ("AVAILABLE", "UPDATING")


def _vpc_note(config: EnvironmentConfig) -> str:
    return config.network.vpc_id or "the VPC the app creates"


# -- VPC -------------------------------------------------------------------------------------


def check_vpc(config: EnvironmentConfig, ec2: Any) -> list[Check]:
    """An adopted VPC exists and is available."""
    vpc_id = config.network.vpc_id
    if vpc_id is None:
        return [skipped("vpc", "network.vpc_id is not set: the app creates the VPC")]
    response = call_or_none(ec2.describe_vpcs, ["InvalidVpcID.NotFound"], VpcIds=[vpc_id])
    vpcs = (response or {}).get("Vpcs", [])
    if not vpcs:
        return [
            failed(
                f"vpc {vpc_id}",
                f"{vpc_id} does not exist in {config.region} (or in this account)",
                "set network.vpc_id to a VPC of this account and region",
            )
        ]
    state = vpcs[0].get("State", "available")
    if state != "available":
        return [failed(f"vpc {vpc_id}", f"{vpc_id} is {state}", "wait until it is available")]
    return [passed(f"vpc {vpc_id}", f"{vpc_id} exists ({vpcs[0].get('CidrBlock')})")]


# -- subnets ---------------------------------------------------------------------------------


def _subnet(ec2: Any, subnet_id: str) -> dict[str, Any] | None:
    response = call_or_none(
        ec2.describe_subnets, ["InvalidSubnetID.NotFound"], SubnetIds=[subnet_id]
    )
    subnets = (response or {}).get("Subnets", [])
    return subnets[0] if subnets else None


def _compute_subnet_check(
    config: EnvironmentConfig, ec2: Any, subnet_id: str, az_id: str, key: str
) -> Check:
    name = f"subnet {subnet_id}"
    subnet = _subnet(ec2, subnet_id)
    if subnet is None:
        return failed(
            name,
            f"{subnet_id} ({key}) does not exist in {config.region}",
            f"set {key} to a private subnet of {config.network.vpc_id} in {az_id}",
        )
    problems = []
    if subnet.get("VpcId") != config.network.vpc_id:
        problems.append(f"it is in {subnet.get('VpcId')}, not in {config.network.vpc_id}")
    if subnet.get("AvailabilityZoneId") != az_id:
        problems.append(f"it is in {subnet.get('AvailabilityZoneId')}, not in {az_id}")
    if subnet.get("MapPublicIpOnLaunch"):
        problems.append("it gives instances public IPs (HyperPod subnets must be private)")
    if problems:
        return failed(
            name,
            f"{subnet_id} ({key}): " + "; ".join(problems),
            f"set {key} to a private subnet of {config.network.vpc_id} in AZ ID {az_id}",
        )
    return passed(
        name,
        f"{subnet_id} ({key}) is in {subnet.get('VpcId')}, {az_id}, "
        f"{subnet.get('AvailableIpAddressCount')} free IPs",
    )


def _subnet_set_check(
    config: EnvironmentConfig, ec2: Any, subnet_ids: list[str], key: str, purpose: str
) -> Check:
    """Subnets that must exist in the VPC and span at least two AZs."""
    name = key.rsplit(".", 1)[-1].replace("_", " ")
    found = {subnet_id: _subnet(ec2, subnet_id) for subnet_id in subnet_ids}
    missing = [s for s, subnet in found.items() if subnet is None]
    if missing:
        return failed(
            name,
            f"{', '.join(missing)} ({key}) not found in {config.region}",
            f"set {key} to subnets of {config.network.vpc_id} ({purpose})",
        )
    elsewhere = [
        s for s, subnet in found.items() if subnet and subnet["VpcId"] != config.network.vpc_id
    ]
    if elsewhere:
        return failed(
            name,
            f"{', '.join(elsewhere)} ({key}) are not in {config.network.vpc_id}",
            f"set {key} to subnets of {config.network.vpc_id} ({purpose})",
        )
    zones = sorted({str(subnet.get("AvailabilityZoneId")) for subnet in found.values() if subnet})
    if len(zones) < 2:
        return failed(
            name,
            f"{key} are all in {', '.join(zones)}; {purpose} needs subnets in two AZs",
            f"add a subnet of {config.network.vpc_id} in another AZ to {key}",
        )
    return passed(
        name, f"{len(subnet_ids)} subnets of {config.network.vpc_id} in {', '.join(zones)}"
    )


def check_subnets(config: EnvironmentConfig, ec2: Any) -> list[Check]:
    """Adopted subnets exist, in the adopted VPC and the AZ ID the config gives them."""
    net = config.network
    if net.vpc_id is None:
        return [skipped("subnets", "network.vpc_id is not set: the app creates the subnets")]
    checks = []
    if net.compute_subnet_id:
        checks.append(
            _compute_subnet_check(
                config,
                ec2,
                net.compute_subnet_id,
                net.availability_zone_id,
                "network.compute_subnet_id",
            )
        )
    for az_id, subnet_id in net.additional_compute_subnet_ids.items():
        checks.append(
            _compute_subnet_check(
                config, ec2, subnet_id, az_id, f"network.additional_compute_subnet_ids.{az_id}"
            )
        )
    creates_eks = not config.is_slurm and config.eks_settings.cluster_arn is None
    if creates_eks and net.eks_subnet_ids:
        checks.append(
            _subnet_set_check(
                config,
                ec2,
                list(net.eks_subnet_ids),
                "network.eks_subnet_ids",
                "the EKS control plane",
            )
        )
    settings = config.cluster.slurm_settings
    if config.is_slurm and settings.accounting_database and settings.accounting_subnet_ids:
        checks.append(
            _subnet_set_check(
                config,
                ec2,
                list(settings.accounting_subnet_ids),
                "cluster.slurm.accounting_subnet_ids",
                "the accounting database",
            )
        )
    return checks


# -- security groups -------------------------------------------------------------------------


def _allows_all_with_self(rules: list[dict[str, Any]], group_id: str) -> bool:
    """True when a rule allows all protocols and ports with the group itself as the peer."""
    return any(
        str(rule.get("IpProtocol")) == "-1"
        and any(pair.get("GroupId") == group_id for pair in rule.get("UserIdGroupPairs", []))
        for rule in rules
    )


def check_security_groups(config: EnvironmentConfig, ec2: Any) -> list[Check]:
    """Each extra node security group exists in the VPC and meets the EFA rule: all traffic in
    from itself and out to itself (a 0.0.0.0/0 egress rule does not count)."""
    group_ids = list(config.network.security_group_ids)
    if not group_ids:
        return [
            skipped("security groups", "network.security_group_ids is empty: only the app's group")
        ]
    checks = []
    for group_id in group_ids:
        name = f"security group {group_id}"
        response = call_or_none(
            ec2.describe_security_groups, ["InvalidGroup.NotFound"], GroupIds=[group_id]
        )
        groups = (response or {}).get("SecurityGroups", [])
        if not groups:
            checks.append(
                failed(
                    name,
                    f"{group_id} does not exist in {config.region}",
                    f"set network.security_group_ids to groups of {_vpc_note(config)}",
                )
            )
            continue
        group = groups[0]
        problems = []
        if config.network.vpc_id and group.get("VpcId") != config.network.vpc_id:
            problems.append(f"it belongs to {group.get('VpcId')}, not {config.network.vpc_id}")
        if not _allows_all_with_self(group.get("IpPermissions", []), group_id):
            problems.append("no inbound all-traffic rule from itself")
        if not _allows_all_with_self(group.get("IpPermissionsEgress", []), group_id):
            problems.append("no outbound all-traffic rule to itself")
        if problems:
            checks.append(
                failed(
                    name,
                    f"{group_id}: " + "; ".join(problems) + " (EFA needs both self rules)",
                    f"aws ec2 authorize-security-group-ingress --group-id {group_id} "
                    f"--ip-permissions IpProtocol=-1,UserIdGroupPairs=[{{GroupId={group_id}}}] "
                    "(and authorize-security-group-egress with the same rule)",
                )
            )
        else:
            checks.append(passed(name, f"{group_id} allows all traffic from and to itself (EFA)"))
    return checks


# -- FSx -------------------------------------------------------------------------------------


def check_file_system(config: EnvironmentConfig, fsx: Any, ec2: Any) -> list[Check]:
    """An adopted FSx for Lustre file system exists, is usable, sits in the config's VPC and AZ
    ID, and has the DNS and mount names the config gives."""
    fsx_cfg = config.storage.fsx
    if not fsx_cfg.enabled:
        return [skipped("file system", "storage.fsx.enabled is false")]
    fs_id = fsx_cfg.file_system_id
    if fs_id is None:
        return [skipped("file system", "storage.fsx.file_system_id is not set: the app creates it")]
    name = f"file system {fs_id}"
    response = call_or_none(
        fsx.describe_file_systems, ["FileSystemNotFound"], FileSystemIds=[fs_id]
    )
    systems = (response or {}).get("FileSystems", [])
    if not systems:
        return [
            failed(
                name,
                f"{fs_id} does not exist in {config.region}",
                "set storage.fsx.file_system_id to a file system of this account and region",
            )
        ]
    system = systems[0]
    lustre = system.get("LustreConfiguration", {})
    problems = []
    if system.get("FileSystemType") != "LUSTRE":
        problems.append(f"it is an FSx for {system.get('FileSystemType')} file system, not Lustre")
    if system.get("Lifecycle") not in FSX_USABLE_STATES:
        problems.append(f"it is {system.get('Lifecycle')}")
    if config.network.vpc_id and system.get("VpcId") != config.network.vpc_id:
        problems.append(f"it is in {system.get('VpcId')}, not {config.network.vpc_id}")
    if fsx_cfg.dns_name and system.get("DNSName") != fsx_cfg.dns_name:
        problems.append(f"its DNS name is {system.get('DNSName')}, not {fsx_cfg.dns_name}")
    if fsx_cfg.mount_name and lustre.get("MountName") != fsx_cfg.mount_name:
        problems.append(f"its mount name is {lustre.get('MountName')}, not {fsx_cfg.mount_name}")
    az_id = config.network.availability_zone_id
    subnet_ids = system.get("SubnetIds", [])
    if subnet_ids:
        subnet = _subnet(ec2, subnet_ids[0])
        where = subnet.get("AvailabilityZoneId") if subnet else None
        if where != az_id:
            problems.append(
                f"it is in {where or 'an unknown AZ'}, the nodes in {az_id} (an EFA file system "
                "must share the AZ; otherwise traffic crosses AZs)"
            )
    if problems:
        return [
            failed(
                name,
                f"{fs_id}: " + "; ".join(problems),
                "point storage.fsx (file_system_id, dns_name, mount_name) at a Lustre file system "
                f"in {_vpc_note(config)}, AZ ID {az_id}",
            )
        ]
    return [
        passed(
            name,
            f"{fs_id} is a {system.get('Lifecycle')} Lustre file system in {system.get('VpcId')}, "
            f"{az_id}, mount name {lustre.get('MountName')}",
        )
    ]


# -- EKS -------------------------------------------------------------------------------------


def eks_cluster_name(config: EnvironmentConfig) -> str:
    """The EKS cluster's name: the adopted cluster's, or ``<name>-eks``."""
    arn = config.eks_settings.cluster_arn
    return arn.rsplit("/", 1)[-1] if arn else config.eks_cluster_name


def check_eks_cluster(config: EnvironmentConfig, eks: Any) -> list[Check]:
    """An adopted EKS cluster exists, is ACTIVE in the config's VPC, uses an authentication mode
    with access entries, and runs the Kubernetes version the config names."""
    if config.is_slurm:
        return [skipped("eks cluster", "slurm orchestrator: no EKS cluster")]
    settings = config.eks_settings
    if settings.cluster_arn is None:
        return [
            skipped(
                "eks cluster",
                f"the app creates {config.eks_cluster_name} (Kubernetes "
                f"{settings.kubernetes_version}, authentication mode API)",
            )
        ]
    name = eks_cluster_name(config)
    response = call_or_none(eks.describe_cluster, ["ResourceNotFoundException"], name=name)
    if response is None:
        return [
            failed(
                f"eks cluster {name}",
                f"{name} does not exist in {config.region}",
                "set eks.cluster_arn to a cluster of this account and region",
            ),
            skipped("eks authentication mode", f"{name} was not found"),
            skipped("eks kubernetes version", f"{name} was not found"),
        ]
    cluster = response["cluster"]
    checks = [_eks_cluster_check(config, name, cluster)]
    mode = cluster.get("accessConfig", {}).get("authenticationMode", "CONFIG_MAP")
    if mode in EKS_AUTHENTICATION_MODES:
        checks.append(passed("eks authentication mode", f"{name} uses {mode}"))
    else:
        checks.append(
            failed(
                "eks authentication mode",
                f"{name} uses {mode}; HyperPod needs access entries "
                f"({' or '.join(EKS_AUTHENTICATION_MODES)})",
                f"aws eks update-cluster-config --region {config.region} --name {name} "
                "--access-config authenticationMode=API_AND_CONFIG_MAP (it cannot be undone)",
            )
        )
    version = cluster.get("version")
    if version == settings.kubernetes_version:
        checks.append(passed("eks kubernetes version", f"{name} runs {version}, as configured"))
    else:
        checks.append(
            failed(
                "eks kubernetes version",
                f"{name} runs Kubernetes {version}; eks.kubernetes_version is "
                f"{settings.kubernetes_version} (it picks the kubectl layer and add-on versions)",
                f'set eks.kubernetes_version: "{version}" (if the app supports it) or upgrade the '
                "cluster",
            )
        )
    return checks


def _eks_cluster_check(config: EnvironmentConfig, name: str, cluster: dict[str, Any]) -> Check:
    settings = config.eks_settings
    problems = []
    if cluster.get("arn") and cluster["arn"] != settings.cluster_arn:
        problems.append(f"its ARN is {cluster['arn']}, not {settings.cluster_arn}")
    status = cluster.get("status")
    if status not in ("ACTIVE", "UPDATING"):
        problems.append(f"it is {status}")
    vpc_id = cluster.get("resourcesVpcConfig", {}).get("vpcId")
    if config.network.vpc_id and vpc_id != config.network.vpc_id:
        problems.append(f"it is in {vpc_id}, not {config.network.vpc_id}")
    if problems:
        return failed(
            f"eks cluster {name}",
            f"{name}: " + "; ".join(problems),
            "set eks.cluster_arn to an ACTIVE cluster in network.vpc_id",
        )
    return passed(f"eks cluster {name}", f"{name} is {status} in {vpc_id}")

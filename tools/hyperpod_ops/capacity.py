"""Preflight checks of capacity: AZ IDs, cluster-usage quotas and training plans."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig, InstanceGroup
from hyperpod_ops.aws import call_or_none, paginate
from hyperpod_ops.check import Check, failed, passed, skipped

# SageMaker names the HyperPod quota of each instance type "<type> for cluster usage"
# (SageMaker developer guide, "SageMaker HyperPod quotas": search Service Quotas for
# "cluster usage").
QUOTA_SERVICE_CODE = "sagemaker"
QUOTA_SUFFIX = " for cluster usage"

# A training plan reserves capacity for HyperPod clusters when its TargetResources has this.
TRAINING_PLAN_HYPERPOD_TARGET = "hyperpod-cluster"


# -- availability zones ----------------------------------------------------------------------


def referenced_az_ids(config: EnvironmentConfig) -> dict[str, list[str]]:
    """Every AZ ID the config names, with the keys that name it."""
    net = config.network
    keys: dict[str, list[str]] = defaultdict(list)
    keys[net.availability_zone_id].append("network.availability_zone_id")
    for az in net.additional_compute_cidrs:
        keys[az].append(f"network.additional_compute_cidrs.{az}")
    for az in net.additional_compute_subnet_ids:
        keys[az].append(f"network.additional_compute_subnet_ids.{az}")
    for index, az in enumerate(net.eks_availability_zone_ids):
        keys[az].append(f"network.eks_availability_zone_ids[{index}]")
    settings = config.cluster.slurm_settings
    for index, az in enumerate(settings.accounting_availability_zone_ids):
        keys[az].append(f"cluster.slurm.accounting_availability_zone_ids[{index}]")
    for index, group in enumerate(config.cluster.instance_groups):
        if group.availability_zone_id:
            keys[group.availability_zone_id].append(
                f"cluster.instance_groups[{index}].availability_zone_id"
            )
    return dict(keys)


def check_availability_zones(config: EnvironmentConfig, ec2: Any) -> list[Check]:
    """Each AZ ID of the config exists in the region and is available."""
    wanted = referenced_az_ids(config)
    # A zone-id filter answers with the zones found (an unknown ID in ZoneIds fails the call).
    zones = ec2.describe_availability_zones(
        Filters=[{"Name": "zone-id", "Values": sorted(wanted)}]
    ).get("AvailabilityZones", [])
    by_id = {zone["ZoneId"]: zone for zone in zones}
    listing = (
        f"aws ec2 describe-availability-zones --region {config.region} "
        "--query 'AvailabilityZones[].[ZoneId,ZoneName]'"
    )
    checks = []
    for az_id in sorted(wanted):
        name = f"availability zone {az_id}"
        used_by = ", ".join(wanted[az_id])
        zone = by_id.get(az_id)
        if zone is None:
            checks.append(
                failed(
                    name,
                    f"no AZ with ID {az_id} in {config.region} (named by {used_by})",
                    f"use an AZ ID of {config.region}; list them with: {listing}",
                )
            )
        elif zone.get("State", "available") != "available":
            checks.append(
                failed(
                    name,
                    f"{az_id} ({zone.get('ZoneName')}) is {zone.get('State')}",
                    "pick another AZ ID, or wait until the zone is available again",
                )
            )
        else:
            checks.append(passed(name, f"{az_id} is {zone.get('ZoneName')} in {config.region}"))
    return checks


# -- quotas ----------------------------------------------------------------------------------


def quota_name(instance_type: str) -> str:
    """``ml.p5.48xlarge for cluster usage``."""
    return instance_type + QUOTA_SUFFIX


def _cluster_quotas(quotas_client: Any) -> dict[str, dict[str, Any]]:
    """The SageMaker quotas whose name ends in "for cluster usage", by name."""
    return {
        str(quota["QuotaName"]): quota
        for quota in paginate(
            quotas_client, "list_service_quotas", "Quotas", ServiceCode=QUOTA_SERVICE_CODE
        )
        if str(quota.get("QuotaName", "")).endswith(QUOTA_SUFFIX)
    }


def _groups_ask(names: list[str]) -> str:
    """``group gpu asks`` / ``groups controller, login ask``."""
    if len(names) == 1:
        return f"group {names[0]} asks"
    return f"groups {', '.join(names)} ask"


def _increase_fix(region: str, instance_type: str, quota: dict[str, Any] | None, need: int) -> str:
    if quota is None or not quota.get("QuotaCode"):
        return (
            f'request "{quota_name(instance_type)}" of at least {need} in the Service Quotas '
            f"console (Amazon SageMaker, {region}), or pick an instance type offered there"
        )
    return (
        f"aws service-quotas request-service-quota-increase --region {region} "
        f"--service-code {QUOTA_SERVICE_CODE} --quota-code {quota['QuotaCode']} "
        f"--desired-value {need}"
    )


def check_quotas(config: EnvironmentConfig, quotas_client: Any) -> list[Check]:
    """The cluster-usage quota of each ml.* type covers the instances the config asks for.

    Groups with one ``instance_type`` add their ``count`` to that type. A group with
    ``instance_types`` (flexible) may run any of them, so it needs ``count`` of the room its
    types have left after the fixed groups. Instances of other clusters in the account count
    against the same quotas; the check cannot see them.
    """
    fixed: dict[str, int] = defaultdict(int)
    fixed_groups: dict[str, list[str]] = defaultdict(list)
    flexible: list[InstanceGroup] = []
    for group in config.cluster.instance_groups:
        if group.instance_type:
            fixed[group.instance_type] += group.count
            fixed_groups[group.instance_type].append(group.name)
        elif group.instance_types:
            flexible.append(group)
    quotas = _cluster_quotas(quotas_client)
    region = config.region
    checks = []
    room: dict[str, int] = {}
    for instance_type in sorted(set(fixed) | {t for g in flexible for t in g.instance_types}):
        quota = quotas.get(quota_name(instance_type))
        value = int(quota.get("Value", 0)) if quota else 0
        room[instance_type] = value - fixed.get(instance_type, 0)
        if instance_type not in fixed:
            continue
        name = f"quota {instance_type}"
        need = fixed[instance_type]
        groups = _groups_ask(fixed_groups[instance_type])
        if quota is None:
            checks.append(
                failed(
                    name,
                    f'no quota "{quota_name(instance_type)}" in {region}: HyperPod does not offer '
                    f"the type there ({groups} for {need})",
                    _increase_fix(region, instance_type, None, need),
                )
            )
        elif value < need:
            checks.append(
                failed(
                    name,
                    f'"{quota_name(instance_type)}" is {value}; {groups} for {need}',
                    _increase_fix(region, instance_type, quota, need),
                )
            )
        else:
            checks.append(
                passed(
                    name,
                    f'"{quota_name(instance_type)}" is {value}; {groups} for {need} '
                    "(other clusters of the account use the same quota)",
                )
            )
    for group in flexible:
        name = f"quota group {group.name}"
        spare = sum(max(room[t], 0) for t in group.instance_types)
        types = ", ".join(group.instance_types)
        if spare < group.count:
            checks.append(
                failed(
                    name,
                    f"the cluster-usage quotas of {types} leave room for {spare} instances after "
                    f"the other groups; the group asks for {group.count}",
                    f'raise "<type>{QUOTA_SUFFIX}" for one of {types} in Service Quotas '
                    f"(Amazon SageMaker, {region}) by {group.count - spare}",
                )
            )
        else:
            checks.append(
                passed(
                    name,
                    f"room for {spare} instances of {types} after the other groups; "
                    f"the group asks for {group.count}",
                )
            )
    return checks


# -- training plans --------------------------------------------------------------------------


def _plan_name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def check_training_plans(config: EnvironmentConfig, sagemaker: Any) -> list[Check]:
    """Each group's training plan exists, is Active, is for HyperPod clusters, and reserves the
    group's instance type in the group's AZ ID, enough instances for every group that uses it."""
    groups = [g for g in config.cluster.instance_groups if g.training_plan_arn]
    if not groups:
        return [skipped("training plans", "no instance group names a training_plan_arn")]
    demand: dict[str, int] = defaultdict(int)
    for group in groups:
        demand[str(group.training_plan_arn)] += group.count
    plans: dict[str, dict[str, Any] | None] = {}
    checks = []
    for group in groups:
        arn = str(group.training_plan_arn)
        name = f"training plan of {group.name}"
        plan_name = _plan_name(arn)
        if arn not in plans:
            plans[arn] = call_or_none(
                sagemaker.describe_training_plan, ["ResourceNotFound"], TrainingPlanName=plan_name
            )
        plan = plans[arn]
        if plan is None:
            checks.append(
                failed(
                    name,
                    f"training plan {plan_name} does not exist in {config.region}",
                    "fix the ARN (aws sagemaker list-training-plans), or buy a plan "
                    "(aws sagemaker search-training-plan-offerings, create-training-plan)",
                )
            )
            continue
        checks.append(_plan_check(config, group, plan, demand[arn]))
    return checks


def _plan_check(
    config: EnvironmentConfig, group: InstanceGroup, plan: dict[str, Any], demand: int
) -> Check:
    name = f"training plan of {group.name}"
    plan_name = plan.get("TrainingPlanName") or _plan_name(str(group.training_plan_arn))
    status = plan.get("Status")
    if status != "Active":
        when = f" (starts {plan['StartTime']:%Y-%m-%d %H:%M %Z})" if plan.get("StartTime") else ""
        reason = f": {plan['StatusMessage']}" if plan.get("StatusMessage") else ""
        return failed(
            name,
            f"{plan_name} is {status}{when}{reason}; HyperPod places the group only on an "
            "Active plan",
            "wait until the plan is Active, or name an Active plan",
        )
    targets = plan.get("TargetResources") or []
    if TRAINING_PLAN_HYPERPOD_TARGET not in targets:
        return failed(
            name,
            f"{plan_name} reserves capacity for {', '.join(targets) or 'nothing'}, "
            f"not for {TRAINING_PLAN_HYPERPOD_TARGET}",
            f"name a plan bought with target resource {TRAINING_PLAN_HYPERPOD_TARGET}",
        )
    az_id = group.availability_zone_id or config.network.availability_zone_id
    types = group.all_instance_types
    reserved = [
        r
        for r in plan.get("ReservedCapacitySummaries", [])
        if r.get("Status", "Active") == "Active"
    ]
    offered = sorted(
        {f"{r.get('InstanceType')} in {r.get('AvailabilityZoneId')}" for r in reserved}
    )
    matching = [
        r
        for r in reserved
        if r.get("InstanceType") in types and r.get("AvailabilityZoneId") == az_id
    ]
    if not matching:
        return failed(
            name,
            f"{plan_name} reserves {', '.join(offered) or 'no active capacity'}; the group runs "
            f"{' or '.join(types)} in {az_id}",
            "set the group's instance_type and availability_zone_id (AZ ID) to the plan's, "
            "or name a plan that matches them",
        )
    count = sum(int(r.get("TotalInstanceCount", 0)) for r in matching)
    if count < demand:
        return failed(
            name,
            f"{plan_name} reserves {count} instances of {' or '.join(types)} in {az_id}; the "
            f"groups on it ask for {demand}",
            "lower the groups' count, or extend the plan",
        )
    return passed(
        name,
        f"{plan_name} is Active with {count} instances of {' or '.join(types)} in {az_id} "
        f"(groups on it ask for {demand})",
    )

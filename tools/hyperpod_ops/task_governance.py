"""Preflight of ``eks.task_governance``: which path each type takes in the region, and, on an
adopted EKS cluster, the team principals that have an access entry already.

CloudFormation's ``DescribeType`` settles whether the region offers
``AWS::SageMaker::ClusterSchedulerConfig`` and ``AWS::SageMaker::ComputeQuota``; the app picks
the path from its table (:data:`hyperpod_cdk.facts.task_governance_types.NATIVE_REGIONS`), so a
difference is reported (the table is out of date). EKS allows one access entry per principal:
on an adopted cluster the config cannot know the existing entries, so a team principal that has
one fails here (the app would fail to create its entry at deploy time).
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.facts.task_governance_types import (
    COMPUTE_QUOTA_TYPE,
    SCHEDULER_CONFIG_TYPE,
    is_native,
)
from hyperpod_ops.aws import error_code, is_client_error
from hyperpod_ops.check import Check, failed, passed, skipped

_NOT_FOUND = ("TypeNotFoundException", "CFNRegistryException")


def check_task_governance(config: EnvironmentConfig, cloudformation: Any, eks: Any) -> list[Check]:
    """Both checks below; one skipped line when the config has no ``eks.task_governance``."""
    if config.is_slurm or config.eks is None or config.eks.task_governance is None:
        return [skipped("task governance", "no eks.task_governance")]
    return check_types(config, cloudformation) + check_team_access_entries(config, eks)


def check_types(config: EnvironmentConfig, cloudformation: Any) -> list[Check]:
    """For each type: native or custom resource in the config's region, as CloudFormation says."""
    governance = config.eks.task_governance if config.eks is not None else None
    if config.is_slurm or governance is None:
        return [skipped("task governance types", "no eks.task_governance")]
    checks = []
    for type_name in (SCHEDULER_CONFIG_TYPE, COMPUTE_QUOTA_TYPE):
        name = f"task governance {type_name.rsplit('::', 1)[1]}"
        try:
            cloudformation.describe_type(Type="RESOURCE", TypeName=type_name)
            offered = True
        except Exception as exc:
            if not (is_client_error(exc) and error_code(exc) in _NOT_FOUND):
                raise
            offered = False
        planned = is_native(type_name, config.region)
        path = "CloudFormation type" if planned else "custom resource (SageMaker API)"
        if offered == planned:
            checks.append(passed(name, f"{config.region}: {path}"))
        elif offered:
            checks.append(
                passed(
                    name,
                    f"{config.region} now offers {type_name}; the app still uses the custom "
                    "resource (update NATIVE_REGIONS, and move as docs/task-governance.md says)",
                )
            )
        else:
            checks.append(
                failed(
                    name,
                    f"{config.region} does not offer {type_name}, but the app's table says it does",
                    "remove the region from NATIVE_REGIONS in "
                    "constructs/hyperpod_cdk/facts/task_governance_types.py (the custom resource then "
                    "makes the object)",
                )
            )
    return checks


def check_team_access_entries(config: EnvironmentConfig, eks: Any) -> list[Check]:
    """On an adopted cluster, a team principal with an access entry fails (one per principal)."""
    name = "task governance access entries"
    governance = config.eks.task_governance if config.eks is not None else None
    if config.is_slurm or governance is None or config.eks is None:
        return [skipped(name, "no eks.task_governance")]
    if config.eks.cluster_arn is None:
        return [skipped(name, "the app creates the EKS cluster (and every entry on it)")]
    principals = governance.principal_namespaces()
    if not principals:
        return [skipped(name, "no team principals")]
    cluster = config.eks.cluster_arn.rsplit("/", 1)[1]
    existing: set[str] = set()
    for page in eks.get_paginator("list_access_entries").paginate(clusterName=cluster):
        existing.update(page.get("accessEntries", []))
    taken = [p for p in principals if p in existing]
    if taken:
        return [
            failed(
                name,
                f"{', '.join(taken)} already has an access entry on {cluster}; EKS allows one "
                "per principal",
                "remove the principal from eks.task_governance.teams[].principals and "
                "associate AmazonEKSEditPolicy scoped to its team namespaces "
                "(hyperpod-ns-<team>) with its existing entry",
            )
        ]
    return [passed(name, f"{len(principals)} team principal(s) without an entry on {cluster}")]

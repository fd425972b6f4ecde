"""Preflight checks of the deploy target: the account, the cluster name and the CDK bootstrap."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.aws import call_or_none
from hyperpod_ops.check import Check, failed, passed, skipped

DEFAULT_QUALIFIER = "hnb659fds"
DEFAULT_TOOLKIT_STACK = "CDKToolkit"
QUALIFIER_CONTEXT_KEY = "@aws-cdk/core:bootstrapQualifier"
# Templates of aws-cdk-lib 2's DefaultStackSynthesizer carry a CheckBootstrapVersion rule that
# rejects bootstrap versions 1-5 ("CDK bootstrap stack version 6 required"); a synthesized
# cdk.out/manifest.json may ask for more (requiresBootstrapStackVersion).
MIN_BOOTSTRAP_VERSION = 6
# The logical ID of the HyperPod cluster in the "<name>-cluster" stack (stacks/environment.py).
CLUSTER_LOGICAL_ID = "HyperPodCluster"
# Stack states in which the bootstrap resources may be missing or half made.
_BROKEN_STACK_STATES = ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED", "DELETE_FAILED", "CREATE_FAILED")


def check_account(config: EnvironmentConfig, caller_account: str, caller_arn: str) -> Check:
    """The caller's account is the config's ``account``."""
    if config.account is None:
        return skipped(
            "account",
            f"the config names no account: the deploy goes to the caller's, {caller_account} "
            f"({caller_arn})",
        )
    if caller_account != config.account:
        return failed(
            "account",
            f"the credentials are of account {caller_account} ({caller_arn}); the config "
            f"deploys to {config.account}",
            f"use credentials of {config.account} (e.g. AWS_PROFILE=<profile of {config.account}>)",
        )
    return passed("account", f"the caller {caller_arn} is in {config.account}, as configured")


# -- the HyperPod cluster name ---------------------------------------------------------------


def check_cluster(config: EnvironmentConfig, sagemaker: Any, cloudformation: Any) -> list[Check]:
    """No HyperPod cluster has the name yet, or the one that has it is this app's own; then,
    when the deploy updates this app's own cluster, what the update may not change on it
    (:func:`check_accounting_kept`)."""
    cluster_name = config.cluster_name
    name = f"cluster name {cluster_name}"
    cluster = call_or_none(
        sagemaker.describe_cluster, ["ResourceNotFound"], ClusterName=cluster_name
    )
    if cluster is None:
        return [passed(name, f"no HyperPod cluster named {cluster_name} in {config.region}")]
    stack = f"{config.name}-cluster"
    resource = call_or_none(
        cloudformation.describe_stack_resource,
        ["ValidationError"],
        StackName=stack,
        LogicalResourceId=CLUSTER_LOGICAL_ID,
    )
    physical = (resource or {}).get("StackResourceDetail", {}).get("PhysicalResourceId")
    if physical and physical in (cluster.get("ClusterArn"), cluster_name):
        own = passed(
            name,
            f"{cluster_name} ({cluster.get('ClusterStatus')}) belongs to stack {stack}: "
            "the deploy updates it",
        )
        return [own, *check_accounting_kept(config, cluster)]
    return [
        failed(
            name,
            f"a HyperPod cluster named {cluster_name} ({cluster.get('ClusterStatus')}) exists and "
            f"is not the one of stack {stack}",
            "set cluster.name to a free name, or delete the other cluster",
        )
    ]


def check_accounting_kept(config: EnvironmentConfig, cluster: Mapping[str, Any]) -> list[Check]:
    """An update keeps the external accounting database the deployed cluster has.

    HyperPod cannot revert a cluster to its internal MariaDB database once an external one is
    attached (AWS doc "Using an external accounting database with SageMaker HyperPod Slurm
    clusters"), so dropping ``cluster.slurm.accounting_database`` would fail the cluster's
    update. No check when neither the cluster nor the config has one.
    """
    name = "accounting database"
    deployed = cluster.get("Orchestrator", {}).get("Slurm", {}).get("AccountingDatabase")
    wanted = config.is_slurm and config.cluster.slurm_settings.accounting_database
    cluster_name = config.cluster_name
    if not deployed:
        if not wanted:
            return []
        return [
            passed(
                name,
                f"the deploy attaches one to {cluster_name}; HyperPod cannot detach it later",
            )
        ]
    endpoint = deployed.get("Endpoint", "?")
    if wanted:
        return [passed(name, f"{cluster_name} keeps its accounting database ({endpoint})")]
    return [
        failed(
            name,
            f"{cluster_name} has an external accounting database ({endpoint}) and the config "
            "has none: HyperPod cannot revert a cluster to its internal MariaDB database, so "
            "the cluster's update would fail",
            "keep cluster.slurm.accounting_database: true, or deploy a new cluster under "
            "another cluster.name",
        )
    ]


# -- CDK bootstrap ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapTarget:
    """Where the CDK bootstrap resources of this app live, and the version it needs."""

    toolkit_stack: str
    qualifier: str
    required_version: int
    required_by: str

    @property
    def version_parameter(self) -> str:
        """The SSM parameter the templates read the bootstrap version from."""
        return f"/cdk-bootstrap/{self.qualifier}/version"


def bootstrap_target(config: EnvironmentConfig, project_root: Path) -> BootstrapTarget:
    """The toolkit stack and qualifier from cdk.json (CDK defaults otherwise), and the version
    the synthesized templates need (cdk.out/manifest.json when it holds this environment's
    stacks, else :data:`MIN_BOOTSTRAP_VERSION`)."""
    settings = _read_json(project_root / "cdk.json")
    context = settings.get("context", {}) if isinstance(settings.get("context"), dict) else {}
    qualifier = str(context.get(QUALIFIER_CONTEXT_KEY) or DEFAULT_QUALIFIER)
    toolkit_stack = str(settings.get("toolkitStackName") or DEFAULT_TOOLKIT_STACK)
    manifest = _read_json(project_root / "cdk.out" / "manifest.json")
    artifacts = manifest.get("artifacts", {}) if isinstance(manifest.get("artifacts"), dict) else {}
    needed = [
        int(artifact.get("properties", {}).get("requiresBootstrapStackVersion", 0))
        for artifact_id, artifact in artifacts.items()
        if artifact_id.startswith(f"{config.name}-") and isinstance(artifact, dict)
    ]
    if needed and max(needed) > 0:
        return BootstrapTarget(
            toolkit_stack,
            qualifier,
            max(max(needed), MIN_BOOTSTRAP_VERSION),
            "the synthesized templates (cdk.out/manifest.json)",
        )
    return BootstrapTarget(
        toolkit_stack, qualifier, MIN_BOOTSTRAP_VERSION, "the templates of aws-cdk-lib 2"
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _bootstrap_command(config: EnvironmentConfig, account: str, target: BootstrapTarget) -> str:
    command = f"source scripts/env.sh && cdk bootstrap aws://{account}/{config.region}"
    if target.qualifier != DEFAULT_QUALIFIER:
        command += f" --qualifier {target.qualifier}"
    if target.toolkit_stack != DEFAULT_TOOLKIT_STACK:
        command += f" --toolkit-stack-name {target.toolkit_stack}"
    return command


def check_bootstrap(
    config: EnvironmentConfig,
    cloudformation: Any,
    ssm: Any,
    *,
    account: str,
    target: BootstrapTarget,
) -> Check:
    """The CDK bootstrap stack exists, is healthy, and its version is what the templates need."""
    name = "cdk bootstrap"
    fix = _bootstrap_command(config, account, target)
    response = call_or_none(
        cloudformation.describe_stacks, ["ValidationError"], StackName=target.toolkit_stack
    )
    stacks = (response or {}).get("Stacks", [])
    if not stacks:
        return failed(name, f"no {target.toolkit_stack} stack in {account}/{config.region}", fix)
    status = str(stacks[0].get("StackStatus"))
    if status in _BROKEN_STACK_STATES or status.startswith("DELETE_"):
        return failed(name, f"{target.toolkit_stack} is {status}", fix)
    parameter = call_or_none(
        ssm.get_parameter, ["ParameterNotFound"], Name=target.version_parameter
    )
    if parameter is None:
        return failed(
            name,
            f"{target.toolkit_stack} exists but {target.version_parameter} does not: it was "
            f"bootstrapped with another qualifier than {target.qualifier}",
            fix,
        )
    value = str(parameter.get("Parameter", {}).get("Value", ""))
    if not value.isdigit():
        return failed(name, f"{target.version_parameter} is {value!r}, not a version", fix)
    if int(value) < target.required_version:
        return failed(
            name,
            f"{target.toolkit_stack} is version {value}; {target.required_by} need "
            f">= {target.required_version}",
            fix + " (bootstrapping again upgrades it)",
        )
    return passed(
        name,
        f"{target.toolkit_stack} ({status}) is version {value}; {target.required_by} need "
        f">= {target.required_version}",
    )

"""``python -m hyperpod_ops.status CONFIG`` (``make status``): the deployed HyperPod cluster's
state and how to reach it. Read-only.

Prints the cluster status (and its failure message), each instance group with its current and
target counts, the failed nodes with their reason, the CloudWatch log group of the lifecycle
scripts, and the commands to reach the Slurm controller (SSM) or the EKS cluster (kubeconfig).
Exit 0 when the cluster was found, 1 when it is not deployed or an AWS call failed, 2 when the
config is invalid or AWS cannot be used (one line on stderr).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.aws import (
    ClientFactory,
    call_or_none,
    describe_error,
    is_client_error,
    paginate,
    session_clients,
    throttled_reason,
    unavailable_reason,
)
from hyperpod_ops.cli import EXIT_UNUSABLE, MakeClients, run_command

# A node HyperPod could not set up (ClusterInstanceStatus); its Message says why.
FAILED_NODE_STATUS = "Failure"


@dataclass(frozen=True)
class ClusterState:
    """What DescribeCluster and ListClusterNodes say about the cluster."""

    cluster: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The cluster name."""
        return str(self.cluster.get("ClusterName", ""))

    @property
    def cluster_id(self) -> str:
        """The cluster ID: the last part of its ARN (``.../cluster/<id>``)."""
        return str(self.cluster.get("ClusterArn", "")).rsplit("/", 1)[-1]

    @property
    def log_group(self) -> str:
        """The CloudWatch log group HyperPod writes the lifecycle scripts' output to."""
        return lifecycle_log_group(self.name, self.cluster_id)

    @property
    def failed_nodes(self) -> list[dict[str, Any]]:
        """The nodes whose status is Failure."""
        return [n for n in self.nodes if _node_status(n) == FAILED_NODE_STATUS]


def lifecycle_log_group(cluster_name: str, cluster_id: str) -> str:
    """``/aws/sagemaker/Clusters/<cluster-name>/<cluster-id>``."""
    return f"/aws/sagemaker/Clusters/{cluster_name}/{cluster_id}"


def ssm_target(cluster_id: str, group: str, instance_id: str) -> str:
    """The SSM target of a HyperPod node: ``sagemaker-cluster:<id>_<group>-<instance-id>``."""
    return f"sagemaker-cluster:{cluster_id}_{group}-{instance_id}"


def _node_status(node: dict[str, Any]) -> str:
    return str(node.get("InstanceStatus", {}).get("Status", "unknown"))


def read_status(config: EnvironmentConfig, sagemaker: Any) -> ClusterState | None:
    """The cluster of ``config`` and all its nodes (every page), or None when it does not exist."""
    cluster = call_or_none(
        sagemaker.describe_cluster, ["ResourceNotFound"], ClusterName=config.cluster_name
    )
    if cluster is None:
        return None
    nodes = list(
        paginate(
            sagemaker,
            "list_cluster_nodes",
            "ClusterNodeSummaries",
            ClusterName=config.cluster_name,
        )
    )
    return ClusterState(cluster, nodes)


def _group_types(group: dict[str, Any]) -> str:
    if group.get("InstanceType"):
        return str(group["InstanceType"])
    requirements = group.get("InstanceRequirements", {})
    types = requirements.get("CurrentInstanceTypes") or requirements.get("DesiredInstanceTypes")
    return "|".join(types or ["?"])


def _node_groups(config: EnvironmentConfig, state: ClusterState, node_type: str) -> list[str]:
    """The groups of a Slurm node type: from the cluster's SlurmConfig, else from the config."""
    deployed = [
        str(g["InstanceGroupName"])
        for g in state.cluster.get("InstanceGroups", [])
        if g.get("SlurmConfig", {}).get("NodeType") == node_type
    ]
    if deployed:
        return deployed
    return [g.name for g in config.cluster.instance_groups if g.effective_node_type == node_type]


def _eks_name(config: EnvironmentConfig, state: ClusterState) -> str:
    arn = state.cluster.get("Orchestrator", {}).get("Eks", {}).get("ClusterArn")
    if arn:
        return str(arn).rsplit("/", 1)[-1]
    configured = config.eks_settings.cluster_arn
    return configured.rsplit("/", 1)[-1] if configured else config.eks_cluster_name


def format_status(config: EnvironmentConfig, state: ClusterState) -> list[str]:
    """The report lines."""
    region = config.region
    cluster = state.cluster
    lines = [f"cluster {state.name}: {cluster.get('ClusterStatus')} ({cluster.get('ClusterArn')})"]
    if cluster.get("FailureMessage"):
        lines.append(f"  failure: {cluster['FailureMessage']}")
    groups = cluster.get("InstanceGroups", [])
    lines.append("instance groups (current/target):")
    width = max((len(str(g.get("InstanceGroupName"))) for g in groups), default=0)
    for group in groups:
        counts = f"{group.get('CurrentCount', 0)}/{group.get('TargetCount', 0)}"
        if group.get("MinCount") is not None:
            counts += f" (min {group['MinCount']})"
        lines.append(
            f"  {str(group.get('InstanceGroupName')):<{width}}  {_group_types(group):<18} "
            f"{str(group.get('Status', '')):<15} {counts}"
        )
    statuses = Counter(_node_status(n) for n in state.nodes)
    listing = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    lines.append(f"nodes: {len(state.nodes)}" + (f" ({listing})" if listing else ""))
    if state.failed_nodes:
        lines.append("failed nodes:")
        for node in state.failed_nodes:
            message = node.get("InstanceStatus", {}).get("Message") or "no reason given"
            lines.append(
                f"  {node.get('InstanceGroupName')} {node.get('InstanceId')} "
                f"({node.get('InstanceType')}): {' '.join(str(message).split())}"
            )
    lines.append(f"lifecycle script logs: {state.log_group}")
    lines.append(f"  aws logs tail {state.log_group} --region {region} --since 1h")
    lines.extend(_access_lines(config, state))
    return lines


def _access_lines(config: EnvironmentConfig, state: ClusterState) -> list[str]:
    region = config.region
    if not config.is_slurm:
        return [
            "reach the EKS cluster:",
            f"  aws eks update-kubeconfig --region {region} --name {_eks_name(config, state)}",
        ]
    lines = []
    for node_type, label in (("Controller", "the controller"), ("Login", "a login node")):
        groups = _node_groups(config, state, node_type)
        if not groups:
            continue
        nodes = [n for n in state.nodes if n.get("InstanceGroupName") in groups]
        lines.append(f"reach {label} (SSM):")
        if not nodes:
            lines.append(f"  no node in {', '.join(groups)} yet")
        for node in nodes:
            status = _node_status(node)
            note = "" if status == "Running" else f"  # {status}"
            target = ssm_target(
                state.cluster_id, str(node.get("InstanceGroupName")), str(node.get("InstanceId"))
            )
            lines.append(f"  aws ssm start-session --region {region} --target {target}{note}")
    return lines


def _command(config: EnvironmentConfig, clients: ClientFactory, project_root: Path) -> int:
    sagemaker = clients("sagemaker")
    try:
        state = read_status(config, sagemaker)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        throttled = throttled_reason(exc, [sagemaker])
        if throttled is not None:
            # nothing was learnt about the cluster: AWS is unusable for now, not "a check failed"
            print(f"status: {throttled}", file=sys.stderr)
            return EXIT_UNUSABLE
        print(f"status: {describe_error(exc, [sagemaker])}", file=sys.stderr)
        return 1
    if state is None:
        print(
            f"status: HyperPod cluster {config.cluster_name} is not deployed in {config.region} "
            f"(deploy it with: make deploy CONFIG=<this file>)",
            file=sys.stderr,
        )
        return 1
    for line in format_status(config, state):
        print(line)
    return 0


def main(argv: Sequence[str], make_clients: MakeClients = session_clients) -> int:
    """The command line; ``make_clients`` builds the boto3 clients of a region (tests stub it)."""
    return run_command(
        "status",
        "The deployed HyperPod cluster of CONFIG: its state and how to reach it (read-only).",
        argv,
        _command,
        make_clients,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

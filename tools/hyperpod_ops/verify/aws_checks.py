"""The checks of ``make verify`` that read AWS only (``cluster``, ``health``) or move data through
it (``dra``), and what the other checks learn from AWS about the FSx for Lustre file system.

- ``cluster``: the cluster is InService, every instance group is at its target count (and at the
  config's count), no node failed or is still in deep health checks.
- ``health``: what HyperPod already ran, read and not repeated: cluster events at Error or Warn of
  the current instances, the outcome of the deep health checks, the health monitoring agent's
  detections (Slurm: its log streams; EKS: the node labels). HyperPod's on-demand deep health
  check is started only when ``--deep-health-check`` asks for it.
- ``dra``: for each data repository association, a file put in S3 appears on the file system
  and a file written on the file system reaches S3, within a bounded time.

Everything the ``dra`` check makes (S3 objects, data repository tasks, FSx folders) carries the
run id and is registered with :meth:`VerifyRun.created` as soon as it exists;
:func:`leftovers` finds a crashed run's by that id. boto3 clients come from ``run.clients``.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from hyperpod_ops.aws import (
    call_or_none,
    describe_error,
    is_client_error,
    one_line,
    paginate,
    unavailable_reason,
)
from hyperpod_ops.status import FAILED_NODE_STATUS, lifecycle_log_group, read_status
from hyperpod_ops.verify import instance_types
from hyperpod_ops.verify.model import (
    BUDGET_SECONDS,
    RUN_LABEL,
    VERIFY_DIR,
    Check,
    Created,
    Node,
    Result,
    VerifyRun,
    failed,
    passed,
    skipped,
)

T = TypeVar("T")

# -- what the AWS APIs and docs say (botocore 1.44.5 service models, read 2026-11-25; docs named
# per row) ----------------------------------------------------------------------------------
# ClusterInstanceStatus of a node whose deep health checks still run (ListClusterNodes); the
# StartClusterHealthCheck reference: "use DescribeClusterNode to track progress of the deep
# health checks", whose InstanceStatus Failure carries the reason in Message.
DEEP_HEALTH_CHECK_STATUS = "DeepHealthCheckInProgress"
# ClusterEventLevel Info|Warn|Error; ListClusterEvents works "only when the NodeProvisioningMode
# is set to Continuous" (ListClusterEvents reference; docs:
# sagemaker-hyperpod-cluster-events-reference).
EVENT_LEVELS = ("Error", "Warn")
CONTINUOUS = "Continuous"
# ListClusterEvents MaxResults is 1..100; read at most this many pages (the newest first).
EVENT_PAGE_SIZE = 100
EVENT_MAX_PAGES = 5
# EKS node labels (docs: sagemaker-hyperpod-eks-resiliency-node-labels): node-health-status
# Schedulable | Unschedulable (deep health checks running) | UnschedulablePendingReplacement |
# UnschedulablePendingReboot (failed a deep health check or the health monitoring agent);
# deep-health-check-status InProgress | Passed | Failed.
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
HEALTHY = "Schedulable"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
DEEP_HEALTH_BAD = ("InProgress", "Failed")
# Slurm: health monitoring agent detections are in the cluster log group's streams with this
# prefix and emit no cluster event (HYPERPOD_FACTS "Observability and events"). The agent's line
# format is not documented: these words (CloudWatch Logs filter pattern, OR of terms,
# case-sensitive) pick its detections; one page of at most AGENT_EVENTS lines is read.
AGENT_STREAM_PREFIX = "SagemakerHealthMonitoringAgent"
AGENT_FILTER = "?ERROR ?Error ?error ?FAULT ?Fault ?fault ?Unhealthy ?unhealthy ?Xid ?XID"
AGENT_EVENTS = 50
# An EC2 instance id inside a log stream name (ClusterNodeId pattern: i- and 8 or 17 hex digits).
INSTANCE_ID = re.compile(r"i-[0-9a-f]{17}|i-[0-9a-f]{8}")
# DescribeClusterNode calls for the messages of failed nodes, at most (the rest: no message).
MAX_NODE_MESSAGES = 10
# StartClusterHealthCheck DeepHealthChecks of an accelerated group when its config names none
# (botocore also has MultiNodeTrainingValidation, which CloudFormation does not: not started).
DEFAULT_DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity")
# InstanceGroupHealthCheckConfiguration InstanceIds: at most 500 per group.
MAX_HEALTH_CHECK_NODES = 500
# DataRepositoryTaskLifecycle values of a task that has not ended.
TASK_RUNNING = ("PENDING", "EXECUTING")
TASK_ENDED_CODES = ("DataRepositoryTaskEnded", "DataRepositoryTaskNotFound")
# The DRA event that makes a new file propagate (auto_import / auto_export).
NEW_EVENT = "NEW"
# Seconds between two looks at something that propagates; seconds one FSx file call may take.
POLL_SECONDS = 5.0
FSX_CALL_SECONDS = 60.0


# -- cluster ---------------------------------------------------------------------------------


def load_cluster(run: VerifyRun) -> str | None:
    """Fill ``run.cluster`` (DescribeCluster) and ``run.nodes`` (ListClusterNodes, all pages).

    :returns: None, or one line saying why there is no cluster to verify (not deployed, or the
        caller may not read it) and what to do.
    :raises: the botocore error of unusable credentials (the runner exits 2).
    """
    missing = _load(run)
    return None if missing is None else f"{missing[0]} ({missing[1]})"


def _load(run: VerifyRun) -> tuple[str, str] | None:
    """:func:`load_cluster`'s work; why there is no cluster and the fix, or None."""
    sagemaker = run.clients("sagemaker")
    config = run.config
    try:
        state = read_status(config, sagemaker)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        return (
            f"cannot read HyperPod cluster {config.cluster_name}: "
            f"{describe_error(exc, [sagemaker])}",
            "grant the caller sagemaker:DescribeCluster and sagemaker:ListClusterNodes",
        )
    if state is None:
        return (
            f"HyperPod cluster {config.cluster_name} is not deployed in {config.region}",
            "make deploy CONFIG=<this file>",
        )
    run.cluster = state.cluster
    groups = {str(g.get("InstanceGroupName")): g for g in state.cluster.get("InstanceGroups", [])}
    run.nodes = [_node(summary, groups) for summary in state.nodes]
    return None


def _node(summary: dict[str, Any], groups: dict[str, dict[str, Any]]) -> Node:
    group = str(summary.get("InstanceGroupName", ""))
    instance_type = summary.get("InstanceType") or _group_type(groups.get(group, {}))
    return Node(
        group=group,
        instance_id=str(summary.get("InstanceId", "")),
        instance_type=str(instance_type),
        status=str(summary.get("InstanceStatus", {}).get("Status", "unknown")),
    )


def _group_type(group: dict[str, Any]) -> str:
    """A group's instance type; a flexible group's current (else desired) types, ``a|b``."""
    if group.get("InstanceType"):
        return str(group["InstanceType"])
    requirements = group.get("InstanceRequirements", {})
    types = requirements.get("CurrentInstanceTypes") or requirements.get("DesiredInstanceTypes")
    return "|".join(types or ["unknown"])


def _log_group(run: VerifyRun) -> str:
    return lifecycle_log_group(run.config.cluster_name, run.cluster_id)


def _status_fix(run: VerifyRun) -> str:
    """Where to look when the cluster or a node is not right: make status and the log group."""
    return (
        f"see `make status` for this config and the lifecycle logs: aws logs tail "
        f"{_log_group(run)} --region {run.config.region} --since 1h"
    )


def check_cluster(run: VerifyRun) -> list[Result]:
    """The cluster is InService, every group at its target count, no node failed or still in
    deep health checks (one result for the cluster, one per group, one per node not right)."""
    if not run.cluster:
        missing = _load(run)
        if missing is not None:
            return [failed("cluster", *missing)]
    results = [_cluster_state(run)]
    results += _group_counts(run)
    results += _bad_nodes(run)
    return results


def _cluster_state(run: VerifyRun) -> Result:
    cluster = run.cluster
    name = run.config.cluster_name
    state = str(cluster.get("ClusterStatus"))
    if state == "InService":
        return passed("cluster", f"{name} is InService ({len(run.nodes)} nodes)")
    detail = f"cluster {name} is {state}"
    if cluster.get("FailureMessage"):
        detail += f": {cluster['FailureMessage']}"
    if state in ("Creating", "Updating", "SystemUpdating"):
        fix = "wait until it is InService (`make status` shows it), then run make verify again"
    else:
        fix = _status_fix(run)
    return failed("cluster", detail, fix)


def _autoscaled(run: VerifyRun) -> bool:
    """Karpenter autoscaling: the autoscaler sets each group's target, not the config."""
    mode = run.cluster.get("AutoScaling", {}).get("Mode")
    return mode == "Enable" if mode else run.config.cluster.auto_scaling


def _group_counts(run: VerifyRun) -> list[Result]:
    deployed = {str(g.get("InstanceGroupName")): g for g in run.cluster.get("InstanceGroups", [])}
    configured = {g.name: g for g in run.config.cluster.instance_groups}
    results = []
    for name in configured:
        if name not in deployed:
            results.append(
                failed(
                    "cluster",
                    "in the config but not in the deployed cluster",
                    "deploy the change: make deploy CONFIG=<this file>",
                    subject=name,
                )
            )
    for name, group in deployed.items():
        config_count = None if _autoscaled(run) else getattr(configured.get(name), "count", None)
        results.append(_group_count(run, name, group, config_count))
    return results


def _group_count(
    run: VerifyRun, name: str, group: dict[str, Any], config_count: int | None
) -> Result:
    """One group's counts. TargetCount is what HyperPod provisions towards (the config's count,
    or the autoscaler's); MinCount only makes the group InService earlier, the rest still comes:
    a group under its target is not done."""
    current = int(group.get("CurrentCount", 0))
    target = int(group.get("TargetCount", 0))
    types = _group_type(group)
    figures: dict[str, int | str] = {"current": current, "target": target}
    if current < target:
        status = group.get("Status", "unknown")
        return failed(
            "cluster",
            f"{current} of {target} {types} nodes are up (group {status})",
            f"HyperPod keeps provisioning towards the target; see why in `make status` and "
            f"the cluster events (aws sagemaker list-cluster-events --cluster-name "
            f"{run.config.cluster_name} --resource-type InstanceGroup --region "
            f"{run.config.region}); a capacity error needs a quota increase or reserved capacity",
            subject=name,
            **figures,
        )
    if config_count is not None and config_count != target:
        return failed(
            "cluster",
            f"target {target} nodes, but the config asks for {config_count}",
            "deploy the config (make deploy CONFIG=<this file>), or set the group's count back "
            f"to {target}",
            subject=name,
            **figures,
        )
    return passed("cluster", f"{current}/{target} {types} nodes", subject=name, **figures)


def _bad_nodes(run: VerifyRun) -> list[Result]:
    """A failed result for each node in Failure or still in deep health checks, with HyperPod's
    message (DescribeClusterNode: ListClusterNodes gives it, but run.nodes keeps the status
    only)."""
    sagemaker = run.clients("sagemaker")
    results = []
    bad = [n for n in run.nodes if n.status in (FAILED_NODE_STATUS, DEEP_HEALTH_CHECK_STATUS)]
    for index, node in enumerate(bad):
        message = _node_message(run, sagemaker, node) if index < MAX_NODE_MESSAGES else None
        if node.status == FAILED_NODE_STATUS:
            detail = f"{node.instance_type} node failed: {message or 'no reason given'}"
            fix = _status_fix(run)
        else:
            detail = f"{node.instance_type} node is still in deep health checks"
            detail += f": {message}" if message else ""
            fix = "wait until the node is Running (`make status`), then run make verify again"
        results.append(failed("cluster", detail, fix, subject=node.label))
    return results


def _node_message(run: VerifyRun, sagemaker: Any, node: Node) -> str | None:
    try:
        answer = sagemaker.describe_cluster_node(
            ClusterName=run.config.cluster_name, NodeId=node.instance_id
        )
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        return f"(its message could not be read: {describe_error(exc, [sagemaker])})"
    message = answer.get("NodeDetails", {}).get("InstanceStatus", {}).get("Message")
    return one_line(str(message)) if message else None


# -- health ----------------------------------------------------------------------------------


def check_health(run: VerifyRun) -> list[Result]:
    """What HyperPod already ran, read: cluster events, deep health checks, the health agent's
    detections; and HyperPod's on-demand deep health check, started only when asked."""
    sagemaker = run.clients("sagemaker")
    since: dt.datetime | None = None
    events: list[dict[str, Any]] | None = None
    unread: Result | None = None
    try:
        if run.config.is_slurm or _continuous(run):
            since = _oldest_launch(run, sagemaker)
        events = _current_events(run, sagemaker, since)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        fix = "grant the caller sagemaker:ListClusterNodes and sagemaker:ListClusterEvents"
        unread = failed("health", describe_error(exc, [sagemaker]), fix, subject="events")
    labels = _node_labels(run)
    results = [
        unread or _events_result(run, events),
        _deep_health_result(run, events, labels),
        _agent_result(run, since, labels),
    ]
    if run.options.deep_health_check:
        results.append(_start_deep_health_check(run, sagemaker))
    return results


def _oldest_launch(run: VerifyRun, sagemaker: Any) -> dt.datetime | None:
    """The launch time of the cluster's oldest current node (one ListClusterNodes item): what
    happened before it concerns instances that are gone."""
    answer = sagemaker.list_cluster_nodes(
        ClusterName=run.config.cluster_name,
        SortBy="CREATION_TIME",
        SortOrder="Ascending",
        MaxResults=1,
    )
    nodes = answer.get("ClusterNodeSummaries", [])
    launched = nodes[0].get("LaunchTime") if nodes else None
    return launched if isinstance(launched, dt.datetime) else None


def _continuous(run: VerifyRun) -> bool:
    mode = run.cluster.get("NodeProvisioningMode")
    return mode == CONTINUOUS if run.cluster else run.config.cluster.continuous


def _current_events(
    run: VerifyRun, sagemaker: Any, since: dt.datetime | None
) -> list[dict[str, Any]] | None:
    """The Error and Warn events of the current instances since ``since`` (None: not a
    Continuous cluster, which has no events). Events of instances no longer in the cluster
    (replaced ones) are left out: they say nothing about the nodes being verified."""
    if not _continuous(run):
        return None
    current = {n.instance_id for n in run.nodes}
    params: dict[str, Any] = {
        "ClusterName": run.config.cluster_name,
        "ResourceType": "Instance",
        "SortBy": "EventTime",
        "SortOrder": "Descending",
        "MaxResults": EVENT_PAGE_SIZE,
    }
    if since is not None:
        params["EventTimeAfter"] = since
    found = []
    pages = sagemaker.get_paginator("list_cluster_events").paginate(**params)
    for index, page in enumerate(pages):
        for event in page.get("Events", []):
            if event.get("EventLevel") in EVENT_LEVELS and event.get("InstanceId") in current:
                found.append(event)
        if index + 1 >= EVENT_MAX_PAGES:
            break
    return found


def _is_deep_health(event: dict[str, Any]) -> bool:
    return "deep health" in str(event.get("Description", "")).lower()


def _event_line(event: dict[str, Any]) -> str:
    node = f"{event.get('InstanceGroupName')}/{event.get('InstanceId')}"
    return f"{node} {event.get('EventLevel')}: {one_line(str(event.get('Description', '')))}"


def _events_result(run: VerifyRun, events: list[dict[str, Any]] | None) -> Result:
    if events is None:
        return skipped(
            "health",
            "cluster events exist only under Continuous node provisioning "
            "(cluster.node_provisioning_mode)",
            subject="events",
        )
    other = [e for e in events if not _is_deep_health(e)]
    if not other:
        return passed("health", "no Error or Warn event for the current nodes", subject="events")
    nodes = sorted({str(e.get("InstanceId")) for e in other})
    return failed(
        "health",
        f"{len(other)} Error/Warn events for {len(nodes)} current nodes, newest: "
        f"{_event_line(other[0])}",
        f"read them: aws sagemaker list-cluster-events --cluster-name "
        f"{run.config.cluster_name} --resource-type Instance --region {run.config.region}; "
        "replace a faulty node (HyperPod does it itself with node_recovery Automatic)",
        subject="events",
        events=len(other),
    )


def _deep_health_groups(run: VerifyRun) -> dict[str, list[str]]:
    """Group -> the deep health checks it runs when its nodes start (deployed, else config)."""
    configured = {g.name: list(g.deep_health_checks) for g in run.config.cluster.instance_groups}
    groups = {}
    for group in run.cluster.get("InstanceGroups", []):
        name = str(group.get("InstanceGroupName"))
        checks = list(group.get("OnStartDeepHealthChecks") or configured.get(name) or [])
        if checks:
            groups[name] = checks
    return groups


def _deep_health_result(
    run: VerifyRun,
    events: list[dict[str, Any]] | None,
    labels: list[dict[str, Any]] | str | None,
) -> Result:
    """Deep health check outcomes, as far as the API shows them: node status (a node that failed
    is in Failure or replaced; the cluster check failed on those), the cluster events about deep
    health checks (Continuous), and on EKS the deep-health-check-status label."""
    groups = _deep_health_groups(run)
    if not groups:
        return skipped(
            "health",
            "no instance group runs deep health checks when its nodes start "
            "(instance_groups[].deep_health_checks)",
            subject="deep health checks",
        )
    problems = [_event_line(e) for e in events or [] if _is_deep_health(e)]
    if isinstance(labels, list):
        for item in labels:
            value = _labels(item).get(DEEP_HEALTH_LABEL)
            if value in DEEP_HEALTH_BAD:
                problems.append(f"{_name(item)} {DEEP_HEALTH_LABEL}={value}")
    sources = ["node status"]
    sources += ["cluster events"] if events is not None else []
    sources += ["node labels"] if isinstance(labels, list) else []
    ran = "; ".join(f"{g}: {', '.join(c)}" for g, c in sorted(groups.items()))
    if problems:
        return failed(
            "health",
            f"{len(problems)} deep health check findings on current nodes, first: {problems[0]}",
            _status_fix(run),
            subject="deep health checks",
        )
    return passed(
        "health",
        f"{ran}; no current node failed them ({', '.join(sources)})",
        subject="deep health checks",
    )


def _node_labels(run: VerifyRun) -> list[dict[str, Any]] | str | None:
    """EKS: the nodes (``/api/v1/nodes``) as the API gives them, or the one-line reason they
    could not be read; None on Slurm."""
    if run.config.is_slurm:
        return None
    if run.kubernetes is None:
        return "the Kubernetes API of the EKS cluster is not reachable from here"
    try:
        items: list[dict[str, Any]] = run.kubernetes.items("/api/v1/nodes")
    except Exception as exc:
        if unavailable_reason(exc) is not None:
            raise
        return one_line(f"the nodes could not be read from the Kubernetes API: {exc}")
    return items


def _labels(item: dict[str, Any]) -> dict[str, str]:
    return dict(item.get("metadata", {}).get("labels") or {})


def _name(item: dict[str, Any]) -> str:
    return str(item.get("metadata", {}).get("name", "?"))


def _agent_result(
    run: VerifyRun, since: dt.datetime | None, labels: list[dict[str, Any]] | str | None
) -> Result:
    if run.config.is_slurm:
        return _agent_logs(run, since)
    if not isinstance(labels, list):
        return skipped("health", f"node health labels not read: {labels}", subject="health agent")
    unhealthy = [
        f"{_name(item)} {HEALTH_LABEL}={_labels(item)[HEALTH_LABEL]}"
        for item in labels
        if _labels(item).get(HEALTH_LABEL, HEALTHY) != HEALTHY
    ]
    labelled = sum(1 for item in labels if HEALTH_LABEL in _labels(item))
    if unhealthy:
        return failed(
            "health",
            f"{len(unhealthy)} of {labelled} HyperPod nodes are not {HEALTHY}: "
            + "; ".join(unhealthy[:3]),
            "HyperPod reboots or replaces them with node_recovery Automatic; see why: kubectl "
            "describe node NAME (fault-type and fault-reason labels), then run make verify "
            "again once they are Schedulable",
            subject="health agent",
        )
    return passed(
        "health",
        f"{labelled} HyperPod nodes are {HEALTHY} ({HEALTH_LABEL})",
        subject="health agent",
    )


def _agent_logs(run: VerifyRun, since: dt.datetime | None) -> Result:
    """Slurm: the health monitoring agent's detections since the oldest node started (one page);
    lines naming an instance no longer in the cluster are left out."""
    logs = run.clients("logs")
    params: dict[str, Any] = {
        "logGroupName": _log_group(run),
        "logStreamNamePrefix": AGENT_STREAM_PREFIX,
        "filterPattern": AGENT_FILTER,
        "limit": AGENT_EVENTS,
    }
    if since is not None:
        params["startTime"] = int(since.timestamp() * 1000)
    try:
        answer = call_or_none(logs.filter_log_events, ["ResourceNotFoundException"], **params)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        fix = f"grant the caller logs:FilterLogEvents on {_log_group(run)}"
        return failed("health", describe_error(exc, [logs]), fix, subject="health agent")
    if answer is None:
        return skipped(
            "health", f"log group {_log_group(run)} does not exist yet", subject="health agent"
        )
    current = {n.instance_id for n in run.nodes}
    found = [e for e in answer.get("events", []) if _current_stream(e, current)]
    if not found:
        return passed(
            "health",
            f"no health monitoring agent detection in {_log_group(run)} since the oldest node "
            "started",
            subject="health agent",
        )
    first = found[0]
    return failed(
        "health",
        f"{len(found)} health monitoring agent lines, first ({first.get('logStreamName')}): "
        f"{one_line(str(first.get('message', '')))}",
        f"read them: aws logs tail {_log_group(run)} --log-stream-name-prefix "
        f"{AGENT_STREAM_PREFIX} --region {run.config.region} --since 1d; HyperPod replaces or "
        "reboots a faulty node with node_recovery Automatic",
        subject="health agent",
        lines=len(found),
    )


def _current_stream(event: dict[str, Any], current: set[str]) -> bool:
    """False when the event's stream names an instance that is not in the cluster any more."""
    named = INSTANCE_ID.findall(str(event.get("logStreamName", "")))
    return not named or any(i in current for i in named)


def _is_compute(run: VerifyRun, group: dict[str, Any]) -> bool:
    """A group whose nodes run jobs: every group on EKS; on Slurm the Compute node type
    (deployed SlurmConfig, else the config's)."""
    if not run.config.is_slurm:
        return True
    node_type = group.get("SlurmConfig", {}).get("NodeType")
    if node_type:
        return bool(node_type == "Compute")
    name = group.get("InstanceGroupName")
    return any(
        g.name == name and g.effective_node_type == "Compute"
        for g in run.config.cluster.instance_groups
    )


def _health_check_groups(run: VerifyRun) -> dict[str, list[str]]:
    """The compute groups' deep health checks: the ones they run on start, else both instance
    checks for an accelerated type (the API accepts them on GPU and Trainium groups only)."""
    configured = _deep_health_groups(run)
    groups = {}
    for group in run.cluster.get("InstanceGroups", []):
        name = str(group.get("InstanceGroupName"))
        if not _is_compute(run, group):
            continue
        if name in configured:
            groups[name] = configured[name]
            continue
        facts = instance_types.lookup(run, _group_type(group)).facts
        if facts is not None and facts.accelerator != "none":
            groups[name] = list(DEFAULT_DEEP_HEALTH_CHECKS)
    return groups


def _start_deep_health_check(run: VerifyRun, sagemaker: Any) -> Result:
    """StartClusterHealthCheck on the running nodes of the compute groups (opt-in: HyperPod puts
    them in a maintenance reservation, and reboots or replaces those that fail)."""
    subject = "on-demand deep health check"
    configurations = []
    for group, checks in sorted(_health_check_groups(run).items()):
        ids = [n.instance_id for n in run.group_nodes(group)][:MAX_HEALTH_CHECK_NODES]
        if ids:
            configurations.append(
                {"InstanceGroupName": group, "InstanceIds": ids, "DeepHealthChecks": checks}
            )
    if not configurations:
        return skipped(
            "health", "no running node of a GPU or Trainium compute group to check", subject
        )
    try:
        sagemaker.start_cluster_health_check(
            ClusterName=run.config.cluster_name, DeepHealthCheckConfigurations=configurations
        )
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        return failed(
            "health",
            describe_error(exc, [sagemaker]),
            "grant the caller sagemaker:StartClusterHealthCheck, or start it when no other "
            "cluster operation runs",
            subject,
        )
    started = ", ".join(
        f"{c['InstanceGroupName']} ({len(c['InstanceIds'])} nodes: "
        f"{', '.join(c['DeepHealthChecks'])})"
        for c in configurations
    )
    return passed(
        "health",
        f"started on {started}; the nodes are out of service (DeepHealthCheckInProgress) until "
        f"it ends; follow it with `make status` or aws sagemaker list-cluster-nodes "
        f"--cluster-name {run.config.cluster_name} --region {run.config.region}",
        subject,
        nodes=sum(len(c["InstanceIds"]) for c in configurations),
    )


# -- FSx facts -------------------------------------------------------------------------------


class FsxUnknown(Exception):
    """The environment's FSx for Lustre file system could not be read (one line: why, and what
    to do)."""


@dataclass(frozen=True)
class FsxFacts:
    """What AWS says about the environment's FSx for Lustre file system.

    :param mount_path: ``storage.fsx.mount_path``: where Slurm nodes mount it.
    :param dra_paths: the file system path of each deployed data repository association.
    """

    file_system_id: str
    dns_name: str
    mount_name: str
    mount_path: str
    capacity_gib: int
    throughput_per_tib: int
    dra_paths: tuple[str, ...]


def _storage_stack(run: VerifyRun) -> str:
    """The CloudFormation stack that creates the file system: ``<name>-storage``."""
    return f"{run.config.name}-storage"


def _file_system_id(run: VerifyRun) -> str:
    """The adopted file system's id, else the storage stack's ``FileSystemId`` output."""
    fsx = run.config.storage.fsx
    if fsx.file_system_id:
        return fsx.file_system_id
    cloudformation = run.clients("cloudformation")
    stack = _storage_stack(run)
    answer = call_or_none(cloudformation.describe_stacks, ["ValidationError"], StackName=stack)
    if answer is None:
        raise FsxUnknown(
            f"stack {stack} is not deployed in {run.config.region} (make deploy CONFIG=<file>)"
        )
    for stack_info in answer.get("Stacks", []):
        for output in stack_info.get("Outputs", []):
            if output.get("OutputKey") == "FileSystemId" and output.get("OutputValue"):
                return str(output["OutputValue"])
    raise FsxUnknown(
        f"stack {stack} has no FileSystemId output; deploy it again (make deploy CONFIG=<file>)"
    )


def _associations(fsx: Any, file_system_id: str) -> list[dict[str, Any]]:
    """The file system's data repository associations, every page (no botocore paginator)."""
    params: dict[str, Any] = {"Filters": [{"Name": "file-system-id", "Values": [file_system_id]}]}
    found: list[dict[str, Any]] = []
    while True:
        answer = fsx.describe_data_repository_associations(**params)
        found += answer.get("Associations", [])
        if not answer.get("NextToken"):
            return found
        params["NextToken"] = answer["NextToken"]


def _read_fsx(run: VerifyRun) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The file system (DescribeFileSystems) and its associations, or :class:`FsxUnknown`.

    The associations are the deployed ones, not the config's: they live in their own stack
    (``<name>-data-repositories``), which may lag the config or have been changed by hand, and
    what moves data and what a test file must keep out of is what exists now.
    """
    fsx = run.clients("fsx")
    cloudformation = run.clients("cloudformation")
    try:
        file_system_id = _file_system_id(run)
        answer = call_or_none(
            fsx.describe_file_systems, ["FileSystemNotFound"], FileSystemIds=[file_system_id]
        )
        if answer is None or not answer.get("FileSystems"):
            raise FsxUnknown(
                f"file system {file_system_id} does not exist in {run.config.region}; check "
                "storage.fsx (an adopted file_system_id) or deploy (make deploy CONFIG=<file>)"
            )
        return answer["FileSystems"][0], _associations(fsx, file_system_id)
    except FsxUnknown:
        raise
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        raise FsxUnknown(
            f"{describe_error(exc, [fsx, cloudformation])}; grant the caller "
            "fsx:DescribeFileSystems, fsx:DescribeDataRepositoryAssociations and "
            "cloudformation:DescribeStacks"
        ) from None


def fsx_facts(run: VerifyRun) -> FsxFacts | None:
    """The environment's FSx for Lustre file system as deployed; None when ``storage.fsx`` is off.

    :raises FsxUnknown: it cannot be read (one line, with the fix).
    """
    if not run.config.storage.fsx.enabled:
        return None
    file_system, associations = _read_fsx(run)
    lustre = file_system.get("LustreConfiguration", {})
    return FsxFacts(
        file_system_id=str(file_system.get("FileSystemId")),
        dns_name=str(file_system.get("DNSName", "")),
        mount_name=str(lustre.get("MountName", "")),
        mount_path=run.config.storage.fsx.mount_path,
        capacity_gib=int(file_system.get("StorageCapacity", 0)),
        # absent on a SCRATCH file system (no per-unit throughput): 0
        throughput_per_tib=int(lustre.get("PerUnitStorageThroughput", 0)),
        dra_paths=tuple(str(a.get("FileSystemPath")) for a in associations),
    )


def _run_dir(file_system_path: str, run_id: str) -> str:
    """``<file_system_path>/<VERIFY_DIR>/<run_id>`` (``/`` joins without a double slash)."""
    return f"{file_system_path.rstrip('/')}/{VERIFY_DIR}/{run_id}"


def _covers(dra_path: str, path: str) -> bool:
    base = dra_path.rstrip("/")
    return base == "" or path == base or path.startswith(base + "/")


def scratch_path(facts: FsxFacts, run_id: str) -> str | None:
    """``/<VERIFY_DIR>/<run_id>``, the file system folder of a run's throughput test files; None
    when a data repository association covers it (its test files would be exported to S3)."""
    path = _run_dir("/", run_id)
    if any(_covers(dra, path) for dra in facts.dra_paths):
        return None
    return path


# -- data repository associations --------------------------------------------------------------


@dataclass(frozen=True)
class _Dra:
    """One deployed data repository association, and where a run's test files go."""

    file_system_id: str
    file_system_path: str
    bucket: str
    prefix: str  # "" or ending in "/"
    auto_import: tuple[str, ...]
    auto_export: tuple[str, ...]
    lifecycle: str
    failure: str | None

    def key(self, run_id: str, name: str = "") -> str:
        """``<prefix><VERIFY_DIR>/<run_id>/<name>``."""
        return f"{self.prefix}{VERIFY_DIR}/{run_id}/{name}"

    def fs_dir(self, run_id: str) -> str:
        """The run's folder under the association's file system path."""
        return _run_dir(self.file_system_path, run_id)


def _dra(association: dict[str, Any]) -> _Dra:
    uri = str(association.get("DataRepositoryPath", "")).removeprefix("s3://")
    bucket, _, prefix = uri.partition("/")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    s3 = association.get("S3", {})
    return _Dra(
        file_system_id=str(association.get("FileSystemId", "")),
        file_system_path=str(association.get("FileSystemPath", "/")),
        bucket=bucket,
        prefix=prefix,
        auto_import=tuple(s3.get("AutoImportPolicy", {}).get("Events", [])),
        auto_export=tuple(s3.get("AutoExportPolicy", {}).get("Events", [])),
        lifecycle=str(association.get("Lifecycle", "AVAILABLE")),
        failure=association.get("FailureDetails", {}).get("Message"),
    )


def _payload(kind: str, run_id: str) -> bytes:
    """A test file's content: random, so a stale copy from another run cannot match."""
    return f"hyperpod-verify {kind} {run_id} {secrets.token_hex(16)}\n".encode()


class _DraFailed(Exception):
    """One association's test failed: ``detail`` and ``fix`` of the failed result."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.fix = fix


def check_dra(run: VerifyRun) -> list[Result]:
    """For each data repository association: S3 -> FSx and FSx -> S3 with a test file each."""
    fsx_config = run.config.storage.fsx
    if not fsx_config.enabled:
        return [skipped("dra", "storage.fsx is off: no file system")]
    try:
        _, associations = _read_fsx(run)
    except FsxUnknown as exc:
        return [failed("dra", str(exc), "see the fix named, then run make verify again")]
    if not associations and not fsx_config.data_repository_associations:
        reason = "no data repository association (storage.fsx.data_repository_associations)"
        return [skipped("dra", reason)]
    if run.fsx is None:
        reason = "no access to the file system's files from here (the fsx check says why)"
        return [skipped("dra", reason)]
    results = []
    deployed = {str(a.get("FileSystemPath")) for a in associations}
    for wanted in fsx_config.data_repository_associations:
        if wanted.file_system_path not in deployed:
            results.append(
                failed(
                    "dra",
                    "in the config but not deployed",
                    "deploy it: make deploy CONFIG=<this file> (the data-repositories stack)",
                    subject=wanted.file_system_path,
                )
            )
    for association in associations:
        results.append(_check_one(run, _dra(association)))
    return results


def _check_one(run: VerifyRun, dra: _Dra) -> Result:
    subject = dra.file_system_path
    if dra.lifecycle != "AVAILABLE":
        return failed(
            "dra",
            f"association is {dra.lifecycle}" + (f": {dra.failure}" if dra.failure else ""),
            "see aws fsx describe-data-repository-associations --region "
            f"{run.config.region}; fix the bucket's access or recreate the association",
            subject=subject,
        )
    started = run.clock()
    deadline = started + BUDGET_SECONDS["dra"]
    _register_fsx_dir(run, dra.fs_dir(run.run_id))
    try:
        imported, how_in = _import(run, dra, started + BUDGET_SECONDS["dra"] / 2)
        exported, how_out = _export(run, dra, deadline)
    except _DraFailed as exc:
        return failed("dra", exc.detail, exc.fix, subject=subject)
    except Exception as exc:
        if unavailable_reason(exc) is not None:
            raise
        if is_client_error(exc):
            clients = [run.clients("s3"), run.clients("fsx")]
            return failed(
                "dra", describe_error(exc, clients), _access_fix(dra, exc), subject=subject
            )
        return failed(
            "dra",
            f"a file call on the file system failed: {one_line(str(exc))}",
            "check that the file system is mounted (the fsx check), then run make verify again",
            subject=subject,
        )
    return passed(
        "dra",
        f"S3 -> FSx in {imported:.0f} s ({how_in}), FSx -> S3 in {exported:.0f} s ({how_out}) "
        f"via s3://{dra.bucket}/{dra.prefix}",
        subject=subject,
        import_seconds=round(imported, 1),
        export_seconds=round(exported, 1),
    )


def _access_fix(dra: _Dra, exc: BaseException) -> str:
    action = str(getattr(exc, "operation_name", ""))
    if action.endswith("Object") or action.startswith("ListObjects"):
        return (
            f"grant the caller s3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket on "
            f"s3://{dra.bucket}/{dra.prefix}{VERIFY_DIR}/* (and kms:GenerateDataKey, "
            "kms:Decrypt on the bucket's key, if it has one)"
        )
    return (
        "grant the caller fsx:CreateDataRepositoryTask, fsx:DescribeDataRepositoryTasks and "
        "fsx:CancelDataRepositoryTask; a task already running on the file system must end first"
    )


def _remaining(run: VerifyRun, deadline: float) -> float:
    return max(1.0, min(FSX_CALL_SECONDS, deadline - run.clock()))


def _poll(run: VerifyRun, deadline: float, probe: Callable[[], T | None]) -> T | None:
    """``probe()`` every POLL_SECONDS until it gives a value; None at the deadline."""
    while True:
        value = probe()
        if value is not None:
            return value
        left = deadline - run.clock()
        if left <= 0:
            return None
        run.sleep(min(POLL_SECONDS, left))


def _import(run: VerifyRun, dra: _Dra, deadline: float) -> tuple[float, str]:
    """Put a file in S3 under the association's prefix and read it on the file system."""
    assert run.fsx is not None
    fsx_files = run.fsx
    s3 = run.clients("s3")
    started = run.clock()
    data = _payload("import", run.run_id)
    s3.put_object(Bucket=dra.bucket, Key=dra.key(run.run_id, "import.txt"), Body=data)
    _register_s3_prefix(run, dra)
    path = f"{dra.fs_dir(run.run_id)}/import.txt"
    if NEW_EVENT in dra.auto_import:
        how = "auto import"
    else:
        how = "import task"
        _run_task(
            run,
            dra,
            "IMPORT_METADATA_FROM_REPOSITORY",
            f"s3://{dra.bucket}/{dra.key(run.run_id)}",
            deadline,
        )
    seen = _poll(run, deadline, lambda: fsx_files.read(path, _remaining(run, deadline)))
    elapsed = run.clock() - started
    if seen is None:
        raise _DraFailed(
            f"s3://{dra.bucket}/{dra.key(run.run_id, 'import.txt')} did not appear at {path} "
            f"within {elapsed:.0f} s ({how})",
            "check the association's auto import events and its Lifecycle (aws fsx "
            "describe-data-repository-associations), and that the bucket sends its events to FSx",
        )
    if seen != data:
        raise _DraFailed(
            f"{path} does not hold what was put in S3 ({len(seen)} bytes, expected {len(data)})",
            "another writer changed the file, or the import is stale; run make verify again",
        )
    return elapsed, how


def _export(run: VerifyRun, dra: _Dra, deadline: float) -> tuple[float, str]:
    """Write a file on the file system and read it from S3."""
    assert run.fsx is not None
    s3 = run.clients("s3")
    started = run.clock()
    data = _payload("export", run.run_id)
    path = f"{dra.fs_dir(run.run_id)}/export.txt"
    key = dra.key(run.run_id, "export.txt")
    run.fsx.write(path, data, _remaining(run, deadline))
    if NEW_EVENT in dra.auto_export:
        how = "auto export"
        arrived = _poll(run, deadline, lambda: _head(s3, dra.bucket, key))
    else:
        how = "export task"
        _run_task(run, dra, "EXPORT_TO_REPOSITORY", path.lstrip("/"), deadline)
        arrived = _head(s3, dra.bucket, key)
    elapsed = run.clock() - started
    if arrived is None:
        raise _DraFailed(
            f"{path} did not reach s3://{dra.bucket}/{key} within {elapsed:.0f} s ({how})",
            "check the association's auto export events and its Lifecycle (aws fsx "
            "describe-data-repository-associations), and the file system role's access to the "
            "bucket",
        )
    body = s3.get_object(Bucket=dra.bucket, Key=key)["Body"].read()
    if body != data:
        raise _DraFailed(
            f"s3://{dra.bucket}/{key} does not hold what was written on FSx ({len(body)} bytes, "
            f"expected {len(data)})",
            "another writer changed the object; run make verify again",
        )
    return elapsed, how


def _head(s3: Any, bucket: str, key: str) -> bool | None:
    """True when the object exists, None when not yet (HeadObject answers 404 with no body)."""
    answer = call_or_none(s3.head_object, ["404", "NoSuchKey", "NotFound"], Bucket=bucket, Key=key)
    return None if answer is None else True


def _run_task(run: VerifyRun, dra: _Dra, kind: str, path: str, deadline: float) -> None:
    """Create a data repository task for ``path`` (tagged with the run id; no completion report)
    and wait for it to end; registered to be cancelled if it is still running at the end."""
    fsx = run.clients("fsx")
    task = fsx.create_data_repository_task(
        Type=kind,
        Paths=[path],
        FileSystemId=dra.file_system_id,
        Report={"Enabled": False},
        Tags=[{"Key": RUN_LABEL, "Value": run.run_id}],
    )["DataRepositoryTask"]
    task_id = str(task["TaskId"])
    region = run.config.region
    run.created(
        f"FSx data repository task {task_id} ({kind})",
        _task_canceller(fsx, task_id),
        f"aws fsx cancel-data-repository-task --task-id {task_id} --region {region}",
    )

    def ended() -> dict[str, Any] | None:
        (found,) = fsx.describe_data_repository_tasks(TaskIds=[task_id])["DataRepositoryTasks"]
        return None if found.get("Lifecycle") in TASK_RUNNING else dict(found)

    final = _poll(run, deadline, ended)
    if final is None:
        raise _DraFailed(
            f"{kind} task {task_id} for {path} did not end in time",
            f"see it: aws fsx describe-data-repository-tasks --task-ids {task_id} --region "
            f"{region}; tasks of other runs or users queue before it",
        )
    if final.get("Lifecycle") != "SUCCEEDED":
        reason = final.get("FailureDetails", {}).get("Message") or "no reason given"
        raise _DraFailed(
            f"{kind} task {task_id} for {path} is {final.get('Lifecycle')}: {one_line(reason)}",
            f"see it: aws fsx describe-data-repository-tasks --task-ids {task_id} --region "
            f"{region}; the file system's role needs access to s3://{dra.bucket}/{dra.prefix}",
        )


def _task_canceller(fsx: Any, task_id: str) -> Callable[[], None]:
    """Cancels a data repository task; one that has ended already is fine."""

    def cancel() -> None:
        call_or_none(fsx.cancel_data_repository_task, TASK_ENDED_CODES, TaskId=task_id)

    return cancel


def _delete_prefix(s3: Any, bucket: str, prefix: str) -> None:
    """Delete every object under ``prefix``: the test files and the folder objects an export
    writes. Done directly, whatever the association's auto export events: without DELETED, the
    removal of the FSx folder would not reach S3."""
    for item in paginate(s3, "list_objects_v2", "Contents", Bucket=bucket, Prefix=prefix):
        s3.delete_object(Bucket=bucket, Key=item["Key"])


def _register_s3_prefix(run: VerifyRun, dra: _Dra) -> None:
    item = _s3_prefix(run, run.clients("s3"), dra)
    run.created(item.what, item.remove, item.by_hand)


def _fsx_by_hand(run: VerifyRun, path: str) -> str:
    if run.config.is_slurm:
        where = f"{run.config.storage.fsx.mount_path.rstrip('/')}{path}"
        return f"rm -rf {where} on a node that mounts the file system"
    return f"rm -rf <mount point>{path} in a pod that mounts the file system"


def _fsx_remover(run: VerifyRun, path: str) -> Created:
    fsx_files = run.fsx
    assert fsx_files is not None
    return Created(
        f"FSx folder {path}",
        lambda: fsx_files.remove(path, FSX_CALL_SECONDS),
        _fsx_by_hand(run, path),
    )


def _register_fsx_dir(run: VerifyRun, path: str) -> None:
    item = _fsx_remover(run, path)
    run.created(item.what, item.remove, item.by_hand)


# -- a crashed run's leftovers ------------------------------------------------------------------


def leftovers(run: VerifyRun) -> list[Created]:
    """What a crashed run with ``run.run_id`` left: its S3 test objects under every association's
    prefix, its data repository tasks still running, and (when ``run.fsx`` is set) its FSx
    folders: ``/<VERIFY_DIR>/<run_id>`` and each association's ``<path>/<VERIFY_DIR>/<run_id>``."""
    if not run.config.storage.fsx.enabled:
        return []
    try:
        file_system, associations = _read_fsx(run)
    except FsxUnknown as exc:
        reason = str(exc)

        def unknown() -> None:
            raise FsxUnknown(reason)

        return [
            Created(
                f"FSx test files of run {run.run_id}",
                unknown,
                f"remove {VERIFY_DIR}/{run.run_id} under each DRA prefix in S3 and on the file "
                "system",
            )
        ]
    dras = [_dra(a) for a in associations]
    found = _s3_leftovers(run, dras)
    found += _task_leftovers(run, str(file_system.get("FileSystemId")))
    if run.fsx is not None:
        paths = [_run_dir("/", run.run_id)] + [d.fs_dir(run.run_id) for d in dras]
        found += [_fsx_remover(run, path) for path in dict.fromkeys(paths)]
    return found


def _s3_leftovers(run: VerifyRun, dras: list[_Dra]) -> list[Created]:
    """The run's S3 objects under each association's prefix; a prefix that cannot be listed is
    one item whose removal lists and deletes again (and fails with the reason)."""
    s3 = run.clients("s3")
    found = []
    for dra in dras:
        prefix = dra.key(run.run_id)
        try:
            keys = [
                str(item["Key"])
                for item in paginate(
                    s3, "list_objects_v2", "Contents", Bucket=dra.bucket, Prefix=prefix
                )
            ]
        except Exception as exc:
            if unavailable_reason(exc) is not None or not is_client_error(exc):
                raise
            found.append(_s3_prefix(run, s3, dra))
            continue
        found += [_s3_object(run, s3, dra.bucket, key) for key in keys]
    return found


def _s3_prefix(run: VerifyRun, s3: Any, dra: _Dra) -> Created:
    """Every object under the run's folder of ``dra``'s prefix, removed together."""
    prefix = dra.key(run.run_id)
    return Created(
        f"S3 objects under s3://{dra.bucket}/{prefix}",
        lambda: _delete_prefix(s3, dra.bucket, prefix),
        f"aws s3 rm s3://{dra.bucket}/{prefix} --recursive --region {run.config.region}",
    )


def _s3_object(run: VerifyRun, s3: Any, bucket: str, key: str) -> Created:
    return Created(
        f"S3 object s3://{bucket}/{key}",
        lambda: s3.delete_object(Bucket=bucket, Key=key),
        f"aws s3 rm s3://{bucket}/{key} --region {run.config.region}",
    )


def _running_tasks(fsx: Any, file_system_id: str) -> Iterator[dict[str, Any]]:
    params: dict[str, Any] = {
        "Filters": [
            {"Name": "file-system-id", "Values": [file_system_id]},
            {"Name": "task-lifecycle", "Values": list(TASK_RUNNING)},
        ]
    }
    while True:
        answer = fsx.describe_data_repository_tasks(**params)
        yield from answer.get("DataRepositoryTasks", [])
        if not answer.get("NextToken"):
            return
        params["NextToken"] = answer["NextToken"]


def _run_tasks(fsx: Any, file_system_id: str, run_id: str) -> list[dict[str, Any]]:
    """The running data repository tasks tagged with ``run_id``."""
    return [
        task
        for task in _running_tasks(fsx, file_system_id)
        if {t.get("Key"): t.get("Value") for t in task.get("Tags", [])}.get(RUN_LABEL) == run_id
    ]


def _task_leftovers(run: VerifyRun, file_system_id: str) -> list[Created]:
    """The run's data repository tasks still running; when they cannot be listed, one item whose
    removal lists and cancels them again (and fails with the reason)."""
    fsx = run.clients("fsx")
    region = run.config.region
    try:
        tasks = _run_tasks(fsx, file_system_id, run.run_id)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise

        def cancel_all() -> None:
            for task in _run_tasks(fsx, file_system_id, run.run_id):
                _task_canceller(fsx, str(task["TaskId"]))()

        return [
            Created(
                f"FSx data repository tasks of run {run.run_id}",
                cancel_all,
                f"aws fsx describe-data-repository-tasks --region {region}, then aws fsx "
                "cancel-data-repository-task --task-id ID for each tagged "
                f"{RUN_LABEL}={run.run_id}",
            )
        ]
    return [
        Created(
            f"FSx data repository task {task['TaskId']} ({task.get('Type')})",
            _task_canceller(fsx, str(task["TaskId"])),
            f"aws fsx cancel-data-repository-task --task-id {task['TaskId']} --region {region}",
        )
        for task in tasks
    ]


CHECKS: dict[str, Check] = {"cluster": check_cluster, "health": check_health, "dra": check_dra}
"""The checks of this module, by name (the runner's table)."""

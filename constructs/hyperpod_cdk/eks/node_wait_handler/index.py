"""Custom resource handler: wait until a HyperPod cluster has Running nodes in some instance groups.

Runs under CDK's custom-resource provider framework (``aws_cdk.custom_resources.Provider``):

- ``on_event`` answers Create, Update and Delete at once. For Create and Update it returns the
  deadline of the wait in ``Data``; the framework merges that answer into the event it then
  passes to ``is_complete`` on every poll, so each poll reads the same deadline.
- ``is_complete`` counts the nodes of the wanted groups (``sagemaker:ListClusterNodes``) and is
  complete once ``MinNodes`` of them are Running. Past the deadline it raises one readable line,
  which CloudFormation shows as the resource's failure reason; it raises before the framework's
  own total timeout, whose message ("Operation timed out") says nothing.

Resource properties (CloudFormation passes numbers as strings): ``ClusterArn``,
``InstanceGroups`` (list of names), ``MinNodes``, ``TimeoutSeconds``.

boto3 only (it is part of the Lambda Python runtime); everything else is the standard library.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import (  # type: ignore[import-untyped]
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
)

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

RUNNING = "Running"
PAGE_SIZE = 100
# AWS error codes of a throttled call: the next poll tries again
THROTTLING_CODES = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
)
# the failure reason travels in CloudFormation's 4 KiB response, with the framework's additions
MAX_MESSAGE = 1500
MAX_FAILURE_DETAIL = 200
MAX_GROUPS_TEXT = 300
# a physical id of up to this many characters is readable; a longer one is hashed
MAX_READABLE_ID = 256

Event = dict[str, Any]


class NodeWaitTimeout(Exception):
    """Not enough Running nodes by the deadline; the message is the stack's failure reason."""


@functools.cache
def sagemaker_client(region: str) -> Any:
    """The SageMaker client of ``region``: short timeouts, a few retries (polls come again)."""
    config = Config(
        connect_timeout=10, read_timeout=30, retries={"mode": "standard", "max_attempts": 3}
    )
    return boto3.client("sagemaker", region_name=region, config=config)


def on_event(event: Event, context: Any) -> Event:
    """Create/Update: start the wait (a physical id and the deadline). Delete: nothing to do."""
    properties = event["ResourceProperties"]
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    deadline = int(time.time()) + int(properties["TimeoutSeconds"])
    return {
        "PhysicalResourceId": physical_id(properties["ClusterArn"], properties["InstanceGroups"]),
        "Data": {"Deadline": deadline},
    }


def is_complete(event: Event, context: Any) -> Event:
    """Complete once ``MinNodes`` nodes of the wanted groups are Running; raise past the deadline."""
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    properties = event["ResourceProperties"]
    cluster_arn: str = properties["ClusterArn"]
    groups: list[str] = list(properties["InstanceGroups"])
    min_nodes = int(properties["MinNodes"])
    deadline = float(event["Data"]["Deadline"])

    nodes = list_nodes(cluster_arn, groups)
    if nodes is not None:
        LOG.info(
            "%s: %d of %d Running: %s", cluster_arn, nodes.running(), min_nodes, nodes.summary()
        )
        if nodes.running() >= min_nodes:
            return {"IsComplete": True}
    now = time.time()
    if now >= deadline:
        waited = now - (deadline - int(properties["TimeoutSeconds"]))
        raise NodeWaitTimeout(timeout_message(cluster_arn, groups, min_nodes, waited, nodes))
    return {"IsComplete": False}


def physical_id(cluster_arn: str, groups: list[str]) -> str:
    """The same id for the same cluster and set of groups (a change of either replaces the wait;
    the Delete of the old one does nothing)."""
    readable = f"{cluster_arn}/nodes:{','.join(sorted(set(groups)))}"
    if len(readable) <= MAX_READABLE_ID:
        return readable
    digest = hashlib.sha256(readable.encode()).hexdigest()[:16]
    return f"{cluster_arn}/nodes:{digest}"


@dataclass
class Nodes:
    """The nodes of the wanted groups: counts by status, and a Failure message per group."""

    counts: dict[str, Counter[str]]
    failures: dict[str, str] = field(default_factory=dict)

    def running(self) -> int:
        return sum(by_status[RUNNING] for by_status in self.counts.values())

    def summary(self) -> str:
        """``gpu: 0 Running, 2 Pending, 1 Failure; cpu: 0 Running (no nodes)``."""
        parts = []
        for group, by_status in self.counts.items():
            others = [f"{n} {status}" for status, n in by_status.most_common() if status != RUNNING]
            if not others and not by_status[RUNNING]:
                parts.append(f"{group}: 0 Running (no nodes)")
            else:
                parts.append(", ".join([f"{group}: {by_status[RUNNING]} Running", *others]))
        return "; ".join(parts)


def list_nodes(cluster_arn: str, groups: list[str]) -> Nodes | None:
    """The nodes of the wanted groups; None when ListClusterNodes was throttled.

    :raises RuntimeError: for any other AWS error (no permission, no such cluster, no route to
        the SageMaker API), which no later poll would fix.
    """
    client = sagemaker_client(cluster_arn.split(":")[3])
    nodes = Nodes({group: Counter() for group in groups})
    request: dict[str, Any] = {"ClusterName": cluster_arn, "MaxResults": PAGE_SIZE}
    while True:
        try:
            page = client.list_cluster_nodes(**request)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in THROTTLING_CODES:
                LOG.warning("ListClusterNodes of %s throttled (%s); next poll", cluster_arn, code)
                return None
            raise RuntimeError(
                f"ListClusterNodes of {cluster_arn} failed: {_one_line(error)}"
            ) from error
        except (EndpointConnectionError, ConnectTimeoutError) as error:
            raise RuntimeError(
                f"cannot reach the SageMaker API to list the nodes of {cluster_arn}"
                f" ({_one_line(error)}); "
                "in a VPC the function's subnets need a NAT route or a sagemaker.api endpoint "
                "that its security groups reach over HTTPS"
            ) from error
        for node in page.get("ClusterNodeSummaries", []):
            group = node.get("InstanceGroupName", "")
            if group not in nodes.counts:
                continue
            status = node.get("InstanceStatus", {})
            nodes.counts[group][status.get("Status", "Unknown")] += 1
            if status.get("Status") == "Failure":
                # one line: HyperPod's message may span several
                message = " ".join(str(status.get("Message", "")).split())
                nodes.failures.setdefault(group, f"{node.get('InstanceId', '?')}: {message}")
        token = page.get("NextToken")
        if not token:
            return nodes
        request["NextToken"] = token


def _one_line(error: object) -> str:
    """An error's text on one line (the stack's failure reason)."""
    return " ".join(str(error).split())


def _duration(seconds: float) -> str:
    return f"{round(seconds)} s" if seconds < 120 else f"{round(seconds / 60)} min"


def timeout_message(
    cluster_arn: str, groups: list[str], min_nodes: int, waited: float, nodes: Nodes | None
) -> str:
    """The one-line failure reason: what was waited for, what there is, and what to do."""
    wanted = "no Running node" if min_nodes == 1 else f"fewer than {min_nodes} Running nodes"
    found = nodes.summary() if nodes is not None else "ListClusterNodes was throttled"
    if nodes is not None and nodes.failures:
        first = "; ".join(f"{group} {detail}" for group, detail in nodes.failures.items())
        found += f" (first Failure: {_shorten(first, MAX_FAILURE_DETAIL)})"
    head = (
        f"HyperPod cluster {cluster_arn} has {wanted} in instance group(s) "
        f"{_shorten(', '.join(groups), MAX_GROUPS_TEXT)} after waiting {_duration(waited)}: "
    )
    tail = (
        ". `make status CONFIG=<your config>` shows the nodes and why they are not Running. The "
        "EKS add-ons of this stack are created on the next deploy once a node is Running; or give "
        "one of these groups a count (or min_count) above 0 in cluster.instance_groups."
    )
    return head + _shorten(found, MAX_MESSAGE - len(head) - len(tail)) + tail


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."

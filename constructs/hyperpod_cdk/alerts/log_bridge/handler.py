"""Lambda function: the health monitoring agent's faults, from the cluster's log group to SNS.

On Slurm, a GPU fault that HyperPod's health monitoring agent finds produces no EventBridge
event; the agent writes it to the cluster's log group. A CloudWatch Logs subscription filter on
that group invokes this function with the matching log events; it publishes one SNS message per
fault, worded like the EventBridge alerts: cluster, group, instance, what happened, what to do.

Facts (read 2026-11-25):

=============================================  ===============================================
Fact                                           Source
=============================================  ===============================================
Log group ``/aws/sagemaker/Clusters/<cluster   SageMaker developer guide, "SageMaker HyperPod
name>/<cluster id>``; the agent's detections   health-monitoring agent" (docs.aws.amazon.com/
are log streams ``SagemakerHealthMonitoring    sagemaker/latest/dg/sagemaker-hyperpod-eks-
Agent`` per node                               resiliency-health-monitoring-agent.html); the
                                               stream name ``SagemakerHealthMonitoringAgent/
                                               <group>/<instance id>`` from AWS's runbooks
                                               (read 2026-11-24)
A detection is one JSON line: ``level``,       same page, its log example (CloudWatch Logs
``ts``, ``msg``, ``"details: "`` (key with     Insights query ``filter @message like
a colon and a space) holding ``severity``,     /HealthMonitoringAgentDetectionEvent/``)
``timestamp``, ``reason``, ``message`` ("Node
condition NvidiaErrorReboot is now: True,
reason: XidHardwareFailure, message: ..."),
and ``"HealthMonitoringAgentDetectionEvent":
"HealthEvent"``
The subscription envelope: base64 of gzip of   CloudWatch Logs user guide, "Real-time
JSON ``{messageType: DATA_MESSAGE |            processing of log data with subscriptions"
CONTROL_MESSAGE, owner, logGroup, logStream,   (Lambda example: ``event["awslogs"]["data"]``)
subscriptionFilters, logEvents[{id,
timestamp, message}]}``
On Slurm the agent also writes two other       AWS's own Slurm bridge (INFERRED: a sample,
shapes: a DCGM policy violation ``{"msg":      not a format reference): awslabs/awsome-
"DCGM Policy Violation found ", "condition:    distributed-ai@95b939cd (2026-07-23)
":"XID Error","data: ":{"ErrNum":79}, ...}``   1.architectures/5.sagemaker-hyperpod/tools/
(keys with a colon and a space; "live-         devops-agent/deploy/lambda/hma_cw_bridge.py
verified 2026-07-20") and an NPD transition    (its docstring and ``_extract_fault``), which
``{"msg":"NPD caught positive condition",      maps both to repair action Replace
"condition details":{"type":...,"status":
"True","message":...}, ...}``
SNS ``Subject``: at most 100 printable ASCII   SNS API reference, ``Publish``
characters, no line breaks
=============================================  ===============================================

The line formats are documented by example only, so the parsing is conservative: a line is a
fault when it carries the detection marker and its node condition is not reported back to
``False``; everything else (the agent's own info lines, a condition that cleared, text that is
not JSON) is skipped. Each shape gives what it has: the EKS shape a node condition whose name
says the repair (``...Reboot`` / ``...Replace``), the Slurm shapes a condition (``XID Error``,
or the NPD type) and, for an Xid, its number (``data: .ErrNum``), so the alert says which Xid;
a Slurm fault whose condition names no repair is reported with AWS's bridge's Replace. The instance and the group come from the stream name, the cluster from
the log group name, so an unexpected line still yields a readable alert.

The log group does not exist until nodes log (under Continuous provisioning, later than the
cluster's creation). Recommendation for the construct: make sure the group exists with a
create-if-absent custom resource (``logs:CreateLogGroup`` with ``ResourceAlreadyExistsException``
ignored; ``PutRetentionPolicy`` with the project's retention, which applies whether HyperPod or
the stack made the group; the group is never deleted by the stack, as HyperPod owns its
contents) and add the ``AWS::Logs::SubscriptionFilter`` after it. Reasons: creating the group as
an ``AWS::Logs::LogGroup`` fails the deploy whenever HyperPod made it first (the cluster resource
completes after nodes have logged) and would delete HyperPod's logs with the stack; subscribing
"once it appears" needs a second moving part (a rule on ``CreateLogGroup`` through CloudTrail or
a poller) and loses the faults of the first nodes. The filter pattern is
:data:`FILTER_PATTERN` (one term: only detections invoke the function; a subscription cannot
select streams, so the stream prefix is checked here).

Errors: a malformed envelope raises :class:`MalformedLogEnvelope`; an SNS error propagates.
Both make the asynchronous invocation fail, so Lambda retries it and then hands it to the
dead-letter queue the construct attaches; nothing is lost in silence.

Environment: ``TOPIC_ARN`` (required). boto3 only (part of the Lambda Python runtime).
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Final

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

LOG_GROUP_PREFIX: Final = "/aws/sagemaker/Clusters/"
STREAM_PREFIX: Final = "SagemakerHealthMonitoringAgent/"
DETECTION_MARKER: Final = "HealthMonitoringAgentDetectionEvent"
#: the subscription filter's pattern: a term every detection line carries
FILTER_PATTERN: Final = DETECTION_MARKER
MAX_SUBJECT: Final = 100
MAX_MESSAGE_FIELD: Final = 2000
#: the Slurm shapes' keys, as the agent writes them (a colon and a space inside some)
SLURM_CONDITION_KEYS: Final = ("condition: ", "condition")
SLURM_DATA_KEYS: Final = ("data: ", "data")
NPD_CONDITION_KEY: Final = "condition details"
#: what a Slurm fault whose condition names no repair is reported with: AWS's own Slurm bridge
#: maps DCGM policy violations and NPD conditions to Replace (INFERRED, see the facts table)
SLURM_DEFAULT_REPAIR: Final = "Replace"

_CONDITION = re.compile(r"Node condition (?P<condition>\w+) is now: (?P<state>\w+)")
_XID = re.compile(r"Xid \([^)]*\): (?P<xid>\d+)")
_INSTANCE = re.compile(r"i-[0-9a-f]{8,17}")

Event = dict[str, Any]


class MalformedLogEnvelope(ValueError):
    """The invocation is not a CloudWatch Logs subscription envelope."""


def log_group_name(cluster_name: str, cluster_id: str) -> str:
    """The log group HyperPod writes a cluster's node logs to:
    ``/aws/sagemaker/Clusters/<cluster name>/<cluster id>`` (the id is the last part of the
    cluster ARN)."""
    return f"{LOG_GROUP_PREFIX}{cluster_name}/{cluster_id}"


@dataclass(frozen=True)
class Fault:
    """One fault the agent reported, with where it happened."""

    cluster: str
    group: str
    instance: str
    reason: str
    condition: str
    severity: str
    detail: str
    time: str
    #: the repair when the condition's name does not say it (Slurm shapes)
    default_action: str = ""

    def repair_action(self) -> str:
        """What HyperPod does, read from the node condition's name (``...Reboot`` /
        ``...Terminate`` or ``...Replace``); else the shape's default, else ``Unknown``."""
        if self.condition.endswith("Reboot"):
            return "Reboot"
        if self.condition.endswith(("Terminate", "Replace")):
            return "Replace"
        return self.default_action or "Unknown"

    def subject(self) -> str:
        text = f"HyperPod {self.cluster}: {self.reason or 'fault'} on {self.instance}"
        return _subject(text)

    def message(self) -> str:
        action = self.repair_action()
        todo = {
            "Reboot": "with automatic node recovery HyperPod reboots the node; without it, run"
            f" aws sagemaker batch-reboot-cluster-nodes --cluster-name {self.cluster}"
            f" --node-ids {self.instance}",
            "Replace": "with automatic node recovery HyperPod replaces the node; without it, run"
            f" aws sagemaker batch-replace-cluster-nodes --cluster-name {self.cluster}"
            f" --node-ids {self.instance}",
        }.get(
            action,
            f"read the node's log stream {STREAM_PREFIX}{self.group}/{self.instance} and"
            " decide whether to reboot or replace it",
        )
        lines = [
            f"HyperPod cluster {self.cluster}: the health monitoring agent found a fault",
            f"What happened: {self.reason or 'unspecified'}"
            + (f" (node condition {self.condition})" if self.condition else ""),
            f"Detail: {self.detail[:MAX_MESSAGE_FIELD]}",
            f"Instance group: {self.group}",
            f"Instance: {self.instance}",
            f"Severity: {self.severity or 'unspecified'}",
            f"When: {self.time}",
            f"Repair action: {action}",
            f"What to do: {todo}.",
        ]
        return "\n".join(lines)


def handler(event: Event, context: Any) -> dict[str, int]:
    """Publish one SNS message per fault in the subscription envelope ``event``.

    :returns: ``{"faults": n, "published": n}`` (CONTROL_MESSAGE and other streams: 0).
    :raises MalformedLogEnvelope: the envelope cannot be decoded.
    :raises botocore.exceptions.ClientError: SNS refused a message (Lambda retries, then the
        dead-letter queue).
    """
    data = decode(event)
    if data["messageType"] == "CONTROL_MESSAGE":
        LOG.info("control message for %s: ignored", data.get("logGroup"))
        return {"faults": 0, "published": 0}
    faults = faults_in(data)
    if faults:
        topic_arn = os.environ["TOPIC_ARN"]
        client = sns_client()
        for fault in faults:
            client.publish(TopicArn=topic_arn, Subject=fault.subject(), Message=fault.message())
            LOG.info("published %s on %s (%s)", fault.reason, fault.instance, fault.cluster)
    return {"faults": len(faults), "published": len(faults)}


@functools.cache
def sns_client() -> Any:
    """The SNS client of the function's region (imported here: the module's helpers work
    without boto3)."""
    import boto3  # type: ignore[import-untyped]

    return boto3.client("sns")


def decode(event: Event) -> dict[str, Any]:
    """The subscription payload: ``event["awslogs"]["data"]`` is base64 of gzip of JSON.

    :raises MalformedLogEnvelope: any layer is missing or broken (the message names which).
    """
    try:
        encoded = event["awslogs"]["data"]
    except (KeyError, TypeError) as error:
        raise MalformedLogEnvelope(
            "not a CloudWatch Logs subscription event: no awslogs.data"
        ) from error
    try:
        compressed = base64.b64decode(encoded, validate=True)
    except (binascii.Error, TypeError, ValueError) as error:
        raise MalformedLogEnvelope(f"awslogs.data is not base64: {error}") from error
    try:
        raw = gzip.decompress(compressed)
    except (OSError, EOFError) as error:
        raise MalformedLogEnvelope(f"awslogs.data is not gzip: {error}") from error
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MalformedLogEnvelope(f"awslogs.data is not JSON: {error}") from error
    if not isinstance(data, dict) or data.get("messageType") not in (
        "DATA_MESSAGE",
        "CONTROL_MESSAGE",
    ):
        raise MalformedLogEnvelope(
            "awslogs.data has no messageType DATA_MESSAGE or CONTROL_MESSAGE"
        )
    if data["messageType"] == "DATA_MESSAGE":
        missing = [k for k in ("logGroup", "logStream", "logEvents") if k not in data]
        if missing or not isinstance(data["logEvents"], list):
            raise MalformedLogEnvelope(f"DATA_MESSAGE without {missing or ['logEvents list']}")
    return data


def faults_in(data: dict[str, Any]) -> list[Fault]:
    """The faults of a DATA_MESSAGE (none when the stream is not the agent's)."""
    stream: str = data["logStream"]
    if not stream.startswith(STREAM_PREFIX):
        LOG.info("stream %s is not the health monitoring agent's: skipped", stream)
        return []
    cluster = cluster_of(data["logGroup"])
    group, instance = node_of(stream)
    faults = []
    for log_event in data["logEvents"]:
        message = log_event.get("message", "") if isinstance(log_event, dict) else ""
        fault = parse_line(message, cluster=cluster, group=group, instance=instance)
        if fault is not None:
            faults.append(fault)
    return faults


def cluster_of(log_group: str) -> str:
    """The cluster name of ``/aws/sagemaker/Clusters/<name>/<id>`` (the group itself when it
    has another shape)."""
    if log_group.startswith(LOG_GROUP_PREFIX):
        parts = log_group[len(LOG_GROUP_PREFIX) :].split("/")
        if parts and parts[0]:
            return parts[0]
    return log_group


def node_of(stream: str) -> tuple[str, str]:
    """(group, instance) of ``SagemakerHealthMonitoringAgent/<group>/<instance>``; a part the
    name lacks is ``unknown``."""
    parts = stream[len(STREAM_PREFIX) :].split("/")
    instance = next((p for p in reversed(parts) if _INSTANCE.fullmatch(p)), "unknown")
    group = parts[0] if len(parts) >= 2 and parts[0] else "unknown"
    return group, instance


def parse_line(message: str, *, cluster: str, group: str, instance: str) -> Fault | None:
    """The fault a log line reports, or None for any other line."""
    if DETECTION_MARKER not in message:
        return None
    try:
        record = json.loads(message)
    except json.JSONDecodeError:
        LOG.warning("a detection line that is not JSON: %.200s", message)
        return None
    if not isinstance(record, dict) or DETECTION_MARKER not in record:
        return None
    where = {"cluster": cluster, "group": group, "instance": instance}
    if _first(record, SLURM_CONDITION_KEYS) is not None:
        return _dcgm_violation(record, **where)
    if isinstance(record.get(NPD_CONDITION_KEY), dict):
        return _npd_condition(record, **where)
    details = record.get("details: ", record.get("details", {}))
    if not isinstance(details, dict):
        details = {}
    detail = str(details.get("message", record.get("msg", "")))
    condition, state = "", "True"
    found = _CONDITION.search(detail)
    if found:
        condition, state = found.group("condition"), found.group("state")
    if state != "True":
        return None  # the condition cleared: the node is healthy again
    return Fault(
        **where,
        reason=_with_xid(str(details.get("reason", "")), detail),
        condition=condition,
        severity=str(details.get("severity", record.get("level", ""))),
        detail=detail,
        time=str(details.get("timestamp", record.get("ts", ""))),
    )


def _dcgm_violation(record: dict[str, Any], *, cluster: str, group: str, instance: str) -> Fault:
    """Slurm: ``"condition: ":"XID Error","data: ":{"ErrNum":79}`` (a DCGM policy violation)."""
    condition = str(_first(record, SLURM_CONDITION_KEYS)).strip()
    data = _first(record, SLURM_DATA_KEYS)
    number = data.get("ErrNum") if isinstance(data, dict) else None
    reason = condition or str(record.get("msg", "")).strip()
    if number is not None and str(number).strip():
        label = "Xid" if "xid" in condition.lower() else "error"
        reason = f"{reason} ({label} {str(number).strip()})"
    detail = str(record.get("msg", "")).strip()
    if isinstance(data, dict) and data:
        detail = f"{detail}: {json.dumps(data, sort_keys=True)}" if detail else json.dumps(data)
    return Fault(
        cluster=cluster,
        group=group,
        instance=instance,
        reason=reason,
        condition="",
        severity=str(record.get("level", "")),
        detail=detail,
        time=str(record.get("ts", "")),
        default_action=SLURM_DEFAULT_REPAIR,
    )


def _npd_condition(
    record: dict[str, Any], *, cluster: str, group: str, instance: str
) -> Fault | None:
    """Slurm: ``"condition details":{"type":...,"status":"True","reason":...,"message":...}``."""
    details: dict[str, Any] = record[NPD_CONDITION_KEY]
    if str(details.get("status", "True")) != "True":
        return None  # the condition cleared
    condition = str(details.get("type", "")).strip()
    detail = str(details.get("message", record.get("msg", "")))
    reason = str(details.get("reason", "")).strip() or condition
    return Fault(
        cluster=cluster,
        group=group,
        instance=instance,
        reason=_with_xid(reason, detail),
        condition=condition,
        severity=str(details.get("severity", record.get("level", ""))),
        detail=detail,
        time=str(details.get("timestamp", record.get("ts", ""))),
        default_action=SLURM_DEFAULT_REPAIR,
    )


def _first(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` the record has (None when it has none)."""
    return next((record[key] for key in keys if key in record), None)


def _with_xid(reason: str, detail: str) -> str:
    """``reason`` with the Xid number a kernel message in ``detail`` names, once."""
    xid = _XID.search(detail)
    if xid and f"Xid {xid.group('xid')}" not in reason:
        return f"{reason} (Xid {xid.group('xid')})".strip()
    return reason


def _subject(text: str) -> str:
    """An SNS subject: printable ASCII, one line, at most 100 characters."""
    ascii_text = "".join(c if 32 <= ord(c) < 127 else "?" for c in text)
    return ascii_text if len(ascii_text) <= MAX_SUBJECT else ascii_text[: MAX_SUBJECT - 3] + "..."

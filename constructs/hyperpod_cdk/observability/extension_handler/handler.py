"""Custom resource handler: HyperPod's ``sagemaker-observability`` cluster extension (Slurm).

The extension has no CloudFormation type; this handler drives the SageMaker API under CDK's
provider framework (``aws_cdk.custom_resources.Provider``):

- ``on_event`` starts the change. Create calls ``CreateClusterExtension`` (the CloudFormation
  request id is the client token, so a retried request creates nothing twice); Update calls
  ``UpdateClusterExtension`` with the new version and configuration, or creates a new extension
  when the cluster or the extension name changed (CloudFormation then deletes the old one);
  Delete calls ``DeleteClusterExtension`` (an extension or cluster already gone is fine; one
  still busy is deleted by ``is_complete`` once it can be). Create and Update also set a
  deadline that ``is_complete`` reads.
- ``is_complete`` reads ``DescribeClusterExtension``: ``Active`` (at the wanted version) is
  done; ``Creating``/``Updating``/``Deleting`` poll again; ``CreateFailed``/``UpdateFailed``/
  ``DeleteFailed``/``Degraded`` fail with the service's ``Health.Issues`` codes, messages and
  node counts; past the deadline it fails with the last status read, before the framework's own
  total timeout (whose message, "Operation timed out", says nothing).

Resource properties (CloudFormation passes numbers as strings): ``ClusterArn`` (the API takes
the ARN, not the name), ``ExtensionName`` (default ``sagemaker-observability``),
``ExtensionVersion`` (``MAJOR.MINOR.PATCH``, pinned by the construct; preflight checks it with
``ListClusterExtensionVersions``), ``ConfigurationValues`` (an object, sent as the JSON string
the API takes; for the workspace the construct passes ``{"ampWorkspace": {"prometheusEndpoint":
..., "arn": ...}, "metricsProvider": {...}}``, the EKS add-on's documented shape: the API
reference documents only the ``metricsProvider`` example and validates the rest per version),
``TimeoutSeconds``.

Facts (pinned botocore 1.44.5 service model, read 2026-11-25): CreateClusterExtension needs
``ClusterArn`` and ``ExtensionName``, Continuous provisioning and a Slurm cluster; at most one
extension of a name per cluster; ``ConfigurationValues`` 1-10240 characters; status enum
Creating | Active | CreateFailed | Updating | Deleting | DeleteFailed | Degraded | UpdateFailed;
``Health.Issues[]{Code, Message, NodeCount}`` with codes InvalidConfiguration,
ConfigurationConflict, AccessDenied, ResourceNotFound, DependencyUnreachable,
ExtensionUnhealthy, InternalFailure, Other; errors ConflictException, ResourceNotFound,
ResourceInUse.

Timeout recommendation for the construct: ``Provider(query_interval=30 s, total_timeout=
60 min)`` and ``TimeoutSeconds`` = 55 min, so the handler's readable message comes first. The
extension installs on every node at once (no per-node rollout to wait for); an hour covers a
slow image pull on a large cluster and stays well under the framework's 2-hour ceiling.

boto3 only (it is part of the Lambda Python runtime); everything else is the standard library.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from typing import Any, Final

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

DEFAULT_EXTENSION: Final = "sagemaker-observability"
ACTIVE: Final = "Active"
IN_PROGRESS: Final = frozenset({"Creating", "Updating", "Deleting"})
FAILED: Final = frozenset({"CreateFailed", "UpdateFailed", "DeleteFailed", "Degraded"})
THROTTLING_CODES: Final = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
)
GONE_CODES: Final = frozenset({"ResourceNotFound", "ResourceNotFoundException"})
BUSY_CODES: Final = frozenset({"ConflictException", "ResourceInUse"})
# the failure reason travels in CloudFormation's 4 KiB response, with the framework's additions
MAX_MESSAGE: Final = 1500

Event = dict[str, Any]


class ExtensionFailed(Exception):
    """The extension reached a failed status, or the wait passed its deadline; the message is
    the stack's failure reason."""


@functools.cache
def sagemaker_client(region: str) -> Any:
    """The SageMaker client of ``region``: short timeouts, a few retries (polls come again)."""
    config = Config(
        connect_timeout=10, read_timeout=30, retries={"mode": "standard", "max_attempts": 3}
    )
    return boto3.client("sagemaker", region_name=region, config=config)


def _client(cluster_arn: str) -> Any:
    return sagemaker_client(cluster_arn.split(":")[3])


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _configuration(properties: dict[str, Any]) -> str | None:
    """``ConfigurationValues`` as the API's JSON string (None: the extension's defaults)."""
    values = properties.get("ConfigurationValues")
    if values in (None, "", {}):
        return None
    if isinstance(values, str):
        json.loads(values)  # a string must already be JSON: fail here, not in the service
        return values
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def _request(properties: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {"ClusterArn": properties["ClusterArn"]}
    if properties.get("ExtensionVersion"):
        request["ExtensionVersion"] = str(properties["ExtensionVersion"])
    configuration = _configuration(properties)
    if configuration is not None:
        request["ConfigurationValues"] = configuration
    return request


def _deadline(properties: dict[str, Any]) -> int:
    return int(time.time()) + int(properties.get("TimeoutSeconds", 55 * 60))


def on_event(event: Event, context: Any) -> Event:
    """Start the create, update or delete; see the module docstring."""
    kind = event["RequestType"]
    properties = event["ResourceProperties"]
    if kind == "Create":
        return _create(event, properties)
    if kind == "Update":
        old = event.get("OldResourceProperties", {})
        name = properties.get("ExtensionName", DEFAULT_EXTENSION)
        replaced = (
            old.get("ClusterArn") != properties["ClusterArn"]
            or old.get("ExtensionName", DEFAULT_EXTENSION) != name
        )
        if replaced:
            return _create(event, properties)
        request = _request(properties)
        request["ExtensionArn"] = event["PhysicalResourceId"]
        request["ClientToken"] = event["RequestId"][:64]
        _client(properties["ClusterArn"]).update_cluster_extension(**request)
        return {
            "PhysicalResourceId": event["PhysicalResourceId"],
            "Data": {"Deadline": _deadline(properties)},
        }
    if kind == "Delete":
        physical_id = event["PhysicalResourceId"]
        if ":extension/" not in physical_id:
            return {"PhysicalResourceId": physical_id}  # the create failed before an ARN existed
        _delete(properties["ClusterArn"], physical_id)
        return {"PhysicalResourceId": physical_id}
    raise ValueError(f"unknown RequestType {kind!r}")


def _create(event: Event, properties: dict[str, Any]) -> Event:
    name = properties.get("ExtensionName", DEFAULT_EXTENSION)
    request = _request(properties)
    request["ExtensionName"] = name
    request["ClientToken"] = event["RequestId"][:64]
    try:
        answer = _client(properties["ClusterArn"]).create_cluster_extension(**request)
    except ClientError as error:
        if _code(error) in BUSY_CODES:
            raise ExtensionFailed(
                f"the cluster {properties['ClusterArn']} cannot take extension {name}:"
                f" {error.response.get('Error', {}).get('Message', _code(error))}. If the"
                " extension is already installed (by hand or by another stack), delete it"
                " (aws sagemaker delete-cluster-extension) or switch observability off in this"
                " config; the cluster must use Continuous provisioning"
            ) from error
        raise
    arn = answer["ExtensionArn"]
    LOG.info("creating %s on %s: %s", name, properties["ClusterArn"], arn)
    return {
        "PhysicalResourceId": arn,
        "Data": {"Deadline": _deadline(properties), "ExtensionArn": arn},
    }


def _delete(cluster_arn: str, extension_arn: str) -> bool:
    """Ask for the delete; True when it started or the extension is gone, False when the
    extension is busy (``is_complete`` asks again)."""
    try:
        _client(cluster_arn).delete_cluster_extension(
            ClusterArn=cluster_arn, ExtensionArn=extension_arn
        )
    except ClientError as error:
        if _code(error) in GONE_CODES:
            return True
        if _code(error) in BUSY_CODES | THROTTLING_CODES:
            LOG.info("%s is busy (%s): the delete is retried", extension_arn, _code(error))
            return False
        raise
    return True


def is_complete(event: Event, context: Any) -> Event:
    """Complete when the extension is Active (Create/Update) or gone (Delete); raise when it
    failed or the deadline passed."""
    properties = event["ResourceProperties"]
    cluster_arn: str = properties["ClusterArn"]
    extension_arn: str = event["PhysicalResourceId"]
    deleting = event["RequestType"] == "Delete"
    if deleting and ":extension/" not in extension_arn:
        return {"IsComplete": True}
    details = describe(cluster_arn, extension_arn)
    if details is None:
        if deleting:
            return {"IsComplete": True}
        raise ExtensionFailed(f"extension {extension_arn} no longer exists on {cluster_arn}")
    if details == {}:
        return {"IsComplete": False}  # throttled: the next poll reads again
    status = details["ExtensionDetails"]["Status"]
    LOG.info("%s: %s", extension_arn, status)
    if deleting:
        if status == "DeleteFailed":
            raise ExtensionFailed(failure_message(details))
        if status != "Deleting":
            _delete(cluster_arn, extension_arn)
        return {"IsComplete": False}
    if status in FAILED:
        raise ExtensionFailed(failure_message(details))
    wanted = properties.get("ExtensionVersion")
    version = details["ExtensionDetails"].get("ExtensionVersion")
    if status == ACTIVE and (not wanted or version == str(wanted)):
        return {"IsComplete": True, "Data": {"ExtensionArn": extension_arn, "Version": version}}
    deadline = float(event.get("Data", {}).get("Deadline", time.time() + 1))
    if time.time() >= deadline:
        raise ExtensionFailed(
            f"extension {extension_arn} is still {status} (version {version}, wanted"
            f" {wanted or 'latest'}) after the wait of {properties.get('TimeoutSeconds')} s;"
            f" {failure_message(details, lead='')}"
        )
    return {"IsComplete": False}


def describe(cluster_arn: str, extension_arn: str) -> dict[str, Any] | None:
    """DescribeClusterExtension's answer; None when the extension or cluster is gone; ``{}``
    when throttled.

    :raises botocore.exceptions.ClientError: any other AWS error (no permission, ...), which no
        later poll would fix.
    """
    try:
        answer: dict[str, Any] = _client(cluster_arn).describe_cluster_extension(
            ClusterArn=cluster_arn, ExtensionArn=extension_arn
        )
    except ClientError as error:
        if _code(error) in GONE_CODES:
            return None
        if _code(error) in THROTTLING_CODES:
            return {}
        raise
    return answer


def failure_message(details: dict[str, Any], *, lead: str | None = None) -> str:
    """One line: the status, the node counts and each health issue (code, nodes, message)."""
    extension = details["ExtensionDetails"]
    nodes = details.get("NodeSummary", {})
    issues = details.get("Health", {}).get("Issues", [])
    parts = [
        f"{issue['Code']} on {issue.get('NodeCount', '?')} node(s): {issue['Message']}"
        for issue in issues
    ]
    head = (
        lead
        if lead is not None
        else f"extension {extension['ExtensionName']} {extension['ExtensionVersion']} on"
        f" {extension['ClusterArn']} is {extension['Status']}; "
    )
    counts = f"active on {nodes['ActiveCount']} of {nodes['TotalCount']} node(s); " if nodes else ""
    text = head + counts + ("; ".join(parts) if parts else "the service reported no issue")
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."

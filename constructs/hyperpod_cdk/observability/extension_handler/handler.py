"""Custom resource handler: HyperPod's ``sagemaker-observability`` cluster extension (Slurm).

The pinned aws-cdk-lib (2.275.0) has no CloudFormation type for the extension
(``AWS::SageMaker::Extension`` exists in later releases); this handler drives the SageMaker API
under CDK's provider framework (``aws_cdk.custom_resources.Provider``):

- ``on_event`` starts the change. Create calls ``CreateClusterExtension`` with only the settings
  AWS documents (:data:`DOCUMENTED`; the CloudFormation request id is the client token, so a
  request delivered twice creates nothing twice). Update calls ``UpdateClusterExtension``: the
  version only when it changed (the API moves only to a later version, so an earlier one fails at
  once), every wanted setting the extension knows (the API keeps what is omitted, so a setting
  turned off is sent as ``false``) and ``null`` for one no longer wanted; or it creates a new
  extension when the cluster or the extension name changed (CloudFormation then deletes the old
  one). Delete calls ``DeleteClusterExtension`` (an extension or cluster already gone is fine; one
  still busy is deleted by ``is_complete`` once it can be). Create and Update also set a
  deadline that ``is_complete`` reads.
- ``is_complete`` reads ``DescribeClusterExtension``: ``Creating``/``Updating``/``Deleting`` and
  ``Degraded`` (installed on some nodes, or a node reported it unhealthy: it may recover) poll
  again; ``Active`` at the wanted version then compares the wanted settings with the ones the
  extension returns (every setting with its default): a setting it returns and that differs is
  sent with ``UpdateClusterExtension`` (the service has shown it knows it), a wanted setting it
  does not return fails the resource unless the wanted value is off; when all agree it is done.
  ``CreateFailed``/``UpdateFailed``/``DeleteFailed`` fail with the service's ``Health.Issues``
  codes, messages and node counts; past the deadline it fails with the last status and issues
  read, before the framework's own total timeout (whose message, "Operation timed out", says
  nothing).

Resource properties (CloudFormation passes every scalar as a string): ``ClusterArn`` (the API
takes the ARN, not the name), ``ExtensionName`` (default ``sagemaker-observability``),
``ExtensionVersion`` (``MAJOR.MINOR.PATCH``, pinned by the construct; preflight checks it with
``ListClusterExtensionVersions``), ``ConfigurationValues`` (one JSON string, written by the
construct with ``Stack.to_json_string`` so that booleans stay booleans: a map here would reach
the handler as ``{"enabled": "true"}``), ``TimeoutSeconds``.

Facts (pinned botocore 1.44.5 service model, read 2026-11-25): CreateClusterExtension needs
``ClusterArn`` and ``ExtensionName``, Continuous provisioning and a Slurm cluster; at most one
extension of a name per cluster; ``ConfigurationValues`` 1-10240 characters, its one documented
setting ``metricsProvider.nodeMetrics.level``, unknown settings rejected per version;
UpdateClusterExtension keeps omitted settings, resets ``null`` ones, takes only a later version;
``ExtensionDetails.ConfigurationValues`` holds every setting with its default; status enum
Creating | Active | CreateFailed | Updating | Deleting | DeleteFailed | Degraded | UpdateFailed;
``Health.Issues[]{Code, Message, NodeCount}`` with codes InvalidConfiguration,
ConfigurationConflict, AccessDenied, ResourceNotFound, DependencyUnreachable,
ExtensionUnhealthy, InternalFailure, Other; errors ConflictException, ResourceNotFound,
ResourceInUse.

Timeout recommendation for the construct: ``Provider(query_interval=30 s, total_timeout=
60 min)`` and ``TimeoutSeconds`` = 55 min, so the handler's readable message comes first. The
extension installs on every node at once (no per-node rollout to wait for); an hour covers a
slow image pull on a large cluster and stays well under the framework's 2-hour ceiling.

boto3 is the Lambda runtime's; the extension API is newer than some runtimes' boto3, so the
handler fails at once, in one line naming the missing operation, when the runtime's botocore
lacks it (:func:`sagemaker_client`). Everything else is the standard library.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Final

import boto3  # type: ignore[import-untyped]
import botocore  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

DEFAULT_EXTENSION: Final = "sagemaker-observability"
ACTIVE: Final = "Active"
#: Degraded: "runs its current version and configuration on some of the cluster's nodes but not
#: all of them. Or, at least one node recently reported that the extension is unhealthy"
#: (botocore ``ExtensionDetails.Status``): a node that joins late or recovers makes it Active, so
#: it is waited for until the deadline, whose message carries the health issues
IN_PROGRESS: Final = frozenset({"Creating", "Updating", "Deleting", "Degraded"})
FAILED: Final = frozenset({"CreateFailed", "UpdateFailed", "DeleteFailed"})
THROTTLING_CODES: Final = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
)
GONE_CODES: Final = frozenset({"ResourceNotFound", "ResourceNotFoundException"})
BUSY_CODES: Final = frozenset({"ConflictException", "ResourceInUse"})
# the failure reason travels in CloudFormation's 4 KiB response, with the framework's additions
MAX_MESSAGE: Final = 1500
#: the settings AWS documents for the Slurm extension (botocore ``CreateClusterExtensionRequest.
#: ConfigurationValues`` example ``{"metricsProvider":{"nodeMetrics":{"level":"ADVANCED"}}}``):
#: sent from the start; every other setting only once the extension has returned it
DOCUMENTED: Final[frozenset[tuple[str, ...]]] = frozenset(
    {("metricsProvider", "nodeMetrics", "level")}
)
#: wanted values that mean "off": a setting the extension does not know is off already
OFF: Final = (False, None, "DISABLED")
#: the operations this handler calls, and the botocore release its tests run with
OPERATIONS: Final = (
    "CreateClusterExtension",
    "UpdateClusterExtension",
    "DeleteClusterExtension",
    "DescribeClusterExtension",
)
TESTED_BOTOCORE: Final = "1.44.5"

Event = dict[str, Any]


def one_line_errors(function: Callable[..., Event]) -> Callable[..., Event]:
    """Keep a raised error's message on one line: the provider framework makes it the stack's
    failure reason, and an AWS or HTTP error message may span several lines."""

    @functools.wraps(function)
    def wrapped(event: Event, context: Any = None) -> Event:
        try:
            return function(event, context)
        except Exception as error:
            text = str(error)
            if "\n" not in text and "\r" not in text:
                raise
            raise ExtensionFailed(" ".join(f"{type(error).__name__}: {text}".split())) from error

    return wrapped


Path = tuple[str, ...]


class ExtensionFailed(Exception):
    """The extension reached a failed status, or the wait passed its deadline; the message is
    the stack's failure reason."""


@functools.cache
def sagemaker_client(region: str) -> Any:
    """The SageMaker client of ``region``: short timeouts, a few retries (polls come again).

    :raises ExtensionFailed: the Lambda runtime's botocore has no extension API (one line).
    """
    config = Config(
        connect_timeout=10, read_timeout=30, retries={"mode": "standard", "max_attempts": 3}
    )
    client = boto3.client("sagemaker", region_name=region, config=config)
    require_operations(client, OPERATIONS)
    return client


def require_operations(client: Any, operations: tuple[str, ...]) -> None:
    """Fail at once, in one line, when ``client``'s service model lacks one of ``operations``
    (a Lambda runtime whose bundled boto3 predates the API) instead of an AttributeError later."""
    offered = set(client.meta.service_model.operation_names)
    missing = [name for name in operations if name not in offered]
    if missing:
        raise ExtensionFailed(
            f"the Lambda runtime's botocore {botocore.__version__} has no SageMaker operation"
            f" {', '.join(missing)}; this handler needs a runtime whose boto3 has it (tested with"
            f" botocore {TESTED_BOTOCORE})"
        )


def _client(cluster_arn: str) -> Any:
    return sagemaker_client(cluster_arn.split(":")[3])


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- the configuration -------------------------------------------------------------------------


def configuration(value: Any) -> dict[str, Any]:
    """``ConfigurationValues`` as a dict: the construct's one JSON string.

    :raises ExtensionFailed: a map (CloudFormation would have turned its booleans and numbers
        into strings) or text that is not a JSON object.
    """
    if value in (None, ""):
        return {}
    if not isinstance(value, str):
        raise ExtensionFailed(
            "ConfigurationValues must be one JSON string (Stack.to_json_string):"
            " CloudFormation passes every scalar of a map as a string"
        )
    parsed = json.loads(value)
    if not isinstance(parsed, dict):
        raise ExtensionFailed(f"ConfigurationValues is not a JSON object: {value[:200]}")
    return parsed


def _old_configuration(value: Any) -> dict[str, Any]:
    """The previous ``ConfigurationValues``; the map an earlier release passed is read as it
    arrives (its leaves are only compared and reset, never sent)."""
    return value if isinstance(value, dict) else configuration(value)


def leaves(tree: dict[str, Any], prefix: Path = ()) -> dict[Path, Any]:
    """Every setting of a nested configuration: path -> value (lists are values; an empty map
    sets nothing)."""
    out: dict[Path, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(leaves(value, (*prefix, key)))
        else:
            out[(*prefix, key)] = value
    return out


def nest(settings: dict[Path, Any]) -> dict[str, Any]:
    """The nested configuration of path -> value settings."""
    tree: dict[str, Any] = {}
    for path, value in sorted(settings.items()):
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return tree


_MISSING: Final = object()


def lookup(current: dict[str, Any], path: Path) -> Any:
    """The value of ``path`` in the extension's returned configuration; ``None`` when a part of
    the path is an unset setting (the extension knows it, its default is null); ``_MISSING``
    when the extension does not return it."""
    node: Any = current
    for key in path:
        if node is None:
            return None
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _dotted(paths: Any) -> str:
    return ", ".join(".".join(path) for path in sorted(paths))


def _json(settings: dict[Path, Any]) -> str:
    return json.dumps(nest(settings), sort_keys=True, separators=(",", ":"))


def _token(request_id: str, body: str) -> str:
    """A client token per request and content (<= 64 characters): the same update sent twice is
    applied once; a different one is not refused as a reuse."""
    return f"{request_id[:47]}-{hashlib.sha256(body.encode()).hexdigest()[:16]}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split("."))


def _deadline(properties: dict[str, Any]) -> int:
    return int(time.time()) + int(properties.get("TimeoutSeconds", 55 * 60))


# -- the events --------------------------------------------------------------------------------


@one_line_errors
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
        return _update(event, properties, old)
    if kind == "Delete":
        physical_id = event["PhysicalResourceId"]
        if ":extension/" not in physical_id:
            return {"PhysicalResourceId": physical_id}  # the create failed before an ARN existed
        _delete(properties["ClusterArn"], physical_id)
        return {"PhysicalResourceId": physical_id}
    raise ValueError(f"unknown RequestType {kind!r}")


def _create(event: Event, properties: dict[str, Any]) -> Event:
    name = properties.get("ExtensionName", DEFAULT_EXTENSION)
    wanted = leaves(configuration(properties.get("ConfigurationValues")))
    documented: dict[Path, Any] = {
        path: value for path, value in wanted.items() if path in DOCUMENTED
    }
    request: dict[str, Any] = {"ClusterArn": properties["ClusterArn"], "ExtensionName": name}
    if properties.get("ExtensionVersion"):
        request["ExtensionVersion"] = str(properties["ExtensionVersion"])
    if documented:
        request["ConfigurationValues"] = _json(documented)
    request["ClientToken"] = event["RequestId"][:64]
    try:
        answer = _client(properties["ClusterArn"]).create_cluster_extension(**request)
    except ClientError as error:
        if _code(error) in BUSY_CODES:
            raise ExtensionFailed(
                f"the cluster {properties['ClusterArn']} cannot take extension {name}:"
                f" {_one_line(error.response.get('Error', {}).get('Message', _code(error)))}. If"
                " the extension is already installed (by hand or by another stack), delete it"
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


def _update(event: Event, properties: dict[str, Any], old: dict[str, Any]) -> Event:
    cluster_arn = properties["ClusterArn"]
    extension_arn = event["PhysicalResourceId"]
    request: dict[str, Any] = {"ClusterArn": cluster_arn, "ExtensionArn": extension_arn}
    version = str(properties.get("ExtensionVersion") or "")
    old_version = str(old.get("ExtensionVersion") or "")
    # UpdateClusterExtensionRequest.ExtensionVersion: "must be later than the extension's
    # current version. If you omit this parameter, the extension keeps its current version."
    new_version = bool(version) and version != old_version
    if new_version:
        if old_version and _version(version) < _version(old_version):
            raise ExtensionFailed(
                f"extension {properties.get('ExtensionName', DEFAULT_EXTENSION)} cannot go from"
                f" version {old_version} to the earlier {version}: UpdateClusterExtension only"
                " moves to a later version; keep the version (observability.extension_version),"
                " or deploy once with observability off and again with it on to install the"
                " earlier one"
            )
        request["ExtensionVersion"] = version
    details = _describe_now(cluster_arn, extension_arn)
    current = configuration(details["ExtensionDetails"].get("ConfigurationValues"))
    wanted = leaves(configuration(properties.get("ConfigurationValues")))
    before = leaves(_old_configuration(old.get("ConfigurationValues")))
    settings: dict[Path, Any] = {}
    unknown: list[Path] = []
    for path, value in wanted.items():
        if path in DOCUMENTED or lookup(current, path) is not _MISSING:
            settings[path] = value  # all of them: an omitted setting keeps its value
        elif value not in OFF:
            unknown.append(path)
    for path in before.keys() - wanted.keys():
        if lookup(current, path) is not _MISSING:
            settings[path] = None  # "a setting with the value null ... returns to its default"
    if unknown and not new_version:
        raise ExtensionFailed(_unknown_message(details, unknown, current))
    if settings:
        request["ConfigurationValues"] = _json(settings)
    request["ClientToken"] = event["RequestId"][:64]
    _client(cluster_arn).update_cluster_extension(**request)
    return {"PhysicalResourceId": extension_arn, "Data": {"Deadline": _deadline(properties)}}


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


@one_line_errors
def is_complete(event: Event, context: Any) -> Event:
    """Complete when the extension is Active with the wanted version and settings (Create,
    Update) or gone (Delete); raise when it failed or the deadline passed."""
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
    settling = ""
    if status == ACTIVE and (not wanted or version == str(wanted)):
        if _settled(event, details):
            return {
                "IsComplete": True,
                "Data": {"ExtensionArn": extension_arn, "Version": version},
            }
        settling = " with settings that still differ from the wanted ones"
    deadline = float(event.get("Data", {}).get("Deadline", time.time() + 1))
    if time.time() >= deadline:
        raise ExtensionFailed(
            f"extension {extension_arn} is still {status}{settling} (version {version}, wanted"
            f" {wanted or 'latest'}) after the wait of {properties.get('TimeoutSeconds')} s;"
            f" {failure_message(details, lead='')}"
        )
    return {"IsComplete": False}


def _settled(event: Event, details: dict[str, Any]) -> bool:
    """True when the extension's returned settings hold every wanted one. Otherwise sends the
    ones it returns (it has shown it knows them) and answers False; a wanted setting it does
    not return fails, unless the wanted value is off."""
    properties = event["ResourceProperties"]
    current = configuration(details["ExtensionDetails"].get("ConfigurationValues"))
    wanted = leaves(configuration(properties.get("ConfigurationValues")))
    unknown = [
        path
        for path, value in wanted.items()
        if path not in DOCUMENTED and lookup(current, path) is _MISSING and value not in OFF
    ]
    if unknown:
        raise ExtensionFailed(_unknown_message(details, unknown, current))
    pending = {
        path: value
        for path, value in wanted.items()
        if (found := lookup(current, path)) is not _MISSING and found != value
    }
    if not pending:
        return True
    body = _json(pending)
    cluster_arn = properties["ClusterArn"]
    LOG.info("%s: applying the settings it knows now: %s", event["PhysicalResourceId"], body)
    try:
        _client(cluster_arn).update_cluster_extension(
            ClusterArn=cluster_arn,
            ExtensionArn=event["PhysicalResourceId"],
            ConfigurationValues=body,
            ClientToken=_token(event["RequestId"], body),
        )
    except ClientError as error:
        if _code(error) not in BUSY_CODES | THROTTLING_CODES:
            raise
        LOG.info("the update is retried (%s)", _code(error))
    return False


def _unknown_message(details: dict[str, Any], unknown: list[Path], current: dict[str, Any]) -> str:
    extension = details["ExtensionDetails"]
    offered = _dotted(leaves(current)) or "none"
    text = (
        f"extension {extension['ExtensionName']} {extension['ExtensionVersion']} on"
        f" {extension['ClusterArn']} does not offer the setting(s) {_dotted(unknown)} (it"
        f" returns: {offered}); set the matching observability key off (observability.logging:"
        " false, observability.levels.<category>: DISABLED) or pin an extension version that"
        " has them"
    )
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _describe_now(cluster_arn: str, extension_arn: str) -> dict[str, Any]:
    """DescribeClusterExtension for an update: the extension must exist."""
    details = describe(cluster_arn, extension_arn)
    if details is None:
        raise ExtensionFailed(
            f"extension {extension_arn} no longer exists on {cluster_arn}; deploy once with"
            " observability off and again with it on to install it anew"
        )
    if details == {}:
        raise ExtensionFailed(f"DescribeClusterExtension of {extension_arn} was throttled")
    return details


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
    text = _one_line(
        head + counts + ("; ".join(parts) if parts else "the service reported no issue")
    )
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."

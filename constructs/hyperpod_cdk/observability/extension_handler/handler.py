"""Custom resource handler: HyperPod's ``sagemaker-observability`` cluster extension (Slurm).

The pinned aws-cdk-lib (2.275.0) has no CloudFormation type for the extension
(``AWS::SageMaker::Extension`` exists in later releases); this handler drives the SageMaker API
under CDK's provider framework (``aws_cdk.custom_resources.Provider``):

- ``on_event`` starts the change. Create calls ``CreateClusterExtension`` with the whole
  configuration (every setting of it is one AWS documents, :data:`DOCUMENTED`; any other fails at
  once, in one line, as the service would reject it; the CloudFormation request id is the client
  token, so a request delivered twice creates nothing twice). Update calls
  ``UpdateClusterExtension``: the version only when it changed (the API moves only to a later
  version, so an earlier one fails at once), every wanted setting (the API keeps what is omitted,
  so a setting turned off is sent as its off value) and ``null`` for a documented setting no
  longer wanted; or it creates a new extension when the cluster or the extension name changed
  (CloudFormation then deletes the old one). Delete calls ``DeleteClusterExtension`` (an
  extension or cluster already gone is fine; one still busy is deleted by ``is_complete`` once it
  can be). Create and Update also set a deadline that ``is_complete`` reads, and the time sent.
- ``is_complete`` reads ``DescribeClusterExtension``: ``Creating``/``Updating``/``Deleting`` and
  ``Degraded`` (installed on some nodes, or a node reported it unhealthy: it may recover) poll
  again; ``Active`` at the wanted version then checks that the stored configuration (HyperPod
  writes every setting into it, the defaults too) holds every setting sent: when it does, done;
  when it still differs :data:`STORED_GRACE_SECONDS` after the request (a read right after the
  request may precede it), the resource fails in one line naming each difference.
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
extension of a name per cluster; ``ConfigurationValues`` 1-10240 characters;
UpdateClusterExtension keeps omitted settings, resets ``null`` ones, takes only a later version;
``ExtensionDetails.ConfigurationValues`` holds every setting with its default; status enum
Creating | Active | CreateFailed | Updating | Deleting | DeleteFailed | Degraded | UpdateFailed;
``Health.Issues[]{Code, Message, NodeCount}`` with codes InvalidConfiguration,
ConfigurationConflict, AccessDenied, ResourceNotFound, DependencyUnreachable,
ExtensionUnhealthy, InternalFailure, Other; errors ConflictException, ResourceNotFound,
ResourceInUse. The settings (:data:`DOCUMENTED`): SageMaker developer guide, "Observability
extension configuration" (:data:`SOURCE`, read 2026-11-27): ``prometheus.remoteWriteUrl``,
``metricsProvider.{nodeMetrics, acceleratedComputeMetrics, networkMetrics, jobMetrics,
clusterMetrics, ncclMetrics}.{level, collectionIntervalSeconds}``,
``profilesProvider.hostProfiling.enabled``; "Unknown settings are rejected at every level";
"HyperPod writes the default values into the stored configuration, so DescribeClusterExtension
shows every setting" (the config side holds the levels: ``hyperpod_cdk.config.observability.
SLURM_EXTENSION_SETTINGS``; a test holds the two together).

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
#: where AWS documents the Slurm extension's settings (read 2026-11-27)
SOURCE: Final = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-cluster-observability-slurm-extension-config.html"
)
#: the extension's ``metricsProvider`` categories (:data:`SOURCE`)
CATEGORIES: Final = (
    "nodeMetrics",
    "acceleratedComputeMetrics",
    "networkMetrics",
    "jobMetrics",
    "clusterMetrics",
    "ncclMetrics",
)
#: every setting AWS documents for the Slurm extension (:data:`SOURCE`); the page's stored copy
#: read here ends in a further setting starting ``graf``, which is therefore not sent
DOCUMENTED: Final[frozenset[tuple[str, ...]]] = frozenset(
    {
        ("prometheus", "remoteWriteUrl"),
        ("profilesProvider", "hostProfiling", "enabled"),
        *(("metricsProvider", key, "level") for key in CATEGORIES),
        *(("metricsProvider", key, "collectionIntervalSeconds") for key in CATEGORIES),
    }
)
#: how long after a request an Active extension whose stored configuration still differs from
#: what was sent is polled again (a read right after the request may precede it) before failing
STORED_GRACE_SECONDS: Final = 300
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


def wanted_settings(properties: dict[str, Any]) -> dict[Path, Any]:
    """Every setting of ``ConfigurationValues``: path -> value.

    :raises ExtensionFailed: a setting AWS does not document for the extension (it rejects
        unknown settings "at every level"), in one line naming each and the documented ones.
    """
    wanted = leaves(configuration(properties.get("ConfigurationValues")))
    unknown = [path for path in wanted if path not in DOCUMENTED]
    if unknown:
        text = (
            f"ConfigurationValues has setting(s) the {properties.get('ExtensionName', DEFAULT_EXTENSION)}"
            f" extension does not document: {_dotted(unknown)}; it rejects unknown settings."
            f" Documented: {_dotted(DOCUMENTED)} ({SOURCE})"
        )
        raise ExtensionFailed(text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "...")
    return wanted


def _create(event: Event, properties: dict[str, Any]) -> Event:
    name = properties.get("ExtensionName", DEFAULT_EXTENSION)
    wanted = wanted_settings(properties)
    request: dict[str, Any] = {"ClusterArn": properties["ClusterArn"], "ExtensionName": name}
    if properties.get("ExtensionVersion"):
        request["ExtensionVersion"] = str(properties["ExtensionVersion"])
    if wanted:
        request["ConfigurationValues"] = _json(wanted)
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
        "Data": {"Deadline": _deadline(properties), "Sent": int(time.time()), "ExtensionArn": arn},
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
    wanted = wanted_settings(properties)
    before = leaves(_old_configuration(old.get("ConfigurationValues")))
    # all of them: an omitted setting keeps its value
    settings: dict[Path, Any] = dict(wanted)
    for path in before.keys() - wanted.keys():
        # "a setting with the value null ... returns to its default"; a setting an earlier
        # release wrote that AWS does not document (ampWorkspace, logging) is no setting of it
        if path in DOCUMENTED:
            settings[path] = None
    if settings:
        request["ConfigurationValues"] = _json(settings)
    request["ClientToken"] = event["RequestId"][:64]
    _client(cluster_arn).update_cluster_extension(**request)
    return {
        "PhysicalResourceId": extension_arn,
        "Data": {"Deadline": _deadline(properties), "Sent": int(time.time())},
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
    data = event.get("Data", {})
    if status == ACTIVE and (not wanted or version == str(wanted)):
        differences = stored_differences(properties, details)
        if not differences:
            return {
                "IsComplete": True,
                "Data": {"ExtensionArn": extension_arn, "Version": version},
            }
        if time.time() >= float(data.get("Sent", 0)) + STORED_GRACE_SECONDS:
            raise ExtensionFailed(_differences_message(details, differences))
        settling = " with a stored configuration that still differs from the one sent"
    deadline = float(data.get("Deadline", time.time() + 1))
    if time.time() >= deadline:
        raise ExtensionFailed(
            f"extension {extension_arn} is still {status}{settling} (version {version}, wanted"
            f" {wanted or 'latest'}) after the wait of {properties.get('TimeoutSeconds')} s;"
            f" {failure_message(details, lead='')}"
        )
    return {"IsComplete": False}


def stored_differences(properties: dict[str, Any], details: dict[str, Any]) -> list[str]:
    """Each setting sent that the stored configuration (DescribeClusterExtension, every setting
    with its value) does not hold: ``path: sent X, stored Y`` (``not stored`` when absent)."""
    current = configuration(details["ExtensionDetails"].get("ConfigurationValues"))
    differences = []
    for path, value in sorted(leaves(configuration(properties.get("ConfigurationValues"))).items()):
        found = lookup(current, path)
        if found != value:
            stored = "not stored" if found is _MISSING else f"stored {json.dumps(found)}"
            differences.append(f"{'.'.join(path)}: sent {json.dumps(value)}, {stored}")
    return differences


def _differences_message(details: dict[str, Any], differences: list[str]) -> str:
    extension = details["ExtensionDetails"]
    text = _one_line(
        f"extension {extension['ExtensionName']} {extension['ExtensionVersion']} on"
        f" {extension['ClusterArn']} is Active, but its stored configuration"
        f" (DescribeClusterExtension) differs from the one sent: {'; '.join(differences)}"
    )
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


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

"""Custom resource handler: a HyperPod cluster policy or compute quota through the SageMaker API.

Used in regions where CloudFormation has no ``AWS::SageMaker::ClusterSchedulerConfig`` or
``AWS::SageMaker::ComputeQuota``. Runs under CDK's provider framework
(``aws_cdk.custom_resources.Provider``):

- ``on_event`` starts the change. Create calls the Create API; Update reads the current
  version first (the Update APIs need ``TargetVersion``) and updates in place, or, when a
  create-only property changed (``Name``, ``ClusterArn``, the team name), creates a new object
  (CloudFormation then deletes the old one); Delete calls the Delete API (an object already
  gone is fine).
- ``is_complete`` reads the status until it is final, and fails with the service's
  ``FailureReason`` when the change failed.

Resource properties: ``Kind`` (``ClusterSchedulerConfig`` | ``ComputeQuota``) and ``Request``
(the Create API's parameters, as JSON: CloudFormation would pass bare numbers as strings).

boto3 is the Lambda runtime's; these APIs are newer than some runtimes' boto3, so the handler
fails at once, in one line naming the missing operations, when the runtime's botocore lacks them
(:func:`sagemaker_client`). Everything else is the standard library.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

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
            raise RuntimeError(" ".join(f"{type(error).__name__}: {text}".split())) from error

    return wrapped


# the ids the service gives both kinds
SERVICE_ID = re.compile(r"[a-z0-9]{12}")
DONE = frozenset({"Created", "Updated"})
FAILED = frozenset(
    {
        "CreateFailed",
        "CreateRollbackFailed",
        "UpdateFailed",
        "UpdateRollbackFailed",
        "DeleteFailed",
        "DeleteRollbackFailed",
    }
)
MAX_MESSAGE = 1500
#: the botocore release the tests run with (requirements-dev.txt); every operation the handler
#: calls is in its SageMaker model
TESTED_BOTOCORE = "1.44.5"
OPERATIONS = tuple(
    f"{verb}{kind}"
    for kind in ("ClusterSchedulerConfig", "ComputeQuota")
    for verb in ("Create", "Describe", "Update", "Delete")
)


class Api:
    """The calls of one kind: their names and the keys of id and version."""

    def __init__(self, kind: str) -> None:
        if kind not in ("ClusterSchedulerConfig", "ComputeQuota"):
            raise ValueError(f"unknown Kind {kind!r}")
        self.kind = kind
        self.snake = (
            "cluster_scheduler_config" if kind == "ClusterSchedulerConfig" else "compute_quota"
        )
        self.id_key = f"{kind}Id"
        self.arn_key = f"{kind}Arn"
        self.version_key = f"{kind}Version"
        # what Update takes besides the id and TargetVersion
        self.updatable = (
            ("SchedulerConfig", "Description")
            if kind == "ClusterSchedulerConfig"
            else ("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState", "Description")
        )

    def call(self, client: Any, verb: str, **kwargs: Any) -> dict[str, Any]:
        response: dict[str, Any] = getattr(client, f"{verb}_{self.snake}")(**kwargs)
        return response


@functools.cache
def sagemaker_client(region: str) -> Any:
    """The SageMaker client of ``region``.

    :raises RuntimeError: the Lambda runtime's botocore lacks an operation of :data:`OPERATIONS`
        (one line naming them), instead of an AttributeError halfway through a change.
    """
    config = Config(retries={"mode": "standard", "max_attempts": 5})
    client = boto3.client("sagemaker", region_name=region, config=config)
    offered = set(client.meta.service_model.operation_names)
    missing = [name for name in OPERATIONS if name not in offered]
    if missing:
        raise RuntimeError(
            f"the Lambda runtime's botocore {botocore.__version__} has no SageMaker operation"
            f" {', '.join(missing)}; this handler needs a runtime whose boto3 has them (tested"
            f" with botocore {TESTED_BOTOCORE})"
        )
    return client


def _region(request: dict[str, Any]) -> str:
    return str(request["ClusterArn"]).split(":")[3]


def _create_only(kind: str, request: dict[str, Any]) -> tuple[Any, ...]:
    """What cannot change in place (the CloudFormation schemas' createOnlyProperties)."""
    team = request.get("ComputeQuotaTarget", {}).get("TeamName") if kind == "ComputeQuota" else None
    return (request.get("Name"), request.get("ClusterArn"), team)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _not_found(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in (
        "ResourceNotFound",
        "ResourceNotFoundException",
    )


@one_line_errors
def on_event(event: Event, context: Any) -> Event:
    """Create, update or delete; ``is_complete`` waits for the result."""
    properties = event["ResourceProperties"]
    api = Api(properties["Kind"])
    request = json.loads(properties["Request"])
    client = sagemaker_client(_region(request))
    kind = event["RequestType"]
    if kind == "Create":
        return _create(api, client, request)
    physical_id = event["PhysicalResourceId"]
    if kind == "Delete":
        if not SERVICE_ID.fullmatch(physical_id):  # a create that never got an id
            return {"PhysicalResourceId": physical_id}
        try:
            api.call(client, "delete", **{api.id_key: physical_id})
        except ClientError as error:
            if not _not_found(error):
                raise
            LOG.info("%s %s is gone already", api.kind, physical_id)
        return {"PhysicalResourceId": physical_id}
    old = json.loads(event["OldResourceProperties"]["Request"])
    if _create_only(api.kind, old) != _create_only(api.kind, request):
        LOG.info("a create-only property changed: a new %s replaces %s", api.kind, physical_id)
        return _create(api, client, request)
    current = api.call(client, "describe", **{api.id_key: physical_id})
    update = {key: request[key] for key in api.updatable if key in request}
    version = current[api.version_key]
    api.call(client, "update", **{api.id_key: physical_id, "TargetVersion": version}, **update)
    # is_complete waits for a version past this one (the status may still read the old one)
    return {"PhysicalResourceId": physical_id, "Data": {"FromVersion": str(version)}}


def _create(api: Api, client: Any, request: dict[str, Any]) -> Event:
    try:
        response = api.call(client, "create", **request)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ConflictException":
            raise
        raise RuntimeError(
            f"{api.kind} {request.get('Name')} already exists on {request.get('ClusterArn')}"
            " (made outside this stack, or by an earlier delivery of this request):"
            f" {_one_line(error.response.get('Error', {}).get('Message', ''))}; delete it"
            f" (aws sagemaker delete-{api.snake.replace('_', '-')}) and deploy again"
        ) from error
    return {
        "PhysicalResourceId": response[api.id_key],
        "Data": {"Arn": response[api.arn_key], "Id": response[api.id_key]},
    }


@one_line_errors
def is_complete(event: Event, context: Any) -> Event:
    """Complete once the status is final; a failed status raises the service's reason."""
    properties = event["ResourceProperties"]
    api = Api(properties["Kind"])
    request = json.loads(properties["Request"])
    client = sagemaker_client(_region(request))
    physical_id = event["PhysicalResourceId"]
    deleting = event["RequestType"] == "Delete"
    if deleting and not SERVICE_ID.fullmatch(physical_id):
        return {"IsComplete": True}
    try:
        current = api.call(client, "describe", **{api.id_key: physical_id})
    except ClientError as error:
        if deleting and _not_found(error):
            return {"IsComplete": True}
        raise
    status = current.get("Status", "")
    if status in FAILED:
        reason = _one_line(current.get("FailureReason") or "no reason given")
        message = f"{api.kind} {current.get('Name', physical_id)} is {status}: {reason}"
        raise RuntimeError(message[:MAX_MESSAGE])
    if deleting:
        return {"IsComplete": status == "Deleted"}
    from_version = event.get("Data", {}).get("FromVersion")
    if (
        status in DONE
        and from_version is not None
        and int(current.get(api.version_key, 0)) <= int(from_version)
    ):
        LOG.info("%s %s: the update has not started yet", api.kind, physical_id)
        return {"IsComplete": False}
    if status in DONE:
        return {
            "IsComplete": True,
            "Data": {"Arn": current[api.arn_key], "Id": current[api.id_key]},
        }
    LOG.info("%s %s is %s", api.kind, physical_id, status)
    return {"IsComplete": False}

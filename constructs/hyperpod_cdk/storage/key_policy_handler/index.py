"""Custom resource handler: one statement of a KMS key policy, kept in place by its ``Sid``.

Why a custom resource: the FSx for Lustre guide ("Working with server-side encrypted Amazon S3
buckets") names the file system's S3 service-linked role,
``AWSServiceRoleForFSxS3Access_<file system id>``, as the principal of the data key's policy.
FSx creates that role with the file system's first link to S3 (its first data repository
association), and KMS refuses a key policy whose principal does not exist yet
(``MalformedPolicyDocumentException``). The key is created before the bucket and the bucket
before the associations, so the statement is added here, once the associations exist.

The function is the custom resource's service token itself (no provider framework): it answers
CloudFormation's pre-signed URL, SUCCESS or FAILED with one line, whatever happens.

- Create, Update: read the key policy (``kms:GetKeyPolicy``), replace the statement with the
  same ``Sid`` (or add it), write it back (``kms:PutKeyPolicy``). A principal IAM has not yet
  propagated is retried until shortly before the function's own timeout.
- Delete: remove the statement with that ``Sid``. A key that is gone or pending deletion has
  nothing to remove.

Resource properties: ``KeyArn``, ``Statement`` (a JSON object with a ``Sid``) and any others
(the owner passes a digest of the key's own policy, so that a deploy that rewrites the key
policy also rewrites this statement).

boto3 only (part of the Lambda Python runtime); everything else is the standard library.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from typing import Any

import boto3  # type: ignore[import-untyped]
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

POLICY_NAME = "default"  # the only key policy name KMS has
# KMS says this while IAM has not propagated a just-created principal
NOT_YET_CODES = frozenset({"MalformedPolicyDocumentException"})
GONE_CODES = frozenset({"NotFoundException", "KMSInvalidStateException"})
RETRY_SECONDS = 10
# stop retrying this long before the function's own timeout, to answer CloudFormation
ANSWER_MARGIN_MS = 30_000
# CloudFormation's response body is at most 4 KiB
MAX_REASON = 1000

Event = dict[str, Any]


def handler(event: Event, context: Any) -> None:
    """Entry point: do the request, then answer CloudFormation whatever happened."""
    physical = event.get("PhysicalResourceId") or event["LogicalResourceId"]
    try:
        physical = handle(event, context)
        answer(event, "SUCCESS", physical, "")
    except Exception as error:  # every failure becomes the stack's one-line reason
        LOG.exception("request failed")
        reason = " ".join(f"{type(error).__name__}: {error}".split())  # one line
        answer(event, "FAILED", physical, reason[:MAX_REASON])


def handle(event: Event, context: Any, kms: Any = None) -> str:
    """Apply the request; returns the physical id (``<key ARN>#<Sid>``)."""
    props = event["ResourceProperties"]
    key_arn = props["KeyArn"]
    statement = json.loads(props["Statement"])
    sid = statement["Sid"]
    if kms is None:
        kms = boto3.client("kms", region_name=key_arn.split(":")[3])
    if event["RequestType"] == "Delete":
        remove_statement(kms, key_arn, sid)
        return str(event["PhysicalResourceId"])
    deadline = time.monotonic() + max(
        0.0, (context.get_remaining_time_in_millis() - ANSWER_MARGIN_MS) / 1000
    )
    put_statement(kms, key_arn, statement, deadline)
    return f"{key_arn}#{sid}"


def with_statement(policy: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    """``policy`` with ``statement`` in place of the one with its Sid (or appended)."""
    others = [s for s in _statements(policy) if s.get("Sid") != statement["Sid"]]
    return {**policy, "Statement": [*others, statement]}


def without_statement(policy: dict[str, Any], sid: str) -> dict[str, Any]:
    """``policy`` without the statement whose Sid is ``sid``."""
    return {**policy, "Statement": [s for s in _statements(policy) if s.get("Sid") != sid]}


def put_statement(kms: Any, key_arn: str, statement: dict[str, Any], deadline: float) -> None:
    """Write ``statement`` into the key policy, retrying while its principal is too new."""
    while True:
        policy = _read(kms, key_arn)
        try:
            kms.put_key_policy(
                KeyId=key_arn,
                PolicyName=POLICY_NAME,
                Policy=json.dumps(with_statement(policy, statement)),
            )
            return
        except ClientError as error:
            if _code(error) not in NOT_YET_CODES or time.monotonic() + RETRY_SECONDS > deadline:
                raise
            LOG.info("KMS does not know the principal yet; again in %s s", RETRY_SECONDS)
            time.sleep(RETRY_SECONDS)


def remove_statement(kms: Any, key_arn: str, sid: str) -> None:
    """Take the statement out of the key policy; nothing to do for a key that is gone."""
    try:
        policy = _read(kms, key_arn)
        if any(s.get("Sid") == sid for s in _statements(policy)):
            kms.put_key_policy(
                KeyId=key_arn,
                PolicyName=POLICY_NAME,
                Policy=json.dumps(without_statement(policy, sid)),
            )
    except ClientError as error:
        if _code(error) not in GONE_CODES:
            raise
        LOG.info("key %s is gone or pending deletion: nothing to remove", key_arn)


def answer(event: Event, status: str, physical: str, reason: str) -> None:
    """PUT the result to CloudFormation's pre-signed URL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason or status,
            "PhysicalResourceId": physical,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (CloudFormation's https URL)
        LOG.info("answered %s: HTTP %s", status, response.status)


def _read(kms: Any, key_arn: str) -> dict[str, Any]:
    text = kms.get_key_policy(KeyId=key_arn, PolicyName=POLICY_NAME)["Policy"]
    policy = json.loads(text)
    assert isinstance(policy, dict)
    return policy


def _statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    statements = policy.get("Statement", [])
    return [statements] if isinstance(statements, dict) else list(statements)


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))

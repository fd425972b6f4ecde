"""The FSx data key policy handler (issue 15), against a KMS that behaves like KMS on the points
that matter: a principal that IAM does not know makes PutKeyPolicy fail with
MalformedPolicyDocumentException, a deleted key is NotFoundException, a key pending deletion is
KMSInvalidStateException; and against a real HTTP server standing in for CloudFormation's
pre-signed URL."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.cfn_events import cfn_event, one_line, response_server, self_answering
from support.modules import load_module

from hyperpod_cdk.storage.fsx_key_policy import HANDLER_DIR, STATEMENT_SID

KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ROOT = "arn:aws:iam::111122223333:root"
SLR = (
    "arn:aws:iam::111122223333:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
    "AWSServiceRoleForFSxS3Access_fs-0123456789abcdef0"
)
ROOT_STATEMENT = {
    "Effect": "Allow",
    "Principal": {"AWS": ROOT},
    "Action": "kms:*",
    "Resource": "*",
}
STATEMENT = {
    "Sid": STATEMENT_SID,
    "Effect": "Allow",
    "Principal": {"AWS": SLR},
    "Action": ["kms:Decrypt", "kms:Encrypt"],
    "Resource": "*",
}


handler = load_module("hyperpod_key_policy_handler", HANDLER_DIR / "index.py")


def _error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


class FakeKms:
    """One key; IAM principals that exist; the key's state."""

    def __init__(self, principals: set[str], state: str = "Enabled") -> None:
        self.principals = principals
        self.state = state
        self.policy: dict[str, Any] = {"Version": "2012-10-17", "Statement": [ROOT_STATEMENT]}
        self.puts = 0

    def _check_key(self, key_id: str, operation: str) -> None:
        if key_id != KEY or self.state == "Deleted":
            raise _error("NotFoundException", operation)
        if self.state == "PendingDeletion":
            raise _error("KMSInvalidStateException", operation)

    def get_key_policy(self, *, KeyId: str, PolicyName: str) -> dict[str, str]:  # noqa: N803
        self._check_key(KeyId, "GetKeyPolicy")
        assert PolicyName == "default"
        return {"Policy": json.dumps(self.policy), "PolicyName": "default"}

    def put_key_policy(self, *, KeyId: str, PolicyName: str, Policy: str) -> dict:  # noqa: N803
        self._check_key(KeyId, "PutKeyPolicy")
        assert PolicyName == "default"
        document = json.loads(Policy)
        for statement in document["Statement"]:
            for principal in [statement["Principal"]["AWS"]]:
                if principal not in self.principals:
                    raise _error("MalformedPolicyDocumentException", "PutKeyPolicy")
        self.policy = document
        self.puts += 1
        return {}


class Context:
    def __init__(self, remaining_ms: int = 300_000) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def event(kind: str, statement: dict[str, Any] = STATEMENT, **extra: Any) -> dict[str, Any]:
    """The request as CloudFormation sends it (tests/support/cfn_events.py), with the properties
    the construct writes (storage/fsx_key_policy.py)."""
    props = {"KeyArn": KEY, "Statement": json.dumps(statement), "KeyPolicyDigest": "0" * 64}
    sent = cfn_event(
        kind,
        props,
        old_properties=props if kind == "Update" else None,
        physical_resource_id=extra.pop("PhysicalResourceId", None),
        logical_resource_id="DataKeyPolicy",
        resource_type="Custom::HyperPodKmsKeyPolicyStatement",
        response_url="http://127.0.0.1:1/",
    )
    sent.update(extra)
    return sent


def sids(kms: FakeKms) -> list[str | None]:
    return [s.get("Sid") for s in kms.policy["Statement"]]


def test_create_adds_the_statement_and_keeps_the_others() -> None:
    kms = FakeKms({ROOT, SLR})
    physical = handler.handle(event("Create"), Context(), kms)
    assert physical == f"{KEY}#{STATEMENT_SID}"
    assert kms.policy["Statement"] == [ROOT_STATEMENT, STATEMENT]


def test_update_replaces_the_statement_by_its_sid() -> None:
    kms = FakeKms({ROOT, SLR})
    handler.handle(event("Create"), Context(), kms)
    changed = {**STATEMENT, "Action": ["kms:Decrypt"]}
    handler.handle(
        event("Update", changed, PhysicalResourceId=f"{KEY}#{STATEMENT_SID}"), Context(), kms
    )
    assert kms.policy["Statement"] == [ROOT_STATEMENT, changed]


def test_a_key_policy_rewritten_without_it_gets_it_back() -> None:
    """What the key policy digest is for: the storage stack wrote the key's own policy again."""
    kms = FakeKms({ROOT, SLR})
    handler.handle(event("Create"), Context(), kms)
    kms.policy = {"Version": "2012-10-17", "Statement": [ROOT_STATEMENT]}
    handler.handle(event("Update", PhysicalResourceId=f"{KEY}#{STATEMENT_SID}"), Context(), kms)
    assert sids(kms) == [None, STATEMENT_SID]


def test_delete_removes_only_the_statement() -> None:
    kms = FakeKms({ROOT, SLR})
    handler.handle(event("Create"), Context(), kms)
    handler.handle(event("Delete", PhysicalResourceId="p"), Context(), kms)
    assert kms.policy["Statement"] == [ROOT_STATEMENT]
    puts = kms.puts
    handler.handle(event("Delete", PhysicalResourceId="p"), Context(), kms)
    assert kms.puts == puts  # nothing to remove: no write


@pytest.mark.parametrize("state", ["Deleted", "PendingDeletion"])
def test_delete_of_a_key_that_is_gone_succeeds(state: str) -> None:
    kms = FakeKms({ROOT, SLR}, state=state)
    assert handler.handle(event("Delete", PhysicalResourceId="p"), Context(), kms) == "p"


def test_a_principal_iam_does_not_know_yet_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    kms = FakeKms({ROOT})
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            kms.principals.add(SLR)  # IAM has propagated the new role

    monkeypatch.setattr(handler.time, "sleep", sleep)
    handler.handle(event("Create"), Context(), kms)
    assert sids(kms) == [None, STATEMENT_SID]
    assert slept == [handler.RETRY_SECONDS] * 2


def test_a_principal_that_never_appears_fails_before_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kms = FakeKms({ROOT})
    clock = [0.0]
    monkeypatch.setattr(handler.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(handler.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    with pytest.raises(ClientError, match="MalformedPolicyDocumentException"):
        handler.handle(event("Create"), Context(remaining_ms=90_000), kms)
    # 90 s left, 30 s kept to answer: at most 60 s of retries
    assert clock[0] <= 60


# -- answering CloudFormation --------------------------------------------------------------


@pytest.fixture
def cloudformation() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP server that records the PUT bodies, like the pre-signed S3 URL."""
    answers: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # noqa: N802
            length = int(self.headers["Content-Length"])
            answers.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/answer", answers
    finally:
        server.shutdown()


def test_handler_answers_success_with_the_physical_id(cloudformation, monkeypatch) -> None:
    url, answers = cloudformation
    kms = FakeKms({ROOT, SLR})
    monkeypatch.setattr(handler.boto3, "client", lambda *a, **k: kms)
    sent = event("Create", ResponseURL=url)
    handler.handler(sent, Context())
    (answer,) = answers
    assert answer["Status"] == "SUCCESS"
    assert answer["PhysicalResourceId"] == f"{KEY}#{STATEMENT_SID}"
    assert (answer["StackId"], answer["RequestId"]) == (sent["StackId"], sent["RequestId"])


def test_handler_answers_failure_in_one_line(cloudformation, monkeypatch) -> None:
    url, answers = cloudformation
    kms = FakeKms({ROOT}, state="PendingDeletion")
    monkeypatch.setattr(handler.boto3, "client", lambda *a, **k: kms)
    handler.handler(event("Create", ResponseURL=url), Context())
    (answer,) = answers
    assert answer["Status"] == "FAILED"
    assert answer["PhysicalResourceId"] == "DataKeyPolicy"
    assert "KMSInvalidStateException" in answer["Reason"]
    assert "\n" not in answer["Reason"]


# -- through the CloudFormation fake (tests/support/cfn_events.py) ----------------------------


def _answered(kms: FakeKms, request: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(handler.boto3, "client", lambda *a, **k: kms)
    with response_server() as server:
        return self_answering(handler.handler, request, server, Context())


def test_create_update_delete_answer_cloudformation(monkeypatch: pytest.MonkeyPatch) -> None:
    kms = FakeKms({ROOT, SLR})
    physical = f"{KEY}#{STATEMENT_SID}"
    created = _answered(kms, event("Create"), monkeypatch)
    assert created.ok and created.PhysicalResourceId == physical
    updated = _answered(kms, event("Update", PhysicalResourceId=physical), monkeypatch)
    assert updated.ok and updated.PhysicalResourceId == physical
    deleted = _answered(kms, event("Delete", PhysicalResourceId=physical), monkeypatch)
    assert deleted.ok and deleted.PhysicalResourceId == physical
    assert kms.policy["Statement"] == [ROOT_STATEMENT]


def test_the_same_request_delivered_twice_answers_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kms = FakeKms({ROOT, SLR})
    sent = event("Create")
    first, second = _answered(kms, sent, monkeypatch), _answered(kms, sent, monkeypatch)
    assert first.ok and second.ok and first.PhysicalResourceId == second.PhysicalResourceId
    assert kms.policy["Statement"] == [ROOT_STATEMENT, STATEMENT]
    physical = first.PhysicalResourceId
    for _ in range(2):
        assert _answered(kms, event("Delete", PhysicalResourceId=physical), monkeypatch).ok
    assert kms.policy["Statement"] == [ROOT_STATEMENT]


def test_a_failed_create_then_its_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """The failed Create answers with the logical id as physical id; CloudFormation's rollback
    Delete carries it, and the handler removes nothing it did not add."""
    kms = FakeKms({ROOT}, state="PendingDeletion")
    failed = _answered(kms, event("Create"), monkeypatch)
    assert not failed.ok and failed.PhysicalResourceId == "DataKeyPolicy"
    assert one_line(failed.Reason)
    kms.state = "Enabled"
    puts = kms.puts
    deleted = _answered(kms, event("Delete", PhysicalResourceId="DataKeyPolicy"), monkeypatch)
    assert deleted.ok and deleted.PhysicalResourceId == "DataKeyPolicy"
    assert kms.puts == puts


def test_an_error_message_with_line_breaks_is_answered_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kms = FakeKms({ROOT, SLR})

    def denied(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not allowed\non this key"}},
            "GetKeyPolicy",
        )

    kms.get_key_policy = denied  # type: ignore[method-assign]
    answer = _answered(kms, event("Create"), monkeypatch)
    assert not answer.ok and one_line(answer.Reason)
    assert "AccessDeniedException" in answer.Reason

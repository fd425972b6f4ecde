"""What CloudFormation sends a custom resource, and what it expects back: a fake per contract the
product's handlers use.

Every handler of the product is tested through one of these, so that no test hands a handler an
event no real deploy produces:

- :func:`cfn_event` builds the request CloudFormation sends (``RequestType``, ``RequestId``,
  ``StackId``, ``LogicalResourceId``, ``ResourceType``, ``ResponseURL``, ``ResourceProperties``
  with ``ServiceToken``; ``PhysicalResourceId`` on Update and Delete; ``OldResourceProperties`` on
  Update). Every scalar in the properties becomes a string, booleans ``"true"``/``"false"`` and
  numbers their decimal text; lists and maps are kept, with their scalars turned to strings too.
  Sources: the CloudFormation user guide, "Custom resources request objects"
  (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html), and
  the long-standing behaviour that custom resource properties reach the function as strings
  (aws-cloudformation/cloudformation-coverage-roadmap issue #1037, "Lambda Backed
  CustomResource's ResourceProperties converts int and boolean properties to strings", open; and
  aws/aws-cdk pull request #4000: "custom resource properties are always stringified by
  CloudFormation"; read 2026-11-27).
- :class:`ProviderFramework`: CDK's custom-resource provider framework
  (``aws_cdk.custom_resources.Provider``), as aws-cdk-lib's runtime does it
  (aws/aws-cdk packages/aws-cdk-lib/custom-resources/lib/provider-framework/runtime/framework.ts
  and cfn-response.ts): the user's ``onEvent`` gets the request; its answer is merged into the
  request (``PhysicalResourceId`` defaults to the request's, or to ``RequestId`` on Create; a
  Delete may not change it); with an ``isComplete`` handler the merged event is passed to it on
  every poll, ``Data`` with ``IsComplete: false`` is an error, the final ``Data`` is the merge of
  both answers; an exception becomes FAILED with its message (plus the framework's
  ``Logs: /aws/lambda/...`` lines) as the reason; a Create that fails before a physical id exists
  answers the marker ``AWSCDK::CustomResourceProviderFramework::CREATE_FAILED``, and the Delete
  CloudFormation then sends with that marker is answered SUCCESS without calling the handlers;
  polls that never complete end in "Operation timed out".
- :class:`ResponseServer`: a local HTTP server standing in for the pre-signed S3 URL a handler
  that answers CloudFormation itself PUTs its response to; it records each body and
  :func:`check_response` holds it to the response object CloudFormation reads
  (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html).
- The Node.js default security group handler runs in CDK's ``CustomResourceProvider``: its
  ``__entrypoint__.js`` (aws-cdk-lib core/lib/custom-resource-provider/nodejs-entrypoint) is the
  same contract as the provider framework's ``safeHandler`` and answers the URL itself; the SG
  test runs the synthesized asset with the pinned Node.js and a fake ``@aws-sdk/client-ec2``.

Every payload crosses a JSON round trip, as the Lambda invoke does: a handler never shares an
object with the test, and an answer that JSON cannot carry fails here as it would in Lambda.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

REGION = "us-west-2"
ACCOUNT = "111122223333"
STACK_ID = (
    f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/hyperpod-test/"
    "0f3c8a10-9d0e-11ef-8a4e-0a1b2c3d4e5f"
)
SERVICE_TOKEN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:hyperpod-test-framework-onEvent"
RESPONSE_URL = (
    "https://cloudformation-custom-resource-response-uswest2.s3-us-west-2.amazonaws.com/"
    "arn%3Aaws%3Acloudformation%3Aus-west-2%3A111122223333%3Astack/hyperpod-test/x?X-Amz-Signature=s"
)
#: aws-cdk-lib's marker physical id of a Create that failed before the handler returned one
CREATE_FAILED_MARKER = "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"
MISSING_PHYSICAL_ID_MARKER = "AWSCDK::CustomResourceProviderFramework::MISSING_PHYSICAL_ID"

Event = dict[str, Any]
Handler = Callable[[Event, Any], Any]


def as_cloudformation_sends(value: Any) -> Any:
    """``value`` as a custom resource receives it: every scalar a string (``True`` -> ``"true"``,
    ``5`` -> ``"5"``), lists and maps kept.

    :raises ValueError: for ``None``: a template property that is null is not something a handler
        receives (CDK drops undefined values at synth), so a test may not rely on it.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {str(key): as_cloudformation_sends(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_cloudformation_sends(item) for item in value]
    if value is None:
        raise ValueError("a null property never reaches a custom resource handler")
    raise TypeError(f"{type(value).__name__} cannot be in a CloudFormation template")


def cfn_event(
    request_type: str,
    properties: Mapping[str, Any],
    *,
    old_properties: Mapping[str, Any] | None = None,
    physical_resource_id: str | None = None,
    logical_resource_id: str = "Resource",
    resource_type: str = "Custom::Test",
    request_id: str | None = None,
    service_token: str = SERVICE_TOKEN,
    response_url: str = RESPONSE_URL,
) -> Event:
    """The request CloudFormation sends for ``properties`` as written in the template.

    :raises ValueError: for an event CloudFormation never sends (an Update without old properties,
        a Create with a physical id, an Update or Delete without one).
    """
    if request_type not in ("Create", "Update", "Delete"):
        raise ValueError(f"RequestType {request_type!r}: CloudFormation sends Create|Update|Delete")
    if request_type == "Create" and physical_resource_id is not None:
        raise ValueError("a Create has no PhysicalResourceId yet")
    if request_type != "Create" and not physical_resource_id:
        raise ValueError(f"an {request_type} always carries the PhysicalResourceId")
    if (request_type == "Update") != (old_properties is not None):
        raise ValueError("OldResourceProperties come with an Update, and only with it")
    event: Event = {
        "RequestType": request_type,
        "ServiceToken": service_token,
        "ResponseURL": response_url,
        "StackId": STACK_ID,
        "RequestId": request_id or str(uuid.uuid4()),
        "LogicalResourceId": logical_resource_id,
        "ResourceType": resource_type,
        "ResourceProperties": {
            "ServiceToken": service_token,
            **as_cloudformation_sends(dict(properties)),
        },
    }
    if physical_resource_id is not None:
        event["PhysicalResourceId"] = physical_resource_id
    if old_properties is not None:
        event["OldResourceProperties"] = {
            "ServiceToken": service_token,
            **as_cloudformation_sends(dict(old_properties)),
        }
    return event


def poll_event(request: Event, on_event_answer: Mapping[str, Any]) -> Event:
    """The isComplete input the provider framework builds: the request with the onEvent answer
    merged in (framework.ts createResponseEvent)."""
    merged = {**_over_the_wire(request), **_over_the_wire(dict(on_event_answer))}
    merged["PhysicalResourceId"] = on_event_answer.get("PhysicalResourceId") or request.get(
        "PhysicalResourceId", request["RequestId"]
    )
    return merged


def resolve(value: Any, references: Mapping[str, Any]) -> Any:
    """A template value with its ``Ref``/``Fn::GetAtt``/``Fn::Join`` worked out as CloudFormation
    does before it sends the properties; ``references`` maps ``Ref`` names and ``Id.Attribute``
    to their values (a missing one is an error)."""
    if isinstance(value, list):
        return [resolve(item, references) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return references[value["Ref"]]
    if set(value) == {"Fn::GetAtt"}:
        logical_id, attribute = value["Fn::GetAtt"]
        return references[f"{logical_id}.{attribute}"]
    if set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(part, references)) for part in parts)
    return {key: resolve(item, references) for key, item in value.items()}


def _over_the_wire(payload: Any) -> Any:
    """A Lambda invoke's JSON round trip."""
    return json.loads(json.dumps(payload))


def one_line(reason: str) -> bool:
    """A failure reason a reader sees whole in the console's status column."""
    return bool(reason) and "\n" not in reason and "\r" not in reason


@dataclass
class Response:
    """The response object CloudFormation reads (crpg-ref-responses)."""

    Status: str
    Reason: str
    PhysicalResourceId: str
    StackId: str
    RequestId: str
    LogicalResourceId: str
    Data: dict[str, Any] = field(default_factory=dict)
    NoEcho: bool | None = None
    #: for provider-framework failures: the user function's error message alone (the framework
    #: appends its log-group lines and, from CDK's safeHandler, a stack trace)
    error: str | None = None
    #: how many times isComplete ran
    polls: int = 0

    @property
    def ok(self) -> bool:
        return self.Status == "SUCCESS"


def check_response(body: Mapping[str, Any], request: Event) -> Response:
    """Hold a PUT body to what CloudFormation accepts for ``request``; the parsed response."""
    assert body["Status"] in ("SUCCESS", "FAILED"), body
    for key in ("StackId", "RequestId", "LogicalResourceId"):
        assert body[key] == request[key], (key, body[key], request[key])
    physical = body.get("PhysicalResourceId")
    assert isinstance(physical, str) and 0 < len(physical) <= 1024, physical
    if request["RequestType"] == "Delete":
        # CloudFormation refuses a changed id on Delete (on Update a new id means replacement)
        assert physical == request["PhysicalResourceId"], (physical, request)
    if body["Status"] == "FAILED":
        assert body.get("Reason"), "a FAILED response needs a reason"
    data = body.get("Data") or {}
    assert isinstance(data, dict)
    # the whole response is at most 4096 bytes (crpg-ref-responses)
    assert len(json.dumps(dict(body)).encode()) <= 4096, len(json.dumps(dict(body)))
    return Response(
        Status=body["Status"],
        Reason=body.get("Reason", ""),
        PhysicalResourceId=physical,
        StackId=body["StackId"],
        RequestId=body["RequestId"],
        LogicalResourceId=body["LogicalResourceId"],
        Data=data,
        NoEcho=body.get("NoEcho"),
    )


class ProviderFramework:
    """CDK's provider framework around ``on_event`` (and ``is_complete``), in-process.

    :param max_polls: isComplete runs at most this many times; then the framework's onTimeout
        answers FAILED "Operation timed out" (the state machine's total timeout).
    :param between_polls: called before every poll after the first (a test's clock, or a queue
        of stubbed answers).
    """

    def __init__(
        self,
        on_event: Handler,
        is_complete: Handler | None = None,
        *,
        max_polls: int = 20,
        between_polls: Callable[[int], None] | None = None,
        function_name: str = "hyperpod-test-OnEvent",
    ) -> None:
        self.on_event = on_event
        self.is_complete = is_complete
        self.max_polls = max_polls
        self.between_polls = between_polls
        self.function_name = function_name
        #: every payload the user handlers received, in order
        self.invocations: list[tuple[str, Event]] = []

    def _invoke(self, which: str, handler: Handler, payload: Event) -> Any:
        sent = _over_the_wire(payload)
        self.invocations.append((which, sent))
        answer = handler(copy.deepcopy(sent), None)
        return _over_the_wire(answer) if answer is not None else {}

    def _failed(self, event: Event, error: BaseException) -> Response:
        message = str(error) or "error"
        # as framework.ts invokeUserFunction writes it (the stack trace then follows)
        reason = f"{message}\n\nLogs: /aws/lambda/{self.function_name}\n"
        physical = event.get("PhysicalResourceId")
        if not physical:
            physical = (
                CREATE_FAILED_MARKER
                if event["RequestType"] == "Create"
                else MISSING_PHYSICAL_ID_MARKER
            )
        body = {
            "Status": "FAILED",
            "Reason": reason,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "PhysicalResourceId": physical,
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": event.get("Data"),
        }
        response = check_response(body, event)
        response.error = message
        return response

    def send(self, request: Event) -> Response:
        """Deliver one CloudFormation request; CloudFormation's view of the outcome."""
        request = _over_the_wire(request)
        if request["RequestType"] == "Delete" and request["PhysicalResourceId"] == (
            CREATE_FAILED_MARKER
        ):
            return check_response({**request, "Status": "SUCCESS", "Reason": "SUCCESS"}, request)
        sanitized = {**request, "ResponseURL": "..."}
        try:
            answer = self._invoke(
                "onEvent", self.on_event, {**sanitized, "ResponseURL": request["ResponseURL"]}
            )
            physical = answer.get("PhysicalResourceId") or (
                request["RequestId"]
                if request["RequestType"] == "Create"
                else request["PhysicalResourceId"]
            )
            if request["RequestType"] == "Delete" and physical != request["PhysicalResourceId"]:
                raise RuntimeError(
                    f'DELETE: cannot change the physical resource ID from "'
                    f'{request["PhysicalResourceId"]}" to "{physical}" during deletion'
                )
            event = {**request, **answer, "PhysicalResourceId": physical}
        except Exception as error:  # noqa: BLE001 (the framework turns every error into FAILED)
            return self._failed(request, error)
        if self.is_complete is None:
            return check_response({**event, "Status": "SUCCESS", "Reason": "SUCCESS"}, request)
        for poll in range(self.max_polls):
            if poll and self.between_polls is not None:
                self.between_polls(poll)
            try:
                result = self._invoke("isComplete", self.is_complete, event)
                if not result.get("IsComplete"):
                    if result.get("Data"):
                        raise RuntimeError('"Data" is not allowed if "IsComplete" is "False"')
                    continue
            except Exception as error:  # noqa: BLE001
                response = self._failed(event, error)
                response.polls = poll + 1
                return response
            done = {
                **event,
                **result,
                "Data": {**(event.get("Data") or {}), **(result.get("Data") or {})},
            }
            response = check_response({**done, "Status": "SUCCESS", "Reason": "SUCCESS"}, request)
            response.polls = poll + 1
            return response
        response = check_response(
            {**event, "Status": "FAILED", "Reason": "Operation timed out"}, request
        )
        response.polls = self.max_polls
        return response


class ResponseServer:
    """A local HTTP server standing in for CloudFormation's pre-signed response URL."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        bodies, headers = self.bodies, self.headers

        class _Put(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802
                length = int(self.headers["Content-Length"])
                headers.append({k.lower(): v for k, v in self.headers.items()})
                bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = HTTPServer(("127.0.0.1", 0), _Put)
        self.url = f"http://127.0.0.1:{self._server.server_port}/cfn-response?X-Amz-Signature=s"

    def answer(self, request: Event) -> Response:
        """The one response the handler PUT for ``request``, checked."""
        assert len(self.bodies) == 1, f"expected one answer, got {len(self.bodies)}"
        # S3 pre-signed PUT: no content type was signed, so none may be sent
        assert self.headers[0].get("content-type", "") == "", self.headers[0]
        body = self.bodies.pop()
        self.headers.pop()
        return check_response(body, request)


@contextmanager
def response_server() -> Iterator[ResponseServer]:
    """A :class:`ResponseServer` that runs for the ``with`` block."""
    server = ResponseServer()
    thread = threading.Thread(target=server._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server._server.shutdown()
        server._server.server_close()


def self_answering(
    handler: Handler, request: Event, server: ResponseServer, context: Any = None
) -> Response:
    """Deliver ``request`` (its ResponseURL pointed at ``server``) to a handler that answers
    CloudFormation itself; the response it PUT. A handler that raises instead of answering is a
    test failure: CloudFormation would wait an hour for it."""
    request = {**request, "ResponseURL": server.url}
    handler(_over_the_wire(request), context)
    return server.answer(request)

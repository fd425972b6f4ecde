"""The log bridge function: CloudWatch Logs subscription envelopes (gzip + base64, built here
from lines in the health monitoring agent's documented format) in, SNS messages out.

The handler is loaded from its asset directory by path, as Lambda runs it; botocore's Stubber
checks every Publish request against SNS's API shapes.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber
from support.modules import load_module

from hyperpod_cdk.alerts import LOG_BRIDGE_DIR, LOG_BRIDGE_HANDLER

handler = load_module("hyperpod_alerts_log_bridge_handler", LOG_BRIDGE_DIR / "handler.py")

REGION = "us-west-2"
TOPIC_ARN = f"arn:aws:sns:{REGION}:111122223333:ml-prod-alerts"
LOG_GROUP = "/aws/sagemaker/Clusters/ml-prod/abcdef123456"
STREAM = "SagemakerHealthMonitoringAgent/gpu-workers/i-0a1b2c3d4e5f60718"


def agent_line(condition: str, state: str, reason: str, kernel: str) -> str:
    """A detection line in the documented shape (note the key ``"details: "``)."""
    return json.dumps(
        {
            "level": "info",
            "ts": "2026-11-25T03:14:07Z",
            "msg": "NPD caught event: %v",
            "details: ": {
                "severity": "warn",
                "timestamp": "2026-11-25T03:14:05Z",
                "reason": reason,
                "message": f"Node condition {condition} is now: {state}, reason: {reason},"
                f' message: "{kernel}"',
            },
            "HealthMonitoringAgentDetectionEvent": "HealthEvent",
        }
    )


XID_79 = agent_line(
    "NvidiaErrorReboot",
    "True",
    "XidHardwareFailure",
    "NVRM: Xid (PCI:0000:53:00): 79, pid=<unknown>, name=<unknown>, GPU has fallen off the bus.",
)
ECC = agent_line(
    "NvidiaErrorTerminate",
    "True",
    "NvidiaGPUUnhealthy",
    "DCGM: volatile double-bit ECC errors on GPU 3",
)
CLEARED = agent_line("NvidiaErrorReboot", "False", "XidHardwareFailure", "recovered")
AGENT_INFO = json.dumps({"level": "info", "ts": "2026-11-25T03:00:00Z", "msg": "agent started"})


def envelope(
    lines: list[str],
    *,
    stream: str = STREAM,
    message_type: str = "DATA_MESSAGE",
) -> dict[str, Any]:
    """The event Lambda receives from a subscription filter."""
    payload = {
        "messageType": message_type,
        "owner": "111122223333",
        "logGroup": LOG_GROUP,
        "logStream": stream,
        "subscriptionFilters": ["hyperpod-health-agent"],
        "logEvents": [
            {"id": str(36000000000000000000 + n), "timestamp": 1764040447000 + n, "message": m}
            for n, m in enumerate(lines)
        ],
    }
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    return {"awslogs": {"data": data}}


_BOTOCORE = botocore.session.get_session()


@pytest.fixture
def sns(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """The Stubber of the SNS client the handler gets; every queued answer must be used."""
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
        botocore_session=_BOTOCORE,
    )
    client = session.client("sns")
    monkeypatch.setattr(handler, "sns_client", lambda: client)
    monkeypatch.setenv("TOPIC_ARN", TOPIC_ARN)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def expect_publish(stubber: Stubber, subject: Any = ANY, message: Any = ANY) -> None:
    stubber.add_response(
        "publish",
        {"MessageId": "b7c1d2e3-0000-4000-8000-000000000001"},
        {"TopicArn": TOPIC_ARN, "Subject": subject, "Message": message},
    )


def test_handler_name_matches_the_module() -> None:
    module, function = LOG_BRIDGE_HANDLER.split(".")
    assert (LOG_BRIDGE_DIR / f"{module}.py").is_file()
    assert callable(getattr(handler, function))


def test_one_message_per_fault_with_cluster_group_instance_and_action(sns: Stubber) -> None:
    expect_publish(
        sns, subject="HyperPod ml-prod: XidHardwareFailure (Xid 79) on i-0a1b2c3d4e5f60718"
    )
    expect_publish(sns, subject="HyperPod ml-prod: NvidiaGPUUnhealthy on i-0a1b2c3d4e5f60718")
    result = handler.handler(envelope([AGENT_INFO, XID_79, ECC]), None)
    assert result == {"faults": 2, "published": 2}


def test_message_body_is_readable_text(sns: Stubber) -> None:
    captured: list[str] = []

    class Capture:
        def __eq__(self, other: object) -> bool:
            captured.append(str(other))
            return True

    expect_publish(sns, message=Capture())
    handler.handler(envelope([XID_79]), None)
    lines = captured[0].splitlines()
    assert lines[0] == "HyperPod cluster ml-prod: the health monitoring agent found a fault"
    assert lines[1] == (
        "What happened: XidHardwareFailure (Xid 79) (node condition NvidiaErrorReboot)"
    )
    assert "Instance group: gpu-workers" in lines
    assert "Instance: i-0a1b2c3d4e5f60718" in lines
    assert "Repair action: Reboot" in lines
    assert (
        "batch-reboot-cluster-nodes --cluster-name ml-prod --node-ids i-0a1b2c3d4e5f60718"
        in (captured[0])
    )
    assert not captured[0].lstrip().startswith("{")


def test_replace_condition_says_replace() -> None:
    fault = handler.parse_line(ECC, cluster="ml-prod", group="gpu-workers", instance="i-0abc12345")
    assert fault is not None
    assert fault.repair_action() == "Replace"
    assert "batch-replace-cluster-nodes" in fault.message()


def test_control_message_publishes_nothing(sns: Stubber) -> None:
    result = handler.handler(envelope([], message_type="CONTROL_MESSAGE"), None)
    assert result == {"faults": 0, "published": 0}


@pytest.mark.parametrize(
    "line", [AGENT_INFO, CLEARED, "plain text HealthMonitoringAgentDetectionEvent"]
)
def test_non_fault_lines_publish_nothing(sns: Stubber, line: str) -> None:
    assert handler.handler(envelope([line]), None) == {"faults": 0, "published": 0}


def test_other_streams_of_the_group_are_skipped(sns: Stubber) -> None:
    event = envelope([XID_79], stream="LifecycleConfig/gpu-workers/i-0a1b2c3d4e5f60718")
    assert handler.handler(event, None) == {"faults": 0, "published": 0}


def test_publish_error_raises_for_retry_and_dead_letter_queue(sns: Stubber) -> None:
    sns.add_client_error("publish", "KMSAccessDeniedException", "no kms:GenerateDataKey")
    with pytest.raises(ClientError, match="KMSAccessDenied"):
        handler.handler(envelope([XID_79]), None)


@pytest.mark.parametrize(
    ("event", "error"),
    [
        ({}, "no awslogs.data"),
        ({"awslogs": {"data": "not base64!"}}, "not base64"),
        ({"awslogs": {"data": base64.b64encode(b"plain").decode()}}, "not gzip"),
        (
            {"awslogs": {"data": base64.b64encode(gzip.compress(b"{oops")).decode()}},
            "not JSON",
        ),
        (
            {"awslogs": {"data": base64.b64encode(gzip.compress(b'{"a": 1}')).decode()}},
            "no messageType",
        ),
        (
            {
                "awslogs": {
                    "data": base64.b64encode(
                        gzip.compress(b'{"messageType": "DATA_MESSAGE", "logGroup": "g"}')
                    ).decode()
                }
            },
            "DATA_MESSAGE without",
        ),
    ],
)
def test_malformed_envelope_raises_a_clear_error(event: dict[str, Any], error: str) -> None:
    with pytest.raises(handler.MalformedLogEnvelope, match=error):
        handler.handler(event, None)


def test_names_from_the_stream_and_group() -> None:
    assert handler.node_of(STREAM) == ("gpu-workers", "i-0a1b2c3d4e5f60718")
    assert handler.node_of("SagemakerHealthMonitoringAgent/i-0a1b2c3d4e5f60718") == (
        "unknown",
        "i-0a1b2c3d4e5f60718",
    )
    assert handler.cluster_of(LOG_GROUP) == "ml-prod"
    assert handler.cluster_of("/custom/group") == "/custom/group"


def test_log_group_name() -> None:
    assert handler.log_group_name("ml-prod", "abcdef123456") == LOG_GROUP


def test_subject_is_one_ascii_line_of_at_most_100_characters() -> None:
    fault = handler.Fault(
        cluster="c" * 60,
        group="g",
        instance="i-0a1b2c3d4e5f60718",
        reason="Température\nhigh " * 5,
        condition="",
        severity="",
        detail="",
        time="",
    )
    subject = fault.subject()
    assert len(subject) <= 100
    assert subject.isascii() and "\n" not in subject
    assert fault.repair_action() == "Unknown"


def test_filter_pattern_selects_the_detection_lines() -> None:
    assert handler.FILTER_PATTERN in XID_79
    assert handler.FILTER_PATTERN not in AGENT_INFO


# -- the agent's lines as AWS shows them -------------------------------------------------------

#: SageMaker developer guide, "SageMaker HyperPod health-monitoring agent" (docs.aws.amazon.com/
#: sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-health-monitoring-agent.html, read
#: 2026-11-27), its CloudWatch Logs Insights output, verbatim
AWS_DOC_EKS_LINE = (
    '{"level":"info","ts":"2024-08-21T18:35:35Z","msg":"NPD caught event: %v","details: ":'
    '{"severity":"warn","timestamp":"2024-08-22T20:59:29Z","reason":"XidHardwareFailure",'
    '"message":"Node condition NvidiaErrorReboot is now: True, reason: XidHardwareFailure, '
    'message: \\"NVRM: Xid (PCI:0000:b9:00): 71, pid=<unknown>, name=<unknown>, NVLink: fatal '
    'error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)\\""},'
    '"HealthMonitoringAgentDetectionEvent":"HealthEvent"}'
)
#: AWS's own Slurm bridge, awslabs/awsome-distributed-ai@95b939cdc5b24ded03a70da21533964f9354b731
#: 1.architectures/5.sagemaker-hyperpod/tools/devops-agent/deploy/lambda/hma_cw_bridge.py,
#: module docstring ("Each `message` is a JSON string that HMA wrote"), verbatim
AWS_SLURM_DCGM_LINE = (
    '{"level":"info","ts":"2026-07-20T22:53:17Z",'
    '"msg":"DCGM Policy Violation found ",'
    '"condition: ":"XID Error","data: ":{"ErrNum":79},'
    '"HealthMonitoringAgentDetectionEvent":"HealthEvent"}'
)
#: the same file, ``_extract_fault`` "Shape 3: NPD condition transition" (its ``...`` filled
#: with a reason and message of the EKS line's kind)
AWS_SLURM_NPD_LINE = json.dumps(
    {
        "level": "info",
        "ts": "2026-07-20T22:53:17Z",
        "msg": "NPD caught positive condition",
        "condition details": {
            "type": "NvidiaGPUUnhealthy",
            "status": "True",
            "reason": "NvidiaGpuXidError",
            "message": "NVRM: Xid (PCI:0000:53:00): 48, pid=1234, name=python, DBE (0x1,0x0)",
        },
        "HealthMonitoringAgentDetectionEvent": "HealthEvent",
    }
)
WHERE = {"cluster": "ml-prod", "group": "gpu-workers", "instance": "i-0a1b2c3d4e5f60718"}


def test_the_documented_eks_line_names_its_xid_and_reboots() -> None:
    fault = handler.parse_line(AWS_DOC_EKS_LINE, **WHERE)
    assert fault is not None
    assert fault.reason == "XidHardwareFailure (Xid 71)"
    assert fault.condition == "NvidiaErrorReboot"
    assert fault.repair_action() == "Reboot"
    assert fault.time == "2024-08-22T20:59:29Z"


def test_the_slurm_dcgm_violation_says_which_xid(sns: Stubber) -> None:
    """The Slurm agent's ``condition: `` and ``data: .ErrNum``: the alert names Xid 79."""
    fault = handler.parse_line(AWS_SLURM_DCGM_LINE, **WHERE)
    assert fault is not None
    assert fault.reason == "XID Error (Xid 79)"
    assert fault.repair_action() == "Replace"  # as AWS's Slurm bridge maps it
    assert fault.time == "2026-07-20T22:53:17Z"
    assert fault.detail == 'DCGM Policy Violation found: {"ErrNum": 79}'
    text = fault.message()
    assert "What happened: XID Error (Xid 79)" in text
    assert "batch-replace-cluster-nodes --cluster-name ml-prod" in text
    expect_publish(sns, subject="HyperPod ml-prod: XID Error (Xid 79) on i-0a1b2c3d4e5f60718")
    assert handler.handler(envelope([AWS_SLURM_DCGM_LINE]), None) == {"faults": 1, "published": 1}


def test_a_dcgm_violation_that_is_no_xid_keeps_its_number_as_an_error() -> None:
    line = AWS_SLURM_DCGM_LINE.replace("XID Error", "PCIe Replay Errors")
    fault = handler.parse_line(line, **WHERE)
    assert fault is not None and fault.reason == "PCIe Replay Errors (error 79)"


def test_the_slurm_npd_condition_is_read_from_condition_details() -> None:
    fault = handler.parse_line(AWS_SLURM_NPD_LINE, **WHERE)
    assert fault is not None
    assert fault.condition == "NvidiaGPUUnhealthy"
    assert fault.reason == "NvidiaGpuXidError (Xid 48)"
    assert fault.repair_action() == "Replace"
    assert "DBE" in fault.detail


def test_a_cleared_npd_condition_is_no_fault() -> None:
    cleared = AWS_SLURM_NPD_LINE.replace('"status": "True"', '"status": "False"')
    assert handler.parse_line(cleared, **WHERE) is None

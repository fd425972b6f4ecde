"""The sagemaker-observability extension custom resource against a stubbed SageMaker API:
create, update, delete, a Degraded extension, an in-progress then Active sequence, and the
deadline that fails before the Provider's total timeout.

The handler is loaded from its asset directory by path, as Lambda runs it; botocore's Stubber
checks every request and answer against the pinned service model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from support.modules import load_module

from hyperpod_cdk.observability import EXTENSION_HANDLER_DIR

handler = load_module(
    "hyperpod_observability_extension_handler", EXTENSION_HANDLER_DIR / "handler.py"
)

REGION = "us-west-2"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:111122223333:cluster/abcdef123456"
OTHER_CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:111122223333:cluster/zyxwvu987654"
EXTENSION_ARN = (
    f"arn:aws:sagemaker:{REGION}:111122223333:extension/sagemaker-observability/abcdef123456/x1y2z3"
)
WORKSPACE = f"arn:aws:aps:{REGION}:111122223333:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"
CONFIG = {
    "ampWorkspace": {
        "arn": WORKSPACE,
        "prometheusEndpoint": f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/"
        "ws-0123abcd-4567-89ef-0123-456789abcdef/",
    },
    "metricsProvider": {"nodeMetrics": {"level": "ADVANCED"}},
}
CONFIG_JSON = json.dumps(CONFIG, sort_keys=True, separators=(",", ":"))
REQUEST_ID = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"

_BOTOCORE = botocore.session.get_session()


@pytest.fixture
def sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
        botocore_session=_BOTOCORE,
    )
    client = session.client("sagemaker")

    def client_of(region: str) -> Any:
        assert region == REGION  # the cluster's region, read from its ARN
        return client

    monkeypatch.setattr(handler, "sagemaker_client", client_of)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def properties(**changes: Any) -> dict[str, Any]:
    base = {
        "ServiceToken": "arn:aws:lambda:us-west-2:111122223333:function:provider",
        "ClusterArn": CLUSTER_ARN,
        "ExtensionName": "sagemaker-observability",
        "ExtensionVersion": "1.2.0",
        "ConfigurationValues": CONFIG,
        "TimeoutSeconds": "3300",
    }
    base.update(changes)
    return base


def request(kind: str, **fields: Any) -> dict[str, Any]:
    event = {"RequestType": kind, "RequestId": REQUEST_ID, "ResourceProperties": properties()}
    if kind != "Create":
        event["PhysicalResourceId"] = EXTENSION_ARN
    event.update(fields)
    return event


def described(
    status: str, version: str = "1.2.0", issues: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "ExtensionDetails": {
            "ClusterArn": CLUSTER_ARN,
            "ExtensionArn": EXTENSION_ARN,
            "ExtensionName": "sagemaker-observability",
            "ExtensionVersion": version,
            "Status": status,
            "ConfigurationValues": CONFIG_JSON,
        },
        "NodeSummary": {"TotalCount": 4, "ActiveCount": 4 if status == "Active" else 1},
    }
    if issues is not None:
        answer["Health"] = {"Issues": issues}
    return answer


def expect_describe(stubber: Stubber, answer: dict[str, Any]) -> None:
    stubber.add_response(
        "describe_cluster_extension",
        answer,
        {"ClusterArn": CLUSTER_ARN, "ExtensionArn": EXTENSION_ARN},
    )


def poll(event: dict[str, Any], deadline: float | None = None) -> dict[str, Any]:
    merged = dict(event)
    merged["PhysicalResourceId"] = EXTENSION_ARN
    merged["Data"] = {"Deadline": deadline if deadline is not None else time.time() + 3300}
    result: dict[str, Any] = handler.is_complete(merged, None)
    return result


# -- create ------------------------------------------------------------------------------------


def test_create_sends_the_pinned_version_and_configuration(sagemaker: Stubber) -> None:
    sagemaker.add_response(
        "create_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {
            "ClusterArn": CLUSTER_ARN,
            "ExtensionName": "sagemaker-observability",
            "ExtensionVersion": "1.2.0",
            "ConfigurationValues": CONFIG_JSON,
            "ClientToken": REQUEST_ID,
        },
    )
    before = time.time()
    answer = handler.on_event(request("Create"), None)
    assert answer["PhysicalResourceId"] == EXTENSION_ARN
    assert int(before) + 3300 <= answer["Data"]["Deadline"] <= time.time() + 3300


def test_create_without_configuration_uses_the_defaults(sagemaker: Stubber) -> None:
    sagemaker.add_response(
        "create_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {
            "ClusterArn": CLUSTER_ARN,
            "ExtensionName": "sagemaker-observability",
            "ClientToken": REQUEST_ID,
        },
    )
    event = request(
        "Create",
        ResourceProperties=properties(ConfigurationValues={}, ExtensionVersion=""),
    )
    assert handler.on_event(event, None)["PhysicalResourceId"] == EXTENSION_ARN


def test_create_on_a_cluster_that_has_it_already_says_what_to_do(sagemaker: Stubber) -> None:
    sagemaker.add_client_error(
        "create_cluster_extension",
        "ResourceInUse",
        "Extension sagemaker-observability already exists",
    )
    with pytest.raises(handler.ExtensionFailed, match="delete-cluster-extension"):
        handler.on_event(request("Create"), None)


def test_in_progress_then_active(sagemaker: Stubber) -> None:
    expect_describe(sagemaker, described("Creating"))
    expect_describe(sagemaker, described("Creating"))
    expect_describe(sagemaker, described("Active"))
    event = request("Create")
    assert poll(event) == {"IsComplete": False}
    assert poll(event) == {"IsComplete": False}
    done = poll(event)
    assert done["IsComplete"] is True
    assert done["Data"] == {"ExtensionArn": EXTENSION_ARN, "Version": "1.2.0"}


def test_throttled_poll_reads_again(sagemaker: Stubber) -> None:
    sagemaker.add_client_error("describe_cluster_extension", "ThrottlingException", "slow down")
    assert poll(request("Create")) == {"IsComplete": False}


def test_degraded_fails_with_the_health_issues(sagemaker: Stubber) -> None:
    issues = [
        {
            "Code": "AccessDenied",
            "Message": "aps:RemoteWrite denied on the workspace",
            "NodeCount": 3,
        },
        {"Code": "DependencyUnreachable", "Message": "no route to aps-workspaces", "NodeCount": 1},
    ]
    expect_describe(sagemaker, described("Degraded", issues=issues))
    with pytest.raises(handler.ExtensionFailed) as failure:
        poll(request("Create"))
    message = str(failure.value)
    assert message.startswith(
        f"extension sagemaker-observability 1.2.0 on {CLUSTER_ARN} is Degraded; "
        "active on 1 of 4 node(s); "
    )
    assert "AccessDenied on 3 node(s): aps:RemoteWrite denied on the workspace" in message
    assert "DependencyUnreachable on 1 node(s): no route to aps-workspaces" in message


@pytest.mark.parametrize("status", ["CreateFailed", "UpdateFailed"])
def test_failed_status_fails(sagemaker: Stubber, status: str) -> None:
    expect_describe(
        sagemaker,
        described(
            status, issues=[{"Code": "InvalidConfiguration", "Message": "bad", "NodeCount": 4}]
        ),
    )
    with pytest.raises(handler.ExtensionFailed, match=f"is {status}; .*InvalidConfiguration"):
        poll(request("Create"))


def test_deadline_fails_before_the_providers_total_timeout(sagemaker: Stubber) -> None:
    """At the deadline (the construct sets it below the Provider's total timeout) the stack
    gets the last status, not the framework's bare 'Operation timed out'."""
    expect_describe(sagemaker, described("Creating"))
    with pytest.raises(handler.ExtensionFailed) as failure:
        poll(request("Create"), deadline=time.time() - 1)
    message = str(failure.value)
    assert f"extension {EXTENSION_ARN} is still Creating" in message
    assert "after the wait of 3300 s" in message
    assert "active on 1 of 4 node(s)" in message


def test_extension_gone_during_create_fails(sagemaker: Stubber) -> None:
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    with pytest.raises(handler.ExtensionFailed, match="no longer exists"):
        poll(request("Create"))


# -- update ------------------------------------------------------------------------------------


def test_update_changes_version_and_configuration_in_place(sagemaker: Stubber) -> None:
    new_config = {**CONFIG, "metricsProvider": {"nodeMetrics": {"level": "BASIC"}}}
    sagemaker.add_response(
        "update_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {
            "ClusterArn": CLUSTER_ARN,
            "ExtensionArn": EXTENSION_ARN,
            "ExtensionVersion": "1.3.0",
            "ConfigurationValues": json.dumps(new_config, sort_keys=True, separators=(",", ":")),
            "ClientToken": REQUEST_ID,
        },
    )
    event = request(
        "Update",
        ResourceProperties=properties(ExtensionVersion="1.3.0", ConfigurationValues=new_config),
        OldResourceProperties=properties(),
    )
    answer = handler.on_event(event, None)
    assert answer["PhysicalResourceId"] == EXTENSION_ARN


def test_update_waits_until_the_new_version_is_active(sagemaker: Stubber) -> None:
    """Right after the update call the extension may still read Active at the old version."""
    expect_describe(sagemaker, described("Active", version="1.2.0"))
    expect_describe(sagemaker, described("Updating", version="1.3.0"))
    expect_describe(sagemaker, described("Active", version="1.3.0"))
    event = request("Update", ResourceProperties=properties(ExtensionVersion="1.3.0"))
    assert poll(event) == {"IsComplete": False}
    assert poll(event) == {"IsComplete": False}
    assert poll(event)["IsComplete"] is True


def test_update_to_another_cluster_creates_a_new_extension(sagemaker: Stubber) -> None:
    new_arn = EXTENSION_ARN.replace("abcdef123456", "zyxwvu987654")
    sagemaker.add_response(
        "create_cluster_extension",
        {"ExtensionArn": new_arn},
        {
            "ClusterArn": OTHER_CLUSTER_ARN,
            "ExtensionName": "sagemaker-observability",
            "ExtensionVersion": "1.2.0",
            "ConfigurationValues": CONFIG_JSON,
            "ClientToken": REQUEST_ID,
        },
    )
    event = request(
        "Update",
        ResourceProperties=properties(ClusterArn=OTHER_CLUSTER_ARN),
        OldResourceProperties=properties(),
    )
    assert handler.on_event(event, None)["PhysicalResourceId"] == new_arn


# -- delete ------------------------------------------------------------------------------------


def expect_delete(stubber: Stubber) -> None:
    stubber.add_response(
        "delete_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {"ClusterArn": CLUSTER_ARN, "ExtensionArn": EXTENSION_ARN},
    )


def test_delete_then_wait_until_gone(sagemaker: Stubber) -> None:
    expect_delete(sagemaker)
    expect_describe(sagemaker, described("Deleting"))
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    event = request("Delete")
    assert handler.on_event(event, None) == {"PhysicalResourceId": EXTENSION_ARN}
    assert poll(event) == {"IsComplete": False}
    assert poll(event) == {"IsComplete": True}


def test_delete_of_a_gone_extension_is_complete(sagemaker: Stubber) -> None:
    sagemaker.add_client_error("delete_cluster_extension", "ResourceNotFound", "no such extension")
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    event = request("Delete")
    handler.on_event(event, None)
    assert poll(event) == {"IsComplete": True}


def test_delete_of_a_busy_extension_is_retried_by_the_poll(sagemaker: Stubber) -> None:
    sagemaker.add_client_error("delete_cluster_extension", "ConflictException", "Creating")
    expect_describe(sagemaker, described("Active"))
    expect_delete(sagemaker)
    event = request("Delete")
    handler.on_event(event, None)
    assert poll(event) == {"IsComplete": False}


def test_delete_failed_fails(sagemaker: Stubber) -> None:
    expect_describe(
        sagemaker,
        described(
            "DeleteFailed", issues=[{"Code": "InternalFailure", "Message": "x", "NodeCount": 2}]
        ),
    )
    with pytest.raises(handler.ExtensionFailed, match="DeleteFailed; .*InternalFailure"):
        poll(request("Delete"))


def test_delete_after_a_failed_create_calls_nothing(sagemaker: Stubber) -> None:
    event = request("Delete", PhysicalResourceId=REQUEST_ID)
    assert handler.on_event(event, None) == {"PhysicalResourceId": REQUEST_ID}
    assert handler.is_complete(event, None) == {"IsComplete": True}


def test_long_failure_messages_are_cut_for_cloudformation() -> None:
    details = described(
        "Degraded",
        issues=[{"Code": "Other", "Message": "m" * 1000, "NodeCount": 1} for _ in range(3)],
    )
    assert len(handler.failure_message(details)) == handler.MAX_MESSAGE

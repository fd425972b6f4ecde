"""Task governance: the custom resource handler (botocore Stubber); the region table is held to
its sources in test_task_governance_types.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from support.cfn_events import (
    CREATE_FAILED_MARKER,
    ProviderFramework,
    cfn_event,
    one_line,
    poll_event,
)
from support.modules import load_module

from hyperpod_cdk.eks.task_governance import HANDLER_DIR

REGION = "us-west-2"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:111122223333:cluster/abcdef123456"
QUOTA_ID = "q1w2e3r4t5y6"
QUOTA_ARN = f"arn:aws:sagemaker:{REGION}:111122223333:compute-quota/{QUOTA_ID}"


# -- the handler ---------------------------------------------------------------------------------

handler = load_module("hyperpod_task_governance_handler", HANDLER_DIR / "handler.py")
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
        assert region == REGION
        return client

    monkeypatch.setattr(handler, "sagemaker_client", client_of)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def quota_request(team: str = "research", count: int = 2) -> dict[str, Any]:
    return {
        "Name": f"c-{team}",
        "ClusterArn": CLUSTER_ARN,
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": count}],
            "ResourceSharingConfig": {"Strategy": "Lend"},
            "PreemptTeamTasks": "Never",
        },
        "ComputeQuotaTarget": {"TeamName": team, "FairShareWeight": 10},
        "ActivationState": "Enabled",
    }


def event(kind: str, request: dict[str, Any], old: dict[str, Any] | None = None, **extra: Any):
    """The request as CloudFormation sends it (tests/support/cfn_events.py)."""
    physical = extra.pop("PhysicalResourceId", None)
    if kind == "Create" and physical is not None:  # an isComplete input: onEvent's answer merged
        return poll_event(event(kind, request, old), {"PhysicalResourceId": physical, **extra})
    out = cfn_event(
        kind,
        {"Kind": "ComputeQuota", "Request": json.dumps(request)},
        old_properties=(
            {"Kind": "ComputeQuota", "Request": json.dumps(old)} if old is not None else None
        ),
        physical_resource_id=physical,
        resource_type="Custom::HyperPodComputeQuota",
    )
    out.update(extra)
    return out


@pytest.fixture
def framework() -> ProviderFramework:
    return ProviderFramework(handler.on_event, handler.is_complete)


def described(status: str, version: int = 1, reason: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ComputeQuotaArn": QUOTA_ARN,
        "ComputeQuotaId": QUOTA_ID,
        "Name": "c-research",
        "ComputeQuotaVersion": version,
        "Status": status,
        "ComputeQuotaTarget": {"TeamName": "research"},
        "CreationTime": "2026-11-25T10:00:00Z",
    }
    if reason:
        out["FailureReason"] = reason
    return out


def test_create_calls_the_create_api_with_the_request(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """The request travels as one JSON string, so its numbers (Count, FairShareWeight) reach the
    API as numbers although CloudFormation turns every property scalar into a string."""
    request = quota_request()
    sagemaker.add_response(
        "create_compute_quota", {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaId": QUOTA_ID}, request
    )
    create = event("Create", request)
    answer = handler.on_event(create, None)
    assert answer == {"PhysicalResourceId": QUOTA_ID, "Data": {"Arn": QUOTA_ARN, "Id": QUOTA_ID}}
    sagemaker.add_response(
        "create_compute_quota", {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaId": QUOTA_ID}, request
    )
    sagemaker.add_response("describe_compute_quota", described("Created"))
    response = framework.send(create)
    assert response.ok and response.PhysicalResourceId == QUOTA_ID
    assert response.Data == {"Arn": QUOTA_ARN, "Id": QUOTA_ID}


def test_the_same_create_delivered_twice_fails_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """CreateComputeQuota has no client token (botocore 1.44.5 CreateComputeQuotaRequest); a
    second delivery meets ConflictException (its documented error) and says what to do."""
    request = quota_request()
    sagemaker.add_client_error("create_compute_quota", "ConflictException", "name\nin use")
    answer = framework.send(event("Create", request))
    assert not answer.ok and answer.PhysicalResourceId == CREATE_FAILED_MARKER
    message = answer.error or ""
    assert one_line(message)
    assert message.startswith(f"ComputeQuota c-research already exists on {CLUSTER_ARN}")
    assert "aws sagemaker delete-compute-quota" in message
    # the rollback's Delete of the marker is answered by the framework, nothing is called
    assert framework.send(event("Delete", request, PhysicalResourceId=answer.PhysicalResourceId)).ok


def test_update_reads_the_version_and_updates_with_target_version(sagemaker: Stubber) -> None:
    old, new = quota_request(count=2), quota_request(count=1)
    sagemaker.add_response(
        "describe_compute_quota", described("Created", 3), {"ComputeQuotaId": QUOTA_ID}
    )
    sagemaker.add_response(
        "update_compute_quota",
        {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaVersion": 4},
        {
            "ComputeQuotaId": QUOTA_ID,
            "TargetVersion": 3,
            "ComputeQuotaConfig": new["ComputeQuotaConfig"],
            "ComputeQuotaTarget": new["ComputeQuotaTarget"],
            "ActivationState": "Enabled",
        },
    )
    answer = handler.on_event(event("Update", new, old, PhysicalResourceId=QUOTA_ID), None)
    assert answer == {"PhysicalResourceId": QUOTA_ID, "Data": {"FromVersion": "3"}}


def test_a_new_team_name_creates_a_new_quota(sagemaker: Stubber) -> None:
    old, new = quota_request("research"), quota_request("product")
    sagemaker.add_response(
        "create_compute_quota", {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaId": "n" * 12}, new
    )
    answer = handler.on_event(event("Update", new, old, PhysicalResourceId=QUOTA_ID), None)
    assert answer["PhysicalResourceId"] == "n" * 12


def test_delete_calls_the_delete_api(sagemaker: Stubber) -> None:
    sagemaker.add_response("delete_compute_quota", {}, {"ComputeQuotaId": QUOTA_ID})
    answer = handler.on_event(event("Delete", quota_request(), PhysicalResourceId=QUOTA_ID), None)
    assert answer == {"PhysicalResourceId": QUOTA_ID}


def test_delete_of_a_gone_quota_succeeds(sagemaker: Stubber) -> None:
    sagemaker.add_client_error("delete_compute_quota", "ResourceNotFound", "gone")
    sagemaker.add_client_error("describe_compute_quota", "ResourceNotFound", "gone")
    delete = event("Delete", quota_request(), PhysicalResourceId=QUOTA_ID)
    assert handler.on_event(delete, None) == {"PhysicalResourceId": QUOTA_ID}
    assert handler.is_complete(delete, None) == {"IsComplete": True}


def test_the_same_delete_delivered_twice_succeeds_both_times(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_response("delete_compute_quota", {}, {"ComputeQuotaId": QUOTA_ID})
    sagemaker.add_response("describe_compute_quota", described("Deleting"))
    sagemaker.add_client_error("describe_compute_quota", "ResourceNotFound", "gone")
    sagemaker.add_client_error("delete_compute_quota", "ResourceNotFound", "gone")
    sagemaker.add_client_error("describe_compute_quota", "ResourceNotFound", "gone")
    delete = event("Delete", quota_request(), PhysicalResourceId=QUOTA_ID)
    first, second = framework.send(delete), framework.send(delete)
    assert first.ok and second.ok
    assert first.PhysicalResourceId == second.PhysicalResourceId == QUOTA_ID


def test_delete_after_a_failed_create_calls_nothing(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """A physical id the service never gave (the framework's marker, a logical id): no call."""
    for physical in (CREATE_FAILED_MARKER, "TeamQuotaresearch"):
        answer = framework.send(event("Delete", quota_request(), PhysicalResourceId=physical))
        assert answer.ok and answer.PhysicalResourceId == physical


def test_a_failed_status_fails_with_the_service_reason(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_response(
        "create_compute_quota", {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaId": QUOTA_ID}
    )
    sagemaker.add_response(
        "describe_compute_quota", described("CreateFailed", reason="team quota\nexceeds cluster")
    )
    answer = framework.send(event("Create", quota_request()))
    assert not answer.ok and answer.PhysicalResourceId == QUOTA_ID
    assert "CreateFailed: team quota exceeds cluster" in (answer.error or "")
    assert one_line(answer.error or "")


def test_an_aws_error_with_line_breaks_fails_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_client_error(
        "create_compute_quota", "ResourceLimitExceeded", "too many quotas\non this cluster"
    )
    answer = framework.send(event("Create", quota_request()))
    assert not answer.ok and one_line(answer.error or "")
    assert "ResourceLimitExceeded" in (answer.error or "")


def test_in_progress_then_done(sagemaker: Stubber) -> None:
    sagemaker.add_response("describe_compute_quota", described("Creating"))
    sagemaker.add_response("describe_compute_quota", described("Created"))
    create = event("Create", quota_request(), PhysicalResourceId=QUOTA_ID)
    assert handler.is_complete(create, None) == {"IsComplete": False}
    assert handler.is_complete(create, None) == {
        "IsComplete": True,
        "Data": {"Arn": QUOTA_ARN, "Id": QUOTA_ID},
    }


def test_an_update_through_the_framework_waits_for_the_new_version(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    old, new = quota_request(count=2), quota_request(count=1)
    sagemaker.add_response(
        "describe_compute_quota", described("Created", 3), {"ComputeQuotaId": QUOTA_ID}
    )
    sagemaker.add_response(
        "update_compute_quota", {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaVersion": 4}
    )
    sagemaker.add_response("describe_compute_quota", described("Created", 3))
    sagemaker.add_response("describe_compute_quota", described("Updated", 4))
    answer = framework.send(event("Update", new, old, PhysicalResourceId=QUOTA_ID))
    assert answer.ok and answer.polls == 2
    assert answer.Data == {"FromVersion": "3", "Arn": QUOTA_ARN, "Id": QUOTA_ID}


def test_a_runtime_without_the_task_governance_api_fails_at_once_in_one_line(
    monkeypatch: pytest.MonkeyPatch, framework: ProviderFramework
) -> None:
    """The handler uses the Lambda runtime's boto3 (no bundled copy); where its botocore predates
    these APIs (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html, "Runtime-included
    SDK versions"), the first call fails in one line naming the operations."""
    from types import SimpleNamespace

    model = SimpleNamespace(operation_names=["ListClusters", "CreateComputeQuota"])
    client = SimpleNamespace(meta=SimpleNamespace(service_model=model))
    monkeypatch.setattr(handler.boto3, "client", lambda *a, **k: client)
    handler.sagemaker_client.cache_clear()
    try:
        answer = framework.send(event("Create", quota_request()))
    finally:
        handler.sagemaker_client.cache_clear()
    message = answer.error or ""
    assert not answer.ok and one_line(message)
    assert "has no SageMaker operation CreateClusterSchedulerConfig, " in message
    assert "CreateComputeQuota," not in message
    assert f"tested with botocore {handler.TESTED_BOTOCORE}" in message


def test_the_pinned_botocore_has_every_task_governance_operation() -> None:
    import botocore

    assert botocore.__version__ == handler.TESTED_BOTOCORE
    assert set(handler.OPERATIONS) <= set(_BOTOCORE.get_service_model("sagemaker").operation_names)


def test_an_update_waits_for_a_newer_version(sagemaker: Stubber) -> None:
    sagemaker.add_response("describe_compute_quota", described("Created", 3))
    sagemaker.add_response("describe_compute_quota", described("Updated", 4))
    update = event(
        "Update",
        quota_request(),
        quota_request(),
        PhysicalResourceId=QUOTA_ID,
        Data={"FromVersion": "3"},
    )
    assert handler.is_complete(update, None) == {"IsComplete": False}
    assert handler.is_complete(update, None)["IsComplete"] is True


def test_the_cluster_policy_uses_its_own_calls(sagemaker: Stubber) -> None:
    request = {
        "Name": "c",
        "ClusterArn": CLUSTER_ARN,
        "SchedulerConfig": {"PriorityClasses": [{"Name": "training", "Weight": 80}]},
    }
    sagemaker.add_response(
        "create_cluster_scheduler_config",
        {
            "ClusterSchedulerConfigArn": f"arn:aws:sagemaker:{REGION}:111122223333:"
            "cluster-scheduler-config/aaaaaaaaaaaa",
            "ClusterSchedulerConfigId": "aaaaaaaaaaaa",
        },
        request,
    )
    create = cfn_event("Create", {"Kind": "ClusterSchedulerConfig", "Request": json.dumps(request)})
    assert handler.on_event(create, None)["PhysicalResourceId"] == "aaaaaaaaaaaa"

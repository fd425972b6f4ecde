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
    out: dict[str, Any] = {
        "RequestType": kind,
        "ResourceProperties": {"Kind": "ComputeQuota", "Request": json.dumps(request)},
        **extra,
    }
    if old is not None:
        out["OldResourceProperties"] = {"Kind": "ComputeQuota", "Request": json.dumps(old)}
    return out


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


def test_create_calls_the_create_api_with_the_request(sagemaker: Stubber) -> None:
    request = quota_request()
    sagemaker.add_response(
        "create_compute_quota", {"ComputeQuotaArn": QUOTA_ARN, "ComputeQuotaId": QUOTA_ID}, request
    )
    answer = handler.on_event(event("Create", request), None)
    assert answer == {"PhysicalResourceId": QUOTA_ID, "Data": {"Arn": QUOTA_ARN, "Id": QUOTA_ID}}


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


def test_a_failed_status_fails_with_the_service_reason(sagemaker: Stubber) -> None:
    sagemaker.add_response(
        "describe_compute_quota", described("CreateFailed", reason="team quota exceeds cluster")
    )
    with pytest.raises(RuntimeError, match="CreateFailed: team quota exceeds cluster"):
        handler.is_complete(event("Create", quota_request(), PhysicalResourceId=QUOTA_ID), None)


def test_in_progress_then_done(sagemaker: Stubber) -> None:
    sagemaker.add_response("describe_compute_quota", described("Creating"))
    sagemaker.add_response("describe_compute_quota", described("Created"))
    create = event("Create", quota_request(), PhysicalResourceId=QUOTA_ID)
    assert handler.is_complete(create, None) == {"IsComplete": False}
    assert handler.is_complete(create, None) == {
        "IsComplete": True,
        "Data": {"Arn": QUOTA_ARN, "Id": QUOTA_ID},
    }


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
    create = {
        "RequestType": "Create",
        "ResourceProperties": {"Kind": "ClusterSchedulerConfig", "Request": json.dumps(request)},
    }
    assert handler.on_event(create, None)["PhysicalResourceId"] == "aaaaaaaaaaaa"

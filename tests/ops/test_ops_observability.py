"""The observability preflight checks against stubbed AWS answers: the pinned extension version
is offered (Slurm, ListClusterExtensionVersions, paginated), an adopted workspace exists and is
ACTIVE (DescribeWorkspace), and whether it has an alert manager definition; skipped when metrics
are off. Every call is in the documented read-only action list."""

from __future__ import annotations

from typing import Any

from ops_testkit import StubbedAws, by_name, environment

from hyperpod_cdk.config.observability import EXTENSION_NAME, EXTENSION_VERSION
from hyperpod_ops.aws import READ_ONLY_ACTIONS
from hyperpod_ops.observability import (
    ALERT_MANAGER_CHECK,
    EXTENSION_CHECK,
    OBSERVABILITY,
    WORKSPACE_CHECK,
    check_observability,
    offered_versions,
)

WORKSPACE_ID = "ws-0123abcd-4567-89ef-0123-456789abcdef"
WORKSPACE = f"arn:aws:aps:us-west-2:111122223333:workspace/{WORKSPACE_ID}"
LIST = {"ExtensionName": EXTENSION_NAME, "MaxResults": 100}


def versions(aws: StubbedAws, *found: str, token: str | None = None, after: str | None = None) -> None:  # fmt: skip
    answer: dict[str, Any] = {"ExtensionVersions": [{"ExtensionVersion": v} for v in found]}
    if token:
        answer["NextToken"] = token
    params = dict(LIST, **({"NextToken": after} if after else {}))
    aws.stub("sagemaker").add_response("list_cluster_extension_versions", answer, params)


def workspace(aws: StubbedAws, status: str = "ACTIVE") -> None:
    aws.stub("amp").add_response(
        "describe_workspace",
        {
            "workspace": {
                "workspaceId": WORKSPACE_ID,
                "arn": WORKSPACE,
                "status": {"statusCode": status},
                "createdAt": "2026-11-01",
            }
        },
        {"workspaceId": WORKSPACE_ID},
    )


def not_found(aws: StubbedAws, operation: str) -> None:
    aws.stub("amp").add_client_error(
        operation,
        service_error_code="ResourceNotFoundException",
        http_status_code=404,
        expected_params={"workspaceId": WORKSPACE_ID},
    )


def alert_manager(aws: StubbedAws) -> None:
    aws.stub("amp").add_response(
        "describe_alert_manager_definition",
        {
            "alertManagerDefinition": {
                "status": {"statusCode": "ACTIVE"},
                "data": b"alertmanager_config: ...",
                "createdAt": "2026-11-01",
                "modifiedAt": "2026-11-01",
            }
        },
        {"workspaceId": WORKSPACE_ID},
    )


def slurm(**changes: Any) -> Any:
    return environment("full", changes)


def eks(**changes: Any) -> Any:
    return environment("eks-full", changes)


def test_metrics_off_is_one_skip_and_no_call(aws: StubbedAws) -> None:
    (check,) = check_observability(environment("default"), aws("sagemaker"), aws("amp"))
    assert (check.name, check.outcome) == (OBSERVABILITY, "skip")
    assert aws.called == set()


def test_the_pinned_version_offered_passes(aws: StubbedAws) -> None:
    versions(aws, "1.2.0", EXTENSION_VERSION)
    (check,) = check_observability(slurm(), aws("sagemaker"), aws("amp"))
    assert (check.name, check.outcome) == (EXTENSION_CHECK, "pass")
    assert aws.called == {"sagemaker:ListClusterExtensionVersions"}
    assert aws.called <= set(READ_ONLY_ACTIONS)


def test_every_page_of_versions_is_read(aws: StubbedAws) -> None:
    versions(aws, "2.0.0", token="next")
    versions(aws, "1.0.0", after="next")
    assert offered_versions(aws("sagemaker")) == ["2.0.0", "1.0.0"]


def test_a_version_not_offered_fails_and_names_the_offered_ones(aws: StubbedAws) -> None:
    versions(aws, "1.3.0", "1.2.0")
    config = slurm(**{"observability.extension_version": "1.1.0"})
    (check,) = check_observability(config, aws("sagemaker"), aws("amp"))
    assert check.failed
    assert "1.1.0 (observability.extension_version) is not offered" in check.detail
    assert "1.3.0, 1.2.0" in check.detail
    assert "e.g. 1.3.0" in check.fix


def test_no_versions_at_all_fails(aws: StubbedAws) -> None:
    versions(aws)
    (check,) = check_observability(slurm(), aws("sagemaker"), aws("amp"))
    assert check.failed
    assert "offers no sagemaker-observability versions" in check.detail


def test_eks_with_a_new_workspace_needs_no_call(aws: StubbedAws) -> None:
    (check,) = check_observability(eks(), aws("sagemaker"), aws("amp"))
    assert (check.name, check.outcome) == (OBSERVABILITY, "pass")
    assert aws.called == set()


def test_an_active_adopted_workspace_with_an_alert_manager_passes(aws: StubbedAws) -> None:
    workspace(aws)
    alert_manager(aws)
    checks = by_name(
        check_observability(
            eks(**{"observability.prometheus_workspace_arn": WORKSPACE}),
            aws("sagemaker"),
            aws("amp"),
        )
    )
    assert checks[WORKSPACE_CHECK].outcome == "pass"
    manager = checks[ALERT_MANAGER_CHECK]
    assert manager.outcome == "pass"
    assert "leaves it as it is" in manager.detail
    assert aws.called == {"aps:DescribeWorkspace", "aps:DescribeAlertManagerDefinition"}
    assert aws.called <= set(READ_ONLY_ACTIONS)


def test_an_adopted_workspace_without_alert_manager_says_how_to_route(aws: StubbedAws) -> None:
    workspace(aws)
    not_found(aws, "describe_alert_manager_definition")
    checks = by_name(
        check_observability(
            eks(**{"observability.prometheus_workspace_arn": WORKSPACE}),
            aws("sagemaker"),
            aws("amp"),
        )
    )
    manager = checks[ALERT_MANAGER_CHECK]
    assert manager.outcome == "skip"
    assert "no alert manager definition" in manager.detail
    assert "sns_configs" in manager.detail
    assert "docs/observability.md" in manager.detail


def test_a_missing_adopted_workspace_fails(aws: StubbedAws) -> None:
    not_found(aws, "describe_workspace")
    (check,) = check_observability(
        eks(**{"observability.prometheus_workspace_arn": WORKSPACE}), aws("sagemaker"), aws("amp")
    )
    assert (check.name, check.failed) == (WORKSPACE_CHECK, True)
    assert f"no workspace {WORKSPACE_ID}" in check.detail


def test_a_workspace_that_is_not_active_fails(aws: StubbedAws) -> None:
    workspace(aws, "CREATING")
    (check,) = check_observability(
        eks(**{"observability.prometheus_workspace_arn": WORKSPACE}), aws("sagemaker"), aws("amp")
    )
    assert check.failed
    assert "CREATING, not ACTIVE" in check.detail


def test_slurm_with_an_adopted_workspace_checks_both(aws: StubbedAws) -> None:
    versions(aws, EXTENSION_VERSION)
    workspace(aws)
    alert_manager(aws)
    config = slurm(**{"observability.prometheus_workspace_arn": WORKSPACE})
    checks = by_name(check_observability(config, aws("sagemaker"), aws("amp")))
    assert list(checks) == [EXTENSION_CHECK, WORKSPACE_CHECK, ALERT_MANAGER_CHECK]
    assert not any(c.failed for c in checks.values())

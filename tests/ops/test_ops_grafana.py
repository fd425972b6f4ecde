"""The Grafana preflight checks: the region has Amazon Managed Grafana and offers the pinned
version (grafana ListVersions), and an active IAM Identity Center instance is visible (sso-admin
ListInstances); skipped without observability.grafana."""

from __future__ import annotations

from typing import Any

from ops_testkit import StubbedAws, by_name, environment

from hyperpod_cdk.facts import GRAFANA_VERSION
from hyperpod_ops.aws import READ_ONLY_ACTIONS
from hyperpod_ops.grafana import (
    GRAFANA_REGION,
    GRAFANA_VERSION_CHECK,
    IDENTITY_CENTER,
    check_grafana,
    grafana_wanted,
)
from hyperpod_ops.preflight import _steps

INSTANCE = "arn:aws:sso:::instance/ssoins-1234567890abcdef"


def instances(aws: StubbedAws, *found: dict[str, Any]) -> None:
    aws.stub("sso-admin").add_response("list_instances", {"Instances": list(found)}, {})


def versions(aws: StubbedAws, *offered: str) -> None:
    aws.stub("grafana").add_response("list_versions", {"grafanaVersions": list(offered)}, {})


def run(aws: StubbedAws, config: Any) -> dict[str, Any]:
    return by_name(check_grafana(config, aws("sso-admin"), aws("grafana")))


def instance(status: str = "ACTIVE") -> dict[str, Any]:
    return {
        "InstanceArn": INSTANCE,
        "IdentityStoreId": "d-1234567890",
        "OwnerAccountId": "111122223333",
        "Status": status,
    }


def grafana_config(base: str = "full", **changes: Any) -> Any:
    return environment(base, {"observability.grafana": True, **changes})


def test_the_shipped_full_configs_ask_for_grafana() -> None:
    assert grafana_wanted(environment("full"))
    assert grafana_wanted(environment("eks-full"))
    assert not grafana_wanted(environment("default"))


def test_an_active_instance_passes(aws: StubbedAws) -> None:
    instances(aws, instance())
    versions(aws, "9.4", GRAFANA_VERSION, "12.4")
    checks = run(aws, grafana_config())
    assert checks[GRAFANA_REGION].outcome == "pass"
    assert checks[GRAFANA_VERSION_CHECK].outcome == "pass"
    assert checks[IDENTITY_CENTER].outcome == "pass"
    assert INSTANCE in checks[IDENTITY_CENTER].detail
    assert "docs/dashboards.md" in checks[IDENTITY_CENTER].detail
    assert aws.called == {"sso:ListInstances", "grafana:ListVersions"}
    assert aws.called <= set(READ_ONLY_ACTIONS)


def test_a_version_not_offered_fails(aws: StubbedAws) -> None:
    instances(aws, instance())
    versions(aws, "12.4")
    check = run(aws, grafana_config())[GRAFANA_VERSION_CHECK]
    assert check.failed
    assert f"offers 12.4, not the pinned {GRAFANA_VERSION}" in check.detail


def test_no_instance_fails_and_says_what_to_do(aws: StubbedAws) -> None:
    instances(aws)
    versions(aws, GRAFANA_VERSION)
    check = run(aws, grafana_config())[IDENTITY_CENTER]
    assert check.failed
    assert "no active IAM Identity Center instance" in check.detail
    assert "observability.grafana" in check.detail
    assert "enable IAM Identity Center" in check.fix
    assert "observability.grafana: false" in check.fix


def test_an_instance_still_being_created_is_not_enough(aws: StubbedAws) -> None:
    instances(aws, instance("CREATE_IN_PROGRESS"))
    versions(aws, GRAFANA_VERSION)
    check = run(aws, grafana_config())[IDENTITY_CENTER]
    assert check.failed
    assert "1 instance(s) not active: CREATE_IN_PROGRESS" in check.detail


def test_a_region_without_grafana_fails(aws: StubbedAws) -> None:
    config = grafana_config()
    config = config.model_copy(update={"region": "sa-east-1"})
    instances(aws, instance())
    checks = run(aws, config)
    assert GRAFANA_VERSION_CHECK not in checks  # no Grafana API there to ask
    check = checks[GRAFANA_REGION]
    assert check.failed
    assert "sa-east-1 has no Amazon Managed Grafana" in check.detail
    assert "us-west-2" in check.detail


def test_without_grafana_nothing_is_called(aws: StubbedAws) -> None:
    (check,) = check_grafana(environment("default"), aws("sso-admin"), aws("grafana"))
    assert check.outcome == "skip"
    assert aws.called == set()


def test_preflight_runs_the_grafana_step(tmp_path: Any) -> None:
    steps = _steps(environment("default"), StubbedAws(), "111122223333", tmp_path)
    (step,) = [s for s in steps if s.name == "grafana"]
    assert step.services == ("sso-admin", "grafana")

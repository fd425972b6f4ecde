"""The rollback alarms preflight check: named alarms must exist; auto and none are skipped."""

from __future__ import annotations

from ops_testkit import StubbedAws, environment

from hyperpod_cdk.ops.alerts import ROLLBACK_ALARMS, check_rollback_alarms, named_rollback_alarms

G = "cluster.instance_groups"
TYPES = ["MetricAlarm", "CompositeAlarm"]


def answer(aws: StubbedAws, names: list[str], metric: list[str], composite: list[str] = []) -> None:  # noqa: B006
    aws.stub("cloudwatch").add_response(
        "describe_alarms",
        {
            "MetricAlarms": [{"AlarmName": n} for n in metric],
            "CompositeAlarms": [{"AlarmName": n} for n in composite],
        },
        {"AlarmNames": names, "AlarmTypes": TYPES, "MaxRecords": 100},
    )


def test_full_names_one_alarm_and_asks_for_one_auto() -> None:
    config = environment("full")
    assert named_rollback_alarms(config) == {
        "research-full-gpu-errors": [f"{G}[2].scheduled_update.rollback_alarms[0]"]
    }


def test_existing_alarms_pass(aws: StubbedAws) -> None:
    answer(aws, ["research-full-gpu-errors"], ["research-full-gpu-errors"])
    (check,) = check_rollback_alarms(environment("full"), aws("cloudwatch"))
    assert check.outcome == "pass"
    assert check.name == ROLLBACK_ALARMS


def test_a_composite_alarm_counts(aws: StubbedAws) -> None:
    answer(aws, ["research-full-gpu-errors"], [], ["research-full-gpu-errors"])
    (check,) = check_rollback_alarms(environment("full"), aws("cloudwatch"))
    assert check.outcome == "pass"


def test_a_missing_alarm_fails_with_its_key_path(aws: StubbedAws) -> None:
    config = environment(
        "full", {f"{G}[2].scheduled_update.rollback_alarms": ["research-full-gpu-errors", "typo"]}
    )
    answer(aws, ["research-full-gpu-errors", "typo"], ["research-full-gpu-errors"])
    (check,) = check_rollback_alarms(config, aws("cloudwatch"))
    assert check.failed
    assert f"'typo' ({G}[2].scheduled_update.rollback_alarms[1])" in check.detail
    assert "research-full-gpu-errors" not in check.detail
    assert "rollback_alarms: auto" in check.fix


def test_auto_and_none_call_nothing(aws: StubbedAws) -> None:
    config = environment("full", {f"{G}[2].scheduled_update.rollback_alarms": "auto"})
    (check,) = check_rollback_alarms(config, aws("cloudwatch"))
    assert check.outcome == "skip"
    (check,) = check_rollback_alarms(environment("default"), aws("cloudwatch"))
    assert check.outcome == "skip"
    assert aws.called == set()

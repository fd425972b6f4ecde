"""``alerts`` and ``rollback_alarms``: the shapes, the limits and the cross-key rules, each at
its key path."""

from __future__ import annotations

from typing import Any

import pytest
from config_testkit import assert_issue, config, errors, warnings

from hyperpod_cdk.config.alerts import (
    MAX_RULE_NAME,
    all_rollback_alarm_names,
    auto_rollback_alarm_name,
    auto_rollback_groups,
    auto_rollback_rule_name,
    partition_of,
)

TOPIC = "arn:aws:sns:us-west-2:444455556666:shared-alerts"
GROUP = "cluster.instance_groups[2]"
UPDATE = f"{GROUP}.scheduled_update"
SCHEDULE = "cron(0 3 ? * SUN *)"


# -- alerts ------------------------------------------------------------------------------------


def test_alerts_default_to_error_events_and_node_health() -> None:
    cfg = config({"alerts": {"emails": ["oncall@example.com"]}})
    assert cfg.alerts is not None
    assert cfg.alerts.event_levels == ["Error"]
    assert cfg.alerts.node_health is True
    assert cfg.alerts.sns_topic_arn is None


def test_no_alerts_section_means_none() -> None:
    assert config({}).alerts is None


def test_a_topic_of_another_account_in_the_region_is_accepted() -> None:
    cfg = config({"alerts": {"sns_topic_arn": TOPIC}})
    assert cfg.alerts is not None and cfg.alerts.sns_topic_arn == TOPIC


@pytest.mark.parametrize("email", ["oncall", "oncall@example", "on call@example.com", "@x.com"])
def test_an_email_that_is_no_address_is_an_error(email: str) -> None:
    assert_issue(errors({"alerts": {"emails": [email]}}), "alerts.emails[0]", "email address")


def test_the_same_email_twice_is_an_error() -> None:
    found = errors({"alerts": {"emails": ["a@example.com", "A@example.com"]}})
    assert_issue(found, "alerts.emails", "appears 2 times")


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sqs:us-west-2:111122223333:queue",
        "arn:aws:sns:us-west-2:111122223333:topic.fifo",
        "arn:aws:sns:us-west-2:1111:topic",
        "topic",
    ],
)
def test_a_value_that_is_no_standard_topic_arn_is_an_error(arn: str) -> None:
    assert_issue(errors({"alerts": {"sns_topic_arn": arn}}), "alerts.sns_topic_arn", "SNS topic")


def test_a_topic_of_another_region_is_an_error() -> None:
    arn = "arn:aws:sns:us-east-1:111122223333:alerts"
    assert_issue(
        errors({"alerts": {"sns_topic_arn": arn}}), "alerts.sns_topic_arn", "aws/us-east-1"
    )


def test_a_topic_of_another_partition_is_an_error() -> None:
    arn = "arn:aws-cn:sns:us-west-2:111122223333:alerts"
    assert_issue(
        errors({"alerts": {"sns_topic_arn": arn}}), "alerts.sns_topic_arn", "aws-cn/us-west-2"
    )


def test_emails_and_a_topic_together_are_an_error() -> None:
    found = errors({"alerts": {"emails": ["a@example.com"], "sns_topic_arn": TOPIC}})
    assert_issue(found, "alerts.sns_topic_arn", "not both")


def test_no_receiver_at_all_is_a_warning() -> None:
    assert_issue(warnings({"alerts": {}}), "alerts.emails", "nobody is subscribed")


def test_an_unknown_level_is_an_error() -> None:
    found = errors({"alerts": {"emails": ["a@example.com"], "event_levels": ["Info"]}})
    assert_issue(found, "alerts.event_levels[0]", "'Info' is not allowed")


def test_a_level_twice_is_an_error() -> None:
    found = errors({"alerts": {"emails": ["a@example.com"], "event_levels": ["Warn", "Warn"]}})
    assert_issue(found, "alerts.event_levels", "'Warn' appears 2 times")


def test_event_levels_without_continuous_provisioning_is_a_warning() -> None:
    changes = {
        "alerts": {"emails": ["a@example.com"]},
        "cluster.node_provisioning_mode": None,
    }
    assert_issue(warnings(changes), "alerts.event_levels", "only under Continuous provisioning")


def test_no_event_levels_without_continuous_provisioning_is_quiet() -> None:
    changes = {
        "alerts": {"emails": ["a@example.com"], "event_levels": []},
        "cluster.node_provisioning_mode": None,
    }
    assert not [w for w in warnings(changes) if w.path.startswith("alerts")]


def test_an_unknown_alerts_key_is_an_error() -> None:
    assert_issue(errors({"alerts": {"email": ["a@example.com"]}}), "alerts.email", "unknown key")


@pytest.mark.parametrize(
    ("region", "partition"),
    [("us-west-2", "aws"), ("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov")],
)
def test_partition_of(region: str, partition: str) -> None:
    assert partition_of(region) == partition


# -- rollback_alarms ---------------------------------------------------------------------------


def updated(rollback_alarms: Any, key: str = "scheduled_update") -> dict[str, Any]:
    update: dict[str, Any] = {"rollback_alarms": rollback_alarms}
    if key == "scheduled_update":
        update["schedule"] = SCHEDULE
    else:
        update["strategy"] = "WhenIdle"
    return {f"{GROUP}.{key}": update}


@pytest.mark.parametrize("key", ["scheduled_update", "auto_patch"])
def test_auto_names_the_groups_own_alarm(key: str) -> None:
    cfg = config(updated("auto", key))
    assert auto_rollback_groups(cfg) == ["gpu"]
    assert all_rollback_alarm_names(cfg) == ["test-env-gpu-rollback"]


def test_auto_on_both_updates_of_a_group_is_one_alarm() -> None:
    cfg = config({**updated("auto"), **updated("auto", "auto_patch")})
    assert auto_rollback_groups(cfg) == ["gpu"]
    assert all_rollback_alarm_names(cfg) == ["test-env-gpu-rollback"]


def test_named_alarms_stay_as_they_are_and_an_empty_list_means_none() -> None:
    assert all_rollback_alarm_names(config(updated(["gpu-errors", "Xid storm"]))) == [
        "gpu-errors",
        "Xid storm",
    ]
    assert all_rollback_alarm_names(config(updated([]))) == []
    assert auto_rollback_groups(config(updated([]))) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "at least 1 character"),
        ("   ", "CloudWatch alarm name"),
        ("line\nbreak", "CloudWatch alarm name"),
        ("tab\there", "CloudWatch alarm name"),
        ("bell\x07", "CloudWatch alarm name"),
        ("x" * 256, "at most 255 characters"),
    ],
)
def test_an_alarm_name_cloudwatch_refuses_is_an_error(value: str, fragment: str) -> None:
    found = errors(updated(["good", value]))
    assert [i.path for i in found] == [f"{UPDATE}.rollback_alarms[1]"], found
    assert fragment in found[0].message, found


def test_a_255_character_alarm_name_with_unicode_is_accepted() -> None:
    name = "ä" * 255
    assert all_rollback_alarm_names(config(updated([name]))) == [name]


def test_a_word_other_than_auto_is_an_error() -> None:
    assert_issue(errors(updated("automatic")), f"{UPDATE}.rollback_alarms", "'auto'")


def test_more_than_ten_alarms_is_an_error() -> None:
    found = errors(updated([f"a{i}" for i in range(11)]))
    assert_issue(found, f"{UPDATE}.rollback_alarms", "at most 10")


def test_rule_names_fit_eventbridge_and_stay_unique() -> None:
    cluster, group = "c" * 63, "g" * 63
    long_name = auto_rollback_rule_name(cluster, group)
    assert len(long_name) == MAX_RULE_NAME
    assert long_name != auto_rollback_rule_name(cluster, "g" * 62 + "h")
    assert auto_rollback_rule_name("ml", "gpu") == auto_rollback_alarm_name("ml", "gpu")
    assert auto_rollback_alarm_name("ml", "gpu") == "ml-gpu-rollback"

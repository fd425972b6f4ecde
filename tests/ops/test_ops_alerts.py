"""The alerts preflight checks: named rollback alarms must exist (auto and none are skipped); an
existing alerts topic must let its publishers publish, through its key too."""

from __future__ import annotations

import json
from typing import Any

from ops_testkit import StubbedAws, environment

from hyperpod_ops.alerts import (
    ALERTS_TOPIC,
    ROLLBACK_ALARMS,
    check_alerts_topic,
    check_rollback_alarms,
    named_rollback_alarms,
    topic_publishers,
)

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


# -- an existing alerts topic --------------------------------------------------------------------

TOPIC = "arn:aws:sns:us-west-2:111122223333:oncall"
KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ACCOUNT = "arn:aws:iam::111122223333:root"


def _with_topic(base: str = "full", **changes: object) -> Any:
    return environment(base, {"alerts.emails": [], "alerts.sns_topic_arn": TOPIC, **changes})


def _statement(service: str, actions: list[str], **extra: object) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions,
            "Resource": "*", **extra}  # fmt: skip


def _topic(aws: StubbedAws, policy: list[dict[str, Any]], key: str | None = None) -> None:
    attributes = {"TopicArn": TOPIC, "Policy": json.dumps({"Statement": policy})}
    if key is not None:
        attributes["KmsMasterKeyId"] = key
    aws.stub("sns").add_response(
        "get_topic_attributes", {"Attributes": attributes}, {"TopicArn": TOPIC}
    )


def _key_policy(aws: StubbedAws, statements: list[dict[str, Any]]) -> None:
    aws.stub("kms").add_response(
        "get_key_policy",
        {"Policy": json.dumps({"Statement": statements})},
        {"KeyId": KEY, "PolicyName": "default"},
    )


PUBLISH = [
    _statement(
        "events.amazonaws.com", ["sns:Publish"], Condition={"ArnLike": {"aws:SourceArn": "x"}}
    ),
    _statement("aps.amazonaws.com", ["SNS:Publish", "sns:GetTopicAttributes"]),
]
KEY_USE = [
    {"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "kms:*", "Resource": "*"},
    _statement("events.amazonaws.com", ["kms:GenerateDataKey*", "kms:Decrypt"]),
    _statement("cloudwatch.amazonaws.com", ["kms:GenerateDataKey*", "kms:Decrypt"]),
    _statement("aps.amazonaws.com", ["kms:*"]),
]


def test_who_publishes_follows_the_config() -> None:
    assert set(topic_publishers(_with_topic())) == {
        "events.amazonaws.com",  # the EventBridge rules
        "cloudwatch.amazonaws.com",  # full asks for an auto rollback alarm
        "aps.amazonaws.com",  # its own workspace routes the alert rules
    }
    adopted = _with_topic(
        **{
            "observability.prometheus_workspace_arn": "arn:aws:aps:us-west-2:111122223333:workspace/ws-1"
        }
    )
    assert "aps.amazonaws.com" not in topic_publishers(adopted)


def test_an_encrypted_topic_that_lets_every_publisher_in_passes(aws: StubbedAws) -> None:
    _topic(aws, PUBLISH, KEY)
    _key_policy(aws, KEY_USE)
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "pass", check
    assert check.name == ALERTS_TOPIC and f"encrypted with {KEY}" in check.detail


def test_each_missing_permission_is_named(aws: StubbedAws) -> None:
    _topic(aws, PUBLISH[1:], KEY)  # no EventBridge statement
    _key_policy(aws, [KEY_USE[0], KEY_USE[1], _statement("aps.amazonaws.com", ["kms:Decrypt"])])
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "fail"
    assert "access policy does not let events.amazonaws.com publish" in check.detail
    assert (
        f"key {KEY} does not let cloudwatch.amazonaws.com use kms:GenerateDataKey, kms:Decrypt"
        in check.detail
    )
    assert "does not let aps.amazonaws.com use kms:GenerateDataKey (" in check.detail
    assert "key policy" in (check.fix or "")


def test_prometheus_must_also_read_the_topics_attributes(aws: StubbedAws) -> None:
    """AMP user guide, AMP-alertmanager-receiver-AMPpermission (read 2026-11-27): the topic
    statement for aps.amazonaws.com allows sns:Publish and sns:GetTopicAttributes."""
    _topic(aws, [PUBLISH[0], _statement("aps.amazonaws.com", ["sns:Publish"])])
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "fail"
    assert "does not let aps.amazonaws.com use sns:GetTopicAttributes" in check.detail


def test_an_unconditional_deny_wins(aws: StubbedAws) -> None:
    deny = {"Effect": "Deny", "Principal": "*", "Action": "sns:Publish", "Resource": "*"}
    _topic(aws, [*PUBLISH, deny])
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "fail" and "events.amazonaws.com publish" in check.detail


def test_the_aws_managed_sns_key_cannot_serve(aws: StubbedAws) -> None:
    _topic(aws, PUBLISH, "alias/aws/sns")
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "fail" and "AWS managed key alias/aws/sns" in check.detail


def test_an_unencrypted_topic_needs_no_key_policy(aws: StubbedAws) -> None:
    _topic(aws, PUBLISH)
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "pass" and "not encrypted" in check.detail


def test_a_missing_topic_fails(aws: StubbedAws) -> None:
    aws.stub("sns").add_client_error(
        "get_topic_attributes", service_error_code="NotFound", expected_params={"TopicArn": TOPIC}
    )
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "fail" and f"no topic {TOPIC}" in check.detail


def test_the_apps_own_topic_is_not_checked(aws: StubbedAws) -> None:
    (check,) = check_alerts_topic(environment("full"), aws("sns"), aws("kms"))
    assert check.outcome == "skip"


def test_the_log_bridge_needs_the_key_to_trust_this_accounts_iam(aws: StubbedAws) -> None:
    _topic(aws, PUBLISH, KEY)
    _key_policy(aws, KEY_USE[1:])  # every service, but no statement for the account
    (check,) = check_alerts_topic(_with_topic(), aws("sns"), aws("kms"))
    assert check.outcome == "fail" and "the log bridge's role" in check.detail

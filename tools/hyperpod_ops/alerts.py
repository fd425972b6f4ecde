"""Preflight checks of ``rollback_alarms``: the named alarms exist before an update needs them.

A rolling AMI update or patch reads its rollback alarms (``cloudwatch:DescribeAlarms``) while it
runs; a misspelt name is found only then, in the middle of the rollout. ``auto`` alarms are the
app's own (created before the cluster) and are not checked here.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.alerts import AUTO, PROMETHEUS_TOPIC_ACTIONS, auto_rollback_groups
from hyperpod_cdk.config.observability import observability_settings
from hyperpod_ops.aws import call_or_none
from hyperpod_ops.check import Check, failed, passed, skipped

ROLLBACK_ALARMS = "rollback alarms"
# DescribeAlarms takes at most 100 AlarmNames per call (botocore 1.44.5 ``AlarmNames`` max 100)
_PAGE = 100


def named_rollback_alarms(config: EnvironmentConfig) -> dict[str, list[str]]:
    """Each named (not ``auto``) rollback alarm -> the key paths that name it, in file order."""
    named: dict[str, list[str]] = {}
    for index, group in enumerate(config.cluster.instance_groups):
        for key in ("scheduled_update", "auto_patch"):
            update = getattr(group, key)
            if update is None or update.rollback_alarms == AUTO:
                continue
            for position, name in enumerate(update.rollback_alarms):
                path = f"cluster.instance_groups[{index}].{key}.rollback_alarms[{position}]"
                named.setdefault(name, []).append(path)
    return named


def check_rollback_alarms(config: EnvironmentConfig, cloudwatch: Any) -> list[Check]:
    """Every named rollback alarm exists in the config's account and region (metric and
    composite alarms both count: AutoRollbackConfiguration names either)."""
    named = named_rollback_alarms(config)
    if not named:
        return [skipped(ROLLBACK_ALARMS, "no group names rollback alarms (none, or auto)")]
    names = list(named)
    found: set[str] = set()
    for start in range(0, len(names), _PAGE):
        page = names[start : start + _PAGE]
        answer = cloudwatch.describe_alarms(
            AlarmNames=page, AlarmTypes=["MetricAlarm", "CompositeAlarm"], MaxRecords=_PAGE
        )
        for kind in ("MetricAlarms", "CompositeAlarms"):
            found |= {alarm["AlarmName"] for alarm in answer.get(kind, [])}
    missing = [name for name in names if name not in found]
    if missing:
        where = "; ".join(f"{name!r} ({', '.join(named[name])})" for name in missing)
        return [
            failed(
                ROLLBACK_ALARMS,
                f"no such alarm in {config.region}: {where}",
                "create the alarms first, fix the names, or use rollback_alarms: auto",
            )
        ]
    return [passed(ROLLBACK_ALARMS, f"{len(names)} alarm(s) exist: {', '.join(names)}")]


# -- an existing alerts topic (alerts.sns_topic_arn) -------------------------------------------

ALERTS_TOPIC = "alerts topic"
# SNS developer guide, "Key management" (an encrypted topic): the AWS managed key of SNS cannot
# be used by the services that publish events and alarms to a topic; read 2026-11-25.
AWS_MANAGED_SNS_KEY = "alias/aws/sns"
_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
# what each publishing service does on the topic: AMP's alert manager also reads the topic's
# attributes (AMP user guide, AMP-alertmanager-receiver-AMPpermission, read 2026-11-27); the
# others publish only (SNS developer guide, "Amazon SNS access policy" examples)
_TOPIC_ACTIONS: dict[str, tuple[str, ...]] = {"aps.amazonaws.com": PROMETHEUS_TOPIC_ACTIONS}


def topic_publishers(config: EnvironmentConfig) -> dict[str, str]:
    """The AWS services that publish to the alerts topic for ``config`` -> why.

    EventBridge always (the failed-state rule); CloudWatch with ``rollback_alarms: auto``
    (the alarms notify the topic); Amazon Managed Prometheus when the app's own workspace routes
    AWS's alert rules there (an adopted workspace's alert manager is its owner's to route).
    """
    publishers = {"events.amazonaws.com": "the EventBridge rules of this cluster"}
    if auto_rollback_groups(config):
        publishers["cloudwatch.amazonaws.com"] = "the rollback alarms (rollback_alarms: auto)"
    metrics = observability_settings(config)
    if metrics is not None and metrics.alert_rules and metrics.prometheus_workspace_arn is None:
        publishers["aps.amazonaws.com"] = "the Prometheus workspace's alert manager"
    return publishers


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _matches(patterns: list[str], wanted: str) -> bool:
    """An IAM action list allows ``wanted`` (``*`` wildcards, case-insensitive)."""
    return any(fnmatch.fnmatchcase(wanted.lower(), p.lower()) for p in patterns)


def _allows(policy: dict[str, Any], service: str, action: str) -> bool:
    """A resource policy has an Allow statement for ``service`` (or everyone) and ``action``,
    and no unconditional Deny of it. Conditions of an Allow are taken as the owner's scoping
    (a source ARN, an account); only the service calling can settle them."""

    def principal_matches(statement: dict[str, Any]) -> bool:
        principal = statement.get("Principal")
        if principal == "*":
            return True
        if isinstance(principal, dict):
            return (
                service in _listed(principal.get("Service"))
                or "*" in _listed(principal.get("AWS"))
                and "Condition" not in statement
            )
        return False

    statements = policy.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    allowed = False
    for statement in statements:
        if not principal_matches(statement) or not _matches(
            _listed(statement.get("Action")), action
        ):
            continue
        if statement.get("Effect") == "Deny" and "Condition" not in statement:
            return False
        allowed = allowed or statement.get("Effect") == "Allow"
    return allowed


def _delegates_to_iam(policy: dict[str, Any]) -> bool:
    """A key policy lets the key's account grant its use with IAM policies (the default key
    policy's statement: the account root, ``kms:*`` or the data key actions)."""
    statements = policy.get("Statement", [])
    for statement in [statements] if isinstance(statements, dict) else statements:
        principal = statement.get("Principal")
        accounts = _listed(principal.get("AWS")) if isinstance(principal, dict) else []
        if (
            statement.get("Effect") == "Allow"
            and any(a.endswith(":root") or a.isdigit() for a in accounts)
            and all(_matches(_listed(statement.get("Action")), a) for a in _KEY_ACTIONS)
        ):
            return True
    return False


def _policy(text: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def check_alerts_topic(config: EnvironmentConfig, sns: Any, kms: Any) -> list[Check]:
    """``alerts.sns_topic_arn``: the topic exists, its access policy lets EventBridge (and the
    Prometheus alert manager when it routes there) publish, and an encrypted topic's key lets
    every publishing service, and this account's IAM policies (the Slurm log bridge's role), use
    it. The app's own topic has all of that in its template."""
    alerts = config.alerts
    if alerts is None or not alerts.sns_topic_arn:
        return [skipped(ALERTS_TOPIC, "no existing topic named (the app makes its own)")]
    arn = alerts.sns_topic_arn
    answer = call_or_none(sns.get_topic_attributes, ("NotFound", "NotFoundException"), TopicArn=arn)
    if answer is None:
        return [
            failed(
                ALERTS_TOPIC,
                f"no topic {arn} (alerts.sns_topic_arn)",
                "create it first, or leave sns_topic_arn out and list emails",
            )
        ]
    attributes = answer["Attributes"]
    publishers = topic_publishers(config)
    problems: list[str] = []
    topic_policy = _policy(attributes.get("Policy"))
    for service, why in publishers.items():
        # the default topic policy (the owner's account) covers CloudWatch alarms; EventBridge
        # and Amazon Managed Prometheus need their service named (SNS developer guide,
        # "Amazon SNS access policy" examples; AMP user guide, alert manager and SNS)
        if service == "cloudwatch.amazonaws.com":
            continue
        actions = _TOPIC_ACTIONS.get(service, ("sns:Publish",))
        missing = [a for a in actions if not _allows(topic_policy, service, a)]
        if missing == ["sns:Publish"]:
            problems.append(f"its access policy does not let {service} publish ({why})")
        elif missing:
            problems.append(
                f"its access policy does not let {service} use {', '.join(missing)} ({why})"
            )
    key = attributes.get("KmsMasterKeyId")
    if key:
        if key.endswith(AWS_MANAGED_SNS_KEY):
            problems.append(
                f"it is encrypted with the AWS managed key {AWS_MANAGED_SNS_KEY}, whose policy "
                f"no service can be added to: {', '.join(publishers)} cannot publish"
            )
        else:
            key_policy = _policy(kms.get_key_policy(KeyId=key, PolicyName="default")["Policy"])
            for service, why in publishers.items():
                missing = [a for a in _KEY_ACTIONS if not _allows(key_policy, service, a)]
                if missing:
                    problems.append(
                        f"its key {key} does not let {service} use {', '.join(missing)} ({why})"
                    )
            if config.is_slurm and alerts.node_health and not _delegates_to_iam(key_policy):
                problems.append(
                    f"its key {key} does not let this account's IAM policies use it: the log "
                    "bridge's role (the health agent's GPU faults) cannot publish"
                )
    if problems:
        return [
            failed(
                ALERTS_TOPIC,
                f"{arn}: " + "; ".join(problems),
                "add the statements to the topic's access policy and its key policy (docs/alerts.md, "
                "Bringing your own topic), or leave sns_topic_arn out and let the app make one",
            )
        ]
    encrypted = f"encrypted with {key}" if key else "not encrypted"
    return [
        passed(
            ALERTS_TOPIC,
            f"{arn} ({encrypted}) lets {', '.join(publishers)} publish",
        )
    ]

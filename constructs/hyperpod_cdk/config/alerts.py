"""The ``alerts`` section and the groups' ``rollback_alarms``: who is told, and what rolls back.

``alerts`` says where alerts go (email addresses subscribed to a topic the app creates, or an
existing SNS topic) and which HyperPod events alert; the alerts construct
(:mod:`hyperpod_cdk.alerts.construct`) turns it into EventBridge rules on this cluster's events.
``rollback_alarms`` of a group's ``scheduled_update`` / ``auto_patch`` names the CloudWatch
alarms a rolling AMI update rolls back on: ``[]`` none, a list of existing alarms, or ``auto``
(the app creates the group's alarm, :func:`auto_rollback_alarm_name`).

Facts (read 2026-11-25):

==============================================  ==============================================
Fact                                            Source
==============================================  ==============================================
An alarm name is 1-255 characters, UTF-8,       botocore 1.44.5 (pinned) ``cloudwatch``
no ASCII control characters                     ``PutMetricAlarm.AlarmName`` (min 1, max 255;
                                                its documentation)
A rollback alarm name is not only whitespace    botocore 1.44.5 ``sagemaker`` ``AlarmDetails.
(``(?!\\s*$).+``); 1-10 alarms per update       AlarmName``, ``AutoRollbackConfiguration``
An EventBridge rule name is 1-64 of             botocore 1.44.5 ``events`` ``PutRule.Name``
``[.-_A-Za-z0-9]``
Cluster events (``event_levels``) exist only    ../shared/HYPERPOD_FACTS.md (2026-11-24);
under Continuous provisioning                   SageMaker developer guide, "SageMaker HyperPod
                                                cluster events reference"
A CloudWatch alarm action and an EventBridge    CloudWatch user guide, "Alarm actions"; the
SNS target name a topic of the same region;     EventBridge user guide, "Amazon SNS targets"
a topic of another account works when its       (the topic's access policy and, for an
access policy and its KMS key policy let the    encrypted topic, its key policy)
publishing service in
Amazon Managed Prometheus's alert manager       AMP user guide, "Giving Amazon Managed Service
needs ``sns:Publish`` and                       for Prometheus permission to send alert
``sns:GetTopicAttributes`` on the topic         messages to your Amazon SNS topic"
(:data:`PROMETHEUS_TOPIC_ACTIONS`), and on an   (docs.aws.amazon.com/prometheus/latest/
encrypted topic's key ``kms:GenerateDataKey*``  userguide/AMP-alertmanager-receiver-
and ``kms:Decrypt`` (:data:`TOPIC_KEY_ACTIONS`) AMPpermission.html, read 2026-11-27)
==============================================  ==============================================

Choices: ``emails`` and ``sns_topic_arn`` together are an error (bring your own topic or let
the app make one, never both: the app does not subscribe addresses to a topic it does not own).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Discriminator, Field, Tag

from hyperpod_cdk.config.base import IssueSink, StrictModel, matching

if TYPE_CHECKING:
    from hyperpod_cdk.config.cluster import AutoPatch, ScheduledUpdate
    from hyperpod_cdk.config.models import EnvironmentConfig

AUTO = "auto"
MAX_ALARM_NAME = 255  # PutMetricAlarm.AlarmName
MAX_RULE_NAME = 64  # PutRule.Name
MAX_ROLLBACK_ALARMS = 10  # DeploymentConfiguration.AutoRollbackConfiguration
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
SNS_TOPIC_ARN_PATTERN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$"
# 1-255 characters, none an ASCII control character, not only whitespace (see the table)
ALARM_NAME_PATTERN = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"

AlarmName = Annotated[
    str,
    matching(
        ALARM_NAME_PATTERN,
        "a CloudWatch alarm name: 1-255 characters, no control characters (tab, line break), "
        "not only spaces",
        min_length=1,
        max_length=MAX_ALARM_NAME,
    ),
]
# `auto` or a list of names: the value's own type picks the branch (tags left out of key paths)
RollbackAlarms = Annotated[
    Annotated[Literal["auto"], Tag("<auto>")]
    | Annotated[list[AlarmName], Field(max_length=MAX_ROLLBACK_ALARMS), Tag("<names>")],
    Discriminator(lambda value: "<auto>" if isinstance(value, str) else "<names>"),
]
Email = Annotated[
    str, matching(EMAIL_PATTERN, "an email address like ops@example.com", max_length=254)
]
SnsTopicArn = Annotated[
    str,
    matching(
        SNS_TOPIC_ARN_PATTERN,
        "a standard SNS topic ARN like arn:aws:sns:us-west-2:111122223333:hyperpod-alerts",
    ),
]
EventLevel = Literal["Error", "Warn"]

#: what Amazon Managed Prometheus's alert manager does on the alerts topic (see the facts)
PROMETHEUS_TOPIC_ACTIONS: tuple[str, ...] = ("sns:Publish", "sns:GetTopicAttributes")
#: what a publishing service does with an encrypted topic's key (AMP's and SNS's guides)
TOPIC_KEY_ACTIONS: tuple[str, ...] = ("kms:Decrypt", "kms:GenerateDataKey*")


def _default_levels() -> list[EventLevel]:
    return ["Error"]


class AlertsConfig(StrictModel):
    """Who is told when the cluster breaks, and about what.

    Alerts are published to an SNS topic: one the app creates (encrypted with a customer
    managed key; ``emails`` are subscribed to it) or ``sns_topic_arn``. Either way the topic
    receives HyperPod's failed-cluster events, the cluster events of ``event_levels`` and, with
    ``node_health``, unhealthy nodes (on Slurm also the health agent's GPU faults).
    """

    emails: list[Email] = Field(
        default_factory=list,
        description="Addresses subscribed to the topic the app creates (each confirms once).",
    )
    sns_topic_arn: SnsTopicArn | None = Field(
        default=None,
        description="An existing standard topic of this region instead (its access and key "
        "policies must let events.amazonaws.com and cloudwatch.amazonaws.com publish).",
    )
    event_levels: list[EventLevel] = Field(
        default_factory=_default_levels,
        description="HyperPod cluster event levels that alert (Continuous provisioning only).",
    )
    node_health: bool = Field(
        default=True,
        description="Alert on unhealthy nodes (and, on Slurm, the health agent's GPU faults).",
    )


def partition_of(region: str) -> str:
    """The ARN partition of ``region``: aws-cn, aws-us-gov or aws."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def auto_rollback_alarm_name(cluster_name: str, group_name: str) -> str:
    """The name of the alarm ``rollback_alarms: auto`` creates for a group:
    ``<cluster>-<group>-rollback`` (at most 136 characters; cluster and group names have 63)."""
    return f"{cluster_name}-{group_name}-rollback"


def auto_rollback_rule_name(cluster_name: str, group_name: str) -> str:
    """The EventBridge rule whose matches the group's auto alarm counts: the alarm's name, cut
    to 64 characters with a digest of the whole name when longer (``PutRule.Name``)."""
    name = auto_rollback_alarm_name(cluster_name, group_name)
    if len(name) <= MAX_RULE_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_RULE_NAME - 9]}-{digest}"


def rollback_alarm_names(
    update: ScheduledUpdate | AutoPatch | None, *, cluster_name: str, group_name: str
) -> list[str]:
    """The alarm names an update of a group rolls back on: the configured names, the group's
    auto alarm for ``auto``, none for ``[]`` or no update."""
    if update is None:
        return []
    if update.rollback_alarms == AUTO:
        return [auto_rollback_alarm_name(cluster_name, group_name)]
    return list(update.rollback_alarms)


def auto_rollback_groups(cfg: EnvironmentConfig) -> list[str]:
    """The groups whose scheduled update or auto patch says ``rollback_alarms: auto``."""
    return [
        group.name
        for group in cfg.cluster.instance_groups
        if any(
            update is not None and update.rollback_alarms == AUTO
            for update in (group.scheduled_update, group.auto_patch)
        )
    ]


def all_rollback_alarm_names(cfg: EnvironmentConfig) -> list[str]:
    """Every alarm name any group's update rolls back on (auto ones included), once each."""
    names = [
        name
        for group in cfg.cluster.instance_groups
        for update in (group.scheduled_update, group.auto_patch)
        for name in rollback_alarm_names(
            update, cluster_name=cfg.cluster_name, group_name=group.name
        )
    ]
    return list(dict.fromkeys(names))


_PATH = "alerts"


def check_alerts(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``alerts`` (errors and warnings) into ``out``."""
    alerts = cfg.alerts
    if alerts is None:
        return
    if alerts.emails and alerts.sns_topic_arn:
        out.error(
            f"{_PATH}.sns_topic_arn",
            "give emails (the app makes a topic and subscribes them) or sns_topic_arn (subscribe "
            "the addresses to your topic yourself), not both",
        )
    if not alerts.emails and not alerts.sns_topic_arn:
        out.warn(
            f"{_PATH}.emails",
            "no email and no sns_topic_arn: alerts go to a topic nobody is subscribed to; add "
            "emails or subscribe a receiver to the topic (docs/alerts.md)",
        )
    for email, count in Counter(e.lower() for e in alerts.emails).items():
        if count > 1:
            out.error(f"{_PATH}.emails", f"{email!r} appears {count} times; list it once")
    for level, count in Counter(alerts.event_levels).items():
        if count > 1:
            out.error(f"{_PATH}.event_levels", f"{level!r} appears {count} times; list it once")
    if alerts.sns_topic_arn:
        _, partition, _, region, _, _ = alerts.sns_topic_arn.split(":", 5)
        expected = partition_of(cfg.region)
        if region != cfg.region or partition != expected:
            out.error(
                f"{_PATH}.sns_topic_arn",
                f"the topic is in {partition}/{region}, the environment in {expected}/"
                f"{cfg.region}; EventBridge and CloudWatch alarms publish to a topic of their "
                "own region: use a topic there",
            )
    if alerts.event_levels and not cfg.cluster.continuous:
        out.warn(
            f"{_PATH}.event_levels",
            "HyperPod sends cluster events only under Continuous provisioning "
            "(cluster.node_provisioning_mode: Continuous); without it these levels never alert",
        )

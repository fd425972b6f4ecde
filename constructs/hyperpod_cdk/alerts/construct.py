"""The alerts of one HyperPod cluster, and the alarms its rolling updates roll back on.

- :class:`HyperPodAlerts`: an SNS topic (created, encrypted with a rotating customer managed
  key, or brought), email subscriptions, EventBridge rules on this cluster's events whose
  message is the text of :func:`~hyperpod_cdk.alerts.events.input_transformer`, and on Slurm
  the log bridge function (:data:`~hyperpod_cdk.alerts.LOG_BRIDGE_DIR`) subscribed to the
  cluster's log group.
- :class:`HyperPodRollbackAlarms`: per instance group, an EventBridge rule on the group's error
  and unhealthy-node events and a CloudWatch alarm on that rule's ``TriggeredRules`` metric,
  named :func:`~hyperpod_cdk.config.alerts.auto_rollback_alarm_name`.

Facts (read 2026-11-25):

============================================  ===============================================
Fact                                          Source
============================================  ===============================================
A publishing service needs ``kms:Decrypt``    SNS developer guide, "Key management",
and ``kms:GenerateDataKey*`` on an encrypted  "Enable compatibility between event sources from
topic's key                                   AWS services and encrypted topics"
EventBridge's KMS request carries no          EventBridge user guide, "Amazon SNS
``aws:SourceArn`` / ``aws:SourceAccount``:    permissions": the key statement for
its key statement has no such condition;      events.amazonaws.com has no condition; the topic
the topic policy limits it to the rules       policy takes ``aws:SourceArn``
CloudWatch alarms pass ``aws:SourceArn`` and CloudWatch user guide, "Alarm actions" (SNS
``aws:SourceAccount``                         encryption)
Amazon Managed Prometheus's alert manager     AMP user guide, "Giving Amazon Managed Service
needs ``sns:Publish`` and                     for Prometheus permission to send alert
``sns:GetTopicAttributes`` on the topic       messages to your Amazon SNS topic"
(``ArnEquals aws:SourceArn`` = the workspace, (AMP-alertmanager-receiver-AMPpermission, read
``aws:SourceAccount``), and                   2026-11-27): the topic statement with both
``kms:GenerateDataKey*`` / ``kms:Decrypt`` on actions and both conditions; the key statement
an encrypted topic's key (AWS's key statement for aps.amazonaws.com without a condition
has no condition)
``TriggeredRules`` (``AWS/Events``, dimension EventBridge user guide, "Monitoring Amazon
``RuleName``): rules that matched an event    EventBridge" (metrics table)
The cluster's log group                       :mod:`hyperpod_cdk.alerts.log_bridge.handler`
``/aws/sagemaker/Clusters/<name>/<id>`` is    (its facts table)
made by HyperPod when nodes log
CloudWatch Logs invokes a subscribed function CloudWatch Logs user guide, "Subscription filters
as ``logs.amazonaws.com`` (permission with    with AWS Lambda"
``SourceArn`` = the log group's ARN)
============================================  ===============================================

The cluster's log group is ensured by aws-cdk-lib's ``logs.LogRetention``: its handler creates
the group when it is absent (``ResourceAlreadyExistsException`` ignored) and sets the
retention, and with the default RETAIN it never deletes the group, so HyperPod's logs outlive
the stack. One maintained construct replaces the two ``AwsCustomResource`` calls that the log
bridge's docstring sketches.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from hyperpod_cdk.alerts import LOG_BRIDGE_DIR, LOG_BRIDGE_HANDLER
from hyperpod_cdk.alerts.events import input_transformer, rollback_pattern, rule_patterns
from hyperpod_cdk.alerts.log_bridge.handler import FILTER_PATTERN, log_group_name
from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.config.alerts import (
    PROMETHEUS_TOPIC_ACTIONS,
    TOPIC_KEY_ACTIONS,
    auto_rollback_alarm_name,
    auto_rollback_rule_name,
)

RUNTIME = lambda_.Runtime.PYTHON_3_14
# No reserved concurrency: reserving any fails the deploy (the cluster stack's!) in an account
# whose concurrency limit is 10, as new accounts' often is (Lambda keeps 10 unreserved), and the
# function only publishes a few messages; a throttled invocation waits in Lambda's async queue
# and then the dead-letter queue, so no fault is lost.
NO_RESERVED_CONCURRENCY = (
    "Reserving concurrency fails the deploy in accounts whose Lambda concurrency limit is 10 "
    "(Lambda keeps 10 unreserved); the function only publishes a few SNS messages, and a "
    "throttled event waits in Lambda's async queue, then the dead-letter queue."
)
LOG_BRIDGE_TIMEOUT = cdk.Duration.seconds(30)
_KEY_ACTIONS = list(TOPIC_KEY_ACTIONS)
# aws-cdk-lib's LogRetention singleton function (its construct id in the stack)
_LOG_RETENTION_FUNCTION = "LogRetentionaae0aa3c5b4d4f87b02d85b201efdd8a"


def cluster_id_of(cluster_arn: str) -> str:
    """The id part of a HyperPod cluster ARN (``...:cluster/<id>``), as a token."""
    return cdk.Fn.select(1, cdk.Fn.split("/", cluster_arn))


class HyperPodAlerts(Construct):
    """Who is told when a HyperPod cluster breaks.

    Every rule matches ``source: aws.sagemaker`` with this cluster's ARN in ``resources``
    (:func:`~hyperpod_cdk.alerts.events.rule_patterns`): failed cluster states always, the
    cluster events of ``event_levels``, unhealthy nodes with ``node_health``. Each delivers the
    readable text of :func:`~hyperpod_cdk.alerts.events.input_transformer` to the topic.

    :param cluster_arn: the HyperPod cluster's ARN (a token of its template is fine).
    :param cluster_name: the cluster's name (its log group carries it).
    :param event_levels: cluster event levels that alert (Error, Warn); none leaves the cluster
        event rule out. Default: Error.
    :param node_health: alert on unhealthy nodes. Default: true.
    :param emails: addresses subscribed to the created topic. Default: none.
    :param topic: an existing topic to publish to instead of creating one (its access and key
        policies must let events.amazonaws.com, and the log bridge's role, publish). Default: a
        topic this construct creates, encrypted with its own rotating key.
    :param health_agent_logs: Slurm: bridge the health monitoring agent's faults from the
        cluster's log group (the group is made when absent, never deleted). Default: false.
    :param log_retention: retention of the cluster's log group and the function's own. Default:
        one year.
    :param prometheus_workspace_arns: the Amazon Managed Prometheus workspaces whose alert
        manager may publish to the created topic (``ArnEquals aws:SourceArn``, as AWS's
        example). Default: any workspace of this account and region (``ArnLike
        .../workspace/*``), for a workspace made after the topic.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_arn: str,
        cluster_name: str,
        event_levels: Sequence[str] = ("Error",),
        node_health: bool = True,
        emails: Sequence[str] = (),
        topic: sns.ITopic | None = None,
        health_agent_logs: bool = False,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        prometheus_workspace_arns: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        self._workspaces = list(prometheus_workspace_arns)
        if topic is not None and emails:
            raise ValueError(
                "emails: give emails (a topic is made for them) or topic, not both; subscribe the "
                "addresses to your own topic yourself"
            )
        stack = cdk.Stack.of(self)
        self.key: kms.Key | None = None
        if topic is None or health_agent_logs:
            self.key = kms.Key(
                self,
                "Key",
                description=f"Alerts of HyperPod cluster {cluster_name}: topic and queue",
                enable_key_rotation=True,
            )
        self.topic: sns.ITopic
        self._topic: sns.Topic | None = None
        if topic is None:
            assert self.key is not None
            self._topic = sns.Topic(
                self,
                "Topic",
                display_name=f"HyperPod {cluster_name}"[:100],
                master_key=self.key,
                enforce_ssl=True,
            )
            self.topic = self._topic
            self._allow_services(self.key, self._topic)
            for email in emails:
                self._topic.add_subscription(subscriptions.EmailSubscription(email))
        else:
            self.topic = topic
        patterns = rule_patterns(cluster_arn, event_levels=event_levels, node_health=node_health)
        self.rules: dict[str, events.CfnRule] = {}
        for kind, pattern in patterns.items():
            paths, template = input_transformer(kind)
            self.rules[kind] = events.CfnRule(
                self,
                f"Rule-{kind}",
                description=f"HyperPod cluster {cluster_name}: {kind.replace('_', ' ')} alerts",
                event_pattern=pattern,
                state="ENABLED",
                targets=[
                    events.CfnRule.TargetProperty(
                        arn=self.topic.topic_arn,
                        id="Topic",
                        input_transformer=events.CfnRule.InputTransformerProperty(
                            input_paths_map=paths, input_template=template
                        ),
                    )
                ],
            )
        if self._topic is not None:
            self._topic.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="EventBridgeRulesOfThisCluster",
                    principals=[iam.ServicePrincipal("events.amazonaws.com")],
                    actions=["sns:Publish"],
                    resources=[self._topic.topic_arn],
                    conditions={
                        "ArnEquals": {"aws:SourceArn": [r.attr_arn for r in self.rules.values()]},
                        "StringEquals": {"aws:SourceAccount": stack.account},
                    },
                )
            )
        self.log_bridge: lambda_.Function | None = None
        self.dead_letter_queue: sqs.Queue | None = None
        self.subscription_filter: logs.CfnSubscriptionFilter | None = None
        if health_agent_logs:
            assert self.key is not None
            self._bridge_health_agent(cluster_arn, cluster_name, self.key, log_retention)

    def _allow_services(self, key: kms.Key, topic: sns.Topic) -> None:
        """Key and topic policy: EventBridge (limited by the topic policy, see the facts),
        CloudWatch alarms and Amazon Managed Prometheus of this account and region."""
        stack = cdk.Stack.of(self)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventBridgePublishesToTheTopic",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=_KEY_ACTIONS,
                resources=["*"],
            )
        )
        account = {"StringEquals": {"aws:SourceAccount": stack.account}}
        alarms = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        alarm_source = {
            "ArnLike": {
                "aws:SourceArn": f"arn:{stack.partition}:cloudwatch:{stack.region}:"
                f"{stack.account}:alarm:*"
            }
        }
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublishToTheTopic",
                principals=[alarms],
                actions=_KEY_ACTIONS,
                resources=["*"],
                conditions={**account, **alarm_source},
            )
        )
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarms",
                principals=[alarms],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={**account, **alarm_source},
            )
        )
        # Amazon Managed Prometheus: AWS's two statements (see the facts). The key statement has
        # no condition, as AWS's: whether AMP's data key request (made through SNS) carries the
        # source keys is not documented, and the topic statement below limits who publishes.
        prometheus = iam.ServicePrincipal("aps.amazonaws.com")
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="PrometheusAlertManagerPublishToTheTopic",
                principals=[prometheus],
                actions=_KEY_ACTIONS,
                resources=["*"],
            )
        )
        workspace_source: dict[str, object] = (
            {"ArnEquals": {"aws:SourceArn": _one_or_list(self._workspaces)}}
            if self._workspaces
            else {
                "ArnLike": {
                    "aws:SourceArn": f"arn:{stack.partition}:aps:{stack.region}:"
                    f"{stack.account}:workspace/*"
                }
            }
        )
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="PrometheusAlertManager",
                principals=[prometheus],
                actions=list(PROMETHEUS_TOPIC_ACTIONS),
                resources=[topic.topic_arn],
                conditions={**account, **workspace_source},
            )
        )

    def _bridge_health_agent(
        self,
        cluster_arn: str,
        cluster_name: str,
        key: kms.Key,
        retention: logs.RetentionDays,
    ) -> None:
        stack = cdk.Stack.of(self)
        group_name = log_group_name(cluster_name, cluster_id_of(cluster_arn))
        group_arn = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=group_name,
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        # made when absent (HyperPod makes it once nodes log), retention set, never deleted
        ensured = logs.LogRetention(
            self, "ClusterLogGroup", log_group_name=group_name, retention=retention
        )
        self.dead_letter_queue = sqs.Queue(
            self,
            "LogBridgeDeadLetters",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
        )
        function_logs = logs.LogGroup(self, "LogBridgeLogs", retention=retention)
        role = iam.Role(
            self,
            "LogBridgeRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="The HyperPod log bridge: publishes the health agent's faults",
        )
        # everything the function does, in one customer managed policy (no inline policy, no
        # wildcard): its log, the topic, the dead-letter queue, the key of both and of its
        # environment
        self.log_bridge_policy = iam.ManagedPolicy(
            self,
            "LogBridgePolicy",
            description="The HyperPod log bridge: publish alerts, write its log, dead letters",
            statements=[
                iam.PolicyStatement(
                    sid="PublishAlerts",
                    actions=["sns:Publish"],
                    resources=[self.topic.topic_arn],
                ),
                iam.PolicyStatement(
                    sid="DeadLetters",
                    actions=["sqs:SendMessage"],
                    resources=[self.dead_letter_queue.queue_arn],
                ),
                iam.PolicyStatement(
                    sid="AlertsKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[key.key_arn],
                ),
                iam.PolicyStatement(
                    sid="OwnLog",
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[function_logs.log_group_arn],
                ),
            ],
            roles=[role],
        )
        if self._topic is None:
            # an existing topic may be encrypted with a key the app cannot name at synth
            # (its KmsMasterKeyId is read by `make preflight`): any key, only through SNS of
            # this region, as the SNS developer guide's publisher policy for encrypted topics
            self.log_bridge_policy.add_statements(
                iam.PolicyStatement(
                    sid="ExistingTopicKeyThroughSns",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=["*"],
                    conditions={
                        "StringEquals": {"kms:ViaService": f"sns.{stack.region}.amazonaws.com"}
                    },
                )
            )
            acknowledge(
                self.log_bridge_policy,
                "AwsSolutions-IAM5[Resource::*]",
                "The existing alerts topic's key is not known at synth; the log bridge may use a "
                "key only through SNS in this region (kms:ViaService), and only where the key's "
                "own policy lets this account's IAM policies grant it (make preflight checks the "
                "topic's key).",
            )
        self.log_bridge = lambda_.Function(
            self,
            "LogBridge",
            runtime=RUNTIME,
            handler=LOG_BRIDGE_HANDLER,
            code=lambda_.Code.from_asset(
                str(LOG_BRIDGE_DIR), exclude=["__pycache__", "*.pyc", "__init__.py"]
            ),
            description=f"HyperPod {cluster_name}: the health agent's faults to the alerts topic",
            timeout=LOG_BRIDGE_TIMEOUT,
            dead_letter_queue=self.dead_letter_queue,
            retry_attempts=2,
            environment={"TOPIC_ARN": self.topic.topic_arn},
            environment_encryption=key,
            log_group=function_logs,
            # CDK's own grants would write an inline policy: the managed one above has them
            role=role.without_policy_updates(),
        )
        self.log_bridge.node.add_dependency(self.log_bridge_policy)
        permission = lambda_.CfnPermission(
            self,
            "LogsInvokeLogBridge",
            action="lambda:InvokeFunction",
            function_name=self.log_bridge.function_arn,
            principal="logs.amazonaws.com",
            source_account=stack.account,
            source_arn=f"{group_arn}:*",
        )
        self.subscription_filter = logs.CfnSubscriptionFilter(
            self,
            "HealthAgentFaults",
            log_group_name=group_name,
            destination_arn=self.log_bridge.function_arn,
            filter_pattern=FILTER_PATTERN,
        )
        self.subscription_filter.node.add_dependency(permission)
        self.subscription_filter.node.add_dependency(ensured)
        self._acknowledge_log_bridge(self.log_bridge, stack)

    def _acknowledge_log_bridge(self, function: lambda_.Function, stack: cdk.Stack) -> None:
        outside = (
            "The log bridge calls only the SNS and KMS APIs (regional endpoints) when CloudWatch "
            "Logs invokes it; it reaches nothing in the VPC, so it runs outside it."
        )
        acknowledge_controls(function, "LambdaInsideVPC", outside)
        acknowledge_controls(function, "LambdaConcurrency", NO_RESERVED_CONCURRENCY)
        cfn = function.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        skip_check(cfn, "CKV_AWS_117", outside)
        skip_check(cfn, "CKV_AWS_115", NO_RESERVED_CONCURRENCY)
        retention = stack.node.try_find_child(_LOG_RETENTION_FUNCTION)
        if retention is not None:
            _acknowledge_log_retention(retention)


def _one_or_list(values: list[str]) -> str | list[str]:
    """One value as a string (as AWS's policy examples write it), several as a list."""
    return values[0] if len(values) == 1 else values


def _acknowledge_log_retention(function: IConstruct) -> None:
    """aws-cdk-lib's LogRetention handler (one per stack): a deploy-time function."""
    acknowledge(
        function,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "aws-cdk-lib's LogRetention handler: the AWS managed execution policy grants only "
        "writing its own logs; AWS keeps it current for the Lambda service.",
    )
    acknowledge(
        function,
        "AwsSolutions-IAM5[Resource::*]",
        "aws-cdk-lib's LogRetention handler sets and removes the retention of the log groups it "
        "is given; its policy is CDK's, and log group names are only known at deploy time.",
    )
    acknowledge_controls(
        function,
        "IAMNoInlinePolicy",
        "aws-cdk-lib's LogRetention handler: CDK writes its role's policy (retention calls only) "
        "inline and gives no hook to make it a managed policy.",
    )
    for found in function.node.find_all():
        if isinstance(found, cdk.CfnResource) and found.node.path.endswith(
            "ServiceRole/DefaultPolicy/Resource"
        ):
            skip_check(
                found,
                "CKV_AWS_111",
                "aws-cdk-lib's LogRetention handler policy: logs:PutRetentionPolicy and "
                "logs:DeleteRetentionPolicy on any log group, written by CDK for the stack's one "
                "handler; it runs only during deploys, on the groups the template names.",
            )
    resource = function.node.try_find_child("Resource")
    if isinstance(resource, cdk.CfnResource):
        reason = (
            "aws-cdk-lib's LogRetention handler runs only while CloudFormation deploys the stack; "
            "a failure fails the stack operation"
        )
        for check in ("CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"):
            skip_check(resource, check, f"{reason} ({check}).")


class HyperPodRollbackAlarms(Construct):
    """The alarms of ``rollback_alarms: auto``: per group, a rule and an alarm on its matches.

    The rule (:func:`~hyperpod_cdk.alerts.events.rollback_pattern`) matches the group's Error
    cluster events and the cluster's unhealthy-node events; the alarm counts the rule's
    ``TriggeredRules`` and is named :func:`~hyperpod_cdk.config.alerts.auto_rollback_alarm_name`.
    The alarm refers to the rule by its (literal) name only, so the cluster may depend on the
    alarms (its ``AutoRollbackConfiguration`` names them) while the rules depend on the
    cluster's ARN, without a cycle: add the dependency with :meth:`before`.

    :param cluster_arn: the HyperPod cluster's ARN.
    :param cluster_name: the cluster's name (part of the alarm and rule names).
    :param groups: the instance groups that ask for an alarm.
    :param topic: where the alarms also notify. Default: nowhere (the rollback is the action).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_arn: str,
        cluster_name: str,
        groups: Sequence[str],
        topic: sns.ITopic | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self.rules: dict[str, events.CfnRule] = {}
        for group in groups:
            rule_name = auto_rollback_rule_name(cluster_name, group)
            self.rules[group] = events.CfnRule(
                self,
                f"Rule-{group}",
                name=rule_name,
                description=f"HyperPod {cluster_name}, group {group}: what rolls an update back",
                event_pattern=rollback_pattern(cluster_arn, group),
                state="ENABLED",
            )
            alarm = cloudwatch.Alarm(
                self,
                f"Alarm-{group}",
                alarm_name=auto_rollback_alarm_name(cluster_name, group),
                alarm_description=(
                    f"HyperPod {cluster_name}, group {group}: an Error event of the group or an "
                    "unhealthy node; a rolling AMI update or patch of the group rolls back"
                ),
                metric=cloudwatch.Metric(
                    namespace="AWS/Events",
                    metric_name="TriggeredRules",
                    dimensions_map={"RuleName": rule_name},
                    statistic="Sum",
                    period=cdk.Duration.minutes(1),
                ),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            if topic is not None:
                alarm.add_alarm_action(cw_actions.SnsAction(topic))
            self.alarms[group] = alarm

    def before(self, resource: cdk.CfnResource) -> None:
        """Make ``resource`` (the cluster) wait for every alarm."""
        for alarm in self.alarms.values():
            resource.node.add_dependency(alarm)

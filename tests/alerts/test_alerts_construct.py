"""The alerts construct and the rollback alarms, in a stack of their own: the topic and its key,
the policies' principals and conditions, the rules with their messages, the log bridge with its
queue, filter and permission, the alarms, and no cycle with the cluster that names them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from support.eventbridge import matches

import hyperpod_cdk
from hyperpod_cdk.alerts.construct import (
    RUNTIME,
    HyperPodAlerts,
    HyperPodRollbackAlarms,
)
from hyperpod_cdk.alerts.events import (
    CLUSTER_EVENT,
    CLUSTER_STATE,
    NODE_HEALTH,
    input_transformer,
    rollback_pattern,
)
from hyperpod_cdk.alerts.log_bridge.handler import FILTER_PATTERN

ACCOUNT, REGION = "111122223333", "us-west-2"
FIXTURES = Path(__file__).parent / "fixtures"
RECOMMENDED = Path(hyperpod_cdk.__file__).parent / "recommended_context.json"
SAMPLE_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456"
BROUGHT = "arn:aws:sns:us-west-2:444455556666:shared-alerts"


def sample(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def synth(build: Any) -> dict[str, Any]:
    # the library's recommended feature flags (partition literals among them)
    app = cdk.App(context=json.loads(RECOMMENDED.read_text()))
    stack = cdk.Stack(app, "Alerts", env=cdk.Environment(account=ACCOUNT, region=REGION))
    cluster = cdk.CfnResource(
        stack,
        "Cluster",
        type="AWS::SageMaker::Cluster",
        properties={"ClusterName": "ml"},
    )
    cluster_arn = cluster.get_att("ClusterArn").to_string()
    build(stack, cluster, cluster_arn)
    template: dict[str, Any] = app.synth().get_stack_by_name("Alerts").template
    return template


def of_type(template: dict[str, Any], type_name: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


def only(template: dict[str, Any], type_name: str) -> tuple[str, dict[str, Any]]:
    found = of_type(template, type_name)
    assert len(found) == 1, sorted(found)
    return next(iter(found.items()))


def statements(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s.get("Sid", "(none)"): s for s in document["Statement"]}


@pytest.fixture(scope="module")
def slurm() -> dict[str, Any]:
    def build(stack: cdk.Stack, cluster: cdk.CfnResource, arn: str) -> None:
        alerts = HyperPodAlerts(
            stack,
            "Alerts",
            cluster_arn=arn,
            cluster_name="ml",
            event_levels=["Error", "Warn"],
            emails=["a@example.com", "b@example.com"],
            health_agent_logs=True,
        )
        alarms = HyperPodRollbackAlarms(
            stack,
            "Rollback",
            cluster_arn=arn,
            cluster_name="ml",
            groups=["gpu", "cpu"],
            topic=alerts.topic,
        )
        alarms.before(cluster)

    return synth(build)


CLUSTER_ARN_REF = {"Fn::GetAtt": ["Cluster", "ClusterArn"]}


def test_the_topic_is_encrypted_with_a_rotating_customer_managed_key(slurm) -> None:
    key_id, key = only(slurm, "AWS::KMS::Key")
    assert key["Properties"]["EnableKeyRotation"] is True
    _, topic = only(slurm, "AWS::SNS::Topic")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}


def test_each_email_is_subscribed(slurm) -> None:
    subscriptions = of_type(slurm, "AWS::SNS::Subscription").values()
    assert sorted(s["Properties"]["Endpoint"] for s in subscriptions) == [
        "a@example.com",
        "b@example.com",
    ]
    assert {s["Properties"]["Protocol"] for s in subscriptions} == {"email"}


def test_the_key_lets_the_publishing_services_in_alarms_only_from_here_prometheus_as_aws_shows(
    slurm,
) -> None:
    """AMP user guide, AMP-alertmanager-receiver-AMPpermission (read 2026-11-27): the key
    statement for aps.amazonaws.com is kms:GenerateDataKey* and kms:Decrypt, with no condition."""
    _, key = only(slurm, "AWS::KMS::Key")
    by_sid = statements(key["Properties"]["KeyPolicy"])
    events = by_sid["EventBridgePublishesToTheTopic"]
    assert events["Principal"] == {"Service": "events.amazonaws.com"}
    assert events["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    # EventBridge's KMS request carries no source keys: the topic policy limits it instead
    assert "Condition" not in events
    alarms = by_sid["CloudWatchAlarmsPublishToTheTopic"]
    assert alarms["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert alarms["Condition"] == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:us-west-2:111122223333:alarm:*"},
    }
    prometheus = by_sid["PrometheusAlertManagerPublishToTheTopic"]
    assert prometheus["Principal"] == {"Service": "aps.amazonaws.com"}
    assert sorted(prometheus["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert prometheus["Resource"] == "*"
    assert "Condition" not in prometheus


def test_the_topic_lets_prometheus_publish_and_read_its_attributes_from_this_account(
    slurm,
) -> None:
    """AMP user guide, AMP-alertmanager-receiver-AMPpermission (read 2026-11-27): Action
    sns:Publish and sns:GetTopicAttributes, aws:SourceArn the workspace, aws:SourceAccount."""
    _, policy = only(slurm, "AWS::SNS::TopicPolicy")
    statement = statements(policy["Properties"]["PolicyDocument"])["PrometheusAlertManager"]
    assert statement["Principal"] == {"Service": "aps.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sns:GetTopicAttributes", "sns:Publish"]
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnLike": {"aws:SourceArn": "arn:aws:aps:us-west-2:111122223333:workspace/*"},
    }


def test_a_named_workspace_is_the_only_prometheus_source() -> None:
    workspace = "arn:aws:aps:us-west-2:111122223333:workspace/ws-0123abcd"

    def build(stack: cdk.Stack, cluster: cdk.CfnResource, arn: str) -> None:
        HyperPodAlerts(
            stack,
            "Alerts",
            cluster_arn=arn,
            cluster_name="ml",
            prometheus_workspace_arns=[workspace],
        )

    _, policy = only(synth(build), "AWS::SNS::TopicPolicy")
    statement = statements(policy["Properties"]["PolicyDocument"])["PrometheusAlertManager"]
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnEquals": {"aws:SourceArn": workspace},
    }


def _alert_rules(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        kind: rule["Properties"]
        for kind in (CLUSTER_EVENT, NODE_HEALTH, CLUSTER_STATE)
        for key, rule in of_type(template, "AWS::Events::Rule").items()
        if key.startswith(f"AlertsRule{kind.replace('_', '')}")
    }


def test_each_rule_matches_this_cluster_and_sends_the_readable_text(slurm) -> None:
    rules = _alert_rules(slurm)
    assert sorted(rules) == sorted([CLUSTER_EVENT, NODE_HEALTH, CLUSTER_STATE])
    for kind, rule in rules.items():
        assert rule["EventPattern"]["resources"] == [CLUSTER_ARN_REF]
        assert rule["State"] == "ENABLED"
        (target,) = rule["Targets"]
        assert target["Arn"] == {"Ref": only(slurm, "AWS::SNS::Topic")[0]}
        paths, text = input_transformer(kind)
        assert target["InputTransformer"] == {"InputPathsMap": paths, "InputTemplate": text}
    levels = rules[CLUSTER_EVENT]["EventPattern"]["detail"]["EventDetails"]["EventLevel"]
    assert levels == ["Error", "Warn"]


def test_the_log_bridge_is_pinned_small_with_an_encrypted_dead_letter_queue(slurm) -> None:
    key_id, _ = only(slurm, "AWS::KMS::Key")
    queue_id, queue = only(slurm, "AWS::SQS::Queue")
    assert queue["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    functions = {
        k: f["Properties"]
        for k, f in of_type(slurm, "AWS::Lambda::Function").items()
        if k.startswith("AlertsLogBridge")
    }
    ((function_id, function),) = functions.items()
    assert function["Runtime"] == RUNTIME.name
    # none reserved: a reservation fails the deploy in accounts limited to 10
    assert "ReservedConcurrentExecutions" not in function
    assert function["DeadLetterConfig"] == {"TargetArn": {"Fn::GetAtt": [queue_id, "Arn"]}}
    assert function["Environment"]["Variables"] == {
        "TOPIC_ARN": {"Ref": only(slurm, "AWS::SNS::Topic")[0]}
    }
    assert function["KmsKeyArn"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert function["Handler"] == "handler.handler"
    del function_id


def test_the_log_bridge_may_publish_to_the_topic_and_little_else(slurm) -> None:
    policies = [
        p["Properties"]["PolicyDocument"]
        for k, p in of_type(slurm, "AWS::IAM::ManagedPolicy").items()
        if k.startswith("AlertsLogBridgePolicy")
    ]
    (document,) = policies
    by_sid = statements(document)
    assert sorted(by_sid) == ["AlertsKey", "DeadLetters", "OwnLog", "PublishAlerts"]
    assert by_sid["PublishAlerts"]["Action"] == "sns:Publish"
    assert by_sid["PublishAlerts"]["Resource"] == {"Ref": only(slurm, "AWS::SNS::Topic")[0]}
    assert by_sid["AlertsKey"]["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]
    for statement in document["Statement"]:
        assert "*" not in json.dumps(statement["Action"])
    # no inline policy on its role
    assert not [k for k in of_type(slurm, "AWS::IAM::Policy") if k.startswith("AlertsLogBridge")]


def _log_group_name(value: Any) -> str:
    """``/aws/sagemaker/Clusters/ml/<id of the cluster ARN>`` as the template writes it."""
    parts = value["Fn::Join"][1]
    assert parts[0] == "/aws/sagemaker/Clusters/ml/"
    assert parts[1] == {"Fn::Select": [1, {"Fn::Split": ["/", CLUSTER_ARN_REF]}]}
    return "ok"


def test_the_subscription_filter_takes_the_detections_of_the_cluster_log_group(slurm) -> None:
    filter_id, subscription = only(slurm, "AWS::Logs::SubscriptionFilter")
    props = subscription["Properties"]
    assert props["FilterPattern"] == FILTER_PATTERN
    assert _log_group_name(props["LogGroupName"]) == "ok"
    permission_id, permission = only(slurm, "AWS::Lambda::Permission")
    assert permission["Properties"]["Principal"] == "logs.amazonaws.com"
    assert permission["Properties"]["SourceAccount"] == ACCOUNT
    source = permission["Properties"]["SourceArn"]["Fn::Join"][1]
    assert source[0] == "arn:aws:logs:us-west-2:111122223333:log-group:/aws/sagemaker/Clusters/ml/"
    assert source[-1] == ":*"
    # the filter waits for the permission and for the group to exist
    ensured_id, ensured = only(slurm, "Custom::LogRetention")
    assert set(subscription["DependsOn"]) >= {permission_id, ensured_id}
    del filter_id


def test_the_cluster_log_group_is_ensured_with_a_retention_and_never_deleted(slurm) -> None:
    _, ensured = only(slurm, "Custom::LogRetention")
    assert _log_group_name(ensured["Properties"]["LogGroupName"]) == "ok"
    assert ensured["Properties"]["RetentionInDays"] == 365
    # no AWS::Logs::LogGroup for it: that would fail when HyperPod made it first, and delete
    # HyperPod's logs with the stack
    for group in of_type(slurm, "AWS::Logs::LogGroup").values():
        assert "/aws/sagemaker/Clusters" not in json.dumps(group["Properties"])
    assert ensured.get("DeletionPolicy") in (None, "Retain")
    assert "RemovalPolicy" not in ensured["Properties"]


def test_an_alarm_per_group_counts_its_rule_and_the_cluster_waits_for_them(slurm) -> None:
    alarms = {
        a["Properties"]["AlarmName"]: a for a in of_type(slurm, "AWS::CloudWatch::Alarm").values()
    }
    assert sorted(alarms) == ["ml-cpu-rollback", "ml-gpu-rollback"]
    rules = {
        r["Properties"].get("Name"): r["Properties"]
        for r in of_type(slurm, "AWS::Events::Rule").values()
        if r["Properties"].get("Name")
    }
    for group in ("gpu", "cpu"):
        alarm = alarms[f"ml-{group}-rollback"]["Properties"]
        assert alarm["Namespace"] == "AWS/Events"
        assert alarm["MetricName"] == "TriggeredRules"
        assert alarm["Dimensions"] == [{"Name": "RuleName", "Value": f"ml-{group}-rollback"}]
        assert alarm["Threshold"] == 1
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [{"Ref": only(slurm, "AWS::SNS::Topic")[0]}]
        rule = rules[f"ml-{group}-rollback"]
        assert rule["EventPattern"]["resources"] == [CLUSTER_ARN_REF]
        assert "Targets" not in rule
    cluster = slurm["Resources"]["Cluster"]
    alarm_ids = sorted(of_type(slurm, "AWS::CloudWatch::Alarm"))
    assert sorted(cluster["DependsOn"]) == alarm_ids


def _references(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        if "Ref" in value:
            found.add(value["Ref"])
        if "Fn::GetAtt" in value:
            found.add(value["Fn::GetAtt"][0])
        for item in value.values():
            found |= _references(item)
    elif isinstance(value, list):
        for item in value:
            found |= _references(item)
    return found


def test_no_cycle(slurm) -> None:
    """Every resource's references and DependsOn form a DAG (CloudFormation refuses a cycle)."""
    resources = slurm["Resources"]
    edges = {
        k: (_references(r.get("Properties", {})) | set(r.get("DependsOn", []))) & set(resources)
        for k, r in resources.items()
    }
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, " -> ".join((*path, node))
        if node in done:
            return
        for child in edges[node]:
            visit(child, (*path, node))
        done.add(node)

    for node in edges:
        visit(node, ())
    # the alarms reference their rules by name only
    for alarm in of_type(slurm, "AWS::CloudWatch::Alarm"):
        assert not edges[alarm] & set(of_type(slurm, "AWS::Events::Rule"))


def test_a_brought_topic_gets_no_key_no_policy_and_no_subscription() -> None:
    def build(stack: cdk.Stack, cluster: cdk.CfnResource, arn: str) -> None:
        HyperPodAlerts(
            stack,
            "Alerts",
            cluster_arn=arn,
            cluster_name="ml",
            topic=sns.Topic.from_topic_arn(stack, "Brought", BROUGHT),
        )

    template = synth(build)
    for absent in (
        "AWS::KMS::Key",
        "AWS::SNS::Topic",
        "AWS::SNS::TopicPolicy",
        "AWS::SNS::Subscription",
        "AWS::Lambda::Function",
    ):
        assert not of_type(template, absent), absent
    for rule in of_type(template, "AWS::Events::Rule").values():
        assert rule["Properties"]["Targets"][0]["Arn"] == BROUGHT


def test_the_log_bridge_may_use_a_brought_topics_key_only_through_sns() -> None:
    def build(stack: cdk.Stack, cluster: cdk.CfnResource, arn: str) -> None:
        HyperPodAlerts(stack, "Alerts", cluster_arn=arn, cluster_name="ml", health_agent_logs=True,
                       topic=sns.Topic.from_topic_arn(stack, "Brought", BROUGHT))  # fmt: skip

    (policy,) = [
        p
        for p in of_type(synth(build), "AWS::IAM::ManagedPolicy").values()
        if "LogBridge" in p["Properties"].get("Description", "")
        or "log bridge" in p["Properties"].get("Description", "")
    ]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    key = statements["ExistingTopicKeyThroughSns"]
    assert key["Resource"] == "*"
    assert key["Condition"] == {"StringEquals": {"kms:ViaService": "sns.us-west-2.amazonaws.com"}}
    assert statements["PublishAlerts"]["Resource"] == BROUGHT


def test_node_health_off_and_no_levels_leave_only_the_failed_cluster_rule() -> None:
    def build(stack: cdk.Stack, cluster: cdk.CfnResource, arn: str) -> None:
        HyperPodAlerts(stack, "Alerts", cluster_arn=arn, cluster_name="ml", event_levels=[],
                       node_health=False, emails=["a@example.com"])  # fmt: skip

    (rule,) = of_type(synth(build), "AWS::Events::Rule").values()
    assert rule["Properties"]["EventPattern"]["detail"] == {
        "ClusterStatus": ["Failed", "RollingBack"]
    }


def test_emails_with_a_brought_topic_are_refused() -> None:
    def build(stack: cdk.Stack, cluster: cdk.CfnResource, arn: str) -> None:
        HyperPodAlerts(stack, "Alerts", cluster_arn=arn, cluster_name="ml", emails=["a@x.com"],
                       topic=sns.Topic.from_topic_arn(stack, "Brought", BROUGHT))  # fmt: skip

    with pytest.raises(ValueError, match="not both"):
        synth(build)


# -- the rollback pattern on AWS's sample events ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "group", "expected"),
    [
        ("cluster_event_error", None, True),  # the sample's own group
        ("cluster_event_error", "another-group", False),
        ("cluster_event_warn", None, False),
        ("cluster_event_info", None, False),
        ("node_health_unhealthy", "any-group", True),
        ("node_health_healthy", "any-group", False),
        ("state_change_failed", "any-group", False),
        ("other_cluster_event_error", None, False),
    ],
)
def test_the_rollback_pattern_on_sample_events(
    name: str, group: str | None, expected: bool
) -> None:
    event = sample(name)
    if group is None:
        group = event["detail"].get("EventDetails", {}).get("InstanceGroupName", "gpu")
    assert matches(rollback_pattern(SAMPLE_ARN, group), event) is expected

"""``alerts`` and ``rollback_alarms: auto`` in the app: beside the cluster in its stack, reading
its ARN from that template, the auto alarms before the cluster that names them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hyperpod_cdk.config.alerts import auto_rollback_alarm_name, auto_rollback_groups

KIND = "cluster"
CLUSTER_ARN = {"Fn::GetAtt": ["HyperPodCluster", "ClusterArn"]}
ALERTS = {"alerts": {"emails": ["oncall@example.com"]}}
CROSS_STACK = ("Fn::GetStackOutput", "Fn::ImportValue")


def _alerts_text(synth: Any) -> str:
    """The alerts' resources as text, without the log groups' key (the environment's logs key,
    read from the network stack: a key that is never replaced)."""
    alerts = {}
    for key, resource in synth.resources(KIND).items():
        if key.startswith("Alerts"):
            properties = dict(resource.get("Properties", {}))
            if resource["Type"] == "AWS::Logs::LogGroup":
                properties.pop("KmsKeyId", None)
            alerts[key] = {**resource, "Properties": properties}
    return json.dumps(alerts)


def test_full_alerts_sit_beside_the_cluster_and_read_its_arn_there(synthesized) -> None:
    synth = synthesized("full")
    rules = synth.resources(KIND, "AWS::Events::Rule")
    alert_rules = [r for k, r in rules.items() if k.startswith("AlertsRule")]
    assert len(alert_rules) == 3
    for rule in rules.values():
        assert rule["Properties"]["EventPattern"]["resources"] == [CLUSTER_ARN]
    # nothing of the alerts reads the cluster through another stack
    text = _alerts_text(synth)
    assert "AlertsTopic" in text
    for function in CROSS_STACK:
        assert function not in text
    outputs = synth.template(KIND)["Outputs"]
    assert "AlertsTopicArn" in outputs


def test_full_has_the_slurm_log_bridge(synthesized) -> None:
    synth = synthesized("full")
    (subscription,) = synth.resources(KIND, "AWS::Logs::SubscriptionFilter").values()
    joined = subscription["Properties"]["LogGroupName"]["Fn::Join"][1]
    assert joined[0] == f"/aws/sagemaker/Clusters/{synth.config.cluster_name}/"
    functions = [k for k in synth.resources(KIND, "AWS::Lambda::Function") if "LogBridge" in k]
    assert len(functions) == 1


def test_full_auto_alarm_exists_before_the_cluster_that_names_it(synthesized) -> None:
    synth = synthesized("full")
    groups = auto_rollback_groups(synth.config)
    assert groups == ["flex"]
    alarms = synth.resources(KIND, "AWS::CloudWatch::Alarm")
    by_name = {a["Properties"]["AlarmName"]: k for k, a in alarms.items()}
    name = auto_rollback_alarm_name(synth.config.cluster_name, "flex")
    assert name in by_name
    cluster = synth.template(KIND)["Resources"]["HyperPodCluster"]
    assert by_name[name] in cluster["DependsOn"]
    (flex,) = [
        g for g in cluster["Properties"]["InstanceGroups"] if g["InstanceGroupName"] == "flex"
    ]
    rollback = flex["AutoPatchConfig"]["DeploymentConfig"]["AutoRollbackConfiguration"]
    assert rollback == [{"AlarmName": name}]


def test_without_alerts_or_auto_nothing_is_added(synthesized) -> None:
    synth = synthesized("default")
    for type_name in ("AWS::Events::Rule", "AWS::SNS::Topic", "AWS::CloudWatch::Alarm"):
        assert not synth.resources(KIND, type_name), type_name


def test_auto_without_alerts_makes_the_alarm_without_an_action(build_variant) -> None:
    changes = {
        "cluster.instance_groups[1].scheduled_update": {
            "schedule": "cron(0 3 ? * SUN *)",
            "rollback_alarms": "auto",
        }
    }
    synth = build_variant(changes, base="minimal")
    (alarm,) = synth.resources(KIND, "AWS::CloudWatch::Alarm").values()
    assert "AlarmActions" not in alarm["Properties"]
    assert not synth.resources(KIND, "AWS::SNS::Topic")


def test_eks_alerts_have_no_log_bridge(build_variant) -> None:
    synth = build_variant(ALERTS, base="eks-minimal")
    rules = synth.resources(KIND, "AWS::Events::Rule")
    assert len(rules) == 3
    assert not synth.resources(KIND, "AWS::Logs::SubscriptionFilter")
    assert not [k for k in synth.resources(KIND, "AWS::Lambda::Function") if "LogBridge" in k]


def test_a_brought_topic_is_the_rules_target(build_variant) -> None:
    topic = "arn:aws:sns:us-west-2:444455556666:shared-alerts"
    synth = build_variant({"alerts": {"sns_topic_arn": topic, "node_health": False}},
                          base="minimal")  # fmt: skip
    for rule in synth.resources(KIND, "AWS::Events::Rule").values():
        assert rule["Properties"]["Targets"][0]["Arn"] == topic
    assert not synth.resources(KIND, "AWS::SNS::Topic")


def test_a_brought_topic_with_the_slurm_log_bridge_passes_the_compliance_packs(
    build_variant: Any,
) -> None:
    """The bridge may use the brought topic's key through SNS only: a reviewed wildcard."""
    topic = "arn:aws:sns:us-west-2:111122223333:oncall"
    synth = build_variant({"alerts": {"sns_topic_arn": topic}}, base="minimal")  # nag on
    bridges = [k for k in synth.resources(KIND, "AWS::Lambda::Function") if "LogBridge" in k]
    assert bridges


@pytest.mark.parametrize("base", ["minimal", "eks-minimal"])
def test_a_replaced_cluster_changes_the_alerts_in_their_own_template(
    build_variant: Any, base: str
) -> None:
    """Day 2: a new cluster name replaces the cluster; the alerts read its ARN (and name its log
    group) in the same template, so that template changes and CloudFormation updates them."""
    before = build_variant(ALERTS, base=base, nag=False)
    after = build_variant({**ALERTS, "cluster.name": "renamed-cluster"}, base=base, nag=False)

    def alerts(synth: Any) -> dict[str, Any]:
        return {k: r for k, r in synth.resources(KIND).items() if k.startswith("Alerts")}

    assert alerts(before) != alerts(after)
    for synth in (before, after):
        text = _alerts_text(synth)
        assert "HyperPodCluster" in text
        for function in CROSS_STACK:
            assert function not in text

"""The EventBridge rules on HyperPod's events: which sample events each rule matches (the
samples follow AWS's documented events), that another cluster's events match none, and the text
a person reads. The EventBridge emulator these run through is tests/support/eventbridge.py
(its own tests: test_eventbridge_emulator.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from support.eventbridge import matches, render

from hyperpod_cdk.alerts.events import (
    CLUSTER_EVENT,
    CLUSTER_STATE,
    DETAIL_TYPES,
    NODE_HEALTH,
    input_transformer,
    rule_patterns,
)

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456"
OTHER_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/zyxwvu987654"


def sample(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


SAMPLES = [
    "cluster_event_error",
    "cluster_event_warn",
    "cluster_event_info",
    "node_health_unhealthy",
    "node_health_healthy",
    "state_change_in_service",
    "state_change_failed",
    "other_cluster_event_error",
]


def matched(patterns: dict[str, dict[str, Any]], event: dict[str, Any]) -> set[str]:
    return {kind for kind, pattern in patterns.items() if matches(pattern, event)}


# -- the rules ---------------------------------------------------------------------------------

ERROR_ONLY = {
    "cluster_event_error": {CLUSTER_EVENT},
    "cluster_event_warn": set(),
    "cluster_event_info": set(),
    "node_health_unhealthy": {NODE_HEALTH},
    "node_health_healthy": set(),
    "state_change_in_service": set(),
    "state_change_failed": {CLUSTER_STATE},
    "other_cluster_event_error": set(),
}


@pytest.mark.parametrize("name", SAMPLES)
def test_default_rules_match_the_failures_only(name: str) -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=["Error"], node_health=True)
    assert matched(patterns, sample(name)) == ERROR_ONLY[name]


def test_warn_level_adds_warn_events_and_never_info() -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=["Error", "Warn"], node_health=True)
    assert matched(patterns, sample("cluster_event_warn")) == {CLUSTER_EVENT}
    assert matched(patterns, sample("cluster_event_error")) == {CLUSTER_EVENT}
    assert matched(patterns, sample("cluster_event_info")) == set()


@pytest.mark.parametrize("name", SAMPLES)
def test_another_clusters_events_match_no_rule(name: str) -> None:
    """The same events from another cluster of the account alert nobody here."""
    patterns = rule_patterns(CLUSTER_ARN, event_levels=["Error", "Warn"], node_health=True)
    event = copy.deepcopy(sample(name))
    event["resources"] = [OTHER_ARN]
    assert matched(patterns, event) == set()


def test_every_rule_is_on_this_clusters_arn_and_sagemaker_only() -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=["Error"], node_health=True)
    assert set(patterns) == {CLUSTER_EVENT, NODE_HEALTH, CLUSTER_STATE}
    for kind, pattern in patterns.items():
        assert pattern["source"] == ["aws.sagemaker"]
        assert pattern["resources"] == [CLUSTER_ARN]
        assert pattern["detail-type"] == [DETAIL_TYPES[kind]]


def test_an_event_from_another_source_does_not_match() -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=["Error"], node_health=True)
    event = sample("state_change_failed")
    event["source"] = "custom.sagemaker"
    assert matched(patterns, event) == set()


def test_rules_left_out_when_switched_off() -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=[], node_health=False)
    assert set(patterns) == {CLUSTER_STATE}
    assert matched(patterns, sample("node_health_unhealthy")) == set()
    assert matched(patterns, sample("cluster_event_error")) == set()


def test_rolling_back_is_a_failed_state() -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=[], node_health=False)
    event = sample("state_change_failed")
    event["detail"]["ClusterStatus"] = "RollingBack"
    assert matched(patterns, event) == {CLUSTER_STATE}
    event["detail"]["ClusterStatus"] = "Updating"
    assert matched(patterns, event) == set()


def test_an_unknown_unhealthy_status_still_alerts() -> None:
    patterns = rule_patterns(CLUSTER_ARN, event_levels=[], node_health=True)
    event = sample("node_health_unhealthy")
    event["detail"]["HealthSummary"]["HealthStatus"] = "Degraded"
    assert matched(patterns, event) == {NODE_HEALTH}


def test_info_level_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\['Info'\] are not alert levels"):
        rule_patterns(CLUSTER_ARN, event_levels=["Error", "Info"], node_health=True)


# -- the text a person reads -------------------------------------------------------------------


def test_cluster_event_text() -> None:
    paths, template = input_transformer(CLUSTER_EVENT)
    text = render(paths, template, sample("cluster_event_error"))
    assert text.splitlines()[:5] == [
        "HyperPod cluster ml-prod: Error event",
        "What happened: Lifecycle script on_create.sh failed on instance i-0a1b2c3d4e5f60718"
        " of group gpu-workers",
        "Instance group: gpu-workers",
        "Instance: i-0a1b2c3d4e5f60718 (Instance)",
        "When: 2026-11-25T12:00:00Z in us-west-2",
    ]
    assert "aws sagemaker list-cluster-events --cluster-name ml-prod --region us-west-2" in text


def test_node_health_text() -> None:
    paths, template = input_transformer(NODE_HEALTH)
    text = render(paths, template, sample("node_health_unhealthy"))
    lines = text.splitlines()
    assert lines[0] == "HyperPod cluster ml-prod: node i-0a1b2c3d4e5f60718 is Unhealthy"
    assert lines[1].startswith("What happened: The health monitoring agent found fault")
    assert lines[2] == "Repair action HyperPod takes: Reboot"
    assert "--node-id i-0a1b2c3d4e5f60718" in text
    assert "--node-ids i-0a1b2c3d4e5f60718" in text


def test_cluster_state_text() -> None:
    paths, template = input_transformer(CLUSTER_STATE)
    text = render(paths, template, sample("state_change_failed"))
    assert text.splitlines()[:2] == [
        "HyperPod cluster ml-prod is Failed",
        "What happened: Instance group gpu-workers: the lifecycle script on_create.sh exited"
        " with status 1 on 1 of 2 instances.",
    ]


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        (CLUSTER_EVENT, ["cluster_event_error", "cluster_event_warn", "cluster_event_info"]),
        (NODE_HEALTH, ["node_health_unhealthy", "node_health_healthy"]),
        (CLUSTER_STATE, ["state_change_failed", "state_change_in_service"]),
    ],
)
def test_every_input_path_is_in_the_documented_events(kind: str, names: list[str]) -> None:
    """render raises KeyError for a path the event lacks; the text never holds raw JSON."""
    paths, template = input_transformer(kind)
    for name in names:
        text = render(paths, template, sample(name))
        assert "<" not in text and "{" not in text


def test_template_is_one_json_string_with_every_placeholder_mapped() -> None:
    for kind in (CLUSTER_EVENT, NODE_HEALTH, CLUSTER_STATE):
        paths, template = input_transformer(kind)
        assert isinstance(json.loads(template), str)
        assert len(paths) <= 100  # EventBridge's InputPathsMap limit
        for name in paths:
            assert f"<{name}>" in template

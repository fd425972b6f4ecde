"""The EventBridge emulator of the tests (tests/support/eventbridge.py) held to EventBridge's
documented semantics: every pattern operator with a match and a near miss, malformed patterns
refused, and input transformation inserting values JSON-escaped and refusing a path the event
lacks.

Sources: the EventBridge user guide, "Content filtering in Amazon EventBridge event patterns"
and "Comparison operators for use in event patterns"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html), and
"Amazon EventBridge input transformation"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.eventbridge import matches, render

from hyperpod_cdk.alerts.events import CLUSTER_STATE, input_transformer

FIXTURES = Path(__file__).parent / "fixtures"


def sample(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


# -- the matcher, operator by operator ---------------------------------------------------------

EVENT: dict[str, Any] = {
    "source": "aws.sagemaker",
    "time": "2026-11-25T12:00:00Z",
    "detail": {
        "state": "Running",
        "name": "HyperPod-Cluster",
        "file": "logs/node/agent.LOG",
        "count": 5,
        "ratio": 0.75,
        "flag": True,
        "nothing": None,
        "empty": "",
        "ip": "10.0.3.17",
        "tags": ["gpu", "p5"],
        "groups": [{"Name": "cpu", "Status": "InService"}, {"Name": "gpu", "Status": "Failed"}],
        "nested": {"level": "Error"},
    },
}

OPERATOR_CASES = [
    # (pattern, matches EVENT?)
    ({"source": ["aws.sagemaker"]}, True),
    ({"source": ["aws.ec2"]}, False),
    ({"source": ["aws.ec2", "aws.sagemaker"]}, True),
    ({"detail": {"nested": {"level": ["Error"]}}}, True),
    ({"detail": {"nested": {"level": ["Warn"]}}}, False),
    ({"detail": {"count": [5]}}, True),
    ({"detail": {"count": [5.0]}}, True),
    ({"detail": {"count": ["5"]}}, False),
    ({"detail": {"flag": [True]}}, True),
    ({"detail": {"flag": [1]}}, False),
    ({"detail": {"nothing": [None]}}, True),
    ({"detail": {"empty": [None]}}, False),
    ({"detail": {"empty": [""]}}, True),
    ({"detail": {"tags": ["p5"]}}, True),
    ({"detail": {"tags": ["p4d"]}}, False),
    ({"detail": {"groups": {"Status": ["Failed"]}}}, True),
    ({"detail": {"groups": {"Status": ["Deleting"]}}}, False),
    ({"detail": {"groups": {"Name": ["cpu"], "Status": ["InService"]}}}, True),
    ({"detail": {"groups": {"Name": ["cpu"], "Status": ["Failed"]}}}, False),
    ({"time": [{"prefix": "2026-11-25"}]}, True),
    ({"time": [{"prefix": "2026-11-26"}]}, False),
    ({"detail": {"name": [{"prefix": {"equals-ignore-case": "hyperpod-"}}]}}, True),
    ({"detail": {"name": [{"prefix": "hyperpod-"}]}}, False),
    ({"detail": {"file": [{"suffix": ".LOG"}]}}, True),
    ({"detail": {"file": [{"suffix": ".log"}]}}, False),
    ({"detail": {"file": [{"suffix": {"equals-ignore-case": ".log"}}]}}, True),
    ({"detail": {"count": [{"prefix": "5"}]}}, False),
    ({"detail": {"state": [{"equals-ignore-case": "RUNNING"}]}}, True),
    ({"detail": {"state": [{"equals-ignore-case": "RUNNIN"}]}}, False),
    ({"detail": {"file": [{"wildcard": "logs/*/agent.*"}]}}, True),
    ({"detail": {"file": [{"wildcard": "logs/*/health.*"}]}}, False),
    ({"detail": {"name": [{"wildcard": "HyperPod\\*"}]}}, False),
    ({"detail": {"state": [{"anything-but": "Stopped"}]}}, True),
    ({"detail": {"state": [{"anything-but": "Running"}]}}, False),
    ({"detail": {"state": [{"anything-but": ["Stopped", "Pending"]}]}}, True),
    ({"detail": {"state": [{"anything-but": ["Stopped", "Running"]}]}}, False),
    ({"detail": {"count": [{"anything-but": [4, 6]}]}}, True),
    ({"detail": {"count": [{"anything-but": 5}]}}, False),
    ({"detail": {"state": [{"anything-but": {"prefix": "Stop"}}]}}, True),
    ({"detail": {"state": [{"anything-but": {"prefix": "Run"}}]}}, False),
    ({"detail": {"file": [{"anything-but": {"suffix": ".txt"}}]}}, True),
    ({"detail": {"file": [{"anything-but": {"suffix": ".LOG"}}]}}, False),
    ({"detail": {"state": [{"anything-but": {"equals-ignore-case": "stopped"}}]}}, True),
    ({"detail": {"state": [{"anything-but": {"equals-ignore-case": "running"}}]}}, False),
    ({"detail": {"file": [{"anything-but": {"wildcard": "*/lib/*"}}]}}, True),
    ({"detail": {"file": [{"anything-but": {"wildcard": "*/node/*"}}]}}, False),
    ({"detail": {"missing": [{"anything-but": "x"}]}}, False),
    ({"detail": {"state": [{"exists": True}]}}, True),
    ({"detail": {"missing": [{"exists": True}]}}, False),
    ({"detail": {"missing": [{"exists": False}]}}, True),
    ({"detail": {"state": [{"exists": False}]}}, False),
    ({"absent": {"deeper": [{"exists": False}]}}, True),
    ({"detail": {"nested": [{"exists": True}]}}, False),
    ({"detail": {"count": [{"numeric": [">", 0, "<=", 5]}]}}, True),
    ({"detail": {"count": [{"numeric": [">", 0, "<", 5]}]}}, False),
    ({"detail": {"ratio": [{"numeric": ["=", 0.75]}]}}, True),
    ({"detail": {"ratio": [{"numeric": [">=", 1]}]}}, False),
    ({"detail": {"state": [{"numeric": [">", 0]}]}}, False),
    ({"detail": {"ip": [{"cidr": "10.0.0.0/16"}]}}, True),
    ({"detail": {"ip": [{"cidr": "10.1.0.0/16"}]}}, False),
    ({"detail": {"$or": [{"state": ["Stopped"]}, {"count": [{"numeric": [">", 4]}]}]}}, True),
    ({"detail": {"$or": [{"state": ["Stopped"]}, {"count": [{"numeric": [">", 5]}]}]}}, False),
    ({"source": ["aws.sagemaker"], "detail": {"state": ["Stopped"]}}, False),
]


@pytest.mark.parametrize(("pattern", "expected"), OPERATOR_CASES, ids=lambda v: json.dumps(v))
def test_matcher_operator(pattern: dict[str, Any], expected: bool) -> None:
    assert matches(pattern, EVENT) is expected


@pytest.mark.parametrize(
    "pattern",
    [
        {"source": "aws.sagemaker"},
        {"source": []},
        {"source": [{"startswith": "aws."}]},
        {"source": [{"prefix": "aws.", "suffix": "maker"}]},
        {"detail": {"count": [{"numeric": [">", "zero"]}]}},
        {"detail": {"count": [{"numeric": [">"]}]}},
        {"detail": {"state": [{"exists": "yes"}]}},
        {"$or": []},
    ],
    ids=lambda v: json.dumps(v),
)
def test_matcher_refuses_malformed_patterns(pattern: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        matches(pattern, EVENT)


# -- input transformation ---------------------------------------------------------------------


def test_values_with_quotes_stay_inside_the_text() -> None:
    paths, template = input_transformer(CLUSTER_STATE)
    event = sample("state_change_failed")
    event["detail"]["FailureMessage"] = 'script "on_create.sh" failed\\n'
    text = render(paths, template, event)
    assert 'What happened: script "on_create.sh" failed\\n' in text


def test_a_path_the_event_lacks_is_a_key_error() -> None:
    """What test_every_input_path_is_in_the_documented_events relies on."""
    with pytest.raises(KeyError, match="the event has no 'Missing'"):
        render({"x": "$.detail.Missing"}, '"<x>"', {"detail": {}})

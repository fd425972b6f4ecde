"""network.node_egress: default, all, or rules added to the default ones; bad rules are errors."""

from __future__ import annotations

import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk.config import ConfigError, EnvironmentConfig, validate

EGRESS = "network.node_egress"


def issues(value: object) -> list:
    try:
        _, found = validate(build({EGRESS: value}), None)
    except ConfigError as exc:
        return [*exc.issues, *exc.warnings]
    return found


@pytest.mark.parametrize("value", ["default", "all", [{"port": 22, "cidr": "0.0.0.0/0"}]])
def test_each_form_is_valid(value: object) -> None:
    assert issues(value) == []


@pytest.mark.parametrize(
    ("value", "path", "fragment"),
    [
        ("everything", EGRESS, "'everything' is not allowed; use 'default' or 'all'"),
        ([{"port": 0, "cidr": "0.0.0.0/0"}], f"{EGRESS}[0].port", "greater than or equal to 1"),
        ([{"port": 22}], f"{EGRESS}[0].cidr", "required key is missing"),
        ([{"port": 22, "cidr": "10.0.0.1/8"}], f"{EGRESS}[0].cidr", "has host bits set"),
        (
            [{"port": 22, "cidr": "0.0.0.0/0", "protocol": "icmp"}],
            f"{EGRESS}[0].protocol",
            "'icmp'",
        ),
        (
            [{"port": 90, "to_port": 80, "cidr": "0.0.0.0/0"}],
            f"{EGRESS}[0]",
            "to_port 80 is below port 90",
        ),
        ([{"port": "22", "cidr": "0.0.0.0/0"}], f"{EGRESS}[0].port", "write 22 without quotes"),
        (
            [{"port": 22, "cidr": "0.0.0.0/0"}, {"port": 22, "cidr": "0.0.0.0/0"}],
            f"{EGRESS}[1]",
            "repeats network.node_egress[0]",
        ),
    ],
)
def test_a_bad_rule_is_an_error_at_its_key(value: object, path: str, fragment: str) -> None:
    assert_issue([i for i in issues(value) if i.severity == "error"], path, fragment)


def test_internet_egress_in_a_closed_network_is_a_warning() -> None:
    data = build({EGRESS: "all", "network.closed_network": True, "network.nat_gateways": 0})
    cfg, warnings = validate(data, None)
    assert isinstance(cfg, EnvironmentConfig)
    assert_issue(warnings, EGRESS, "reaches only the VPC and its endpoints")

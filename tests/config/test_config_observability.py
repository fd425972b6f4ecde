"""``observability``: the shape (levels of eleven categories, unknown ones refused), the defaults of
each orchestrator, the EKS shorthand, and every cross-key rule at its key path.

The Slurm categories, levels and defaults are the extension's, from
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-cluster-observability-slurm-extension-config.html
(read 2026-11-27; tests/observability/test_extension_settings_facts.py holds the table)."""

from __future__ import annotations

from typing import Any

import pytest
from config_testkit import assert_issue, config, errors, issues, warnings

from hyperpod_cdk.config.observability import (
    EKS_CATEGORIES,
    EKS_ONLY_CATEGORIES,
    EXTENSION_VERSION,
    SLURM_ONLY_CATEGORIES,
    extension_version,
    metric_levels,
    observability_settings,
)
from hyperpod_cdk.facts import GRAFANA_REGIONS

CONTINUOUS = {"cluster.node_provisioning_mode": "Continuous"}  # the default, said here
ON = {**CONTINUOUS, "observability": {"enabled": True}}
ALERTS = {"alerts": {"emails": ["oncall@example.com"]}}
WORKSPACE = "arn:aws:aps:us-west-2:111122223333:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"


def ours(found: list) -> list:
    return [i for i in found if i.path.startswith("observability")]


# -- shape and defaults ----------------------------------------------------------------------


def test_no_section_means_metrics_off() -> None:
    cfg = config({})
    assert cfg.observability is None
    assert cfg.observability_enabled is False
    assert observability_settings(cfg) is None


def test_slurm_defaults_are_the_extensions_six_categories() -> None:
    cfg = config({**ON, **ALERTS})
    # the extension's documented defaults; accelerated_compute ADVANCED: the default backs the
    # ECC and NVLink alert rules (issue 32, test_config_rule_levels.py)
    assert metric_levels(cfg) == {
        "node": "BASIC",
        "accelerated_compute": "ADVANCED",
        "network": "ENABLED",
        "job": "ENABLED",
        "cluster": "ENABLED",
        "nccl": "DISABLED",
    }
    settings = observability_settings(cfg)
    assert settings is not None
    assert settings.alert_rules is True
    assert settings.grafana is False
    assert extension_version(settings) == EXTENSION_VERSION
    assert ours(issues({**ON, **ALERTS})) == []


def test_eks_defaults_cover_all_nine_categories_and_levels_override_them() -> None:
    cfg = config(
        {"observability": {"enabled": True, "levels": {"ray": "ADVANCED", "node": "DISABLED"}}},
        "eks",
    )
    levels = metric_levels(cfg)
    assert set(levels) == set(EKS_CATEGORIES)
    assert levels["ray"] == "ADVANCED"
    assert levels["node"] == "DISABLED"
    assert levels["training"] == "BASIC"
    assert levels["task_governance"] == "DISABLED"


def test_eks_task_governance_metrics_default_to_advanced_with_the_addon() -> None:
    cfg = config({"eks": {"addons": {"task_governance": True}}, "observability": {"enabled": True}},
                 "eks")  # fmt: skip
    assert metric_levels(cfg)["task_governance"] == "ADVANCED"


def test_the_eks_shorthand_alone_means_enabled_with_defaults() -> None:
    cfg = config({"eks": {"addons": {"observability": True}}}, "eks")
    assert cfg.observability is None
    assert cfg.observability_enabled is True
    assert cfg.needs_eks_addons is True
    settings = observability_settings(cfg)
    assert settings is not None and settings.enabled and settings.alert_rules


def test_the_section_alone_turns_the_eks_addons_stack_on() -> None:
    cfg = config({"eks": {"cluster_arn": None}, "observability": {"enabled": True}}, "eks")
    assert cfg.observability_enabled and cfg.needs_eks_addons


def test_an_unknown_category_is_an_error_at_its_key() -> None:
    found = errors({**ON, "observability.levels": {"gpu": "BASIC"}})
    assert any(i.path == "observability.levels.gpu" for i in found), found


def test_an_unknown_level_is_an_error_at_its_key() -> None:
    found = errors({**ON, "observability.levels": {"node": "FULL"}})
    assert_issue(found, "observability.levels.node", "DISABLED")


def test_a_workspace_arn_must_be_one() -> None:
    found = errors({**ON, "observability.prometheus_workspace_arn": "ws-1234"})
    assert_issue(found, "observability.prometheus_workspace_arn", "Amazon Managed Prometheus")


def test_an_extension_version_must_be_major_minor_patch() -> None:
    found = errors({**ON, "observability.extension_version": "1.0"})
    assert_issue(found, "observability.extension_version", "MAJOR.MINOR.PATCH")


# -- rules -----------------------------------------------------------------------------------


def test_the_slurm_extension_needs_continuous_provisioning() -> None:
    changes = {"cluster.node_provisioning_mode": None, "observability": {"enabled": True}, **ALERTS}
    found = errors(changes)
    assert_issue(found, "observability.enabled", "needs Continuous provisioning")
    assert_issue(found, "observability.enabled", "cluster.node_provisioning_mode")


@pytest.mark.parametrize("category", EKS_ONLY_CATEGORIES)
def test_eks_only_categories_are_errors_on_slurm(category: str) -> None:
    found = errors({**ON, **ALERTS, "observability.levels": {category: "BASIC"}})
    assert_issue(found, f"observability.levels.{category}", "applies only with orchestrator: eks")


@pytest.mark.parametrize(
    ("category", "level", "allowed"),
    [
        ("network", "BASIC", "ENABLED or DISABLED"),
        ("job", "ADVANCED", "ENABLED or DISABLED"),
        ("cluster", "BASIC", "ENABLED or DISABLED"),
        ("nccl", "BASIC", "ENABLED or DISABLED"),
        ("node", "DISABLED", "BASIC or ADVANCED"),
        ("accelerated_compute", "ENABLED", "BASIC or ADVANCED"),
    ],
)
def test_a_level_the_slurm_extension_does_not_take_is_an_error_naming_its_levels(
    category: str, level: str, allowed: str
) -> None:
    found = errors({**ON, **ALERTS, "observability.levels": {category: level}})
    key = f"observability.levels.{category}"
    assert_issue(found, key, f"{level} is not a level of the Slurm extension's")
    assert_issue(found, key, f"; use {allowed}")


def test_the_slurm_extensions_own_levels_are_fine() -> None:
    levels = {"node": "ADVANCED", "network": "DISABLED", "job": "DISABLED", "nccl": "ENABLED",
              "cluster": "ENABLED", "accelerated_compute": "ADVANCED"}  # fmt: skip
    changes = {**ON, **ALERTS, "observability.levels": levels}
    assert ours(issues(changes)) == []
    assert metric_levels(config(changes)) == levels


@pytest.mark.parametrize("category", SLURM_ONLY_CATEGORIES)
def test_slurm_only_categories_are_errors_on_eks(category: str) -> None:
    found = errors({"observability": {"enabled": True, "levels": {category: "ENABLED"}}}, "eks")
    assert_issue(found, f"observability.levels.{category}", "applies only with orchestrator: slurm")


def test_enabled_is_not_an_eks_level() -> None:
    found = errors({"observability": {"enabled": True, "levels": {"network": "ENABLED"}}}, "eks")
    assert_issue(found, "observability.levels.network", "use DISABLED, BASIC, ADVANCED")


def test_logging_on_slurm_is_an_error_the_extension_has_no_such_setting() -> None:
    for enabled in (True, False):
        found = errors({**CONTINUOUS, **ALERTS,
                        "observability": {"enabled": enabled, "logging": True}})  # fmt: skip
        assert_issue(found, "observability.logging", "has no logging setting")
        assert_issue(found, "observability.logging", "slurm-extension-config.html")


def test_logging_on_eks_stays_the_addons_setting() -> None:
    changes = {"observability": {"enabled": True, "logging": True}, **ALERTS}
    assert ours(issues(changes, "eks")) == []


def test_the_extension_version_is_an_error_on_eks() -> None:
    found = errors({"observability": {"enabled": True, "extension_version": "1.0.0"}}, "eks")
    assert_issue(found, "observability.extension_version", "orchestrator: slurm")


@pytest.mark.parametrize("exporter", ["node", "dcgm", "efa"])
def test_the_extension_and_the_lifecycle_exporters_together_are_an_error(exporter: str) -> None:
    changes = {**ON, **ALERTS, f"cluster.node_setup.exporters.{exporter}": True}
    found = errors(changes)
    key = f"cluster.node_setup.exporters.{exporter}"
    assert_issue(found, "observability.enabled", key)
    assert_issue(found, "observability.enabled", "same ports, same metrics")


def test_the_exporters_without_the_extension_are_no_observability_issue() -> None:
    found = issues({"cluster.node_setup.exporters.node": True})
    assert ours(found) == []


def test_grafana_in_a_region_without_it_names_the_regions() -> None:
    changes = {
        "region": "sa-east-1",
        "network.availability_zone_id": "sae1-az1",
        **ON,
        **ALERTS,
        "observability.grafana": True,
    }
    found = errors(changes)
    assert_issue(found, "observability.grafana", "not offered in sa-east-1")
    assert_issue(found, "observability.grafana", ", ".join(GRAFANA_REGIONS))


def test_grafana_in_a_region_with_it_is_fine() -> None:
    assert ours(issues({**ON, **ALERTS, "observability.grafana": True})) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("grafana", True),
        ("alert_rules", True),
        ("logging", True),
        ("levels", {"node": "ADVANCED"}),
        ("prometheus_workspace_arn", WORKSPACE),
    ],
)
def test_keys_while_observability_is_off_are_warnings(key: str, value: Any) -> None:
    # logging: the EKS add-on's setting (on Slurm an error: the extension has none)
    orchestrator = "eks" if key == "logging" else "slurm"
    found = issues({"observability": {"enabled": False, key: value}}, orchestrator)
    assert [i.severity for i in ours(found)] == ["warning"]
    assert_issue(found, f"observability.{key}", "has no effect while observability is off")


def test_an_off_section_with_defaults_only_says_nothing() -> None:
    assert ours(issues({"observability": {"enabled": False}})) == []


def test_alert_rules_without_alerts_is_a_warning() -> None:
    found = warnings(ON)
    assert_issue(found, "observability.alert_rules", "no alerts section")
    assert not ours(errors(ON))


def test_no_alert_rules_without_alerts_says_nothing() -> None:
    assert ours(issues({**ON, "observability.alert_rules": False})) == []


def test_the_shorthand_and_enabled_false_together_are_an_error() -> None:
    changes = {"eks": {"addons": {"observability": True}}, "observability": {"enabled": False}}
    found = errors(changes, "eks")
    assert_issue(found, "observability.enabled", "eks.addons.observability: true")


def test_the_shorthand_and_enabled_true_together_are_fine() -> None:
    changes = {
        "eks": {"addons": {"observability": True}},
        "observability": {"enabled": True},
        **ALERTS,
    }
    assert ours(issues(changes, "eks")) == []


def test_the_shorthand_with_a_section_that_leaves_enabled_out_is_on() -> None:
    changes = {"eks": {"addons": {"observability": True}}, "observability": {"logging": True}}
    cfg = config(changes, "eks")
    assert cfg.observability_enabled
    settings = observability_settings(cfg)
    assert settings is not None and settings.logging


def test_an_adopted_workspace_of_another_region_is_an_error() -> None:
    other = WORKSPACE.replace("us-west-2", "us-east-1")
    found = errors({**ON, **ALERTS, "observability.prometheus_workspace_arn": other})
    assert_issue(found, "observability.prometheus_workspace_arn", "aws/us-east-1")


def test_an_adopted_workspace_of_another_account_is_an_error() -> None:
    changes = {
        "account": "444455556666",
        **ON,
        **ALERTS,
        "observability.prometheus_workspace_arn": WORKSPACE,
    }
    found = errors(changes)
    assert_issue(found, "observability.prometheus_workspace_arn", "account 111122223333")


def test_an_adopted_workspace_of_this_account_and_region_is_fine() -> None:
    changes = {**ON, **ALERTS, "observability.prometheus_workspace_arn": WORKSPACE}
    assert ours(issues(changes)) == []

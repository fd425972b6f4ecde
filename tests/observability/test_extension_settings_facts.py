"""The Slurm extension's settings table holds config validation, the construct's output and the
handler together (issue 32, facts_slurm_obs 1.7).

Source: SageMaker developer guide, "Observability extension configuration",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-cluster-observability-slurm-extension-config.html
(read 2026-11-27). :data:`PAGE_EXAMPLE` is the page's example of "every setting with its default
value", as far as the stored copy read here shows it (it ends in a setting starting ``graf``,
which this project therefore never sends).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.modules import load_module

from hyperpod_cdk.config import ConfigError, validate
from hyperpod_cdk.config.observability import (
    METRIC_KEYS,
    SLURM_CATEGORIES,
    SLURM_DEFAULT_LEVELS,
    SLURM_EXTENSION_READ,
    SLURM_EXTENSION_SETTINGS,
    SLURM_EXTENSION_SOURCE,
)
from hyperpod_cdk.observability import EXTENSION_HANDLER_DIR
from hyperpod_cdk.observability.metrics import extension_configuration

handler = load_module(
    "hyperpod_observability_extension_handler_facts", EXTENSION_HANDLER_DIR / "handler.py"
)

SOURCE = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-cluster-observability-slurm-extension-config.html"
)
#: the page's example (read 2026-11-27), up to where the stored copy ends
PAGE_EXAMPLE: dict[str, Any] = {
    "prometheus": {
        "remoteWriteUrl": "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/"
        "ws-11111111-2222-3333-4444-555555555555/api/v1/remote_write"
    },
    "metricsProvider": {
        "nodeMetrics": {"level": "BASIC", "collectionIntervalSeconds": 30},
        "acceleratedComputeMetrics": {"level": "BASIC", "collectionIntervalSeconds": 30},
        "networkMetrics": {"level": "ENABLED", "collectionIntervalSeconds": 30},
        "jobMetrics": {"level": "ENABLED", "collectionIntervalSeconds": 30},
        "clusterMetrics": {"level": "ENABLED", "collectionIntervalSeconds": 30},
        "ncclMetrics": {"level": "DISABLED", "collectionIntervalSeconds": 30},
    },
    "profilesProvider": {"hostProfiling": {"enabled": False}},
}
ALL_LEVELS = ("DISABLED", "BASIC", "ADVANCED", "ENABLED")
FULL = Path(__file__).resolve().parents[2] / "config" / "examples" / "full.yaml"


def test_the_table_names_its_source_and_date() -> None:
    assert SLURM_EXTENSION_SOURCE == SOURCE == handler.SOURCE
    assert SLURM_EXTENSION_READ == "2026-11-27"


def test_the_table_has_the_pages_categories_and_defaults() -> None:
    example = PAGE_EXAMPLE["metricsProvider"]
    assert [s.key for s in SLURM_EXTENSION_SETTINGS.values()] == list(example)
    for category, setting in SLURM_EXTENSION_SETTINGS.items():
        assert setting.default == example[setting.key]["level"], category
        assert setting.default in setting.levels
        assert {level for level, _ in setting.evidence} == set(setting.levels)
        assert METRIC_KEYS[category] == setting.key
    assert {c: s.default for c, s in SLURM_EXTENSION_SETTINGS.items()} == SLURM_DEFAULT_LEVELS
    assert tuple(SLURM_EXTENSION_SETTINGS) == SLURM_CATEGORIES


def test_the_handler_sends_exactly_the_pages_settings() -> None:
    def paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
        out: set[tuple[str, ...]] = set()
        for key, value in tree.items():
            out |= paths(value, (*prefix, key)) if isinstance(value, dict) else {(*prefix, key)}
        return out

    assert paths(PAGE_EXAMPLE) == handler.DOCUMENTED
    assert tuple(s.key for s in SLURM_EXTENSION_SETTINGS.values()) == handler.CATEGORIES


def _validate(levels: dict[str, str]) -> list[str]:
    """The errors of config/examples/full.yaml (observability on Slurm) with ``levels``."""
    data = copy.deepcopy(yaml.safe_load(FULL.read_text()))
    data["observability"]["levels"] = levels
    try:
        validate(data, None)
    except ConfigError as error:
        return [str(issue) for issue in error.issues]
    return []


@pytest.mark.parametrize("category", list(SLURM_EXTENSION_SETTINGS))
def test_config_accepts_exactly_the_tables_levels_and_the_construct_sends_them(
    category: str,
) -> None:
    setting = SLURM_EXTENSION_SETTINGS[category]
    for level in ALL_LEVELS:
        found = _validate({category: level})
        if level in setting.levels:
            assert found == [], found
            sent = extension_configuration(
                "https://example/api/v1/remote_write", {setting.key: level}
            )
            assert sent["metricsProvider"] == {setting.key: {"level": level}}
            leaves = handler.leaves(sent)
            assert set(leaves) <= handler.DOCUMENTED
        else:
            assert found == [
                f"config error: observability.levels.{category}: {level} is not a level of the "
                f"Slurm extension's {setting.key}; use {' or '.join(setting.levels)} ({SOURCE})"
            ]
            with pytest.raises(ValueError, match=f"use {' or '.join(setting.levels)}"):
                extension_configuration("https://example", {setting.key: level})


def test_the_full_example_validates() -> None:
    assert _validate(yaml.safe_load(FULL.read_text())["observability"]["levels"]) == []


def test_the_alert_rules_levels_are_levels_of_the_extension() -> None:
    """Each counter's level (SLURM_METRIC_LEVELS: ECC / NVLink ADVANCED-only on
    acceleratedComputeMetrics) is a level the extension takes for that category, so a rule is
    always backed at some configurable level."""
    from hyperpod_cdk.facts.alert_rules import SLURM_METRIC_LEVELS

    for metric, (category, level) in SLURM_METRIC_LEVELS.items():
        assert level in SLURM_EXTENSION_SETTINGS[category].levels, metric
    assert SLURM_METRIC_LEVELS["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == (
        "accelerated_compute",
        "ADVANCED",
    )

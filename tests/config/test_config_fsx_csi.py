"""eks.addons.fsx_csi_driver: null, true, false, or {dynamic_provisioning, storage_class}."""

from __future__ import annotations

import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk.config import ConfigError, EnvironmentConfig, validate

KEY = "eks.addons.fsx_csi_driver"


def errors(changes: dict) -> list:
    try:
        validate(build(changes, "eks"), None)
    except ConfigError as exc:
        return list(exc.issues)
    return []


@pytest.mark.parametrize("value", [None, True, False, {"dynamic_provisioning": True}, {}])
def test_each_form_is_valid(value: object) -> None:
    assert errors({KEY: value}) == []


def test_dynamic_provisioning_needs_no_file_system_of_the_environment() -> None:
    changes = {KEY: {"dynamic_provisioning": True}, "storage.fsx": {"enabled": False}}
    assert errors(changes) == []
    cfg, _ = validate(build(changes, "eks"), None)
    assert isinstance(cfg, EnvironmentConfig)
    assert cfg.fsx_csi_driver_enabled
    assert cfg.eks_settings.addons.fsx_csi_dynamic is not None


def test_true_without_a_file_system_says_both_ways_out() -> None:
    found = errors({KEY: True, "storage.fsx": {"enabled": False}})
    assert_issue(found, KEY, "or ask for {dynamic_provisioning: true}")


@pytest.mark.parametrize(
    ("value", "path", "fragment"),
    [
        ("maybe", KEY, "'maybe' is not valid"),
        (
            {"dynamic_provisioning": True, "storage_class": "Fsx_SC"},
            f"{KEY}.storage_class",
            "a Kubernetes name",
        ),
        ({"dynamic": True}, f"{KEY}.dynamic", "unknown key"),
    ],
)
def test_a_bad_value_is_an_error_at_its_key(value: object, path: str, fragment: str) -> None:
    assert_issue(errors({KEY: value}), path, fragment)

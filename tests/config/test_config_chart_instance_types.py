"""An EKS group whose instance type the dependency chart's lists miss is a warning with the
reason and the key that adds it (config/chart_instance_types.py; the facts are facts/__init__.py,
tied to the chart in tests/eks/test_chart_instance_types.py)."""

from __future__ import annotations

import functools

import config_testkit as kit
from config_testkit import assert_issue

G0 = "cluster.instance_groups[0]"
warnings = functools.partial(kit.warnings, base="eks")
errors = functools.partial(kit.errors, base="eks")


def chart_warnings(changes: dict) -> list:
    return [i for i in warnings(changes) if "dependency chart" in i.message or "EFA" in i.message]


def test_g4dn_and_g7e_groups_get_gpus_the_agent_and_efa_without_a_warning() -> None:
    """Both are on the chart's NVIDIA (and, for their EFA sizes, EFA) lists."""
    for instance_type in ("ml.g4dn.12xlarge", "ml.g4dn.xlarge", "ml.g7e.48xlarge"):
        changes = {f"{G0}.instance_type": instance_type}
        assert errors(changes) == []
        assert chart_warnings(changes) == [], instance_type


def test_a_g7_group_is_warned_that_its_efa_support_is_unconfirmed() -> None:
    found = warnings({f"{G0}.instance_type": "ml.g7.48xlarge"})
    assert_issue(found, G0, "whether ml.g7.48xlarge has EFA is published in no source")
    assert_issue(found, G0, "--instance-types g7.48xlarge")
    assert_issue(found, G0, "eks.chart_values.extra_instance_types.efa")
    # GPUs and the health agent: on the NVIDIA list, so no warning about them
    assert not [i for i in found if "NVIDIA list" in i.message]


def test_adding_the_type_to_the_efa_list_settles_it() -> None:
    changes = {
        f"{G0}.instance_type": "ml.g7.48xlarge",
        "eks.chart_values.extra_instance_types.efa": ["ml.g7.48xlarge"],
    }
    assert chart_warnings(changes) == []


def test_without_the_efa_plugin_there_is_nothing_to_warn() -> None:
    changes = {
        f"{G0}.instance_type": "ml.g7.48xlarge",
        "eks.dependencies.efa_device_plugin": False,
    }
    assert chart_warnings(changes) == []


def test_a_flexible_group_checks_each_of_its_types() -> None:
    changes = {
        f"{G0}.instance_type": None,
        f"{G0}.instance_types": ["ml.g6.12xlarge", "ml.g7.12xlarge"],
    }
    found = chart_warnings(changes)
    assert [i.path for i in found] == [G0]
    assert "ml.g7.12xlarge" in found[0].message

"""The alert rules: AWS's list of alerts is all there, every expression parses as PromQL (the
pinned promql-parser, offline: the project installs no promtool) and uses only metrics the
exporters export, and the Slurm file leaves out what needs Kubernetes."""

from __future__ import annotations

from typing import Any

import promql_parser
import pytest
import yaml

from hyperpod_cdk.facts.alert_rules import (
    GROUP_NAME,
    METRIC_SOURCES,
    RULES,
    SLURM_METRIC_LEVELS,
    left_out,
    rule_file,
    rules_for,
    slurm_needs,
    slurm_rule_file,
)


def metrics_of(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name)
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


@pytest.mark.parametrize(
    "rule", RULES, ids=lambda r: f"{r.name}-{'-'.join(sorted(r.orchestrators))}"
)
def test_expression_parses_and_uses_known_metrics(rule: Any) -> None:
    used = metrics_of(rule.expr)
    assert used, rule.expr
    assert used <= set(METRIC_SOURCES), used - set(METRIC_SOURCES)


def test_every_known_metric_is_used() -> None:
    used = set().union(*(metrics_of(rule.expr) for rule in RULES))
    assert used == set(METRIC_SOURCES)


def test_parser_rejects_a_broken_expression() -> None:
    with pytest.raises(ValueError):
        promql_parser.parse("max by (instance (DCGM_FI_DEV_GPU_TEMP) > 80")


@pytest.mark.parametrize("orchestrator", ["slurm", "eks"])
def test_rule_file_is_a_prometheus_rule_file(orchestrator: str) -> None:
    document = yaml.safe_load(rule_file(orchestrator, "ml-prod"))  # type: ignore[arg-type]
    assert list(document) == ["groups"]
    (group,) = document["groups"]
    assert group["name"] == GROUP_NAME
    names = [rule["alert"] for rule in group["rules"]]
    assert len(names) == len(set(names))
    for rule in group["rules"]:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["labels"]["hyperpod_cluster"] == "ml-prod"
        assert set(rule["annotations"]) == {"summary", "description"}
        assert "ml-prod" in rule["annotations"]["description"]
        assert "<cluster>" not in rule["annotations"]["description"]
        assert "{{ $labels." in rule["annotations"]["description"]
        promql_parser.parse(rule["expr"])


def test_aws_alerts_are_all_there_on_eks() -> None:
    """GPU temperature (two levels), ECC, NVLink, thermal violation, MIG, Xid, disk, FSx."""
    rules = {rule.name: rule for rule in rules_for("eks")}
    assert set(rules) == {
        "HyperPodGpuTemperatureHigh",
        "HyperPodGpuTemperatureCritical",
        "HyperPodGpuEccDoubleBitErrors",
        "HyperPodGpuNvlinkErrors",
        "HyperPodGpuThermalViolation",
        "HyperPodGpuXidError",
        "HyperPodMigConfigFailed",
        "HyperPodNodeDiskAlmostFull",
        "HyperPodFsxLustreAlmostFull",
    }
    assert rules["HyperPodGpuTemperatureHigh"].expr.endswith("> 80")
    assert rules["HyperPodGpuTemperatureHigh"].severity == "warning"
    assert rules["HyperPodGpuTemperatureCritical"].expr.endswith("> 85")
    assert rules["HyperPodGpuTemperatureCritical"].severity == "critical"
    assert rules["HyperPodNodeDiskAlmostFull"].expr.endswith("> 90")
    assert rules["HyperPodFsxLustreAlmostFull"].expr.endswith("> 80")


def test_slurm_file_has_no_kubernetes_metrics() -> None:
    text = slurm_rule_file("ml-prod")
    assert text == rule_file("slurm", "ml-prod")
    assert "kubelet_" not in text and "fsx_lustre_" not in text
    names = [rule["alert"] for rule in yaml.safe_load(text)["groups"][0]["rules"]]
    assert "HyperPodMigConfigFailed" not in names
    assert "HyperPodFsxLustreAlmostFull" in names
    assert "HyperPodGpuXidError" in names


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="not slurm or eks"):
        rules_for("pcs")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a HyperPod cluster name"):
        rule_file("eks", 'ml"prod')


# -- rules and the Slurm extension's levels (issue 32, slurm 4.5) ------------------------------

#: AWS's Slurm counters files, awslabs/awsome-distributed-ai@95b939cdc5b24ded03a70da21533964f9354
#: b731 1.architectures/5.sagemaker-hyperpod/Extensions/observability/dcgm_metrics_config/:
#: the DCGM counters of the rules that dcgm-metrics-basic.csv lists (the rest are in
#: dcgm-metrics-advanced.csv only)
AWS_SLURM_BASIC_DCGM = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS",
                        "DCGM_FI_DEV_THERMAL_VIOLATION"}  # fmt: skip


def test_every_slurm_rule_counter_has_its_level() -> None:
    used = set().union(*(metrics_of(r.expr) for r in rules_for("slurm")))
    assert used == set(SLURM_METRIC_LEVELS)
    basic_dcgm = {m for m, (c, lvl) in SLURM_METRIC_LEVELS.items()
                  if c == "accelerated_compute" and lvl == "BASIC"}  # fmt: skip
    assert basic_dcgm == AWS_SLURM_BASIC_DCGM


def test_ecc_and_nvlink_need_advanced_on_slurm() -> None:
    needs = {r.name: slurm_needs(r) for r in rules_for("slurm")}
    assert needs["HyperPodGpuEccDoubleBitErrors"] == {"accelerated_compute": "ADVANCED"}
    assert needs["HyperPodGpuNvlinkErrors"] == {"accelerated_compute": "ADVANCED"}
    assert needs["HyperPodGpuXidError"] == {"accelerated_compute": "BASIC"}


def test_the_slurm_file_at_basic_leaves_the_ecc_and_nvlink_rules_out() -> None:
    """Levels as the extension's metricsProvider keys (what HyperPodMetrics gets) or categories."""
    for levels in ({"acceleratedComputeMetrics": "BASIC", "nodeMetrics": "BASIC"},
                   {"accelerated_compute": "BASIC", "node": "BASIC"}):  # fmt: skip
        document = yaml.safe_load(rule_file("slurm", "ml-prod", levels))
        names = [rule["alert"] for rule in document["groups"][0]["rules"]]
        assert "HyperPodGpuEccDoubleBitErrors" not in names
        assert "HyperPodGpuNvlinkErrors" not in names
        assert "HyperPodGpuTemperatureHigh" in names
    assert [(r.name, c, n) for r, c, n in left_out("slurm", levels)] == [
        ("HyperPodGpuEccDoubleBitErrors", "accelerated_compute", "ADVANCED"),
        ("HyperPodGpuNvlinkErrors", "accelerated_compute", "ADVANCED"),
    ]


def test_advanced_or_unknown_levels_keep_every_rule() -> None:
    every = [r.name for r in rules_for("slurm")]
    assert [r.name for r in rules_for("slurm", {"accelerated_compute": "ADVANCED"})] == every
    assert [r.name for r in rules_for("slurm", {})] == every  # categories not given: kept
    assert rule_file("slurm", "ml-prod", None) == rule_file("slurm", "ml-prod")
    assert rules_for("eks", {"accelerated_compute": "DISABLED"}) == rules_for("eks")

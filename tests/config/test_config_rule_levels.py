"""Issue 32 (slurm 4.5): the alert rules and the metric levels agree on Slurm.

AWS's Slurm observability counters files (awslabs/awsome-distributed-ai@95b939cdc5b24ded03a7
0da21533964f9354b731 1.architectures/5.sagemaker-hyperpod/Extensions/observability/
dcgm_metrics_config/dcgm-metrics-basic.csv and dcgm-metrics-advanced.csv) list
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, DCGM_FI_DEV_ECC_DBE_AGG_TOTAL and the NVLink recovery / replay
error counters only in the advanced file. So on Slurm the ECC and NVLink rules are backed by
``accelerated_compute: ADVANCED`` when the YAML leaves the level out, and left out with a
warning naming the rules and the key when the YAML sets a lower level.
"""

from __future__ import annotations

from config_testkit import assert_issue, config, warnings

from hyperpod_cdk.config.observability import metric_levels
from hyperpod_cdk.facts.alert_rules import rules_for

ON = {"cluster.node_provisioning_mode": "Continuous", "observability": {"enabled": True},
      "alerts": {"emails": ["oncall@example.com"]}}  # fmt: skip
KEY = "observability.levels.accelerated_compute"


def test_the_default_level_backs_every_slurm_rule() -> None:
    levels = metric_levels(config(ON))
    assert levels["accelerated_compute"] == "ADVANCED"
    assert levels["node"] == "BASIC"
    assert [r.name for r in rules_for("slurm", levels)] == [r.name for r in rules_for("slurm")]
    assert not [w for w in warnings(ON) if w.path.startswith("observability.levels")]


def test_without_alert_rules_the_default_stays_basic() -> None:
    cfg = config({**ON, "observability": {"enabled": True, "alert_rules": False}})
    assert metric_levels(cfg)["accelerated_compute"] == "BASIC"


def test_a_basic_level_leaves_the_ecc_and_nvlink_rules_out_with_a_warning() -> None:
    changes = {**ON, "observability": {"enabled": True,
                                       "levels": {"accelerated_compute": "BASIC"}}}  # fmt: skip
    levels = metric_levels(config(changes))
    assert levels["accelerated_compute"] == "BASIC"
    kept = [r.name for r in rules_for("slurm", levels)]
    assert "HyperPodGpuEccDoubleBitErrors" not in kept
    assert "HyperPodGpuNvlinkErrors" not in kept
    assert "HyperPodGpuXidError" in kept
    found = warnings(changes)
    assert_issue(found, KEY, "HyperPodGpuEccDoubleBitErrors (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert_issue(found, KEY, "HyperPodGpuNvlinkErrors (DCGM_FI_DEV_NVLINK_RECOVERY_ERROR")
    assert_issue(found, KEY, "only at ADVANCED, so the alert rules are left out")
    assert_issue(found, KEY, "set accelerated_compute: ADVANCED to keep them")


def test_every_slurm_node_level_backs_the_disk_rules() -> None:
    """nodeMetrics takes BASIC or ADVANCED (the extension's configuration page, read
    2026-11-27: https://docs.aws.amazon.com/sagemaker/latest/dg/
    sagemaker-hyperpod-cluster-observability-slurm-extension-config.html); both collect the
    node_filesystem_* counters, so no node level leaves the disk rules out."""
    for level in ("BASIC", "ADVANCED"):
        changes = {**ON, "observability": {"enabled": True, "levels": {"node": level}}}
        kept = [r.name for r in rules_for("slurm", metric_levels(config(changes)))]
        assert "HyperPodNodeDiskAlmostFull" in kept
        assert not [w for w in warnings(changes) if w.path == "observability.levels.node"]


def test_eks_levels_leave_no_rule_out() -> None:
    changes = {"observability": {"enabled": True, "levels": {"accelerated_compute": "BASIC"}},
               "alerts": {"emails": ["oncall@example.com"]}}  # fmt: skip
    assert metric_levels(config(changes, "eks"))["accelerated_compute"] == "BASIC"
    assert not [w for w in warnings(changes, "eks") if w.path.startswith("observability.levels")]

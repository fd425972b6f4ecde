"""The alert rules and the alert manager definition against the real Prometheus tools (the
real_tools tier: they run where ``promtool`` (Debian package prometheus) and ``amtool``
(prometheus-alertmanager) are installed, and skip with the reason elsewhere).

``promtool check rules`` on each orchestrator's rule file, then ``promtool test rules`` with a
unit test per alert: sample series (written here, one set for both orchestrators) on which
each rule fires, with the labels and the rendered annotations it must carry; and series on
which it must not (82 C is no critical, a full tmpfs is no disk). Every rule of the file needs
a case here: a rule added without one fails the test.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import real_tools

from hyperpod_cdk.facts import alert_rules
from hyperpod_cdk.observability.metrics import alert_manager_definition

pytestmark = pytest.mark.real_tools

CLUSTER = "ml-research"
EVAL = "15m"
GPU = {"instance": "10.1.0.11:9400", "Hostname": "ip-10-1-0-11"}
DISK = {"instance": "10.1.0.11:9100", "device": "/dev/root"}


def series(metric: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


# the input series: one sample a minute for 20 minutes
INPUT = [
    series("DCGM_FI_DEV_GPU_TEMP", {**GPU, "gpu": "0"}, "82x20"),
    series("DCGM_FI_DEV_GPU_TEMP", {**GPU, "gpu": "1"}, "90x20"),
    series("DCGM_FI_DEV_XID_ERRORS", {**GPU, "gpu": "0"}, "79x20"),
    series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {**GPU, "gpu": "0"}, "2x20"),
    series("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", {**GPU, "gpu": "0"}, "0+5x20"),
    series("DCGM_FI_DEV_THERMAL_VIOLATION", {**GPU, "gpu": "0"}, "0+6000x20"),
    series("node_filesystem_avail_bytes", {**DISK, "mountpoint": "/", "fstype": "ext4"}, "5x20"),
    series("node_filesystem_size_bytes", {**DISK, "mountpoint": "/", "fstype": "ext4"}, "100x20"),
    series("node_filesystem_avail_bytes", {**DISK, "mountpoint": "/run", "fstype": "tmpfs"}, "1x20"),
    series("node_filesystem_size_bytes", {**DISK, "mountpoint": "/run", "fstype": "tmpfs"}, "100x20"),
    *(
        series(f"node_filesystem_{kind}_bytes", {"instance": f"10.1.0.{n}:9100", "device":
               "10.1.0.50@tcp:/abcdefgh", "mountpoint": "/fsx", "fstype": "lustre"}, values)
        for n, avail in ((11, "15x20"), (12, "20x20"))
        for kind, values in (("avail", avail), ("size", "100x20"))
    ),
    series("kubelet_node_name", {"instance": "hyperpod-i-0g1", "nvidia_com_mig_config_state": "failed"}, "1x20"),
    series("fsx_lustre_storage_used_bytes", {"filesystem_id": "fs-0123456789abcdef0"}, "85x20"),
    series("fsx_lustre_storage_capacity_bytes", {"filesystem_id": "fs-0123456789abcdef0"}, "100x20"),
]  # fmt: skip

GPU0 = {**GPU, "gpu": "0"}
# alert -> (its labels beyond severity and hyperpod_cluster, the value it fires with), one
# entry per alert it must raise on INPUT at EVAL
FIRING: dict[str, list[tuple[dict[str, str], float]]] = {
    "HyperPodGpuTemperatureHigh": [(GPU0, 82), ({**GPU, "gpu": "1"}, 90)],
    "HyperPodGpuTemperatureCritical": [({**GPU, "gpu": "1"}, 90)],  # not 82 C
    "HyperPodGpuEccDoubleBitErrors": [(GPU0, 2)],
    "HyperPodGpuNvlinkErrors": [(GPU0, 50)],  # +5 a minute: 50 in 10 minutes
    "HyperPodGpuThermalViolation": [(GPU0, 100)],  # 6000 us a minute: 100 us per second
    "HyperPodGpuXidError": [(GPU0, 79)],
    "HyperPodMigConfigFailed": [({"instance": "hyperpod-i-0g1"}, 1)],
    # only /, not the full tmpfs
    "HyperPodNodeDiskAlmostFull": [({**DISK, "mountpoint": "/", "fstype": "ext4"}, 95)],
}
FSX_FIRING = {  # one alert per file system: the fullest node's view on Slurm (85 %)
    "slurm": [({"mountpoint": "/fsx"}, 85)],
    "eks": [({"filesystem_id": "fs-0123456789abcdef0"}, 85)],
}
_TEMPLATE = re.compile(r"\{\{\s*(\$labels\.(\w+)|\$value(\s*\|\s*printf\s+\"%\.0f\")?)\s*\}\}")


def go_float(value: float) -> str:
    """A float as Go's %v prints it (Prometheus' {{ $value }}): 82, 2.5."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def render(template: str, labels: dict[str, str], value: float) -> str:
    """The annotation templates the rules use: {{ $labels.x }}, {{ $value }}, printf "%.0f"."""

    def one(match: re.Match[str]) -> str:
        if match.group(2):
            return labels.get(match.group(2), "")
        return f"{value:.0f}" if match.group(3) else go_float(value)

    return _TEMPLATE.sub(one, template)


def unit_tests(rule_text: str, orchestrator: str) -> dict[str, Any]:
    tests = []
    firing = {**FIRING, "HyperPodFsxLustreAlmostFull": FSX_FIRING[orchestrator]}
    for rule in yaml.safe_load(rule_text)["groups"][0]["rules"]:
        name = rule["alert"]
        assert name in firing, f"{name}: add its sample series and expected alerts here"
        expected = []
        for labels, value in firing[name]:
            all_labels = {**labels, **rule["labels"]}
            expected.append(
                {
                    "exp_labels": all_labels,
                    "exp_annotations": {
                        key: render(text, all_labels, value)
                        for key, text in rule["annotations"].items()
                    },
                }
            )
        tests.append({"eval_time": EVAL, "alertname": name, "exp_alerts": expected})
    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": INPUT, "alert_rule_test": tests}],
    }


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [real_tools.tool("promtool"), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("orchestrator", ["slurm", "eks"])
def test_promtool_checks_the_rules_and_each_rule_fires_as_written(
    tmp_path: Path, orchestrator: alert_rules.Orchestrator
) -> None:
    text = alert_rules.rule_file(orchestrator, CLUSTER)
    (tmp_path / "rules.yaml").write_text(text)
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    count = len(alert_rules.rules_for(orchestrator))
    assert f"SUCCESS: {count} rules found" in checked.stdout
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(unit_tests(text, orchestrator)))
    tested = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_amtool_accepts_the_alert_manager_definition(tmp_path: Path) -> None:
    """AMP takes the definition as ``alertmanager_config: |`` holding an Alertmanager
    configuration; amtool checks that inner configuration (SNS receiver with sigv4)."""
    definition = alert_manager_definition(
        topic_arn="arn:aws:sns:us-west-2:111122223333:hyperpod-alerts",
        region="us-west-2",
        cluster_name=CLUSTER,
    )
    (tmp_path / "alertmanager.yaml").write_text(yaml.safe_load(definition)["alertmanager_config"])
    done = subprocess.run(
        [real_tools.tool("amtool"), "check-config", str(tmp_path / "alertmanager.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout

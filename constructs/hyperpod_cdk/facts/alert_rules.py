"""AWS's GPU, disk and FSx alert rules, written here as an Amazon Managed Prometheus rule-groups
namespace (a Prometheus rule file).

The facts (what to alert on, the metric names, the thresholds) are AWS's: the HyperPod
observability add-on's preconfigured alerts (SageMaker developer guide,
"hyperpod-observability-addon-alerts", read 2026-11-25) and aws/sagemaker-hyperpod-cluster-setup
``eks/cloudformation/resources/grafana-lambda-function/lambda_function/rules/templates/
alert-rules.yaml`` @ b920fcf430f1fd3b36c01bb63b63348f95f0b9fb (2025-08-29; it has every rule
but MIG). The names, expressions, ``for:`` durations and texts are this project's.

Metric sources (:data:`METRIC_SOURCES`), read 2026-11-25:

==========================================  ================================================
Metrics                                     Exporter and source
==========================================  ================================================
``DCGM_FI_DEV_GPU_TEMP``,                   NVIDIA dcgm-exporter (``etc/default-counters.csv``
``DCGM_FI_DEV_XID_ERRORS``                  @ b54068a): exported by default
``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL``,          the same file lists them commented out: they are
``DCGM_FI_DEV_ECC_DBE_AGG_TOTAL``,          exported only by a counters file that enables
``DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_  them (AWS's own rules rely on them, so HyperPod's
TOTAL``, ``DCGM_FI_DEV_NVLINK_REPLAY_ERROR  collection is taken to; a rule whose metric is
_COUNT_TOTAL``, ``DCGM_FI_DEV_THERMAL_      absent never fires)
VIOLATION``
``node_filesystem_avail_bytes``,            Prometheus node_exporter, filesystem collector
``node_filesystem_size_bytes``              (labels ``mountpoint``, ``fstype``, ``device``)
``fsx_lustre_storage_used_bytes``,          the HyperPod observability add-on (EKS), per
``fsx_lustre_storage_capacity_bytes``       AWS's alert docs; no public exporter source
``kubelet_node_name`` with label            the add-on's kubelet scrape with the node's
``nvidia_com_mig_config_state``             labels, per AWS's alert docs (EKS only)
==========================================  ================================================

On Slurm the ``sagemaker-observability`` extension collects a DCGM counter only at the level
of ``observability.levels.accelerated_compute`` that lists it (:data:`SLURM_METRIC_LEVELS`, read
2026-11-27): AWS's Slurm observability counters files awslabs/awsome-distributed-ai@95b939cd
``1.architectures/5.sagemaker-hyperpod/Extensions/observability/dcgm_metrics_config/
dcgm-metrics-{basic,advanced}.csv`` (the images the extension runs) list GPU_TEMP, XID_ERRORS
and THERMAL_VIOLATION in both, the ECC_DBE_* and NVLINK_*_ERROR_COUNT_TOTAL counters in the
advanced file only; node_exporter's filesystem
collector is on at the basic level (same sample's README, "Advanced metrics"). INFERRED for the
managed extension, whose own documentation lists no counters per level (docs/evidence.md).
:func:`rules_for` with ``levels`` leaves out a rule whose counters the level does not collect,
and :func:`left_out` names them (the config warns with the rule and the key).

Slurm clusters have no Kubernetes metrics: :func:`rule_file` for ``slurm`` leaves the MIG rule
out and watches FSx for Lustre through node_exporter's view of the Lustre mount (``fstype=
"lustre"``, the highest use any node reports per mount point) instead of the add-on's FSx
metrics.

Every alert carries the labels ``severity`` (warning | critical) and ``hyperpod_cluster``, and
annotations ``summary`` and ``description`` naming the cluster, the instance (or host, GPU,
mount point) and the value; the alert manager's SNS receiver sends them as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

import yaml

Orchestrator = Literal["slurm", "eks"]
BOTH: Final[frozenset[str]] = frozenset({"slurm", "eks"})

#: metric name -> where it comes from (the test checks every expression uses only these)
METRIC_SOURCES: Final[dict[str, str]] = {
    "DCGM_FI_DEV_GPU_TEMP": "dcgm-exporter",
    "DCGM_FI_DEV_XID_ERRORS": "dcgm-exporter",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "dcgm-exporter (counters file must enable it)",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "dcgm-exporter (counters file must enable it)",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "dcgm-exporter (counters file must enable it)",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "dcgm-exporter (counters file must enable it)",
    "DCGM_FI_DEV_THERMAL_VIOLATION": "dcgm-exporter (counters file must enable it)",
    "node_filesystem_avail_bytes": "node_exporter",
    "node_filesystem_size_bytes": "node_exporter",
    "fsx_lustre_storage_used_bytes": "HyperPod observability add-on (EKS)",
    "fsx_lustre_storage_capacity_bytes": "HyperPod observability add-on (EKS)",
    "kubelet_node_name": "HyperPod observability add-on, kubelet with node labels (EKS)",
}

#: the levels of a metric category, lowest first (``observability.levels``)
LEVEL_ORDER: Final[tuple[str, ...]] = ("DISABLED", "BASIC", "ADVANCED")
#: Slurm: metric -> (category, the lowest level at which the extension collects it); INFERRED
#: from AWS's Slurm observability sample (see the module docstring and docs/evidence.md)
SLURM_METRIC_LEVELS: Final[dict[str, tuple[str, str]]] = {
    "DCGM_FI_DEV_GPU_TEMP": ("accelerated_compute", "BASIC"),
    "DCGM_FI_DEV_XID_ERRORS": ("accelerated_compute", "BASIC"),
    "DCGM_FI_DEV_THERMAL_VIOLATION": ("accelerated_compute", "BASIC"),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("accelerated_compute", "ADVANCED"),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": ("accelerated_compute", "ADVANCED"),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": ("accelerated_compute", "ADVANCED"),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": ("accelerated_compute", "ADVANCED"),
    "node_filesystem_avail_bytes": ("node", "BASIC"),
    "node_filesystem_size_bytes": ("node", "BASIC"),
}

#: written into descriptions by rule_file (see there)
CLUSTER: Final = "<cluster>"
_GPU = "{{ $labels.Hostname }} ({{ $labels.instance }}) GPU {{ $labels.gpu }}"
# file systems that are not the node's disks: memory, container layers, images, network mounts
_NOT_DISKS = 'fstype!~"tmpfs|devtmpfs|overlay|squashfs|nfs4?|lustre|fuse.*"'


@dataclass(frozen=True)
class AlertRule:
    """One alerting rule and the orchestrators whose metrics it needs."""

    name: str
    expr: str
    duration: str
    severity: Literal["warning", "critical"]
    summary: str
    description: str
    orchestrators: frozenset[str] = BOTH


RULES: Final[tuple[AlertRule, ...]] = (
    AlertRule(
        "HyperPodGpuTemperatureHigh",
        "max by (instance, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) > 80",
        "5m",
        "warning",
        "GPU above 80 C on {{ $labels.Hostname }}",
        f"{_GPU} of cluster {CLUSTER} has been at"
        " {{ $value }} C for 5 minutes (warning above 80 C).",
    ),
    AlertRule(
        "HyperPodGpuTemperatureCritical",
        "max by (instance, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) > 85",
        "2m",
        "critical",
        "GPU above 85 C on {{ $labels.Hostname }}",
        f"{_GPU} of cluster {CLUSTER} is at {{{{ $value }}}} C"
        " (critical above 85 C): check cooling and the job's power draw.",
    ),
    AlertRule(
        "HyperPodGpuEccDoubleBitErrors",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0 or increase(DCGM_FI_DEV_ECC_DBE_AGG_TOTAL[10m]) > 0",
        "0m",
        "critical",
        "GPU double-bit ECC errors on {{ $labels.Hostname }}",
        f"{_GPU} of cluster {CLUSTER} reports {{{{ $value }}}}"
        " uncorrectable (double-bit) ECC errors: the GPU's memory is failing; drain and"
        " replace the node.",
    ),
    AlertRule(
        "HyperPodGpuNvlinkErrors",
        "increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m]) > 0"
        " or increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL[10m]) > 10",
        "0m",
        "warning",
        "NVLink errors on {{ $labels.Hostname }}",
        f"{_GPU} of cluster {CLUSTER}: {{{{ $value }}}} NVLink"
        " recovery or replay errors in 10 minutes; collective operations may slow or fail.",
    ),
    AlertRule(
        "HyperPodGpuThermalViolation",
        "rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) > 0",
        "2m",
        "critical",
        "GPU thermal throttling on {{ $labels.Hostname }}",
        f"{_GPU} of cluster {CLUSTER} is being throttled for heat"
        " ({{ $value }} us of throttling per second).",
    ),
    AlertRule(
        "HyperPodGpuXidError",
        "DCGM_FI_DEV_XID_ERRORS > 0",
        "0m",
        "critical",
        "GPU Xid {{ $value }} on {{ $labels.Hostname }}",
        f"{_GPU} of cluster {CLUSTER} reported Xid {{{{ $value }}}}"
        " (NVIDIA driver error); HyperPod's health agent decides on a reboot or replacement.",
    ),
    AlertRule(
        "HyperPodMigConfigFailed",
        'max by (instance) (kubelet_node_name{nvidia_com_mig_config_state="failed"}) > 0',
        "1m",
        "critical",
        "MIG configuration failed on {{ $labels.instance }}",
        "The MIG manager could not apply the MIG layout on node {{ $labels.instance }} of"
        " cluster " + CLUSTER + "; its GPUs are not schedulable as configured.",
        frozenset({"eks"}),
    ),
    AlertRule(
        "HyperPodNodeDiskAlmostFull",
        f"100 * (1 - node_filesystem_avail_bytes{{{_NOT_DISKS}}}"
        f" / node_filesystem_size_bytes{{{_NOT_DISKS}}}) > 90",
        "10m",
        "warning",
        "Disk {{ $labels.mountpoint }} above 90 % on {{ $labels.instance }}",
        "{{ $labels.mountpoint }} on {{ $labels.instance }} of cluster"
        " " + CLUSTER + ' is {{ $value | printf "%.0f" }} % full.',
    ),
    AlertRule(
        "HyperPodFsxLustreAlmostFull",
        "100 * max by (filesystem_id) (fsx_lustre_storage_used_bytes)"
        " / max by (filesystem_id) (fsx_lustre_storage_capacity_bytes) > 80",
        "15m",
        "warning",
        "FSx for Lustre {{ $labels.filesystem_id }} above 80 %",
        "FSx for Lustre {{ $labels.filesystem_id }} of cluster " + CLUSTER + ""
        ' is {{ $value | printf "%.0f" }} % full: grow its storage capacity or release data.',
        frozenset({"eks"}),
    ),
    AlertRule(
        "HyperPodFsxLustreAlmostFull",
        '100 * max by (mountpoint) (1 - node_filesystem_avail_bytes{fstype="lustre"}'
        ' / node_filesystem_size_bytes{fstype="lustre"}) > 80',
        "15m",
        "warning",
        "FSx for Lustre at {{ $labels.mountpoint }} above 80 %",
        "The FSx for Lustre file system mounted at {{ $labels.mountpoint }} on cluster"
        " " + CLUSTER + ' is {{ $value | printf "%.0f" }} % full: grow its'
        " storage capacity or release data.",
        frozenset({"slurm"}),
    ),
)

GROUP_NAME: Final = "hyperpod-gpu-disk-fsx"
#: HyperPod's cluster name pattern (CreateCluster ``ClusterName``)
_CLUSTER_NAME: Final = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


_METRIC = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\b")


def metrics_of(rule: AlertRule) -> list[str]:
    """The metric names a rule's expression reads (those of :data:`METRIC_SOURCES`)."""
    names = dict.fromkeys(_METRIC.findall(rule.expr))
    return [name for name in names if name in METRIC_SOURCES]


def slurm_needs(rule: AlertRule) -> dict[str, str]:
    """Slurm: category -> the lowest level that collects every counter ``rule`` reads."""
    needs: dict[str, str] = {}
    for metric in metrics_of(rule):
        category, level = SLURM_METRIC_LEVELS[metric]
        if LEVEL_ORDER.index(level) > LEVEL_ORDER.index(needs.get(category, "DISABLED")):
            needs[category] = level
    return needs


def _categories(levels: Mapping[str, str]) -> dict[str, str]:
    """``levels`` by category, whether given by category (``accelerated_compute``) or by the
    extension's ``metricsProvider`` key (``acceleratedComputeMetrics``)."""
    from hyperpod_cdk.facts import METRIC_KEYS

    by_key = {key: category for category, key in METRIC_KEYS.items()}
    return {by_key.get(name, name): level for name, level in levels.items()}


def left_out(
    orchestrator: Orchestrator, levels: Mapping[str, str] | None
) -> list[tuple[AlertRule, str, str]]:
    """The rules of ``orchestrator`` that ``levels`` cannot back: (rule, category, the level it
    needs), in rule order. Only Slurm's levels are known (:data:`SLURM_METRIC_LEVELS`); with
    ``levels`` None every rule stays."""
    if levels is None or orchestrator != "slurm":
        return []
    given = _categories(levels)
    missing = []
    for rule in RULES:
        if orchestrator not in rule.orchestrators:
            continue
        for category, needed in slurm_needs(rule).items():
            have = given.get(category)  # a category not given: not known here, kept
            if have in LEVEL_ORDER and LEVEL_ORDER.index(have) < LEVEL_ORDER.index(needed):
                missing.append((rule, category, needed))
                break
    return missing


def rules_for(
    orchestrator: Orchestrator, levels: Mapping[str, str] | None = None
) -> tuple[AlertRule, ...]:
    """The rules whose metrics ``orchestrator``'s clusters export; with ``levels`` (the metric
    levels in force, by category or ``metricsProvider`` key) also collect (:func:`left_out`)."""
    if orchestrator not in BOTH:
        raise ValueError(f"orchestrator: {orchestrator!r} is not slurm or eks")
    dropped = {id(rule) for rule, _, _ in left_out(orchestrator, levels)}
    return tuple(
        rule for rule in RULES if orchestrator in rule.orchestrators and id(rule) not in dropped
    )


def rule_file(
    orchestrator: Orchestrator, cluster_name: str, levels: Mapping[str, str] | None = None
) -> str:
    """The rule file (YAML) of an Amazon Managed Prometheus rule-groups namespace: one group,
    :data:`GROUP_NAME`, with the rules of ``orchestrator`` (those ``levels`` back, when given:
    :func:`rules_for`) labelled with ``cluster_name``."""
    if not _CLUSTER_NAME.fullmatch(cluster_name):
        raise ValueError(f"cluster_name: {cluster_name!r} is not a HyperPod cluster name")
    rules = [
        {
            "alert": rule.name,
            "expr": rule.expr,
            "for": rule.duration,
            "labels": {"severity": rule.severity, "hyperpod_cluster": cluster_name},
            "annotations": {
                "summary": rule.summary,
                # Prometheus templates annotations with the series' labels, not the rule's:
                # the cluster name is written in
                "description": rule.description.replace(CLUSTER, cluster_name),
            },
        }
        for rule in rules_for(orchestrator, levels)
    ]
    document = {"groups": [{"name": GROUP_NAME, "rules": rules}]}
    return yaml.safe_dump(document, sort_keys=False, width=1000, allow_unicode=True)


def slurm_rule_file(cluster_name: str) -> str:
    """:func:`rule_file` for a Slurm cluster (no Kubernetes metrics)."""
    return rule_file("slurm", cluster_name)

"""The dashboards: valid JSON, one per topic and orchestrator, unique uids, every panel on the
``${datasource}`` variable, and every query parses as PromQL (the pinned promql-parser, offline)
and uses only metrics that exist on that orchestrator (:data:`KNOWN_METRICS`, with sources)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from hyperpod_cdk.observability.grafana import (
    DASHBOARD_DIR,
    DATA_SOURCE_UID,
    TOPICS,
    dashboard_files,
)

# Metric names per source, read 2026-11-25.
NODE_EXPORTER = {  # prometheus/node_exporter v1.9.1 (HyperPod's image): cpu, meminfo, filesystem,
    # uname, stat collectors (on by default, README "Enabled by default")
    "node_cpu_seconds_total",
    "node_memory_MemAvailable_bytes",
    "node_memory_MemTotal_bytes",
    "node_filesystem_avail_bytes",
    "node_filesystem_size_bytes",
}
NODE_INVENTORY = {"node_uname_info", "node_boot_time_seconds"}  # the same node_exporter (uname,
# stat collectors); the EKS cluster dashboard counts nodes from kube-state-metrics instead
DCGM = {  # NVIDIA dcgm-exporter etc/default-counters.csv: exported by default; the hpc_job label
    # comes from --hpc-job-mapping-dir (internal/pkg/transformation, hpcJobAttribute = "hpc_job"),
    # pod/namespace labels from the Kubernetes pod mapper (podAttribute, namespaceAttribute)
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_XID_ERRORS",
}
EFA_NODE_EXPORTER = {  # HyperPod's efa_exporter image (node_exporter's amazonefa collector,
    # prometheus/node_exporter PR #3670): node_amazonefa_<hw counter>, labels device and port
    "node_amazonefa_tx_bytes",
    "node_amazonefa_rx_bytes",
    "node_amazonefa_rdma_read_bytes",
    "node_amazonefa_rdma_write_bytes",
    "node_amazonefa_retrans_pkts",
    "node_amazonefa_retrans_timeout_events",
}
EFA_LIFECYCLE = {  # this project's lifecycle exporter (lifecycle_assets/lib/efa_exporter.py):
    # hyperpod_efa_hw_counter{device,port,counter}
    "hyperpod_efa_hw_counter",
}
PROMETHEUS = {"up"}  # written by the collector for every scrape target (Prometheus docs, "Jobs
# and instances", automatically generated labels and time series)
KUBE_STATE_METRICS = {  # kubernetes/kube-state-metrics docs/metrics (node, pod, job metrics)
    "kube_node_status_condition",
    "kube_node_spec_unschedulable",
    "kube_pod_status_phase",
    "kube_pod_container_status_restarts_total",
    "kube_job_status_active",
    "kube_job_status_failed",
}
KUEUE = {  # Kueue docs "Prometheus metrics" (task governance ships Kueue v0.19.2)
    "kueue_pending_workloads",
    "kueue_admitted_active_workloads",
}
FSX_ADDON = {  # the HyperPod observability add-on's FSx metrics, as AWS's alert docs use them
    # (also in hyperpod_cdk.facts.alert_rules.METRIC_SOURCES)
    "fsx_lustre_storage_used_bytes",
    "fsx_lustre_storage_capacity_bytes",
}

KNOWN_METRICS: dict[str, set[str]] = {
    "slurm": NODE_EXPORTER | NODE_INVENTORY | DCGM | EFA_NODE_EXPORTER | EFA_LIFECYCLE | PROMETHEUS,
    "eks": NODE_EXPORTER | DCGM | EFA_NODE_EXPORTER | KUBE_STATE_METRICS | KUEUE | FSX_ADDON,
}

FILES = sorted(DASHBOARD_DIR.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text())
    assert isinstance(document, dict)
    return document


def queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expression) of every target of every panel."""
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def metrics_of(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name)
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def test_one_dashboard_per_topic_and_orchestrator() -> None:
    expected = {p for o in KNOWN_METRICS for p in dashboard_files(o)}
    assert set(FILES) == expected
    assert len(FILES) == len(TOPICS) * 2


def test_uids_are_unique_and_fit_grafana() -> None:
    uids = [load(path)["uid"] for path in FILES]
    assert len(set(uids)) == len(uids)
    for uid in uids:
        assert uid.startswith("hyperpod-") and len(uid) <= 40, uid  # Grafana: at most 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_dashboard_is_a_grafana_dashboard_on_the_datasource_variable(path: Path) -> None:
    dashboard = load(path)
    orchestrator = path.stem.split("-")[0]
    assert orchestrator in dashboard["tags"]
    assert "id" not in dashboard  # Grafana assigns it
    (variable,) = dashboard["templating"]["list"]
    assert variable["name"] == "datasource" and variable["type"] == "datasource"
    assert variable["query"] == "prometheus"
    assert variable["current"]["value"] == DATA_SOURCE_UID
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(set(ids)) == len(ids)
    assert dashboard["panels"], path
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["description"], panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_query_parses_and_uses_known_metrics(path: Path) -> None:
    orchestrator = path.stem.split("-")[0]
    for title, expr in queries(load(path)):
        used = metrics_of(expr)
        assert used, (title, expr)
        unknown = used - KNOWN_METRICS[orchestrator]
        assert not unknown, f"{path.name} {title!r}: {unknown} not known on {orchestrator}"


def test_every_known_metric_is_used() -> None:
    """The table lists what the dashboards use, no more (a stale entry would hide nothing)."""
    for orchestrator, known in KNOWN_METRICS.items():
        used = set().union(
            *(metrics_of(e) for p in dashboard_files(orchestrator) for _, e in queries(load(p)))
        )
        assert used == known, (orchestrator, known ^ used)


def test_eks_dashboards_need_no_slurm_exporter() -> None:
    for path in dashboard_files("eks"):
        text = path.read_text()
        assert "hyperpod_efa_hw_counter" not in text and "hpc_job" not in text


def test_the_parser_rejects_a_broken_query() -> None:
    with pytest.raises(ValueError):
        promql_parser.parse("sum by (instance (rate(node_amazonefa_tx_bytes[5m]))")

"""facts.GRAFANA_REGIONS is the pinned botocore's Amazon Managed Grafana regions, and the closed
network endpoints the metrics and Grafana need are real interface endpoint service names."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import botocore

from hyperpod_cdk import facts

BOTOCORE_DATA = Path(botocore.__file__).parent / "data"


def test_grafana_regions_are_the_pinned_botocores() -> None:
    """A botocore bump that adds a Grafana region fails here: add it to facts.GRAFANA_REGIONS."""
    endpoints = json.loads((BOTOCORE_DATA / "endpoints.json").read_text())
    botocore_regions = {
        region
        for partition in endpoints["partitions"]
        if partition["partition"] in ("aws", "aws-us-gov")
        for region in partition["services"].get("grafana", {}).get("endpoints", {})
    }
    assert set(facts.GRAFANA_REGIONS) == botocore_regions
    assert len(facts.GRAFANA_REGIONS) == len(botocore_regions)
    assert set(facts.GRAFANA_REGIONS) <= set(facts.REGIONS)
    assert facts.REGIONS_AS_OF.startswith(f"botocore {botocore.__version__},")


def test_the_china_partition_has_no_grafana() -> None:
    endpoints = json.loads((BOTOCORE_DATA / "endpoints.json").read_text())
    (china,) = [p for p in endpoints["partitions"] if p["partition"] == "aws-cn"]
    assert "grafana" not in china["services"]


def test_observability_endpoints_are_known_services() -> None:
    for service in (*facts.METRICS_ENDPOINTS, *facts.GRAFANA_ENDPOINTS):
        assert service in facts.INTERFACE_ENDPOINT_SERVICES
    assert facts.METRICS_ENDPOINTS == ("aps-workspaces",)
    assert facts.GRAFANA_ENDPOINTS == ("grafana", "grafana-workspace")


def test_closed_network_gets_the_observability_endpoints() -> None:
    """None: metrics off; a section (observability_settings' answer): metrics on, and Grafana's
    two endpoints when it asks for Grafana."""
    base = facts.closed_network_endpoints(eks=False, reads_secrets=False)
    assert "aps-workspaces" not in base and "grafana-workspace" not in base
    metrics = SimpleNamespace(enabled=True, grafana=False)
    with_metrics = facts.closed_network_endpoints(
        eks=False, reads_secrets=False, observability=metrics
    )
    assert with_metrics == (*base, "aps-workspaces")
    both = SimpleNamespace(enabled=True, grafana=True)
    eks = facts.closed_network_endpoints(eks=True, reads_secrets=False, observability=both)
    assert eks[-3:] == ("aps-workspaces", "grafana", "grafana-workspace")
    assert (
        facts.closed_network_endpoints(eks=False, reads_secrets=False, observability=None) == base
    )


def interface_services(synth: Any) -> set[str]:
    prefix = f"com.amazonaws.{synth.config.region}."
    return {
        r["Properties"]["ServiceName"].removeprefix(prefix)
        for r in synth.network_resources("AWS::EC2::VPCEndpoint").values()
        if r["Properties"]["VpcEndpointType"] == "Interface"
    }


def test_a_closed_network_with_metrics_and_grafana_gets_their_endpoints(build_variant: Any) -> None:
    """The environment's network reads the observability section: metrics add aps-workspaces,
    Grafana adds grafana and grafana-workspace (Slurm: metrics through the extension, which
    needs Continuous provisioning)."""
    base = {
        "network.closed_network": True,
        "network.nat_gateways": 0,
        "cluster.node_provisioning_mode": "Continuous",
    }
    plain = build_variant(base, base="minimal", nag=False)
    grafana = build_variant(
        {**base, "observability.enabled": True, "observability.grafana": True},
        base="minimal",
        nag=False,
    )
    added = interface_services(grafana) - interface_services(plain)
    assert added == {"aps-workspaces", "grafana", "grafana-workspace"}

"""Unit tests of lifecycle_assets/lib/efa_exporter.py (the EFA counters exporter)."""

from __future__ import annotations

import shutil
import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from lifecycle_testkit import FAKE_NODE, load_helper

efa = load_helper("efa_exporter")

FAKE_SYSFS = FAKE_NODE / "nodes" / "compute" / "sys" / "class" / "infiniband"


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FAKE_SYSFS, tmp_path / "infiniband"))


def test_reads_every_counter_of_every_efa_device(sysfs: Path) -> None:
    counters = efa.read_counters(sysfs)
    assert ("rdmap16s27", "1", "tx_bytes", 123456) in counters
    assert ("rdmap32s27", "1", "rx_bytes", 654321) in counters
    assert len(counters) == 6
    assert counters == sorted(counters)


def test_other_vendors_devices_are_left_out(sysfs: Path) -> None:
    (sysfs / "rdmap32s27" / "device" / "vendor").write_text("0x15b3\n")  # a Mellanox adapter
    assert {c[0] for c in efa.read_counters(sysfs)} == {"rdmap16s27"}


def test_unreadable_counters_never_break_a_scrape(sysfs: Path) -> None:
    (sysfs / "rdmap16s27" / "ports" / "1" / "hw_counters" / "tx_bytes").write_text("n/a\n")
    counters = efa.read_counters(sysfs)
    assert ("rdmap16s27", "1", "rx_bytes", 654321) in counters
    assert not any(c[2] == "tx_bytes" and c[0] == "rdmap16s27" for c in counters)


def test_a_node_without_efa_has_no_counters(tmp_path: Path) -> None:
    assert efa.read_counters(tmp_path / "none") == []
    assert efa.render([]).count("\n") == 2  # HELP and TYPE only


def test_render_is_prometheus_text() -> None:
    text = efa.render([("rdmap16s27", "1", "tx_bytes", 5)])
    assert text.splitlines() == [
        "# HELP hyperpod_efa_hw_counter An EFA device's hardware counter "
        "(/sys/class/infiniband/*/ports/*/hw_counters).",
        "# TYPE hyperpod_efa_hw_counter untyped",
        'hyperpod_efa_hw_counter{device="rdmap16s27",port="1",counter="tx_bytes"} 5',
    ]


def test_serves_metrics_over_http(sysfs: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), efa.handler_for(sysfs))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
            assert response.status == 200
            body = response.read().decode()
        assert 'counter="retrans_pkts"} 0' in body
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"{base}/", timeout=5)
        assert error.value.code == 404
    finally:
        server.shutdown()
        server.server_close()

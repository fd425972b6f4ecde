#!/usr/bin/env python3
"""A Prometheus exporter of the EFA devices' hardware counters (Python standard library only).

    efa_exporter.py [--port 9109] [--sysfs /sys/class/infiniband]

EFA devices appear under /sys/class/infiniband/ like InfiniBand adapters but keep their
byte and packet counters in ``ports/<port>/hw_counters/`` (tx_bytes, rx_bytes, tx_pkts,
rdma_read_bytes, retrans_pkts, ...); they are told apart by the Amazon PCI vendor id 0x1d0f
(prometheus/node_exporter PR #3670). Every counter is served as
``hyperpod_efa_hw_counter{device,port,counter}`` on ``/metrics``.
"""

from __future__ import annotations

import argparse
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

AMAZON_PCI_VENDOR = "0x1d0f"
METRIC = "hyperpod_efa_hw_counter"
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9_.:-]+$")


def is_efa(device: Path) -> bool:
    """True for an Amazon (EFA) device; a device without a vendor file is taken as EFA."""
    vendor = device / "device" / "vendor"
    try:
        return vendor.read_text(encoding="ascii").strip().lower() == AMAZON_PCI_VENDOR
    except OSError:
        return True


def read_counters(sysfs: Path) -> list[tuple[str, str, str, int]]:
    """(device, port, counter, value) of every EFA hardware counter, sorted."""
    found = []
    if not sysfs.is_dir():
        return found
    for device in sorted(sysfs.iterdir()):
        if not is_efa(device):
            continue
        for counters in sorted(device.glob("ports/*/hw_counters")):
            port = counters.parent.name
            for counter in sorted(counters.iterdir()):
                try:
                    value = int(counter.read_text(encoding="ascii").strip())
                except (OSError, ValueError):
                    continue  # unreadable or not a number: left out, never a broken scrape
                if all(_LABEL_VALUE.match(v) for v in (device.name, port, counter.name)):
                    found.append((device.name, port, counter.name, value))
    return found


def render(counters: list[tuple[str, str, str, int]]) -> str:
    """The Prometheus text exposition of ``counters``."""
    lines = [
        f"# HELP {METRIC} An EFA device's hardware counter (/sys/class/infiniband/*/ports/*/hw_counters).",
        f"# TYPE {METRIC} untyped",
    ]
    lines += [f'{METRIC}{{device="{d}",port="{p}",counter="{c}"}} {v}' for d, p, c, v in counters]
    return "\n".join(lines) + "\n"


def handler_for(sysfs: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server API names it
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "see /metrics")
                return
            body = render(read_counters(sysfs)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per scrape would flood the journal

    return Handler


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9109)
    parser.add_argument("--address", default="0.0.0.0")
    parser.add_argument("--sysfs", type=Path, default=Path("/sys/class/infiniband"))
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.address, args.port), handler_for(args.sysfs))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``python -m hyperpod_ops.chart --mirror-list REGION``: the images of the HyperPod dependencies
chart to copy into an ``eks.image_registry`` mirror, one ``<source> -> <eks.image_registry>/<path>``
line each (the table is :mod:`hyperpod_cdk.facts.chart`, the chart's ``values.yaml``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hyperpod_cdk.facts.chart import mirror_list


def main(argv: Sequence[str] | None = None) -> int:
    """``--mirror-list REGION``: the images to copy into an ``eks.image_registry`` mirror."""
    parser = argparse.ArgumentParser(prog="python -m hyperpod_ops.chart", description=main.__doc__)
    parser.add_argument("--mirror-list", metavar="REGION", required=True)
    args = parser.parse_args(argv)
    for source, target in mirror_list(args.mirror_list):
        print(f"{source} -> <eks.image_registry>/{target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

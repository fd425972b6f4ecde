#!/usr/bin/env python3
"""``make lifecycle-dry-run``: the library's dry run (``python -m hyperpod_cdk.lifecycle.dry_run``,
which ships in the wheel) with this repository's root as the project root.

The tests import this module as ``dry``: every name of the package is here, and PROJECT_ROOT.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hyperpod_cdk.lifecycle import dry_run as _package
from hyperpod_cdk.lifecycle.dry_run import *  # noqa: F403
from hyperpod_cdk.lifecycle.dry_run import (  # noqa: F401
    DEFAULT_CONFIG,
    ENTRY_SCRIPT,
    FAKE_NODE,
    NODES,
    SCRIPTS,
    DryRun,
    DryRunError,
    FakeCluster,
    default_settings,
    environment,
    from_assembly,
    parse_value,
    prepare,
    run,
    summary,
    with_changes,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def from_config(
    node: str, config_path: Path, group: str | None = None, project_root: Path = PROJECT_ROOT
) -> Any:
    """:func:`hyperpod_cdk.lifecycle.dry_run.from_config`, relative to this repository."""
    return _package.from_config(node, config_path, group, project_root)


def main(argv: list[str]) -> int:
    return _package.main(argv, PROJECT_ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

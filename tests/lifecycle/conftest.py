"""Fixtures of the lifecycle script tests: dry runs of the real entry script on the fake node.

A dry run takes well under a second; each distinct (node, settings changes) run is made once per
test worker and shared, so treat a :class:`DryRun` as read-only. Shared helpers live in
lifecycle_testkit.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lifecycle_testkit import Changes, DryRunner, dry


@pytest.fixture(scope="session")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> DryRunner:
    """``dry_run(node, changes=None, again=False)``: the (cached) dry run of a fresh fake node;
    ``again=True``: the second run on the same node (its root then holds both runs' effects,
    see ``dry_run.root(node)``)."""
    cache: dict[tuple[str, str, bool], dry.DryRun] = {}
    roots: dict[tuple[str, str], Path] = {}

    def run(node: str, changes: Changes | None = None, again: bool = False) -> dry.DryRun:
        settings = json.dumps(changes or {}, sort_keys=True)
        key = (node, settings, again)
        if key not in cache:
            if again:
                run(node, changes)
            else:
                roots[(node, settings)] = dry.prepare(
                    node, tmp_path_factory.mktemp(f"dry-{node}"), changes=changes
                )
            cache[key] = dry.run(node, roots[(node, settings)])
        return cache[key]

    def root(node: str, changes: Changes | None = None) -> Path:
        run(node, changes)
        return roots[(node, json.dumps(changes or {}, sort_keys=True))]

    run.root = root  # type: ignore[attr-defined]
    return run


@pytest.fixture
def fake_node(tmp_path: Path) -> Callable[..., Path]:
    """``fake_node(node, changes=None)``: a fresh fake node to change and run by hand."""

    def make(node: str, changes: Changes | None = None) -> Path:
        return dry.prepare(node, tmp_path / node, changes=changes)

    return make

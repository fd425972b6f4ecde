"""One scrubbed JSON snapshot per stack per shipped config (SPEC section 6).

Regenerate with ``make update-snapshots`` after a deliberate change, and review the diff: asset
hashes and the lifecycle content hash are scrubbed, so what changes is what the stack deploys.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_testkit import scrub_template, stack_params
from syrupy.extensions.json import JSONSnapshotExtension


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize(("path", "kind"), stack_params())
def test_stack_matches_snapshot(path: Path, kind: str, synthesized, snapshot_json) -> None:
    assert scrub_template(synthesized(path).template(kind)) == snapshot_json


def test_scrubbed_snapshot_has_no_volatile_values(synthesized) -> None:
    import json

    text = json.dumps(scrub_template(synthesized("full").template("nodes")))
    assert "BootstrapVersion" not in text
    assert "aws:cdk:path" not in text
    assert "lifecycle/<content-hash>/" in text
    assert "<asset-hash>.zip" in text

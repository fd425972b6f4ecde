"""Fixtures of the preflight and status tests (helpers in ops_testkit.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The test modules import ops_testkit from this folder (there are no __init__.py files).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ops_testkit import StubbedAws


@pytest.fixture
def aws() -> Iterator[StubbedAws]:
    """Stubbed clients; the test fails if a queued answer was not asked for."""
    stubbed = StubbedAws()
    yield stubbed
    stubbed.verify()

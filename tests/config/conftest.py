"""Fixtures of the config tests. The cases' data and helpers live in config_testkit.py."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The test modules import config_testkit from this folder (there are no __init__.py files).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from config_testkit import build

from hyperpod_cdk.config import ConfigError, Issue, parse, validate

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def project_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project root whose lifecycle_assets holds the entry script, as the rules expect."""
    root = tmp_path_factory.mktemp("project")
    (root / "lifecycle_assets").mkdir()
    (root / "lifecycle_assets" / "entrypoint.sh").write_text("#!/bin/bash\n")
    return root


Check = Callable[..., list[Issue]]


@pytest.fixture
def check(project_root: Path) -> Check:
    """``check(changes, base="slurm")``: the errors of the changed base config ([] when valid)."""

    def run(
        changes: dict[str, Any] | None = None, base: str = "slurm", root: Path = project_root
    ) -> list[Issue]:
        try:
            parse(build(changes, base), root)
        except ConfigError as exc:
            return exc.issues
        return []

    return run


@pytest.fixture
def warnings_of(project_root: Path) -> Check:
    """``warnings_of(changes, base="slurm")``: the warnings of a valid changed base config."""

    def run(changes: dict[str, Any] | None = None, base: str = "slurm") -> list[Issue]:
        return validate(build(changes, base), project_root)[1]

    return run

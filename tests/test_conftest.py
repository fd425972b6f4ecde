"""The suite's scheduling under pytest-xdist (tests/conftest.py): which modules share a worker."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import conftest
import pytest

ROOT = Path(__file__).resolve().parents[1]


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.markers: list[Any] = []

    def add_marker(self, marker: Any) -> None:
        self.markers.append(marker)


def _group(nodeid: str) -> str | None:
    item = _Item(nodeid)
    conftest.pytest_collection_modifyitems([item])  # type: ignore[list-item]
    groups = [m.args[0] for m in item.markers if m.name == "xdist_group"]
    assert len(groups) <= 1
    return groups[0] if groups else None


def test_every_one_worker_module_exists() -> None:
    missing = [m for m in sorted(conftest.ONE_WORKER_MODULES) if not (ROOT / m).is_file()]
    assert missing == []


def test_a_module_that_shares_a_worker_shares_it_with_a_one_worker_module() -> None:
    for module, other in conftest.SAME_WORKER_AS.items():
        assert module in conftest.ONE_WORKER_MODULES, module
        assert other in conftest.ONE_WORKER_MODULES, other


@pytest.mark.parametrize(
    ("nodeid", "group"),
    [
        ("tests/library/test_wheel.py::test_x", "tests/library/test_wheel.py"),
        ("tests/library/test_recipes.py::test_x[a]", "tests/library/test_wheel.py"),
        ("tests/stacks/test_stack_checkov.py::test_x", "tests/stacks/test_stack_checkov.py"),
        ("tests/stacks/test_stack_iam.py::test_x", None),
    ],
)
def test_each_test_gets_its_modules_group(nodeid: str, group: str | None) -> None:
    assert _group(nodeid) == group


def test_a_module_that_imports_another_modules_fixtures_runs_on_its_worker() -> None:
    """A test module importing from a one-worker test module uses its once-per-run fixtures
    (and their locks): it must be in that module's group, or its worker waits for the lock."""
    modules = {p.stem: p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        module = path.relative_to(ROOT).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module-level imports
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                source = modules[node.module]
                if source in conftest.ONE_WORKER_MODULES:
                    assert _group(f"{module}::t") == _group(f"{source}::t"), (module, source)

"""The suite's scheduling under pytest-xdist (tests/conftest.py): which modules share a worker."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def conftest(request: pytest.FixtureRequest) -> ModuleType:
    """tests/conftest.py as pytest loaded it (the module name ``conftest`` is shared by every
    conftest.py of the suite, so it is found by its file)."""
    path = ROOT / "tests" / "conftest.py"
    (module,) = [
        plugin
        for plugin in request.config.pluginmanager.get_plugins()
        if isinstance(plugin, ModuleType) and getattr(plugin, "__file__", None) == str(path)
    ]
    return module


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.markers: list[Any] = []

    def add_marker(self, marker: Any) -> None:
        self.markers.append(marker)


def _group(conftest: ModuleType, nodeid: str) -> str | None:
    item = _Item(nodeid)
    conftest.pytest_collection_modifyitems(items=[item])
    groups = [m.args[0] for m in item.markers if m.name == "xdist_group"]
    assert len(groups) <= 1
    return groups[0] if groups else None


def test_every_one_worker_module_exists(conftest: ModuleType) -> None:
    missing = [m for m in sorted(conftest.ONE_WORKER_MODULES) if not (ROOT / m).is_file()]
    assert missing == []


def test_a_module_that_shares_a_worker_shares_it_with_a_one_worker_module(
    conftest: ModuleType,
) -> None:
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
def test_each_test_gets_its_modules_group(
    conftest: ModuleType, nodeid: str, group: str | None
) -> None:
    assert _group(conftest, nodeid) == group


def test_a_module_that_imports_another_modules_fixtures_runs_on_its_worker(
    conftest: ModuleType,
) -> None:
    """A test module importing from a one-worker test module uses its once-per-run fixtures
    (and their locks): it must be in that module's group, or its worker waits for the lock."""
    modules = {p.stem: p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        module = path.relative_to(ROOT).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module-level imports
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                source = modules[node.module]
                if source in conftest.ONE_WORKER_MODULES:
                    assert _group(conftest, f"{module}::t") == _group(conftest, f"{source}::t"), (
                        module,
                        source,
                    )


def test_the_pinned_pytest_and_xdist_keep_a_group_on_one_worker(tmp_path: Path) -> None:
    """pytest 9.2 builds node ids its own way, and pytest-xdist 3.8's ``--dist loadgroup`` then
    silently spreads a group over every worker (pytest-dev/pytest-xdist#1386, open on
    2026-11-28): each worker made the one-worker modules' fixtures again. The pins must keep a
    group, marked in ``pytest_collection_modifyitems`` as tests/conftest.py marks it, together."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the repository's settings
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if 'grouped' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.xdist_group('together'))\n"
    )
    for name in ("test_grouped.py", "test_free.py"):
        (tmp_path / name).write_text(
            "import pytest\n\n\n"
            "@pytest.mark.parametrize('i', range(8))\n"
            "def test_it(i):\n"
            "    pass\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"),
         str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # "[gw0] [ 6%] PASSED test_grouped.py::test_it[0]@together": worker first, node id last
    passed = [line.split() for line in done.stdout.splitlines() if " PASSED " in line]
    grouped = [words for words in passed if "test_grouped.py" in words[-1]]
    assert len(grouped) == 8
    assert all(words[-1].endswith("@together") for words in grouped)
    workers = {words[0] for words in grouped}
    assert len(workers) == 1, workers  # one worker ran the whole group


def test_the_run_writes_bytecode_caches() -> None:
    """The workers and every process they start write __pycache__ (tests/conftest.py)."""
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ

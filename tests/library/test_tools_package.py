"""The operational tools are a package of their own beside the construct library (issue 36):
``tools/`` builds the ``hyperpod-ops`` wheel, which holds ``hyperpod_ops`` (with the scripts
``make verify`` runs on the nodes) and nothing of ``hyperpod_cdk``; every module of it imports
without starting the CDK (no ``aws_cdk``, no ``jsii``); and the construct library carries no
operational command: its only ``python -m`` commands are the lifecycle dry run and the config
validation.

One wheel build (pip, with build isolation: setuptools from PyPI or pip's cache), from a clean
copy of ``tools/``; the imports run in one fresh interpreter of this venv (the editable installs).
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
LIBRARY = ROOT / "constructs" / "hyperpod_cdk"

# What `make verify` copies to the nodes and runs there (hyperpod_ops/verify/node).
NODE_SCRIPTS = sorted(p.name for p in (TOOLS / "hyperpod_ops" / "verify" / "node").glob("*.sh"))

# The construct wheel's commands (docs/library.md): `python -m hyperpod_cdk.lifecycle.dry_run`
# and `python -m hyperpod_cdk.config FILE`.
LIBRARY_COMMANDS = {"hyperpod_cdk.config", "hyperpod_cdk.lifecycle.dry_run"}
# The node scripts the library uploads (LifecycleScripts); Python ones run as programs on the
# nodes, not as commands of the installed package.
NODE_ASSETS = LIBRARY / "lifecycle" / "assets"


@pytest.fixture(scope="module")
def tools_wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel ``pip wheel --no-deps ./tools`` builds, from a copy without caches or
    egg-info (as a fresh checkout has it)."""
    work = tmp_path_factory.mktemp("tools-wheel")
    source = work / "tools"
    shutil.copytree(
        TOOLS, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
         "-q", str(source), "-w", str(work / "dist")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (work / "dist").glob("hyperpod_ops-*.whl")
    return zipfile.ZipFile(wheel)


def _modules(names: list[str]) -> list[str]:
    """The importable modules among a wheel's file names."""
    modules = []
    for name in names:
        if not name.endswith(".py"):
            continue
        parts = name[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules.append(".".join(parts))
    return sorted(modules)


def test_the_tools_wheel_holds_the_tools_with_their_node_scripts_and_nothing_of_the_library(
    tools_wheel: zipfile.ZipFile,
) -> None:
    names = tools_wheel.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"hyperpod_ops"}
    assert "hyperpod_ops/py.typed" in names
    assert NODE_SCRIPTS and all(f"hyperpod_ops/verify/node/{s}" in names for s in NODE_SCRIPTS)
    for module in (
        "hyperpod_ops.preflight",
        "hyperpod_ops.status",
        "hyperpod_ops.verify",
        "hyperpod_ops.sync_users",
        "hyperpod_ops.migrate",
        "hyperpod_ops.update_notes",
        "hyperpod_ops.deploy_gate",
        "hyperpod_ops.template_changes",
        "hyperpod_ops.chart",
    ):
        assert module in _modules(names), module
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = [
        line.split(":", 1)[1].strip()
        for line in tools_wheel.read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    # the library, and cfn-lint (the resource schemas of the update notes and the deploy gate)
    assert any(r.startswith("hyperpod-cdk") for r in requires), requires
    assert any(r.startswith("cfn-lint") for r in requires), requires
    assert not any(r.startswith(("aws-cdk-lib", "constructs", "cdk-nag", "jsii")) for r in requires)


def test_every_module_of_the_tools_imports_without_the_cdk(
    tools_wheel: zipfile.ZipFile, tmp_path: Path
) -> None:
    """Each module of the wheel, imported in one fresh interpreter: neither aws_cdk nor jsii
    (the CDK's JavaScript runtime) is loaded, nor the app's stacks. The update notes and the
    deploy gate run the CDK app in a subprocess instead."""
    modules = [m for m in _modules(tools_wheel.namelist()) if not m.endswith("__main__")]
    assert "hyperpod_ops.deploy_gate" in modules and "hyperpod_ops.update_notes" in modules
    probe = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('aws_cdk', 'jsii', 'cdk_nag', 'constructs', 'stacks'))\n"
        "print(json.dumps(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,  # not the repository root, where the app's `stacks` would import
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []


def _runs_as_main(path: Path) -> bool:
    """A module with an ``if __name__ == "__main__":`` block."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def test_the_construct_library_has_no_operational_command() -> None:
    """The construct wheel (constructs/pyproject.toml: no console scripts or entry points;
    the package tree: no other ``__main__``) runs only the lifecycle dry run and the config
    validation; the operational commands are hyperpod_ops's."""
    project = tomllib.loads((ROOT / "constructs" / "pyproject.toml").read_text(encoding="utf-8"))
    assert "scripts" not in project["project"] and "entry-points" not in project["project"]
    assert "gui-scripts" not in project["project"]
    assert set(project["project"].get("optional-dependencies", {})) == {"eks"}
    commands = set()
    for path in LIBRARY.rglob("*.py"):
        if path.is_relative_to(NODE_ASSETS):
            continue
        module = ".".join(path.relative_to(LIBRARY.parent).with_suffix("").parts)
        if path.name == "__main__.py":
            commands.add(module.removesuffix(".__main__"))
        elif _runs_as_main(path):
            commands.add(module)
    assert commands == LIBRARY_COMMANDS

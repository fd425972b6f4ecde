"""README.md stays true to the code.

- The config reference between the markers is exactly what scripts/config_reference.py generates
  from the pydantic models (fix: ``python scripts/config_reference.py --write``).
- The commands, files and stack outputs it names exist.
- The construct-library snippets synthesize (when the CDK is installed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SCRIPT = ROOT / "scripts" / "config_reference.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def config_reference() -> ModuleType:
    return _load_script()


def _between(text: str, start: str, end: str) -> str:
    assert text.count(start) == 1 and text.count(end) == 1, f"README.md needs one {start} ... {end}"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_config_reference_is_current(readme: str, config_reference: ModuleType) -> None:
    block = _between(readme, config_reference.START, config_reference.END)
    assert block == f"\n{config_reference.render()}\n", (
        "the config reference in README.md is out of date; run: python scripts/config_reference.py --write"
    )


def test_config_reference_has_a_table_per_section(config_reference: ModuleType) -> None:
    text = config_reference.render()
    for section in (
        "iam",
        "network",
        "storage.fsx",
        "storage.fsx.data_repository_associations[]",
        "cluster",
        "cluster.slurm",
        "cluster.instance_groups[]",
        "cluster.instance_groups[].scheduled_update",
        "cluster.instance_groups[].auto_patch",
        "cluster.instance_groups[].taints[]",
        "eks",
        "pipeline",
        "pipeline.stages[]",
    ):
        assert f"### `{section}`\n" in text, section
    assert "### Top level\n" in text
    for marker in ("**slurm only.**", "**eks only.**", "**Continuous only.**"):
        assert marker in text


def test_every_model_key_is_in_the_reference(config_reference: ModuleType) -> None:
    text = config_reference.render()
    for section in config_reference.walk(config_reference.EnvironmentConfig):
        for key in section.model.model_fields:
            assert f"| `{key}` |" in text, f"{section.path or 'top level'}.{key}"


def test_config_reference_script_does_not_start_the_cdk() -> None:
    """Plain python3 with pydantic and PyYAML is enough: no aws_cdk, no jsii runtime."""
    code = (
        "import runpy, sys\n"
        "ns = runpy.run_path(sys.argv[1], run_name='config_reference')\n"
        "assert ns['render']()\n"
        "loaded = [m for m in ('aws_cdk', 'jsii', 'constructs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(SCRIPT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_config_reference_check_passes() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_readme_names_the_setup_commands(readme: str) -> None:
    assert "make synth" in readme
    assert "make test" in readme


def test_make_targets_in_readme_exist(readme: str) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.M))
    # `make x` in text, or a `make x` line of a code block
    named = set(re.findall(r"(?:`|^[ \t]*)make ([a-z][a-z-]*)", readme, flags=re.M))
    assert named, "README.md names no make targets"
    assert named <= targets, (
        f"README.md names make targets the Makefile lacks: {sorted(named - targets)}"
    )


def test_paths_in_readme_exist(readme: str) -> None:
    prefixes = r"(?:config|scripts|stacks|constructs|lifecycle_assets|tests|\.ci)/"
    paths = set(re.findall(rf"(?<![\w/.-])({prefixes}[A-Za-z0-9_./-]*[A-Za-z0-9_])", readme))
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"README.md names paths that do not exist: {missing}"


def test_stack_outputs_are_documented(readme: str) -> None:
    source = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "stacks").glob("*.py"))
    )
    outputs = set(re.findall(r"\boutput\(\s*self,\s*\"([A-Za-z0-9]+)\"", source))
    assert outputs, "no outputs found in stacks/*.py"
    undocumented = sorted(o for o in outputs if f"`{o}`" not in readme)
    assert not undocumented, f"stack outputs missing from README.md: {undocumented}"


def _snippets(readme: str) -> list[str]:
    section = _between(readme, "<!-- library-snippet:start -->", "<!-- library-snippet:end -->")
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "no python blocks between the library-snippet markers"
    return blocks


def test_snippets_import_exported_names(readme: str) -> None:
    sys.path.insert(0, str(ROOT / "constructs"))
    try:
        import hyperpod_cdk
    finally:
        sys.path.pop(0)
    for block in _snippets(readme):
        compile(block, "README.md", "exec")
        for grouped, single in re.findall(
            r"from hyperpod_cdk import (?:\(([^)]*)\)|([^\n]+))", block
        ):
            for name in (n.strip() for n in (grouped or single).split(",")):
                if name:
                    assert name in hyperpod_cdk.__all__, name


def test_library_snippets_synthesize(readme: str, tmp_path: Path) -> None:
    """Both snippets, run in one program as the CDK CLI runs an app: the project's feature flags
    in CDK_CONTEXT_JSON, the output in CDK_OUTDIR (a process of its own, so that the jsii runtime
    sees that environment)."""
    pytest.importorskip("aws_cdk")
    program = tmp_path / "snippets.py"
    program.write_text("\n".join(_snippets(readme)), encoding="utf-8")
    outdir = tmp_path / "cdk.out"
    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}
    result = subprocess.run(
        [sys.executable, str(program)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    types_by_stack = {
        p.name.removesuffix(".template.json"): {
            r["Type"] for r in json.loads(p.read_text())["Resources"].values()
        }
        for p in outdir.glob("*.template.json")
    }
    assert "AWS::SageMaker::Cluster" in types_by_stack["research-hyperpod"]
    assert "AWS::FSx::FileSystem" in types_by_stack["research-fsx"]

"""The construct library as a platform team gets it (issue 6, acceptance 2): a wheel built from
constructs/, installed with its dependencies into a fresh virtual environment, imported, used
by examples/platform_team/app.py to synthesize a HyperPod cluster, and type-checked by mypy.

Slow by nature: building the wheel, creating the venv and installing aws-cdk-lib and its
dependencies (pinned by constraints.txt, from PyPI or pip's cache) take most of a minute. It
is done once per test run: with pytest-xdist the workers share one wheel and one venv (a file
lock decides which worker makes them; the others wait). Nothing here is skipped: without
network access to PyPI (or a warm pip cache), or without the pinned CDK CLI
(``make bootstrap``), the tests fail and say why.

The example runs from a copy outside the repository, with a scrubbed environment, so nothing
of the work tree can be imported by accident; a test checks that none was.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest
from library_testkit import EXAMPLE, ROOT, resource_types, templates

PACKAGE = ROOT / "constructs" / "hyperpod_cdk"
PYPROJECT = ROOT / "constructs" / "pyproject.toml"
CONSTRAINTS = ROOT / "constraints.txt"
NODE_BIN = ROOT / "node_modules" / ".bin"
_NOT_SOURCE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".mypy_cache", "build", "dist", "cdk.out", ".venv"
)
# variables that could point a Python or the CDK at the work tree or another output
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "MYPYPATH",
             "CDK_CONTEXT_JSON", "CDK_OUTDIR")  # fmt: skip
CLUSTER = "AWS::SageMaker::Cluster"

# Runs the example as `python app.py` does, then reports what was imported from where.
DRIVER = """\
import json, runpy, sys
try:
    runpy.run_path("app.py", run_name="__main__")
except SystemExit as exc:
    if exc.code not in (0, None):
        raise
import hyperpod_cdk
modules = sorted({f for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None))})
with open(sys.argv[1], "w") as out:
    json.dump({"hyperpod_cdk": hyperpod_cdk.__file__, "prefix": sys.prefix, "modules": modules}, out)
"""

# Imports every public name of the installed package and reports where it lives.
IMPORT_CHECK = """\
import importlib.metadata, importlib.resources, importlib.util, json, sys
import hyperpod_cdk
import hyperpod_cdk.ops.preflight, hyperpod_cdk.ops.status  # boto3 is imported on use only
missing = [n for n in hyperpod_cdk.__all__ if getattr(hyperpod_cdk, n, None) is None]
files = importlib.resources.files("hyperpod_cdk")
print(json.dumps({
    "file": hyperpod_cdk.__file__,
    "version": importlib.metadata.version("hyperpod-cdk"),
    "missing": missing,
    "py_typed": (files / "py.typed").is_file(),
    "handler": (files / "network" / "restrict_default_sg" / "index.js").is_file(),
    "boto3": importlib.util.find_spec("boto3") is not None,
}))
"""

# A deliberate type error against the library: reported only if mypy sees the wheel's types.
TYPE_PROBE = """\
from hyperpod_cdk import FileSystemHandle

handle = FileSystemHandle(file_system_id=42, dns_name="d", mount_name="m")
"""

# The repository's mypy settings, without its path into the work tree. The jsii packages are not
# followed: type-checking aws-cdk-lib's own modules costs ~40 s of CPU in a cold cache and proves
# nothing about this wheel (their types are Any here; `make lint` checks the library against them).
MYPY_INI = """\
[mypy]
python_version = 3.11
disallow_untyped_defs = True
disallow_incomplete_defs = True
check_untyped_defs = True
no_implicit_optional = True
warn_redundant_casts = True
warn_return_any = True
strict_equality = True
show_error_codes = True

[mypy-aws_cdk.*,jsii.*,constructs.*,cdk_nag.*]
follow_imports = skip
"""


@dataclass(frozen=True)
class Installed:
    """The wheel and the fresh venv it is installed in (with mypy, for the typing test)."""

    wheel: Path
    venv: Path
    seconds: dict[str, float]

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def env(self) -> dict[str, str]:
        """The environment of a process in the venv: its bin first, then the pinned CDK CLI and
        Node (the jsii runtime of aws-cdk-lib runs the first ``node`` on PATH)."""
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        env["PATH"] = os.pathsep.join([str(self.venv / "bin"), str(NODE_BIN), env["PATH"]])
        env["PYTHONNOUSERSITE"] = "1"
        return env


def _run(command: list[str], *, timeout: int, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    if result.returncode != 0:
        raise AssertionError(
            f"failed ({result.returncode}): {' '.join(command)}\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
        )
    return result


def _shared(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory of this test run that every pytest-xdist worker sees (the workers' base
    temp directories share a parent; a run without xdist has its own base)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


def _once(directory: Path, make: Callable[[Path], None]) -> None:
    """``make(directory)`` once per test run, by whichever worker comes first; the others wait
    for it. A failure is recorded, so the others report it instead of trying again."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    failed = directory.parent / f"{directory.name}.failed"
    with open(directory.parent / f"{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            raise AssertionError(failed.read_text())
        if (directory / ".done").exists():
            return
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        try:
            make(directory)
        except Exception as exc:
            failed.write_text(f"{type(exc).__name__}: {exc}")
            raise
        (directory / ".done").write_text("")


def _install(directory: Path) -> None:
    seconds: dict[str, float] = {}
    start = time.monotonic()
    # build from a clean copy: no stale egg-info or caches of the work tree, no build/ left in it
    source = directory / "src"
    shutil.copytree(ROOT / "constructs", source, ignore=_NOT_SOURCE)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
          "-q", str(source), "-w", str(directory / "dist")], timeout=300)  # fmt: skip
    seconds["wheel"] = time.monotonic() - start
    start = time.monotonic()
    _run([sys.executable, "-m", "venv", str(directory / "venv")], timeout=120)
    seconds["venv"] = time.monotonic() - start
    start = time.monotonic()
    (wheel,) = (directory / "dist").glob("*.whl")
    # the dependencies come from PyPI (or pip's cache) at the pinned versions; the example's
    # requirements file must accept this wheel; mypy (pinned too) is for the typing test
    _run([str(directory / "venv" / "bin" / "python"), "-m", "pip", "install",
          "--disable-pip-version-check", "--no-input", "-q", "-c", str(CONSTRAINTS), str(wheel),
          "-r", str(EXAMPLE / "requirements.txt"), "mypy"], timeout=900)  # fmt: skip
    seconds["install"] = time.monotonic() - start
    (directory / "seconds.json").write_text(json.dumps(seconds))


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    directory = _shared(tmp_path_factory, "hyperpod-wheel")
    _once(directory, _install)
    (wheel,) = (directory / "dist").glob("*.whl")
    seconds = json.loads((directory / "seconds.json").read_text())
    return Installed(wheel, directory / "venv", seconds)


def _example_copy(destination: Path) -> Path:
    shutil.copytree(EXAMPLE, destination, ignore=_NOT_SOURCE)
    return destination


@dataclass(frozen=True)
class ExampleRun:
    outdir: Path
    imports: dict[str, Any]
    templates: dict[str, dict[str, Any]]


@pytest.fixture(scope="session")
def example_run(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    directory = _shared(tmp_path_factory, "hyperpod-wheel-example")

    def synthesize(directory: Path) -> None:
        app = _example_copy(directory / "app")
        (directory / "driver.py").write_text(DRIVER)
        env = installed.env() | {"CDK_OUTDIR": str(directory / "cdk.out")}
        _run([str(installed.python), str(directory / "driver.py"), str(directory / "imports.json")],
             cwd=app, env=env, timeout=600)  # fmt: skip

    _once(directory, synthesize)
    outdir = directory / "cdk.out"
    imports = json.loads((directory / "imports.json").read_text())
    return ExampleRun(outdir, imports, templates(outdir))


def _is_under(path: str | Path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root.resolve())


# -- the wheel --------------------------------------------------------------------------------


def test_the_wheel_holds_every_file_of_the_package(installed: Installed) -> None:
    """Modules and data alike: py.typed, the custom-resource handler, anything added later."""
    source = {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    with zipfile.ZipFile(installed.wheel) as wheel:
        packaged = {n for n in wheel.namelist() if n.startswith("hyperpod_cdk/")}
    assert {"hyperpod_cdk/py.typed", "hyperpod_cdk/network/restrict_default_sg/index.js"} <= source
    assert packaged == source


def test_the_wheel_metadata(installed: Installed) -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    with zipfile.ZipFile(installed.wheel) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(name).decode())
    assert metadata["Name"] == "hyperpod-cdk"
    assert metadata["Version"] == project["version"]
    assert installed.wheel.name == f"hyperpod_cdk-{project['version']}-py3-none-any.whl"
    assert metadata["Requires-Python"] == ">=3.11"
    assert "Typing :: Typed" in (metadata.get_all("Classifier") or [])
    requires: list[str] = metadata.get_all("Requires-Dist") or []
    runtime = {r.split(";")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower()
               for r in requires if "extra ==" not in r}  # fmt: skip
    assert {"aws-cdk-lib", "constructs", "cdk-nag", "pydantic", "pyyaml"} <= runtime
    assert {f"aws-cdk.lambda-layer-kubectl-v{minor}" for minor in range(30, 36)} <= runtime
    assert "boto3" not in runtime  # only hyperpod_cdk.ops needs it
    assert any(r.startswith("boto3") and 'extra == "ops"' in r for r in requires), requires
    assert "ops" in (metadata.get_all("Provides-Extra") or [])
    # compatible ranges, never an exact pin: the consumer's app decides the versions
    assert not [r for r in requires if "==" in r.split(";")[0]], requires


def test_the_wheel_installs_and_imports_in_a_fresh_venv(installed: Installed) -> None:
    result = _run([str(installed.python), "-c", IMPORT_CHECK], cwd=installed.venv,
                  env=installed.env(), timeout=300)  # fmt: skip
    found = json.loads(result.stdout)
    assert _is_under(found["file"], installed.venv), found["file"]
    assert found["missing"] == []
    assert found["py_typed"] and found["handler"]
    assert found["boto3"] is False, "boto3 belongs to the `ops` extra, not the dependencies"
    _run([str(installed.python), "-m", "pip", "check"], env=installed.env(), timeout=120)


def test_install_time_is_reported(installed: Installed) -> None:
    """Not a limit: the figures show in ``pytest -rP`` output and help spot a cold pip cache."""
    print(f"wheel + venv + install seconds: {installed.seconds}")
    assert set(installed.seconds) == {"wheel", "venv", "install"}


# -- the platform team's example against the wheel ----------------------------------------------


def test_the_example_synthesizes_a_hyperpod_cluster(example_run: ExampleRun) -> None:
    assert sorted(example_run.templates) == ["platform-ml-hyperpod", "platform-ml-network"]
    hyperpod = example_run.templates["platform-ml-hyperpod"]
    assert {CLUSTER, "AWS::FSx::FileSystem"} <= resource_types(hyperpod)
    report = example_run.outdir / "validation-report.json"
    reports = json.loads(report.read_text())["pluginReports"] if report.exists() else []
    assert [v for r in reports for v in r.get("violations", [])] == []


def test_nothing_is_imported_from_the_work_tree(
    example_run: ExampleRun, installed: Installed
) -> None:
    assert _is_under(example_run.imports["hyperpod_cdk"], installed.venv)
    assert _is_under(example_run.imports["prefix"], installed.venv)
    from_repository = [m for m in example_run.imports["modules"] if _is_under(m, ROOT)]
    assert from_repository == []


def test_cdk_synth_runs_the_example_with_the_wheel(installed: Installed, tmp_path: Path) -> None:
    """As README.md says: ``cdk synth`` in the example's folder (cdk.json: ``python app.py``),
    with the venv's python first on PATH."""
    cdk = NODE_BIN / "cdk"
    assert cdk.exists(), f"{cdk} is missing: run `make bootstrap` (the pinned CDK CLI)"
    app = _example_copy(tmp_path / "app")
    _run([str(cdk), "synth", "--quiet", "-o", str(tmp_path / "cdk.out")], cwd=app,
         env=installed.env(), timeout=600)  # fmt: skip
    synthesized = templates(tmp_path / "cdk.out")
    assert CLUSTER in resource_types(synthesized["platform-ml-hyperpod"])
    assert not (app / "cdk.context.json").exists(), "synth looked something up"


def test_mypy_checks_the_example_against_the_wheel(installed: Installed, tmp_path: Path) -> None:
    """py.typed is honoured: mypy (in the venv, no path into the work tree) accepts the example
    and rejects a wrong type passed to the library."""
    app = _example_copy(tmp_path / "app")
    (app / "mypy.ini").write_text(MYPY_INI)
    (app / "probe.py").write_text(TYPE_PROBE)
    mypy = [str(installed.python), "-m", "mypy", "--config-file", "mypy.ini",
            "--cache-dir", str(tmp_path / "mypy-cache"), "app.py", "probe.py"]  # fmt: skip
    result = subprocess.run(mypy, cwd=app, env=installed.env(), capture_output=True, text=True,
                            timeout=600)  # fmt: skip
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 1 and len(errors) == 1, result.stdout + result.stderr
    assert errors[0].startswith("probe.py:3: error: Argument \"file_system_id\" to "
                                '"FileSystemHandle" has incompatible type "int"; expected "str"')  # fmt: skip
    assert "missing library stubs or py.typed marker" not in result.stdout

"""The construct library as a platform team gets it (issue 6, acceptance 2; issue 17, the library
from pip): a wheel built from constructs/, installed into a fresh virtual environment, imported,
used by examples/platform_team/app.py to synthesize a HyperPod cluster (``cdk synth`` with the
pinned CDK CLI, as README.md says), and type-checked by mypy. In that environment (no `eks`
extra) the library example of the docs (readme_library_snippet.py) synthesizes a Slurm cluster
in an empty directory, with neither a cdk.json nor the repository's lifecycle scripts at hand,
and an EKS construct says which extra it needs; in a second one, with the `eks` extra,
eks_library_example.py synthesizes.

The venvs (linked_venv.py): pip installs the wheel (``pip install --no-deps --no-index``); its
declared dependencies, resolved from PyPI at the versions constraints.txt pins by ``make
bootstrap``, are linked into the venv from the repository's .venv (the closure of the wheel's
Requires-Dist with the requested extras, each version checked against the requirement and the
pin), and ``pip check`` verifies that every requirement of every installed distribution is met.
So what is proven: pip installs the wheel; its declared dependencies, at the pinned versions, are
present and sufficient; nothing else of .venv is importable (a test checks that boto3,
hyperpod_ops and the kubectl layers are absent without the extra). The download from PyPI is not
repeated here: it is bootstrap's.

Made once per test run: with pytest-xdist the workers share one wheel and one venv per set of
extras (a file lock decides which worker makes each; the others wait). Nothing here is skipped:
without the pinned dependencies in .venv or the pinned CDK CLI (``make bootstrap``), the tests
fail and say why.

The example runs from a copy outside the repository, with a scrubbed environment, so nothing
of the work tree can be imported by accident; a test checks that none was, in the very process
the CDK CLI ran (the venv's import recorder, a ``.pth`` line active only when asked).
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
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
from linked_venv import RECORD_IMPORTS, build_venv, pip, requirement_lines
from linked_venv import run_checked as _run

PACKAGE = ROOT / "constructs" / "hyperpod_cdk"
PYPROJECT = ROOT / "constructs" / "pyproject.toml"
# the lifecycle scripts, package data of the library (the repository's lifecycle_assets/ is a
# symlink to them)
LIFECYCLE_ASSETS = PACKAGE / "lifecycle" / "assets"
HERE = Path(__file__).resolve().parent
# the docs' first library example, as the docs must show it (a Slurm cluster, no EKS)
README_SNIPPET = HERE / "readme_library_snippet.py"
# the smallest EKS use of the library: it needs the `eks` extra
EKS_EXAMPLE = HERE / "eks_library_example.py"
EKS_EXTRA_INSTALL = "pip install '<the hyperpod_cdk wheel>[eks]' (docs/library.md, Install)"
KUBECTL_LAYERS = [f"aws-cdk.lambda-layer-kubectl-v{minor}" for minor in range(30, 36)]
NODE_BIN = ROOT / "node_modules" / ".bin"
_NOT_SOURCE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".mypy_cache", "build", "dist", "cdk.out", ".venv"
)
# variables that could point a Python or the CDK at the work tree or another output
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "MYPYPATH",
             "CDK_CONTEXT_JSON", "CDK_OUTDIR")  # fmt: skip
CLUSTER = "AWS::SageMaker::Cluster"

# Imports every public name of the installed package and reports where it lives.
IMPORT_CHECK = """\
import importlib.metadata, importlib.resources, importlib.util, json, os, sys
import hyperpod_cdk
missing = [n for n in hyperpod_cdk.__all__ if getattr(hyperpod_cdk, n, None) is None]
files = importlib.resources.files("hyperpod_cdk")
entrypoint = files / "lifecycle" / "assets" / "entrypoint.sh"
layers = [f"aws_cdk.lambda_layer_kubectl_v{minor}" for minor in range(30, 36)]
print(json.dumps({
    "file": hyperpod_cdk.__file__,
    "version": importlib.metadata.version("hyperpod-cdk"),
    "missing": missing,
    "py_typed": (files / "py.typed").is_file(),
    "handler": (files / "network" / "restrict_default_sg" / "index.js").is_file(),
    "entrypoint_executable": entrypoint.is_file() and os.access(str(entrypoint), os.X_OK),
    "boto3": importlib.util.find_spec("boto3") is not None,
    "hyperpod_ops": importlib.util.find_spec("hyperpod_ops") is not None,
    "kubectl_layers": [name for name in layers if importlib.util.find_spec(name) is not None],
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
    """The wheel and the fresh venv it is installed in (with mypy, for the typing test);
    ``seconds``: the wheel's build, then the venv's steps (venv, link, install)."""

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


def _build_wheel(directory: Path) -> None:
    """The wheel, built from a clean copy of constructs/ (no stale egg-info or caches of the
    work tree, no build/ left in it), as in a checkout that runs ``pip wheel ./constructs``. The
    package holds every file it ships itself (no symlink out of it), so the copy alone builds."""
    start = time.monotonic()
    source = directory / "src"
    shutil.copytree(ROOT / "constructs", source / "constructs", ignore=_NOT_SOURCE, symlinks=True)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
          "-q", str(source / "constructs"), "-w", str(directory / "dist")], timeout=300)  # fmt: skip
    (directory / "seconds.json").write_text(json.dumps({"wheel": time.monotonic() - start}))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = _shared(tmp_path_factory, "hyperpod-wheel")
    _once(directory, _build_wheel)
    (built,) = (directory / "dist").glob("*.whl")
    return built


def _installed(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    wheel: Path,
    extras: list[str],
    requirements: list[str],
) -> Installed:
    """A venv of this test run (made once, shared by the workers): pip installs
    ``wheel[extras]`` without dependencies; the closure of its Requires-Dist and
    ``requirements`` is linked from .venv at the pinned versions (linked_venv.build_venv)."""
    directory = _shared(tmp_path_factory, name)

    def make(directory: Path) -> None:
        seconds = build_venv(directory / "venv", wheel, extras=extras, requirements=requirements)
        (directory / "seconds.json").write_text(json.dumps(seconds))

    _once(directory, make)
    seconds = json.loads((wheel.parent.parent / "seconds.json").read_text())
    seconds.update(json.loads((directory / "seconds.json").read_text()))
    return Installed(wheel, directory / "venv", seconds)


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel without extras; the example's requirements file must accept it (its lines are
    checked against the wheel's version); mypy (pinned too) is for the typing test."""
    requirements = [*requirement_lines(EXAMPLE / "requirements.txt"), "mypy"]
    return _installed(tmp_path_factory, "hyperpod-venv", wheel, [], requirements)


@pytest.fixture(scope="session")
def installed_eks(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel with its `eks` extra, in a venv of its own (the other one must lack it);
    test_recipes.py runs the recipes in it too."""
    return _installed(tmp_path_factory, "hyperpod-venv-eks", wheel, ["eks"], [])


def _example_copy(destination: Path) -> Path:
    shutil.copytree(EXAMPLE, destination, ignore=_NOT_SOURCE)
    return destination


@dataclass(frozen=True)
class ExampleRun:
    app: Path
    outdir: Path
    imports: dict[str, Any]
    templates: dict[str, dict[str, Any]]


@pytest.fixture(scope="session")
def example_run(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    """The example synthesized once per run as README.md says: ``cdk synth`` (the pinned CLI)
    in a copy of its folder, which runs cdk.json's ``python app.py`` with the venv's python
    first on PATH. The import recorder of the venv writes what that app process imported."""
    directory = _shared(tmp_path_factory, "hyperpod-wheel-example")
    cdk = NODE_BIN / "cdk"
    assert cdk.exists(), f"{cdk} is missing: run `make bootstrap` (the pinned CDK CLI)"

    def synthesize(directory: Path) -> None:
        app = _example_copy(directory / "app")
        env = installed.env() | {RECORD_IMPORTS: str(directory / "imports.json")}
        _run([str(cdk), "synth", "--quiet", "-o", str(directory / "cdk.out")], cwd=app, env=env,
             timeout=600)  # fmt: skip

    _once(directory, synthesize)
    outdir = directory / "cdk.out"
    imports = json.loads((directory / "imports.json").read_text())
    return ExampleRun(directory / "app", outdir, imports, templates(outdir))


def _is_under(path: str | Path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root.resolve())


# -- the wheel --------------------------------------------------------------------------------


def _package_files() -> dict[str, Path]:
    """Every file of the package in the work tree, by its name in the wheel; through the
    symlink of the lifecycle scripts too (``Path.rglob`` would not follow it)."""
    files = {}
    for folder, directories, names in os.walk(PACKAGE, followlinks=True):
        directories[:] = [d for d in directories if d != "__pycache__"]
        for name in names:
            if not name.endswith(".pyc"):
                path = Path(folder) / name
                files[path.relative_to(PACKAGE.parent).as_posix()] = path
    return files


def _executable(mode: int) -> bool:
    return bool(mode & 0o111)


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    """Modules and data alike: py.typed, the custom-resource handler, the lifecycle scripts,
    anything added later; each with its executable bit (pip sets it from the wheel)."""
    source = _package_files()
    with zipfile.ZipFile(wheel) as archive:
        packaged = {
            i.filename: i.external_attr >> 16
            for i in archive.infolist()
            if i.filename.startswith("hyperpod_cdk/")
        }
    expected = {
        "py.typed",
        "network/restrict_default_sg/index.js",
        "lifecycle/assets/entrypoint.sh",
    }
    assert {f"hyperpod_cdk/{name}" for name in expected} <= set(source)
    assert set(packaged) == set(source)
    modes = {name: _executable(path.stat().st_mode) for name, path in source.items()}
    assert {name: _executable(mode) for name, mode in packaged.items()} == modes


def test_the_wheel_holds_the_repository_lifecycle_scripts(wheel: Path) -> None:
    """Every file of the lifecycle scripts is package data, under hyperpod_cdk/lifecycle/assets/,
    byte for byte, and entrypoint.sh is executable there."""
    scripts = {
        path.relative_to(LIFECYCLE_ASSETS).as_posix(): path
        for path in LIFECYCLE_ASSETS.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert "entrypoint.sh" in scripts and len(scripts) > 1
    with zipfile.ZipFile(wheel) as archive:
        for name, path in scripts.items():
            info = archive.getinfo(f"hyperpod_cdk/lifecycle/assets/{name}")
            assert archive.read(info) == path.read_bytes(), name
        entrypoint = archive.getinfo("hyperpod_cdk/lifecycle/assets/entrypoint.sh")
    assert _executable(entrypoint.external_attr >> 16)


def _requirement_name(requirement: str) -> str:
    return requirement.split(";")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower()


def test_the_wheel_metadata(wheel: Path) -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode())
    assert metadata["Name"] == "hyperpod-cdk"
    assert metadata["Version"] == project["version"]
    assert wheel.name == f"hyperpod_cdk-{project['version']}-py3-none-any.whl"
    assert metadata["Requires-Python"] == ">=3.11"
    assert "Typing :: Typed" in (metadata.get_all("Classifier") or [])
    requires: list[str] = metadata.get_all("Requires-Dist") or []
    runtime = {_requirement_name(r) for r in requires if "extra ==" not in r}
    assert {"aws-cdk-lib", "constructs", "cdk-nag", "pydantic", "pyyaml"} <= runtime
    # the operational tools are their own package (tools/, hyperpod-ops), with boto3
    assert "boto3" not in {_requirement_name(r) for r in requires}, requires
    # the kubectl layers (~205 MB) only with the EKS constructs
    assert not [r for r in runtime if "lambda-layer-kubectl" in r], runtime
    eks = {_requirement_name(r) for r in requires if 'extra == "eks"' in r}
    assert eks == set(KUBECTL_LAYERS)
    assert set(metadata.get_all("Provides-Extra") or []) == {"eks"}
    # compatible ranges, never an exact pin: the consumer's app decides the versions
    assert not [r for r in requires if "==" in r.split(";")[0]], requires


def test_the_wheel_installs_and_imports_in_a_fresh_venv(installed: Installed) -> None:
    result = _run([str(installed.python), "-c", IMPORT_CHECK], cwd=installed.venv,
                  env=installed.env(), timeout=300)  # fmt: skip
    found = json.loads(result.stdout)
    assert _is_under(found["file"], installed.venv), found["file"]
    assert found["missing"] == []
    assert found["py_typed"] and found["handler"]
    assert found["entrypoint_executable"], "pip installed the lifecycle entry script without x"
    assert found["boto3"] is False, "boto3 belongs to the tools package, not the library"
    assert found["hyperpod_ops"] is False, "the operational tools are not in the library wheel"
    assert found["kubectl_layers"] == [], "the kubectl layers belong to the `eks` extra"
    pip(installed.venv, "check", timeout=120)


def test_install_time_is_reported(installed: Installed) -> None:
    """Not a limit: the figures show in ``pytest -rP`` output (the wheel's build; creating the
    venv; resolving and linking the pinned dependencies; pip installing the wheel)."""
    print(f"wheel + venv + link + install seconds: {installed.seconds}")
    assert set(installed.seconds) == {"wheel", "venv", "link", "install"}


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


def test_cdk_synth_runs_the_example_with_the_wheel(
    example_run: ExampleRun, installed: Installed
) -> None:
    """As README.md says: ``cdk synth`` in the example's folder (cdk.json: ``python app.py``),
    with the venv's python first on PATH (example_run is that synth; the import test above
    checks that its app process ran the venv's python and the wheel's library)."""
    cdk = NODE_BIN / "cdk"
    assert cdk.exists(), f"{cdk} is missing: run `make bootstrap` (the pinned CDK CLI)"
    assert json.loads((example_run.app / "cdk.json").read_text())["app"] == "python app.py"
    assert _is_under(example_run.imports["prefix"], installed.venv)
    assert CLUSTER in resource_types(example_run.templates["platform-ml-hyperpod"])
    assert not (example_run.app / "cdk.context.json").exists(), "synth looked something up"


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


# -- the docs' library example, without and with the `eks` extra ------------------------------


def _in_empty_directory(
    installed: Installed, code: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with the venv's python in an empty directory: no cdk.json, no
    lifecycle scripts, nothing to import; the cloud assembly goes to ``tmp_path / "cdk.out"``
    (CDK_OUTDIR, as the CDK CLI passes it; the CLI's context is scrubbed)."""
    workdir = tmp_path / "empty"
    workdir.mkdir()
    env = installed.env() | {"CDK_OUTDIR": str(tmp_path / "cdk.out")}
    result = subprocess.run([str(installed.python), "-c", code], cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert list(workdir.iterdir()) == [], "the example wrote into its working directory"
    return result


def _resources_of(template: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == resource_type]


@dataclass(frozen=True)
class SnippetRun:
    outdir: Path
    template: dict[str, Any]


@pytest.fixture(scope="session")
def snippet_run(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> SnippetRun:
    """The first library example of the docs, as written, synthesized in an empty directory
    by a venv with only the wheel (no `eks` extra)."""
    directory = _shared(tmp_path_factory, "docs-library-example")  # once per run

    def synthesize(directory: Path) -> None:
        code = README_SNIPPET.read_text(encoding="utf-8")
        result = _in_empty_directory(installed, code, directory)
        assert result.returncode == 0, result.stderr[-5000:]

    _once(directory, synthesize)
    outdir = directory / "cdk.out"
    return SnippetRun(outdir, templates(outdir)["research-hyperpod"])


def test_the_docs_library_example_synthesizes_a_slurm_cluster_from_the_wheel_alone(
    snippet_run: SnippetRun,
) -> None:
    """Acceptance (issue 17): the feature flags come from recommended_context() and the
    lifecycle scripts from the package; no cdk.json, no lifecycle_assets/ at hand."""
    (cluster,) = _resources_of(snippet_run.template, CLUSTER)
    assert "Slurm" in cluster["Properties"]["Orchestrator"]
    # the upload's asset is the packaged copy of lifecycle_assets/, entry script executable
    (entrypoint,) = snippet_run.outdir.glob("asset.*/entrypoint.sh")
    assert os.access(entrypoint, os.X_OK)
    staged = {p.relative_to(entrypoint.parent).as_posix() for p in entrypoint.parent.rglob("*")}
    shipped = {p.relative_to(LIFECYCLE_ASSETS).as_posix() for p in LIFECYCLE_ASSETS.rglob("*")
               if "__pycache__" not in p.parts and p.suffix != ".pyc"}  # fmt: skip
    assert staged == shipped


def test_the_packaged_scripts_place_every_node_of_the_docs_example(
    snippet_run: SnippetRun, installed: Installed, tmp_path: Path
) -> None:
    """The settings the example uploads are enough for the scripts it uploads: the installed
    lib/node.py finds each instance group's Slurm role (what entrypoint.sh asks it first)."""
    (settings,) = snippet_run.outdir.glob("asset.*/settings.json")
    (entrypoint,) = snippet_run.outdir.glob("asset.*/entrypoint.sh")
    (cluster,) = _resources_of(snippet_run.template, CLUSTER)
    groups = cluster["Properties"]["InstanceGroups"]
    # the resource config HyperPod writes on every node: each group with one instance
    resource_config = tmp_path / "resource_config.json"
    resource_config.write_text(json.dumps({"InstanceGroups": [
        {"Name": g["InstanceGroupName"], "InstanceType": g["InstanceType"],
         "Instances": [{"CustomerIpAddress": f"10.1.0.{i}", "InstanceId": f"i-0{i}",
                        "InstanceName": f"{g['InstanceGroupName']}-1"}]}
        for i, g in enumerate(groups, start=10)
    ]}))  # fmt: skip
    roles = {}
    for i, group in enumerate(groups, start=10):
        env = installed.env() | {"HYPERPOD_ROOT": str(tmp_path), "HYPERPOD_NODE_IP": f"10.1.0.{i}"}
        found = _run([str(installed.python), "-S", str(entrypoint.parent / "lib" / "node.py"),
                      "identify", str(settings), str(resource_config)], env=env, timeout=60)  # fmt: skip
        # shell assignments, as entrypoint.sh evals them
        values = dict(line.split("=", 1) for line in found.stdout.splitlines())
        roles[group["InstanceGroupName"]] = shlex.split(values["NODE_ROLE"])[0]
    assert roles == {"controller": "controller", "gpu": "compute"}


def test_an_eks_construct_without_the_eks_extra_names_it(
    installed: Installed, tmp_path: Path
) -> None:
    """No kubectl layers in the venv: the EKS construct stops with an ImportError that says
    which extra to install (importing hyperpod_cdk and the Slurm constructs need none)."""
    result = _in_empty_directory(installed, EKS_EXAMPLE.read_text(encoding="utf-8"), tmp_path)
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ImportError: research-eks/Eks"), result.stderr[-3000:]
    assert EKS_EXTRA_INSTALL in last_line
    assert "aws-cdk.lambda-layer-kubectl-v35" in last_line


def test_the_eks_extra_brings_the_kubectl_layers(installed_eks: Installed, tmp_path: Path) -> None:
    print(f"eks venv seconds: {installed_eks.seconds}")
    found = _run([str(installed_eks.python), "-c", IMPORT_CHECK], cwd=installed_eks.venv,
                 env=installed_eks.env(), timeout=300)  # fmt: skip
    layers = json.loads(found.stdout)["kubectl_layers"]
    assert layers == [f"aws_cdk.lambda_layer_kubectl_v{minor}" for minor in range(30, 36)]
    result = _in_empty_directory(installed_eks, EKS_EXAMPLE.read_text(encoding="utf-8"), tmp_path)
    assert result.returncode == 0, result.stderr[-5000:]
    template = templates(tmp_path / "cdk.out")["research-eks"]
    assert len(_resources_of(template, "AWS::EKS::Cluster")) == 1
    descriptions = [
        r["Properties"].get("Description", "")
        for r in _resources_of(template, "AWS::Lambda::LayerVersion")
    ]
    assert any(d.startswith("/opt/kubectl/kubectl 1.35.") for d in descriptions), descriptions
    pip(installed_eks.venv, "check", timeout=120)

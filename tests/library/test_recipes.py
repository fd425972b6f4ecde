"""The recipes of examples/recipes/ as a platform team runs them (issue 35, acceptance 1): the
wheel built from constructs/, installed in a fresh virtual environment, synthesizes each recipe
with the pinned CDK CLI and no AWS credentials, and the packaged lifecycle dry run
(``python -m hyperpod_cdk.lifecycle.dry_run NODE --assembly cdk.out``) sets up every node type
of each recipe's synthesized settings.

The venv is test_wheel.py's ``installed_eks`` (the same requirements: the wheel with its `eks`
extra; made once per run): pip installs the library from the wheel alone (``pip install --no-deps
--no-index``) and the closure of its declared dependencies is linked from the repository's .venv
at the versions constraints.txt pins (linked_venv.py); only that closure is linked, so .venv's
editable hyperpod_cdk is not in it, and a test checks that hyperpod_cdk comes from the venv.
The recipes run from a copy outside the repository with a scrubbed environment.

Slow by nature (five CDK CLI synths, about 15 CPU-seconds each): everything is made once per test
run, by the first pytest-xdist worker that needs it (the others wait and read what it recorded);
the tests only read what it made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from library_testkit import ROOT, findings

# the session's wheel and venv with the `eks` extra, made once, and the once-per-run helpers
from test_wheel import NODE_BIN, Installed, _once, _shared, installed_eks, wheel  # noqa: F401

RECIPES = ROOT / "examples" / "recipes"
# recipe -> the node types its settings have
NODES = {
    "slurm_library_network": ["controller", "login", "compute"],
    "slurm_own_vpc": ["controller", "compute"],
    "slurm_existing_vpc": ["controller", "login", "compute"],
    "eks_new_cluster": ["eks"],
    "eks_adopted_cluster": ["eks"],
}
# variables that could point Python, the CDK or AWS at the work tree, an output or credentials
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "CDK_CONTEXT_JSON",
             "CDK_OUTDIR", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID",
             "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION")  # fmt: skip


@dataclass(frozen=True)
class Run:
    venv: Path
    outdirs: dict[str, Path]
    synth: dict[str, subprocess.CompletedProcess[str]]
    dry_runs: dict[tuple[str, str], subprocess.CompletedProcess[str]]
    library: str


def _jsii_package_cache() -> str:
    """Where the jsii runtime of this user keeps the npm packages it unpacked (its own default
    on Linux, unless set): the recipes keep reading it under their stand-in HOME. The cache holds
    aws-cdk-lib's JavaScript (7,600 files), nothing of AWS; unpacking it again under each new
    HOME cost each recipe synth about 10 CPU-seconds."""
    return os.environ.get("JSII_RUNTIME_PACKAGE_CACHE_ROOT") or str(
        Path.home() / ".cache" / "aws" / "jsii" / "package-cache"
    )


def _env(venv: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(NODE_BIN), env["PATH"]])
    # a stand-in for ~/.aws with nothing in it: no profile, no credentials
    env.update(
        HOME=str(home),
        JSII_RUNTIME_PACKAGE_CACHE_ROOT=_jsii_package_cache(),
        AWS_CONFIG_FILE=str(home / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONNOUSERSITE="1",
    )
    return env


def _make_recipes(directory: Path, venv: Path) -> None:
    """The five synths and the dry runs with ``venv``'s python, in ``directory``; what each
    process did in ``results.json``."""
    home = directory / "home"
    home.mkdir()
    env = _env(venv, home)
    apps = directory / "apps"
    shutil.copytree(RECIPES, apps, ignore=shutil.ignore_patterns("__pycache__", "cdk.out"))
    library = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import hyperpod_cdk; print(hyperpod_cdk.__file__)"],
        cwd=apps, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    def synth(name: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        done = subprocess.run(
            ["cdk", "synth", "--app", f"python {name}.py", "-o", f"out-{name}", "--quiet"],
            cwd=apps, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        return name, done

    # two at a time: each synth is mostly one CPU (the CLI's node, the app's python and jsii)
    with ThreadPoolExecutor(max_workers=2) as pool:
        synthesized = dict(pool.map(synth, NODES))
    dry_runs = {}
    for name, nodes in NODES.items():
        for node in nodes:
            dry_runs[f"{name}/{node}"] = subprocess.run(
                [str(venv / "bin" / "python"), "-m", "hyperpod_cdk.lifecycle.dry_run", node,
                 "--assembly", f"out-{name}", "--quiet"],
                cwd=apps, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip

    def done(process: subprocess.CompletedProcess[str]) -> dict[str, object]:
        return {"args": process.args, "returncode": process.returncode,
                "stdout": process.stdout, "stderr": process.stderr}  # fmt: skip

    results = {
        "library": library,
        "synth": {name: done(p) for name, p in synthesized.items()},
        "dry_runs": {key: done(p) for key, p in dry_runs.items()},
    }
    (directory / "results.json").write_text(json.dumps(results))


@pytest.fixture(scope="session")
def recipes(installed_eks: Installed, tmp_path_factory: pytest.TempPathFactory) -> Run:  # noqa: F811
    """Made once per test run, by the first xdist worker that needs it (the others wait)."""
    directory = _shared(tmp_path_factory, "recipes")
    _once(directory, lambda d: _make_recipes(d, installed_eks.venv))
    results = json.loads((directory / "results.json").read_text())

    def completed(done: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(
            done["args"], done["returncode"], done["stdout"], done["stderr"]
        )

    dry_runs = {tuple(key.split("/")): completed(done) for key, done in results["dry_runs"].items()}
    outdirs = {name: directory / "apps" / f"out-{name}" for name in NODES}
    return Run(
        installed_eks.venv,
        outdirs,
        {name: completed(done) for name, done in results["synth"].items()},
        dry_runs,  # type: ignore[arg-type]
        results["library"],
    )


def test_the_recipes_use_the_library_from_the_wheel(recipes: Run) -> None:
    assert Path(recipes.library).is_relative_to(recipes.venv), recipes.library
    assert not Path(recipes.library).is_relative_to(ROOT)


def test_the_recipes_run_under_a_home_of_their_own_and_read_the_users_jsii_cache(
    recipes: Run,
) -> None:
    home = next(iter(recipes.outdirs.values())).parent.parent / "home"
    assert home.is_dir()
    assert not (home / ".aws").exists()
    # aws-cdk-lib was not unpacked again under the stand-in home
    assert not (home / ".cache" / "aws" / "jsii").exists()
    assert Path(_jsii_package_cache()).is_dir()


def test_every_recipe_is_a_complete_file() -> None:
    assert sorted(p.stem for p in RECIPES.glob("*.py")) == sorted(NODES)
    readme = (RECIPES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}.py`" in readme for name in NODES)


@pytest.mark.parametrize("name", sorted(NODES))
def test_each_recipe_synthesizes_with_the_pinned_cli_and_no_credentials(
    recipes: Run, name: str
) -> None:
    done = recipes.synth[name]
    assert done.returncode == 0, done.stderr[-4000:]
    assert list(recipes.outdirs[name].glob("*.template.json"))


@pytest.mark.parametrize("name", sorted(NODES))
def test_each_recipe_passes_the_awssolutions_pack(recipes: Run, name: str) -> None:
    assert findings(recipes.outdirs[name]) == []


@pytest.mark.parametrize(
    ("name", "node"), [(name, node) for name, nodes in NODES.items() for node in nodes]
)
def test_the_packaged_dry_run_sets_up_every_node_of_each_recipe(
    recipes: Run, name: str, node: str
) -> None:
    done = recipes.dry_runs[(name, node)]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"Dry run of out-{name} (" in done.stdout
    assert done.stdout.rstrip().endswith("Result: ok")


@pytest.mark.parametrize("name", sorted(NODES))
def test_each_recipe_writes_the_environment_file_the_ops_commands_read(
    recipes: Run, name: str
) -> None:
    from hyperpod_cdk.config import load_environment
    from hyperpod_cdk.lifecycle.dry_run import lifecycle_uploads

    path = recipes.outdirs[name] / "hyperpod-environment.json"
    config = load_environment(path, recipes.outdirs[name])
    (upload,) = lifecycle_uploads(recipes.outdirs[name])
    assert config.cluster_name == upload.settings["cluster_name"]
    assert config.orchestrator == upload.settings["orchestrator"]
    template = json.loads(
        (recipes.outdirs[name] / f"{upload.stack}.template.json").read_text(encoding="utf-8")
    )
    (cluster,) = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster"
    ]
    assert cluster["Properties"]["ClusterName"] == config.cluster_name

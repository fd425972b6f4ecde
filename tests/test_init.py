"""``make init`` (issue 17): a commented starting config for each orchestrator, offline, that
validates and synthesizes, and never overwrites a file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "init_config.py"


def init(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("orchestrator", "region", "azs"),
    [("slurm", "us-east-1", "use1-az1"), ("eks", "ap-northeast-1", "apne1-az1")],
)
def test_init_writes_a_config_that_validates_and_synthesizes(
    orchestrator: str, region: str, azs: str, tmp_path: Path
) -> None:
    done = init(tmp_path, "NAME=acme", f"REGION={region}", f"ORCHESTRATOR={orchestrator}")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "envs" / "acme.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=")
    assert (Path(text.splitlines()[0].split("=", 1)[1])).is_file()
    assert "# CHANGE" in text
    data = yaml.safe_load(text)
    assert (data["name"], data["region"], data["orchestrator"]) == ("acme", region, orchestrator)
    assert data["network"]["availability_zone_id"] == azs
    assert "envs/acme.yaml" in done.stdout and "validates" in done.stdout

    from hyperpod_cdk.config import load_environment
    from stacks.app_builder import build_app, new_app

    config = load_environment(path, ROOT)
    app, _ = build_app(config, app=new_app(outdir=str(tmp_path / "cdk.out")), project_root=ROOT)
    assembly = app.synth()
    types = {r["Type"] for s in assembly.stacks for r in s.template["Resources"].values()}
    assert "AWS::SageMaker::Cluster" in types
    assert ("AWS::EKS::Cluster" in types) == (orchestrator == "eks")


def test_init_never_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    out.write_text("name: mine\n")
    done = init(tmp_path, "NAME=acme", "REGION=us-west-2", f"OUT={out}")
    assert done.returncode == 2
    assert "exists; it is left as it is" in done.stderr
    assert out.read_text() == "name: mine\n"


def test_init_writes_nothing_for_an_invalid_name(tmp_path: Path) -> None:
    done = init(tmp_path, "NAME=Acme_1", "REGION=us-west-2")
    assert done.returncode == 2
    assert done.stderr.startswith("config error: name: ")
    assert not (tmp_path / "envs").exists() or not list((tmp_path / "envs").iterdir())


@pytest.mark.parametrize(
    "args",
    [["NAME=acme"], ["REGION=us-west-2"], ["NAME=acme", "REGION=us-west-2", "ORCHESTRATOR=k8s"],
     ["NAME=acme", "REGION=us-west-2", "COLOR=blue"], ["acme"]],
)  # fmt: skip
def test_init_refuses_bad_arguments_with_one_line(args: list[str], tmp_path: Path) -> None:
    done = init(tmp_path, *args)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_file_in_the_repository_names_its_schema_relatively(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import init_config
    finally:
        sys.path.pop(0)
    text = init_config.render("acme", "us-west-2", "slurm", ROOT / "envs" / "acme.yaml")
    assert (
        text.splitlines()[0]
        == "# yaml-language-server: $schema=../config/schema/environment.schema.json"
    )


def test_make_init_passes_its_settings(tmp_path: Path) -> None:
    out = tmp_path / "my env" / "acme.yaml"  # a path with a space
    done = subprocess.run(
        ["make", "init", "NAME=acme", "REGION=eu-west-1", "ORCHESTRATOR=eks", f"OUT={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert (data["region"], data["orchestrator"]) == ("eu-west-1", "eks")
    assert data["network"]["eks_availability_zone_ids"] == ["euw1-az1", "euw1-az2"]

"""``python -m hyperpod_cdk.config`` (what `make validate` runs), and every shipped config file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from config_testkit import REPO, build

from hyperpod_cdk.config import validate_file

SHIPPED = sorted([*REPO.glob("config/*.yaml"), *REPO.glob("config/examples/*.yaml")])


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO / "constructs"), env.get("PYTHONPATH")])
    )
    return subprocess.run(
        [sys.executable, "-m", "hyperpod_cdk.config", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_valid_file_exits_0_with_a_summary(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, build())))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(
        "valid: environment 'test-env' (slurm, us-west-2), cluster 'test-env' with 3 instance groups, 4 nodes"
    )
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == ""


def test_invalid_file_exits_2_with_every_error_and_no_traceback(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        build(
            {
                "storage.fsx.storage_capacity_gib": 1300,
                "cluster.instance_groups[2].threads_per_core": 3,
                "nmae": "x",
            }
        ),
    )
    result = run_cli(str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert (
        "config error: storage.fsx.storage_capacity_gib: 1300 is not valid for PERSISTENT_2; use 1200 or a multiple of 2400"
        in lines
    )
    assert any(
        line.startswith("config error: cluster.instance_groups[2].threads_per_core: ")
        for line in lines
    )
    assert any(line.startswith("config error: nmae: unknown key") for line in lines)
    assert len(lines) == 3
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["/nonexistent/env.yaml"], "config error: /nonexistent/env.yaml: cannot read the file"),
        ([], "usage: python -m hyperpod_cdk.config"),
    ],
    ids=["missing-file", "no-argument"],
)
def test_cli_failures_exit_2(args: list[str], fragment: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_yaml_error_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_text("name: a\nname: b\n")
    result = run_cli(str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"config error: {path}: not valid YAML (line 2")
    assert "Traceback" not in result.stderr


def test_schema_is_json() -> None:
    result = run_cli("--schema")
    assert result.returncode == 0
    assert "network" in json.loads(result.stdout)["properties"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_configs_validate(path: Path) -> None:
    cfg, warnings = validate_file(path, REPO)
    assert cfg.name
    assert all(w.severity == "warning" for w in warnings)


def test_the_examples_exist_and_say_what_they_show() -> None:
    examples = {p.name for p in SHIPPED if p.parent.name == "examples"}
    assert {"minimal.yaml", "full.yaml", "existing-vpc-fsx.yaml"} <= examples
    for path in SHIPPED:
        assert path.read_text().startswith("#"), (
            f"{path} starts without a comment saying what it shows"
        )

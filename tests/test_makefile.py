"""The Makefile's cdk commands pass only options the pinned aws-cdk CLI knows."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CDK = ROOT / "node_modules" / ".bin" / "cdk"


def _recipes() -> dict[str, list[str]]:
    """``{target: [recipe lines]}`` of the Makefile."""
    recipes: dict[str, list[str]] = {}
    target = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([a-z-]+):", line)
        if match:
            target = match.group(1)
            recipes[target] = []
        elif line.startswith("\t") and target:
            recipes[target].append(line.strip())
    return recipes


def _cli_help(command: str) -> str:
    return subprocess.run(
        [str(CDK), command, "--help"], capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": f"{ROOT / 'node_modules' / '.bin'}:/usr/bin:/bin", "HOME": str(ROOT)},
    ).stdout  # fmt: skip


def _assert_known(target: str, command: str, options: list[str]) -> None:
    help_text = _cli_help(command)
    assert f"cdk {command}" in help_text
    for option in options:
        assert re.search(rf"(^|\s){re.escape(option)}(\s|,|$)", help_text, re.M), (
            f"make {target}: the pinned cdk CLI has no {option} for `cdk {command}`"
        )


@pytest.mark.parametrize("target", ["synth", "diff", "destroy"])
def test_every_cdk_option_of_the_target_is_known_to_the_pinned_cli(target: str) -> None:
    (line,) = [r for r in _recipes()[target] if "$(CDK)" in r]
    command = line.split("$(CDK)", 1)[1].split()[0]
    _assert_known(target, command, [w.split("=")[0] for w in line.split() if w.startswith("--")])


def test_the_deploy_gate_runs_cdk_deploy_with_options_the_pinned_cli_knows() -> None:
    """make deploy runs the gate (hyperpod_ops.deploy_gate), which runs
    ``cdk deploy --app <assembly>``."""
    from hyperpod_ops.deploy_gate import CDK_DEPLOY

    (line,) = [r for r in _recipes()["deploy"] if "hyperpod_ops.deploy_gate" in r]
    assert '"$(CONFIG)" --allow-replace "$(ALLOW_REPLACE)" -- $(CDK_ARGS)' in line
    command, *words = CDK_DEPLOY
    _assert_known("deploy", command, ["--app", *(w for w in words if w.startswith("--"))])


OPS_TARGETS = {
    "deploy": "deploy_gate",
    "update-notes": "update_notes",
    "preflight": "preflight",
    "status": "status",
    "verify": "verify",
    "sync-users": "sync_users",
    "migrate-eks-dependencies": "migrate",
}


@pytest.mark.parametrize("target", sorted(OPS_TARGETS))
def test_the_operational_targets_run_the_tools_package(target: str) -> None:
    """Issue 36: the operational commands are hyperpod_ops's (tools/), not the app's stacks/ or
    the construct library's."""
    import importlib.util

    module = f"hyperpod_ops.{OPS_TARGETS[target]}"
    (line,) = [
        r for r in _recipes()[target] if " -m hyperpod_ops." in r and "$(CREDENTIALS)" not in r
    ]
    assert f"$(VENV_PY) -m {module} " in line
    assert importlib.util.find_spec(module) is not None


def _make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=300, check=False, env=env,
    )  # fmt: skip


def _own_lines(stderr: str) -> list[str]:
    """stderr without make's own ``make: *** [Makefile:N: target] Error 2`` line (``make[1]:``
    when the tests themselves run under make, as `make test` runs them)."""
    return [line for line in stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\* ", line)]


def test_every_recipe_quotes_the_config_path() -> None:
    for target, lines in _recipes().items():
        for line in lines:
            unquoted = line.replace('"$(CONFIG)"', "")
            assert "$(CONFIG)" not in unquoted, f"make {target}: quote $(CONFIG): {line}"


@pytest.mark.parametrize("target", ["deploy", "diff", "destroy"])
def test_the_credentials_are_checked_before_the_cdk_cli_runs(target: str) -> None:
    lines = _recipes()[target]
    assert lines[0].startswith(f'@$(CREDENTIALS) {target} "$(CONFIG)" $(CDK_ARGS)')
    assert ("hyperpod_ops.deploy_gate" if target == "deploy" else "$(CDK)") in lines[1]


def test_make_diff_without_credentials_says_so_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(empty),
        AWS_SHARED_CREDENTIALS_FILE=str(empty),
        AWS_EC2_METADATA_DISABLED="true",
    )
    done = _make("diff", "CONFIG=config/examples/minimal.yaml", env=env)
    assert done.returncode == 2
    assert done.stdout == ""  # the CDK CLI never started
    assert _own_lines(done.stderr) == [
        "diff: no AWS credentials found; set AWS_PROFILE=NAME or pass CDK_ARGS='--profile NAME', "
        "or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (`aws configure` sets up a profile), "
        "then retry"
    ]


def test_a_config_path_with_spaces_works(tmp_path: Path) -> None:
    folder = tmp_path / "my envs"
    folder.mkdir()
    config = folder / "eks env.yaml"
    config.write_text((ROOT / "config/examples/eks-minimal.yaml").read_text())
    done = _make("validate", f"CONFIG={config}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{config}: valid: environment ")
    done = _make("lifecycle-dry-run", "NODE=eks", f"CONFIG={config}")
    assert done.returncode == 0, done.stderr
    assert f"Dry run of {config}, group " in done.stdout


def test_the_lifecycle_dry_run_runs_the_config_it_is_given() -> None:
    done = _make(
        "lifecycle-dry-run", "NODE=compute", "CONFIG=config/examples/full.yaml", "GROUP=cpu"
    )
    assert done.returncode == 0, done.stderr
    assert "Dry run of config/examples/full.yaml, group cpu (" in done.stdout
    done = _make("lifecycle-dry-run", "NODE=eks")  # the default config is a Slurm environment
    assert done.returncode == 2
    assert _own_lines(done.stderr) == [
        "lifecycle-dry-run: config/default.yaml is a slurm environment: use NODE=controller or "
        "NODE=login or NODE=compute"
    ]

"""The two commands as users run them: a fresh process without any AWS credentials."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ops_testkit import PROJECT_ROOT


def _no_aws_env(tmp_path: Path) -> dict[str, str]:
    """The environment minus every AWS variable; empty config and credentials files; no IMDS."""
    empty = tmp_path / "empty"
    empty.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        {
            "HOME": str(tmp_path),  # no ~/.aws (SSO cache, login cache)
            "AWS_CONFIG_FILE": str(empty),
            "AWS_SHARED_CREDENTIALS_FILE": str(empty),
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    return env


@pytest.mark.parametrize("command", ["preflight", "status"])
@pytest.mark.parametrize(
    "config", ["config/default.yaml", "config/examples/eks-existing-cluster.yaml"]
)
def test_no_credentials_is_one_line_and_exit_2(tmp_path: Path, command: str, config: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"hyperpod_cdk.ops.{command}", config],
        cwd=PROJECT_ROOT,
        env=_no_aws_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{command}: no AWS credentials found; set AWS_PROFILE")


def test_an_unknown_profile_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hyperpod_cdk.ops.preflight",
            "config/default.yaml",
            "--profile",
            "nope",
        ],
        cwd=PROJECT_ROOT,
        env=_no_aws_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "nope" in line and line.startswith("preflight: ")


def test_importing_the_library_and_the_commands_needs_no_boto3() -> None:
    code = (
        "import sys\n"
        "sys.modules['boto3'] = None\n"  # `import boto3` now raises ImportError
        "sys.modules['botocore'] = None\n"
        "import hyperpod_cdk, hyperpod_cdk.ops.preflight, hyperpod_cdk.ops.status\n"
        "from hyperpod_cdk.ops.aws import AwsUnavailable, session_clients\n"
        "try:\n"
        "    session_clients('us-west-2')\n"
        "except AwsUnavailable as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == (
        "boto3 is not installed; install the library with its ops extra "
        "(`pip install 'hyperpod-cdk[ops]'`), or inside this repository run `make bootstrap`"
    )

"""The two commands as users run them: a fresh process without any AWS credentials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import botocore.exceptions
import pytest
from ops_testkit import PROJECT_ROOT, StubbedAws

from hyperpod_ops import preflight, status


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


@pytest.mark.parametrize("command", ["preflight", "status", "verify"])
@pytest.mark.parametrize(
    "config", ["config/default.yaml", "config/examples/eks-existing-cluster.yaml"]
)
def test_no_credentials_is_one_line_and_exit_2(tmp_path: Path, command: str, config: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"hyperpod_ops.{command}", config],
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
            "hyperpod_ops.preflight",
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
        "import hyperpod_cdk, hyperpod_ops.preflight, hyperpod_ops.status\n"
        "from hyperpod_ops.aws import AwsUnavailable, session_clients\n"
        "try:\n"
        "    session_clients('us-west-2')\n"
        "except AwsUnavailable as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == (
        "boto3 is not installed; install the tools package with its dependencies "
        "(`pip install ./tools`), or inside this repository run `make bootstrap`"
    )


# the modules whose import must not start the CDK
CDK_FREE = [
    "preflight",
    "status",
    "verify",
    "sync_users",
    "migrate",
    "credentials",
    # issue 36: they synthesize by running the CDK app in a subprocess
    "update_notes",
    "deploy_gate",
    "template_changes",
    "cdk_app",
    "chart",
]


@pytest.fixture(scope="module")
def imports_without_the_cdk() -> dict[str, str]:
    """Each of CDK_FREE imported in one fresh process where `aws_cdk`, `jsii` and `constructs`
    are unimportable: ``{command: ""}`` when its import succeeded, else the error's traceback.
    One process for all (not one each: a Python start-up and hyperpod_ops's imports each time)
    proves the same per command: a module that failed is not left in ``sys.modules``, so a
    later command that imports it runs its import again, and fails again."""
    code = (
        "import json, sys, traceback\n"
        "sys.modules['aws_cdk'] = None\n"
        "sys.modules['jsii'] = None\n"
        "sys.modules['constructs'] = None\n"
        "results = {}\n"
        f"for command in {CDK_FREE!r}:\n"
        "    try:\n"
        "        __import__(f'hyperpod_ops.{command}')\n"
        "        results[command] = ''\n"
        "    except BaseException:\n"
        "        results[command] = traceback.format_exc()\n"
        "print(json.dumps(results))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    results: dict[str, str] = json.loads(result.stdout)
    return results


@pytest.mark.parametrize("command", CDK_FREE)
def test_the_commands_never_start_the_cdk(
    command: str, imports_without_the_cdk: dict[str, str]
) -> None:
    """The ops commands install with `make bootstrap-python` only: importing aws-cdk-lib would
    start its JavaScript runtime (and need Node.js) for nothing. `aws_cdk` and `jsii` are made
    unimportable, so any import of them, direct or through a constructs module, fails."""
    assert imports_without_the_cdk[command] == ""


# -- the AWS CLI's configuration, credentials and throttling: one line, exit 2 ---------------


def _run(tmp_path: Path, command: str, env_changes: dict[str, str], *args: str) -> Any:
    env = _no_aws_env(tmp_path)
    env.update(env_changes)
    return subprocess.run(
        [sys.executable, "-m", f"hyperpod_ops.{command}", "config/default.yaml", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_line(result: Any, command: str) -> str:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{command}: ")
    return str(line)


@pytest.mark.parametrize("command", ["preflight", "status", "verify"])
def test_a_broken_aws_config_file_is_one_line(tmp_path: Path, command: str) -> None:
    broken = tmp_path / "config"
    broken.write_text("[default\nregion = us-west-2\n")  # the section header lacks its ']'
    line = _one_line(_run(tmp_path, command, {"AWS_CONFIG_FILE": str(broken)}), command)
    assert "the AWS CLI configuration cannot be read" in line
    assert str(broken) in line


def test_a_profile_whose_source_profile_is_missing_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "[profile deploy]\nrole_arn = arn:aws:iam::111122223333:role/Deploy\n"
        "source_profile = nowhere\n"
    )
    result = _run(tmp_path, "preflight", {"AWS_CONFIG_FILE": str(config)}, "--profile", "deploy")
    line = _one_line(result, "preflight")
    assert "nowhere" in line


def test_a_failing_credential_process_is_one_line(tmp_path: Path) -> None:
    """A credential process that writes several lines to stderr and exits 1 (as SSO helpers do)."""
    script = tmp_path / "creds.sh"
    script.write_text("#!/bin/sh\necho 'token expired' >&2\necho 'run login' >&2\nexit 1\n")
    script.chmod(0o755)
    config = tmp_path / "config"
    config.write_text(f"[default]\ncredential_process = {script}\n")
    line = _one_line(_run(tmp_path, "status", {"AWS_CONFIG_FILE": str(config)}), "status")
    assert line.startswith("status: AWS credentials could not be loaded")
    assert "token expired run login" in line
    assert "(make: PROFILE=NAME)" in line


def test_an_unparseable_credential_process_output_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "creds.sh"
    script.write_text("#!/bin/sh\necho 'not json'\n")
    script.chmod(0o755)
    config = tmp_path / "config"
    config.write_text(f"[default]\ncredential_process = {script}\n")
    line = _one_line(_run(tmp_path, "preflight", {"AWS_CONFIG_FILE": str(config)}), "preflight")
    assert "AWS credentials could not be loaded" in line


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("ExpiredToken", "AWS rejected the credentials (ExpiredToken: "),
        ("InvalidClientTokenId", "AWS rejected the credentials (InvalidClientTokenId: "),
        (
            "Throttling",
            "AWS kept throttling sts:GetCallerIdentity through 5 attempts (Throttling: ",
        ),
    ],
)
def test_preflight_stops_in_one_line_when_the_first_call_fails(
    code: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    aws = StubbedAws()
    aws.error("sts", "get_caller_identity", code, {}, message="it failed")
    assert (
        preflight.main(
            ["config/default.yaml", "--project-root", str(PROJECT_ROOT)], aws.make_clients
        )
        == 2
    )
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"preflight: {words}it failed)")
    aws.verify()


@pytest.mark.parametrize(
    ("code", "words", "exit_code"),
    [
        (
            "ExpiredTokenException",
            "status: AWS rejected the credentials (ExpiredTokenException: ",
            2,
        ),
        (
            "ThrottlingException",
            "status: AWS kept throttling sagemaker:DescribeCluster through 5 attempts (ThrottlingException: ",
            2,
        ),
        (
            "AccessDeniedException",
            "status: sagemaker:DescribeCluster returned AccessDeniedException: ",
            1,
        ),
    ],
)
def test_status_stops_in_one_line_when_its_read_fails(
    code: str, words: str, exit_code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    aws = StubbedAws()
    aws.error("sagemaker", "describe_cluster", code, message="it failed")
    assert (
        status.main(["config/default.yaml", "--project-root", str(PROJECT_ROOT)], aws.make_clients)
        == exit_code
    )
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(words)
    aws.verify()


def test_a_throttled_check_fails_that_check_only() -> None:
    """After the identity, a call still throttled after the retries is one failed check."""
    from hyperpod_ops.aws import unavailable_reason

    error = botocore.exceptions.ClientError(
        {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "DescribeSubnets"
    )
    assert unavailable_reason(error) is None


def test_the_throttling_codes_are_botocores() -> None:
    """The codes botocore's standard retry mode treats as throttling, in the pinned botocore."""
    from botocore.retries.standard import ThrottledRetryableChecker

    from hyperpod_ops.aws import THROTTLING_ERROR_CODES

    assert set(ThrottledRetryableChecker._THROTTLED_ERROR_CODES) == THROTTLING_ERROR_CODES


def test_every_botocore_class_named_exists() -> None:
    """A class name botocore dropped would silently stop matching: the pinned botocore has all."""
    from hyperpod_ops import aws

    for names, _ in aws._BOTOCORE_REASONS:
        for name in names:
            assert isinstance(getattr(botocore.exceptions, name, None), type), name


def test_any_other_setup_error_is_one_line() -> None:
    """An exception no rule knows, raised while credentials load, still words one line."""
    from hyperpod_ops.aws import AwsUnavailable, unavailable_reason

    error = AwsUnavailable("x", error=ValueError("bad\nvalue"), stage="credentials")
    reason = unavailable_reason(error, "--profile P")
    assert reason == (
        "AWS credentials could not be loaded (ValueError: bad value); set AWS_PROFILE=NAME or "
        "pass --profile P, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (`aws configure` "
        "sets up a profile), then retry"
    )


@pytest.mark.parametrize("module", ["status", "sync_users", "migrate", "verify.cli"])
def test_a_caller_of_another_account_stops_every_command_with_exit_2(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Security review L5: with the config's account 111122223333 and credentials of
    999999999999, sync-users planned an SSM session on the other account's controller and
    exited 0. Every ops command now stops before its first call (preflight reports it as a
    check of its own)."""
    import importlib

    from ops_testkit import identity

    command = importlib.import_module(f"hyperpod_ops.{module}")
    config = "config/examples/full.yaml" if module != "migrate" else "config/examples/eks-full.yaml"
    aws = StubbedAws()
    identity(aws, "999999999999")
    code = command.main([config, "--project-root", str(PROJECT_ROOT)], aws.make_clients)
    out, err = capsys.readouterr()
    assert code == 2, err
    (line,) = err.splitlines()
    assert "the credentials are of account 999999999999" in line
    assert "is account 111122223333: use credentials of 111122223333" in line
    aws.verify()  # nothing else was called

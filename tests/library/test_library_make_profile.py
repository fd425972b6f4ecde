"""One way to pass a profile to every make target that reaches AWS (issue 35; newcomer review,
item 4): ``PROFILE=x``. A stand-in AWS config (AWS_CONFIG_FILE in a temporary folder) defines
profile ``x`` whose credential_process writes a marker when called; the endpoint is a closed
local port, so each target fails fast ("cannot reach AWS") after it used the profile."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from library_testkit import ROOT

# every target that reaches AWS, and its arguments
TARGETS = {
    "preflight": [],
    "status": [],
    "verify": [],
    "sync-users": [],
    "migrate-eks-dependencies": ["CONFIG=config/examples/eks-minimal.yaml"],
    "deploy": [],
    "diff": [],
    "destroy": [],
}


def _aws_config(tmp_path: Path) -> dict[str, str]:
    marker = tmp_path / "used-profile"
    helper = tmp_path / "credentials.sh"
    helper.write_text(
        "#!/bin/sh\n"
        f'echo "$1" >> "{marker}"\n'
        'echo \'{"Version": 1, "AccessKeyId": "AKIAEXAMPLEEXAMPLE00", '
        '"SecretAccessKey": "example/example/example/example/example0"}\'\n'
    )
    helper.chmod(0o755)
    config = tmp_path / "config"
    config.write_text(
        f"[profile x]\nregion = us-west-2\ncredential_process = {helper} x\n"
        f"[profile other]\nregion = us-west-2\ncredential_process = {helper} other\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MAKE"))}
    env.update(
        AWS_CONFIG_FILE=str(config),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        # nothing listens there: the first call fails at once, after the profile gave its keys
        AWS_ENDPOINT_URL="http://127.0.0.1:9",
        AWS_MAX_ATTEMPTS="1",
    )
    return env


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_profile_reaches_the_aws_calls_of_the_target(target: str, tmp_path: Path) -> None:
    env = _aws_config(tmp_path)
    done = subprocess.run(
        ["make", "--no-print-directory", target, "PROFILE=x", *TARGETS[target]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    marker = tmp_path / "used-profile"
    assert marker.is_file(), f"make {target} PROFILE=x used no profile:\n{done.stderr[-2000:]}"
    assert set(marker.read_text().split()) == {"x"}
    assert done.returncode != 0  # no AWS behind the endpoint (or, sync-users: no users file)


def test_without_profile_the_usual_chain_applies(tmp_path: Path) -> None:
    env = {**_aws_config(tmp_path), "AWS_PROFILE": "other"}
    subprocess.run(
        ["make", "--no-print-directory", "status"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert (tmp_path / "used-profile").read_text().split() == ["other"]

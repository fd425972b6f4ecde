"""Issue 34, M4: ``make verify``'s imds check: a user's UID and a user's Slurm job get no IMDS
token, root and a system account still do. The real node script (ops/verify/node/imds.sh) runs
with bash against a PATH holding only stand-ins: ``curl`` answers 200 unless the UID the
stand-ins of setpriv/runuser set is a user's one and the node "restricts" IMDS."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ops_testkit import environment

from hyperpod_ops.ssm import RemoteResult
from hyperpod_ops.verify import cli, imds
from hyperpod_ops.verify.model import CHECK_ORDER, Node, VerifyRun

TOOLS = {
    # IMDS as the node answers: users' UIDs (2000 and up) refused when FAKE_RESTRICTED=1
    "curl": '#!/bin/bash\nif [[ "${FAKE_RESTRICTED:-1}" == 1 && "${FAKE_UID:-0}" -ge 2000 ]]; then\n'
    '  echo 000; echo "curl: (7) Failed to connect to 169.254.169.254 port 80" >&2; exit 7\nfi\necho 200\n',
    "setpriv": '#!/bin/bash\nfor a; do case "$a" in --reuid=*) export FAKE_UID="${a#--reuid=}";; '
    '-*) ;; *) break;; esac; shift; done\nexec "$@"\n',
    "runuser": '#!/bin/bash\nexport FAKE_UID=2001\nshift 3\nexec "$@"\n',
    "srun": '#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\nexec "$@"\n',
    "getent": '#!/bin/bash\necho "root:x:0:0::/root:/bin/bash"\necho "alice:x:2001:2001::/fsx/home/alice:/bin/bash"\n',
}


@pytest.fixture
def controller(tmp_path: Path):
    path = tmp_path / "bin"
    path.mkdir()
    for name, text in TOOLS.items():
        (path / name).write_text(text)
        (path / name).chmod(0o755)
    for name in ("bash", "awk"):
        (path / name).symlink_to(shutil.which(name) or f"/usr/bin/{name}")
    env = {"PATH": str(path), "FAKE_RESTRICTED": "1"}

    def run_script(script: str, timeout: float) -> RemoteResult:
        done = subprocess.run([str(path / "bash"), "-c", script], env=env, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        return RemoteResult("controller", done.returncode, done.stdout, done.stderr)

    run_script.env = env  # type: ignore[attr-defined]
    return run_script


def make_run(controller, changes=None) -> VerifyRun:
    return VerifyRun(
        config=environment("default", changes or {}),
        clients=lambda service: pytest.fail(f"no AWS call expected ({service})"),
        run_id="hpv-0123456789ab",
        nodes=[Node("controller", "i-0c0000000000000001", "ml.m5.2xlarge", "Running")],
        controller=controller,
    )


def outcomes(results) -> dict[str | None, str]:
    return {r.subject: r.outcome for r in results}


def test_a_restricted_node_passes(controller) -> None:
    results = imds.check_imds(make_run(controller))
    assert outcomes(results) == {"root": "pass", "system": "pass", "user": "pass", "job": "pass"}


def test_a_node_where_users_reach_imds_fails(controller) -> None:
    controller.env["FAKE_RESTRICTED"] = "0"
    results = {r.subject: r for r in imds.check_imds(make_run(controller))}
    assert results["user"].outcome == "fail" and results["job"].outcome == "fail"
    assert "users can take the node role's credentials" in results["user"].detail
    assert results["root"].outcome == "pass"


def test_the_switch_skips_the_check(controller) -> None:
    [result] = imds.check_imds(make_run(controller, {"cluster.node_setup.restrict_imds": False}))
    assert result.outcome == "skip"
    assert "restrict_imds is off" in result.detail


def test_the_check_is_registered_for_slurm_only() -> None:
    assert "imds" in CHECK_ORDER and "imds" in cli.SLURM_CHECKS and "imds" not in cli.EKS_CHECKS
    assert os.path.exists(Path(imds.__file__).parent / "node" / "imds.sh")

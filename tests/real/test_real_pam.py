"""pam_slurm_adopt as the lifecycle step sets it up (lifecycle_assets/steps/directory.sh
``step_pam_slurm_adopt``), asked by ``pamtester`` with the real module (Debian's
libpam-slurm-adopt, 22.05) against the real_slurm cluster.

The step renders /etc/pam.d/sshd on the fake compute node, starting from this machine's own
/etc/pam.d/sshd; its ``@include``s are this machine's common-* files, whose common-account has
libpam-sss's ``account sufficient pam_localuser.so`` (real_tools.md finding 2). pam_slurm_adopt
acts for the service ``sshd`` only, so pamtester runs in a private mount namespace where the
rendered file is bind-mounted over /etc/pam.d/sshd: the host's file is never changed.

Users: ``nobody`` has no job; ``daemon`` owns the job that runs (both local, as the users file
makes them). Root is let in by the module's default (``ignore_root``).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from lifecycle_testkit import dry
from slurm_cluster import SlurmCluster
from support import real_tools

pytestmark = pytest.mark.real_slurm
MODULE = Path("/lib/security/pam_slurm_adopt.so")  # where libpam-slurm-adopt puts it


def rendered_sshd(tmp_path: Path) -> Path:
    """/etc/pam.d/sshd after the step, on a compute node with the module where Debian puts it."""
    base = dry.prepare(
        "compute", tmp_path / "compute", changes={"node_setup.pam_slurm_adopt": True}
    )
    root = base / "node"
    for module in root.rglob("pam_slurm_adopt.so"):
        module.unlink()
    (root / "lib/security").mkdir(parents=True, exist_ok=True)
    (root / "lib/security/pam_slurm_adopt.so").write_bytes(b"")
    shutil.copy("/etc/pam.d/sshd", root / "etc/pam.d/sshd")
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert "pam_slurm_adopt" in result.steps
    return root / "etc/pam.d/sshd"


def appended_last(tmp_path: Path) -> Path:
    """The rule where the earlier step put it: appended after the system's account rules."""
    path = tmp_path / "sshd-appended"
    path.write_text(Path("/etc/pam.d/sshd").read_text() + f"account required {MODULE}\n")
    return path


def account(cluster: SlurmCluster, sshd: Path, user: str) -> subprocess.CompletedProcess[str]:
    """``pamtester sshd USER acct_mgmt`` with ``sshd`` as /etc/pam.d/sshd (private mounts)."""
    script = 'mount --bind "$1" /etc/pam.d/sshd && exec pamtester sshd "$2" acct_mgmt'
    return subprocess.run(
        [real_tools.tool("unshare"), "--mount", "--propagation", "private",
         "sh", "-c", script, "sh", str(sshd), user],
        env=cluster.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pam_ready() -> None:
    real_tools.tool("pamtester")
    if not MODULE.exists():
        pytest.skip(f"{MODULE} is not installed (Debian package libpam-slurm-adopt)")
    if "pam_localuser" not in Path("/etc/pam.d/common-account").read_text():
        pytest.skip("this machine's common-account has no pam_localuser (libpam-sss's profile)")


def own_job(cluster: SlurmCluster, user: str) -> str:
    job = subprocess.run(
        ["runuser", "-u", user, "--", "sbatch", "--parsable", "-p", "dev", "-n", "1",
         "--chdir=/tmp", "-o", "/dev/null", "--wrap", "sleep 300"],
        env=cluster.env(), capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    deadline = time.monotonic() + 60
    while cluster.run("squeue", "-h", "-j", job, "-o", "%T").strip() != "RUNNING":
        assert time.monotonic() < deadline, f"job {job} of {user} did not start"
        time.sleep(0.5)
    time.sleep(1)  # the extern step (PrologFlags=Contain) up on the node
    return job


def test_a_local_user_without_a_job_is_denied(
    idle_cluster: SlurmCluster, pam_ready: None, tmp_path: Path
) -> None:
    sshd = rendered_sshd(tmp_path)
    denied = account(idle_cluster, sshd, "nobody")
    assert denied.returncode != 0, denied.stdout + denied.stderr
    # also while another user's job runs on the node
    own_job(idle_cluster, "daemon")
    denied = account(idle_cluster, sshd, "nobody")
    assert denied.returncode != 0, denied.stdout + denied.stderr


def test_the_job_owner_and_root_are_let_in(
    idle_cluster: SlurmCluster, pam_ready: None, tmp_path: Path
) -> None:
    sshd = rendered_sshd(tmp_path)
    own_job(idle_cluster, "daemon")
    allowed = account(idle_cluster, sshd, "daemon")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    root = account(idle_cluster, sshd, "root")
    assert root.returncode == 0, root.stdout + root.stderr


def test_the_rule_appended_after_common_account_let_anyone_local_in(
    idle_cluster: SlurmCluster, pam_ready: None, tmp_path: Path
) -> None:
    """Why the rule moved (real_tools.md finding 2): appended last, as the earlier step did,
    pam_localuser (sufficient) ends the account stack first and a user without a job gets in."""
    let_in = account(idle_cluster, appended_last(tmp_path), "nobody")
    assert let_in.returncode == 0, let_in.stdout + let_in.stderr

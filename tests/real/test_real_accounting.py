"""The lifecycle's Slurm accounting registration (lifecycle_assets/steps/slurm.sh
``step_slurm_users``) against the real ``sacctmgr`` and slurmdbd of the real_slurm cluster.

The step runs as on a controller node: the real entry script on the fake node
(scripts/lifecycle_dry_run.py ``prepare``), with ``DRY_RUN=0`` and ``HYPERPOD_ONLY_STEPS=
slurm_users`` (what ``make sync-users`` sends), so its ``run``/``probe`` call the real sacctmgr.
Slurm 22.05 measured; 24.11's sacctmgr takes the same commands (``add account``, ``add user
Account= DefaultAccount=``, ``show association where``).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from lifecycle_testkit import dry
from slurm_cluster import SlurmCluster
from support.real_tools import SYSTEM_PATH

pytestmark = pytest.mark.real_slurm


def register(cluster: SlurmCluster, base: Path, **extra: str) -> dry.DryRun:
    env = {
        **dry.environment("controller", base),
        "DRY_RUN": "0",
        "HYPERPOD_ONLY_STEPS": "slurm_users",
        "SLURM_CONF": str(cluster.conf),
        "PATH": f"{base / 'bin'}:{SYSTEM_PATH}",
        **extra,
    }
    done = subprocess.run(
        ["bash", str(base / "scripts" / dry.ENTRY_SCRIPT)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    return dry.DryRun.parse("controller", done.returncode, done.stdout)


def associations(cluster: SlurmCluster) -> set[str]:
    text = cluster.run("sacctmgr", "-nP", "show", "association", "format=account,user")
    return {line for line in text.splitlines() if line.split("|")[1]}


def adds(result: dry.DryRun) -> list[str]:
    return [line for line in result.output.splitlines() if "run: sacctmgr -i add" in line]


def test_users_are_registered_once_and_follow_an_account_move(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    base = dry.prepare("controller", tmp_path / "controller")
    first = register(cluster, base)
    assert first.returncode == 0, first.output
    assert "Slurm accounts and users" in first.steps
    # users.json: alice in account research, bob in an account of his own name
    assert {"research|alice", "bob|bob"} <= associations(cluster)
    assert (
        cluster.run("sacctmgr", "-nP", "show", "user", "alice", "format=defaultaccount").strip()
        == "research"
    )
    assert len(adds(first)) == 4

    again = register(cluster, base)
    assert again.returncode == 0, again.output
    assert adds(again) == []  # idempotent: sacctmgr lists everything already

    users = base / "scripts" / "users.json"
    data = json.loads(users.read_text())
    next(u for u in data["users"] if u["name"] == "alice")["account"] = "vision"
    users.write_text(json.dumps(data))
    moved = register(cluster, base)
    assert moved.returncode == 0, moved.output
    assert len(adds(moved)) == 2  # the account, then alice's association with it
    assert "vision|alice" in associations(cluster)
    assert "research|alice" in associations(cluster)  # kept by design: her old jobs stay hers
    assert (
        cluster.run("sacctmgr", "-nP", "show", "user", "alice", "format=defaultaccount").strip()
        == "vision"
    )
    assert adds(register(cluster, base)) == []


def test_a_hung_slurmdbd_fails_the_step_within_its_bound(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    """A hung slurmdbd (stopped with SIGSTOP: sacctmgr then blocks ~45 s a call) fails the step
    after its time bound (here 5 s, each call cut at 3 s), not after 30 blocked calls: make
    sync-users' session must outlast the step (real_tools.md "also low")."""
    base = dry.prepare("controller", tmp_path / "controller")
    cluster.pause_daemon("slurmdbd")
    try:
        started = time.monotonic()
        result = register(
            cluster,
            base,
            HYPERPOD_SLURMDBD_WAIT_SECONDS="5",
            HYPERPOD_SACCTMGR_TIMEOUT_SECONDS="3",
            HYPERPOD_POLL_SECONDS="1",
        )
        took = time.monotonic() - started
    finally:
        cluster.resume_daemon("slurmdbd")
    assert result.returncode == 1, result.output
    assert "slurmdbd does not answer sacctmgr" in result.output
    assert took < 30, took

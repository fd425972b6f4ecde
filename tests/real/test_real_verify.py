"""``make verify``'s Slurm checks against a real one-node Slurm (Debian's 22.05), through
:class:`~hyperpod_ops.ssm.LocalTransport`: the same scripts (ops/verify/node/*.sh), the same
SSM wrapper and envelope, the same parsers as on a HyperPod node, only the session replaced.

The HyperPod side is the answer AWS would give for config/default.yaml: one running node in
each of the controller, login and gpu groups, all this machine. Each case says which Slurm
version its behaviour follows: 22.05 measured here; where 24.11 (HyperPod) differs, the code
handles both and tests/ops/verify/test_verify_slurm.py holds the 24.11 form (``blocked``).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from ops_testkit import environment
from slurm_cluster import EPILOG_HOLD, SlurmCluster

from hyperpod_ops.ssm import LocalTransport
from hyperpod_ops.verify import slurm
from hyperpod_ops.verify.cli import connect_slurm
from hyperpod_ops.verify.model import Node, Result, VerifyRun

pytestmark = pytest.mark.real_slurm


def make_run(cluster: SlurmCluster, run_id: str = "hpv-0123456789ab") -> VerifyRun:
    run = VerifyRun(
        config=environment("default"),
        clients=lambda service: pytest.fail(f"no AWS call expected ({service})"),
        run_id=run_id,
        cluster={"ClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123def456"},
        nodes=[
            Node("controller", "i-0c0000000000000001", "ml.m5.2xlarge", "Running"),
            Node("login", "i-0l0000000000000001", "ml.m5.4xlarge", "Running"),
            Node("gpu", "i-0g0000000000000001", "ml.p5.48xlarge", "Running"),
        ],
    )
    connect_slurm(run, LocalTransport(env=cluster.env()))  # type: ignore[arg-type]
    return run


def by_subject(results: list[Result]) -> dict[str | None, Result]:
    return {r.subject: r for r in results}


def submit(cluster: SlurmCluster, *options: str) -> str:
    return cluster.run("sbatch", "--parsable", "-o", "/dev/null", *options).strip().split(";")[0]


# --- node states (22.05 measured; 24.11 prints the same names, plus `blocked`) --------------


def drive(cluster: SlurmCluster, state: str) -> None:
    """Bring the node into ``state`` with scontrol, reservations and jobs."""
    node = cluster.node
    if state == "mixed":
        submit(cluster, "-p", "dev", "-n", "1", "--wrap", "sleep 300")
    elif state == "allocated":
        submit(cluster, "-p", "dev", "--exclusive", "--wrap", "sleep 300")
    elif state == "completing":
        (cluster.base / EPILOG_HOLD).touch()
        submit(cluster, "-p", "dev", "--wrap", "true")
    elif state == "drained":
        cluster.run("scontrol", "update", f"nodename={node}", "state=drain", "reason=real tier")
    elif state == "down":
        cluster.run("scontrol", "update", f"nodename={node}", "state=down", "reason=real tier")
    elif state in ("reserved", "maint"):
        flags = ["flags=maint"] if state == "maint" else []
        cluster.run(
            "scontrol", "create", "reservation", "reservationname=hpv-real", "starttime=now",
            "duration=60", f"nodes={node}", "users=root", *flags,
        )  # fmt: skip
    elif state == "planned":
        # an idle node the backfill scheduler keeps for a pending job that must wait for it
        cluster.run(
            "scontrol", "create", "reservation", "reservationname=hpv-later",
            "starttime=now+600", "duration=60", f"nodes={node}", "users=root",
        )  # fmt: skip
        submit(cluster, "-p", "dev", "--exclusive", "-t", "60", "--wrap", "true")
    cluster.wait_state({state}, timeout=60)


# state -> (the partition's outcome, words of its detail)
STATES = {
    "idle": ("pass", "1 of 1 nodes usable in partition gpu (1 idle)"),
    "mixed": ("pass", "(0 idle)"),
    "allocated": ("pass", "(0 idle)"),
    "completing": ("pass", "(0 idle)"),
    "reserved": ("pass", "(0 idle)"),  # real_tools.md finding 3
    "planned": ("pass", "(0 idle)"),  # real_tools.md finding 3
    "drained": ("fail", "(drained: real tier)"),
    "down": ("fail", "(down: real tier)"),
    "maint": ("fail", "(maint)"),
}


@pytest.mark.parametrize("state", list(STATES))
def test_the_nodes_check_reads_every_node_state(idle_cluster: SlurmCluster, state: str) -> None:
    drive(idle_cluster, state)
    results = by_subject(slurm.check_nodes(make_run(idle_cluster)))
    assert results["controller"].outcome == "pass", results["controller"]
    assert "is UP" in results["controller"].detail
    outcome, words = STATES[state]
    assert results["gpu"].outcome == outcome, results["gpu"]
    assert words in results["gpu"].detail
    assert results["login/i-0l0000000000000001"].outcome == "pass"


# --- jobs ------------------------------------------------------------------------------------


@pytest.fixture
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm, "POLL_SECONDS", 1.0)
    monkeypatch.setattr(slurm, "ACCOUNTING_POLL_SECONDS", 1.0)
    monkeypatch.setattr(slurm, "COMPLETING_POLL_SECONDS", 1.0, raising=False)


@pytest.mark.parametrize(
    ("script", "cancel", "final"),
    [("true", False, "COMPLETED"), ("exit 3", False, "FAILED"), ("sleep 300", True, "CANCELLED")],
)
def test_a_job_from_pending_to_its_end(
    idle_cluster: SlurmCluster, quick_polls: None, script: str, cancel: bool, final: str
) -> None:
    """A held job is PENDING without a batch host (squeue prints n/a: real_tools.md finding 6),
    then ends COMPLETED, FAILED or CANCELLED as sacct records it."""
    run = make_run(idle_cluster)
    job = submit(idle_cluster, "-p", "gpu", "--hold", "--wrap", script)
    assert slurm.job_state(run, job, time.monotonic() + 60) == ("PENDING", None)
    idle_cluster.run("scontrol", "release", job)
    if cancel:
        idle_cluster.wait_state({"allocated", "mixed"})
        idle_cluster.run("scancel", job)
    state, _ = slurm.wait_for_job(run, job, time.monotonic() + 90)
    assert state == final


def test_the_job_checks_run_their_srun_on_real_slurm(
    idle_cluster: SlurmCluster, quick_polls: None
) -> None:
    """efa then containers back to back (real_tools.md findings 1 and 5): real srun takes the
    options (no `unrecognized option '--no-requeue'`); this machine has no EFA and no pyxis, so
    efa fails on the device count and containers on srun's own error; the node still
    `completing` efa's job (a 20 s Epilog) is waited for, not skipped as "no idle node"."""
    run = make_run(idle_cluster)
    (idle_cluster.base / EPILOG_HOLD).touch()
    [efa] = slurm.check_efa(run)
    assert efa.outcome == "fail", efa
    assert f"{idle_cluster.node}: 0 EFA devices, provider none" in efa.detail
    assert idle_cluster.state("gpu") == "completing"
    [containers] = slurm.check_containers(run)
    assert containers.outcome == "fail", containers
    assert "unrecognized option '--container-image=" in containers.detail
    assert "--no-requeue" not in efa.detail + containers.detail


def test_the_nccl_job_output_is_read_back_and_removed(
    idle_cluster: SlurmCluster, quick_polls: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The NCCL batch job (sbatch --no-requeue: an sbatch option) fails fast here (no pyxis);
    its output file is read from its batch host and removed (findings 6 and 7)."""
    monkeypatch.setattr(slurm, "NCCL_OUTPUT_DIR", str(tmp_path))
    run = make_run(idle_cluster)
    [group] = slurm.compute_groups(run)
    known = slurm.instance_types.lookup(run, "ml.p5.48xlarge").facts
    assert known is not None
    # one task per CPU of this node (a p5 has 8 GPUs, so 8 tasks: more than 2 CPUs can hold)
    facts = dataclasses.replace(known, accelerators=idle_cluster.cpus)
    node = next(n for n in slurm.parse_sinfo(idle_cluster.run(
        "sinfo", "-N", "-h", "-o", "%N|%P|%T|%G|%E")) if n.partition == "gpu")  # fmt: skip
    outcome = slurm._nccl_run(run, group, facts, [node], time.monotonic() + 120)
    assert outcome.state == "FAILED", outcome
    assert "unrecognized option '--container-image=" in outcome.output
    assert "opening file n/a" not in outcome.output
    assert list(tmp_path.iterdir()) == []  # removed from the node
    [output] = [c for c in run.made if c.what.startswith("the NCCL job's output file")]
    output.remove()  # gone already is fine


def test_cleanup_finds_and_cancels_a_runs_jobs_by_its_id(idle_cluster: SlurmCluster) -> None:
    run = make_run(idle_cluster, "hpv-00000000cafe")
    mine = submit(idle_cluster, "-p", "dev", "-J", "hpv-00000000cafe-nccl", "--wrap", "sleep 300")
    other = submit(idle_cluster, "-p", "dev", "-J", "someone-else", "--wrap", "sleep 300")
    found = slurm.leftovers(run)
    assert [c.what for c in found] == ["Slurm jobs named hpv-00000000cafe-nccl"]
    found[0].remove()
    deadline = time.monotonic() + 30
    while mine in idle_cluster.run("squeue", "-h", "-o", "%i") and time.monotonic() < deadline:
        time.sleep(0.5)
    queued = idle_cluster.run("squeue", "-h", "-o", "%i").split()
    assert mine not in queued and other in queued


# --- accounting --------------------------------------------------------------------------------


def test_accounting_with_slurmdbd_up_records_the_test_job(
    idle_cluster: SlurmCluster, quick_polls: None
) -> None:
    """No other check ran a job: the check's own small job (srun, finding 1) is in sacct."""
    results = by_subject(slurm.check_accounting(make_run(idle_cluster)))
    assert results["slurmdbd"].outcome == "pass", results["slurmdbd"]
    assert results["job"].outcome == "pass", results["job"]
    assert "is in sacct as COMPLETED" in results["job"].detail


def test_accounting_with_slurmdbd_down_fails(idle_cluster: SlurmCluster) -> None:
    idle_cluster.stop_daemon("slurmdbd")
    try:
        [result] = slurm.check_accounting(make_run(idle_cluster))
    finally:
        idle_cluster.start_slurmdbd()
    assert result.outcome == "fail" and "slurmdbd does not answer" in result.detail

"""The Slurm checks of ``make verify`` driven end to end against a fake Slurm node.

``run.controller`` runs the rendered script with bash in a real subprocess whose PATH holds the
fake tools of ``fake_slurm/`` (sinfo, srun, sbatch, squeue, sacct, sacctmgr, scontrol, scancel,
fio, dd, nvidia-smi, fi_info, getent, all_reduce_perf); they keep their state in a folder per
test, so the scripts, their envelope and slurm.py's parsing are exercised together. The clock
and sleep of the run are fake: no test waits for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ec2_answers import G6E_48XLARGE, described, unknown
from ops_testkit import StubbedAws, environment
from support import real_tools

from hyperpod_ops.ssm import RemoteResult
from hyperpod_ops.verify import aws_checks, slurm
from hyperpod_ops.verify.model import Node, Options, Result, VerifyRun

FAKE = Path(__file__).resolve().parent / "fake_slurm"
DNS = "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"
MOUNT_NAME = "abcdefgh"
FSX_IP = "10.1.0.50"
NODES = ("ip-10-1-0-11", "ip-10-1-0-12")
OTHER_LINES = "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
SLURMDBD_CONFIG = "AccountingStorageType   = accounting_storage/slurmdbd\n"


def nccl_output(transport: str = "efa", busbw: float = 480.0) -> str:
    """nccl-tests all_reduce_perf output (NCCL_DEBUG=INFO) over 2 p5 nodes."""
    if transport == "efa":
        net = [
            "ip-10-1-0-11:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa "
            "(found 32 nics)",
            "ip-10-1-0-11:1:1 [0] NCCL INFO Using network Libfabric",
        ]
    else:
        net = [
            "ip-10-1-0-11:1:1 [0] NCCL INFO NET/Socket : Using [0]ens32:10.1.0.11<0>",
            "ip-10-1-0-11:1:1 [0] NCCL INFO Using network Socket",
        ]
    rows = []
    size = 8
    while size <= 16 * 1024**3:
        bw = busbw if size >= 2 * 1024**3 else 10.0
        rows.append(
            f"  {size:>12}  {size // 4:>12}  float  sum  -1  1000.0  {bw / 2:.2f}  {bw:.2f}  0"
            f"  1000.0  {bw / 2:.2f}  {bw:.2f}  0"
        )
        size *= 2
    ranks = [
        f"#  Rank {r:2d} Group  0 Pid   1000 on ip-10-1-0-1{1 + r // 8} device  {r % 8} [0x00] "
        "NVIDIA H100 80GB HBM3"
        for r in range(16)
    ]
    return "\n".join(
        [
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5",
            "#",
            "# Using devices",
            *ranks,
            *net,
            "#                                                              out-of-place"
            "                       in-place",
            "#       size         count      type   redop    root     time   algbw   busbw "
            "#wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
            "            (us)  (GB/s)  (GB/s)",
            *rows,
            "# Out of bounds values : 0 OK",
            f"# Avg bus bandwidth    : {busbw / 3:.2f}",
            "#",
        ]
    )


def lustre_line(mount: Path, source: str = f"{FSX_IP}@tcp:/{MOUNT_NAME}") -> str:
    """A /proc/mounts line of the file system: Lustre names its server by the NID it resolved."""
    return f"{source} {mount} lustre rw,relatime,flock,lazystatfs 0 0\n"


@dataclass
class FakeSlurm:
    """The fake node's state folder, and the switches the tests flip."""

    state: Path
    mount: Path
    fio: bool = True
    drop_envelope: bool = False
    calls: list[str] = field(default_factory=list)

    def write(self, name: str, text: str) -> None:
        path = self.state / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def touch(self, name: str) -> None:
        self.write(name, "")

    def log(self) -> str:
        path = self.state / "log"
        return path.read_text() if path.exists() else ""

    def env(self) -> dict[str, str]:
        """The fake tools, then links to the host's plain programs only (bash, coreutils,
        awk...): the host's own fio, srun or sinfo can never stand in for a fake."""
        path = [str(FAKE / "bin")]
        if self.fio:
            path.append(str(FAKE / "fio"))
        host = real_tools.only_tools(self.state.parent / "host-tools")
        return {
            **os.environ,
            "PATH": ":".join([*path, str(host)]),
            "FAKE_SLURM": str(self.state),
            "HPV_PROC_MOUNTS": str(self.state / "node" / "controller" / "mounts"),
        }

    def run_script(self, target: str, script: str, timeout: float) -> RemoteResult:
        """What the SSM transport gives: the script's output and exit status (or a problem)."""
        self.calls.append(script)
        try:
            proc = subprocess.run(
                ["bash", "-c", script],
                capture_output=True,
                text=True,
                env=self.env(),
                timeout=min(timeout, 60),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return RemoteResult(target, None, "", f"no result within {timeout:g} s")
        output = (proc.stdout + proc.stderr).strip("\n")
        if self.drop_envelope:
            # the session ended early: the last lines (the envelope's end) never arrived
            return RemoteResult(target, None, "\n".join(output.splitlines()[:1]), "cut short")
        return RemoteResult(target, proc.returncode, output)

    def controller(self, script: str, timeout: float) -> RemoteResult:
        return self.run_script("controller", script, timeout)

    def on_node(self, node: Node, script: str, timeout: float) -> RemoteResult:
        return self.run_script(node.label, script, timeout)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    """A healthy cluster: two idle p5 nodes in partition gpu, FSx mounted everywhere."""
    monkeypatch.setattr(slurm, "NCCL_OUTPUT_DIR", str(tmp_path))
    fake = FakeSlurm(tmp_path / "slurm", tmp_path / "fsx")
    fake.mount.mkdir()
    fake.write("nodes", "".join(f"{n}|gpu*|idle|gpu:8|none\n" for n in NODES))
    fake.write("config", SLURMDBD_CONFIG + "SLURM_CONF              = /nonexistent/slurm.conf\n")
    fake.write("hosts", f"{FSX_IP} {DNS}\n")
    fake.write("nccl_output", nccl_output())
    for node in ("controller", *NODES):
        fake.write(f"node/{node}/mounts", OTHER_LINES + lustre_line(fake.mount))
    return fake


@dataclass
class Clock:
    """A fake monotonic clock; sleeping moves it on."""

    now: float = 1000.0
    slept: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def make_run(
    fake: FakeSlurm, changes: dict[str, Any] | None = None, **options: Any
) -> tuple[VerifyRun, Clock]:
    clock = Clock()
    config = environment("default", {"storage.fsx.mount_path": str(fake.mount), **(changes or {})})
    run = VerifyRun(
        config=config,
        clients=lambda service: pytest.fail(f"no AWS call expected ({service})"),
        run_id="hpv-0123456789ab",
        options=Options(**options),
        cluster={"ClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123def456"},
        nodes=[
            Node("controller", "i-0c0000000000000001", "ml.m5.2xlarge", "Running"),
            Node("login", "i-0l0000000000000001", "ml.m5.4xlarge", "Running"),
            Node("gpu", "i-0g0000000000000001", "ml.p5.48xlarge", "Running"),
            Node("gpu", "i-0g0000000000000002", "ml.p5.48xlarge", "Running"),
        ],
        controller=fake.controller,
        on_node=fake.on_node,
        clock=clock,
        sleep=clock.sleep,
    )
    return run, clock


@pytest.fixture
def fsx_facts(monkeypatch: pytest.MonkeyPatch, fake: FakeSlurm) -> Callable[..., None]:
    """Make aws_checks.fsx_facts answer (the FSx API calls are aws_checks' own tests)."""

    def use(dra_paths: tuple[str, ...] = ("/datasets",)) -> None:
        facts = aws_checks.FsxFacts(
            file_system_id="fs-0123456789abcdef0",
            dns_name=DNS,
            mount_name=MOUNT_NAME,
            mount_path=str(fake.mount),
            capacity_gib=1200,
            throughput_per_tib=250,
            dra_paths=dra_paths,
        )
        monkeypatch.setattr(aws_checks, "fsx_facts", lambda run: facts)

    use()
    return use


def by_subject(results: list[Result]) -> dict[str | None, Result]:
    found = {r.subject: r for r in results}
    assert len(found) == len(results), results
    return found


# --- nodes ---------------------------------------------------------------------------------


def test_nodes_healthy_cluster_passes_with_figures(fake: FakeSlurm) -> None:
    run, _ = make_run(fake)
    results = by_subject(slurm.CHECKS["nodes"](run))
    assert results["controller"].outcome == "pass"
    assert "is UP" in results["controller"].detail
    assert results["gpu"].outcome == "pass", results["gpu"]
    assert results["gpu"].figures == {"nodes": 2, "idle": 2}
    login = results["login/i-0l0000000000000001"]
    assert login.outcome == "pass" and "answers" in login.detail
    assert "sbatch" not in fake.log() and "srun" not in fake.log()  # looking only


def test_nodes_a_drained_node_fails_naming_it_and_the_fix(fake: FakeSlurm) -> None:
    fake.write(
        "nodes",
        f"{NODES[0]}|gpu*|idle|gpu:8|none\n{NODES[1]}|gpu*|drained|gpu:8|Kill task failed\n",
    )
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["nodes"](run))["gpu"]
    assert result.outcome == "fail"
    assert f"{NODES[1]} (drained: Kill task failed)" in result.detail
    assert "1 of 2 nodes in partition gpu" in result.detail
    assert result.fix and f"scontrol show node {NODES[1]}" in result.fix
    assert "resume" not in fake.log() and "update" not in fake.log()  # never touches the node


@pytest.mark.parametrize("state", ["down*", "idle*", "mixed+drain", "idle~", "fail"])
def test_nodes_unusable_states(state: str) -> None:
    assert not slurm.SlurmNode("n", "p", state, "", "").usable


@pytest.mark.parametrize(
    "state",
    # planned: an idle node backfill keeps for a pending job; reserved: in an active reservation
    # (both Slurm 22.05 measured, 24.11 node_state_string); blocked: 24.11 only
    ["idle", "mixed", "allocated", "completing", "mixed-", "planned", "reserved", "blocked"],
)
def test_nodes_usable_states(state: str) -> None:
    assert slurm.SlurmNode("n", "p", state, "", "").usable


@pytest.mark.parametrize("state", ["planned", "reserved"])
def test_nodes_planned_and_reserved_nodes_pass_but_are_not_idle(
    fake: FakeSlurm, state: str
) -> None:
    fake.write("nodes", f"{NODES[0]}|gpu*|idle|gpu:8|none\n{NODES[1]}|gpu*|{state}|gpu:8|none\n")
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["nodes"](run))["gpu"]
    assert result.outcome == "pass", result
    assert result.figures == {"nodes": 2, "idle": 1}


def test_a_node_completing_its_last_job_is_waited_for(fake: FakeSlurm) -> None:
    """Right after a check's job the node is `completing` (its Epilog): the next check reads
    sinfo again until it is idle, not skip as "no idle node"."""
    fake.write("completing", "2")
    run, clock = make_run(fake)
    [result] = slurm.CHECKS["efa"](run)
    assert result.outcome == "pass", result
    assert clock.slept == [slurm.COMPLETING_POLL_SECONDS] * 2


def test_a_node_completing_for_too_long_is_waited_for_a_bounded_time(fake: FakeSlurm) -> None:
    fake.write("completing", "1000")
    run, clock = make_run(fake)
    [result] = slurm.CHECKS["efa"](run)
    assert result.outcome == "skip" and "no idle node in partition gpu" in result.detail
    assert sum(clock.slept) <= slurm.COMPLETING_WAIT_SECONDS
    assert "srun" not in fake.log()


def test_nodes_a_node_missing_from_slurm_fails_on_the_count(fake: FakeSlurm) -> None:
    fake.write("nodes", f"{NODES[0]}|gpu*|idle|gpu:8|none\n")
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["nodes"](run))["gpu"]
    assert result.outcome == "fail"
    assert "partition gpu has 1 Slurm nodes, HyperPod runs 2" in result.detail


def test_nodes_controller_down_fails(fake: FakeSlurm) -> None:
    fake.touch("ping_down")
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["nodes"](run))["controller"]
    assert result.outcome == "fail" and "DOWN" in result.detail
    assert result.fix and "slurmctld" in result.fix


def test_a_missing_envelope_is_a_failed_result_with_the_tail(fake: FakeSlurm) -> None:
    fake.drop_envelope = True
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["nodes"](run)
    assert result.outcome == "fail"
    assert "gave no result (cut short" in result.detail
    assert result.fix == slurm.CONTROLLER_FIX


# --- efa -----------------------------------------------------------------------------------


def test_efa_healthy_passes_and_runs_a_polite_job(fake: FakeSlurm) -> None:
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["efa"](run)
    assert result.outcome == "pass", result
    assert result.figures == {"nodes": 2, "efa_devices": 32}
    srun = next(line for line in fake.log().splitlines() if line.startswith("srun "))
    for option in (
        "--exclusive",
        "--nice=10000",
        "--job-name=hpv-0123456789ab-efa",
        f"--nodelist={NODES[0]},{NODES[1]}",
        "--time=5",
    ):
        assert option in srun
    # an sbatch-only option: real srun exits 255 on it (22.05 measured, 24.11 slurm_opt.c)
    assert "--no-requeue" not in srun
    assert [c.by_hand for c in run.made] == ["scancel --name hpv-0123456789ab-efa"]


def test_efa_a_missing_device_and_memlock_fail(fake: FakeSlurm) -> None:
    fake.write(f"node/{NODES[0]}/efa", "31")
    fake.write(f"node/{NODES[1]}/memlock", "8192")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["efa"](run)
    assert result.outcome == "fail"
    assert f"{NODES[0]}: 31 EFA devices" in result.detail
    assert f"{NODES[1]}: memlock 8192" in result.detail


def test_efa_a_node_that_gives_nothing_fails(fake: FakeSlurm) -> None:
    fake.touch(f"node/{NODES[1]}/down")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["efa"](run)
    assert result.outcome == "fail"
    assert f"gave nothing from {NODES[1]}" in result.detail


# --- containers ----------------------------------------------------------------------------


def test_containers_pass_with_all_gpus_and_the_mount(fake: FakeSlurm) -> None:
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["containers"](run)
    assert result.outcome == "pass", result
    assert result.figures == {"gpus": 8}
    srun = next(line for line in fake.log().splitlines() if line.startswith("srun "))
    assert "--container-image=public.ecr.aws#hpc-cloud/nccl-tests:sha256:" in srun
    assert f"--container-mounts={fake.mount}:{fake.mount}" in srun
    assert "--gpus-per-node=8" in srun  # the nodes schedule GPUs as GRES


def test_containers_too_few_gpus_fail(fake: FakeSlurm) -> None:
    fake.write(f"node/{NODES[0]}/gpus", "7")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["containers"](run)
    assert result.outcome == "fail" and "sees 7 GPUs" in result.detail


def test_containers_skip_in_a_closed_network(fake: FakeSlurm) -> None:
    run, _ = make_run(fake, {"network.closed_network": True})
    [result] = slurm.CHECKS["containers"](run)
    assert result.outcome == "skip" and "closed" in result.detail
    assert fake.calls == []


# --- nccl ----------------------------------------------------------------------------------


def test_nccl_two_idle_nodes_pass_and_the_job_is_as_asked(fake: FakeSlurm) -> None:
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["nccl"](run)
    assert result.outcome == "pass", result
    log = fake.log()
    sbatch = next(line for line in log.splitlines() if line.startswith("sbatch "))
    for option in (
        "--parsable",
        "--nodes=2",
        "--exclusive",
        "--ntasks-per-node=8",
        "--gpus-per-node=8",
        "--nice=10000",
        "--no-requeue",
        f"--nodelist={NODES[0]},{NODES[1]}",
    ):
        assert option in sbatch
    assert "env FI_PROVIDER=efa NCCL_DEBUG=INFO FI_EFA_USE_DEVICE_RDMA=1" in log
    script = (fake.state / "jobs" / "100.script").read_text()
    assert "--mpi=pmix" in script and "-b 8 -e 16G -f 2 -g 1" in script
    output = fake.state.parent / "hpv-0123456789ab-nccl-gpu-2.out"
    assert f"--output={output}" in sbatch
    assert not output.exists()  # read back and removed


def test_nccl_output_file_that_cannot_be_removed_is_not_reported_removed(
    fake: FakeSlurm,
) -> None:
    """The clean-up raises (so the runner prints the command to remove it by hand) when the job
    that reads and removes the output file does not run."""
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["nccl"](run)
    assert result.outcome == "pass", result
    [output] = [c for c in run.made if c.what.startswith("the NCCL job's output file")]
    fake.touch(f"node/{NODES[0]}/down")
    with pytest.raises(RuntimeError, match=f"cannot remove .*nccl-gpu-2.out on {NODES[0]}"):
        output.remove()
    assert output.by_hand.startswith(f"srun -w {NODES[0]} rm -f ")


def test_a_pending_job_has_no_batch_host_yet(fake: FakeSlurm) -> None:
    """squeue prints ``n/a`` as a pending job's batch host (22.05 measured, 24.11
    src/squeue/print.c); it is no host to run srun --nodelist on."""
    fake.touch("pending")
    run, _ = make_run(fake)
    job = subprocess.run(
        ["sbatch", "--parsable", "--job-name=x", f"--nodelist={NODES[0]}", "/dev/null"],
        env=fake.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert slurm.job_state(run, job, 1e9) == ("PENDING", None)


def test_nccl_all_nodes_is_reported_not_gated(fake: FakeSlurm) -> None:
    third = "ip-10-1-0-13"
    fake.write("nodes", "".join(f"{n}|gpu*|idle|gpu:8|none\n" for n in (*NODES, third)))
    fake.write("nccl_output", nccl_output(busbw=480.0))
    run, _ = make_run(fake, nccl_all_nodes=True)
    run.nodes.append(Node("gpu", "i-0g0000000000000003", "ml.p5.48xlarge", "Running"))
    gated, report = slurm.CHECKS["nccl"](run)
    assert gated.subject == "gpu" and gated.outcome == "pass"
    assert report.subject == "gpu (3 nodes)" and report.outcome == "pass"
    assert report.detail.startswith("reported, not gated")
    sbatch = [line for line in fake.log().splitlines() if line.startswith("sbatch ")]
    assert "--nodes=2" in sbatch[0] and f"--nodelist={NODES[0]},{NODES[1]},{third}" in sbatch[1]


def test_nccl_fewer_than_two_idle_nodes_skips(fake: FakeSlurm) -> None:
    fake.write("nodes", f"{NODES[0]}|gpu*|idle|gpu:8|none\n{NODES[1]}|gpu*|allocated|gpu:8|none\n")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["nccl"](run)
    assert result.outcome == "skip"
    assert "1 idle node in partition gpu" in result.detail
    assert "sbatch" not in fake.log()


def test_nccl_over_sockets_fails(fake: FakeSlurm) -> None:
    fake.write("nccl_output", nccl_output("socket"))
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["nccl"](run)
    assert result.outcome == "fail"
    assert "socket" in result.detail.lower()


def test_nccl_a_job_that_never_finishes_is_cancelled_at_the_deadline(fake: FakeSlurm) -> None:
    fake.touch("never_finish")
    run, clock = make_run(fake)
    [result] = slurm.CHECKS["nccl"](run)
    assert result.outcome == "fail"
    assert "did not finish within the check's 1800 s budget (cancelled)" in result.detail
    assert "scancel --name=hpv-0123456789ab-nccl" in fake.log()
    assert (fake.state / "jobs" / "100").read_text().startswith("hpv-0123456789ab-nccl|CANCELLED")
    assert clock.slept and all(s == slurm.POLL_SECONDS for s in clock.slept)
    assert clock.now <= 1000.0 + 1800


def test_nccl_sbatch_refused_fails_with_its_message(fake: FakeSlurm) -> None:
    fake.touch("sbatch_fail")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["nccl"](run)
    assert result.outcome == "fail"
    assert "Requested node configuration is not available" in result.detail


# --- instance types without a row in the gates table --------------------------------------


def other_type_run(fake: FakeSlurm, aws: StubbedAws, instance_type: str) -> VerifyRun:
    """The healthy cluster with its gpu nodes of ``instance_type``, and AWS stubbed."""
    run, _ = make_run(fake)
    run.clients = aws
    run.nodes = [
        Node(n.group, n.instance_id, instance_type, n.status) if n.group == "gpu" else n
        for n in run.nodes
    ]
    return run


def test_a_type_without_a_row_is_checked_with_the_facts_ec2_gives(
    fake: FakeSlurm, aws: StubbedAws
) -> None:
    described(aws, "ml.g6e.48xlarge", G6E_48XLARGE)  # one answer serves the whole run
    for node in NODES:
        fake.write(f"node/{node}/efa", "4")
    fake.write("nccl_output", nccl_output(busbw=45.0))
    run = other_type_run(fake, aws, "ml.g6e.48xlarge")
    [efa] = slurm.CHECKS["efa"](run)
    [containers] = slurm.CHECKS["containers"](run)
    [nccl] = slurm.CHECKS["nccl"](run)
    assert efa.outcome == "pass", efa
    assert efa.figures == {"nodes": 2, "efa_devices": 4}
    assert "4 EFA devices each (EFA interfaces from DescribeInstanceTypes)" in efa.detail
    assert containers.outcome == "pass", containers
    assert nccl.outcome == "pass", nccl
    # provisional floor: 0.8 x (4 cards x 100 Gbit/s / 8) = 40 GB/s
    assert nccl.figures["gate_gbps"] == 40.0 and nccl.figures["reference_gbps"] == 50.0
    assert "0.8 x 50 GB/s EFA rate, provisional" in nccl.detail
    assert all("gates table" not in r.detail for r in (efa, containers, nccl))
    assert "--gpus-per-node=8" in next(
        line for line in fake.log().splitlines() if line.startswith("sbatch ")
    )


def test_a_type_ec2_does_not_know_is_skipped_without_a_job(
    fake: FakeSlurm, aws: StubbedAws
) -> None:
    unknown(aws, "ml.p6e-gb200.36xlarge")
    run = other_type_run(fake, aws, "ml.p6e-gb200.36xlarge")
    [efa] = slurm.CHECKS["efa"](run)
    [nccl] = slurm.CHECKS["nccl"](run)
    for result in (efa, nccl):
        assert result.outcome == "skip" and result.subject == "gpu"
        assert result.detail.startswith(
            "ml.p6e-gb200.36xlarge is not in the gates table and EC2 does not know "
            "p6e-gb200.36xlarge (DescribeInstanceTypes: InvalidInstanceType"
        )
    assert "srun" not in fake.log() and "sbatch" not in fake.log()


# --- fsx -----------------------------------------------------------------------------------


def test_fsx_mounted_everywhere_and_fast_enough_passes(
    fake: FakeSlurm, fsx_facts: Callable[..., None]
) -> None:
    fake.write("fio_mbps", "200")
    run, _ = make_run(fake)
    results = by_subject(slurm.CHECKS["fsx"](run))
    assert results["mounts"].outcome == "pass", results["mounts"]
    assert results["mounts"].figures == {"nodes": 4}  # controller, login, 2 compute
    throughput = results["throughput"]
    assert throughput.outcome == "pass", throughput
    assert "fio" in throughput.detail and throughput.figures["clients"] == 2
    fio = [line for line in fake.log().splitlines() if line.startswith("fio ")]
    assert fio and all("--direct=1" in line and "--bs=1M" in line for line in fio)
    scratch = fake.mount / ".hyperpod-verify" / "hpv-0123456789ab"
    assert f"{scratch}/" in fio[0]
    folder = next(c for c in run.made if c.what == f"FSx test folder {scratch}")
    assert scratch.is_dir()
    folder.remove()
    assert not scratch.exists()


def test_fsx_mounted_from_another_file_system_fails(
    fake: FakeSlurm, fsx_facts: Callable[..., None]
) -> None:
    other = "fs-0fedcba9876543210.fsx.us-west-2.amazonaws.com@tcp:/zyxwvuts"
    fake.write(f"node/{NODES[1]}/mounts", lustre_line(fake.mount, other))
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["fsx"](run))["mounts"]
    assert result.outcome == "fail"
    assert f"{NODES[1]}: {other}" in result.detail
    assert NODES[0] not in result.detail


def test_fsx_without_fio_uses_direct_dd(fake: FakeSlurm, fsx_facts: Callable[..., None]) -> None:
    fake.fio = False
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["fsx"](run))["throughput"]
    assert result.outcome == "pass", result
    assert "dd" in result.detail
    dd = [line for line in fake.log().splitlines() if line.startswith("dd ")]
    assert any("oflag=direct" in line for line in dd)
    assert any("iflag=direct" in line for line in dd)


def test_fsx_slow_throughput_fails(fake: FakeSlurm, fsx_facts: Callable[..., None]) -> None:
    fake.write("fio_mbps", "50")  # 2 clients: 100 MB/s against a 293 MB/s baseline
    run, _ = make_run(fake)
    result = by_subject(slurm.CHECKS["fsx"](run))["throughput"]
    assert result.outcome == "fail"


def test_fsx_throughput_skips_under_a_dra(fake: FakeSlurm, fsx_facts: Callable[..., None]) -> None:
    fsx_facts(("/",))
    run, _ = make_run(fake)
    results = by_subject(slurm.CHECKS["fsx"](run))
    assert results["mounts"].outcome == "pass"
    assert results["throughput"].outcome == "skip"
    assert "exported to S3" in results["throughput"].detail
    assert not [line for line in fake.log().splitlines() if line.startswith("fio ")]


# --- accounting ----------------------------------------------------------------------------


def test_accounting_finds_the_efa_job_completed(fake: FakeSlurm) -> None:
    run, _ = make_run(fake)
    slurm.CHECKS["efa"](run)
    results = by_subject(slurm.CHECKS["accounting"](run))
    assert results["slurmdbd"].outcome == "pass"
    assert results["job"].outcome == "pass", results["job"]
    assert "test job 100 is in sacct as COMPLETED" in results["job"].detail


def test_accounting_job_not_completed_fails(fake: FakeSlurm) -> None:
    fake.write("sacct_state", "FAILED")
    run, _ = make_run(fake)
    results = by_subject(slurm.CHECKS["accounting"](run))
    assert results["job"].outcome == "fail"
    assert "as FAILED, not COMPLETED" in results["job"].detail
    assert "hpv-0123456789ab-accounting" in fake.log()  # its own small job


def test_accounting_a_test_job_that_cannot_run_fails(fake: FakeSlurm) -> None:
    """No other check ran a job and the accounting job does not run: a failure with srun's
    words, not a skip (a skip would let verify pass on a cluster where no job runs)."""
    fake.touch(f"node/{NODES[0]}/down")
    fake.touch(f"node/{NODES[1]}/down")
    run, _ = make_run(fake)
    results = by_subject(slurm.CHECKS["accounting"](run))
    assert results["job"].outcome == "fail", results["job"]
    assert "the test job gave nothing from" in results["job"].detail
    assert "Exited with exit code 1" in results["job"].detail


def test_accounting_skips_the_job_only_when_no_node_is_idle(fake: FakeSlurm) -> None:
    fake.write("nodes", "".join(f"{n}|gpu*|allocated|gpu:8|none\n" for n in NODES))
    run, _ = make_run(fake)
    results = by_subject(slurm.CHECKS["accounting"](run))
    assert results["job"].outcome == "skip"
    assert results["job"].detail == "no idle compute node for a test job"


def test_accounting_slurmdbd_down_fails(fake: FakeSlurm) -> None:
    fake.touch("slurmdbd_down")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["accounting"](run)
    assert result.outcome == "fail" and "slurmdbd does not answer" in result.detail


def test_accounting_not_configured_skips(fake: FakeSlurm) -> None:
    fake.write("config", "AccountingStorageType   = accounting_storage/none\n")
    run, _ = make_run(fake)
    [result] = slurm.CHECKS["accounting"](run)
    assert result.outcome == "skip"


def test_accounting_external_database_is_the_one_slurmdbd_uses(
    fake: FakeSlurm, tmp_path: Path
) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurmdbd.conf").write_text("StorageType=accounting_storage/mysql\nStorageHost=db.x\n")
    fake.write("config", SLURMDBD_CONFIG + f"SLURM_CONF              = {etc}/slurm.conf\n")
    run, _ = make_run(
        fake,
        {
            "cluster.slurm.accounting_database": True,
            "cluster.slurm.accounting_availability_zone_ids": ["usw2-az1", "usw2-az2"],
        },
    )
    run.cluster["Orchestrator"] = {"Slurm": {"AccountingDatabase": {"Endpoint": "db.y"}}}
    result = by_subject(slurm.CHECKS["accounting"](run))["database"]
    assert result.outcome == "fail"
    assert "slurmdbd talks to db.x, the deployed database is db.y" in result.detail
    run.cluster["Orchestrator"]["Slurm"]["AccountingDatabase"]["Endpoint"] = "db.x"
    result = by_subject(slurm.CHECKS["accounting"](run))["database"]
    assert result.outcome == "pass"


# --- leftovers and file access -------------------------------------------------------------


def test_leftovers_finds_the_runs_jobs_by_name_and_cancels_them(fake: FakeSlurm) -> None:
    fake.touch("never_finish")
    run, _ = make_run(fake)
    fake.write("jobs/7", "someone-else|RUNNING|0:0|ip-10-1-0-13")
    fake.write("jobs/8", "hpv-0123456789ab-nccl|RUNNING|0:0|ip-10-1-0-11,ip-10-1-0-12")
    fake.write("jobs/9", "hpv-0123456789ab-efa|COMPLETED|0:0|ip-10-1-0-11")
    found = slurm.leftovers(run)
    assert [c.by_hand for c in found] == ["scancel --name hpv-0123456789ab-nccl"]
    found[0].remove()
    assert (fake.state / "jobs" / "8").read_text().startswith("hpv-0123456789ab-nccl|CANCELLED")
    assert (fake.state / "jobs" / "7").read_text().startswith("someone-else|RUNNING")


def test_controller_fsx_writes_reads_and_removes_under_the_mount(
    fake: FakeSlurm, tmp_path: Path
) -> None:
    mount = tmp_path / "other-fsx"
    mount.mkdir()
    run, _ = make_run(fake)
    fsx = slurm.ControllerFsx(run, str(mount))
    fsx.write("/datasets/hpv/a b.bin", b"\x00\x01 data\n", 30)
    assert (mount / "datasets" / "hpv" / "a b.bin").read_bytes() == b"\x00\x01 data\n"
    assert fsx.read("/datasets/hpv/a b.bin", 30) == b"\x00\x01 data\n"
    fsx.remove("/datasets/hpv", 30)
    assert not (mount / "datasets" / "hpv").exists()
    assert fsx.read("/datasets/hpv/a b.bin", 30) is None
    with pytest.raises(ValueError):
        fsx.read("/../etc/passwd", 30)


def test_the_fake_srun_refuses_what_real_srun_refuses(fake: FakeSlurm) -> None:
    done = subprocess.run(
        ["srun", "--no-requeue", "true"], env=fake.env(), capture_output=True, text=True
    )
    assert done.returncode == 255
    assert "srun: unrecognized option '--no-requeue'" in done.stderr


def test_the_fake_node_offers_no_program_of_the_host_beyond_the_plain_ones(fake: FakeSlurm) -> None:
    """A fake is not bypassed: with fio off the fake node, no fio is found (whatever the host
    has installed), and no Slurm program but the fakes."""
    fake.fio = False
    path = fake.env()["PATH"]
    assert shutil.which("fio", path=path) is None
    assert shutil.which("srun", path=path) == str(FAKE / "bin" / "srun")
    assert shutil.which("sssctl", path=path) is None


def test_the_fake_node_has_every_tool_the_scripts_call() -> None:
    tools = {p.name for p in (FAKE / "bin").iterdir()} | {"fio"}
    for tool in ("sinfo", "srun", "sbatch", "squeue", "sacct", "sacctmgr", "scontrol", "scancel"):
        assert tool in tools
    assert shutil.which("bash")

"""The Slurm side of ``make verify``: node, EFA, container, NCCL, FSx and accounting checks run
through the controller node.

Every check runs a bash script on the controller over an SSM session (``run.controller``); the
compute nodes are reached through short Slurm jobs the controller submits, the login nodes
directly (``run.on_node``). The scripts are files of ``node/`` in this package: ``lib.sh`` (the
envelope helpers), then the script's ``HPV_*`` settings, then its body. The session's exit status
is all SSM gives back, so each script prints its own envelope (``HPV-BEGIN``/``HPV-END`` around
a command's output, one ``HPV-NODE`` line per node a job ran on, ``HPV-DONE`` last) and this
module reads it; an output without ``HPV-DONE`` is a failed result with its last lines.

It never disturbs work: jobs run on idle nodes only (sinfo state ``idle``), exclusive, low
priority (``--nice=10000``), short (``--time``), batch jobs not requeued (``sbatch
--no-requeue``; srun has no such option, in 22.05 and 24.11 alike), named ``<run id>-<check>`` and
registered with :meth:`VerifyRun.created` so the runner cancels them; it never drains, resumes
or reboots a node.

HyperPod names Slurm nodes by their private DNS host name (``ip-10-1-2-3``). This module does not
map them to instance ids (that takes one DescribeClusterNode call per node): it compares the
number of nodes per partition with the group's running nodes, and names an unusable node by its
Slurm name, which ``scontrol show node <name>`` and the HyperPod console both show.
"""

from __future__ import annotations

import base64
import math
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from hyperpod_cdk.config.cluster import InstanceGroup
from hyperpod_cdk.facts.gates import RDMA_FAMILIES
from hyperpod_ops.ssm import RemoteResult, describe_problem
from hyperpod_ops.verify import aws_checks, gates, instance_types, parsers
from hyperpod_ops.verify.model import (
    BUDGET_SECONDS,
    VERIFY_DIR,
    Check,
    Created,
    Node,
    Result,
    VerifyRun,
    failed,
    passed,
    skipped,
)

# Slurm node states (sinfo %T, lower case) in which a node takes or runs jobs; any other state
# or flag (drain, down, fail, not responding '*', powered down '~', maintenance '$', ...) makes
# it unusable. Slurm sinfo(1) "NODE STATE CODES". `planned` is an idle node the backfill
# scheduler keeps for a pending job (routine on a busy cluster), `reserved` a node in an active
# reservation (Slurm 22.05 measured, 24.11 src/common/slurm_protocol_defs.c node_state_string),
# `blocked` a node kept free for a job of another partition (24.11 only): healthy, not idle.
USABLE_STATES = frozenset(
    {"idle", "mixed", "allocated", "completing", "planned", "reserved", "blocked"}
)
# A node still running its last job's Epilog: sinfo says `completing` for a moment after every
# job (also after a check's own). The next check waits up to this long for it before it reads
# the idle nodes, so that it is not skipped as "no idle node".
COMPLETING_WAIT_SECONDS = 60.0
COMPLETING_POLL_SECONDS = 3.0
# State suffixes sinfo prints that do not keep a node from running jobs ('-': planned by the
# backfill scheduler).
HARMLESS_SUFFIXES = "-"
# Job states after which a job never runs again (squeue(1)/sacct(1) "JOB STATE CODES").
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
    }
)
# Seconds between two looks at a running job, and at a job slurmdbd has not recorded yet.
POLL_SECONDS = 15.0
ACCOUNTING_POLL_SECONDS = 5.0
# Job time limits (minutes): a device check, a container start (the image pull), an NCCL run.
SHORT_JOB_MINUTES = 5
CONTAINER_JOB_MINUTES = 15
NCCL_JOB_MINUTES = 20
# Seconds a job waits for its nodes (srun --immediate) before it gives up: a node that turned
# busy since sinfo was read is not waited for.
IMMEDIATE_SECONDS = 60
# Seconds a session may take beyond its job's time limit, and at least.
SESSION_SLACK_SECONDS = 90.0
MIN_SESSION_SECONDS = 30.0
# FSx throughput: clients, and how long each test should take at the baseline throughput.
FSX_MIN_CLIENTS = 2
FSX_MAX_CLIENTS = 4
FSX_TARGET_SECONDS = 30
FSX_MIN_FILE_MIB = 256
NODE_SCRIPTS = "node"
# Where the NCCL job writes its output on its batch host (read back and removed afterwards).
NCCL_OUTPUT_DIR = "/tmp"
CONTROLLER_FIX = (
    "check the controller node (make status CONFIG=<this file>, then an SSM session to it) and "
    "that slurmctld runs (systemctl status slurmctld), then retry make verify"
)

# The attribute that holds a run's test job ids on its VerifyRun (the model has no field for
# what one check hands another): the accounting check looks them up in sacct.
_JOBS_ATTRIBUTE = "slurm.test_jobs"  # VerifyRun.shared key


# --- scripts and their envelope ------------------------------------------------------------


def node_script(name: str) -> str:
    """The text of ``node/<name>`` in this package."""
    return (resources.files(__package__) / NODE_SCRIPTS / name).read_text()


def render(name: str, **settings: object) -> str:
    """The bash script that runs ``node/<name>.sh``: the envelope helpers, ``settings`` as
    exported ``HPV_<KEY>`` variables (quoted), then the script."""
    lines = [node_script("lib.sh")]
    for key, value in settings.items():
        var = f"HPV_{key.upper()}"
        lines.append(f"{var}={shlex.quote(str(value))}\nexport {var}\n")
    lines.append(node_script(f"{name}.sh"))
    return "\n".join(lines)


@dataclass
class Envelope:
    """What a script printed: its sections (name -> exit code, text), its ``HPV-NODE`` lines
    (host -> fields) and its other ``HPV-<WORD>`` lines."""

    sections: dict[str, tuple[int, str]] = field(default_factory=dict)
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    marks: list[str] = field(default_factory=list)

    def text(self, section: str) -> str:
        """The section's output ('' when absent)."""
        return self.sections.get(section, (1, ""))[1]

    def ok(self, section: str) -> bool:
        """The section ran and exited 0."""
        return section in self.sections and self.sections[section][0] == 0


_BEGIN = re.compile(r"^HPV-BEGIN (\S+)\s*$")
_END = re.compile(r"^HPV-END (\S+) (\d+)\s*$")


def parse_envelope(output: str) -> Envelope | None:
    """The envelope in a script's output; None when ``HPV-DONE`` is missing (it did not finish).

    ``HPV-NODE`` lines are read wherever they are (inside a job's section too), since a job's
    tasks print them through srun.
    """
    lines = output.replace("\r\n", "\n").split("\n")
    if not any(line.strip() == "HPV-DONE" for line in lines):
        return None
    envelope = Envelope()
    current: str | None = None
    body: list[str] = []
    for line in lines:
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin and current is None:
            current, body = begin.group(1), []
        elif end and current is not None and current == end.group(1):
            text = "\n".join(body[:-1] if body and body[-1] == "" else body)
            envelope.sections[current] = (int(end.group(2)), text)
            current = None
        elif current is not None:
            body.append(line)
        if line.startswith("HPV-NODE "):
            host, fields = _node_line(line)
            envelope.nodes[host] = fields
        elif current is None and line.startswith("HPV-") and not (begin or end):
            envelope.marks.append(line.strip())
    return envelope


def _node_line(line: str) -> tuple[str, dict[str, str]]:
    """``HPV-NODE host k=v k=v`` -> host and fields (task output may carry a srun prefix)."""
    words = line[line.index("HPV-NODE ") :].split()
    fields = dict(w.split("=", 1) for w in words[2:] if "=" in w)
    return (words[1] if len(words) > 1 else "?"), fields


def _decoded(value: str | None) -> str:
    """A base64 field's text ('' when absent or not base64)."""
    try:
        return base64.b64decode(value or "", validate=True).decode("utf-8", "replace")
    except ValueError:
        return ""


def _remaining(run: VerifyRun, deadline: float) -> float:
    return max(0.0, deadline - run.clock())


def _session_timeout(run: VerifyRun, deadline: float, job_minutes: float = 1) -> float:
    """A session's timeout: the job's time limit plus slack, within the check's deadline."""
    wanted = job_minutes * 60 + SESSION_SLACK_SECONDS
    return max(MIN_SESSION_SECONDS, min(wanted, _remaining(run, deadline)))


def _on_controller(
    run: VerifyRun, name: str, timeout: float, **settings: object
) -> tuple[Envelope | None, RemoteResult]:
    """Run ``node/<name>.sh`` on the controller: its envelope (None: none) and raw result."""
    if run.controller is None:
        result = RemoteResult("controller", None, "", "no session to the controller node")
        return None, result
    result = run.controller(render(name, **settings), timeout)
    return parse_envelope(result.output), result


def _no_answer(check: str, what: str, result: RemoteResult, subject: str | None = None) -> Result:
    """A failed result for a script that gave no envelope (timeout, no session, cut short)."""
    return failed(
        check,
        f"{what} gave no result ({describe_problem(result)})",
        CONTROLLER_FIX,
        subject,
    )


# --- what Slurm says about its nodes --------------------------------------------------------


@dataclass(frozen=True)
class SlurmNode:
    """One line of ``sinfo -N -o '%N|%P|%T|%G|%E'``: a node in one partition."""

    name: str
    partition: str
    state: str
    gres: str
    reason: str

    @property
    def usable(self) -> bool:
        """It takes or runs jobs: every part of its state is usable, no flag but planned."""
        base = self.state.lower().rstrip(HARMLESS_SUFFIXES)
        if not base or not base[-1].isalpha():
            return False  # a flag such as '*' (not responding), '~' (powered off), '$', '@'
        return all(part in USABLE_STATES for part in base.split("+"))

    @property
    def idle(self) -> bool:
        """Idle with no flag: a test job takes nothing from anyone."""
        return self.state.lower() == "idle"

    @property
    def completing(self) -> bool:
        """Still ending a job (its Epilog runs): idle again in a moment."""
        return "completing" in self.state.lower().rstrip(HARMLESS_SUFFIXES).split("+")

    @property
    def gres_gpus(self) -> bool:
        """Slurm schedules its GPUs as GRES (jobs must ask for them)."""
        return "gpu" in self.gres.lower()

    def describe(self) -> str:
        """``ip-10-1-2-3 (drained: Kill task failed)``."""
        reason = f": {self.reason}" if self.reason and self.reason != "none" else ""
        return f"{self.name} ({self.state.lower()}{reason})"


def parse_sinfo(text: str) -> list[SlurmNode]:
    """The nodes in ``sinfo -N -h -o '%N|%P|%T|%G|%E'`` (the default partition's ``*`` dropped)."""
    found = []
    for line in text.splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) < 4:
            continue
        name, partition, state, gres = (p.strip() for p in parts[:4])
        reason = parts[4].strip() if len(parts) > 4 else ""
        found.append(SlurmNode(name, partition.rstrip("*"), state, gres, reason))
    return found


def compute_groups(run: VerifyRun) -> list[InstanceGroup]:
    """The config's Compute groups."""
    return [g for g in run.config.cluster.instance_groups if g.effective_node_type == "Compute"]


def _partition(group: InstanceGroup) -> str:
    return group.effective_partition or group.name


def group_type(run: VerifyRun, group: InstanceGroup) -> str | None:
    """The instance type of the group's running nodes (the config's when none runs); None when
    they run several types (flexible instance types), which one partition then mixes."""
    types = {n.instance_type for n in run.group_nodes(group.name)}
    if len(types) == 1:
        return types.pop()
    if not types:
        return group.instance_type
    return None


def _read_sinfo(run: VerifyRun, check: str, deadline: float) -> list[SlurmNode] | Result:
    """The nodes as Slurm sees them, or a failed result (no answer, sinfo failed). While a node
    of a Compute partition is still ``completing`` (the previous check's job in its Epilog), it
    reads again, for up to :data:`COMPLETING_WAIT_SECONDS`."""
    wait_until = min(deadline, run.clock() + COMPLETING_WAIT_SECONDS)
    partitions = set(_partitions(run))
    while True:
        envelope, result = _on_controller(run, "nodes", _session_timeout(run, deadline))
        if envelope is None:
            return _no_answer(check, "sinfo on the controller", result)
        if not envelope.ok("sinfo"):
            return failed(
                check,
                f"sinfo failed on the controller: {envelope.text('sinfo').strip()[-200:]}",
                CONTROLLER_FIX,
            )
        nodes = parse_sinfo(envelope.text("sinfo"))
        completing = [n for n in nodes if n.partition in partitions and n.completing]
        if not completing or run.clock() + COMPLETING_POLL_SECONDS > wait_until:
            return nodes
        run.sleep(COMPLETING_POLL_SECONDS)


def idle_nodes(nodes: Iterable[SlurmNode], partition: str) -> list[SlurmNode]:
    """The idle nodes of ``partition``, by name."""
    return sorted((n for n in nodes if n.partition == partition and n.idle), key=lambda n: n.name)


# --- jobs -----------------------------------------------------------------------------------


def job_name(run: VerifyRun, check: str) -> str:
    """``<run id>-<check>``: the name of every job a check submits."""
    return f"{run.run_id}-{check}"


def cancel_jobs(run: VerifyRun, name: str) -> None:
    """``scancel --name <name>`` on the controller; raises when it cannot be done."""
    envelope, result = _on_controller(run, "cancel", 60, job_name=name)
    if envelope is None or not envelope.ok("scancel"):
        tail = envelope.text("scancel") if envelope else describe_problem(result)
        raise RuntimeError(f"scancel --name {name} failed: {tail.strip()[-200:]}")


def _register_job(run: VerifyRun, name: str) -> None:
    """Register the run's jobs named ``name`` once (the runner cancels them at the end)."""
    what = f"Slurm jobs named {name}"
    if any(c.what == what for c in run.made):
        return
    run.created(what, lambda: cancel_jobs(run, name), f"scancel --name {name}")


def run_jobs(run: VerifyRun) -> list[str]:
    """The ids of the test jobs this run's checks ran, in order."""
    jobs: list[str] = run.shared.setdefault(_JOBS_ATTRIBUTE, [])
    return jobs


def _record_job(run: VerifyRun, job_id: str | None) -> None:
    if job_id and job_id != "none" and job_id not in run_jobs(run):
        run_jobs(run).append(job_id)


def _run_job(
    run: VerifyRun,
    check: str,
    task: str,
    partition: str,
    nodes: Sequence[SlurmNode],
    deadline: float,
    minutes: int = SHORT_JOB_MINUTES,
    extra: Sequence[str] = (),
    **settings: object,
) -> tuple[Envelope | None, RemoteResult]:
    """One exclusive job running ``task`` (tasks.sh) once on each of ``nodes``."""
    name = job_name(run, check)
    _register_job(run, name)
    return _on_controller(
        run,
        "job",
        _session_timeout(run, deadline, minutes),
        job_name=name,
        partition=partition,
        nodelist=",".join(n.name for n in nodes),
        nodes=len(nodes),
        time_min=minutes,
        immediate=IMMEDIATE_SECONDS,
        task=task,
        task_script=node_script("tasks.sh"),
        srun_extra=" ".join(extra),
        **settings,
    )


def _job_answer(
    run: VerifyRun,
    check: str,
    task: str,
    what: str,
    subject: str,
    partition: str,
    nodes: Sequence[SlurmNode],
    deadline: float,
    minutes: int = SHORT_JOB_MINUTES,
    extra: Sequence[str] = (),
    **settings: object,
) -> Envelope | Result:
    """:func:`_run_job`, then its envelope with a line from every node; else the failed result:
    no envelope (:func:`_no_answer`, naming ``what``) or a node without a line
    (:func:`_job_failed`)."""
    envelope, result = _run_job(
        run, check, task, partition, nodes, deadline, minutes, extra, **settings
    )
    if envelope is None:
        return _no_answer(check, what, result, subject)
    return _job_failed(check, subject, envelope, nodes) or envelope


def _missing_nodes(envelope: Envelope, nodes: Sequence[SlurmNode]) -> list[str]:
    return [n.name for n in nodes if n.name not in envelope.nodes]


def _job_failed(
    check: str, subject: str, envelope: Envelope, nodes: Sequence[SlurmNode]
) -> Result | None:
    """A failed result when some node printed no line (the job did not start or run there)."""
    missing = _missing_nodes(envelope, nodes)
    if not missing:
        return None
    tail = " | ".join(line for line in envelope.text("job").splitlines() if line.strip())[-300:]
    return failed(
        check,
        f"the test job gave nothing from {', '.join(missing)} "
        f"(srun exit {envelope.sections.get('job', (None,))[0]}: {tail or 'no output'})",
        "see why the job did not run with sacct -S today --name "
        f"<run id>-{check} on the controller; a node that turned busy is not waited for: retry",
        subject,
    )


# --- nodes ----------------------------------------------------------------------------------


def check_nodes(run: VerifyRun) -> list[Result]:
    """Every running compute node in its partition and usable, the controller and login nodes
    answer."""
    deadline = run.deadline("nodes")
    envelope, result = _on_controller(run, "nodes", _session_timeout(run, deadline))
    if envelope is None:
        return [_no_answer("nodes", "the controller", result, "controller")]
    results = [_controller_result(envelope)]
    if not envelope.ok("sinfo"):
        results.append(
            failed(
                "nodes",
                f"sinfo failed on the controller: {envelope.text('sinfo').strip()[-200:]}",
                CONTROLLER_FIX,
            )
        )
        return results
    slurm_nodes = parse_sinfo(envelope.text("sinfo"))
    for partition, groups in _partitions(run).items():
        results.append(_partition_result(run, partition, groups, slurm_nodes))
    results.extend(_login_results(run, deadline))
    return results


def _controller_result(envelope: Envelope) -> Result:
    text = envelope.text("ping").strip()
    if envelope.ok("ping") and "UP" in text and "DOWN" not in text:
        return passed("nodes", f"slurmctld answers ({text.splitlines()[0]})", "controller")
    return failed(
        "nodes",
        f"scontrol ping: {text or 'no answer'}",
        CONTROLLER_FIX,
        "controller",
    )


def _partitions(run: VerifyRun) -> dict[str, list[InstanceGroup]]:
    """Partition -> the Compute groups in it (several groups may share one)."""
    found: dict[str, list[InstanceGroup]] = {}
    for group in compute_groups(run):
        found.setdefault(_partition(group), []).append(group)
    return found


def _partition_result(
    run: VerifyRun, partition: str, groups: list[InstanceGroup], slurm_nodes: list[SlurmNode]
) -> Result:
    subject = ",".join(g.name for g in groups)
    running = sum(len(run.group_nodes(g.name)) for g in groups)
    in_partition = [n for n in slurm_nodes if n.partition == partition]
    unusable = [n for n in in_partition if not n.usable]
    idle = sum(1 for n in in_partition if n.idle)
    if unusable:
        names = ", ".join(n.describe() for n in unusable)
        return failed(
            "nodes",
            f"{len(unusable)} of {len(in_partition)} nodes in partition {partition} are not "
            f"usable: {names}",
            f"see why with scontrol show node {unusable[0].name} on the controller; HyperPod "
            "replaces a node that fails its health checks (make status CONFIG=<this file>), or "
            "replace it with aws sagemaker batch-replace-cluster-nodes",
            subject,
            nodes=len(in_partition),
            unusable=len(unusable),
        )
    if len(in_partition) != running:
        return failed(
            "nodes",
            f"partition {partition} has {len(in_partition)} Slurm nodes, HyperPod runs {running} "
            f"nodes of {subject}",
            "a node that has not joined Slurm yet shows as missing: wait for HyperPod to finish "
            "(make status CONFIG=<this file>), then check the node's lifecycle log in CloudWatch "
            "(/aws/sagemaker/Clusters/<cluster>/<id>)",
            subject,
            nodes=len(in_partition),
            running=running,
        )
    return passed(
        "nodes",
        f"{running} of {running} nodes usable in partition {partition} ({idle} idle)",
        subject,
        nodes=running,
        idle=idle,
    )


def _login_results(run: VerifyRun, deadline: float) -> list[Result]:
    login = _login_nodes(run)
    if login and run.on_node is None:
        return [skipped("nodes", "no session to the login nodes was given", "login")]
    results = []
    for node in login:
        assert run.on_node is not None
        answer = run.on_node(node, render("login"), _session_timeout(run, deadline))
        envelope = parse_envelope(answer.output)
        if envelope is None or not envelope.nodes:
            results.append(
                failed(
                    "nodes",
                    f"the login node gave no answer ({describe_problem(answer)})",
                    "check the node with make status CONFIG=<this file> and that its SSM agent "
                    "runs; HyperPod replaces an unhealthy node",
                    node.label,
                )
            )
        else:
            host = next(iter(envelope.nodes))
            results.append(passed("nodes", f"the login node answers as {host}", node.label))
    return results


# --- efa ------------------------------------------------------------------------------------


def _facts_or_skip(
    run: VerifyRun, check: str, group: InstanceGroup
) -> tuple[gates.InstanceFacts | None, Result | None]:
    """The group's instance facts, or the skip that says why there are none."""
    instance_type = group_type(run, group)
    if instance_type is None:
        return None, skipped(check, "the group runs several instance types", group.name)
    known = instance_types.lookup(run, instance_type)
    if known.facts is None:
        return None, skipped(check, known.reason, group.name)
    return known.facts, None


def check_efa(run: VerifyRun) -> list[Result]:
    """On the idle nodes of each EFA group: the EFA device count, the efa provider, and memlock
    unlimited inside a job."""
    deadline = run.deadline("efa")
    slurm_nodes = _read_sinfo(run, "efa", deadline)
    if isinstance(slurm_nodes, Result):
        return [slurm_nodes]
    results = []
    for group in compute_groups(run):
        facts, skip = _facts_or_skip(run, "efa", group)
        if facts is None:
            results.append(skip or skipped("efa", "no facts", group.name))
        elif facts.efa_interfaces == 0:
            results.append(
                skipped(
                    "efa",
                    f"{facts.instance_type} has no EFA ({instance_types.source_note(facts)})",
                    group.name,
                )
            )
        else:
            results.append(_efa_group(run, group, facts, slurm_nodes, deadline))
    return results


def _efa_group(
    run: VerifyRun,
    group: InstanceGroup,
    facts: gates.InstanceFacts,
    slurm_nodes: list[SlurmNode],
    deadline: float,
) -> Result:
    idle = idle_nodes(slurm_nodes, _partition(group))
    if not idle:
        return skipped("efa", f"no idle node in partition {_partition(group)}", group.name)
    envelope = _job_answer(
        run, "efa", "efa", "the EFA job", group.name, _partition(group), idle, deadline
    )
    if isinstance(envelope, Result):
        return envelope
    bad = []
    for node in idle:
        fields = envelope.nodes[node.name]
        _record_job(run, fields.get("job"))
        devices = int(fields.get("efa", "0") or 0)
        if devices != facts.efa_interfaces or fields.get("provider") != "efa":
            bad.append(f"{node.name}: {devices} EFA devices, provider {fields.get('provider')}")
        elif fields.get("memlock") != "unlimited":
            bad.append(f"{node.name}: memlock {fields.get('memlock')} in a job")
    if bad:
        return failed(
            "efa",
            f"expected {facts.efa_interfaces} EFA devices ({instance_types.source_note(facts)}; "
            "provider efa, memlock unlimited): " + "; ".join(bad),
            "check the node's EFA driver (fi_info -p efa) and that the group's instance type "
            "has network_interface efa; memlock: slurmd's LimitMEMLOCK=infinity and "
            "PropagateResourceLimitsExcept=MEMLOCK in slurm.conf",
            group.name,
            nodes=len(idle),
            bad=len(bad),
        )
    return passed(
        "efa",
        f"{len(idle)} idle nodes: {facts.efa_interfaces} EFA devices each "
        f"({instance_types.source_note(facts)}), provider efa, memlock unlimited",
        group.name,
        nodes=len(idle),
        efa_devices=facts.efa_interfaces,
    )


# --- containers -----------------------------------------------------------------------------


def _image_skip(run: VerifyRun) -> str | None:
    """Why the pinned test image cannot be pulled, or None."""
    if run.config.network.closed_network:
        return (
            "the network is closed (network.closed_network) and no registry holds the test "
            f"image {gates.test_image()}"
        )
    return None


def _mount_path(run: VerifyRun) -> str | None:
    fsx = run.config.storage.fsx
    return str(fsx.mount_path) if fsx.enabled else None


def check_containers(run: VerifyRun) -> list[Result]:
    """On one idle node of each GPU group: pyxis/enroot start the pinned image with all GPUs and
    the FSx mount inside."""
    deadline = run.deadline("containers")
    skip_reason = _image_skip(run)
    if skip_reason:
        return [skipped("containers", skip_reason, g.name) for g in compute_groups(run)]
    slurm_nodes = _read_sinfo(run, "containers", deadline)
    if isinstance(slurm_nodes, Result):
        return [slurm_nodes]
    results = []
    for group in compute_groups(run):
        facts, skip = _facts_or_skip(run, "containers", group)
        if facts is None:
            results.append(skip or skipped("containers", "no facts", group.name))
        elif facts.accelerator != "nvidia":
            results.append(
                skipped("containers", f"{facts.instance_type} has no NVIDIA GPU", group.name)
            )
        else:
            results.append(_containers_group(run, group, facts, slurm_nodes, deadline))
    return results


def _containers_group(
    run: VerifyRun,
    group: InstanceGroup,
    facts: gates.InstanceFacts,
    slurm_nodes: list[SlurmNode],
    deadline: float,
) -> Result:
    idle = idle_nodes(slurm_nodes, _partition(group))[:1]
    if not idle:
        return skipped("containers", f"no idle node in partition {_partition(group)}", group.name)
    mount = _mount_path(run)
    extra = [f"--container-image={gates.enroot_image(gates.test_image())}"]
    if mount:
        extra.append(f"--container-mounts={mount}:{mount}")
    if idle[0].gres_gpus:
        extra.append(f"--gpus-per-node={facts.accelerators}")
    envelope = _job_answer(
        run,
        "containers",
        "containers",
        "the container job",
        group.name,
        _partition(group),
        idle,
        deadline,
        CONTAINER_JOB_MINUTES,
        extra,
        mount=mount or "",
    )
    if isinstance(envelope, Result):
        return envelope
    fields = envelope.nodes[idle[0].name]
    _record_job(run, fields.get("job"))
    gpus = int(fields.get("gpus", "0") or 0)
    if gpus != facts.accelerators:
        return failed(
            "containers",
            f"the container on {idle[0].name} sees {gpus} GPUs, {facts.instance_type} has "
            f"{facts.accelerators}",
            "check pyxis' enroot hooks for NVIDIA (enroot's 98-nvidia.sh, nvidia-container-cli) "
            "and the node's driver (nvidia-smi on the node)",
            group.name,
            gpus=gpus,
            expected=facts.accelerators,
        )
    if mount and fields.get("fsx") != "yes":
        return failed(
            "containers",
            f"the container on {idle[0].name} does not see the FSx mount {mount}",
            f"check that {mount} is mounted on the node (the fsx check) and pyxis' "
            "--container-mounts",
            group.name,
            gpus=gpus,
        )
    inside = f" and {mount}" if mount else ""
    return passed(
        "containers",
        f"the test image starts on {idle[0].name} with {gpus} GPUs{inside}",
        group.name,
        gpus=gpus,
    )


# --- nccl -----------------------------------------------------------------------------------


def _nccl_groups(
    run: VerifyRun,
) -> Iterable[
    tuple[InstanceGroup, gates.InstanceFacts | None, gates.NcclGate | None, Result | None]
]:
    for group in compute_groups(run):
        facts, skip = _facts_or_skip(run, "nccl", group)
        if facts is None:
            yield group, None, None, skip
            continue
        gate = gates.nccl_gate(facts.instance_type, facts)
        if facts.accelerator != "nvidia" or facts.efa_interfaces == 0 or gate is None:
            note = instance_types.source_note(facts, "its GPUs and EFA interfaces")
            yield (
                group,
                facts,
                None,
                skipped(
                    "nccl",
                    f"NCCL over EFA does not apply to {facts.instance_type} ({note})",
                    group.name,
                ),
            )
            continue
        yield group, facts, gate, None


def check_nccl(run: VerifyRun) -> list[Result]:
    """``all_reduce_perf`` on exactly 2 idle nodes of each NVIDIA EFA group, gated; with
    ``nccl_all_nodes`` also on all its idle nodes, reported only."""
    deadline = run.deadline("nccl")
    skip_reason = _image_skip(run)
    if skip_reason:
        return [skipped("nccl", skip_reason, g.name) for g in compute_groups(run)]
    slurm_nodes = _read_sinfo(run, "nccl", deadline)
    if isinstance(slurm_nodes, Result):
        return [slurm_nodes]
    results = []
    for group, facts, gate, skip in _nccl_groups(run):
        if facts is None or gate is None:
            results.append(skip or skipped("nccl", "does not apply", group.name))
            continue
        idle = idle_nodes(slurm_nodes, _partition(group))
        if len(idle) < 2:
            results.append(
                skipped(
                    "nccl",
                    f"{len(idle)} idle node in partition {_partition(group)}; "
                    "a 2-node test needs 2",
                    group.name,
                )
            )
            continue
        outcome = _nccl_run(run, group, facts, idle[:2], deadline)
        results.append(_nccl_result(group, gate, outcome))
        if run.options.nccl_all_nodes and len(idle) > 2:
            outcome = _nccl_run(run, group, facts, idle, deadline)
            results.append(_nccl_report(group, gate, outcome, len(idle)))
    return results


@dataclass(frozen=True)
class JobOutcome:
    """A batch job's end: its id, final state (None: it did not end in time), output, problem."""

    job_id: str | None
    state: str | None
    output: str
    problem: str | None = None
    fix: str | None = None


def _nccl_run(
    run: VerifyRun,
    group: InstanceGroup,
    facts: gates.InstanceFacts,
    nodes: Sequence[SlurmNode],
    deadline: float,
) -> JobOutcome:
    name = job_name(run, "nccl")
    output_file = f"{NCCL_OUTPUT_DIR}/{name}-{group.name}-{len(nodes)}.out"
    _register_job(run, name)
    _register_output(run, name, _partition(group), output_file, nodes[0])
    envelope, result = _on_controller(
        run,
        "nccl_submit",
        _session_timeout(run, deadline),
        job_name=name,
        partition=_partition(group),
        nodelist=",".join(n.name for n in nodes),
        nodes=len(nodes),
        gpus=facts.accelerators,
        gres_gpus=int(nodes[0].gres_gpus),
        time_min=NCCL_JOB_MINUTES,
        image=gates.enroot_image(gates.test_image()),
        rdma=int(facts.instance_type.startswith(RDMA_FAMILIES)),
        nccl_bin=gates.ALL_REDUCE_PERF,
        output=output_file,
    )
    if envelope is None:
        return JobOutcome(None, None, "", f"sbatch gave no result ({describe_problem(result)})")
    submitted = envelope.text("submit").strip().splitlines()
    job_id = submitted[-1].split(";")[0].strip() if submitted else ""
    if not envelope.ok("submit") or not job_id.isdigit():
        return JobOutcome(None, None, "", f"sbatch failed: {' | '.join(submitted)[-300:]}")
    _record_job(run, job_id)
    state, host = wait_for_job(run, job_id, deadline)
    if state is None:
        return _cancelled(run, name, job_id, deadline)
    text = _job_output(run, name, _partition(group), host or nodes[0].name, output_file)
    return JobOutcome(job_id, state, text)


def _register_output(run: VerifyRun, name: str, partition: str, path: str, node: SlurmNode) -> None:
    """Register the NCCL job's output file on its (likely) batch host, the first node."""

    def remove() -> None:
        ok, text = _read_output(run, name, partition, node.name, path)
        if not ok:
            raise RuntimeError(f"cannot remove {path} on {node.name}: {text.strip()[-200:]}")

    run.created(
        f"the NCCL job's output file {path} on {node.name}",
        remove,
        f"srun -w {node.name} rm -f {path}",
    )


def _cancelled(run: VerifyRun, name: str, job_id: str, deadline: float) -> JobOutcome:
    """The job did not end by the deadline: cancel it now, say so."""
    try:
        cancel_jobs(run, name)
        cancelled = "cancelled"
    except RuntimeError as exc:
        cancelled = f"not cancelled: {exc}"
    budget = BUDGET_SECONDS["nccl"]
    return JobOutcome(
        job_id,
        None,
        "",
        f"job {job_id} did not finish within the check's {budget} s budget ({cancelled})",
        "see why with sacct -j <id> and squeue on the controller (pending: the nodes turned busy;"
        " running: NCCL hung, see the job's output); retry when the nodes are idle",
    )


def wait_for_job(run: VerifyRun, job_id: str, deadline: float) -> tuple[str | None, str | None]:
    """Poll the job until it ends or ``deadline``: its final state (None: not ended) and batch
    host (None: not seen)."""
    host: str | None = None
    while True:
        state, seen_host = job_state(run, job_id, deadline)
        host = seen_host or host
        if state in FINAL_STATES:
            return state, host
        if run.clock() + POLL_SECONDS >= deadline:
            return None, host
        run.sleep(POLL_SECONDS)


def job_state(run: VerifyRun, job_id: str, deadline: float) -> tuple[str | None, str | None]:
    """The job's state and batch host: squeue while slurmctld holds it, else sacct's record."""
    envelope, _ = _on_controller(run, "job_state", _session_timeout(run, deadline), job_id=job_id)
    if envelope is None:
        return None, None
    queued = envelope.text("squeue").strip().splitlines()
    if envelope.ok("squeue") and queued:
        state, _, host = queued[0].partition("|")
        # a pending job's %B is "n/a" (Slurm 22.05 measured; 24.11 src/squeue/print.c
        # _print_job_batch_host): no host yet
        host = host.strip()
        return state.strip().upper(), (host if host and host != "n/a" else None)
    for line in envelope.text("sacct").splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0] == job_id:
            return parts[1].split()[0].upper(), None  # "CANCELLED by 0"
    return None, None


def _job_output(run: VerifyRun, name: str, partition: str, host: str, path: str) -> str:
    """The job's output file on its batch host (read and removed by a one-node job)."""
    return _read_output(run, name, partition, host, path)[1]


def _read_output(
    run: VerifyRun, name: str, partition: str, host: str, path: str
) -> tuple[bool, str]:
    """Read and remove the job's output file on ``host``: whether that job ran to its end (exit
    0: the file is gone), and what it printed (the file, or why it did not run)."""
    settings: dict[str, object] = {"job_name": name, "host": host, "output": path}
    settings["partition"] = partition
    envelope, result = _on_controller(run, "job_output", 180, **settings)
    if envelope is None:
        return False, result.output or describe_problem(result)
    return envelope.ok("output"), envelope.text("output")


def _nccl_result(group: InstanceGroup, gate: gates.NcclGate, outcome: JobOutcome) -> Result:
    if outcome.problem:
        return failed(
            "nccl",
            outcome.problem,
            outcome.fix or CONTROLLER_FIX,
            group.name,
        )
    decision = gates.decide_nccl(gate, parsers.parse_nccl(outcome.output))
    if outcome.state != "COMPLETED" and decision.outcome == "pass":
        return failed(
            "nccl",
            f"job {outcome.job_id} ended {outcome.state}: {decision.detail}",
            "see the job with sacct -j <id> on the controller",
            group.name,
            **decision.figures,
        )
    if decision.outcome == "pass":
        return passed("nccl", decision.detail, group.name, **decision.figures)
    return failed(
        "nccl",
        decision.detail,
        decision.fix or "see the job's output",
        group.name,
        **decision.figures,
    )


def _nccl_report(
    group: InstanceGroup, gate: gates.NcclGate, outcome: JobOutcome, nodes: int
) -> Result:
    """The run on all idle nodes: reported with its figure, never gated."""
    subject = f"{group.name} ({nodes} nodes)"
    if outcome.problem or outcome.state != "COMPLETED":
        return skipped("nccl", f"not measured: {outcome.problem or outcome.state}", subject)
    decision = gates.decide_nccl(gate, parsers.parse_nccl(outcome.output))
    return passed("nccl", f"reported, not gated: {decision.detail}", subject, **decision.figures)


# --- fsx ------------------------------------------------------------------------------------


def check_fsx(run: VerifyRun) -> list[Result]:
    """The Lustre mount on every running node (idle compute nodes through one job per partition),
    then write and read throughput of 2 to 4 idle compute nodes against the baseline."""
    deadline = run.deadline("fsx")
    try:
        facts = aws_checks.fsx_facts(run)
    except aws_checks.FsxUnknown as exc:
        return [
            failed(
                "fsx",
                f"cannot read the FSx file system: {exc}",
                "check the credentials' FSx access",
            )
        ]
    if facts is None:
        return [skipped("fsx", "storage.fsx is off")]
    slurm_nodes = _read_sinfo(run, "fsx", deadline)
    if isinstance(slurm_nodes, Result):
        return [slurm_nodes]
    return [
        _mounts_result(run, facts, slurm_nodes, deadline),
        _throughput_result(run, facts, slurm_nodes, deadline),
    ]


def _mount_tables(
    run: VerifyRun, dns_name: str, slurm_nodes: list[SlurmNode], deadline: float
) -> tuple[dict[str, str], list[str], int, set[str]]:
    """Node -> its /proc/mounts; the nodes that gave none; the compute nodes not idle (not
    checked); the file system's DNS name and the addresses it resolves to on the controller."""
    tables: dict[str, str] = {}
    silent: list[str] = []
    envelope, _ = _on_controller(run, "mounts", _session_timeout(run, deadline), dns=dns_name)
    if envelope and envelope.nodes:
        tables["controller"] = _decoded(next(iter(envelope.nodes.values())).get("mounts"))
    else:
        silent.append("controller")
    resolved = {dns_name}
    for mark in envelope.marks if envelope else []:
        if mark.startswith("HPV-RESOLVED"):
            resolved.update(mark.split()[1:])
    for node in _login_nodes(run):
        answer = (
            run.on_node(node, render("mounts"), _session_timeout(run, deadline))
            if (run.on_node)
            else None
        )
        login = parse_envelope(answer.output) if answer else None
        if login and login.nodes:
            tables[node.label] = _decoded(next(iter(login.nodes.values())).get("mounts"))
        else:
            silent.append(node.label)
    busy = 0
    for partition in _partitions(run):
        idle = idle_nodes(slurm_nodes, partition)
        busy += sum(1 for n in slurm_nodes if n.partition == partition and not n.idle)
        if not idle:
            continue
        job, _ = _run_job(run, "fsx", "mounts", partition, idle, deadline)
        for slurm_node in idle:
            fields = job.nodes.get(slurm_node.name) if job else None
            if fields is None:
                silent.append(slurm_node.name)
            else:
                tables[slurm_node.name] = _decoded(fields.get("mounts"))
                _record_job(run, fields.get("job"))
    return tables, silent, busy, resolved


def _login_nodes(run: VerifyRun) -> list[Node]:
    return [
        node
        for group in run.config.cluster.instance_groups
        if group.effective_node_type == "Login"
        for node in run.group_nodes(group.name)
    ]


def _mounts_result(
    run: VerifyRun, facts: aws_checks.FsxFacts, slurm_nodes: list[SlurmNode], deadline: float
) -> Result:
    tables, silent, busy, servers = _mount_tables(run, facts.dns_name, slurm_nodes, deadline)
    wrong = []
    for node, table in tables.items():
        mounts = [m for m in parsers.parse_lustre_mounts(table) if m.path == facts.mount_path]
        if not mounts:
            wrong.append(f"{node}: not mounted")
        elif mounts[0].dns_name not in servers or mounts[0].mount_name != facts.mount_name:
            wrong.append(f"{node}: {mounts[0].source}")
    expected = f"{facts.dns_name}@tcp:/{facts.mount_name} at {facts.mount_path}"
    if wrong or silent:
        found = wrong + [f"{n}: no answer" for n in silent]
        return failed(
            "fsx",
            f"expected {expected}; " + "; ".join(found),
            "HyperPod mounts the file system at node setup (InstanceStorageConfigs): replace a "
            "node that lacks it, and check the group's FsxLustreConfig with make status",
            "mounts",
            nodes=len(tables),
            wrong=len(found),
        )
    skipped_note = f" ({busy} busy compute nodes not checked)" if busy else ""
    return passed(
        "fsx",
        f"{len(tables)} nodes mount {expected}{skipped_note}",
        "mounts",
        nodes=len(tables),
    )


def _throughput_result(
    run: VerifyRun, facts: aws_checks.FsxFacts, slurm_nodes: list[SlurmNode], deadline: float
) -> Result:
    scratch = aws_checks.scratch_path(facts, run.run_id)
    if scratch is None:
        return skipped(
            "fsx",
            f"test files under /{VERIFY_DIR} would be exported to S3 by a data repository "
            "association that covers it",
            "throughput",
        )
    partition, idle = _most_idle(run, slurm_nodes)
    if len(idle) < 1:
        return skipped("fsx", "no idle compute node to measure from", "throughput")
    clients = idle[:FSX_MAX_CLIENTS]
    baseline = gates.fsx_baseline_mbps(facts.capacity_gib, facts.throughput_per_tib)
    size_mib = max(FSX_MIN_FILE_MIB, math.ceil(baseline * FSX_TARGET_SECONDS / len(clients)))
    on_node = _under(facts.mount_path, scratch)
    fsx = ControllerFsx(run, facts.mount_path)
    run.created(
        f"FSx test folder {on_node}",
        lambda: fsx.remove(scratch, 120),
        f"rm -rf {on_node} (on the controller)",
    )
    envelope = _job_answer(
        run,
        "fsx",
        "fsxio",
        "the throughput job",
        "throughput",
        partition,
        clients,
        deadline,
        scratch=on_node,
        size_mb=size_mib,
    )
    if isinstance(envelope, Result):
        return envelope
    write, read = _sum_throughput(envelope, clients)
    decision = gates.decide_fsx(facts.capacity_gib, facts.throughput_per_tib, write, read)
    tool = envelope.nodes[clients[0].name].get("tool", "?")
    detail = f"{decision.detail} ({len(clients)} clients, {tool})"
    if decision.outcome == "pass":
        return passed("fsx", detail, "throughput", clients=len(clients), **decision.figures)
    return failed(
        "fsx",
        detail,
        decision.fix or "check the file system's throughput",
        "throughput",
        clients=len(clients),
        **decision.figures,
    )


def _most_idle(run: VerifyRun, slurm_nodes: list[SlurmNode]) -> tuple[str, list[SlurmNode]]:
    """The partition with the most idle nodes, and those nodes (one srun reaches one partition)."""
    best: tuple[str, list[SlurmNode]] = ("", [])
    for partition in _partitions(run):
        idle = idle_nodes(slurm_nodes, partition)
        if len(idle) > len(best[1]):
            best = (partition, idle)
    return best


def _sum_throughput(
    envelope: Envelope, clients: Sequence[SlurmNode]
) -> tuple[float | None, float | None]:
    """The clients' write and read MB/s summed; None when any client gave no figure."""
    writes: list[float | None] = []
    reads: list[float | None] = []
    for node in clients:
        fields = envelope.nodes[node.name]
        write_text, read_text = _decoded(fields.get("write")), _decoded(fields.get("read"))
        if fields.get("tool") == "fio":
            writes.append(parsers.parse_fio(write_text).write_mbps)
            reads.append(parsers.parse_fio(read_text).read_mbps)
        else:
            writes.append(parsers.parse_dd(write_text))
            reads.append(parsers.parse_dd(read_text))
    return _total(writes), _total(reads)


def _total(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def _under(mount_path: str, path: str) -> str:
    """A file system path as a node sees it under ``mount_path``; refuses ``..``."""
    if ".." in path.split("/"):
        raise ValueError(f"a file system path may not hold '..': {path}")
    return mount_path.rstrip("/") + "/" + path.lstrip("/")


class ControllerFsx:
    """:class:`~hyperpod_ops.verify.model.FsxAccess` through the controller node, which
    mounts the file system at ``mount_path``; the bytes travel base64 in the script and its
    output."""

    def __init__(self, run: VerifyRun, mount_path: str) -> None:
        self.run = run
        self.mount_path = mount_path

    def _call(self, op: str, path: str, timeout: float, data: str = "") -> Envelope:
        envelope, result = _on_controller(
            self.run, "fsx_file", timeout, op=op, file=_under(self.mount_path, path), data=data
        )
        if envelope is None:
            raise OSError(f"FSx {op} of {path} on the controller: {describe_problem(result)}")
        return envelope

    def read(self, path: str, timeout: float) -> bytes | None:
        """The file's bytes, None when it does not exist."""
        envelope = self._call("read", path, timeout)
        for mark in envelope.marks:
            if mark.startswith("HPV-FILE"):
                return base64.b64decode(mark.partition(" ")[2].strip())
        return None

    def write(self, path: str, data: bytes, timeout: float) -> None:
        """Write the file (parent folders made); raises OSError on failure."""
        envelope = self._call("write", path, timeout, base64.b64encode(data).decode())
        if "HPV-WRITTEN" not in envelope.marks:
            raise OSError(f"cannot write {path} on the FSx file system from the controller")

    def remove(self, path: str, timeout: float) -> None:
        """Remove the file or folder, recursively; raises OSError on failure."""
        envelope = self._call("remove", path, timeout)
        if "HPV-REMOVED" not in envelope.marks:
            raise OSError(f"cannot remove {path} on the FSx file system from the controller")


# --- accounting -----------------------------------------------------------------------------


def _external_endpoint(run: VerifyRun) -> str | None:
    """The external accounting database's endpoint HyperPod was given (DescribeCluster)."""
    slurm: dict[str, Any] = run.cluster.get("Orchestrator", {}).get("Slurm", {}) or {}
    database = slurm.get("AccountingDatabase") or {}
    endpoint = database.get("Endpoint")
    return str(endpoint) if endpoint else None


def _config_value(text: str, key: str) -> str:
    """A value of ``scontrol show config`` (``Key = value``)."""
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    return ""


def check_accounting(run: VerifyRun) -> list[Result]:
    """slurmdbd answers, the run's test job is in sacct as COMPLETED, and the external database
    is the one slurmdbd uses when the config has one."""
    deadline = run.deadline("accounting")
    settings = run.config.cluster.slurm
    external = bool(settings and settings.accounting_database)
    envelope, result = _on_controller(run, "accounting", _session_timeout(run, deadline))
    if envelope is None:
        return [_no_answer("accounting", "the controller", result)]
    storage = _config_value(envelope.text("config"), "AccountingStorageType")
    if not external and storage != "accounting_storage/slurmdbd":
        return [skipped("accounting", f"no accounting configured ({storage or 'none'})")]
    if not envelope.ok("cluster"):
        return [
            failed(
                "accounting",
                f"slurmdbd does not answer: {envelope.text('cluster').strip()[-200:]}",
                "check slurmdbd on the controller (systemctl status slurmdbd, "
                "/var/log/slurm/slurmdbd.log) and its database",
                "slurmdbd",
            )
        ]
    results = [passed("accounting", "slurmdbd answers (sacctmgr show cluster)", "slurmdbd")]
    results.append(_job_recorded(run, deadline))
    if external:
        results.append(_database_result(run, envelope, storage))
    return results


def _job_recorded(run: VerifyRun, deadline: float) -> Result:
    jobs = run_jobs(run)
    job_id = jobs[0] if jobs else _tiny_job(run, deadline)
    if job_id is None:
        return skipped("accounting", "no idle compute node for a test job", "job")
    if isinstance(job_id, Result):
        return job_id
    state = None
    while True:
        envelope, _ = _on_controller(
            run, "job_state", _session_timeout(run, deadline), job_id=job_id
        )
        state = _sacct_state(envelope, job_id) if envelope else None
        if state in FINAL_STATES or run.clock() + ACCOUNTING_POLL_SECONDS >= deadline:
            break
        run.sleep(ACCOUNTING_POLL_SECONDS)
    if state == "COMPLETED":
        return passed("accounting", f"test job {job_id} is in sacct as COMPLETED", "job")
    return failed(
        "accounting",
        f"test job {job_id} is in sacct as {state or 'nothing (no record)'}, not COMPLETED",
        "check that slurmctld sends jobs to slurmdbd (AccountingStorageType, sacctmgr show "
        "cluster lists this cluster) and the job's end with sacct -j <id>",
        "job",
    )


def _sacct_state(envelope: Envelope, job_id: str) -> str | None:
    for line in envelope.text("sacct").splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0] == job_id:
            return parts[1].split()[0].upper()
    return None


def _tiny_job(run: VerifyRun, deadline: float) -> str | Result | None:
    """Run a one-node ``hostname``-like job on an idle node: its id; None when no compute node
    is idle (a skip); the failed result when sinfo failed or the job did not run (a job that
    cannot run is a failure, not a skip: on a cluster where no other check applies it is the
    only proof that jobs run)."""
    slurm_nodes = _read_sinfo(run, "accounting", deadline)
    if isinstance(slurm_nodes, Result):
        return slurm_nodes
    partition, idle = _most_idle(run, slurm_nodes)
    if not idle:
        return None
    answer = _job_answer(
        run, "accounting", "hello", "the test job", "job", partition, idle[:1], deadline, 2
    )
    if isinstance(answer, Result):
        return answer
    job = answer.nodes[idle[0].name].get("job")
    if not job or job == "none":
        return failed(
            "accounting",
            f"the test job on {idle[0].name} printed no job id",
            "see the job with sacct -S today --name <run id>-accounting on the controller",
            "job",
        )
    return job


def _database_result(run: VerifyRun, envelope: Envelope, storage: str) -> Result:
    endpoint = _external_endpoint(run)
    if storage != "accounting_storage/slurmdbd":
        return failed(
            "accounting",
            f"slurmctld uses {storage or 'no accounting'}, not slurmdbd with the external database",
            "HyperPod configures slurmdbd with the database at cluster creation; check the "
            "cluster's Orchestrator.Slurm.AccountingDatabase with make status",
            "database",
        )
    if endpoint is None:
        return failed(
            "accounting",
            "the config has an accounting database, the deployed cluster has none",
            "deploy the config (make deploy CONFIG=<this file>)",
            "database",
        )
    dbd = dict(line.split("=", 1) for line in envelope.text("dbd").splitlines() if "=" in line)
    host = dbd.get("StorageHost")
    if "dbd" not in envelope.sections or host is None:
        return passed(
            "accounting",
            f"slurmdbd in use; its StorageHost cannot be read on the controller (expected {endpoint})",
            "database",
        )
    if host != endpoint:
        return failed(
            "accounting",
            f"slurmdbd talks to {host}, the deployed database is {endpoint}",
            "HyperPod writes slurmdbd.conf from Orchestrator.Slurm.AccountingDatabase: check "
            "that the cluster was updated with this database (make deploy), and slurmdbd.conf",
            "database",
        )
    return passed("accounting", f"slurmdbd stores in the deployed database {endpoint}", "database")


# --- leftovers ------------------------------------------------------------------------------


def leftovers(run: VerifyRun) -> list[Created]:
    """A crashed run's Slurm jobs still queued or running (by job name, which starts with the
    run id) and its FSx test folder (found from the controller)."""
    mount = _mount_path(run)
    scratch = f"/{VERIFY_DIR}/{run.run_id}"
    envelope, _ = _on_controller(run, "jobs", 120, scratch=_under(mount, scratch) if mount else "")
    if envelope is None:
        return []
    found: list[Created] = []
    names: set[str] = set()
    for line in envelope.text("squeue").splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[1].startswith(f"{run.run_id}-"):
            names.add(parts[1])
    for name in sorted(names):
        found.append(
            Created(f"Slurm jobs named {name}", _canceller(run, name), f"scancel --name {name}")
        )
    if mount and "HPV-SCRATCH yes" in envelope.marks:
        fsx = ControllerFsx(run, mount)
        found.append(
            Created(
                f"FSx test folder {_under(mount, scratch)}",
                lambda: fsx.remove(scratch, 120),
                f"rm -rf {_under(mount, scratch)} (on the controller)",
            )
        )
    return found


def _canceller(run: VerifyRun, name: str) -> Callable[[], None]:
    return lambda: cancel_jobs(run, name)


CHECKS: dict[str, Check] = {
    "nodes": check_nodes,
    "efa": check_efa,
    "containers": check_containers,
    "nccl": check_nccl,
    "fsx": check_fsx,
    "accounting": check_accounting,
}
"""The Slurm checks by name (the runner runs them in CHECK_ORDER)."""

"""What every ``make verify`` check shares: its result, the run it belongs to, and what it leaves
behind to remove.

A check is a function ``(run: VerifyRun) -> list[Result]``: one result per subject it checked
(a group, a node, the cluster), each pass, fail or skip with one line of detail, the figures it
measured and, on a failure, the fix. Checks run in :data:`CHECK_ORDER`; a check whose
dependency (:data:`DEPENDS_ON`) did not pass is skipped with that reason by the runner, not by
the check. Everything a check creates (S3 objects, Slurm jobs, Kubernetes objects, FSx data
repository tasks) carries the run id and is registered with :meth:`VerifyRun.created`, so the
runner removes it at the end, on a failure and on Ctrl-C; ``--cleanup RUN_ID`` finds a crashed
run's leftovers by that id.

Pure Python: boto3 clients come from the run's :data:`~hyperpod_ops.aws.ClientFactory`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.aws import ClientFactory, one_line

Outcome = Literal["pass", "fail", "skip"]
Figure = float | int | str

# The checks, in the order they run (each after the ones it depends on).
CHECK_ORDER: tuple[str, ...] = (
    "cluster",
    "health",
    "nodes",
    "efa",
    "containers",
    "nccl",
    "fsx",
    "dra",
    "accounting",
    "imds",
)
# check -> the checks that must have passed (or been skipped as not applicable) before it runs
DEPENDS_ON: Mapping[str, tuple[str, ...]] = {
    "cluster": (),
    "health": ("cluster",),
    "nodes": ("cluster",),
    "efa": ("nodes",),
    "containers": ("nodes",),
    "nccl": ("efa", "containers"),
    "fsx": ("nodes",),
    # not fsx: a file system slower than its gate still moves files to and from S3
    "dra": ("cluster",),
    "accounting": ("nodes",),
    "imds": ("nodes",),
}
# Seconds each check may take in all (its subjects together); a check stops waiting past it
# and fails with what it saw.
BUDGET_SECONDS: Mapping[str, int] = {
    "cluster": 60,
    "health": 120,
    "nodes": 300,
    "efa": 300,
    "containers": 900,
    "nccl": 1800,
    "fsx": 900,
    "dra": 900,
    "accounting": 300,
    "imds": 300,
}
# Prefix of every run id; names and labels made by a run carry the whole id.
RUN_ID_PREFIX = "hpv-"
# The folder every test file of a run lives in: /<VERIFY_DIR>/<run id>/ on the file system,
# <prefix>/<VERIFY_DIR>/<run id>/ under a data repository's S3 prefix.
VERIFY_DIR = ".hyperpod-verify"
# The Kubernetes label (value: the run id) and the Slurm job-name prefix of what a run makes.
RUN_LABEL = "hyperpod-cdk.aws/verify-run"


def new_run_id() -> str:
    """``hpv-<12 hex>``: short enough for a Kubernetes label, a Slurm job name and an S3 key."""
    return RUN_ID_PREFIX + secrets.token_hex(6)


@dataclass(frozen=True)
class Result:
    """One line of the report.

    :param check: one of :data:`CHECK_ORDER`.
    :param outcome: pass, fail or skip (skip: not applicable, with the reason in ``detail``).
    :param detail: what was found, one line (the measured figure with its unit and the gate).
    :param subject: what was checked when a check has several (a group, a node); None: all.
    :param fix: on a failure, what to do.
    :param figures: the measured numbers and their gates, for ``--json`` (e.g.
        ``{"busbw_gbps": 412.3, "gate_gbps": 389.7}``).
    """

    check: str
    outcome: Outcome
    detail: str
    subject: str | None = None
    fix: str | None = None
    figures: Mapping[str, Figure] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True for a failed result."""
        return self.outcome == "fail"

    @property
    def name(self) -> str:
        """``nccl gpu`` (check and subject) or ``cluster``."""
        return f"{self.check} {self.subject}" if self.subject else self.check


def passed(check: str, detail: str, subject: str | None = None, **figures: Figure) -> Result:
    """A passed result."""
    return Result(check, "pass", one_line(detail), subject, None, figures)


def failed(
    check: str, detail: str, fix: str, subject: str | None = None, **figures: Figure
) -> Result:
    """A failed result, with how to fix it."""
    return Result(check, "fail", one_line(detail), subject, one_line(fix), figures)


def skipped(check: str, detail: str, subject: str | None = None) -> Result:
    """A result that does not apply, with the reason."""
    return Result(check, "skip", one_line(detail), subject)


@dataclass(frozen=True)
class Created:
    """Something a run made, and how to remove it.

    :param what: one line naming it, e.g. ``S3 object s3://bucket/key``.
    :param remove: removes it (idempotent: gone already is fine); raises on failure.
    :param by_hand: the command that removes it by hand, printed when ``remove`` failed.
    """

    what: str
    remove: Callable[[], None]
    by_hand: str


@dataclass
class Node:
    """A HyperPod node, from ListClusterNodes."""

    group: str
    instance_id: str
    instance_type: str
    status: str

    @property
    def label(self) -> str:
        """``<group>/<instance-id>``."""
        return f"{self.group}/{self.instance_id}"


class FsxAccess(Protocol):
    """Reads and writes files on the environment's FSx for Lustre file system from a node (Slurm:
    the controller; EKS: a short-lived pod that mounts the file system). Paths are file system
    paths, as a data repository association's ``file_system_path`` is: ``/`` is the root of the
    file system, whatever folder a node mounts it on (``/datasets/a`` is
    ``<storage.fsx.mount_path>/datasets/a`` on a Slurm node)."""

    def read(self, path: str, timeout: float) -> bytes | None:
        """The file's bytes, None when it does not exist."""

    def write(self, path: str, data: bytes, timeout: float) -> None:
        """Write the file (parent folders made); raises on failure."""

    def remove(self, path: str, timeout: float) -> None:
        """Remove the file or folder, recursively (gone already is fine); raises on failure."""


@dataclass
class Options:
    """What the command line chose.

    :param checks: the checks to run (``CHECKS=``); the others are not run at all.
    :param team: on a task-governance EKS cluster, the team whose namespace
        (``hyperpod-ns-<team>``) and LocalQueue (``hyperpod-ns-<team>-localqueue``) the test
        workloads run in.
    :param priority_class: on such a cluster, the priority class of the test workloads (a class
        of the cluster policy, e.g. ``training``; Kueue's is ``training-priority``); default: the
        policy's lowest.
    :param deep_health_check: also start HyperPod's on-demand deep health check (it takes the
        nodes into a maintenance reservation; off unless asked).
    :param nccl_all_nodes: also run NCCL on every idle node of a group (reported, not gated).
    """

    checks: Sequence[str] = CHECK_ORDER
    team: str | None = None
    priority_class: str | None = None
    deep_health_check: bool = False
    nccl_all_nodes: bool = False


@dataclass
class VerifyRun:
    """One ``make verify``: the config, the clients, what is deployed, what was made.

    :param cluster: DescribeCluster's answer (filled by the ``cluster`` check's caller).
    :param nodes: every node of the cluster (ListClusterNodes, all pages).
    :param controller: on Slurm, runs a bash script on the controller node and returns its
        :class:`~hyperpod_ops.ssm.RemoteResult` (``(script, timeout_seconds)``); the
        compute nodes are reached through Slurm jobs it submits.
    :param on_node: on Slurm, the same for any node by :class:`Node` (login nodes).
    :param kubernetes: on EKS, the Kubernetes API client (:class:`hyperpod_ops.k8s.Kubernetes`).
    :param fsx: file access on the FSx for Lustre file system (None: no file system, or the
        orchestrator's side could not provide it).
    :param shared: what one check leaves for a later one of the same run (the Slurm test jobs
        the accounting check looks up; the EKS probe pods efa and containers both read), by a
        key of the module that writes it.
    """

    config: EnvironmentConfig
    clients: ClientFactory
    run_id: str = field(default_factory=new_run_id)
    options: Options = field(default_factory=Options)
    cluster: dict[str, Any] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    controller: Callable[[str, float], Any] | None = None
    on_node: Callable[[Node, str, float], Any] | None = None
    kubernetes: Any = None
    fsx: FsxAccess | None = None
    shared: dict[str, Any] = field(default_factory=dict)
    made: list[Created] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    @property
    def cluster_id(self) -> str:
        """The last part of the cluster's ARN."""
        return str(self.cluster.get("ClusterArn", "")).rsplit("/", 1)[-1]

    def created(self, what: str, remove: Callable[[], None], by_hand: str) -> None:
        """Register something this run made (removed by the runner at the end)."""
        self.made.append(Created(what, remove, by_hand))

    def group_nodes(self, group: str, status: str = "Running") -> list[Node]:
        """The nodes of ``group`` in ``status``."""
        return [n for n in self.nodes if n.group == group and n.status == status]

    def deadline(self, check: str) -> float:
        """The clock value by which ``check`` must be done (its budget from now)."""
        return self.clock() + BUDGET_SECONDS[check]


Check = Callable[[VerifyRun], list[Result]]
"""A check: its results (one per subject). It may raise only for unusable credentials; an AWS
or node error is a failed result with the fix."""

Leftovers = Callable[[VerifyRun], list[Created]]
"""What a crashed run with ``run.run_id`` left behind, found by the run id (``--cleanup``)."""

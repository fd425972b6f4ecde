"""``python -m hyperpod_ops.sync_users CONFIG`` (``make sync-users``): apply the users file to
every running node of a deployed Slurm cluster.

The lifecycle scripts run when HyperPod sets a node up, never again on a running node: a change
to ``cluster.node_setup.users_file`` reaches new and replaced nodes after ``make deploy``, and
this command takes it to the running ones. On each running node, through an SSM session (the
transport of :mod:`hyperpod_ops.ssm`), as root, it downloads the scripts from the prefix the
cluster boots from (the *deployed* one, with the node's execution role) and runs their users
steps only (``HYPERPOD_ONLY_STEPS=users,ssh_keys,slurm_users``: users and groups, the SSH keys
between nodes, the Slurm accounts), then removes the download.

It refuses (exit 2, one line) when the prefix the config would deploy differs from the deployed
one: running nodes would then get other users than the nodes HyperPod replaces later. Deploy
first. Also for an EKS config, a config without a users file, a cluster that is not deployed, no
running node, or no Session Manager plugin.

Prints one line per node (``<group>/<instance-id>: ok`` or ``FAILED (<last lines>)``), then a
summary. Exit 0 when every running node is ok, 1 when a node failed, 2 when nothing could run.
``--dry-run`` prints the targets and the command without starting a session;
``--timeout SECONDS`` bounds each node's session (default 900).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.cluster import LIFECYCLE_ENTRY_SCRIPT
from hyperpod_cdk.lifecycle.prefix import config_lifecycle_prefix
from hyperpod_ops.aws import (
    ClientFactory,
    call_or_none,
    describe_error,
    is_client_error,
    paginate,
    session_clients,
    throttled_reason,
    unavailable_reason,
)
from hyperpod_ops.cli import EXIT_UNUSABLE, MakeClients, run_command
from hyperpod_ops.ssm import (
    DOCUMENT,
    PluginMissing,
    RemoteResult,
    SsmTransport,
    describe_problem,
    remote_command,
)
from hyperpod_ops.status import ssm_target

PROG = "sync_users"
# The steps of entrypoint.sh that apply the users file (entrypoint.sh runs only these when
# HYPERPOD_ONLY_STEPS names them): users and groups with their homes, the SSH keys between
# nodes, the Slurm accounts and users (controller).
ONLY_STEPS = ("users", "ssh_keys", "slurm_users")
ONLY_STEPS_VARIABLE = "HYPERPOD_ONLY_STEPS"
# Nodes in a session at once.
CONCURRENCY = 8
# Per node: the Slurm accounts step alone may wait 5 minutes for slurmdbd to answer.
DEFAULT_TIMEOUT_SECONDS = 900
# HyperPod's node status (ClusterInstanceStatus) of a node that can take a session.
RUNNING = "Running"
# The StartSession Reason, shown in Session Manager's history.
SESSION_REASON = "hyperpod-cdk make sync-users"
# Where the entry script writes its log on the node (lifecycle_assets/entrypoint.sh).
NODE_LOG = "/var/log/provision/hyperpod-lifecycle.log"


class Refusal(Exception):
    """Nothing can run: the one line says why and what to do (exit 2)."""


@dataclass(frozen=True)
class Node:
    """A node of the cluster, from ListClusterNodes."""

    group: str
    instance_id: str
    status: str

    @property
    def label(self) -> str:
        """``<group>/<instance-id>``."""
        return f"{self.group}/{self.instance_id}"


@dataclass(frozen=True)
class SyncPlan:
    """What the command does: the deployed prefix, and the nodes it runs on or skips."""

    cluster_name: str
    cluster_id: str
    source_uri: str
    running: list[Node]
    skipped: list[Node]

    def target(self, node: Node) -> str:
        """The SSM target of ``node``."""
        return ssm_target(self.cluster_id, node.group, node.instance_id)


def _key_prefix(uri: str) -> str:
    """The key part of ``s3://bucket/key/`` (always ending in ``/``)."""
    key = uri.removeprefix("s3://").partition("/")[2]
    return key.rstrip("/") + "/"


def deployed_source_uri(cluster: dict[str, Any]) -> str:
    """The ``LifeCycleConfig.SourceS3Uri`` every instance group of ``cluster`` boots from.

    :raises Refusal: the cluster has no group, or its groups boot from different prefixes.
    """
    uris = sorted(
        {
            str(g["LifeCycleConfig"]["SourceS3Uri"]).rstrip("/") + "/"
            for g in cluster.get("InstanceGroups", [])
            if g.get("LifeCycleConfig", {}).get("SourceS3Uri")
        }
    )
    name = cluster.get("ClusterName")
    if not uris:
        raise Refusal(f"HyperPod cluster {name} has no instance group with lifecycle scripts")
    if len(uris) > 1:
        raise Refusal(
            f"the instance groups of HyperPod cluster {name} boot from different prefixes "
            f"({', '.join(uris)}): an update is under way or failed; finish it "
            "(make deploy CONFIG=<this file>), then retry"
        )
    return uris[0]


def check_prefix(local_prefix: str, deployed_uri: str) -> None:
    """:raises Refusal: the key of ``deployed_uri`` is not ``local_prefix`` (the config's synth
    would upload other scripts, settings or users than the cluster boots from)."""
    if _key_prefix(deployed_uri) != local_prefix:
        raise Refusal(
            f"the config's lifecycle prefix {local_prefix} differs from the deployed one "
            f"{deployed_uri}: the running nodes would get other users than the nodes HyperPod "
            "replaces; run make deploy first (make deploy CONFIG=<this file>), then make sync-users"
        )


def sync_script(source_uri: str, region: str) -> str:
    """The bash script run as root on each node.

    It downloads the deployed prefix with the node's execution role (which may read the
    lifecycle prefix) into a fresh directory, checks that those scripts can run single steps,
    runs the users steps of their entry script and removes the directory, whatever happens.
    """
    steps = ",".join(ONLY_STEPS)
    return f"""\
set -u
uri={shlex.quote(source_uri)}
work="$(mktemp -d "${{TMPDIR:-/tmp}}/hyperpod-sync-XXXXXXXX")" || exit 70
trap 'rm -rf "$work"' EXIT
if ! aws s3 cp --recursive --only-show-errors --region {shlex.quote(region)} "$uri" "$work/"; then
  echo "[sync-users] cannot download $uri with the node's execution role"
  exit 71
fi
if ! grep -rqs --include='*.sh' {ONLY_STEPS_VARIABLE} "$work"; then
  echo "[sync-users] the deployed lifecycle scripts cannot run single steps ({ONLY_STEPS_VARIABLE}); update them with make deploy"
  exit 72
fi
cd "$work" || exit 70
{ONLY_STEPS_VARIABLE}={steps} bash ./{LIFECYCLE_ENTRY_SCRIPT}
"""


def _node(summary: dict[str, Any]) -> Node:
    return Node(
        str(summary.get("InstanceGroupName")),
        str(summary.get("InstanceId")),
        str(summary.get("InstanceStatus", {}).get("Status", "unknown")),
    )


def check_config(config: EnvironmentConfig) -> None:
    """:raises Refusal: an EKS config, or no users file."""
    if not config.is_slurm:
        raise Refusal(
            f"{config.name} is an EKS environment: make sync-users applies "
            "cluster.node_setup.users_file, which is for Slurm clusters only"
        )
    if config.cluster.node_setup.users_file is None:
        raise Refusal(
            "cluster.node_setup.users_file is not set in the config: there are no users to "
            "apply; set it, run make deploy, then make sync-users"
        )


def plan_sync(config: EnvironmentConfig, sagemaker: Any, project_root: Path) -> SyncPlan:
    """Read the deployed cluster, compare its prefix with the config's and list its nodes.

    :raises Refusal: an EKS config, no users file, no cluster, another prefix, no running node.
    """
    check_config(config)
    local_prefix = config_lifecycle_prefix(config, project_root)
    cluster = call_or_none(
        sagemaker.describe_cluster, ["ResourceNotFound"], ClusterName=config.cluster_name
    )
    if cluster is None:
        raise Refusal(
            f"HyperPod cluster {config.cluster_name} is not deployed in {config.region} "
            "(deploy it with: make deploy CONFIG=<this file>)"
        )
    source_uri = deployed_source_uri(cluster)
    check_prefix(local_prefix, source_uri)
    nodes = [
        _node(n)
        for n in paginate(
            sagemaker, "list_cluster_nodes", "ClusterNodeSummaries", ClusterName=config.cluster_name
        )
    ]
    running = [n for n in nodes if n.status == RUNNING]
    skipped = [n for n in nodes if n.status != RUNNING]
    if not running:
        found = ", ".join(f"{n.label} {n.status}" for n in skipped) or "no node"
        raise Refusal(
            f"HyperPod cluster {config.cluster_name} has no running node ({found}); nodes that "
            "HyperPod sets up later get the deployed users themselves"
        )
    cluster_id = str(cluster.get("ClusterArn", "")).rsplit("/", 1)[-1]
    return SyncPlan(config.cluster_name, cluster_id, source_uri, running, skipped)


def run_nodes(
    nodes: Sequence[Node],
    run_one: Callable[[Node], RemoteResult],
    report: Callable[[Node, RemoteResult], None],
    *,
    concurrency: int = CONCURRENCY,
    abort: Callable[[], None] | None = None,
) -> list[tuple[Node, RemoteResult]]:
    """``run_one`` on every node, ``concurrency`` at a time, ``report`` as each finishes.

    An exception of ``run_one`` (unusable credentials) cancels the nodes not started yet and is
    raised once the running ones are done. On Ctrl-C, ``abort`` ends the running ones first.
    """
    results: list[tuple[Node, RemoteResult]] = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        pending: dict[Future[RemoteResult], Node] = {pool.submit(run_one, n): n for n in nodes}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_EXCEPTION)
                for future in [f for f in pending if f in done]:  # in the nodes' order
                    node = pending.pop(future)
                    result = future.result()  # raises what run_one raised
                    results.append((node, result))
                    report(node, result)
        except BaseException as exc:
            for other in pending:
                other.cancel()
            if isinstance(exc, KeyboardInterrupt) and abort is not None:
                abort()
            raise
    return results


def node_line(node: Node, result: RemoteResult) -> str:
    """``<group>/<instance-id>: ok`` or ``...: FAILED (<exit or problem>: <last lines>)``."""
    if result.ok:
        return f"{node.label}: ok"
    return f"{node.label}: FAILED ({describe_problem(result)})"


def summary_line(plan: SyncPlan, results: Iterable[tuple[Node, RemoteResult]]) -> str:
    """The counts, and where a failed node's whole output is."""
    outcomes = [r for _, r in results]
    ok = sum(r.ok for r in outcomes)
    failed = len(outcomes) - ok
    line = f"{PROG} of {plan.cluster_name} from {plan.source_uri}: {ok} ok, {failed} failed"
    if plan.skipped:
        line += f", {len(plan.skipped)} not running (skipped)"
    if failed:
        line += f"; a node's whole output: {NODE_LOG} on that node"
    return line


def _dry_run(plan: SyncPlan, script: str) -> int:
    print(f"{PROG} of {plan.cluster_name} from {plan.source_uri} (dry run: no session started)")
    print(f"on each node, as root, through {DOCUMENT}:")
    for line in script.rstrip("\n").splitlines():
        print(f"  {line}")
    for node in plan.running:
        command = remote_command(script, "<nonce>")
        print(
            f"{node.label}: aws ssm start-session --target {plan.target(node)} "
            f"--document-name {DOCUMENT} --parameters {shlex.quote('command=' + command)}"
        )
    for node in plan.skipped:
        print(f"{node.label}: skipped ({node.status})")
    return 0


def _sync(
    config: EnvironmentConfig,
    clients: ClientFactory,
    project_root: Path,
    *,
    profile: str | None,
    dry_run: bool,
    timeout: float,
) -> int:
    sagemaker = clients("sagemaker")
    transport: SsmTransport | None = None
    try:
        check_config(config)
        if not dry_run:
            transport = SsmTransport(clients("ssm"), profile=profile)
        plan = plan_sync(config, sagemaker, project_root)
    except (Refusal, PluginMissing) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        reason = throttled_reason(exc, [sagemaker]) or describe_error(exc, [sagemaker])
        print(f"{PROG}: {reason}", file=sys.stderr)
        return EXIT_UNUSABLE
    script = sync_script(plan.source_uri, config.region)
    if transport is None:
        return _dry_run(plan, script)
    for node in plan.skipped:
        print(f"{node.label}: skipped ({node.status})")

    def run_one(node: Node) -> RemoteResult:
        assert transport is not None
        return transport.run(plan.target(node), script, timeout, SESSION_REASON)

    def report(node: Node, result: RemoteResult) -> None:
        print(node_line(node, result), flush=True)

    results = run_nodes(
        plan.running, run_one, report, concurrency=CONCURRENCY, abort=transport.abort
    )
    print(summary_line(plan, results))
    if all(r.ok for _, r in results):
        return 0
    if not any(r.started for _, r in results):
        return EXIT_UNUSABLE  # no session could start on any node: nothing ran
    return 1


def _options(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """This command's own options, and the rest for :func:`run_command` (``--profile`` stays in
    it; it is read here too, for the plugin)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS)
    own, rest = parser.parse_known_args(list(argv))
    profile = argparse.ArgumentParser(add_help=False)
    profile.add_argument("--profile", default=None)
    own.profile = profile.parse_known_args(rest)[0].profile
    if own.timeout <= 0:
        parser.error("--timeout: give a number of seconds above 0")
    return own, rest


def main(argv: Sequence[str], make_clients: MakeClients = session_clients) -> int:
    """The command line; ``make_clients`` builds the boto3 clients of a region (tests stub it)."""
    own, rest = _options(argv)

    def command(config: EnvironmentConfig, clients: ClientFactory, project_root: Path) -> int:
        return _sync(
            config,
            clients,
            project_root,
            profile=own.profile,
            dry_run=own.dry_run,
            timeout=own.timeout,
        )

    return run_command(
        PROG,
        "Apply the users file of CONFIG to every running node of its deployed Slurm cluster "
        "(SSM sessions; needs the Session Manager plugin). Also: --dry-run prints the targets "
        "and the command without starting a session; --timeout SECONDS per node (default "
        f"{DEFAULT_TIMEOUT_SECONDS}).",
        argv=rest,
        command=command,
        make_clients=make_clients,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

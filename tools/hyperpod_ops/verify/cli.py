"""``python -m hyperpod_ops.verify CONFIG`` (``make verify``): prove that the deployed
environment of CONFIG works (:mod:`hyperpod_ops.verify`).

From a workstation with AWS credentials only, no SSH keys. Slurm nodes are reached through SSM
sessions to their HyperPod targets (the controller and login nodes directly, compute nodes
through Slurm jobs the controller submits; the Session Manager plugin must be installed). EKS is
reached through the Kubernetes API with a token made from the caller's credentials (the caller
needs an access entry). The EKS endpoint is private by default: run verify from inside the VPC, or
forward a port to it through a HyperPod node (``--k8s-via``, docs/operations.md).

Prints one line per result as it comes (``--json``: one document at the end instead), then what
could not be removed, then a summary. Exit 0 every check passed or was skipped, 1 a check failed
or something the run made is left, 2 nothing could run (no credentials, no plugin, no cluster,
no route to the EKS endpoint), 130 interrupted (after the clean-up).
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.task_governance import (
    TASK_GOVERNANCE_NAME_MAX,
    TASK_GOVERNANCE_NAME_PATTERN,
)
from hyperpod_ops.adopted import eks_cluster_name
from hyperpod_ops.aws import (
    ClientFactory,
    describe_error,
    is_client_error,
    session_clients,
    throttled_reason,
    unavailable_reason,
)
from hyperpod_ops.cli import MakeClients, run_command
from hyperpod_ops.k8s import (
    Kubernetes,
    KubernetesDenied,
    KubernetesUnreachable,
    Response,
    eks_token,
    https_transport,
)
from hyperpod_ops.ssm import PluginMissing, RemoteResult, SsmTransport
from hyperpod_ops.status import ssm_target
from hyperpod_ops.verify import aws_checks, report
from hyperpod_ops.verify.model import (
    CHECK_ORDER,
    RUN_ID_PREFIX,
    Check,
    Created,
    Leftovers,
    Node,
    Options,
    Result,
    VerifyRun,
)
from hyperpod_ops.verify.runner import Removal, Timed, clean_up, run_checks

PROG = "verify"
# The StartSession Reason, shown in Session Manager's history.
SESSION_REASON = "hyperpod-cdk make verify"
# EKS tokens are accepted for 15 minutes (aws-iam-authenticator); a run takes longer: a new one
# is made after this many seconds.
TOKEN_REFRESH_SECONDS = 600
RUN_ID_PATTERN = re.compile(rf"^{RUN_ID_PREFIX}[0-9a-f]{{12}}$")
# What a run needs from the orchestrator's side, by orchestrator.
SLURM_CHECKS = CHECK_ORDER
EKS_CHECKS = tuple(c for c in CHECK_ORDER if c not in ("accounting", "imds"))


class CannotRun(Exception):
    """Nothing can be verified: the one line says why and what to do (exit 2)."""


MakeTransport = Callable[..., SsmTransport]
# (endpoint, CA data, token, TLS server name or None) -> transport; tests pass a fake API server
MakeK8sTransport = Callable[[str, str, str, str | None], Callable[..., Response]]


def _https(endpoint: str, ca_data: str, token: str, server_name: str | None) -> Any:
    if server_name is None:
        return https_transport(endpoint, ca_data, token)
    return https_transport(endpoint, ca_data, token, tls_server_name=server_name)


# -- the orchestrators' sides ------------------------------------------------------------------


def _orchestrator_modules(config: EnvironmentConfig) -> tuple[dict[str, Check], Leftovers]:
    """The node-side checks and the leftovers finder of the config's orchestrator (with the
    AWS-side checks, which both have)."""
    if config.is_slurm:
        from hyperpod_ops.verify import imds, slurm

        side: dict[str, Check] = {**slurm.CHECKS, **imds.CHECKS}
        side_leftovers: Leftovers = slurm.leftovers
    else:
        from hyperpod_ops.verify import eks

        side = dict(eks.CHECKS)
        side_leftovers = eks.leftovers
    checks = {**aws_checks.CHECKS, **side}

    def leftovers(run: VerifyRun) -> list[Created]:
        return [*side_leftovers(run), *aws_checks.leftovers(run)]

    return checks, leftovers


def _controller(run: VerifyRun) -> Node:
    """The running controller node (the config's Controller group)."""
    groups = [
        g.name for g in run.config.cluster.instance_groups if g.effective_node_type == "Controller"
    ]
    for node in run.nodes:
        if node.group in groups and node.status == "Running":
            return node
    found = ", ".join(f"{n.label} {n.status}" for n in run.nodes if n.group in groups)
    raise CannotRun(
        f"the controller group {', '.join(groups) or '(none in the config)'} has no running "
        f"node ({found or 'no node'}); wait for it (make status), then retry"
    )


def connect_slurm(run: VerifyRun, transport: SsmTransport) -> None:
    """Point ``run.controller`` and ``run.on_node`` at SSM sessions to the nodes."""
    controller = _controller(run)

    def on_node(node: Node, script: str, timeout: float) -> RemoteResult:
        target = ssm_target(run.cluster_id, node.group, node.instance_id)
        return transport.run(target, script, timeout, SESSION_REASON)

    run.on_node = on_node
    run.controller = lambda script, timeout: on_node(controller, script, timeout)


def _eks_route_hint(run: VerifyRun, host: str) -> str:
    """How to reach a private endpoint from outside the VPC: both routes, with the commands."""
    running = [n for n in run.nodes if n.status == "Running"]
    target = (
        ssm_target(run.cluster_id, running[0].group, running[0].instance_id)
        if running
        else "sagemaker-cluster:<cluster-id>_<group>-<instance-id>"
    )
    return (
        "run make verify from inside the VPC, or forward a port through a HyperPod node: "
        f"aws ssm start-session --target {target} --document-name "
        f"AWS-StartPortForwardingSessionToRemoteHost --parameters "
        f"host={host},portNumber=443,localPortNumber=8443 (leave it open), then "
        "make verify OPS_ARGS='--k8s-via 127.0.0.1:8443'"
    )


def connect_eks(run: VerifyRun, via: str | None, make_transport: MakeK8sTransport = _https) -> None:
    """Connect ``run.kubernetes`` to the EKS cluster with a token of the caller's credentials,
    renewed as the run goes on.

    :param via: ``HOST:PORT`` of a port forwarded to the endpoint (``--k8s-via``); the
        certificate is still checked for the endpoint's own name.
    :raises CannotRun: the endpoint does not answer (both routes named), or the caller has no
        access entry.
    """
    name = eks_cluster_name(run.config)
    arn = run.cluster.get("Orchestrator", {}).get("Eks", {}).get("ClusterArn")
    if arn:
        name = str(arn).rsplit("/", 1)[-1]
    cluster = run.clients("eks").describe_cluster(name=name)["cluster"]
    endpoint = str(cluster.get("endpoint") or "")
    ca_data = str((cluster.get("certificateAuthority") or {}).get("data") or "")
    if not endpoint or not ca_data:
        raise CannotRun(f"EKS cluster {name} has no API endpoint yet ({cluster.get('status')})")
    host = endpoint.removeprefix("https://").split("/", 1)[0]
    url, server_name = (f"https://{via}", host) if via else (endpoint, None)
    sts = run.clients("sts")
    lock = threading.Lock()
    current: dict[str, Any] = {}

    def transport(*args: Any, **kwargs: Any) -> Response:
        with lock:
            if not current or time.monotonic() - current["made"] > TOKEN_REFRESH_SECONDS:
                token = eks_token(sts, name)
                current.update(call=make_transport(url, ca_data, token, server_name))
                current["made"] = time.monotonic()
            call = current["call"]
        response: Response = call(*args, **kwargs)
        return response

    api = Kubernetes(transport)
    try:
        api.get("/api/v1/nodes?limit=1")
    except KubernetesUnreachable as exc:
        raise CannotRun(
            f"cannot reach the API endpoint of EKS cluster {name} ({url}) from here: {exc}; "
            + _eks_route_hint(run, host)
        ) from None
    except KubernetesDenied as exc:
        caller = sts.get_caller_identity().get("Arn", "the caller")
        raise CannotRun(
            f"{caller} may not read EKS cluster {name} ({exc}); it needs an access entry with "
            "cluster-wide rights (verify makes a namespace and PersistentVolumes and reads every "
            "node): AmazonEKSClusterAdminPolicy, e.g. through eks.admin_principal_arns in the "
            "config on the next deploy"
        ) from None
    run.kubernetes = api


def attach_fsx(run: VerifyRun) -> None:
    """``run.fsx``: file access on the file system, from the orchestrator's side (None when there
    is no file system or it cannot be read; the fsx and dra checks then say why)."""
    try:
        facts = aws_checks.fsx_facts(run)
    except aws_checks.FsxUnknown:
        return
    if facts is None:
        return
    if run.config.is_slurm:
        from hyperpod_ops.verify.slurm import ControllerFsx

        run.fsx = ControllerFsx(run, facts.mount_path)
    else:
        from hyperpod_ops.verify.eks import PodFsx

        run.fsx = PodFsx(run)


# -- the command -------------------------------------------------------------------------------


def _print_results(
    run: VerifyRun,
    timed: Sequence[Timed],
    removals: Sequence[Removal],
    as_json: bool,
    code: int | None = None,
) -> int:
    """Print the clean-up failures and the summary (or the JSON document); the exit code."""
    if code is None:
        code = report.exit_code(timed, removals)
    if as_json:
        document = report.document(
            run_id=run.run_id,
            environment=run.config.name,
            cluster=run.config.cluster_name,
            orchestrator=run.config.orchestrator,
            region=run.config.region,
            timed=timed,
            removals=removals,
            code=code,
        )
        print(report.dumps(document))
    else:
        for removal in removals:
            line = report.removal_line(removal)
            if line:
                print(line)
        print(report.summary_line(run.run_id, timed, removals))
    return code


def _cleanup_only(run: VerifyRun, leftovers: Leftovers, as_json: bool) -> int:
    """``--cleanup RUN_ID``: remove what that run left."""
    run.made.extend(leftovers(run))
    if not run.made and not as_json:
        print(f"verify {run.run_id}: nothing of this run is left")
        return report.EXIT_PASSED
    removals = clean_up(run.made)
    if not as_json:
        for removal in removals:
            print(report.removal_line(removal) or f"PASS  cleanup: removed {removal.what}")
    return _print_results(run, [], removals, as_json)


def verify(
    run: VerifyRun,
    *,
    profile: str | None,
    as_json: bool,
    cleanup: bool,
    k8s_via: str | None,
    make_transport: MakeTransport = SsmTransport,
    make_k8s_transport: MakeK8sTransport = _https,
) -> int:
    """Connect to the cluster, run the checks (or only the clean-up of ``run.run_id``), clean up,
    report. Returns the exit code.

    :raises CannotRun: nothing can run (exit 2).
    """
    checks, leftovers = _orchestrator_modules(run.config)
    transport: SsmTransport | None = None
    if run.config.is_slurm:
        try:
            transport = make_transport(run.clients("ssm"), profile=profile)
        except PluginMissing as exc:
            raise CannotRun(str(exc)) from None
    try:
        reason = aws_checks.load_cluster(run)
        if reason is not None:
            raise CannotRun(reason)
        if transport is not None:
            connect_slurm(run, transport)
        else:
            connect_eks(run, k8s_via, make_k8s_transport)
        attach_fsx(run)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        raise CannotRun(
            throttled_reason(exc, [run.clients("sagemaker")]) or describe_error(exc)
        ) from None
    if cleanup:
        return _cleanup_only(run, leftovers, as_json)
    names = SLURM_CHECKS if run.config.is_slurm else EKS_CHECKS

    def progress(result: Result) -> None:
        if not as_json:
            print(report.result_line(result), flush=True)

    if not as_json:
        print(
            f"verify {run.config.cluster_name} ({run.config.orchestrator}, {run.config.region}): "
            f"run {run.run_id}; checks {', '.join(c for c in CHECK_ORDER if c in run.options.checks)}",
            flush=True,
        )
    timed: list[Timed] = []
    try:
        run_checks(run, checks, names, progress, timed)
    except KeyboardInterrupt:
        if transport is not None:
            transport.abort()
        print(f"verify {run.run_id}: interrupted; removing what the run made", file=sys.stderr)
        removals = clean_up(run.made)
        return _print_results(run, timed, removals, as_json, report.EXIT_INTERRUPTED)
    except BaseException:
        clean_up(run.made)  # unusable credentials or a bug: still try to leave nothing behind
        raise
    removals = clean_up(run.made)
    return _print_results(run, timed, removals, as_json)


def _options(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """This command's own options, and the rest for :func:`run_command`."""
    parser = argparse.ArgumentParser(prog=f"python -m hyperpod_ops.{PROG}", add_help=False)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--checks", default=None)
    parser.add_argument("--cleanup", default=None, metavar="RUN_ID")
    parser.add_argument("--team", default=None)
    parser.add_argument("--priority-class", default=None)
    parser.add_argument("--deep-health-check", action="store_true")
    parser.add_argument("--nccl-all-nodes", action="store_true")
    parser.add_argument("--k8s-via", default=None, metavar="HOST:PORT")
    own, rest = parser.parse_known_args(list(argv))
    profile = argparse.ArgumentParser(add_help=False)
    profile.add_argument("--profile", default=None)
    own.profile = profile.parse_known_args(rest)[0].profile
    if own.checks is not None:
        names = [c.strip() for c in own.checks.split(",") if c.strip()]
        unknown = [c for c in names if c not in CHECK_ORDER]
        if unknown or not names:
            parser.error(
                f"--checks (CHECKS=): {', '.join(unknown) or 'empty'} is not a check; the checks "
                f"are {', '.join(CHECK_ORDER)}"
            )
        own.checks = tuple(names)
    if own.cleanup is not None and not RUN_ID_PATTERN.match(own.cleanup):
        parser.error(
            f"--cleanup: {own.cleanup!r} is not a run id (hpv- and 12 hex digits, as printed)"
        )
    if own.team is not None and (
        not re.match(TASK_GOVERNANCE_NAME_PATTERN, own.team)
        or len(own.team) > TASK_GOVERNANCE_NAME_MAX
    ):
        parser.error(
            f"--team: {own.team!r} is not a team name (eks.task_governance.teams[].name: "
            "lowercase letters, digits and inner hyphens)"
        )
    if own.k8s_via is not None and not re.fullmatch(
        r"[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}", own.k8s_via
    ):
        parser.error(f"--k8s-via: {own.k8s_via!r} is not HOST:PORT, e.g. 127.0.0.1:8443")
    return own, rest


DESCRIPTION = (
    "Prove that the deployed environment of CONFIG works: cluster, health, nodes, EFA, "
    "containers, NCCL, FSx, data repositories, accounting (docs/operations.md). Also: --checks "
    "a,b (make: CHECKS=a,b); --json; --cleanup RUN_ID removes what a crashed run left; --team NAME "
    "(and --priority-class P) on task-governance clusters: the test pods and MPIJob run in the "
    "team's namespace hyperpod-ns-NAME through its LocalQueue; --deep-health-check starts HyperPod's "
    "deep health check (takes nodes into maintenance); --nccl-all-nodes; --k8s-via HOST:PORT "
    "reaches a private EKS endpoint through a forwarded port."
)


def main(
    argv: Sequence[str],
    make_clients: MakeClients = session_clients,
    make_transport: MakeTransport = SsmTransport,
    make_k8s_transport: MakeK8sTransport = _https,
) -> int:
    """The command line; tests pass stubbed clients, a transport with a fake plugin and a fake
    Kubernetes API."""
    own, rest = _options(argv)

    def command(config: EnvironmentConfig, clients: ClientFactory, project_root: Path) -> int:
        options = Options(
            checks=own.checks or CHECK_ORDER,
            team=own.team,
            priority_class=own.priority_class,
            deep_health_check=own.deep_health_check,
            nccl_all_nodes=own.nccl_all_nodes,
        )
        run = VerifyRun(config, clients, options=options)
        if own.cleanup:
            run.run_id = own.cleanup
        try:
            return verify(
                run,
                profile=own.profile,
                as_json=own.json,
                cleanup=own.cleanup is not None,
                k8s_via=own.k8s_via,
                make_transport=make_transport,
                make_k8s_transport=make_k8s_transport,
            )
        except CannotRun as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return report.EXIT_UNUSABLE

    return run_command(PROG, DESCRIPTION, argv=rest, command=command, make_clients=make_clients)

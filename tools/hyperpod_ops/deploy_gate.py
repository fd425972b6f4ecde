"""The deploy gate: before anything is deployed, compare what would be deployed with what is
deployed now, and stop when a resource that holds data, or a cluster, would be replaced or
deleted without the user saying so (``make deploy``, and each stage of the pipeline).

``python -m hyperpod_ops.deploy_gate CONFIG [--allow-replace STACK/ID,...] [-- CDK ARGS...]``
(``make deploy CONFIG=... ALLOW_REPLACE=...``) synthesizes CONFIG once, into a temporary cloud
assembly, by running the CDK app in a subprocess as the CDK CLI does (``python app.py`` of the
working directory, or ``--app``: :mod:`hyperpod_ops.cdk_app`); reads each of its stacks' current
template from CloudFormation (``GetTemplate``, stage ``Original``: the template as submitted,
like the synthesized one; a stack that does not exist, or whose first create rolled back, is all
new; a stack in another account than the caller's through that account's CDK look-up role);
compares the two with the comparison of ``make update-notes``
(:func:`hyperpod_ops.update_notes.notes`) and prints the notes. It stops with exit 3 when a
resource of :data:`hyperpod_ops.template_changes.STATEFUL_TYPES` (file systems, buckets,
databases and their secrets and keys, audit log groups, metrics workspaces, the HyperPod and EKS
clusters) would be replaced or deleted and its ``<stack>/<logical id>`` is not in
``--allow-replace``. Otherwise it runs ``cdk deploy --app <that assembly> --all --concurrency 4
--require-approval broadening CDK ARGS``: what was checked is what is deployed.

``python -m hyperpod_ops.deploy_gate --assembly DIR [--lookup-role] [--allow-replace ...]`` gates
an assembly synthesized elsewhere (any CDK app's) and deploys nothing: the pipeline runs it
before each stage's deploy actions, on the stage's nested assembly (``cdk.out/assembly-<stage>``),
reading the target account through the CDK bootstrap's look-up role (``--lookup-role``), which
carries ReadOnlyAccess and trusts the tooling account (``cdk bootstrap --trust``).

Exit status: 0 (deployed, or nothing to stop in ``--assembly`` mode; else the exit status of
``cdk deploy``), 2 (a config error, a bad argument, no usable credentials, CloudFormation cannot
be read, the synth failed: one line each), 3 (stopped: a replacement or deletion that is not
allowed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import ConfigError
from hyperpod_cdk.config.loader import load_file
from hyperpod_ops import cdk_app, credentials
from hyperpod_ops.aws import (
    MAX_ATTEMPTS,
    THROTTLING_ERROR_CODES,
    describe_error,
    error_code,
    error_message,
    is_client_error,
    session_clients,
    throttled_reason,
    unavailable_reason,
)
from hyperpod_ops.cdk_app import AssemblyError, AssemblyStack, assembly_stacks
from hyperpod_ops.deploy_target import DEFAULT_QUALIFIER, QUALIFIER_CONTEXT_KEY
from hyperpod_ops.template_changes import ResourceChange, Templates
from hyperpod_ops.update_notes import DATA_LOSS_EXIT, notes, render

EXIT_UNUSABLE = 2
EXIT_STOPPED = DATA_LOSS_EXIT

# What `make deploy` runs once the gate lets the assembly through (the assembly and the user's
# CDK_ARGS follow). --all deploys the top-level stacks of the assembly: those the gate checked.
CDK_DEPLOY = ("deploy", "--all", "--concurrency", "4", "--require-approval", "broadening")

# Stacks in these states have no resources to lose: the first create was never executed
# (a change set under review) or failed and rolled back, which the CDK CLI deletes before it
# creates the stack again (aws-cdk 2.1148.1 lib/index.js: StackStatus.isCreationFailure is
# ROLLBACK_COMPLETE or ROLLBACK_FAILED, "Deleting it before attempting to re-create it").
NOTHING_DEPLOYED_STATES = frozenset({"REVIEW_IN_PROGRESS", "ROLLBACK_COMPLETE"})
# A first create whose rollback failed may still hold resources, which that deletion would take.
HALF_DEPLOYED_STATES = frozenset({"ROLLBACK_FAILED"})

# Our own attempts at a throttled CloudFormation read, on top of botocore's standard retries
# (a gate that gives up on throttling would only make the user run it again); seconds between.
THROTTLE_BACKOFF = (2.0, 4.0, 8.0, 16.0)

# The look-up role `cdk bootstrap` creates in each environment (ReadOnlyAccess, no kms:Decrypt);
# aws/aws-cdk packages/aws-cdk/lib/api/bootstrap/bootstrap-template.yaml (LookupRole).
LOOKUP_ROLE_NAME = "cdk-{qualifier}-lookup-role-{account}-{region}"

# Builds the clients of a region (and optional profile): hyperpod_ops.aws.session_clients.
MakeClients = Callable[[str, str | None], Callable[[str], Any]]
Sleep = Callable[[float], None]
# The client factory of a region with an assumed role's credentials: (base clients, role, region).
Assume = Callable[[Callable[[str], Any], str, str], Callable[[str], Any]]


class GateError(Exception):
    """The gate cannot run (an argument, the assembly, AWS): one line, exit 2."""


# -- the assembly ------------------------------------------------------------------------------


def synthesize(
    config_file: Path,
    outdir: Path,
    *,
    context: Mapping[str, Any],
    account: str | None,
    project_root: Path,
    app: str | None = None,
) -> None:
    """Synthesize a config file into ``outdir`` as the CDK CLI runs the app (in a subprocess,
    :func:`hyperpod_ops.cdk_app.synthesize`): an environment file, or a pipeline file and its
    stages; ``account``: the deploying account, for an environment that names none (the CLI's
    CDK_DEFAULT_ACCOUNT)."""
    try:
        cdk_app.synthesize(
            config_file,
            outdir,
            project_root=project_root,
            app=app,
            context=context,
            account=account,
        )
    except cdk_app.SynthError as exc:  # e.g. an unacknowledged cdk-nag finding (report above)
        raise GateError(f"the synth failed, nothing is deployed: {exc}") from None


# -- what is deployed --------------------------------------------------------------------------


def _retrying(call: Callable[..., Any], sleep: Sleep, **params: Any) -> Any:
    for pause in (*THROTTLE_BACKOFF, None):
        try:
            return call(**params)
        except Exception as exc:
            if pause is None or error_code(exc) not in THROTTLING_ERROR_CODES:
                raise
            sleep(pause)
    raise AssertionError("unreachable")


def _template_body(body: Any) -> dict[str, Any]:
    """botocore decodes a JSON template; a YAML one (a stack made by hand) stays text."""
    if not isinstance(body, Mapping):
        body = importlib.import_module("cfnlint.decode.cfn_yaml").loads(str(body))
    template: dict[str, Any] = json.loads(json.dumps(body))  # plain dicts, YAML tags resolved
    return template


def deployed_template(cloudformation: Any, stack_name: str, sleep: Sleep) -> dict[str, Any] | None:
    """The template of ``stack_name`` as deployed now, or None when the stack holds nothing yet
    (it does not exist, its first create rolled back, or waits as a change set under review)."""
    try:
        answer = _retrying(cloudformation.describe_stacks, sleep, StackName=stack_name)
    except Exception as exc:
        # DescribeStacks answers ValidationError "Stack with id X does not exist"
        if error_code(exc) == "ValidationError" and "does not exist" in error_message(exc):
            return None
        raise
    status = answer["Stacks"][0]["StackStatus"]
    if status in NOTHING_DEPLOYED_STATES:
        return None
    if status in HALF_DEPLOYED_STATES:
        raise GateError(
            f"stack {stack_name} is {status}: the CDK CLI would delete it, with whatever it still "
            "holds, before creating it again; see what is left in the CloudFormation console and "
            "delete the stack yourself first"
        )
    template = _retrying(
        cloudformation.get_template, sleep, StackName=stack_name, TemplateStage="Original"
    )
    return _template_body(template["TemplateBody"])


def deployed_templates(
    stacks: Sequence[AssemblyStack],
    clients_of: Callable[[AssemblyStack], Callable[[str], Any]],
    sleep: Sleep = time.sleep,
) -> Templates:
    """The deployed template of each stack that holds something, by stack name (read in the
    order of region and name); ``clients_of(stack)`` is the client factory that reads it."""
    found = {}
    for stack in sorted(stacks, key=lambda s: (s.region, s.name)):
        template = deployed_template(clients_of(stack)("cloudformation"), stack.name, sleep)
        if template is not None:
            found[stack.name] = template
    return found


# -- the decision ------------------------------------------------------------------------------


def parse_allowed(text: str) -> set[str]:
    """``stack/LogicalId,stack/LogicalId`` (spaces and empty items ignored)."""
    allowed = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        stack, _, logical_id = item.partition("/")
        if not stack or not logical_id or "/" in logical_id:
            raise GateError(
                f"ALLOW_REPLACE: {item!r} is not <stack>/<logical id> "
                "(e.g. research-full-cluster/HyperPodCluster, as the notes name it)"
            )
        allowed.add(item)
    return allowed


def gated(change: ResourceChange) -> bool:
    """A replacement or deletion of a resource that holds data or is a cluster."""
    return change.stateful is not None


def change_id(change: ResourceChange) -> str:
    """``<stack>/<logical id>``: how the notes, ALLOW_REPLACE and allow_replace name it."""
    return f"{change.stack}/{change.logical_id}"


@dataclass(frozen=True)
class Verdict:
    """The notes, and which gated changes are stopped or allowed."""

    text: str
    stopped: list[ResourceChange]
    allowed: list[ResourceChange]
    unused: list[str]


def judge(
    before: Templates, after: Templates, allowed: set[str], *, region: str, title: str
) -> Verdict:
    """Compare ``after`` (to be deployed) with ``before`` (deployed now; a stack it lacks is new)."""
    changes = notes(before, after, region)
    text = render(changes, before, after, title=title)
    hits = [c for c in changes if gated(c)]
    used = {change_id(c) for c in hits}
    return Verdict(
        text,
        [c for c in hits if change_id(c) not in allowed],
        [c for c in hits if change_id(c) in allowed],
        sorted(allowed - used),
    )


def judge_deployed(
    stacks: Sequence[AssemblyStack],
    clients_of: Callable[[AssemblyStack], Callable[[str], Any]],
    sleep: Sleep,
    allowed: set[str],
    *,
    region: str,
    subject: str,
) -> Verdict:
    """:func:`judge` of ``stacks`` (to be deployed) against their deployed templates, under the
    title ``Deploy gate: <subject> against the deployed stacks (<account>/<region>, ...)``."""
    before = deployed_templates(stacks, clients_of, sleep)
    after = {stack.name: dict(stack.template) for stack in stacks}
    where = ", ".join(sorted({f"{s.account or '?'}/{s.region}" for s in stacks}))
    return judge(
        before,
        after,
        allowed,
        region=region,
        title=f"Deploy gate: {subject} against the deployed stacks ({where})",
    )


def report(verdict: Verdict, prog: str, retry_hint: Callable[[list[str]], str]) -> int:
    """Print the notes (stdout) and the decision (stderr); exit 0 (go on) or 3 (stopped).
    ``retry_hint(ids)`` says how to let the changes ``ids`` through."""
    print(verdict.text)
    for name in verdict.unused:
        print(f"{prog}: allowed {name} is not replaced or deleted by this deploy", file=sys.stderr)
    for change in verdict.allowed:
        print(f"{prog}: allowed: {change.action} {change_id(change)}", file=sys.stderr)
    if not verdict.stopped:
        return 0
    actions = " or ".join(sorted({change.action for change in verdict.stopped}))
    stopped = ", ".join(f"{change_id(c)} ({c.resource_type})" for c in verdict.stopped)
    print(
        f"{prog}: stopped before deploying: it would {actions} what holds data or a cluster: "
        f"{stopped}",
        file=sys.stderr,
    )
    ids = [change_id(c) for c in [*verdict.allowed, *verdict.stopped]]
    print(
        f"{prog}: read the notes above; to let exactly these through, {retry_hint(ids)}",
        file=sys.stderr,
    )
    return EXIT_STOPPED


# -- AWS ---------------------------------------------------------------------------------------


def lookup_role_arn(partition: str, account: str, region: str, qualifier: str) -> str:
    """The ARN of the CDK bootstrap look-up role of an environment."""
    name = LOOKUP_ROLE_NAME.format(qualifier=qualifier, account=account, region=region)
    return f"arn:{partition}:iam::{account}:role/{name}"


def bootstrap_qualifier(project_root: Path) -> str:
    """The bootstrap qualifier the app's templates use (cdk.json, else CDK's default)."""
    try:
        context = json.loads((project_root / "cdk.json").read_text())["context"]
    except (OSError, ValueError, KeyError):
        return DEFAULT_QUALIFIER
    return str(context.get(QUALIFIER_CONTEXT_KEY) or DEFAULT_QUALIFIER)


def assumed_clients(
    base: Callable[[str], Any], role_arn: str, region: str, session_name: str = "deploy-gate"
) -> Callable[[str], Any]:
    """Clients of ``region`` with the credentials of ``role_arn``, assumed through ``base``'s STS."""
    boto3 = importlib.import_module("boto3")
    config = importlib.import_module("botocore.config")
    credentials = base("sts").assume_role(RoleArn=role_arn, RoleSessionName=session_name)[
        "Credentials"
    ]
    session = boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=region,
    )
    settings = config.Config(retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS})
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            clients[service] = session.client(service, config=settings)
        return clients[service]

    return client


def stack_clients(
    make_clients: MakeClients,
    profile: str | None,
    identity: Mapping[str, Any],
    assume: Assume,
    qualifier: str,
    *,
    always_assume: bool,
) -> Callable[[AssemblyStack], Callable[[str], Any]]:
    """Clients that read a stack where it is deployed: the caller's own in its account; in any
    other account (or always, for a pipeline stage), through that account's CDK look-up role,
    as the CDK CLI reaches a target account through its bootstrap roles. ``identity``: the
    caller's (STS GetCallerIdentity)."""
    caller = str(identity["Account"])
    partition = str(identity["Arn"]).split(":")[1]
    cache: dict[tuple[str | None, str], Callable[[str], Any]] = {}

    def clients_of(stack: AssemblyStack) -> Callable[[str], Any]:
        key = (stack.account, stack.region)
        if key not in cache:
            base = make_clients(stack.region, profile)
            if stack.account is not None and (always_assume or stack.account != caller):
                role = lookup_role_arn(partition, stack.account, stack.region, qualifier)
                base = assume(base, role, stack.region)
            cache[key] = base
        return cache[key]

    return clients_of


def _aws_reason(exc: BaseException, clients: Sequence[Any]) -> str | None:
    reason = unavailable_reason(exc, credentials.PROFILE_OPTION) or throttled_reason(exc, clients)
    if reason is None and is_client_error(exc):
        reason = describe_error(exc, clients)
    return reason


def _context(cdk_args: Sequence[str]) -> dict[str, str]:
    """The ``-c key=value`` / ``--context key=value`` of the CDK arguments (the app's context)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-c", "--context", action="append", default=[])
    known, _ = parser.parse_known_args(list(cdk_args))
    pairs = (item.partition("=") for item in known.context)
    return {key: value for key, _, value in pairs if key}


def _profile(cdk_args: Sequence[str]) -> str | None:
    """The ``--profile`` of the CDK arguments, as the credentials check reads it."""
    return credentials._profile(cdk_args)  # the same reading as the line before it in make


# -- the commands ------------------------------------------------------------------------------


def gate_workstation(
    config_file: str,
    allowed: set[str],
    cdk_args: Sequence[str],
    *,
    make_clients: MakeClients,
    sleep: Sleep,
    project_root: Path,
    assume: Assume,
    app: str | None = None,
) -> int:
    """``make deploy``: synthesize, gate, then deploy exactly that assembly."""
    prog = "deploy"
    path = Path(config_file)
    if not path.is_file():
        raise GateError(f"{config_file} is not a file")
    profile = _profile(cdk_args)
    cdk = shutil.which("cdk")
    if cdk is None:
        raise GateError("the cdk CLI is not on PATH (make deploy runs `source scripts/env.sh`)")
    try:
        config, _, warnings = load_file(path, project_root)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return EXIT_UNUSABLE
    for warning in warnings:
        print(warning, file=sys.stderr)
    identity = make_clients(config.region, profile)("sts").get_caller_identity()
    clients_of = stack_clients(
        make_clients,
        profile,
        identity,
        assume,
        bootstrap_qualifier(project_root),
        always_assume=False,
    )
    with tempfile.TemporaryDirectory(prefix="hyperpod-deploy-") as outdir:
        synthesize(
            path.resolve(),
            Path(outdir),
            context=_context(cdk_args),
            account=str(identity["Account"]),
            project_root=project_root,
            app=app,
        )
        stacks = assembly_stacks(Path(outdir))
        verdict = judge_deployed(
            stacks, clients_of, sleep, allowed, region=config.region, subject=config_file
        )
        code = report(
            verdict,
            prog,
            lambda ids: f"run make deploy CONFIG={config_file} ALLOW_REPLACE={','.join(ids)}",
        )
        if code != 0:
            return code
        argv = [cdk, *CDK_DEPLOY[:1], "--app", outdir, *CDK_DEPLOY[1:], *cdk_args]
        print(f"{prog}: the deployed stacks allow it; {' '.join(argv[1:])}", file=sys.stderr)
        return subprocess.run(argv, check=False).returncode


def gate_assembly(
    directory: Path,
    allowed: set[str],
    *,
    lookup_role: bool,
    make_clients: MakeClients,
    sleep: Sleep,
    project_root: Path,
    stage: str,
    assume: Assume,
    qualifier: str | None = None,
) -> int:
    """A pipeline stage: gate an assembly synthesized by the pipeline's synth step."""
    stacks = assembly_stacks(directory)
    if not stacks:
        raise GateError(f"{directory} holds no stack")
    identity = make_clients(stacks[0].region, None)("sts").get_caller_identity()
    if lookup_role and any(s.account is None for s in stacks):
        raise GateError(f"{directory}: a stack names no account, so no look-up role to assume")
    clients_of = stack_clients(
        make_clients,
        None,
        identity,
        assume,
        qualifier or bootstrap_qualifier(project_root),
        always_assume=lookup_role,
    )
    verdict = judge_deployed(
        stacks, clients_of, sleep, allowed, region=stacks[0].region, subject=f"stage {stage}"
    )
    return report(
        verdict,
        f"gate {stage}",
        lambda ids: f"give stage {stage} of the pipeline file allow_replace: [{', '.join(ids)}]",
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    make_clients: MakeClients | None = None,
    sleep: Sleep = time.sleep,
    project_root: Path | None = None,
    assume: Assume | None = None,
) -> int:
    """The command; tests pass stubbed clients (``make_clients``, ``assume``) and a ``sleep``
    that does not wait (the CDK CLI is whichever ``cdk`` is first on PATH). ``project_root``:
    the CDK project (its app.py and cdk.json), default the working directory."""
    project_root = Path.cwd() if project_root is None else project_root
    args_list = list(sys.argv[1:] if argv is None else argv)
    cdk_args: list[str] = []
    if "--" in args_list:
        split = args_list.index("--")
        args_list, cdk_args = args_list[:split], args_list[split + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m hyperpod_ops.deploy_gate",
        description="Compare what would be deployed with what is deployed; stop (exit 3) before a "
        "resource that holds data or a cluster is replaced or deleted, unless allowed.",
    )
    parser.add_argument("config", nargs="?", help="the config to synthesize and deploy")
    parser.add_argument(
        "--allow-replace",
        default="",
        help="<stack>/<logical id>,...: the replacements and deletions to let through",
    )
    parser.add_argument(
        "--assembly",
        type=Path,
        help="gate this synthesized assembly (a pipeline stage's) and deploy nothing",
    )
    parser.add_argument("--stage", default="", help="with --assembly: the stage's name")
    parser.add_argument(
        "--lookup-role",
        action="store_true",
        help="with --assembly: read the target account through its CDK bootstrap look-up role",
    )
    parser.add_argument(
        "--qualifier",
        default=None,
        help="with --lookup-role: the bootstrap qualifier (default: cdk.json's, else hnb659fds)",
    )
    cdk_app.add_app_option(parser, when="with CONFIG")
    args = parser.parse_args(args_list)
    if (args.config is None) == (args.assembly is None):
        parser.error("give CONFIG or --assembly DIR (one of them)")
    if make_clients is None:
        make_clients = session_clients
    prog = "deploy" if args.config else f"gate {args.stage or args.assembly}"
    seen: list[Any] = []

    assume_role = assume or assumed_clients

    def recorded(factory: Callable[[str], Any]) -> Callable[[str], Any]:
        """``factory``, keeping each client it makes (their IAM prefixes word a failed call)."""

        def client(service: str) -> Any:
            made = factory(service)
            if made not in seen:
                seen.append(made)
            return made

        return client

    def recording(region: str, profile: str | None) -> Callable[[str], Any]:
        assert make_clients is not None
        return recorded(make_clients(region, profile))

    def assuming(base: Callable[[str], Any], role: str, region: str) -> Callable[[str], Any]:
        return recorded(assume_role(base, role, region))

    try:
        allowed = parse_allowed(args.allow_replace)
        if args.config:
            return gate_workstation(
                args.config,
                allowed,
                cdk_args,
                make_clients=recording,
                sleep=sleep,
                project_root=project_root,
                assume=assuming,
                app=args.app,
            )
        return gate_assembly(
            args.assembly,
            allowed,
            lookup_role=args.lookup_role,
            make_clients=recording,
            sleep=sleep,
            project_root=project_root,
            stage=args.stage or str(args.assembly),
            assume=assuming,
            qualifier=args.qualifier,
        )
    except (GateError, AssemblyError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except Exception as exc:
        reason = _aws_reason(exc, seen)
        if reason is None:
            raise
        print(f"{prog}: {reason}", file=sys.stderr)
        return EXIT_UNUSABLE


if __name__ == "__main__":
    sys.exit(main())

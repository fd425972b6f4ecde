"""Update notes: what deploying a config over an earlier one adds, updates, replaces and deletes,
stack by stack, offline (``make update-notes CONFIG=... BASE=...``).

Both configs are synthesized with the current code, each by the CDK app in a subprocess
(``python app.py`` of the project, the working directory; ``--app`` for another command, as
``cdk --app``: :mod:`hyperpod_ops.cdk_app`); the templates are compared resource by
resource (:func:`hyperpod_ops.template_changes.resource_changes`): a changed create-only property
(CloudFormation's resource schemas, as cfn-lint ships them), followed through the references it
makes, is a replacement; a logical id that leaves its stack is a deletion (or, when the stack
gains one resource of the same type at the same time, a replacement under a new id: a renamed
team's compute quota, for instance). A resource that holds data is marked, with what is lost and
whether its ``DeletionPolicy`` keeps the old one.

The base is a config file, or ``git:REV``: the same config path at a git revision (the
repository's tree at that revision is exported to a temporary directory, so the files the config
names, the lifecycle scripts among them, are that revision's too). Without credentials this is
what ``make diff`` shows against the deployed stacks, for the review of a change before it is
merged; ``make diff`` stays the check against what is really deployed.

Exit status: 0; 2 for a config error (either config), a failed synth or a bad argument; 3 with
``--fail-on-data-loss`` when a resource that holds data would be replaced or deleted.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hyperpod_ops import cdk_app
from hyperpod_ops.template_changes import ResourceChange, Templates, resource_changes

DATA_LOSS_EXIT = 3

_ACTION_ORDER = ("delete", "replace", "update", "add")


class BaseError(Exception):
    """The base could not be read (a bad revision, a path outside the repository)."""


def synthesize(
    config_file: Path, project_root: Path, *, files_root: Path | None = None, app: str | None = None
) -> tuple[str, Templates]:
    """The region and the templates (by stack name) of an environment file: validated here
    (raises ConfigError for an invalid file), then synthesized by the app in a subprocess
    (:func:`hyperpod_ops.cdk_app.synthesize`; raises SynthError). ``files_root``: where the
    config's relative paths are read from, when not ``project_root`` (a git base)."""
    from hyperpod_cdk.config import EnvironmentConfig
    from hyperpod_cdk.config.loader import load_environment

    config: EnvironmentConfig = load_environment(config_file, files_root or project_root)
    with tempfile.TemporaryDirectory(prefix="hyperpod-update-notes-") as outdir:
        cdk_app.synthesize(
            config_file, Path(outdir), project_root=project_root, app=app, files_root=files_root
        )
        templates = cdk_app.assembly_templates(Path(outdir))
    return config.region, templates


def export_revision(revision: str, project_root: Path, into: Path) -> Path:
    """Write the repository's tree at ``revision`` into ``into``; the project root there."""

    def git(*args: str) -> bytes:
        done = subprocess.run(
            ["git", "-C", str(project_root), *args], capture_output=True, check=False
        )
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise BaseError(
                f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'} (base git:{revision})"
            )
        return done.stdout

    top = Path(git("rev-parse", "--show-toplevel").decode().strip())
    commit = git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").decode().strip()
    with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", commit))) as tree:
        tree.extractall(into, filter="data")
    return into / project_root.resolve().relative_to(top.resolve())


def notes(before: Templates, after: Templates, region: str) -> list[ResourceChange]:
    """The changes, each stack's in the order delete, replace, update, add."""
    changes = resource_changes(before, after, region=region)
    stacks = list(dict.fromkeys(change.stack for change in changes))
    return sorted(
        changes,
        key=lambda c: (stacks.index(c.stack), _ACTION_ORDER.index(c.action), c.logical_id),
    )


def _retained(change: ResourceChange, before: Templates) -> bool:
    resource = before.get(change.stack, {}).get("Resources", {}).get(change.logical_id, {})
    return bool(resource.get("DeletionPolicy") == "Retain")


def render(
    changes: Sequence[ResourceChange], before: Templates, after: Templates, *, title: str
) -> str:
    """The notes as text: one block per stack (unchanged stacks in one line), data first."""
    lines = [title, ""]
    by_stack: dict[str, list[ResourceChange]] = {}
    for change in changes:
        by_stack.setdefault(change.stack, []).append(change)
    for stack in [*after, *(s for s in before if s not in after)]:
        if stack not in before:
            lines.append(f"{stack}: new stack ({len(after[stack].get('Resources', {}))} resources)")
            continue
        if stack not in after:
            lines.append(
                f"{stack}: REMOVED from the app (its resources are deleted unless retained)"
            )
        own = by_stack.get(stack, [])
        if not own:
            if stack in after:
                same = before[stack] == after[stack]
                lines.append(
                    f"{stack}: unchanged" + ("" if same else " (outputs or metadata only)")
                )
            continue
        counts = {action: sum(c.action == action for c in own) for action in _ACTION_ORDER}
        # delete -> deleted, replace -> replaced, update -> updated (in place), add -> added
        past = {"delete": "deleted", "replace": "replaced", "update": "updated in place"}
        summary = ", ".join(f"{n} {past.get(a, 'added')}" for a, n in counts.items() if n)
        lines.append(f"{stack}: {summary}")
        for change in own:
            target = change.logical_id + (
                f" -> {change.new_logical_id}" if change.new_logical_id else ""
            )
            lines.append(f"  {change.action.upper():8} {target}  {change.resource_type}")
            if change.why:
                lines.append(f"           {change.why}")
            if change.stateful:
                kept = (
                    "its DeletionPolicy Retain keeps the old one (and its data), but the stack "
                    "then uses a new, empty one"
                    if _retained(change, before)
                    else "the old one is DELETED"
                )
                lines.append(f"           DATA: {change.stateful}; {kept}")
            if change.disruption:
                lines.append(f"           LOSES: {change.disruption}")
    lost = [c for c in changes if c.stateful]
    lines.append("")
    lines.append(
        "Resources that hold data replaced or deleted: "
        + (", ".join(f"{c.stack}/{c.logical_id}" for c in lost) if lost else "none")
    )
    return "\n".join(lines)


def as_json(changes: Sequence[ResourceChange]) -> list[dict[str, Any]]:
    return [
        {
            "stack": c.stack,
            "logical_id": c.logical_id,
            "new_logical_id": c.new_logical_id,
            "type": c.resource_type,
            "action": c.action,
            "why": c.why,
            "data": c.stateful,
            "loses": c.disruption,
        }
        for c in changes
    ]


def main(argv: Sequence[str] | None = None, project_root: Path | None = None) -> int:
    """The command; ``project_root``: the CDK project (its app.py, cdk.json and git repository),
    default the working directory."""
    project_root = Path.cwd() if project_root is None else project_root
    parser = argparse.ArgumentParser(
        prog="make update-notes",
        description="What deploying CONFIG over BASE adds, updates, replaces and deletes, per "
        "stack (offline; both synthesized with the current code).",
    )
    parser.add_argument("config", help="the environment file to deploy")
    parser.add_argument(
        "--base",
        default="git:HEAD",
        help="the earlier config: a file, or git:REV for the same path at a git revision "
        "(default git:HEAD)",
    )
    parser.add_argument("--json", action="store_true", help="the changes as JSON")
    cdk_app.add_app_option(parser)
    parser.add_argument(
        "--fail-on-data-loss",
        action="store_true",
        help=f"exit {DATA_LOSS_EXIT} when a resource that holds data is replaced or deleted",
    )
    args = parser.parse_args(argv)

    from hyperpod_cdk.config import ConfigError

    config_file = Path(args.config).resolve()
    if not config_file.is_file():
        print(f"update-notes: {args.config} is not a file", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="hyperpod-update-base-") as scratch:
        try:
            if args.base.startswith("git:"):
                revision = args.base[4:] or "HEAD"
                base_root = export_revision(revision, project_root, Path(scratch))
                try:
                    relative = config_file.relative_to(project_root.resolve())
                except ValueError:
                    raise BaseError(
                        f"{args.config} is outside the repository: a git base needs a config in it"
                    ) from None
                at_revision = base_root / relative
                # not there: a new environment, every stack is new
                base_file: Path | None = at_revision if at_revision.is_file() else None
            else:
                base_root, base_file = project_root, Path(args.base).resolve()
                if not base_file.is_file():
                    raise BaseError(f"--base {args.base} is not a file (or git:REV)")
        except BaseError as exc:
            print(f"update-notes: {exc}", file=sys.stderr)
            return 2
        try:
            region, after = synthesize(config_file, project_root, app=args.app)
            before: Templates = (
                {}
                if base_file is None
                else synthesize(base_file, project_root, files_root=base_root, app=args.app)[1]
            )
        except ConfigError as exc:
            for issue in [*exc.issues, *exc.warnings]:
                print(issue, file=sys.stderr)
            return 2
        except (cdk_app.SynthError, cdk_app.AssemblyError) as exc:
            print(f"update-notes: the synth failed: {exc}", file=sys.stderr)
            return 2
        changes = notes(before, after, region)
        if args.json:
            print(json.dumps(as_json(changes), indent=2))
        else:
            base = args.base if base_file is not None else f"{args.base} (no such config there)"
            print(render(changes, before, after, title=f"Update notes: {args.config} over {base}"))
    if args.fail_on_data_loss and any(c.stateful for c in changes):
        return DATA_LOSS_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())

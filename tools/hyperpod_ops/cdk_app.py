"""Run a CDK app in a subprocess, as the CDK CLI does, and read the cloud assembly it writes.

The update notes and the deploy gate need templates; this package imports no ``aws_cdk``, so
they run the app: ``<python> <project>/app.py`` by default (this repository's app), or any
command (``--app``, as ``cdk --app``), with ``CDK_OUTDIR`` (where to write the assembly) and
``CDK_CONTEXT_JSON`` (the context: ``cdk.json``'s, the caller's ``-c key=value``, and ``config``
the file to synthesize) set as the CDK CLI sets them. The app's ``manifest.json`` then names
each stack, where it deploys and its template file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The context key app.py reads the config file from (`cdk synth -c config=...`).
CONFIG_CONTEXT_KEY = "config"
# The context key app.py resolves the config's relative paths (lifecycle scripts, users file)
# from, when not its own folder: the update notes' git base, exported to a temporary folder.
PROJECT_ROOT_CONTEXT_KEY = "project_root"


class SynthError(Exception):
    """The app did not write an assembly (its output was relayed to stderr before)."""


class AssemblyError(Exception):
    """A directory is not a cloud assembly the tools can read."""


@dataclass(frozen=True)
class AssemblyStack:
    """One top-level stack of a cloud assembly: where it deploys and its template."""

    name: str
    account: str | None
    region: str
    template: Mapping[str, Any]


APP_OPTION_HELP = (
    "the command that runs the CDK app, as cdk --app; it reads the file from the context key "
    "config, as app.py does (default: python app.py in the working directory)"
)


def add_app_option(parser: argparse.ArgumentParser, *, when: str = "") -> None:
    """The ``--app`` option of a command that synthesizes through :func:`synthesize`
    (``when``: the condition it applies under, e.g. ``"with CONFIG"``)."""
    parser.add_argument(
        "--app", default=None, help=f"{when}: {APP_OPTION_HELP}" if when else APP_OPTION_HELP
    )


def app_command(project_root: Path, app: str | None = None) -> list[str]:
    """The command that runs the app: ``app`` split as a shell would (``cdk --app``), else this
    Python running ``project_root/app.py``."""
    if app:
        return shlex.split(app)
    return [sys.executable, str(project_root / "app.py")]


def cdk_json_context(project_root: Path) -> dict[str, Any]:
    """The context of ``project_root/cdk.json`` (the feature flags), which the CLI would pass."""
    try:
        context = json.loads((project_root / "cdk.json").read_text(encoding="utf-8"))["context"]
    except (OSError, ValueError, KeyError):
        return {}
    return dict(context)


def synthesize(
    config_file: Path,
    outdir: Path,
    *,
    project_root: Path,
    app: str | None = None,
    context: Mapping[str, str] | None = None,
    account: str | None = None,
    files_root: Path | None = None,
) -> None:
    """Run the app on ``config_file`` into ``outdir`` (raises SynthError when it fails).

    ``context``: the ``-c key=value`` pairs of the CDK arguments; ``account``: the deploying
    account, for an environment file that names none (the CLI's ``CDK_DEFAULT_ACCOUNT``; None
    leaves it unset); ``files_root``: where the config's relative paths are read from, when not
    ``project_root``. The app's output is kept from the terminal unless the synth fails.
    """
    merged = {**cdk_json_context(project_root), **(context or {})}
    merged[CONFIG_CONTEXT_KEY] = str(config_file)
    if files_root is not None:
        merged[PROJECT_ROOT_CONTEXT_KEY] = str(files_root)
    env = {k: v for k, v in os.environ.items() if k not in ("CDK_DEFAULT_ACCOUNT", "CDK_OUTDIR")}
    env.update({"CDK_OUTDIR": str(outdir), "CDK_CONTEXT_JSON": json.dumps(merged)})
    if account:
        env["CDK_DEFAULT_ACCOUNT"] = account
    command = app_command(project_root, app)
    try:
        done = subprocess.run(
            command, cwd=project_root, env=env, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise SynthError(f"cannot run the app ({shlex.join(command)}): {exc}") from None
    if done.returncode != 0 or not (outdir / "manifest.json").is_file():
        sys.stderr.write(done.stdout + done.stderr)
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise SynthError(lines[-1] if lines else f"{shlex.join(command)} exit {done.returncode}")


def assembly_stacks(directory: Path) -> list[AssemblyStack]:
    """The stacks ``cdk deploy --app DIR --all`` deploys: the top-level stack artifacts of the
    assembly's ``manifest.json`` (nested assemblies, a pipeline's stages, are deployed by the
    pipeline, which gates them itself)."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AssemblyError(f"{directory} is not a cloud assembly ({exc})") from None
    stacks = []
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        properties = artifact.get("properties", {})
        environment = str(artifact.get("environment", ""))
        account, _, region = environment.removeprefix("aws://").partition("/")
        if not region or region.startswith("unknown-"):
            raise AssemblyError(f"stack {artifact_id} names no region ({environment})")
        template = json.loads((directory / properties["templateFile"]).read_text(encoding="utf-8"))
        stacks.append(
            AssemblyStack(
                str(properties.get("stackName") or artifact_id),
                None if account.startswith("unknown-") else account,
                region,
                template,
            )
        )
    return stacks


def assembly_templates(directory: Path) -> dict[str, Mapping[str, Any]]:
    """The template of each top-level stack of an assembly, by stack name."""
    return {stack.name: stack.template for stack in assembly_stacks(directory)}

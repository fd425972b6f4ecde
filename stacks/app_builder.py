"""Build the CDK App of one config: what ``app.py`` and the tests share."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.nag import register_compliance_packs
from stacks.environment import DESTROY_CONTEXT_FLAG, EnvironmentStacks, build_environment

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def cdk_json_context(project_root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The context of ``cdk.json`` (feature flags), which the CDK CLI would pass."""
    context: dict[str, Any] = json.loads((project_root / "cdk.json").read_text())["context"]
    return context


def new_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> cdk.App:
    """An App with the project's feature flags, also when not run by the CDK CLI."""
    merged = {} if os.environ.get("CDK_CONTEXT_JSON") else cdk_json_context()
    merged.update(context or {})
    return cdk.App(context=merged, outdir=outdir)


def context_flag(app: cdk.App, name: str) -> bool:
    """A boolean ``-c name=true`` context value."""
    return str(app.node.try_get_context(name)).lower() in ("1", "true", "yes")


def build_app(
    config: EnvironmentConfig,
    *,
    app: cdk.App | None = None,
    project_root: Path = PROJECT_ROOT,
    nag: bool = True,
) -> tuple[cdk.App, EnvironmentStacks]:
    """The App of ``config``: every stack, and the compliance packs registered on the App."""
    app = app or new_app()
    stacks = build_environment(
        app,
        config,
        project_root=project_root,
        allow_data_destroy=context_flag(app, DESTROY_CONTEXT_FLAG),
    )
    if nag:
        register_compliance_packs(app, config.compliance_packs)
    return app, stacks

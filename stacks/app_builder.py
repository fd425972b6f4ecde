"""Build the CDK App of one config file (an environment or a pipeline): what ``app.py`` and the
tests share."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import aws_cdk as cdk

from hyperpod_cdk.compliance.nag import register_compliance_packs
from hyperpod_cdk.config import EnvironmentConfig, PipelineFileConfig
from hyperpod_cdk.config.pipeline import LoadedStage
from stacks.environment import DESTROY_CONTEXT_FLAG, EnvironmentStacks, build_environment

if TYPE_CHECKING:
    from stacks.pipeline import DeliveryPipeline

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


def union_of_packs(*pack_lists: Sequence[str]) -> list[str]:
    """Every pack named in any list, once, in the order first named."""
    return list(dict.fromkeys(name for packs in pack_lists for name in packs))


def pinned_cli_version(project_root: Path = PROJECT_ROOT) -> str | None:
    """The aws-cdk CLI version package.json pins, for the pipeline's self-mutation step."""
    package = json.loads((project_root / "package.json").read_text())
    version = package.get("devDependencies", {}).get("aws-cdk")
    return str(version) if version else None


def build_pipeline_app(
    config: PipelineFileConfig,
    stages: Sequence[LoadedStage],
    *,
    pipeline_file: Path,
    app: cdk.App | None = None,
    project_root: Path = PROJECT_ROOT,
    nag: bool = True,
) -> tuple[cdk.App, DeliveryPipeline]:
    """The App of a pipeline file: the pipeline stack and a Stage per environment.

    The compliance packs named by the pipeline file and by any stage are registered once, on
    the App: that covers the stacks inside the Stages too (registered on a Stage as well, each
    finding would be reported twice). ``pipeline_file`` must be inside ``project_root``.
    """
    # (CDK Pipelines and CodeBuild are loaded only for a pipeline file)
    from stacks.pipeline import build_delivery_pipeline

    app = app or new_app()
    relative = PurePosixPath(pipeline_file.resolve().relative_to(project_root.resolve()).as_posix())
    built = build_delivery_pipeline(
        app,
        config,
        stages,
        project_root=project_root,
        pipeline_file=relative,
        cli_version=pinned_cli_version(project_root),
    )
    if context_flag(app, DESTROY_CONTEXT_FLAG):
        # data safety: the flag is one workstation deploy's decision; a pipeline redeploys on
        # every push and its synth step never passes it, so its stages always keep their data
        cdk.Annotations.of(built.pipeline).add_warning_v2(
            "hyperpod:destroy-data-ignored",
            f"-c {DESTROY_CONTEXT_FLAG}=true does not apply to a pipeline: its stages keep their "
            "data (RETAIN, termination protection on) whatever storage.fsx.removal_policy says.",
        )
    if nag:
        register_compliance_packs(
            app,
            union_of_packs(config.compliance_packs, *(s.config.compliance_packs for s in stages)),
        )
    return app, built

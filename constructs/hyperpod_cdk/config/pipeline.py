"""The pipeline file: its models, each stage's environment config, and the rules across stages.

A pipeline file names one environment config per stage, by a path relative to
the pipeline file. :func:`hyperpod_cdk.config.loader.load_stages` reads and
validates them; the rules here are what no single file can show: where the
files are, and which stages would deploy over each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from hyperpod_cdk.config.base import Issue, StrictModel, matching, unique
from hyperpod_cdk.config.iam import IamConfig
from hyperpod_cdk.config.models import (
    Account,
    CompliancePack,
    EnvironmentConfig,
    EnvName,
    Region,
    TagKey,
    TagValue,
    default_compliance_packs,
)


class PipelineStage(StrictModel):
    """One deployment stage of the pipeline: a full environment config."""

    name: Annotated[
        str,
        matching(
            r"^[A-Za-z][A-Za-z0-9-]{0,63}$", "a letter, then up to 63 letters, digits and '-'"
        ),
    ] = Field(description="The stage name in the pipeline (unique).")
    config: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="Path of the stage's environment config, relative to the pipeline file."
    )
    approval: bool = Field(default=False, description="A manual approval before this stage.")
    allow_replace: list[
        Annotated[
            str,
            matching(
                r"^[A-Za-z][A-Za-z0-9-]{0,127}/[A-Za-z][A-Za-z0-9]{0,254}$",
                "<stack>/<logical id> as the deploy gate names it, e.g. "
                "prod-research-cluster/HyperPodCluster",
            ),
        ]
    ] = Field(
        default_factory=list,
        description="Resources that hold data or are a cluster which this stage's deploy may "
        "replace or delete, as <stack>/<logical id> (the stage's deploy gate names them); "
        "default: none, and the stage stops before such a change. Remove an entry once deployed.",
    )


class PipelineConfig(StrictModel):
    """A self-mutating CDK pipeline in the tooling account."""

    connection_arn: Annotated[
        str,
        matching(
            r"^arn:aws[a-z-]*:(codeconnections|codestar-connections):[a-z0-9-]+:[0-9]{12}:connection/[0-9a-f-]+$",
            "a CodeConnections connection ARN like arn:aws:codeconnections:us-west-2:111122223333:connection/<id>",
        ),
    ] = Field(
        description="The CodeConnections connection to the repository host (created and authorized"
        " in the console first)."
    )
    repository: Annotated[
        str, matching(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", "owner/repository")
    ] = Field(description="The repository the pipeline builds, as owner/repository.")
    branch: Annotated[str, StringConstraints(min_length=1, max_length=255)] = Field(
        default="main", description="The branch whose pushes start the pipeline; default main."
    )
    stages: Annotated[list[PipelineStage], Field(min_length=1)] = Field(
        description="The deployment stages, in order (at least one)."
    )

    @field_validator("stages")
    @classmethod
    def _unique_stage_names(cls, value: list[PipelineStage]) -> list[PipelineStage]:
        unique([s.name for s in value], "stage names")
        return value


class PipelineFileConfig(StrictModel):
    """The root of a pipeline YAML file: the pipeline and where it lives."""

    name: EnvName = Field(
        description="Names the pipeline stack (<name>-pipeline) and its resources."
    )
    account: Account = Field(description="The tooling account the pipeline runs in (quoted).")
    region: Region = Field(description="The tooling region the pipeline runs in.")
    tags: dict[TagKey, TagValue] = Field(
        default_factory=dict,
        description="Applied to every taggable resource of the pipeline stack; default: none.",
    )
    compliance_packs: list[CompliancePack] = Field(
        default_factory=default_compliance_packs,
        description="cdk-nag rule packs the pipeline stack is checked against at synth; default: "
        "AwsSolutions.",
    )
    iam: IamConfig = Field(
        default_factory=IamConfig,
        description="Settings applied to every IAM role of the pipeline stack; left out: no "
        "permissions boundary, path /.",
    )
    pipeline: PipelineConfig = Field(description="The pipeline: its source and its stages.")


# Stages CDK Pipelines adds to the CodePipeline itself; CodePipeline stage names are unique.
RESERVED_STAGE_NAMES = ("Source", "Build", "UpdatePipeline", "Assets")


@dataclass(frozen=True)
class LoadedStage:
    """One stage of a pipeline file with its environment config, read and validated."""

    stage: PipelineStage
    config: EnvironmentConfig
    path: Path
    """The stage's environment config file (resolved)."""

    @property
    def name(self) -> str:
        """The stage name: the CDK Stage id and the prefix of its stack names."""
        return self.stage.name


def stage_path(index: int) -> str:
    """``pipeline.stages[1].config``: the key every problem of a stage's file is reported at."""
    return f"pipeline.stages[{index}].config"


def in_stage(index: int, stage: PipelineStage, issue: Issue, file: Path | None = None) -> Issue:
    """A problem of a stage's environment file, reported at the stage that names the file:
    ``pipeline.stages[1].config: prod.yaml: storage.fsx...: <problem>``. A problem of the whole
    ``file`` (unreadable, not YAML) has no key of its own."""
    where = "" if file is not None and issue.path == str(file) else f"{issue.path}: "
    return Issue(stage_path(index), f"{stage.config}: {where}{issue.message}", issue.severity)


def outside_project(path: Path, project_root: Path) -> bool:
    """True when ``path`` is not inside the project (the repository the pipeline checks out)."""
    return not path.resolve().is_relative_to(project_root.resolve())


def check_pipeline_file(
    cfg: PipelineFileConfig, pipeline_file: Path, project_root: Path
) -> list[Issue]:
    """Problems of the pipeline file's place and its stage names, before any stage is read."""
    issues: list[Issue] = []
    if outside_project(pipeline_file, project_root):
        issues.append(
            Issue(
                str(pipeline_file),
                f"is outside the project ({project_root.resolve()}); the pipeline's synth step "
                "reads the pipeline file from its checkout of the repository: keep it in the project",
            )
        )
    for index, stage in enumerate(cfg.pipeline.stages):
        if stage.name in RESERVED_STAGE_NAMES:
            issues.append(
                Issue(
                    f"pipeline.stages[{index}].name",
                    f"{stage.name!r} is a stage CDK Pipelines adds itself "
                    f"({', '.join(RESERVED_STAGE_NAMES)}); choose another name",
                )
            )
        if stage.name == pipeline_stack_id(cfg):
            issues.append(
                Issue(
                    f"pipeline.stages[{index}].name",
                    f"{stage.name!r} is the id of the pipeline's own stack; choose another name",
                )
            )
    return issues


def pipeline_stack_id(cfg: PipelineFileConfig) -> str:
    """The id (and stack name) of the pipeline stack: ``<name>-pipeline``."""
    return f"{cfg.name}-pipeline"


def stage_stack_prefix(stage: PipelineStage, config: EnvironmentConfig) -> str:
    """``<stage>-<environment>-``: CDK names the stacks of a Stage ``<stage>-<stack id>``, and
    the environment's stacks are ``<environment>-<kind>``."""
    return f"{stage.name}-{config.name}-"


def check_allow_replace(index: int, stage: PipelineStage, config: EnvironmentConfig) -> list[Issue]:
    """Each ``allow_replace`` entry names a stack of this stage (the gate matches exact names:
    an entry of another stage, or of the environment's workstation stacks, would let nothing
    through and hide the mistake)."""
    prefix = stage_stack_prefix(stage, config)
    issues = []
    for position, entry in enumerate(stage.allow_replace):
        stack = entry.partition("/")[0]
        if not stack.startswith(prefix):
            issues.append(
                Issue(
                    f"pipeline.stages[{index}].allow_replace[{position}]",
                    f"{entry!r} names stack {stack!r}, which is not a stack of stage "
                    f"{stage.name!r}: its stacks are named {prefix}<kind> (e.g. "
                    f"{prefix}cluster/HyperPodCluster)",
                )
            )
        elif stage.allow_replace.index(entry) != position:
            issues.append(
                Issue(
                    f"pipeline.stages[{index}].allow_replace[{position}]",
                    f"{entry!r} is listed twice; name each resource once",
                )
            )
    return issues


def check_stage_environment(
    index: int, stage: PipelineStage, config: EnvironmentConfig
) -> list[Issue]:
    """What a valid environment file still needs to be deployed by a pipeline stage."""
    issues = check_allow_replace(index, stage, config)
    if config.account is None:
        return issues + [
            in_stage(
                index,
                stage,
                Issue(
                    "account",
                    "required key is missing; a pipeline stage deploys to the account its config "
                    "names (CDK Pipelines needs a concrete account; the tooling account's "
                    "credentials are no default for it)",
                ),
            )
        ]
    return issues


def check_stages(stages: Sequence[tuple[int, LoadedStage]]) -> list[Issue]:
    """Stages that would deploy over each other: the same environment or cluster name in one
    account and region (resource names, the HyperPod cluster and the EKS cluster derive from them).

    ``stages`` pairs each loaded stage with its index in ``pipeline.stages``.
    """
    issues: list[Issue] = []
    seen_names: dict[tuple[str | None, str, str], str] = {}
    seen_clusters: dict[tuple[str | None, str, str], str] = {}
    for index, loaded in stages:
        config = loaded.config
        where = f"account {config.account}, {config.region}"
        name_key = (config.account, config.region, config.name)
        cluster_key = (config.account, config.region, config.cluster_name)
        if name_key in seen_names:
            issues.append(
                in_stage(
                    index,
                    loaded.stage,
                    Issue(
                        "name",
                        f"{config.name!r} in {where} is also the environment of stage "
                        f"{seen_names[name_key]!r}; the two would deploy the same resources: give "
                        "one stage another name, account or region",
                    ),
                )
            )
        elif cluster_key in seen_clusters:
            issues.append(
                in_stage(
                    index,
                    loaded.stage,
                    Issue(
                        "cluster.name",
                        f"{config.cluster_name!r} in {where} is also the HyperPod cluster of stage "
                        f"{seen_clusters[cluster_key]!r}; cluster names are unique per account and "
                        "region: give one cluster another name",
                    ),
                )
            )
        seen_names.setdefault(name_key, loaded.name)
        seen_clusters.setdefault(cluster_key, loaded.name)
    return issues

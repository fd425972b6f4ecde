"""The delivery pipeline of a pipeline file: a self-mutating CDK pipeline in the tooling account.

Order of a run: Source (the CodeConnections repository) -> Build (``make test``, then a synth
of the same pipeline file) -> UpdatePipeline (self-mutation) -> Assets -> one stage per
``pipeline.stages[]`` entry, in file order, each in its own account and region: first its deploy
gate (``Gate-<stage>``: the stage's assembly against its deployed templates, as ``make deploy``
compares them; it stops the stage before a replacement or deletion of data or a cluster that the
stage's ``allow_replace`` does not name), then a manual approval where the stage says
``approval: true``, then its stacks.

Each stage holds the stacks a workstation deploy makes (:func:`stacks.environment.build_environment`,
the same factory), named ``<stage>-<name>-<kind>``. Data safety: the ``destroy_data`` context
flag never reaches a stage (see :class:`EnvironmentStage`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import pipelines
from constructs import Construct, IConstruct

from hyperpod_cdk.compliance.nag import (
    acknowledge,
    nag_account,
    nag_partition,
    nag_ref,
    write_acknowledgments_to_templates,
)
from hyperpod_cdk.compliance.packs import HIPAA, NIST, PCI, acknowledge_controls
from hyperpod_cdk.config import EnvironmentConfig, PipelineFileConfig
from hyperpod_cdk.config.pipeline import LoadedStage, pipeline_stack_id
from stacks.base import apply_account_settings, output
from stacks.environment import EnvironmentStacks, build_environment

# The synth step's output: where `cdk synth` (the CLI's default --output) writes the assembly.
SYNTH_OUTPUT_DIR = "cdk.out"
# Ubuntu 22.04 with Python 3.11+ and Node; scripts/bootstrap.sh installs the pinned Node LTS,
# the aws-cdk CLI and the Python venv itself, so the commands are the project's make targets.
BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0
# `make test` synthesizes every shipped config in parallel workers: SMALL (3 GB) is too tight.
SYNTH_COMPUTE_TYPE = codebuild.ComputeType.MEDIUM
# The Python the project's constraints.txt is resolved for; standard:7.0 offers 3.11 and 3.12
# (aws/aws-codebuild-docker-images, ubuntu/standard/7.0/runtimes.yml), so the build pins it
# rather than take whichever the image makes the default.
SYNTH_PYTHON = "3.11"


def pinned_cdk_assets_version(project_root: Path) -> str | None:
    """The cdk-assets version package.json pins, for the pipeline's asset-publishing steps
    (CDK Pipelines installs ``cdk-assets@latest`` when given none)."""
    package = json.loads((project_root / "package.json").read_text())
    version = package.get("devDependencies", {}).get("cdk-assets")
    return str(version) if version else None


def synth_commands(pipeline_file: PurePosixPath) -> list[str]:
    """The synth step: the whole test suite, then a synth of the pipeline file (into cdk.out).

    ``pipeline_file`` is relative to the repository root, where CodeBuild starts.
    """
    return ["make test", f"make synth CONFIG={shlex.quote(str(pipeline_file))}"]


def gate_commands(stage: cdk.Stage, allow_replace: Sequence[str], qualifier: str) -> list[str]:
    """The deploy gate of a stage (hyperpod_ops.deploy_gate, as ``make deploy`` runs it): the
    stage's nested assembly of the synth output against the templates deployed in the target account,
    read through its CDK bootstrap look-up role; the build fails (exit 3, the notes in its log)
    before a replacement or deletion of data or a cluster that ``allow_replace`` does not name."""
    assembly = f"{SYNTH_OUTPUT_DIR}/{stage.artifact_id}"
    return [
        "scripts/bootstrap.sh python",
        f".venv/bin/python -m hyperpod_ops.deploy_gate --assembly {shlex.quote(assembly)} "
        f"--stage {shlex.quote(stage.stage_name)} --lookup-role --qualifier {shlex.quote(qualifier)} "
        f"--allow-replace {shlex.quote(','.join(allow_replace))}",
    ]


def clone_permissions(connection_arn: str) -> list[iam.PolicyStatement]:
    """What the synth project needs to clone through a CodeConnections connection, beyond the
    ``codestar-connections:UseConnection`` CDK grants: a connection created since the service's
    rename (an ``arn:...:codeconnections:`` ARN) is authorized under the new service prefix."""
    if ":codeconnections:" not in connection_arn:
        return []
    return [
        iam.PolicyStatement(actions=["codeconnections:UseConnection"], resources=[connection_arn])
    ]


class EnvironmentStage(cdk.Stage):
    """One environment of the pipeline, in the account and region of its config.

    The stacks are those of a workstation deploy of the same config. ``storage.fsx.removal_policy:
    destroy`` is never honoured here: the ``destroy_data`` context flag is a per-deploy decision
    at a workstation, and a pipeline redeploys on every push, so it stays RETAIN (the storage
    stack warns). Aspects stop at Stage boundaries: the stacks add their own, and the
    acknowledgments are written into the templates from here.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        project_root: Path,
        **kwargs: Any,
    ) -> None:
        env = cdk.Environment(account=config.account, region=config.region)
        super().__init__(scope, construct_id, env=env, **kwargs)
        self.config = config
        self.stacks: EnvironmentStacks = build_environment(
            self, config, project_root=project_root, allow_data_destroy=False, env=env
        )
        write_acknowledgments_to_templates(self)


class PipelineStack(cdk.Stack):
    """The tooling account's stack: a self-mutating CodePipeline that tests, synthesizes and
    deploys the stages added with :meth:`add_environment`. Call :meth:`build` after the last."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PipelineFileConfig,
        pipeline_file: PurePosixPath,
        cli_version: str | None = None,
        cdk_assets_version: str | None = None,
        **kwargs: Any,
    ) -> None:
        """``pipeline_file``: the pipeline file, relative to the repository root (the synth step
        synthesizes it). ``cli_version``: the aws-cdk CLI the self-mutation step installs;
        None: the latest. ``cdk_assets_version``: the cdk-assets the asset-publishing steps
        install; None: the latest."""
        super().__init__(
            scope,
            construct_id,
            env=cdk.Environment(account=config.account, region=config.region),
            description=f"HyperPod delivery pipeline {config.name}",
            **kwargs,
        )
        self.config = config
        apply_account_settings(self, {"hyperpod-pipeline": config.name, **config.tags}, config.iam)

        source = config.pipeline
        self.source = pipelines.CodePipelineSource.connection(
            source.repository,
            source.branch,
            connection_arn=source.connection_arn,
            # CodeBuild clones the repository: file modes (the lifecycle scripts'
            # executable bits, part of their content hash) and symlinks stay as
            # committed, which CodePipeline's source zip does not promise
            code_build_clone_output=True,
        )
        self.synth_step = pipelines.ShellStep(
            "Synth",
            input=self.source,
            commands=synth_commands(pipeline_file),
            primary_output_directory=SYNTH_OUTPUT_DIR,
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            pipeline_name=config.name,
            synth=self.synth_step,
            # stages deploy to other accounts: the artifact bucket needs a KMS key they can use
            cross_account_keys=True,
            enable_key_rotation=True,
            cli_version=cli_version,
            cdk_assets_cli_version=cdk_assets_version,
            code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(build_image=BUILD_IMAGE)
            ),
            synth_code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(compute_type=SYNTH_COMPUTE_TYPE),
                partial_build_spec=codebuild.BuildSpec.from_object(
                    {"phases": {"install": {"runtime-versions": {"python": SYNTH_PYTHON}}}}
                ),
                role_policy=clone_permissions(source.connection_arn),
            ),
        )

    def add_environment(
        self, stage: EnvironmentStage, *, approval: bool, allow_replace: Sequence[str] = ()
    ) -> None:
        """Deploy ``stage`` after the stages added before it: first its deploy gate (which lets
        through the replacements and deletions ``allow_replace`` names), then, with
        ``approval``, a manual approval (whose approver can read the gate's notes)."""
        gate = self._gate_step(stage, allow_replace)
        pre: list[pipelines.Step] = [gate]
        if approval:
            approve = pipelines.ManualApprovalStep(
                f"Approve-{stage.stage_name}",
                comment=f"Deploy HyperPod environment {stage.config.name} to "
                f"{stage.config.account} ({stage.config.region})? The Gate-{stage.stage_name} "
                "log holds what it replaces and deletes.",
            )
            approve.add_step_dependency(gate)
            pre.append(approve)
        self.pipeline.add_stage(stage, pre=pre)

    def _gate_step(self, stage: EnvironmentStage, allow_replace: Sequence[str]) -> pipelines.Step:
        """The stage's deploy gate, in CodeBuild with the repository (the gate's code) and the
        synth output (the stage's assembly); it may assume only the target's look-up role."""
        synthesizer = stage.stacks.network.synthesizer
        assert isinstance(synthesizer, cdk.DefaultStackSynthesizer), synthesizer
        # the bootstrap's look-up role and qualifier (the defaults), and the synth's cdk.out
        assert synthesizer.lookup_role is not None and synthesizer.bootstrap_qualifier
        synth_output = self.synth_step.primary_output
        assert synth_output is not None
        return pipelines.CodeBuildStep(
            f"Gate-{stage.stage_name}",
            input=self.source,
            additional_inputs={SYNTH_OUTPUT_DIR: synth_output},
            commands=gate_commands(stage, allow_replace, synthesizer.bootstrap_qualifier),
            partial_build_spec=codebuild.BuildSpec.from_object(
                {"phases": {"install": {"runtime-versions": {"python": SYNTH_PYTHON}}}}
            ),
            role_policy_statements=[
                iam.PolicyStatement(
                    sid="ReadTheDeployedTemplates",
                    actions=["sts:AssumeRole"],
                    # arn:${AWS::Partition}:iam::<account>:role/cdk-<qualifier>-lookup-role-...
                    resources=[cdk.Fn.sub(synthesizer.lookup_role)],
                )
            ],
        )

    def build(self) -> None:
        """Create the CodePipeline now (not at synth), so its findings can be acknowledged."""
        self.pipeline.build_pipeline()
        acknowledge_pipeline_findings(self.pipeline)
        name = self.pipeline.pipeline.pipeline_name
        output(self, "PipelineName", name, "CodePipeline that tests and deploys the environments")
        output(
            self,
            "PipelineConsoleUrl",
            f"https://{self.region}.console.aws.amazon.com/codesuite/codepipeline/pipelines/"
            f"{name}/view?region={self.region}",
            "The pipeline in the AWS console (approve production there)",
        )


# -- cdk-nag findings of CDK Pipelines' own constructs ----------------------------------------

_BUCKET_LOGS = (
    "The pipeline's artifact bucket holds only this pipeline's build artifacts (source zips, "
    "cloud assemblies), written and read by the pipeline's own roles; object access is audited "
    "with the account's CloudTrail data events, not a second log bucket per pipeline."
)
_BUCKET_VERSIONS = (
    "Every pipeline run writes new, uniquely named artifact objects and never overwrites one; "
    "the git repository is the source of truth, from which any run can be rebuilt."
)
_BUCKET_REPLICATION = (
    "Build artifacts are transient and reproducible from the repository; replicating them to "
    "another region adds cost and no recovery value."
)
_SOURCE_REPO = (
    "The project's source is its pipeline's artifact (source type CODEPIPELINE), not a GitHub or "
    "Bitbucket URL: the repository is reached through the CodeConnections connection, so the "
    "project holds no repository credentials to protect with OAuth."
)
_INLINE_POLICY = (
    "CDK Pipelines writes this inline policy from its grants for this one role; it is scoped to "
    "the pipeline's own bucket, key, projects and bootstrap roles, and nothing else attaches it."
)
_ARTIFACTS = (
    "CDK's grant on the pipeline's own artifact bucket: the wildcard actions and object keys "
    "cover this pipeline's build artifacts only."
)
_ARTIFACT_KEY = (
    "CDK's grant on the artifact bucket's own KMS key, the only resource: GenerateDataKey* and "
    "ReEncrypt* are the variants S3 uses to encrypt artifacts."
)
_PROJECT_LOGS = (
    "The log streams of this CodeBuild project's own log group (/aws/codebuild/<project>); "
    "CodeBuild names a new stream for every build."
)
_PROJECT_REPORTS = (
    "CodeBuild test report groups of this project, which CodeBuild names after the project; the "
    "wildcard is the suffix of each group."
)
# CodeBuildProjectSourceRepoUrl and the S3 logging and versioning rules are not in every pack
# (cdk-nag 3.0.2, lib/packs/*.ts); the other rules are acknowledged with acknowledge_controls.
_PACKS_OF = {
    "CodeBuildProjectSourceRepoUrl": (HIPAA, PCI),
    "S3BucketLoggingEnabled": (NIST, HIPAA, PCI),
    "S3BucketVersioningEnabled": (NIST, HIPAA, PCI),
}


def _acknowledge_in_packs(scope: IConstruct, rule: str, reason: str) -> None:
    for pack in _PACKS_OF[rule]:
        acknowledge(scope, f"{pack}-{rule}", reason)


def _acknowledge_artifact_bucket(bucket: IConstruct) -> None:
    acknowledge(bucket, "AwsSolutions-S1", _BUCKET_LOGS)
    _acknowledge_in_packs(bucket, "S3BucketLoggingEnabled", _BUCKET_LOGS)
    _acknowledge_in_packs(bucket, "S3BucketVersioningEnabled", _BUCKET_VERSIONS)
    acknowledge_controls(bucket, "S3BucketReplicationEnabled", _BUCKET_REPLICATION)


def _iam5(scope: IConstruct, reason: str, *evidence: str) -> None:
    """Acknowledge AwsSolutions-IAM5 for each exact wildcard (``Action::...``/``Resource::...``)."""
    for item in evidence:
        acknowledge(scope, f"AwsSolutions-IAM5[{item}]", reason)


def _child(scope: IConstruct, path: str) -> IConstruct:
    """The construct at ``a/b/c`` below ``scope`` (an error names the missing part)."""
    node = scope
    for part in path.split("/"):
        node = node.node.find_child(part)
    return node


def _only_child(scope: IConstruct) -> IConstruct:
    children = scope.node.children
    assert len(children) == 1, [c.node.id for c in children]
    return children[0]


def acknowledge_pipeline_findings(pipeline: pipelines.CodePipeline) -> None:
    """The cdk-nag findings of CDK Pipelines' own constructs, each on the construct that has it
    and named exactly (IAM5 with its action or resource). Call after ``build_pipeline()``."""
    stack = cdk.Stack.of(pipeline)
    code_pipeline = pipeline.pipeline
    bucket = code_pipeline.artifact_bucket.node.default_child
    assert isinstance(bucket, cdk.CfnResource)
    partition, region, account = nag_partition(stack), stack.region, nag_account(stack)
    codebuild_arn = f"arn:{partition}:codebuild:{region}:{account}"
    logs_arn = f"arn:{partition}:logs:{region}:{account}:log-group:/aws/codebuild/"

    _acknowledge_artifact_bucket(bucket)

    read = ("Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*",
            f"Resource::{nag_ref(bucket, 'Arn')}/*")  # fmt: skip
    read_write = (*read, "Action::s3:Abort*", "Action::s3:DeleteObject*")
    key = ("Action::kms:GenerateDataKey*", "Action::kms:ReEncrypt*")

    def project_logs(policy: IConstruct, project: IConstruct) -> None:
        cfn = project.node.default_child
        assert isinstance(cfn, cdk.CfnResource)
        logical_id = f"<{stack.get_logical_id(cfn)}>"
        _iam5(policy, _PROJECT_LOGS, f"Resource::{logs_arn}{logical_id}:*")
        _iam5(policy, _PROJECT_REPORTS, f"Resource::{codebuild_arn}:report-group/{logical_id}-*")

    # the pipeline's role, and the role of the source action (CodeConnections)
    source_action = _only_child(_child(code_pipeline, "Source"))
    for policy in (
        _child(code_pipeline.role, "DefaultPolicy"),
        _child(source_action, "CodePipelineActionRole/DefaultPolicy"),
    ):
        _iam5(policy, _ARTIFACTS, *read_write)
        _iam5(policy, _ARTIFACT_KEY, *key)

    # a stage in another region: CDK adds a support stack there (in the tooling account) whose
    # bucket receives the artifacts, encrypted with a key of that stack
    pipeline_policy = _child(code_pipeline.role, "DefaultPolicy")
    for region_name, support in sorted(code_pipeline.cross_region_support.items()):
        replica = support.replication_bucket
        replica_bucket = replica.node.default_child
        assert isinstance(replica_bucket, cdk.CfnResource)
        _acknowledge_artifact_bucket(replica_bucket)
        name = stack.resolve(replica.bucket_name)
        _iam5(pipeline_policy, _ARTIFACTS, f"Resource::arn:{partition}:s3:::{name}/*")
        _iam5(
            pipeline_policy,
            f"The artifact key of the support stack in {region_name} lives in another stack and "
            "region, so CDK grants its use on '*'; that key's own policy limits who may use it.",
            "Resource::*",
        )

    # the synth step: `make test`, then `make synth`
    synth = _child(code_pipeline, "Build/Synth/CdkBuildProject")
    synth_policy = _child(synth, "Role/DefaultPolicy")
    _iam5(synth_policy, _ARTIFACTS, *read_write)
    _iam5(synth_policy, _ARTIFACT_KEY, *key)
    project_logs(synth_policy, synth)

    # each stage's deploy gate: reads the synth output, writes only its own logs and reports
    for stage in code_pipeline.stages:
        for action in stage.actions:
            name = action.action_properties.action_name
            if not name.startswith("Gate-"):
                continue
            gate = _child(code_pipeline, f"{stage.stage_name}/{name}/{name}")
            gate_policy = _child(gate, "Role/DefaultPolicy")
            _iam5(gate_policy, _ARTIFACTS, *read)
            _iam5(gate_policy, _ARTIFACT_KEY, *key)
            project_logs(gate_policy, gate)

    # self-mutation: the CDK CLI deploys the pipeline stack with the tooling account's bootstrap
    mutation = _child(pipeline, "UpdatePipeline/SelfMutation")
    mutation_policy = _child(mutation, "Role/DefaultPolicy")
    _iam5(mutation_policy, _ARTIFACTS, *read)
    _iam5(mutation_policy, _ARTIFACT_KEY, *key)
    project_logs(mutation_policy, mutation)
    _iam5(
        mutation_policy,
        "The CDK CLI assumes the tooling account's bootstrap roles to update the pipeline; the "
        "policy's condition limits the wildcard to roles tagged aws-cdk:bootstrap-role "
        "(deploy, file-publishing, image-publishing).",
        f"Resource::arn:*:iam::{account}:role/*",
    )
    _iam5(
        mutation_policy,
        "Read-only look-ups the CDK CLI makes before it deploys the pipeline stack "
        "(cloudformation:DescribeStacks, s3:ListBucket); they name no resource in advance.",
        "Resource::*",
    )

    # asset publishing: one role for every FileAsset project, whose names CDK generates
    assets_policy = _child(pipeline, "Assets/FileRole/DefaultPolicy")
    _iam5(assets_policy, _ARTIFACTS, *read)
    _iam5(
        assets_policy,
        "One role serves every asset-publishing CodeBuild project of the pipeline, whose names "
        "CDK generates; it writes only log groups under /aws/codebuild/.",
        f"Resource::{logs_arn}*",
    )
    _iam5(
        assets_policy,
        "One role serves every asset-publishing CodeBuild project of the pipeline, whose names "
        "CDK generates; it reports only to CodeBuild report groups of this account and region.",
        f"Resource::{codebuild_arn}:report-group/*",
    )
    _iam5(
        assets_policy,
        "The same role is the pipeline's action role for the asset projects: it starts and "
        "watches their builds (codebuild:StartBuild, BatchGetBuilds, StopBuild) as CDK grants it.",
        "Resource::*",
    )

    for construct in pipeline.node.find_all():
        if isinstance(construct, iam.Policy):
            acknowledge_controls(construct, "IAMNoInlinePolicy", _INLINE_POLICY)
        elif isinstance(construct, codebuild.Project):
            _acknowledge_in_packs(construct, "CodeBuildProjectSourceRepoUrl", _SOURCE_REPO)


@dataclass
class DeliveryPipeline:
    """The pipeline stack and its environment stages, in deploy order."""

    pipeline: PipelineStack
    stages: list[EnvironmentStage] = field(default_factory=list)


def build_delivery_pipeline(
    scope: Construct,
    config: PipelineFileConfig,
    stages: Sequence[LoadedStage],
    *,
    project_root: Path,
    pipeline_file: PurePosixPath,
    cli_version: str | None = None,
) -> DeliveryPipeline:
    """The pipeline of ``config`` under ``scope`` (the App) and one Stage per loaded stage.

    The asset-publishing steps install the cdk-assets that ``project_root``'s package.json pins.
    """
    pipeline = PipelineStack(
        scope,
        pipeline_stack_id(config),
        config=config,
        pipeline_file=pipeline_file,
        cli_version=cli_version,
        cdk_assets_version=pinned_cdk_assets_version(project_root),
    )
    built = DeliveryPipeline(pipeline)
    for loaded in stages:
        stage = EnvironmentStage(
            scope, loaded.name, config=loaded.config, project_root=project_root
        )
        pipeline.add_environment(
            stage, approval=loaded.stage.approval, allow_replace=loaded.stage.allow_replace
        )
        built.stages.append(stage)
    pipeline.build()
    return built

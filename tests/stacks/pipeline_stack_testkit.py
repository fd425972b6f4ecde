"""Synthesizing a pipeline file and reading what CDK Pipelines made of it.

A :class:`PipelineSynth` holds the cloud assembly of a pipeline file: the pipeline stack in the
tooling account, and one nested assembly (``assembly-<stage>``) per environment stage. The
CodePipeline's stages and actions are read from the pipeline template, the stage stacks from the
nested assemblies. Treat it as read-only: one synth serves every test of the worker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stack_testkit import PROJECT_ROOT

if TYPE_CHECKING:
    import aws_cdk as cdk

    from hyperpod_cdk.config import PipelineFileConfig
    from hyperpod_cdk.config.pipeline import LoadedStage
    from stacks.pipeline import DeliveryPipeline

SHIPPED_PIPELINE = PROJECT_ROOT / "config" / "examples" / "pipeline.yaml"
# <role ARN of a deploy action>: the CDK bootstrap roles of the target account and region
BOOTSTRAP_ROLE = re.compile(
    r"^arn:\$\{AWS::Partition\}:iam::(?P<account>\d{12}):role/"
    r"cdk-[a-z0-9]+-(?P<kind>deploy-role|cfn-exec-role)-(?P=account)-(?P<region>[a-z0-9-]+)$"
)


def arn_text(value: Any) -> str:
    """An ARN written with ``Fn::Join``/``Fn::Sub`` as text (the partition as ``${AWS::Partition}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Sub" in value:
        return str(value["Fn::Sub"])
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(arn_text(p) for p in parts)
    if value == {"Ref": "AWS::Partition"}:
        return "${AWS::Partition}"
    raise AssertionError(f"not an ARN: {value!r}")


def validation_summary(outdir: Path) -> str:
    """The findings of ``validation-report.json``, one line each: plugin, rule, construct path."""
    report = outdir / "validation-report.json"
    if not report.exists():
        return "(no validation-report.json)"
    return "\n".join(
        f"{plugin['pluginName']}: {v['ruleName']} at {c['constructPath']}"
        for plugin in json.loads(report.read_text()).get("pluginReports", [])
        for v in plugin.get("violations", [])
        for c in v.get("violatingConstructs", [])
    )


def report_violations(outdir: Path) -> list[tuple[str, str, str]]:
    """(plugin, rule, construct path) of every finding in the validation report."""
    report = outdir / "validation-report.json"
    plugins = json.loads(report.read_text()).get("pluginReports", []) if report.exists() else []
    return [
        (plugin["pluginName"], v["ruleName"], c["constructPath"])
        for plugin in plugins
        for v in plugin.get("violations", [])
        for c in v.get("violatingConstructs", [])
    ]


@dataclass
class PipelineSynth:
    """A synthesized pipeline file: the pipeline stack and the nested assembly of each stage."""

    config: PipelineFileConfig
    stages: list[LoadedStage]
    app: cdk.App
    built: DeliveryPipeline
    outdir: Path

    # -- the top-level assembly: the pipeline stack ----------------------------------------------

    @cached_property
    def manifest(self) -> dict[str, Any]:
        manifest: dict[str, Any] = json.loads((self.outdir / "manifest.json").read_text())
        return manifest

    @property
    def pipeline_stack_name(self) -> str:
        return f"{self.config.name}-pipeline"

    @cached_property
    def template(self) -> dict[str, Any]:
        """The pipeline stack's template."""
        artifact = self.manifest["artifacts"][self.pipeline_stack_name]
        template: dict[str, Any] = json.loads(
            (self.outdir / artifact["properties"]["templateFile"]).read_text()
        )
        return template

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.template["Resources"].items() if r["Type"] == resource_type}

    @cached_property
    def code_pipeline(self) -> dict[str, Any]:
        """The properties of the one ``AWS::CodePipeline::Pipeline``."""
        [pipeline] = self.resources("AWS::CodePipeline::Pipeline").values()
        properties: dict[str, Any] = pipeline["Properties"]
        return properties

    @property
    def stage_names(self) -> list[str]:
        return [stage["Name"] for stage in self.code_pipeline["Stages"]]

    def actions(self, stage: str, category: str | None = None) -> list[dict[str, Any]]:
        """The actions of one CodePipeline stage (of one category: Source, Build, Deploy, Approval)."""
        [found] = [s for s in self.code_pipeline["Stages"] if s["Name"] == stage]
        return [
            a
            for a in found["Actions"]
            if category is None or a["ActionTypeId"]["Category"] == category
        ]

    def buildspec(self, action: dict[str, Any]) -> dict[str, Any]:
        """The buildspec of the CodeBuild project a Build action runs."""
        project = self.template["Resources"][action["Configuration"]["ProjectName"]["Ref"]]
        buildspec: dict[str, Any] = json.loads(project["Properties"]["Source"]["BuildSpec"])
        return buildspec

    def project(self, action: dict[str, Any]) -> dict[str, Any]:
        properties: dict[str, Any] = self.template["Resources"][
            action["Configuration"]["ProjectName"]["Ref"]
        ]["Properties"]
        return properties

    # -- the nested assembly of each stage -------------------------------------------------------

    def stage(self, name: str) -> LoadedStage:
        [stage] = [s for s in self.stages if s.name == name]
        return stage

    def stage_dir(self, name: str) -> Path:
        artifact = self.manifest["artifacts"][f"assembly-{name}"]
        assert artifact["type"] == "cdk:cloud-assembly", artifact
        return self.outdir / artifact["properties"]["directoryName"]

    def stage_stacks(self, name: str) -> dict[str, dict[str, Any]]:
        """The stack artifacts of a stage's assembly, by stack name."""
        manifest = json.loads((self.stage_dir(name) / "manifest.json").read_text())
        return {
            a["properties"]["stackName"]: a
            for a in manifest["artifacts"].values()
            if a["type"] == "aws:cloudformation:stack"
        }

    def stage_template(self, name: str, stack_name: str) -> dict[str, Any]:
        artifact = self.stage_stacks(name)[stack_name]
        template: dict[str, Any] = json.loads(
            (self.stage_dir(name) / artifact["properties"]["templateFile"]).read_text()
        )
        return template

    def stage_stack_name(self, name: str, kind: str) -> str:
        """``<stage>-<environment>-<kind>``: CDK prefixes the stacks of a Stage with its name."""
        return f"{name}-{self.stage(name).config.name}-{kind}"

    # -- acknowledgments -------------------------------------------------------------------------

    def _assemblies(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        todo = [self.outdir]
        while todo:
            directory = todo.pop()
            manifest = json.loads((directory / "manifest.json").read_text())
            yield directory, manifest
            todo += [
                directory / a["properties"]["directoryName"]
                for a in manifest["artifacts"].values()
                if a["type"] == "cdk:cloud-assembly"
            ]

    @cached_property
    def acknowledgments(self) -> list[tuple[str, str, str]]:
        """Every acknowledged finding of every stack, Stages included: (path, finding, reason).

        cdk-nag 3 records them as construct metadata, which each assembly keeps per stack.
        """
        import aws_cdk as cdk

        key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
        found = []
        for directory, manifest in self._assemblies():
            for artifact in manifest["artifacts"].values():
                if artifact["type"] != "aws:cloudformation:stack":
                    continue
                metadata = dict(artifact.get("metadata", {}))
                if "additionalMetadataFile" in artifact:
                    metadata.update(
                        json.loads((directory / artifact["additionalMetadataFile"]).read_text())
                    )
                for path, entries in metadata.items():
                    for entry in entries:
                        if entry["type"] == key:
                            found += [(path, f, reason) for f, reason in entry["data"].items()]
        return found


def synthesize_pipeline(
    config: PipelineFileConfig,
    stages: Sequence[LoadedStage],
    outdir: Path,
    *,
    pipeline_file: Path = SHIPPED_PIPELINE,
    context: dict[str, Any] | None = None,
    nag: bool = True,
) -> PipelineSynth:
    """Build the App of a pipeline file as ``app.py`` does and synthesize it.

    An unacknowledged finding, in the pipeline stack or inside a Stage, fails the synth: an
    AssertionError with the findings of ``validation-report.json``.
    """
    from stacks.app_builder import build_pipeline_app, new_app

    app = new_app(context=context, outdir=str(outdir))
    app, built = build_pipeline_app(
        config,
        list(stages),
        pipeline_file=pipeline_file,
        app=app,
        project_root=PROJECT_ROOT,
        nag=nag,
    )
    try:
        app.synth()
    except Exception as exc:  # a jsii error: validation (cdk-nag) failed, or a construct raised
        raise AssertionError(
            f"synth of pipeline {config.name} failed: {str(exc).splitlines()[0]}\n"
            f"{validation_summary(outdir)}"
        ) from None
    return PipelineSynth(config, list(stages), app, built, outdir)

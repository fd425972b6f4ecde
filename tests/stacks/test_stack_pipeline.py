"""The delivery pipeline of config/examples/pipeline.yaml (issue 6, acceptance 1): a self-mutating
CDK pipeline in the tooling account, one stage per environment in its own account and region,
built by the workstation's stack factory, and a manual approval before production.

The shipped pipeline file is synthesized once per worker (with every compliance pack, as the
environment tests do); three small variants check what one synth of the shipped file cannot
show: a finding inside a Stage, the packs registered, and the destroy_data flag.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk import aws_s3 as s3
from pipeline_stack_testkit import (
    BOOTSTRAP_ROLE,
    SHIPPED_PIPELINE,
    PipelineSynth,
    arn_text,
    report_violations,
    synthesize_pipeline,
)
from stack_testkit import PROJECT_ROOT, stack_kinds
from support.cfn_lint_schemas import lint_errors
from test_stack_nag import CDK_ANNOTATION, GRANULAR_IAM, NAG_RULE, finding_id

from hyperpod_cdk.compliance.nag import MIN_REASON_LENGTH, PACKS

STAGES = ["dev", "prod"]


def load_shipped() -> tuple[Any, list[Any]]:
    from hyperpod_cdk.config import PipelineFileConfig
    from hyperpod_cdk.config.loader import load_stages, validate_file

    config, _ = validate_file(SHIPPED_PIPELINE, PROJECT_ROOT)
    assert isinstance(config, PipelineFileConfig)
    stages, _ = load_stages(config, SHIPPED_PIPELINE, PROJECT_ROOT)
    return config, stages


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> PipelineSynth:
    """The shipped pipeline file, synthesized once per worker with every compliance pack."""
    config, stages = load_shipped()
    every_pack = config.model_copy(update={"compliance_packs": list(PACKS)})
    return synthesize_pipeline(
        every_pack,
        stages,
        tmp_path_factory.mktemp("cdk-pipeline"),
        # as `cdk synth` does: resources carry aws:cdk:path, by which cfn-lint knows a CDK template
        context={"aws:cdk:enable-path-metadata": True},
    )


# -- the pipeline stack ------------------------------------------------------------------------


def test_the_pipeline_stack_is_in_the_tooling_account_and_region(pipeline: PipelineSynth) -> None:
    artifact = pipeline.manifest["artifacts"][pipeline.pipeline_stack_name]
    assert artifact["environment"] == "aws://111122223333/us-west-2"
    assert pipeline.config.account == "111122223333"
    assert pipeline.code_pipeline["Name"] == pipeline.config.name


def test_the_pipeline_stack_outputs_where_to_find_the_pipeline(pipeline: PipelineSynth) -> None:
    outputs = pipeline.template["Outputs"]
    [pipeline_id] = pipeline.resources("AWS::CodePipeline::Pipeline")
    assert outputs["PipelineName"]["Value"] == {"Ref": pipeline_id}
    assert "codesuite/codepipeline/pipelines/" in json.dumps(outputs["PipelineConsoleUrl"]["Value"])


def test_the_source_is_the_connection_repository_and_branch(pipeline: PipelineSynth) -> None:
    [action] = pipeline.actions("Source")
    assert action["ActionTypeId"] == {
        "Category": "Source",
        "Owner": "AWS",
        "Provider": "CodeStarSourceConnection",
        "Version": "1",
    }
    source = pipeline.config.pipeline
    assert action["Configuration"] == {
        "ConnectionArn": source.connection_arn,
        "FullRepositoryId": "example-org/hyperpod-environments",
        "BranchName": "main",
        # CodeBuild clones the repository: file modes and symlinks stay as committed
        "OutputArtifactFormat": "CODEBUILD_CLONE_REF",
    }


def test_the_synth_step_runs_make_test_before_it_synthesizes_the_pipeline_file(
    pipeline: PipelineSynth,
) -> None:
    [action] = pipeline.actions("Build")
    buildspec = pipeline.buildspec(action)
    commands = [c for phase in buildspec["phases"].values() for c in phase.get("commands", [])]
    assert commands == ["make test", "make synth CONFIG=config/examples/pipeline.yaml"]
    assert buildspec["artifacts"]["base-directory"] == "cdk.out"
    # the Python constraints.txt is resolved for, not the image's default
    assert buildspec["phases"]["install"]["runtime-versions"] == {"python": "3.11"}


def test_the_synth_step_runs_on_an_image_with_python_and_node(pipeline: PipelineSynth) -> None:
    [action] = pipeline.actions("Build")
    environment = pipeline.project(action)["Environment"]
    assert environment["Image"] == "aws/codebuild/standard:7.0"
    assert environment["ComputeType"] == "BUILD_GENERAL1_MEDIUM"
    assert environment["PrivilegedMode"] is False  # no Docker assets, so no Docker daemon


def test_the_pipeline_updates_itself_with_the_pinned_cdk_cli(pipeline: PipelineSynth) -> None:
    [action] = pipeline.actions("UpdatePipeline")
    phases = pipeline.buildspec(action)["phases"]
    pinned = json.loads((PROJECT_ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert phases["install"]["commands"] == [f"npm install -g aws-cdk@{pinned}"]
    [deploy] = phases["build"]["commands"]
    assert deploy.startswith(f"cdk -a . deploy {pipeline.pipeline_stack_name} ")


def test_assets_are_published_with_the_pinned_cdk_assets(pipeline: PipelineSynth) -> None:
    actions = pipeline.actions("Assets")
    assert actions  # the lifecycle scripts and the handlers' code are file assets
    pinned = json.loads((PROJECT_ROOT / "package.json").read_text())["devDependencies"]
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", pinned["cdk-assets"])  # exact, not a range
    for action in actions:
        install = pipeline.buildspec(action)["phases"]["install"]["commands"]
        assert install == [f"npm install -g cdk-assets@{pinned['cdk-assets']}"]


def test_the_stages_run_in_file_order_once_the_pipeline_is_updated(
    pipeline: PipelineSynth,
) -> None:
    assert pipeline.stage_names == ["Source", "Build", "UpdatePipeline", "Assets", *STAGES]
    assert [s.name for s in pipeline.config.pipeline.stages] == STAGES


def test_artifacts_are_encrypted_with_a_key_other_accounts_can_use(pipeline: PipelineSynth) -> None:
    store = pipeline.code_pipeline["ArtifactStore"]
    assert store["EncryptionKey"]["Type"] == "KMS"
    [key] = pipeline.resources("AWS::KMS::Key").values()
    assert key["Properties"]["EnableKeyRotation"] is True
    principals = json.dumps(key["Properties"]["KeyPolicy"])
    for stage in pipeline.stages:  # the deploy roles of each target account may decrypt
        assert f":iam::{stage.config.account}:role/cdk-hnb659fds-deploy-role-" in principals


# -- one stage per environment -----------------------------------------------------------------


@pytest.mark.parametrize("name", STAGES)
def test_every_deploy_action_of_a_stage_targets_its_account_and_region(
    pipeline: PipelineSynth, name: str
) -> None:
    config = pipeline.stage(name).config
    deploys = pipeline.actions(name, "Deploy")
    assert deploys
    for action in deploys:
        assert action["ActionTypeId"]["Provider"] == "CloudFormation"
        # the action's region: CodePipeline's own when the field is left out
        assert action.get("Region", pipeline.config.region) == config.region
        role = BOOTSTRAP_ROLE.match(arn_text(action["RoleArn"]))
        assert role, action["RoleArn"]
        assert role.groupdict() == {
            "account": config.account,
            "kind": "deploy-role",
            "region": config.region,
        }
        if "RoleArn" in action["Configuration"]:  # the change set's role: CloudFormation's
            execution = BOOTSTRAP_ROLE.match(arn_text(action["Configuration"]["RoleArn"]))
            assert execution, action["Configuration"]
            assert (execution["account"], execution["kind"], execution["region"]) == (
                config.account,
                "cfn-exec-role",
                config.region,
            )


@pytest.mark.parametrize("name", STAGES)
def test_a_stage_deploys_every_stack_of_its_environment(pipeline: PipelineSynth, name: str) -> None:
    config = pipeline.stage(name).config
    expected = {pipeline.stage_stack_name(name, kind) for kind in stack_kinds(config)}
    stacks = pipeline.stage_stacks(name)
    assert set(stacks) == expected
    for stack_name, artifact in stacks.items():
        assert artifact["environment"] == f"aws://{config.account}/{config.region}"
        assert pipeline.stage_template(name, stack_name)["Resources"], stack_name
    deployed = {a["Configuration"]["StackName"] for a in pipeline.actions(name, "Deploy")}
    assert deployed == expected


@pytest.mark.parametrize("name", STAGES)
def test_the_stage_stacks_are_those_of_a_workstation_deploy(
    pipeline: PipelineSynth, name: str, synthesized: Callable[[Path], Any]
) -> None:
    # the same stack factory: every stack has the resources (logical ids and types) that
    # `make deploy CONFIG=<the stage's config>` would create
    stage = pipeline.stage(name)
    workstation = synthesized(stage.path)
    for kind in stack_kinds(stage.config):
        staged = pipeline.stage_template(name, pipeline.stage_stack_name(name, kind))
        alone = workstation.template(kind)
        assert shape(staged, f"{name}-{stage.config.name}") == shape(alone, stage.config.name), kind


def shape(template: dict[str, Any], stack_prefix: str) -> Counter[tuple[str, str]]:
    """(type, logical id) of every resource. CDK names a security group rule that refers to a
    group after that group's stack path (``...from<stack><group>ALLTRAFFIC...``), and a Stage
    prefixes stack names: such ids count by type only."""
    compact = stack_prefix.replace("-", "")
    return Counter(
        (r["Type"], "<names a stack of the environment>" if compact in k else k)
        for k, r in template["Resources"].items()
    )


def test_a_manual_approval_runs_before_any_prod_deploy_and_none_before_dev(
    pipeline: PipelineSynth,
) -> None:
    assert pipeline.actions("dev", "Approval") == []
    [approval] = pipeline.actions("prod", "Approval")
    assert approval["ActionTypeId"]["Provider"] == "Manual"
    first_deploy = min(a["RunOrder"] for a in pipeline.actions("prod", "Deploy"))
    assert approval["RunOrder"] < first_deploy
    # and prod as a whole waits for dev (stages run one after the other)
    assert pipeline.stage_names.index("dev") < pipeline.stage_names.index("prod")
    assert [s.name for s in pipeline.stages if s.stage.approval] == ["prod"]


@pytest.mark.parametrize("name", STAGES)
def test_each_stage_runs_the_deploy_gate_before_any_deploy(
    pipeline: PipelineSynth, name: str
) -> None:
    """The gate (hyperpod_ops.deploy_gate, as `make deploy` runs it) reads the stage's assembly of the
    synth output and the deployed templates through the target's CDK look-up role, and runs
    before the approval and every deploy action: a stopped gate fails the stage."""
    config = pipeline.stage(name).config
    [gate] = [a for a in pipeline.actions(name, "Build") if a["Name"] == f"Gate-{name}"]
    commands = [
        c
        for phase in pipeline.buildspec(gate)["phases"].values()
        for c in phase.get("commands", [])
    ]
    assert commands[-1] == (
        f".venv/bin/python -m hyperpod_ops.deploy_gate --assembly cdk.out/assembly-{name} --stage {name} "
        "--lookup-role --qualifier hnb659fds --allow-replace ''"
    )
    assert (pipeline.stage_dir(name) / "manifest.json").is_file()
    assert pipeline.stage_dir(name).name == f"assembly-{name}"
    later = [a for a in pipeline.actions(name) if a is not gate]
    assert later and all(a["RunOrder"] > gate["RunOrder"] for a in later)
    # the repository (the gate's code) and the synth output (cdk.out) are its inputs
    assert len(gate["InputArtifacts"]) == 2
    # it may assume exactly the target's look-up role (ReadOnlyAccess, from `cdk bootstrap`)
    role = pipeline.project(gate)["ServiceRole"]["Fn::GetAtt"][0]
    [policy] = [
        r["Properties"]["PolicyDocument"]
        for r in pipeline.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in r["Properties"]["Roles"]
    ]
    assumed = [
        s for s in policy["Statement"] if "sts:AssumeRole" in json.dumps(s.get("Action", ""))
    ]
    assert [arn_text(s["Resource"]) for s in assumed] == [
        f"arn:${{AWS::Partition}}:iam::{config.account}:role/"
        f"cdk-hnb659fds-lookup-role-{config.account}-{config.region}"
    ]


def test_a_stage_lets_through_what_its_allow_replace_names(tmp_path: Path) -> None:
    config, stages = load_shipped()
    prod = stages[1]
    allowed = [f"prod-{prod.config.name}-cluster/HyperPodCluster"]
    stages[1] = type(prod)(
        prod.stage.model_copy(update={"allow_replace": allowed}), prod.config, prod.path
    )
    synth = synthesize_pipeline(config, stages, tmp_path, nag=False)
    [gate] = [a for a in synth.actions("prod", "Build") if a["Name"] == "Gate-prod"]
    command = synth.buildspec(gate)["phases"]["build"]["commands"][-1]
    assert command.endswith(f"--allow-replace {allowed[0]}")


# -- compliance ----------------------------------------------------------------------------------


def test_synth_leaves_no_compliance_finding(pipeline: PipelineSynth) -> None:
    # the report covers the stacks inside the Stages (the test below shows a finding there)
    assert report_violations(pipeline.outdir) == []


@pytest.mark.parametrize("name", STAGES)
def test_stage_stacks_carry_the_cdk_nag_metadata(pipeline: PipelineSynth, name: str) -> None:
    # the Stage adds the aspect that writes the acknowledgments (aspects stop at Stage boundaries)
    written = {
        (rule["id"], rule["reason"])
        for stack_name in pipeline.stage_stacks(name)
        for resource in pipeline.stage_template(name, stack_name)["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    }
    assert "NIST.800.53.R5-EC2RestrictedCommonPorts" in {rule for rule, _ in written}
    staged = [a for a in pipeline.acknowledgments if a[0].startswith(f"/{name}/")]
    assert staged
    for _, finding, reason in staged:
        if NAG_RULE.match(finding_id(finding)):
            assert (finding_id(finding), reason) in written, finding


def test_the_pipeline_acknowledgments_are_narrow_and_give_a_reason(
    pipeline: PipelineSynth,
) -> None:
    prefix = f"/{pipeline.pipeline_stack_name}/Pipeline/"
    mine = [
        a for a in pipeline.acknowledgments if a[0].startswith(f"/{pipeline.pipeline_stack_name}/")
    ]
    assert mine
    for path, finding, reason in mine:
        rule = finding_id(finding)
        assert path.startswith(prefix), (path, rule)  # on CDK Pipelines' constructs, not the stack
        assert NAG_RULE.match(rule) or CDK_ANNOTATION.match(rule), (path, rule)
        assert len(reason.strip()) >= MIN_REASON_LENGTH, (path, rule)
        if rule.startswith(("AwsSolutions-IAM4", "AwsSolutions-IAM5")):
            assert GRANULAR_IAM.match(rule), (path, rule)
    # the pipeline stack's acknowledgments ship in its template too
    written = {
        rule["id"]
        for resource in pipeline.template["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    }
    assert "AwsSolutions-S1" in written


def test_the_pipeline_template_has_no_cfn_lint_error(pipeline: PipelineSynth) -> None:
    assert lint_errors(pipeline.template, pipeline.config.region, overrides=False) == []


def test_the_packs_of_the_pipeline_file_and_of_every_stage_are_registered_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stacks.app_builder

    registered: list[list[str]] = []
    monkeypatch.setattr(
        stacks.app_builder,
        "register_compliance_packs",
        lambda app, names: registered.append(list(names)),
    )
    config, stages = load_shipped()
    assert config.compliance_packs == ["AwsSolutions"]
    assert [s.config.compliance_packs for s in stages] == [
        ["AwsSolutions"],
        ["AwsSolutions", "NIST80053R5"],
    ]
    stacks.app_builder.build_pipeline_app(
        config,
        stages,
        pipeline_file=SHIPPED_PIPELINE,
        app=stacks.app_builder.new_app(outdir=str(tmp_path)),
        project_root=PROJECT_ROOT,
    )
    assert registered == [["AwsSolutions", "NIST80053R5"]]  # on the App only, not per Stage


# -- variants: a finding inside a Stage, and the destroy_data flag -------------------------------


def test_a_finding_inside_a_stage_fails_the_synth_and_shows_in_the_report_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the packs are registered once, on the App: they check the stacks inside the Stages too; a
    # finding there fails the synth (and so the pipeline's synth step) and is reported once.
    # CDK Pipelines synthesizes a Stage as it is added: the stray bucket goes in with its stacks.
    import stacks.pipeline

    build_environment = stacks.pipeline.build_environment

    def with_a_stray_bucket(scope: Any, config: Any, **kwargs: Any) -> Any:
        built = build_environment(scope, config, **kwargs)
        s3.CfnBucket(built.storage, "StrayBucket")
        return built

    monkeypatch.setattr(stacks.pipeline, "build_environment", with_a_stray_bucket)
    config, stages = load_shipped()
    with pytest.raises(AssertionError, match="ValidationFailed"):  # `cdk synth` fails too
        synthesize_pipeline(config, [s for s in stages if s.name == "dev"], tmp_path)
    found = [v for v in report_violations(tmp_path) if "StrayBucket" in v[2]]
    assert ("AwsSolutions", "AwsSolutions-S1", "dev/ml-research-storage/StrayBucket") in found
    assert ("HyperPod", "HyperPod-DataRetained", "dev/ml-research-storage/StrayBucket") in found
    assert len(found) == len(set(found))  # once each, not once per registration


def test_destroy_data_never_reaches_a_pipeline_stage(tmp_path: Path) -> None:
    # the config says destroy and the deploy passes the flag: a workstation deploy would delete
    # the data with the stack; a pipeline stage keeps it (RETAIN, termination protection on)
    from hyperpod_cdk.config import EnvironmentConfig, parse
    from hyperpod_cdk.config.pipeline import LoadedStage

    config, stages = load_shipped()
    dev = stages[0]
    data = yaml.safe_load(dev.path.read_text())
    data["storage"]["fsx"]["removal_policy"] = "destroy"
    destroying = parse(data, PROJECT_ROOT)
    assert isinstance(destroying, EnvironmentConfig)
    synth = synthesize_pipeline(
        config,
        [LoadedStage(dev.stage, destroying, dev.path)],
        tmp_path,
        context={"destroy_data": "true"},
        nag=False,
    )
    storage_name = synth.stage_stack_name("dev", "storage")
    storage = synth.stage_template("dev", storage_name)
    policies = {
        (r["Type"], r.get("DeletionPolicy"))
        for r in storage["Resources"].values()
        if r["Type"] in ("AWS::FSx::FileSystem", "AWS::S3::Bucket")
    }
    assert policies == {("AWS::FSx::FileSystem", "Retain"), ("AWS::S3::Bucket", "Retain")}
    assert synth.stage_stacks("dev")[storage_name]["properties"]["terminationProtection"] is True
    metadata_file = synth.manifest["artifacts"][synth.pipeline_stack_name]["additionalMetadataFile"]
    metadata = json.loads((tmp_path / metadata_file).read_text())
    warnings = [
        e["data"]
        for entries in metadata.values()
        for e in entries
        if e["type"] == "aws:cdk:warning"
    ]
    assert any("destroy_data=true does not apply to a pipeline" in str(w) for w in warnings)

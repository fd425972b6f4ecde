"""eks.addons.fsx_csi_driver {dynamic_provisioning: true}: a StorageClass whose claims create
file systems, with the driver's controller limited to file systems tagged for the environment."""

from __future__ import annotations

import json

import pytest

DYNAMIC = {"eks.addons.fsx_csi_driver": {"dynamic_provisioning": True}}


@pytest.fixture(scope="module")
def dynamic(build_variant):
    return build_variant(DYNAMIC, base="eks-full")


def test_the_controller_may_touch_only_file_systems_tagged_for_the_environment(dynamic) -> None:
    name = dynamic.config.name
    (policy,) = [
        p["Properties"]
        for k, p in dynamic.resources("eks-addons", "AWS::IAM::ManagedPolicy").items()
        if k.startswith("AddonsFsxCsiControllerPolicy")
    ]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    create = statements["CreateTaggedFileSystems"]
    assert create["Condition"] == {
        "StringEquals": {"aws:RequestTag/hyperpod-cdk:environment": name}
    }
    # security review M1 (issue 34): the role could tag any file system with the environment's
    # tag and then delete it. Now no statement allows delete or update, and explicit denies keep
    # tag, untag, update and delete off the storage stack's file system and off every file
    # system CloudFormation made.
    allowed = {
        action
        for s in policy["PolicyDocument"]["Statement"]
        if s.get("Effect", "Allow") == "Allow"
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert not allowed & {"fsx:DeleteFileSystem", "fsx:UpdateFileSystem", "fsx:UntagResource"}
    guarded = {
        "fsx:DeleteFileSystem",
        "fsx:UpdateFileSystem",
        "fsx:TagResource",
        "fsx:UntagResource",
    }
    own = statements["DenyTheEnvironmentsFileSystem"]
    assert own["Effect"] == "Deny" and set(own["Action"]) == guarded
    assert "file-system/" in json.dumps(own["Resource"]) and "Fn::" in json.dumps(own["Resource"])
    stacks = statements["DenyCloudFormationFileSystems"]
    assert stacks["Effect"] == "Deny" and set(stacks["Action"]) == guarded
    assert stacks["Condition"] == {
        "Null": {"aws:ResourceTag/aws:cloudformation:stack-name": "false"}
    }
    assert "AmazonFSxFullAccess" not in json.dumps(dynamic.template("eks-addons"))
    associations = {
        (a["Properties"]["Namespace"], a["Properties"]["ServiceAccount"])
        for a in dynamic.resources("eks-addons", "AWS::EKS::PodIdentityAssociation").values()
    }
    assert ("kube-system", "fsx-csi-controller-sa") in associations


def test_the_storage_class_creates_tagged_retained_file_systems_beside_the_nodes(dynamic) -> None:
    classes = [
        r
        for r in dynamic.resources("eks-addons", "Custom::AWSCDK-EKS-KubernetesResource").values()
        if '\\"StorageClass\\"' in json.dumps(r["Properties"]["Manifest"])
    ]
    assert len(classes) == 1
    text = json.dumps(classes[0]["Properties"]["Manifest"])
    for fragment in (
        '\\"name\\":\\"fsx-sc\\"',
        '\\"provisioner\\":\\"fsx.csi.aws.com\\"',
        '\\"deploymentType\\":\\"PERSISTENT_2\\"',
        '\\"reclaimPolicy\\":\\"Retain\\"',
        f'\\"extraTags\\":\\"hyperpod-cdk:environment={dynamic.config.name}\\"',
    ):
        assert fragment in text, fragment


def test_the_static_volume_stays_and_no_class_without_the_mode(synthesized, dynamic) -> None:
    def kinds(synth) -> str:
        return json.dumps(
            [
                r["Properties"]["Manifest"]
                for r in synth.resources(
                    "eks-addons", "Custom::AWSCDK-EKS-KubernetesResource"
                ).values()
            ]
        )

    assert '\\"PersistentVolume\\"' in kinds(dynamic)
    assert '\\"StorageClass\\"' not in kinds(synthesized("eks-full"))

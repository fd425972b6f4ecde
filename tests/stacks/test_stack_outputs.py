"""Every stack outputs what a user needs next (SPEC section 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_testkit import get_att, join_parts, ref, shipped_params

EXPECTED = {
    "network": ["VpcId", "ComputeSubnetId", "NodeSecurityGroupId"],
    "storage": ["DataBucketName"],
    "nodes": ["LifecycleBucketName", "LifecycleScriptsUri", "ExecutionRoleArn"],
    "cluster": ["ClusterName", "ClusterArn"],
}
# what only one orchestrator has
SLURM_EXPECTED = {"cluster": ["ControllerSsmCommand"]}
EKS_EXPECTED = {"eks-dependencies": ["EksClusterName", "EksClusterArn", "KubeconfigCommand"]}
FSX_OUTPUTS = ["FileSystemId", "FileSystemDnsName", "FileSystemMountName"]


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_stack_outputs_what_users_need_next(shipped, kind: str) -> None:
    extra = SLURM_EXPECTED if shipped.config.is_slurm else EKS_EXPECTED
    for kind_, names in (*EXPECTED.items(), *extra.items()):
        if kind_ != kind and not (kind == "cluster" and kind_ == "eks-dependencies"):
            continue
        outputs = shipped.outputs(kind_)
        assert [name for name in names if name not in outputs] == [], kind_
        for name in names:
            assert outputs[name].get("Description"), name


@pytest.mark.parametrize("path", shipped_params(lambda c: c.storage.fsx.enabled))
def test_storage_outputs_the_file_system(path: Path, synthesized) -> None:
    outputs = synthesized(path).outputs("storage")
    assert [name for name in FSX_OUTPUTS if name not in outputs] == []


@pytest.mark.parametrize(
    "path", shipped_params(lambda c: c.storage.fsx.enabled and c.storage.fsx.file_system_id is None)
)
def test_file_system_outputs_point_at_the_created_file_system(path: Path, synthesized) -> None:
    outputs = synthesized(path).outputs("storage")
    assert outputs["FileSystemId"]["Value"] == ref("FileSystem")
    assert outputs["FileSystemDnsName"]["Value"] == get_att("FileSystem", "DNSName")
    assert outputs["FileSystemMountName"]["Value"] == get_att("FileSystem", "LustreMountName")


def test_data_bucket_output_is_the_data_bucket(shipped) -> None:
    assert shipped.outputs("storage")["DataBucketName"]["Value"] == ref("DataBucket")


def test_cluster_outputs_name_and_arn(shipped) -> None:
    outputs = shipped.outputs("cluster")
    assert outputs["ClusterName"]["Value"] == shipped.config.cluster_name
    assert outputs["ClusterArn"]["Value"] == get_att("HyperPodCluster", "ClusterArn")


def test_controller_ssm_command_names_the_cluster_and_the_controller_group(shipped_slurm) -> None:
    parts = join_parts(shipped_slurm.outputs("cluster")["ControllerSsmCommand"]["Value"])
    text = "".join(p for p in parts if isinstance(p, str))
    controller = next(
        g.name for g in shipped_slurm.config.cluster.instance_groups if g.node_type == "Controller"
    )
    assert "aws ssm start-session" in text
    assert f"--cluster-name {shipped_slurm.config.cluster_name}" in text
    assert f"--region {shipped_slurm.config.region}" in text
    assert f"_{controller}-" in text
    # the cluster id is the last part of the cluster ARN
    assert {
        "Fn::Select": [1, {"Fn::Split": ["/", get_att("HyperPodCluster", "ClusterArn")]}]
    } in parts


def test_accounting_database_outputs(synthesized) -> None:
    outputs = synthesized("full").outputs("storage")
    assert outputs["AccountingDatabaseEndpoint"]["Value"] == get_att(
        "SlurmAccountingDatabase", "Endpoint.Address"
    )
    assert "AccountingSecretArn" in outputs


def test_every_output_says_what_it_is(shipped) -> None:
    """What ``cdk deploy`` prints (issue 17): every output has a description, and the outputs
    aws-cdk-lib adds for weak cross-stack references say they are plumbing."""
    from stacks.base import PUBLISHED_OUTPUT_DESCRIPTION

    for stack, template in shipped.templates.items():
        for name, output in template.get("Outputs", {}).items():
            assert output.get("Description"), (stack, name)
            plumbing = name.startswith("PublishOutput")
            assert (output["Description"] == PUBLISHED_OUTPUT_DESCRIPTION) == plumbing, (
                stack,
                name,
            )

"""Bring your own: the constructs accept existing resources (imported VPC, subnets, security
groups, KMS key, bucket, file system, lifecycle prefix, roles, database, EKS cluster) and then
create nothing of their own in their place; the compliance packs stay clean."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from library_testkit import findings, project_context, templates

from hyperpod_cdk import (
    AccountingDatabaseRef,
    AdoptedEksCluster,
    ClusterConfig,
    DataRepositoryAssociation,
    DataRepositoryAssociations,
    EfaSecurityGroup,
    ExecutionRole,
    FileSystemHandle,
    FsxConfig,
    HyperPodCluster,
    HyperPodDependencies,
    InstanceGroup,
    LifecycleRef,
    LustreFileSystem,
    register_compliance_packs,
)

ACCOUNT, REGION, AZ_ID = "111122223333", "us-west-2", "usw2-az2"
VPC_ID = "vpc-0a1b2c3d4e5f67890"
SUBNET_ID = "subnet-0a1b2c3d4e5f67890"
GROUP_ID = "sg-0a1b2c3d4e5f67890"
KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/hyperpod-nodes"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/ml-shared"
FILE_SYSTEM = FileSystemHandle(
    file_system_id="fs-0123456789abcdef0",
    dns_name=f"fs-0123456789abcdef0.fsx.{REGION}.amazonaws.com",
    mount_name="abcdefgh",
    mount_path="/lustre",
)
LIFECYCLE = LifecycleRef("s3://platform-lifecycle/hyperpod/v7/", "on_create.sh")


class Adopted:
    """Existing resources of the account, imported into ``stack``."""

    def __init__(self, stack: cdk.Stack) -> None:
        self.vpc = ec2.Vpc.from_vpc_attributes(
            stack, "Vpc", vpc_id=VPC_ID, availability_zones=["us-west-2b"]
        )
        self.subnet = ec2.Subnet.from_subnet_attributes(
            stack,
            "Subnet",
            subnet_id=SUBNET_ID,
            availability_zone="us-west-2b",
            route_table_id="rtb-0a1b2c3d4e5f67890",
        )
        self.group = ec2.SecurityGroup.from_security_group_id(
            stack, "Group", GROUP_ID, mutable=False
        )


def _synth(build: Callable[[cdk.Stack], None]) -> tuple[dict[str, Any], list[Any]]:
    outdir = Path(tempfile.mkdtemp(prefix="hyperpod-adoption-"))
    app = cdk.App(context=project_context(), outdir=str(outdir))
    stack = cdk.Stack(app, "adopting", env=cdk.Environment(account=ACCOUNT, region=REGION))
    build(stack)
    register_compliance_packs(app, ["AwsSolutions"])
    try:
        app.synth()
    except Exception as exc:  # jsii: a compliance finding failed the synth
        raise AssertionError(f"{exc}\n{findings(outdir)}") from None
    return templates(outdir)["adopting"], findings(outdir)


def _cluster_config(**changes: Any) -> ClusterConfig:
    return ClusterConfig(
        instance_groups=[
            InstanceGroup(
                name="controller", instance_type="ml.m5.xlarge", count=1, node_type="Controller"
            ),
            InstanceGroup(name="gpu", instance_type="ml.p5.48xlarge", count=2),
        ],
        **changes,
    )


def _resources(template: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == resource_type]


def test_a_slurm_cluster_on_adopted_resources_creates_only_itself() -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        HyperPodCluster(
            stack,
            "Cluster",
            config=_cluster_config(),
            cluster_name="adopter",
            execution_role_arn=ROLE_ARN,
            lifecycle=LIFECYCLE,
            subnets={AZ_ID: adopted.subnet},
            main_az_id=AZ_ID,
            security_groups=[adopted.group],
            file_system=FILE_SYSTEM,
            accounting_database=AccountingDatabaseRef(
                "slurmdb.platform.internal",
                f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:slurm-AbCdEf",
            ),
        )
        DataRepositoryAssociations(
            stack,
            "Repositories",
            file_system_id=FILE_SYSTEM.file_system_id,
            associations=[
                DataRepositoryAssociation(file_system_path="/datasets", s3_prefix="datasets/")
            ],
            data_bucket=s3.Bucket.from_bucket_name(stack, "Data", "platform-datasets"),
        )

    template, found = _synth(build)
    assert found == []
    assert {r["Type"] for r in template["Resources"].values()} == {
        "AWS::SageMaker::Cluster",
        "AWS::FSx::DataRepositoryAssociation",
    }
    cluster = _resources(template, "AWS::SageMaker::Cluster")[0]["Properties"]
    assert cluster["VpcConfig"] == {"SecurityGroupIds": [GROUP_ID], "Subnets": [SUBNET_ID]}
    group = cluster["InstanceGroups"][0]
    assert group["ExecutionRole"] == ROLE_ARN
    assert group["LifeCycleConfig"] == {
        "OnInitComplete": "on_create.sh",
        "SourceS3Uri": "s3://platform-lifecycle/hyperpod/v7/",
    }
    assert group["InstanceStorageConfigs"] == [
        {
            "FsxLustreConfig": {
                "DnsName": FILE_SYSTEM.dns_name,
                "MountName": "abcdefgh",
                "MountPath": "/lustre",
            }
        }
    ]
    assert cluster["Orchestrator"]["Slurm"]["AccountingDatabase"]["Endpoint"] == (
        "slurmdb.platform.internal"
    )
    association = _resources(template, "AWS::FSx::DataRepositoryAssociation")[0]["Properties"]
    assert association["FileSystemId"] == FILE_SYSTEM.file_system_id
    assert association["DataRepositoryPath"] == "s3://platform-datasets/datasets/"


def test_created_pieces_take_adopted_network_key_and_boundary() -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        efa = EfaSecurityGroup(stack, "Efa", vpc=adopted.vpc)
        LustreFileSystem(
            stack,
            "Lustre",
            config=FsxConfig(),
            subnet=adopted.subnet,
            security_groups=[efa.security_group, adopted.group],
            kms_key=kms.Key.from_key_arn(stack, "Key", KEY_ARN),
            depends_on=[efa],
        )
        ExecutionRole(
            stack,
            "Role",
            vpc=adopted.vpc,
            subnets=[adopted.subnet],
            security_groups=[efa.security_group, adopted.group],
            permissions_boundary=iam.ManagedPolicy.from_managed_policy_name(
                stack, "Boundary", "platform-boundary"
            ),
        )

    template, found = _synth(build)
    assert found == []
    assert _resources(template, "AWS::KMS::Key") == []  # the given key, not a new one
    fsx = _resources(template, "AWS::FSx::FileSystem")[0]["Properties"]
    assert fsx["SubnetIds"] == [SUBNET_ID]
    assert GROUP_ID in fsx["SecurityGroupIds"]
    assert "1234abcd-12ab-34cd-56ef-1234567890ab" in str(fsx["KmsKeyId"])
    [efa_group] = _resources(template, "AWS::EC2::SecurityGroup")
    assert efa_group["Properties"]["VpcId"] == VPC_ID
    [role] = _resources(template, "AWS::IAM::Role")
    assert "platform-boundary" in str(role["Properties"]["PermissionsBoundary"])
    assert SUBNET_ID in str(_resources(template, "AWS::IAM::ManagedPolicy"))


@pytest.mark.parametrize("kubectl_role_arn", [None, f"arn:aws:iam::{ACCOUNT}:role/kubectl"])
def test_an_eks_cluster_is_adopted_for_the_dependencies_and_the_cluster(
    kubectl_role_arn: str | None,
) -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        eks = AdoptedEksCluster(
            stack,
            "Eks",
            cluster_arn=EKS_ARN,
            vpc=adopted.vpc,
            kubectl_subnets=[adopted.subnet],
            kubectl_security_groups=[adopted.group],
            kubectl_role_arn=kubectl_role_arn,
            kubernetes_version="1.33",
        )
        HyperPodDependencies(
            stack,
            "Dependencies",
            cluster=eks,
            region=REGION,
            enabled=["health_monitoring_agent", "deep_health_check"],
        )
        HyperPodCluster(
            stack,
            "Cluster",
            config=_cluster_config(),
            cluster_name="adopter-eks",
            execution_role_arn=ROLE_ARN,
            lifecycle=LIFECYCLE,
            subnets={AZ_ID: adopted.subnet},
            main_az_id=AZ_ID,
            security_groups=[adopted.group],
            eks_cluster_arn=eks.cluster_arn,
        )

    template, found = _synth(build)
    if kubectl_role_arn is None:
        assert found == []
    else:
        # A warning, not a failure: with a given (imported) role, aws_eks_v2 still declares the
        # condition under which it would give its own handler role ECR Public access, and uses
        # it nowhere (cfn-lint W8001, an unused condition; CloudFormation accepts it).
        assert found == [("CloudFormation Validate", "W8001", ["adopting"])]
    assert _resources(template, "AWS::EKS::Cluster") == []
    cluster = _resources(template, "AWS::SageMaker::Cluster")[0]["Properties"]
    assert cluster["Orchestrator"] == {"Eks": {"ClusterArn": EKS_ARN}}
    manifests = _resources(template, "Custom::AWSCDK-EKS-KubernetesResource")
    assert len(manifests) >= 2
    assert all(m["Properties"]["ClusterName"] == "ml-shared" for m in manifests)
    # a handler role of its own gets a cluster-admin access entry; a given role has one already
    entries = _resources(template, "AWS::EKS::AccessEntry")
    assert len(entries) == (1 if kubectl_role_arn is None else 0)

"""Bring your own: the constructs accept existing resources (imported VPC, subnets, security
groups, KMS key, bucket, file system, lifecycle prefix, roles, database, EKS cluster) and then
create nothing of their own in their place; the compliance packs stay clean."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks_v2
from aws_cdk import aws_fsx as fsx
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
    HyperPodNetwork,
    InstanceGroup,
    LifecycleRef,
    LustreFileSystem,
    NetworkConfig,
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
    # a temporary folder removed afterwards (the assemblies are up to 57 MB each)
    with tempfile.TemporaryDirectory(prefix="hyperpod-adoption-") as folder:
        outdir = Path(folder)
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


def _hyperpod_cluster(stack: cdk.Stack, adopted: Adopted, cluster_name: str, **parts: Any) -> None:
    """A HyperPod cluster on the adopted network, role and scripts, with ``parts`` (the file
    system, the accounting database, the EKS cluster)."""
    HyperPodCluster(
        stack,
        "Cluster",
        config=_cluster_config(),
        cluster_name=cluster_name,
        execution_role_arn=ROLE_ARN,
        lifecycle=LIFECYCLE,
        subnets={AZ_ID: adopted.subnet},
        main_az_id=AZ_ID,
        security_groups=[adopted.group],
        **parts,
    )


def _resources(template: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == resource_type]


def test_a_slurm_cluster_on_adopted_resources_creates_only_itself() -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        _hyperpod_cluster(
            stack,
            adopted,
            "adopter",
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
        _hyperpod_cluster(stack, adopted, "adopter-eks", eks_cluster_arn=eks.cluster_arn)

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
    # both components live in aws-hyperpod: one release of the chart
    (release,) = _resources(template, "Custom::AWSCDK-EKS-HelmChart")
    assert release["Properties"]["ClusterName"] == "ml-shared"
    assert release["Properties"]["Release"] == "hyperpod-cdk-core"
    assert release["Properties"]["Namespace"] == "aws-hyperpod"
    # a handler role of its own gets a cluster-admin access entry (and the release waits for it);
    # a given role has one already
    entries = _resources(template, "AWS::EKS::AccessEntry")
    assert len(entries) == (1 if kubectl_role_arn is None else 0)
    if kubectl_role_arn is None:
        (entry_id,) = [
            k for k, r in template["Resources"].items() if r["Type"] == "AWS::EKS::AccessEntry"
        ]
        assert entry_id in release.get("DependsOn", [])


def _fsx_storage(cluster: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = cluster["InstanceGroups"][0]["InstanceStorageConfigs"][0]
    return config["FsxLustreConfig"]


def test_a_handle_from_an_fsx_l2_file_system_points_the_cluster_at_its_attributes() -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        lustre = fsx.LustreFileSystem(
            stack,
            "PlatformLustre",
            vpc=adopted.vpc,
            vpc_subnet=adopted.subnet,
            security_group=adopted.group,
            storage_capacity_gib=1200,
            kms_key=kms.Key.from_key_arn(stack, "Key", KEY_ARN),
            lustre_configuration=fsx.LustreConfiguration(
                deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
                per_unit_storage_throughput=250,
            ),
        )
        _hyperpod_cluster(
            stack,
            adopted,
            "adopter",
            file_system=FileSystemHandle.from_lustre_file_system(lustre, "/lustre"),
        )

    template, found = _synth(build)
    assert found == []
    [(fsx_id, _)] = [
        (logical_id, r)
        for logical_id, r in template["Resources"].items()
        if r["Type"] == "AWS::FSx::FileSystem"
    ]
    storage = _fsx_storage(_resources(template, "AWS::SageMaker::Cluster")[0]["Properties"])
    assert storage["MountName"] == {"Fn::GetAtt": [fsx_id, "LustreMountName"]}
    assert storage["MountPath"] == "/lustre"
    # the L2's DNS name: <file system id>.fsx.<region>.<url suffix>
    assert storage["DnsName"] == {
        "Fn::Join": ["", [{"Ref": fsx_id}, f".fsx.{REGION}.", {"Ref": "AWS::URLSuffix"}]]
    }


def test_a_handle_from_an_imported_fsx_file_system_needs_its_mount_name() -> None:
    stack = cdk.Stack(cdk.App(), "importing")
    imported = fsx.LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        "Imported",
        file_system_id=FILE_SYSTEM.file_system_id,
        dns_name=FILE_SYSTEM.dns_name,
        security_group=ec2.SecurityGroup.from_security_group_id(stack, "Group", GROUP_ID),
    )
    with pytest.raises(ValueError, match=r"imported Lustre file system has no mount_name: pass"):
        FileSystemHandle.from_lustre_file_system(imported)
    handle = FileSystemHandle.from_lustre_file_system(imported, "/lustre", mount_name="abcdefgh")
    assert handle == FILE_SYSTEM


@pytest.mark.parametrize(
    ("mount_path", "message"),
    [
        ("fsx", r"mount_path 'fsx' is not a plain absolute path; give one like /fsx"),
        ("/data/../etc", r"mount_path '/data/../etc' is not a plain absolute path"),
        ("/opt/sagemaker", r"mount_path '/opt/sagemaker' is a system directory"),
    ],
)
def test_a_handle_rejects_a_mount_path_that_is_no_place_to_mount(
    mount_path: str, message: str
) -> None:
    stack = cdk.Stack(cdk.App(), "importing")
    imported = fsx.LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        "Imported",
        file_system_id=FILE_SYSTEM.file_system_id,
        dns_name=FILE_SYSTEM.dns_name,
        security_group=ec2.SecurityGroup.from_security_group_id(stack, "Group", GROUP_ID),
    )
    with pytest.raises(ValueError, match=message):
        FileSystemHandle.from_lustre_file_system(imported, mount_path, mount_name="abcdefgh")
    with pytest.raises(ValueError, match=message):
        FileSystemHandle("fs-0123456789abcdef0", "dns", "abcdefgh", mount_path)


def test_a_lustre_file_system_rejects_a_key_given_twice() -> None:
    stack = cdk.Stack(cdk.App(), "keyed", env=cdk.Environment(account=ACCOUNT, region=REGION))
    adopted = Adopted(stack)
    with pytest.raises(ValueError) as error:
        LustreFileSystem(
            stack,
            "Lustre",
            config=FsxConfig(kms_key_arn=KEY_ARN),
            subnet=adopted.subnet,
            security_groups=[adopted.group],
            kms_key=kms.Key.from_key_arn(stack, "Key", KEY_ARN),
        )
    assert str(error.value) == (
        f"both kms_key and storage.fsx.kms_key_arn ({KEY_ARN}) name the key of the file system; "
        "give only one of them"
    )


def test_a_lustre_file_system_uses_the_key_of_its_config() -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        LustreFileSystem(
            stack,
            "Lustre",
            config=FsxConfig(kms_key_arn=KEY_ARN),
            subnet=adopted.subnet,
            security_groups=[adopted.group],
        )

    template, _ = _synth(build)
    assert _resources(template, "AWS::KMS::Key") == []
    [file_system] = _resources(template, "AWS::FSx::FileSystem")
    assert file_system["Properties"]["KmsKeyId"] == "1234abcd-12ab-34cd-56ef-1234567890ab"


SERVICE_TOKEN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:platform-kubectl"


def _imported_eks(stack: cdk.Stack, *, with_provider: bool) -> eks_v2.ICluster:
    provider = (
        eks_v2.KubectlProvider.from_kubectl_provider_attributes(
            stack,
            "PlatformKubectl",
            service_token=SERVICE_TOKEN,
            # the handler's role: it is let read the chart from the CDK asset bucket
            role=iam.Role.from_role_arn(
                stack, "PlatformKubectlRole", f"arn:aws:iam::{ACCOUNT}:role/platform-kubectl"
            ),
        )
        if with_provider
        else None
    )
    return eks_v2.Cluster.from_cluster_attributes(
        stack, "PlatformEks", cluster_name="ml-shared", kubectl_provider=provider
    )


@pytest.mark.parametrize("with_provider", [True, False])
def test_an_eks_cluster_is_adopted_from_an_icluster(with_provider: bool) -> None:
    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        kubectl: dict[str, Any] = (
            {}
            if with_provider
            else {
                "vpc": adopted.vpc,
                "kubectl_subnets": [adopted.subnet],
                "kubectl_security_groups": [adopted.group],
            }
        )
        eks = AdoptedEksCluster(
            stack,
            "Eks",
            cluster=_imported_eks(stack, with_provider=with_provider),
            kubernetes_version="1.33",
            **kubectl,
        )
        HyperPodDependencies(
            stack, "Dependencies", cluster=eks, region=REGION, enabled=["deep_health_check"]
        )
        _hyperpod_cluster(stack, adopted, "adopter-eks", eks_cluster_arn=eks.cluster_arn)

    template, found = _synth(build)
    assert found == []
    assert _resources(template, "AWS::EKS::Cluster") == []
    manifests = _resources(template, "Custom::AWSCDK-EKS-HelmChart")
    assert manifests
    assert all(m["Properties"]["ClusterName"] == "ml-shared" for m in manifests)
    cluster = _resources(template, "AWS::SageMaker::Cluster")[0]["Properties"]
    assert "cluster/ml-shared" in json.dumps(cluster["Orchestrator"]["Eks"]["ClusterArn"])
    entries = _resources(template, "AWS::EKS::AccessEntry")
    if with_provider:
        # the cluster's own kubectl provider installs the chart; nothing of ours runs it
        assert all(m["Properties"]["ServiceToken"] == SERVICE_TOKEN for m in manifests)
        assert _resources(template, "AWS::Lambda::Function") == []
        assert entries == []
    else:
        # a new handler in the given subnets, let into the cluster by an access entry
        assert all(m["Properties"]["ServiceToken"] != SERVICE_TOKEN for m in manifests)
        [entry] = entries
        assert entry["Properties"]["ClusterName"] == "ml-shared"
        handlers = [
            f
            for f in _resources(template, "AWS::Lambda::Function")
            if f["Properties"].get("VpcConfig", {}).get("SubnetIds") == [SUBNET_ID]
        ]
        assert handlers


def test_an_adopted_eks_cluster_takes_exactly_one_of_arn_and_cluster() -> None:
    stack = cdk.Stack(cdk.App(), "adopting", env=cdk.Environment(account=ACCOUNT, region=REGION))
    cluster = _imported_eks(stack, with_provider=True)
    message = r"takes exactly one of cluster_arn .* or cluster \(an aws_eks_v2.ICluster\); got "
    with pytest.raises(ValueError, match=message + "both"):
        AdoptedEksCluster(stack, "Both", cluster_arn=EKS_ARN, cluster=cluster)
    with pytest.raises(ValueError, match=message + "neither"):
        AdoptedEksCluster(stack, "Neither")


def test_an_adopted_eks_cluster_with_a_kubectl_provider_takes_no_kubectl_settings() -> None:
    stack = cdk.Stack(cdk.App(), "adopting", env=cdk.Environment(account=ACCOUNT, region=REGION))
    adopted = Adopted(stack)
    with pytest.raises(ValueError) as error:
        AdoptedEksCluster(
            stack,
            "Eks",
            cluster=_imported_eks(stack, with_provider=True),
            kubectl_subnets=[adopted.subnet],
        )
    assert str(error.value) == (
        "cluster ml-shared already has a kubectl provider, which applies the manifests; leave "
        "out kubectl_subnets, kubectl_security_groups and kubectl_role_arn (they configure a "
        "new one)"
    )


def test_a_network_adopts_an_ivpc_and_its_subnets_and_creates_only_the_node_group() -> None:
    built: dict[str, HyperPodNetwork] = {}

    def build(stack: cdk.Stack) -> None:
        adopted = Adopted(stack)
        other = ec2.Subnet.from_subnet_attributes(
            stack,
            "Other",
            subnet_id="subnet-0fedcba9876543210",
            availability_zone="us-west-2a",
            route_table_id="rtb-0fedcba9876543210",
        )
        built["net"] = HyperPodNetwork(
            stack,
            "Network",
            network=NetworkConfig(availability_zone_id=AZ_ID, interface_endpoints=["ssm"]),
            vpc=adopted.vpc,
            compute_subnets={AZ_ID: adopted.subnet, "usw2-az1": other},
            logs_key=kms.Key.from_key_arn(stack, "LogsKey", KEY_ARN),
        )

    template, found = _synth(build)
    assert found == []
    net = built["net"]
    assert net.compute_subnet.subnet_id == SUBNET_ID
    assert set(net.compute_subnets) == {AZ_ID, "usw2-az1"}
    types = {r["Type"] for r in template["Resources"].values()}
    # no VPC, subnet, route, NAT or flow log: the node group, the endpoint and its group only
    assert {t for t in types if not t.startswith("AWS::EC2::SecurityGroup")} == {
        "AWS::EC2::VPCEndpoint"
    }
    for group in _resources(template, "AWS::EC2::SecurityGroup"):
        assert group["Properties"]["VpcId"] == VPC_ID
    (endpoint,) = _resources(template, "AWS::EC2::VPCEndpoint")
    assert endpoint["Properties"]["VpcId"] == VPC_ID
    assert endpoint["Properties"]["SubnetIds"] == [SUBNET_ID, "subnet-0fedcba9876543210"]


@pytest.mark.parametrize(
    ("config", "objects", "messages"),
    [
        pytest.param(
            {"vpc_id": VPC_ID, "compute_subnet_id": SUBNET_ID},
            True,
            [f"both vpc= and network.vpc_id ({VPC_ID}) name the VPC", "compute_subnet_id is set"],
            id="vpc-twice",
        ),
        pytest.param(
            {"cidr": "10.8.0.0/16", "nat_gateways": 2},
            True,
            [
                "network.cidr applies only to a VPC the construct creates",
                "network.nat_gateways applies only to a VPC the construct creates",
            ],
            id="new-vpc-keys",
        ),
        pytest.param({}, False, ["compute_subnets= needs vpc="], id="subnets-without-vpc"),
    ],
)
def test_a_network_rejects_every_contradiction_of_an_adopted_ivpc_at_once(
    config: dict[str, Any], objects: bool, messages: list[str]
) -> None:
    stack = cdk.Stack(cdk.App(), "s", env=cdk.Environment(account=ACCOUNT, region=REGION))
    adopted = Adopted(stack)
    with pytest.raises(ValueError) as raised:
        HyperPodNetwork(
            stack,
            "Network",
            network=NetworkConfig(availability_zone_id=AZ_ID, **config),
            vpc=adopted.vpc if objects else None,
            compute_subnets={AZ_ID: adopted.subnet},
        )
    for message in messages:
        assert message in str(raised.value)


def test_a_network_on_an_ivpc_needs_the_subnet_of_the_main_az() -> None:
    stack = cdk.Stack(cdk.App(), "s", env=cdk.Environment(account=ACCOUNT, region=REGION))
    adopted = Adopted(stack)
    with pytest.raises(ValueError, match="compute_subnets= with the HyperPod subnet of "
                       r"network.availability_zone_id \(usw2-az2\)"):  # fmt: skip
        HyperPodNetwork(
            stack,
            "Network",
            network=NetworkConfig(availability_zone_id=AZ_ID),
            vpc=adopted.vpc,
            compute_subnets={"usw2-az1": adopted.subnet},
        )


def test_a_kubectl_provider_without_its_role_cannot_install_the_chart() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account=ACCOUNT, region=REGION))
    provider = eks_v2.KubectlProvider.from_kubectl_provider_attributes(
        stack, "PlatformKubectl", service_token=SERVICE_TOKEN
    )
    cluster = eks_v2.Cluster.from_cluster_attributes(
        stack, "PlatformEks", cluster_name="ml-shared", kubectl_provider=provider
    )
    eks = AdoptedEksCluster(stack, "Eks", cluster=cluster, kubernetes_version="1.33")
    with pytest.raises(ValueError, match="the kubectl provider of cluster ml-shared has no role"):
        HyperPodDependencies(
            stack, "Dependencies", cluster=eks, region=REGION, enabled=["deep_health_check"]
        )

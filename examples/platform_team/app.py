#!/usr/bin/env python3
"""A platform team's own CDK app, built on the ``hyperpod_cdk`` construct library.

It depends only on the installed library (see README.md beside this file), not on the
repository's app: its own VPC (a plain ``ec2.Vpc``), its own stack names (``platform-ml-*``),
its own lifecycle script, its own aspect, and the library's constructs composed in two stacks:

- ``platform-ml-network``: the platform team's VPC, flow logs encrypted with a library
  :class:`~hyperpod_cdk.LogsKey`, and the library's EFA security group for the nodes;
- ``platform-ml-hyperpod``: data bucket, FSx for Lustre and its data repository association,
  the lifecycle scripts, the node role and a Slurm HyperPod cluster, on the VPC, subnet and
  security group it is given (as ``ec2.IVpc``, ``ec2.ISubnet``, ``ec2.ISecurityGroup``).

The settings are typed config models of the library, validated with its rules before any
construct is made. Run it with ``cdk synth`` (cdk.json: ``python app.py``) or ``python app.py``;
neither needs AWS credentials. The App gets the CDK feature flags the library needs from
``hyperpod_cdk.recommended_context()``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from hyperpod_cdk import (
    ClusterConfig,
    ConfigError,
    DataBucket,
    DataRepositoryAssociation,
    DataRepositoryAssociations,
    EfaSecurityGroup,
    EncryptLogGroups,
    EnvironmentConfig,
    ExecutionRole,
    FsxConfig,
    HyperPodCluster,
    InstanceGroup,
    LifecycleRef,
    LifecycleScripts,
    LogsKey,
    LustreFileSystem,
    NetworkConfig,
    RolePath,
    StorageConfig,
    acknowledge,
    check_environment,
    recommended_context,
    register_compliance_packs,
)

HERE = Path(__file__).resolve().parent
PREFIX = "platform-ml"
ACCOUNT = "111122223333"
REGION = "us-west-2"
# The AZ of the HyperPod nodes and FSx: its name for the VPC, its ID for HyperPod (capacity and
# training plans are per AZ ID). The pair is per account: `aws ec2 describe-availability-zones`.
AZ_NAME = "us-west-2b"
AZ_ID = "usw2-az2"
VPC_CIDR = "10.40.0.0/16"
IAM_PATH = "/platform-ml/"


def platform_environment() -> EnvironmentConfig:
    """The environment, as the library's typed models, checked by the library's rules.

    The ``network`` section only names the AZ ID: the VPC is the platform team's own.

    :raises ConfigError: every problem, each naming its key (``cluster.instance_groups[1]...``).
    """
    environment = EnvironmentConfig(
        name=PREFIX,
        account=ACCOUNT,
        region=REGION,
        tags={"owner": "ml-platform", "cost-center": "cc-4711"},
        compliance_packs=["AwsSolutions"],
        network=NetworkConfig(availability_zone_id=AZ_ID),
        storage=StorageConfig(
            fsx=FsxConfig(
                storage_capacity_gib=1200,
                throughput_per_tib=125,
                mount_path="/fsx",
                data_repository_associations=[
                    DataRepositoryAssociation(
                        file_system_path="/datasets",
                        s3_prefix="datasets/",
                        auto_import=["NEW", "CHANGED", "DELETED"],
                    )
                ],
            )
        ),
        cluster=ClusterConfig(
            name=f"{PREFIX}-train",
            lifecycle_scripts="lifecycle",
            instance_groups=[
                InstanceGroup(
                    name="controller",
                    instance_type="ml.m5.xlarge",
                    count=1,
                    node_type="Controller",
                ),
                InstanceGroup(
                    name="trainers",
                    instance_type="ml.g5.12xlarge",
                    count=2,
                    node_type="Compute",
                    partition="gpu",
                    ebs_volume_gb=200,
                ),
            ],
        ),
    )
    issues = check_environment(environment, HERE)
    if any(issue.severity == "error" for issue in issues):
        raise ConfigError(issues, source="examples/platform_team/app.py")
    for warning in issues:  # advice only, e.g. a setting HyperPod ignores
        print(warning, file=sys.stderr)
    return environment


@jsii.implements(cdk.IAspect)
class RequireVersionedBuckets:
    """The platform team's own rule: every S3 bucket keeps object versions."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, s3.CfnBucket) and node.versioning_configuration is None:
            cdk.Annotations.of(node).add_error("platform policy: S3 buckets must be versioned")


class PlatformNetworkStack(cdk.Stack):
    """The platform team's VPC (one AZ, a /18 private subnet for HyperPod) and the nodes'
    EFA security group."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.logs_key: kms.IKey = LogsKey(self, "LogsKey").key
        flow_log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=logs.RetentionDays.ONE_YEAR,
            encryption_key=self.logs_key,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            availability_zones=[AZ_NAME],
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="edge", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="hyperpod", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=18
                ),
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
            },
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group)
                )
            },
        )
        acknowledge(
            self.vpc,
            "CloudFormation-Validate::W3010",
            "The VPC is pinned to the one AZ whose ID the HyperPod capacity and FSx are planned "
            "in; a literal AZ name is intended here.",
        )
        self.hyperpod_subnet: ec2.ISubnet = self.vpc.private_subnets[0]
        self.efa = EfaSecurityGroup(self, "NodeSecurityGroup", vpc=self.vpc)
        self.node_security_group: ec2.ISecurityGroup = self.efa.security_group

    @property
    def availability_zones(self) -> list[str]:
        """The AZ this stack uses, named here so that synth looks nothing up (no credentials)."""
        return [AZ_NAME]


class PlatformHyperPodStack(cdk.Stack):
    """Storage, lifecycle scripts, node role and the HyperPod cluster, in one stack, on a VPC,
    subnet and security group it is given (created elsewhere in the app, or adopted)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: EnvironmentConfig,
        vpc: ec2.IVpc,
        hyperpod_subnet: ec2.ISubnet,
        node_security_group: ec2.ISecurityGroup,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        fsx = environment.storage.fsx
        cluster = environment.cluster

        data = DataBucket(self, "Data")
        lustre = LustreFileSystem(
            self,
            "Lustre",
            config=fsx,
            subnet=hyperpod_subnet,
            security_groups=[node_security_group],
        )
        DataRepositoryAssociations(
            self,
            "DataRepositories",
            file_system_id=lustre.handle.file_system_id,
            associations=fsx.data_repository_associations,
            data_bucket=data.bucket,
        )
        scripts = LifecycleScripts(
            self,
            "LifecycleScripts",
            directory=HERE / cluster.lifecycle_scripts,
            settings={"cluster_name": environment.cluster_name, "fsx_mount_path": fsx.mount_path},
        )
        role = ExecutionRole(
            self,
            "NodeRole",
            vpc=vpc,
            subnets=[hyperpod_subnet],
            security_groups=[node_security_group],
        )
        role.grant_lifecycle_read(scripts.bucket, scripts.prefix)
        self.cluster = HyperPodCluster(
            self,
            "Cluster",
            config=cluster,
            cluster_name=environment.cluster_name,
            execution_role_arn=role.role.role_arn,
            lifecycle=LifecycleRef(scripts.source_s3_uri, scripts.entry_script),
            subnets={environment.network.availability_zone_id: hyperpod_subnet},
            main_az_id=environment.network.availability_zone_id,
            security_groups=[node_security_group],
            file_system=lustre.handle,
            tags=environment.tags,
            depends_on=[scripts.deployment, role.policy, role.lifecycle_policy],
        )
        cdk.CfnOutput(self, "ClusterArn", value=self.cluster.cluster_arn)
        cdk.CfnOutput(self, "DataBucketName", value=data.bucket.bucket_name)


def build_app(environment: EnvironmentConfig, outdir: str | None = None) -> cdk.App:
    """The App: both stacks, the platform's aspects and tags, and the compliance packs.

    Its context is the library's feature flags, so that ``python app.py`` and ``cdk synth``
    (whose cdk.json names none) synthesize alike; context from the CLI (``-c``) still wins."""
    app = cdk.App(context=recommended_context(), outdir=outdir)
    env = cdk.Environment(account=environment.account, region=environment.region)
    network = PlatformNetworkStack(
        app, f"{PREFIX}-network", env=env, description="ML platform: VPC and node security group"
    )
    hyperpod = PlatformHyperPodStack(
        app,
        f"{PREFIX}-hyperpod",
        env=env,
        description="ML platform: FSx, lifecycle scripts, node role and the HyperPod cluster",
        environment=environment,
        vpc=network.vpc,
        hyperpod_subnet=network.hyperpod_subnet,
        node_security_group=network.node_security_group,
    )
    for stack in (network, hyperpod):
        # every log group (CDK's own functions' too) encrypted with the platform's logs key
        cdk.Aspects.of(stack).add(EncryptLogGroups(network.logs_key))
        cdk.Aspects.of(stack).add(RolePath(IAM_PATH))
        cdk.Aspects.of(stack).add(RequireVersionedBuckets())
    for key, value in environment.tags.items():
        cdk.Tags.of(app).add(key, value)
    # cdk-nag packs and the library's HyperPod pack, once, on the App
    register_compliance_packs(app, environment.compliance_packs)
    return app


def main() -> int:
    try:
        environment = platform_environment()
    except ConfigError as exc:
        for issue in exc.issues:
            print(issue, file=sys.stderr)
        return 2
    build_app(environment).synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())

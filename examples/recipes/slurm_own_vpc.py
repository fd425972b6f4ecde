#!/usr/bin/env python3
"""Recipe: a Slurm HyperPod cluster in your own new ``ec2.Vpc``.

What a VPC of your own needs so that this synthesizes offline and passes the AwsSolutions pack:

- the stack names its AZs (``availability_zones``), so ``cdk synth`` looks nothing up (without
  it the CDK CLI asks AWS for the account's AZs and fails without credentials);
- flow logs (AwsSolutions-VPC7) and the CloudFormation linter's W3010 (a literal AZ name)
  acknowledged on the VPC: the AZ is the one whose ID the HyperPod capacity is planned in;
- the EFA security group of the library for the nodes and the file system.

    cdk synth --app "python slurm_own_vpc.py"      # no AWS credentials needed
    python -m hyperpod_cdk.lifecycle.dry_run compute --assembly cdk.out
"""

import sys
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs

from hyperpod_cdk import (
    ClusterConfig,
    ConfigError,
    EfaSecurityGroup,
    ExecutionRole,
    FsxConfig,
    HyperPodCluster,
    LifecycleRef,
    LifecycleScripts,
    LustreFileSystem,
    acknowledge,
    build_node_settings,
    recommended_context,
    register_compliance_packs,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
# the HyperPod AZ: its name for the VPC, its ID for HyperPod (the pair differs per account:
# aws ec2 describe-availability-zones --query "AvailabilityZones[].[ZoneName,ZoneId]")
AZ_NAME, AZ_ID = "us-west-2b", "usw2-az2"


class HyperPodStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        """Named here, so that synth looks nothing up (no AWS credentials needed)."""
        return [AZ_NAME]


app = cdk.App(context=recommended_context())
stack = HyperPodStack(app, "team-hyperpod", env=cdk.Environment(account=ACCOUNT, region=REGION))
flow_logs = logs.LogGroup(
    stack,
    "FlowLogs",
    retention=logs.RetentionDays.ONE_YEAR,
    removal_policy=cdk.RemovalPolicy.RETAIN,
)
vpc = ec2.Vpc(
    stack,
    "Vpc",
    ip_addresses=ec2.IpAddresses.cidr("10.40.0.0/16"),
    availability_zones=[AZ_NAME],
    nat_gateways=1,
    subnet_configuration=[
        ec2.SubnetConfiguration(name="edge", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
        ec2.SubnetConfiguration(
            name="hyperpod", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=18
        ),
    ],
    gateway_endpoints={
        "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
    },
    flow_logs={
        "All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))
    },
)
acknowledge(
    vpc,
    "CloudFormation-Validate::W3010",
    "The VPC is pinned to the AZ whose ID the HyperPod capacity is planned in.",
)
subnet = vpc.private_subnets[0]
efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
fsx = FsxConfig(storage_capacity_gib=1200, throughput_per_tib=250)
lustre = LustreFileSystem(
    stack, "Lustre", config=fsx, subnet=subnet, security_groups=[efa.security_group],
    depends_on=[efa],
)  # fmt: skip
cluster = ClusterConfig.model_validate(
    {
        "name": "team",
        "instance_groups": [
            {"name": "controller", "instance_type": "ml.m5.xlarge", "count": 1,
             "node_type": "Controller"},
            {"name": "trainers", "instance_type": "ml.g5.12xlarge", "count": 2,
             "partition": "gpu"},
        ]
    }
)  # fmt: skip
try:
    # the subnet's CIDR (10.40.64.0/18) is known at synth: the nodes trust host keys within it
    settings = build_node_settings(
        environment="team",
        region=REGION,
        cluster=cluster,
        availability_zone_id=AZ_ID,
        subnets=[subnet],
        vpc=vpc,
        fsx=fsx,
    )
except ConfigError as exc:
    sys.exit(str(exc))
scripts = LifecycleScripts(stack, "Scripts", settings=settings)
role = ExecutionRole(
    stack, "ExecutionRole", vpc=vpc, subnets=[subnet], security_groups=[efa.security_group]
)
role.grant_lifecycle_read(scripts.bucket, scripts.prefix)
HyperPodCluster(
    stack,
    "Cluster",
    config=cluster,
    cluster_name=settings.config.cluster_name,
    execution_role_arn=role.role.role_arn,
    lifecycle=LifecycleRef(scripts.source_s3_uri, scripts.entry_script),
    subnets={AZ_ID: subnet},
    main_az_id=AZ_ID,
    security_groups=[efa.security_group],
    file_system=lustre.handle,
    depends_on=[scripts.deployment, role.policy, role.lifecycle_policy],
)
register_compliance_packs(app, ["AwsSolutions"])
assembly = app.synth()
settings.write_environment_file(Path(assembly.directory) / "hyperpod-environment.json")

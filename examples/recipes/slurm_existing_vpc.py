#!/usr/bin/env python3
"""Recipe: a Slurm HyperPod cluster in an existing VPC, imported by id (no lookup: synth needs
no AWS credentials).

The subnet is imported without its CIDR here, so the nodes learn their subnet's CIDR from EC2
at boot (the execution role may ec2:DescribeSubnets); give ``ipv4_cidr_block=`` to
``Subnet.from_subnet_attributes`` and the settings carry the CIDR instead. The security group
must allow all traffic from and to itself (EFA).

    cdk synth --app "python slurm_existing_vpc.py"      # no AWS credentials needed
    python -m hyperpod_cdk.lifecycle.dry_run compute --assembly cdk.out
    python -m hyperpod_ops.preflight cdk.out/hyperpod-environment.json   # checks the VPC, subnet
"""

import sys
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from hyperpod_cdk import (
    ClusterConfig,
    ConfigError,
    ExecutionRole,
    FsxConfig,
    HyperPodCluster,
    LifecycleRef,
    LifecycleScripts,
    LustreFileSystem,
    build_node_settings,
    recommended_context,
    register_compliance_packs,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
AZ_NAME, AZ_ID = "us-west-2b", "usw2-az2"
VPC_ID = "vpc-0a1b2c3d4e5f67890"
SUBNET_ID = "subnet-0a1b2c3d4e5f67890"  # private, with a route to the internet or endpoints
ROUTE_TABLE_ID = "rtb-0a1b2c3d4e5f67890"
SECURITY_GROUP_ID = "sg-0a1b2c3d4e5f67890"  # all traffic from and to itself

app = cdk.App(context=recommended_context())
stack = cdk.Stack(app, "shared-hyperpod", env=cdk.Environment(account=ACCOUNT, region=REGION))
vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=VPC_ID, availability_zones=[AZ_NAME])
subnet = ec2.Subnet.from_subnet_attributes(
    stack, "Subnet", subnet_id=SUBNET_ID, availability_zone=AZ_NAME, route_table_id=ROUTE_TABLE_ID
)
nodes = ec2.SecurityGroup.from_security_group_id(stack, "Nodes", SECURITY_GROUP_ID)
fsx = FsxConfig(storage_capacity_gib=1200, throughput_per_tib=125)
lustre = LustreFileSystem(stack, "Lustre", config=fsx, subnet=subnet, security_groups=[nodes])
cluster = ClusterConfig.model_validate(
    {
        "name": "shared",
        "instance_groups": [
            {"name": "controller", "instance_type": "ml.m5.xlarge", "count": 1,
             "node_type": "Controller"},
            {"name": "login", "instance_type": "ml.m5.xlarge", "count": 1, "node_type": "Login"},
            {"name": "cpu", "instance_type": "ml.c5.4xlarge", "count": 4},
        ]
    }
)  # fmt: skip
try:
    settings = build_node_settings(
        environment="shared",
        region=REGION,
        account=ACCOUNT,
        cluster=cluster,
        availability_zone_id=AZ_ID,
        subnets=[subnet],
        vpc=vpc,
        security_groups=[nodes],
        fsx=fsx,
    )
except ConfigError as exc:
    sys.exit(str(exc))
scripts = LifecycleScripts(stack, "Scripts", settings=settings)
role = ExecutionRole(stack, "ExecutionRole", vpc=vpc, subnets=[subnet], security_groups=[nodes])
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
    security_groups=[nodes],
    file_system=lustre.handle,
    depends_on=[scripts.deployment, role.policy, role.lifecycle_policy],
)
register_compliance_packs(app, ["AwsSolutions"])
assembly = app.synth()
settings.write_environment_file(Path(assembly.directory) / "hyperpod-environment.json")

#!/usr/bin/env python3
"""Recipe: a Slurm HyperPod cluster in the library's own network (HyperPodNetwork: a new VPC
with its HyperPod subnet, NAT, S3 endpoint, flow logs and the EFA security group).

    cdk synth --app "python slurm_library_network.py"      # no AWS credentials needed
    python -m hyperpod_cdk.lifecycle.dry_run compute --assembly cdk.out
    python -m hyperpod_ops.status cdk.out/hyperpod-environment.json   # after the deploy
"""

import sys
from pathlib import Path

import aws_cdk as cdk

from hyperpod_cdk import (
    ClusterConfig,
    ConfigError,
    ExecutionRole,
    FsxConfig,
    HyperPodCluster,
    HyperPodNetwork,
    LifecycleRef,
    LifecycleScripts,
    LustreFileSystem,
    NetworkConfig,
    build_node_settings,
    recommended_context,
    register_compliance_packs,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
AZ_ID = "usw2-az2"  # the HyperPod AZ, by ID (aws ec2 describe-availability-zones)

app = cdk.App(context=recommended_context())
stack = cdk.Stack(app, "research-hyperpod", env=cdk.Environment(account=ACCOUNT, region=REGION))
network = HyperPodNetwork(stack, "Network", network=NetworkConfig(availability_zone_id=AZ_ID))
fsx = FsxConfig(storage_capacity_gib=1200, throughput_per_tib=250)
lustre = LustreFileSystem(
    stack,
    "Lustre",
    config=fsx,
    subnet=network.compute_subnet,
    security_groups=[network.efa.security_group],
    depends_on=[network.efa],
)
cluster = ClusterConfig.model_validate(
    {
        "name": "research",
        "instance_groups": [
            {"name": "controller", "instance_type": "ml.m5.2xlarge", "count": 1,
             "node_type": "Controller"},
            {"name": "login", "instance_type": "ml.m5.4xlarge", "count": 1, "node_type": "Login"},
            {"name": "gpu", "instance_type": "ml.p5.48xlarge", "count": 2, "threads_per_core": 1},
        ]
    }
)  # fmt: skip
try:
    # what the packaged lifecycle scripts read on each node, from the same objects
    settings = build_node_settings(
        environment="research",
        region=REGION,
        cluster=cluster,
        availability_zone_id=AZ_ID,
        subnets=network.compute_subnets,
        fsx=fsx,
    )
except ConfigError as exc:
    sys.exit(str(exc))  # one "config error: <key>: ..." line per problem
scripts = LifecycleScripts(stack, "Scripts", settings=settings)
role = ExecutionRole(
    stack,
    "ExecutionRole",
    vpc=network.vpc,
    subnets=[network.compute_subnet],
    security_groups=network.node_security_groups,
)
role.grant_lifecycle_read(scripts.bucket, scripts.prefix)
HyperPodCluster(
    stack,
    "Cluster",
    config=cluster,
    cluster_name=settings.config.cluster_name,
    execution_role_arn=role.role.role_arn,
    lifecycle=LifecycleRef(scripts.source_s3_uri, scripts.entry_script),
    subnets=network.compute_subnets,
    main_az_id=AZ_ID,
    security_groups=network.node_security_groups,
    file_system=lustre.handle,
    depends_on=[scripts.deployment, role.policy, role.lifecycle_policy],
)
register_compliance_packs(app, ["AwsSolutions"])
assembly = app.synth()
# the environment as the operational commands read it (status, preflight, verify, sync-users)
settings.write_environment_file(Path(assembly.directory) / "hyperpod-environment.json")

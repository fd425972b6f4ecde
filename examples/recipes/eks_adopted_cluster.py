#!/usr/bin/env python3
"""Recipe: a HyperPod cluster on an EKS cluster you have already (adopted by ARN), in its
existing VPC imported by id (no lookup: synth needs no AWS credentials).

``AdoptedEksCluster`` builds a kubectl handler in the given subnet (and gives it a cluster-admin
access entry) to install the HyperPod dependencies chart; the HyperPod cluster then joins the
EKS cluster. The EKS cluster's authentication mode must allow access entries (API or
API_AND_CONFIG_MAP); preflight checks it. Needs the library's ``eks`` extra.

    cdk synth --app "python eks_adopted_cluster.py"      # no AWS credentials needed
    python -m hyperpod_cdk.lifecycle.dry_run eks --assembly cdk.out
    python -m hyperpod_ops.preflight cdk.out/hyperpod-environment.json
"""

import sys
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from hyperpod_cdk import (
    AdoptedEksCluster,
    ClusterConfig,
    ConfigError,
    EksConfig,
    EksDependencies,
    ExecutionRole,
    HyperPodCluster,
    HyperPodDependencies,
    LifecycleRef,
    LifecycleScripts,
    build_node_settings,
    recommended_context,
    register_compliance_packs,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
EKS_CLUSTER_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/platform-eks"
AZ_NAME, AZ_ID = "us-west-2b", "usw2-az2"
VPC_ID = "vpc-0a1b2c3d4e5f67890"
SUBNET_ID = "subnet-0a1b2c3d4e5f67890"  # the HyperPod nodes' (and the kubectl handler's) subnet
ROUTE_TABLE_ID = "rtb-0a1b2c3d4e5f67890"
SECURITY_GROUP_ID = "sg-0a1b2c3d4e5f67890"  # all traffic from and to itself; reaches the API

app = cdk.App(context=recommended_context())
stack = cdk.Stack(app, "ml-eks-adopted", env=cdk.Environment(account=ACCOUNT, region=REGION))
vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=VPC_ID, availability_zones=[AZ_NAME])
subnet = ec2.Subnet.from_subnet_attributes(
    stack, "Subnet", subnet_id=SUBNET_ID, availability_zone=AZ_NAME, route_table_id=ROUTE_TABLE_ID
)
nodes = ec2.SecurityGroup.from_security_group_id(stack, "Nodes", SECURITY_GROUP_ID)
eks_cluster = AdoptedEksCluster(
    stack,
    "Eks",
    cluster_arn=EKS_CLUSTER_ARN,
    vpc=vpc,
    kubectl_subnets=[subnet],
    kubectl_security_groups=[nodes],
    kubernetes_version="1.35",
)
# what the app installs on the cluster (a shared cluster's owner may run some already)
wanted = EksDependencies(
    health_monitoring_agent=True, deep_health_check=True, job_auto_restart=True, patching=True,
    training_operator=True, mpi_operator=True, nvidia_device_plugin=True,
    neuron_device_plugin=False, efa_device_plugin=True, scientist_rbac=True,
)  # fmt: skip
dependencies = HyperPodDependencies(
    stack, "Dependencies", cluster=eks_cluster, region=REGION, enabled=wanted.enabled()
)
cluster = ClusterConfig.model_validate(
    {
        "name": "ml-eks-adopted",
        "instance_groups": [
            {"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2},
        ]
    }
)  # fmt: skip
try:
    settings = build_node_settings(
        environment="ml-eks-adopted",
        region=REGION,
        account=ACCOUNT,
        orchestrator="eks",
        cluster=cluster,
        availability_zone_id=AZ_ID,
        subnets=[subnet],
        vpc=vpc,
        security_groups=[nodes],
        eks=EksConfig(cluster_arn=EKS_CLUSTER_ARN, kubernetes_version="1.35", dependencies=wanted),
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
    eks_cluster_arn=eks_cluster.cluster_arn,
    depends_on=[scripts.deployment, role.policy, role.lifecycle_policy, dependencies],
)
register_compliance_packs(app, ["AwsSolutions"])
assembly = app.synth()
settings.write_environment_file(Path(assembly.directory) / "hyperpod-environment.json")

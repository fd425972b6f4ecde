#!/usr/bin/env python3
"""Recipe: a HyperPod cluster orchestrated by a new EKS cluster, in your own new ``ec2.Vpc``.

The order: the EKS cluster (``HyperPodEksCluster``: control plane in two AZs, its kubectl
handler and early add-ons), the HyperPod dependencies on it (``HyperPodDependencies``: the
Helm chart HyperPod needs), then the HyperPod cluster with ``eks_cluster_arn`` and a
dependency on both. Needs the library's ``eks`` extra (the kubectl Lambda layers).
The add-ons that need running nodes (``HyperPodEksAddons``: CoreDNS replicas, the FSx CSI
driver, observability, after ``HyperPodNodeWait``) come after the HyperPod cluster; the app of
this repository shows them (stacks/eks.py).

    cdk synth --app "python eks_new_cluster.py"      # no AWS credentials needed
    python -m hyperpod_cdk.lifecycle.dry_run eks --assembly cdk.out
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
    EksDependencies,
    ExecutionRole,
    HyperPodCluster,
    HyperPodDependencies,
    HyperPodEksCluster,
    LifecycleRef,
    LifecycleScripts,
    acknowledge,
    build_node_settings,
    recommended_context,
    register_compliance_packs,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
# name -> ID of the two AZs (the EKS control plane needs two; HyperPod runs in the first)
AZS = {"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2"}
HYPERPOD_AZ_NAME, HYPERPOD_AZ_ID = "us-west-2b", "usw2-az2"


class EksHyperPodStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        """Named here, so that synth looks nothing up (no AWS credentials needed)."""
        return list(AZS)


app = cdk.App(context=recommended_context())
stack = EksHyperPodStack(app, "ml-eks", env=cdk.Environment(account=ACCOUNT, region=REGION))
flow_logs = logs.LogGroup(
    stack,
    "FlowLogs",
    retention=logs.RetentionDays.ONE_YEAR,
    removal_policy=cdk.RemovalPolicy.RETAIN,
)
vpc = ec2.Vpc(
    stack,
    "Vpc",
    ip_addresses=ec2.IpAddresses.cidr("10.50.0.0/16"),
    availability_zones=list(AZS),
    nat_gateways=1,
    subnet_configuration=[
        ec2.SubnetConfiguration(name="edge", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
        ec2.SubnetConfiguration(
            name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=18
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
    "The VPC is pinned to the AZs whose IDs the EKS control plane and HyperPod capacity use.",
)
hyperpod_subnet = next(s for s in vpc.private_subnets if s.availability_zone == HYPERPOD_AZ_NAME)
efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
eks_cluster = HyperPodEksCluster(
    stack, "Eks", vpc=vpc, subnets=vpc.private_subnets, kubernetes_version="1.35"
)
dependencies = HyperPodDependencies(
    stack, "Dependencies", cluster=eks_cluster, region=REGION, enabled=EksDependencies().enabled()
)
cluster = ClusterConfig.model_validate(
    {
        "name": "ml-eks",
        "instance_groups": [
            {"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2, "ebs_volume_gb": 500},
        ]
    }
)  # fmt: skip
try:
    settings = build_node_settings(
        environment="ml-eks",
        region=REGION,
        orchestrator="eks",
        cluster=cluster,
        availability_zone_id=HYPERPOD_AZ_ID,
        eks_availability_zone_ids=list(AZS.values()),
        subnets=[hyperpod_subnet],
    )
except ConfigError as exc:
    sys.exit(str(exc))
scripts = LifecycleScripts(stack, "Scripts", settings=settings)
role = ExecutionRole(
    stack, "ExecutionRole", vpc=vpc, subnets=[hyperpod_subnet], security_groups=[efa.security_group]
)
role.grant_lifecycle_read(scripts.bucket, scripts.prefix)
HyperPodCluster(
    stack,
    "Cluster",
    config=cluster,
    cluster_name=settings.config.cluster_name,
    execution_role_arn=role.role.role_arn,
    lifecycle=LifecycleRef(scripts.source_s3_uri, scripts.entry_script),
    subnets={HYPERPOD_AZ_ID: hyperpod_subnet},
    main_az_id=HYPERPOD_AZ_ID,
    security_groups=[efa.security_group],
    eks_cluster_arn=eks_cluster.cluster_arn,
    depends_on=[scripts.deployment, role.policy, role.lifecycle_policy, dependencies],
)
register_compliance_packs(app, ["AwsSolutions"])
assembly = app.synth()
settings.write_environment_file(Path(assembly.directory) / "hyperpod-environment.json")

import aws_cdk as cdk

from hyperpod_cdk import (
    ClusterConfig,
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

# the CDK feature flags the constructs need (your cdk.json may set them instead)
app = cdk.App(context=recommended_context())
env = cdk.Environment(account="111122223333", region="us-west-2")
stack = cdk.Stack(app, "research-hyperpod", env=env)

# A new VPC: /16 HyperPod subnet in AZ ID usw2-az2, NAT, S3 endpoint, flow logs, EFA group
network = HyperPodNetwork(stack, "Network", network=NetworkConfig(availability_zone_id="usw2-az2"))
fsx = FsxConfig(storage_capacity_gib=2400, throughput_per_tib=500)
lustre = LustreFileSystem(
    stack,
    "Lustre",
    config=fsx,
    subnet=network.compute_subnet,
    security_groups=[network.efa.security_group],
    depends_on=[network.efa],  # the EFA/Lustre rules exist before the file system
)
cluster = ClusterConfig.model_validate(
    {
        "instance_groups": [
            {
                "name": "controller",
                "instance_type": "ml.m5.2xlarge",
                "count": 1,
                "node_type": "Controller",
            },
            {
                "name": "gpu",
                "instance_type": "ml.p5.48xlarge",
                "count": 2,
                "threads_per_core": 1,
            },
        ]
    }
)
# what the library's lifecycle scripts read on each node, from the same objects: each group's
# Slurm role, the cluster's subnets (SSH between nodes), the file system (checked as a config is)
settings = build_node_settings(
    environment="research",
    region="us-west-2",
    cluster=cluster,
    availability_zone_id="usw2-az2",
    subnets=network.compute_subnets,
    fsx=fsx,
)
scripts = LifecycleScripts(stack, "Scripts", settings=settings)  # directory= for your own
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
    cluster_name="research",
    execution_role_arn=role.role.role_arn,
    lifecycle=LifecycleRef(scripts.source_s3_uri, scripts.entry_script),
    subnets=network.compute_subnets,
    main_az_id="usw2-az2",
    security_groups=network.node_security_groups,
    file_system=lustre.handle,  # HyperPod mounts it (InstanceStorageConfigs)
    depends_on=[scripts.deployment, role.policy, role.lifecycle_policy],
)
register_compliance_packs(app, ["AwsSolutions"])  # cdk-nag 3, once, on the App
app.synth()

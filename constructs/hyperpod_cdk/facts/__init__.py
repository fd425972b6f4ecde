"""Facts about AWS, one table per topic, each with its source and the date it was read.

The lowest layer of the library: the config validation, the constructs and the operational tools
(``hyperpod_ops``) read these tables, and nothing here imports any other part of ``hyperpod_cdk``
or the CDK (tests/library/test_import_layers.py holds that). This module holds the service
limits and allowed values (HyperPod, FSx, EC2 instance facts, regions and AZ IDs, Grafana, the
exporters' registries); the submodules hold the rest:

- :mod:`hyperpod_cdk.facts.versions`: the pinned EKS add-on versions per Kubernetes version;
- :mod:`hyperpod_cdk.facts.addon_values`: the add-ons' ``ConfigurationValues``;
- :mod:`hyperpod_cdk.facts.chart`: the dependency chart's values (instance-type lists, images
  and their regions), read from ``eks/charts/hyperpod-cdk-dependencies/values.yaml``;
- :mod:`hyperpod_cdk.facts.task_governance_types`: where CloudFormation has the task
  governance types.

Each constant names the AWS document it comes from, so a reviewer can check it and a maintainer
knows where to look when the service changes.
"""

from __future__ import annotations

import difflib
import re

# AWS::SageMaker::Cluster resource schema (CloudFormation template reference).
MAX_INSTANCE_GROUPS = 100
MAX_INSTANCE_COUNT = 6758
INSTANCE_GROUP_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"
INSTANCE_GROUP_NAME_MAX = 63
CLUSTER_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
MAX_EBS_GB = 16384
MAX_SECURITY_GROUPS = 5
MAX_SUBNETS = 16
DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity")
# API reference ClusterInstanceRequirements: 1..20 instance types per flexible group.
MAX_FLEXIBLE_INSTANCE_TYPES = 20
# API reference ClusterInstanceGroupSpecification: an ml.* instance type.
INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"

# FSx for Lustre user guide, "Lustre file system deployment options" and
# "Managing storage capacity": PERSISTENT_2 SSD capacity is 1200, 2400 or a
# multiple of 2400 GiB.
FSX_PERSISTENT_2_CAPACITY_STEP = 2400
FSX_PERSISTENT_2_SMALL_CAPACITIES = (1200, 2400)
FSX_MAX_CAPACITY_GIB = 2_400 * 2_000  # the API's upper bound for SSD file systems
FSX_THROUGHPUTS = (125, 250, 500, 1000)
# FSx guide "efa-file-systems": capacity multiples of an EFA-enabled file system.
FSX_EFA_CAPACITY_MULTIPLE = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}
# FSx guide "Managing metadata performance": USER_PROVISIONED metadata IOPS.
FSX_METADATA_IOPS_SMALL = (1500, 3000, 6000, 12000)
FSX_METADATA_IOPS_STEP = 12000
FSX_METADATA_IOPS_MAX = 192000
FSX_LUSTRE_VERSIONS = ("2.12", "2.15")
# FSx backups: AutomaticBackupRetentionDays 0..90.
FSX_MAX_BACKUP_RETENTION_DAYS = 90

# FSx API reference CreateFileSystemOpenZFSConfiguration (DeploymentType, ThroughputCapacity) and
# CreateFileSystem (StorageCapacity): FSx for OpenZFS throughput in MB/s per deployment type; the
# first generation (64 - 4,096 MB/s) and the second (160 - 10,240 MB/s, NVMe read cache).
OPENZFS_THROUGHPUTS_GEN1 = (64, 128, 256, 512, 1024, 2048, 3072, 4096)
OPENZFS_THROUGHPUTS_GEN2 = (160, 320, 640, 1280, 2560, 3840, 5120, 7680, 10240)
OPENZFS_THROUGHPUTS = {
    "SINGLE_AZ_1": OPENZFS_THROUGHPUTS_GEN1,
    "SINGLE_AZ_HA_1": OPENZFS_THROUGHPUTS_GEN1,
    "SINGLE_AZ_2": OPENZFS_THROUGHPUTS_GEN2,
    "SINGLE_AZ_HA_2": OPENZFS_THROUGHPUTS_GEN2,
    "MULTI_AZ_1": OPENZFS_THROUGHPUTS_GEN2,
}
OPENZFS_MIN_CAPACITY_GIB = 64
OPENZFS_MAX_CAPACITY_GIB = 524_288
# OpenZFSNfsExport: at most 25 client configurations per export.
OPENZFS_MAX_NFS_CLIENTS = 25

# FSx guide "efa-file-systems": EFA clients are Nitro v4+ instances, except trn2.
FSX_EFA_UNSUPPORTED_FAMILIES = ("trn2", "trn2u")

# Mounting FSx over these would hide the node's own files; /opt/sagemaker holds
# the instance group's EBS volume (ClusterEbsVolumeConfig).
RESERVED_MOUNT_PATHS = (
    "/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/opt/sagemaker", "/proc",
    "/root", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var",
)  # fmt: skip

# AWS::FSx::DataRepositoryAssociation: at most 8 per file system.
MAX_DATA_REPOSITORY_ASSOCIATIONS = 8
DRA_EVENTS = ("NEW", "CHANGED", "DELETED")

# Slurm partition names as the HyperPod API takes them (ClusterSlurmConfig.PartitionNames
# items: [a-zA-Z0-9](-*[a-zA-Z0-9])*, the same as a group name; AWS::SageMaker::Cluster schema
# of cfn-lint 1.58): letters and digits, single or repeated '-' inside, no '_' and no leading
# or trailing '-'. Kept to 64 characters. HyperPod adds a built-in "dev" partition that every
# node joins.
# (the same language as the API's pattern, spelled apart from INSTANCE_GROUP_NAME_PATTERN: the
# config loader finds a pattern's hint by its text)
PARTITION_NAME_PATTERN = r"^[a-zA-Z0-9]+(-+[a-zA-Z0-9]+)*$"
PARTITION_NAME_MAX = 64
RESERVED_PARTITIONS = ("dev",)

# Instance families that deep health checks cover (HyperPod EKS "deep health
# checks": GPU and Trainium instances only).
ACCELERATED_FAMILY_PREFIXES = ("p", "g", "trn")

# Interface VPC endpoints the app knows how to create. An unknown service name
# only fails at deploy time ("service not found"), so it is rejected here.
INTERFACE_ENDPOINT_SERVICES = (
    "autoscaling",
    "aps-workspaces",
    "cloudformation",
    "ec2",
    "ec2messages",
    "ecr.api",
    "ecr.dkr",
    "eks",
    "eks-auth",
    "elasticloadbalancing",
    "fsx",
    "grafana",
    "grafana-workspace",
    "kms",
    "lambda",
    "logs",
    "monitoring",
    "sagemaker.api",
    "sagemaker.runtime",
    "secretsmanager",
    "ssm",
    "ssmmessages",
    "sts",
)

# What a node in a closed network (no NAT, no internet gateway) needs to reach
# the AWS services HyperPod and the lifecycle scripts use. S3 is a gateway
# endpoint, always created.
CLOSED_NETWORK_ENDPOINTS = (
    "ec2",
    "ec2messages",
    "ecr.api",
    "ecr.dkr",
    "logs",
    "monitoring",
    "sagemaker.api",
    "ssm",
    "ssmmessages",
    "sts",
)

# What an EKS-orchestrated closed network needs on top: the EKS API (kubectl
# handler, nodes) and EKS Pod Identity (EKS user guide "Deploy private clusters
# with limited internet access"), and Lambda: the kubectl/Helm handler and the
# node wait run in the VPC, and CDK's custom-resource framework function there
# invokes them through the Lambda API (lambda:InvokeFunction; aws-cdk-lib custom_resources
# Provider, read 2026-11-23).
EKS_CLOSED_NETWORK_ENDPOINTS = ("eks", "eks-auth", "lambda")
# ... and where a secret is read from the VPC: the accounting database's (slurmdbd on the
# controller) and the directory's bind password and CA certificate (the nodes, at boot).
SECRETS_ENDPOINT = "secretsmanager"


# ... with metrics on (observability.enabled or grafana): remote write to Amazon Managed
# Prometheus from the nodes ("aps-workspaces", AMP user guide "Using Amazon Managed Service for
# Prometheus with interface VPC endpoints"); with Grafana: the handler that installs the data
# source and dashboards runs in the VPC and calls the Grafana API ("grafana") and the workspace's
# HTTP API ("grafana-workspace"): Amazon Managed Grafana user guide "Interface VPC endpoints",
# com.amazonaws.<region>.grafana and com.amazonaws.<region>.grafana-workspace (read 2026-11-25).
METRICS_ENDPOINTS = ("aps-workspaces",)
GRAFANA_ENDPOINTS = ("grafana", "grafana-workspace")


def closed_network_endpoints(
    *, eks: bool, reads_secrets: bool, observability: object | None = None
) -> tuple[str, ...]:
    """The interface endpoints a closed network gets for an environment.

    :param observability: the effective ``observability`` section when metrics are on
        (``config.observability.observability_settings``), None when they are off; its
        ``grafana`` field adds the Grafana endpoints.
    """
    metrics = observability is not None
    grafana = metrics and bool(getattr(observability, "grafana", False))
    return (
        *CLOSED_NETWORK_ENDPOINTS,
        *(EKS_CLOSED_NETWORK_ENDPOINTS if eks else ()),
        *((SECRETS_ENDPOINT,) if reads_secrets else ()),
        *(METRICS_ENDPOINTS if metrics else ()),
        *(GRAFANA_ENDPOINTS if grafana else ()),
    )


# VPC user guide "Subnet CIDR blocks": the first four and the last address are reserved.
SUBNET_RESERVED_ADDRESSES = 5

AZ_ID_PATTERN = r"^[a-z]{2,8}[0-9]+-az[0-9]+$"
REGION_PATTERN = r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$"
ACCOUNT_PATTERN = r"^[0-9]{12}$"

# The regions of the commercial (aws), GovCloud (aws-us-gov) and China (aws-cn) partitions:
# botocore 1.44.5 (the pinned version, constraints.txt) data/endpoints.json, "partitions" ->
# "regions", read 2026-11-25. The ISO and sovereign partitions are left out (no HyperPod there).
# A region launched later is added here (and to AZ_ID_PREFIXES); until then it is refused, as a
# typo like us-east-9 would otherwise only fail at deploy time.
REGIONS_AS_OF = "botocore 1.44.5, 2026-11-25"
REGIONS = (
    # aws
    "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
    "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3",
    "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "ca-central-1",
    "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
    "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1",
    "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    # aws-us-gov
    "us-gov-east-1", "us-gov-west-1",
    # aws-cn
    "cn-north-1", "cn-northwest-1",
)  # fmt: skip

# Regions with Amazon Managed Grafana (observability.grafana): botocore 1.44.5 (pinned)
# data/endpoints.json, service "grafana", read 2026-11-25; the same ten commercial regions and
# the two GovCloud regions as the "Amazon Managed Grafana endpoints and quotas" page of the AWS
# General Reference (2026). Grafana is in fewer regions than HyperPod; a test holds this table to
# botocore's data.
GRAFANA_REGIONS = (
    "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-2", "eu-central-1",
    "eu-west-1", "eu-west-2", "us-east-1", "us-east-2", "us-west-2",
    "us-gov-east-1", "us-gov-west-1",
)  # fmt: skip

# The Grafana version of the workspace (observability.grafana), pinned: Amazon Managed Grafana
# user guide, "Working in Grafana version 10" (read 2026-11-25; 9, 12 and 13 are offered too);
# workspace service accounts need 9 or later; the dashboards are written for schemaVersion 39.
# `make preflight` checks that ListVersions still offers it.
GRAFANA_VERSION = "10.4"

# The prefix of each region's AZ IDs (usw2 in usw2-az2): the AZ ID column of "AWS Availability
# Zones" in the AWS Regions and Availability Zones guide
# (docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html, read
# 2026-11-25) for the commercial regions; the GovCloud and China AZ IDs as
# `aws ec2 describe-availability-zones` reports them there (usgw1-az1, cnnw1-az1, ...).
AZ_ID_PREFIXES = {
    "af-south-1": "afs1", "ap-east-1": "ape1", "ap-east-2": "ape2", "ap-northeast-1": "apne1",
    "ap-northeast-2": "apne2", "ap-northeast-3": "apne3", "ap-south-1": "aps1",
    "ap-south-2": "aps2", "ap-southeast-1": "apse1", "ap-southeast-2": "apse2",
    "ap-southeast-3": "apse3", "ap-southeast-4": "apse4", "ap-southeast-5": "apse5",
    "ap-southeast-6": "apse6", "ap-southeast-7": "apse7", "ca-central-1": "cac1",
    "ca-west-1": "caw1", "eu-central-1": "euc1", "eu-central-2": "euc2", "eu-north-1": "eun1",
    "eu-south-1": "eus1", "eu-south-2": "eus2", "eu-west-1": "euw1", "eu-west-2": "euw2",
    "eu-west-3": "euw3", "il-central-1": "ilc1", "me-central-1": "mec1", "me-south-1": "mes1",
    "mx-central-1": "mxc1", "sa-east-1": "sae1", "us-east-1": "use1", "us-east-2": "use2",
    "us-west-1": "usw1", "us-west-2": "usw2",
    "us-gov-east-1": "usge1", "us-gov-west-1": "usgw1",
    "cn-north-1": "cnn1", "cn-northwest-1": "cnnw1",
}  # fmt: skip


def close_region(region: str) -> str | None:
    """The known region ``region`` is most likely a typo of (difflib), or None."""
    guess = difflib.get_close_matches(region.strip().lower(), REGIONS, n=1)
    return guess[0] if guess else None


def az_id_prefix(region: str) -> str | None:
    """The prefix of the AZ IDs of a known region: ``us-west-2`` -> ``usw2``; None for a region
    :data:`AZ_ID_PREFIXES` does not know."""
    return AZ_ID_PREFIXES.get(region)


def az_id_example(region: str) -> str | None:
    """An AZ ID of a known region, for messages: ``use1-az1`` (every region has an az1)."""
    prefix = az_id_prefix(region)
    return f"{prefix}-az1" if prefix else None


def az_mapping_command(region: str) -> str:
    """The command that lists the AZ names of ``region`` with their AZ IDs, as the caller's
    account maps them (AZ names map to different AZs in each account, AZ IDs do not)."""
    return (
        f"aws ec2 describe-availability-zones --region {region} "
        '--query "AvailabilityZones[].[ZoneName,ZoneId]" --output text'
    )


def az_name_region(value: str) -> str | None:
    """The region of an AZ *name* (``us-east-1a`` -> ``us-east-1``), or None when ``value`` does
    not look like one."""
    match = re.fullmatch(r"([a-z]{2}(?:-gov)?-[a-z]+-[0-9]+)[a-z]", value)
    return match.group(1) if match else None


# The instance types HyperPod offers: botocore 1.44.5 (the pinned version, constraints.txt)
# data/sagemaker/2017-07-24/service-2.json, shape ClusterInstanceType (the enum of the API's
# ClusterInstanceGroupSpecification.InstanceType), read 2026-11-25; by family, small to large.
HYPERPOD_INSTANCE_TYPES = frozenset((
    "ml.c5.large", "ml.c5.xlarge", "ml.c5.2xlarge", "ml.c5.4xlarge", "ml.c5.9xlarge",
    "ml.c5.12xlarge", "ml.c5.18xlarge", "ml.c5.24xlarge",
    "ml.c5n.large", "ml.c5n.2xlarge", "ml.c5n.4xlarge", "ml.c5n.9xlarge", "ml.c5n.18xlarge",
    "ml.c6a.large", "ml.c6a.xlarge", "ml.c6a.2xlarge", "ml.c6a.4xlarge", "ml.c6a.8xlarge",
    "ml.c6a.12xlarge", "ml.c6a.16xlarge", "ml.c6a.24xlarge", "ml.c6a.32xlarge", "ml.c6a.48xlarge",
    "ml.c6g.medium", "ml.c6g.large", "ml.c6g.xlarge", "ml.c6g.2xlarge", "ml.c6g.4xlarge",
    "ml.c6g.8xlarge", "ml.c6g.12xlarge", "ml.c6g.16xlarge",
    "ml.c6i.large", "ml.c6i.xlarge", "ml.c6i.2xlarge", "ml.c6i.4xlarge", "ml.c6i.8xlarge",
    "ml.c6i.12xlarge", "ml.c6i.16xlarge", "ml.c6i.24xlarge", "ml.c6i.32xlarge",
    "ml.c7g.medium", "ml.c7g.large", "ml.c7g.xlarge", "ml.c7g.2xlarge", "ml.c7g.4xlarge",
    "ml.c7g.8xlarge", "ml.c7g.12xlarge", "ml.c7g.16xlarge",
    "ml.c8a.16xlarge",
    "ml.c8g.medium", "ml.c8g.large", "ml.c8g.xlarge", "ml.c8g.2xlarge", "ml.c8g.4xlarge",
    "ml.c8g.8xlarge", "ml.c8g.12xlarge", "ml.c8g.16xlarge", "ml.c8g.24xlarge", "ml.c8g.48xlarge",
    "ml.g4dn.xlarge", "ml.g4dn.2xlarge", "ml.g4dn.4xlarge", "ml.g4dn.8xlarge", "ml.g4dn.12xlarge",
    "ml.g4dn.16xlarge",
    "ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.4xlarge", "ml.g5.8xlarge", "ml.g5.12xlarge",
    "ml.g5.16xlarge", "ml.g5.24xlarge", "ml.g5.48xlarge",
    "ml.g6.xlarge", "ml.g6.2xlarge", "ml.g6.4xlarge", "ml.g6.8xlarge", "ml.g6.12xlarge",
    "ml.g6.16xlarge", "ml.g6.24xlarge", "ml.g6.48xlarge",
    "ml.g6e.xlarge", "ml.g6e.2xlarge", "ml.g6e.4xlarge", "ml.g6e.8xlarge", "ml.g6e.12xlarge",
    "ml.g6e.16xlarge", "ml.g6e.24xlarge", "ml.g6e.48xlarge",
    "ml.g7.2xlarge", "ml.g7.4xlarge", "ml.g7.8xlarge", "ml.g7.12xlarge", "ml.g7.24xlarge",
    "ml.g7.48xlarge",
    "ml.g7e.2xlarge", "ml.g7e.4xlarge", "ml.g7e.8xlarge", "ml.g7e.12xlarge", "ml.g7e.24xlarge",
    "ml.g7e.48xlarge",
    "ml.gr6.4xlarge", "ml.gr6.8xlarge",
    "ml.i3en.large", "ml.i3en.xlarge", "ml.i3en.2xlarge", "ml.i3en.3xlarge", "ml.i3en.6xlarge",
    "ml.i3en.12xlarge", "ml.i3en.24xlarge",
    "ml.m5.large", "ml.m5.xlarge", "ml.m5.2xlarge", "ml.m5.4xlarge", "ml.m5.8xlarge",
    "ml.m5.12xlarge", "ml.m5.16xlarge", "ml.m5.24xlarge",
    "ml.m6a.large", "ml.m6a.xlarge", "ml.m6a.2xlarge", "ml.m6a.4xlarge", "ml.m6a.8xlarge",
    "ml.m6a.12xlarge", "ml.m6a.16xlarge", "ml.m6a.24xlarge", "ml.m6a.32xlarge", "ml.m6a.48xlarge",
    "ml.m6g.medium", "ml.m6g.large", "ml.m6g.xlarge", "ml.m6g.2xlarge", "ml.m6g.4xlarge",
    "ml.m6g.8xlarge", "ml.m6g.12xlarge", "ml.m6g.16xlarge",
    "ml.m6i.large", "ml.m6i.xlarge", "ml.m6i.2xlarge", "ml.m6i.4xlarge", "ml.m6i.8xlarge",
    "ml.m6i.12xlarge", "ml.m6i.16xlarge", "ml.m6i.24xlarge", "ml.m6i.32xlarge",
    "ml.m7g.medium", "ml.m7g.large", "ml.m7g.xlarge", "ml.m7g.2xlarge", "ml.m7g.4xlarge",
    "ml.m7g.8xlarge", "ml.m7g.12xlarge", "ml.m7g.16xlarge",
    "ml.m7i.large", "ml.m7i.xlarge", "ml.m7i.2xlarge", "ml.m7i.4xlarge", "ml.m7i.8xlarge",
    "ml.m7i.12xlarge", "ml.m7i.16xlarge", "ml.m7i.24xlarge", "ml.m7i.48xlarge",
    "ml.m8a.16xlarge",
    "ml.m8g.medium", "ml.m8g.large", "ml.m8g.xlarge", "ml.m8g.2xlarge", "ml.m8g.4xlarge",
    "ml.m8g.8xlarge", "ml.m8g.12xlarge", "ml.m8g.16xlarge", "ml.m8g.24xlarge", "ml.m8g.48xlarge",
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.4xlarge", "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge",
    "ml.p6-b300.48xlarge",
    "ml.p6e-gb200.36xlarge",
    "ml.r5d.16xlarge",
    "ml.r6i.large", "ml.r6i.xlarge", "ml.r6i.2xlarge", "ml.r6i.4xlarge", "ml.r6i.8xlarge",
    "ml.r6i.12xlarge", "ml.r6i.16xlarge", "ml.r6i.24xlarge", "ml.r6i.32xlarge",
    "ml.r7i.large", "ml.r7i.xlarge", "ml.r7i.2xlarge", "ml.r7i.4xlarge", "ml.r7i.8xlarge",
    "ml.r7i.12xlarge", "ml.r7i.16xlarge", "ml.r7i.24xlarge", "ml.r7i.48xlarge",
    "ml.t3.medium", "ml.t3.large", "ml.t3.xlarge", "ml.t3.2xlarge",
    "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge",
    "ml.trn2.3xlarge", "ml.trn2.48xlarge",
))  # fmt: skip
# The accelerator of each accelerated HyperPod instance family: NVIDIA GPUs (the families of
# AWS's HyperPod chart's nvidia-device-plugin list, aws/sagemaker-hyperpod-cli@011ca927
# values.yaml, plus G4dn (NVIDIA T4; AWS's PR #434/#435) and G7 (AWS's PR #447, and PR #443's
# health agent "G7 support")); AWS Inferentia/Trainium (its neuron-device-plugin list). The EKS
# dependency chart runs its device plugin and the health agent on each:
# tests/eks/test_chart_instance_types.py ties this table and the chart's lists both ways.
NVIDIA_GPU_FAMILIES = frozenset({
    "g4dn", "g5", "g6", "g6e", "g7", "g7e", "gr6", "p4d", "p4de", "p5", "p5e", "p5en",
    "p6-b200", "p6-b300", "p6e-gb200",
})  # fmt: skip
NEURON_FAMILIES = frozenset({"inf2", "trn1", "trn1n", "trn2"})
# HyperPod instance types with an Elastic Fabric Adapter (EC2 DescribeInstanceTypes
# NetworkInfo.EfaSupported), as AWS's charts list them (read 2026-11-27): AWS's HyperPod chart
# (aws/sagemaker-hyperpod-cli@011ca927 helm_chart/HyperPodHelmChart/values.yaml
# aws-efa-k8s-device-plugin.supportedInstanceLabels; g7e, p6-b300 and trn2.3xlarge from PR #380
# and #385) and, for G4dn, the EFA plugin's own chart (aws/eks-charts@050f81ee
# stable/aws-efa-k8s-device-plugin/values.yaml, "EFA supported instances": ml.g4dn.8xlarge,
# 12xlarge, 16xlarge; AWS's PR #434 adds G4dn to the HyperPod chart).
EFA_INSTANCE_TYPES = frozenset({
    "ml.c5n.9xlarge", "ml.c5n.18xlarge",
    "ml.g4dn.8xlarge", "ml.g4dn.12xlarge", "ml.g4dn.16xlarge",
    "ml.g5.8xlarge", "ml.g5.12xlarge", "ml.g5.16xlarge", "ml.g5.24xlarge", "ml.g5.48xlarge",
    "ml.g6.8xlarge", "ml.g6.12xlarge", "ml.g6.16xlarge", "ml.g6.24xlarge", "ml.g6.48xlarge",
    "ml.g6e.8xlarge", "ml.g6e.12xlarge", "ml.g6e.16xlarge", "ml.g6e.24xlarge", "ml.g6e.48xlarge",
    "ml.g7e.8xlarge", "ml.g7e.12xlarge", "ml.g7e.24xlarge", "ml.g7e.48xlarge",
    "ml.gr6.8xlarge", "ml.i3en.12xlarge", "ml.i3en.24xlarge", "ml.m7i.48xlarge",
    "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.4xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge",
    "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge", "ml.p6e-gb200.36xlarge",
    "ml.r7i.48xlarge", "ml.trn1.32xlarge", "ml.trn1n.32xlarge", "ml.trn2.3xlarge",
    "ml.trn2.48xlarge",
})  # fmt: skip
# Accelerated HyperPod types whose EFA support no source this project holds states: AWS's PR
# #447 (open) adds ml.g7 to the EFA plugin without naming the sizes. The chart's EFA list leaves
# them out (the plugin crash-loops on a node without EFA, aws/sagemaker-hyperpod-cli#367), and
# the config warns on an EKS group of such a type, with the command that settles it.
EFA_UNCONFIRMED_TYPES = frozenset({
    "ml.g7.2xlarge", "ml.g7.4xlarge", "ml.g7.8xlarge", "ml.g7.12xlarge", "ml.g7.24xlarge",
    "ml.g7.48xlarge",
})  # fmt: skip
# When the table above was read, for messages.
HYPERPOD_INSTANCE_TYPES_AS_OF = "2026-11-25 (botocore 1.44.5)"
# A name within this difflib ratio of a known type is probably a typo of it.
INSTANCE_TYPE_TYPO_CUTOFF = 0.9
# How EC2 names families (p5, p6-b200, trn1n, g6e) and sizes (large, 48xlarge, metal-24xl). A name
# of another shape (ml.p5.48xlarg) is no instance type at all; an unknown name of this shape may be
# a type launched after the table above.
_FAMILY_SHAPE = re.compile(r"[a-z]+[0-9]+[a-z]*(-[a-z0-9]+)?")
_SIZE_SHAPE = re.compile(
    r"nano|micro|small|medium|large|xlarge|[1-9][0-9]*xlarge|metal(-[1-9][0-9]*xl)?"
)


def has_instance_type_shape(instance_type: str) -> bool:
    """True when ``instance_type`` is ``ml.<family>.<size>`` as EC2 names them (known or not)."""
    parts = instance_type.split(".")
    return (
        len(parts) == 3
        and parts[0] == "ml"
        and bool(_FAMILY_SHAPE.fullmatch(parts[1]))
        and bool(_SIZE_SHAPE.fullmatch(parts[2]))
    )


def close_instance_type(
    instance_type: str, cutoff: float = INSTANCE_TYPE_TYPO_CUTOFF
) -> str | None:
    """The known HyperPod instance type nearest to ``instance_type`` with a difflib ratio of at
    least ``cutoff``, or None."""
    guess = difflib.get_close_matches(
        instance_type, sorted(HYPERPOD_INSTANCE_TYPES), n=1, cutoff=cutoff
    )
    return guess[0] if guess else None


def accelerator(instance_type: str) -> str | None:
    """``nvidia`` or ``neuron`` for an instance type of :data:`NVIDIA_GPU_FAMILIES` /
    :data:`NEURON_FAMILIES`; None for any other type."""
    parts = instance_type.split(".")
    family = parts[1] if len(parts) == 3 else ""
    if family in NVIDIA_GPU_FAMILIES:
        return "nvidia"
    if family in NEURON_FAMILIES:
        return "neuron"
    return None


def is_accelerated(instance_type: str) -> bool:
    """True for GPU and Trainium ``ml.*`` instance types (ml.p5.48xlarge, ml.trn1.32xlarge)."""
    parts = instance_type.split(".")
    if len(parts) != 3:
        return False
    family = parts[1]
    return family.startswith(ACCELERATED_FAMILY_PREFIXES)


# The Slurm accounting database (cluster.slurm.accounting_database): RDS for MySQL 8.4, the
# current LTS major version (8.0 left RDS standard support). 8.4.9 is the newest 8.4 release
# aws-cdk-lib 2.275 names and CloudFormation's schema lists; `make preflight` checks the region
# offers it (rds:DescribeDBEngineVersions).
ACCOUNTING_MYSQL_MAJOR_VERSION = "8.4"
ACCOUNTING_MYSQL_VERSION = "8.4.9"
# An external accounting database needs a HyperPod AMI released after this date (the AWS doc
# "Using an external accounting database with SageMaker HyperPod Slurm clusters",
# read 2026-11-23); `make preflight` compares each group's AMI (ec2:DescribeImages).
ACCOUNTING_MIN_AMI_DATE = "2026-08-30"


# HyperPod's Prometheus exporter images (cluster.node_setup.exporters), as AWS's observability
# extension runs them (awslabs/awsome-distributed-ai 1.architectures/5.sagemaker-hyperpod/
# Extensions/observability, read 2026-11-24): <registry of the region>/<repository>:<tag>.
HYPERPOD_EXPORTER_IMAGES = {
    "node": ("hyperpod/node_exporter", "v1.9.1"),
    "dcgm": ("hyperpod/dcgm_exporter", "4.1.1-4.0.4-ubi9"),
}
# The account of the Amazon ECR registry that holds those images, per region (read 2026-11-25).
# - us-east-1, us-west-2: 602401143452, as AWS documents it and as AWS's own `docker ps` output
#   of nodes running the extension shows it (awsome-distributed-ai observability guides).
# - Every other region: the account of the Amazon EKS add-on image registry of the region (Amazon
#   EKS user guide, "View Amazon container image registries for Amazon EKS add-ons",
#   add-ons-images; awsdocs/amazon-eks-user-guide latest/ug/workloads/add-ons-images.adoc, and the
#   published page for ap-southeast-5, which the adoc lacks). ASSUMED: AWS publishes the
#   hyperpod/* repositories in that same account; `make preflight` settles it for the config's
#   region (ecr:BatchGetImage of the image), and exporters.*_image takes a copy where it fails.
#   The adoc names ap-east-1's host for ap-east-2 (a typo in the table): the account is kept,
#   with the region's own host.
HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS_AS_OF = "2026-11-25"
HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS = {
    "af-south-1": "877085696533", "ap-east-1": "800184023465", "ap-east-2": "533267051163",
    "ap-northeast-1": "602401143452", "ap-northeast-2": "602401143452",
    "ap-northeast-3": "602401143452", "ap-south-1": "602401143452",
    "ap-south-2": "900889452093", "ap-southeast-1": "602401143452",
    "ap-southeast-2": "602401143452", "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902", "ap-southeast-5": "151610086707",
    "ap-southeast-6": "333609536671", "ap-southeast-7": "121268973566",
    "ca-central-1": "602401143452", "ca-west-1": "761377655185",
    "cn-north-1": "918309763551", "cn-northwest-1": "961992271922",
    "eu-central-1": "602401143452", "eu-central-2": "900612956339",
    "eu-north-1": "602401143452", "eu-south-1": "590381155156", "eu-south-2": "455263428931",
    "eu-west-1": "602401143452", "eu-west-2": "602401143452", "eu-west-3": "602401143452",
    "il-central-1": "066635153087", "me-central-1": "759879836304",
    "me-south-1": "558608220178", "mx-central-1": "730335286997", "sa-east-1": "602401143452",
    "us-east-1": "602401143452", "us-east-2": "602401143452",
    "us-gov-east-1": "151742754352", "us-gov-west-1": "013241004608",
    "us-west-1": "602401143452", "us-west-2": "602401143452",
}  # fmt: skip


def ecr_registry(account: str, region: str) -> str:
    """The host of a private Amazon ECR registry: ``<account>.dkr.ecr.<region>.amazonaws.com``
    (``.amazonaws.com.cn`` in the China regions)."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{suffix}"


def hyperpod_exporter_image(exporter: str, region: str) -> str | None:
    """HyperPod's image of ``exporter`` (``node`` or ``dcgm``) in ``region``; None where
    :data:`HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS` does not know the region."""
    account = HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS.get(region)
    if account is None:
        return None
    repository, tag = HYPERPOD_EXPORTER_IMAGES[exporter]
    return f"{ecr_registry(account, region)}/{repository}:{tag}"


# The observability metric categories of this config and their ``metricsProvider`` keys (the same
# on the EKS add-on and the Slurm extension; see hyperpod_cdk.config.observability for the sources
# of each orchestrator's categories and levels).
#: category -> the ``metricsProvider`` key (the add-on's on EKS, the extension's on Slurm)
METRIC_KEYS: dict[str, str] = {
    "node": "nodeMetrics",
    "accelerated_compute": "acceleratedComputeMetrics",
    "network": "networkMetrics",
    "cluster": "clusterMetrics",
    "job": "jobMetrics",
    "nccl": "ncclMetrics",
    "training": "trainingMetrics",
    "inference": "inferenceMetrics",
    "task_governance": "taskGovernanceMetrics",
    "scaling": "scalingMetrics",
    "ray": "rayMetrics",
}

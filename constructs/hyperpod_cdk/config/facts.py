"""Service limits and allowed values that the config validation enforces.

Each constant names the AWS document it comes from, so a reviewer can check it
and a maintainer knows where to look when the service changes.
"""

from __future__ import annotations

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
# invokes them through the Lambda API (HYPERPOD_FACTS "EKS", 2026-11-23).
EKS_CLOSED_NETWORK_ENDPOINTS = ("eks", "eks-auth", "lambda")

# VPC user guide "Subnet CIDR blocks": the first four and the last address are reserved.
SUBNET_RESERVED_ADDRESSES = 5

AZ_ID_PATTERN = r"^[a-z]{2,8}[0-9]+-az[0-9]+$"
REGION_PATTERN = r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$"
ACCOUNT_PATTERN = r"^[0-9]{12}$"

_DIRECTIONS = {
    "north": "n",
    "south": "s",
    "east": "e",
    "west": "w",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}


def az_id_prefix(region: str) -> str | None:
    """The prefix of the AZ IDs of a region: ``us-west-2`` -> ``usw2``.

    AZ IDs are formed from the region's country code, direction initials and
    number (EC2 user guide "AZ IDs"); GovCloud adds ``g``. Returns None when
    the region name does not have that shape.
    """
    match = re.fullmatch(r"([a-z]{2})(-gov)?-([a-z]+)-([0-9]+)", region)
    if not match:
        return None
    country, gov, direction, number = match.groups()
    initials = _DIRECTIONS.get(direction)
    if initials is None:
        return None
    return f"{country}{'g' if gov else ''}{initials}{number}"


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
# An external accounting database needs a HyperPod AMI released after this date (issue 15, from
# the AWS doc "Using an external accounting database with SageMaker HyperPod Slurm clusters",
# read 2026-11-23); `make preflight` compares each group's AMI (ec2:DescribeImages).
ACCOUNTING_MIN_AMI_DATE = "2026-08-30"

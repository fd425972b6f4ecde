"""Cross-key rules (rules.py): one failing and one passing case per rule, plus warnings.

Each failing case changes a valid base config (Slurm, EKS or pipeline) and names the exact dotted
path and a key part of the message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_testkit import DELETE, assert_issue

G = "cluster.instance_groups"
FSX = "storage.fsx"
DRA = "storage.fsx.data_repository_associations"
ACCOUNT = "111122223333"
KMS_EAST = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
KMS_WEST = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/p5-plan"
SUBNETS = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
ADOPTED_VPC = {"network.vpc_id": "vpc-0123456789abcdef0", "network.compute_subnet_id": SUBNETS[0]}
ADOPTED_FSX = {
    f"{FSX}.file_system_id": "fs-0123456789abcdef0",
    f"{FSX}.dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    f"{FSX}.mount_name": "abcdefgh",
}
ACCOUNTING = {
    "cluster.slurm": {
        "accounting_database": True,
        "accounting_availability_zone_ids": ["usw2-az1", "usw2-az2"],
    }
}
AZ3 = {"network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"}}
# an adopted (shared) cluster says, component by component, what the app installs there
EKS_ADOPTED = {
    "eks.cluster_arn": "arn:aws:eks:us-west-2:111122223333:cluster/shared",
    "eks.kubernetes_version": "1.33",
    "eks.dependencies": {
        "health_monitoring_agent": True,
        "deep_health_check": True,
        "job_auto_restart": True,
        "patching": True,
        "training_operator": True,
        "mpi_operator": False,
        "nvidia_device_plugin": True,
        "neuron_device_plugin": False,
        "efa_device_plugin": True,
        "scientist_rbac": True,
    },
    "eks.addons.fsx_csi_driver": True,
}
ECR_MIRROR = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror"


def group(name: str, instance_type: str = "ml.g5.8xlarge", **keys: Any) -> dict[str, Any]:
    return {"name": name, "instance_type": instance_type, "count": 1, **keys}


def dras(n: int) -> list[dict[str, str]]:
    return [{"file_system_path": f"/d{i}", "s3_prefix": f"d{i}/"} for i in range(n)]


def case(changes: dict[str, Any], path: str, fragment: str) -> Any:
    return pytest.param(changes, path, fragment, id=f"{path}: {fragment}")


SLURM_REJECTED = [
    # AZ IDs belong to the region
    case(
        {"network.availability_zone_id": "use1-az1"},
        "network.availability_zone_id",
        "'use1-az1' is not an AZ ID of us-west-2",
    ),
    case({"region": "eu-west-1"}, "network.availability_zone_id", "its AZ IDs look like euw1-az1"),
    case(
        {"network.additional_compute_cidrs": {"use1-az3": "10.2.0.0/16"}},
        "network.additional_compute_cidrs.use1-az3",
        "not an AZ ID of us-west-2",
    ),
    case(
        {**ADOPTED_VPC, "network.additional_compute_subnet_ids": {"use1-az3": SUBNETS[1]}},
        "network.additional_compute_subnet_ids.use1-az3",
        "not an AZ ID",
    ),
    case(
        {**ACCOUNTING, "cluster.slurm.accounting_availability_zone_ids": ["usw2-az1", "euw1-az2"]},
        "cluster.slurm.accounting_availability_zone_ids[1]",
        "not an AZ ID of us-west-2",
    ),
    case(
        {f"{G}[2].availability_zone_id": "use1-az1"},
        f"{G}[2].availability_zone_id",
        "not an AZ ID of us-west-2",
    ),
    # roles and boundaries in the environment's account
    *(
        case(
            {"account": "444455556666", key: arn},
            key,
            "belongs to account 111122223333 but the key account says 444455556666",
        )
        for key, arn in [
            ("iam.permissions_boundary_arn", "arn:aws:iam::111122223333:policy/boundary"),
            ("cluster.execution_role_arn", "arn:aws:iam::111122223333:role/exec"),
            ("cluster.cluster_role_arn", "arn:aws:iam::111122223333:role/hyperpod"),
            (f"{G}[2].execution_role_arn", "arn:aws:iam::111122223333:role/gpu"),
        ]
    ),
    # tags
    case({"tags": {f"k{i}": "v" for i in range(46)}}, "tags", "46 tags; at most 45"),
    # eks-only keys under Slurm
    case({"eks": {}}, "eks", "applies only with orchestrator: eks"),
    case(
        {"network.eks_availability_zone_ids": ["usw2-az1", "usw2-az2"]},
        "network.eks_availability_zone_ids",
        "applies only with orchestrator: eks",
    ),
    case(
        {**ADOPTED_VPC, "network.eks_subnet_ids": SUBNETS},
        "network.eks_subnet_ids",
        "applies only with orchestrator: eks",
    ),
    case(
        {"cluster.auto_scaling": True},
        "cluster.auto_scaling",
        "applies only with orchestrator: eks",
    ),
    case(
        {"cluster.tiered_storage": {}},
        "cluster.tiered_storage",
        "applies only with orchestrator: eks",
    ),
    case(
        {f"{G}[2].image_release_version": "1.2.3"},
        f"{G}[2].image_release_version",
        "applies only with orchestrator: eks",
    ),
    case(
        {f"{G}[2].labels": {"team": "a"}}, f"{G}[2].labels", "applies only with orchestrator: eks"
    ),
    case(
        {f"{G}[2].taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        f"{G}[2].taints",
        "applies only with orchestrator: eks",
    ),
    # new VPC: CIDR blocks
    case({"network.cidr": "10.0.0.0/8"}, "network.cidr", "a VPC CIDR block is /16 to /28"),
    case(
        {"network.compute_cidr": "10.1.0.0/29"},
        "network.compute_cidr",
        "a VPC CIDR block is /16 to /28",
    ),
    case(
        {"network.compute_cidr": "10.0.128.0/17"},
        "network.compute_cidr",
        "overlaps network.cidr (10.0.0.0/16)",
    ),
    case(
        {"network.additional_compute_cidrs": {"usw2-az3": "10.1.0.0/20"}},
        "network.additional_compute_cidrs.usw2-az3",
        "overlaps network.compute_cidr",
    ),
    case(
        {"network.compute_cidr": "172.16.0.0/16"},
        "network.compute_cidr",
        "secondary blocks from another RFC 1918 range",
    ),
    case(
        {"network.additional_compute_cidrs": {"usw2-az2": "10.2.0.0/16"}},
        "network.additional_compute_cidrs.usw2-az2",
        "is the main HyperPod AZ",
    ),
    case({"network.cidr": "10.0.0.0/27"}, "network.cidr", "has room for 0 public subnet(s)"),
    case(
        {**ACCOUNTING, "network.cidr": "10.0.0.0/23"},
        "network.cidr",
        "has room for 1 database subnet(s)",
    ),
    case(
        {
            "network.cidr": "10.0.0.0/22",
            "network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"},
        },
        "network.cidr",
        "has room for 1 public subnet(s) (a quarter of the block, in /24s); this environment needs 2",
    ),
    case(
        {"network.compute_cidr": "10.1.0.0/28", f"{G}[2].count": 10},
        "network.compute_cidr",
        "11 usable addresses; the 12 nodes in usw2-az2",
    ),
    case(
        {
            "network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/28"},
            f"{G}[3]": group("az3", count=12, availability_zone_id="usw2-az3"),
        },
        "network.additional_compute_cidrs.usw2-az3",
        "the 12 nodes in usw2-az3",
    ),
    # new VPC: NAT and keys of an adopted VPC
    case({"network.nat_gateways": 0}, "network.nat_gateways", "no route to AWS APIs"),
    case(
        {"network.nat_gateways": 2},
        "network.nat_gateways",
        "more than the 1 AZ(s) with a public subnet",
    ),
    case(
        {"network.closed_network": True, "network.nat_gateways": 1},
        "network.nat_gateways",
        "must be 0 (or left out) with closed_network: true",
    ),
    case(
        {"network.compute_subnet_id": SUBNETS[0]},
        "network.compute_subnet_id",
        "applies only when network.vpc_id adopts a VPC",
    ),
    case(
        {"network.additional_compute_subnet_ids": {"usw2-az3": SUBNETS[1]}},
        "network.additional_compute_subnet_ids",
        "applies only when network.vpc_id",
    ),
    case(
        {"network.security_group_ids": ["sg-0123456789abcdef0"]},
        "network.security_group_ids",
        "applies only when network.vpc_id",
    ),
    case(
        {**ACCOUNTING, "cluster.slurm.accounting_subnet_ids": SUBNETS},
        "cluster.slurm.accounting_subnet_ids",
        "applies only when network.vpc_id",
    ),
    case(
        {f"{G}[2].availability_zone_id": "usw2-az3"},
        f"{G}[2].availability_zone_id",
        "usw2-az3 has no HyperPod subnet; add network.additional_compute_cidrs.usw2-az3",
    ),
    # adopted VPC
    case(
        {"network.vpc_id": "vpc-0123456789abcdef0"},
        "network.compute_subnet_id",
        "is required with network.vpc_id",
    ),
    *(
        case(
            {**ADOPTED_VPC, f"network.{key}": value},
            f"network.{key}",
            "applies only to a VPC the app creates",
        )
        for key, value in [
            ("cidr", "10.0.0.0/16"),
            ("compute_cidr", "10.1.0.0/16"),
            ("additional_compute_cidrs", {"usw2-az3": "10.2.0.0/16"}),
            ("nat_gateways", 1),
            ("closed_network", True),
        ]
    ),
    case(
        {
            **ADOPTED_VPC,
            "network.security_group_ids": [f"sg-0123456789abcdef{i}" for i in range(5)],
        },
        "network.security_group_ids",
        "5 groups; at most 4",
    ),
    case(
        {**ADOPTED_VPC, "network.additional_compute_subnet_ids": {"usw2-az2": SUBNETS[1]}},
        "network.additional_compute_subnet_ids.usw2-az2",
        "is the main HyperPod AZ (network.availability_zone_id)",
    ),
    case(
        {**ADOPTED_VPC, f"{G}[2].availability_zone_id": "usw2-az3"},
        f"{G}[2].availability_zone_id",
        "add network.additional_compute_subnet_ids.usw2-az3",
    ),
    # FSx created by the app
    case(
        {f"{FSX}.lustre_version": "2.12", f"{FSX}.metadata_iops": 3000},
        f"{FSX}.metadata_iops",
        "needs lustre_version 2.15",
    ),
    case(
        {
            f"{FSX}.lustre_version": "2.12",
            f"{FSX}.efa_enabled": True,
            f"{FSX}.storage_capacity_gib": 19200,
        },
        f"{FSX}.efa_enabled",
        "needs lustre_version 2.15",
    ),
    *(
        case(
            {
                f"{FSX}.efa_enabled": True,
                f"{FSX}.throughput_per_tib": tput,
                f"{FSX}.storage_capacity_gib": capacity,
            },
            f"{FSX}.storage_capacity_gib",
            f"{capacity} is not valid for an EFA-enabled file system at {tput} MB/s/TiB; use a multiple of {multiple}",
        )
        for tput, capacity, multiple in [
            (125, 19200, 38400),
            (250, 9600, 19200),
            (500, 4800, 9600),
            (1000, 2400, 4800),
        ]
    ),
    case(
        {f"{FSX}.backup_retention_days": 7},
        f"{FSX}.backup_retention_days",
        "must be 0 while data_repository_associations exist",
    ),
    case(
        {f"{FSX}.kms_key_arn": KMS_EAST},
        f"{FSX}.kms_key_arn",
        "the key is in us-east-1, the environment in us-west-2",
    ),
    # FSx off, or adopted
    case({f"{FSX}.enabled": False}, f"{DRA}", "has no effect with storage.fsx.enabled: false"),
    case(
        {f"{FSX}.enabled": False, f"{DRA}": DELETE, f"{FSX}.storage_capacity_gib": 2400},
        f"{FSX}.storage_capacity_gib",
        "has no effect",
    ),
    case(
        {f"{FSX}.enabled": False, f"{DRA}": DELETE, f"{FSX}.mount_path": "/shared"},
        f"{FSX}.mount_path",
        "has no effect",
    ),
    case(
        {f"{FSX}.file_system_id": "fs-0123456789abcdef0"},
        f"{FSX}.dns_name",
        "is required with storage.fsx.file_system_id",
    ),
    case(
        {f"{FSX}.file_system_id": "fs-0123456789abcdef0"},
        f"{FSX}.mount_name",
        "is required with storage.fsx.file_system_id",
    ),
    *(
        case(
            {**ADOPTED_FSX, f"{FSX}.{key}": value},
            f"{FSX}.{key}",
            "applies only to a file system the app creates",
        )
        for key, value in [
            ("storage_capacity_gib", 2400),
            ("throughput_per_tib", 500),
            ("efa_enabled", False),
            ("metadata_iops", 3000),
            ("kms_key_arn", KMS_WEST),
            ("removal_policy", "destroy"),
        ]
    ),
    case(
        {f"{FSX}.dns_name": ADOPTED_FSX[f"{FSX}.dns_name"]},
        f"{FSX}.dns_name",
        "applies only with storage.fsx.file_system_id",
    ),
    case(
        {f"{FSX}.mount_name": "abcdefgh"},
        f"{FSX}.mount_name",
        "applies only with storage.fsx.file_system_id",
    ),
    case(
        {**ADOPTED_FSX, f"{FSX}.dns_name": "fs-0aaaaaaaaaaaaaaa0.fsx.us-west-2.amazonaws.com"},
        f"{FSX}.dns_name",
        "is not the DNS name of fs-0123456789abcdef0",
    ),
    case(
        {**ADOPTED_FSX, f"{FSX}.dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"},
        f"{FSX}.dns_name",
        "is not in region us-west-2",
    ),
    # data repository associations
    case({DRA: dras(9)}, DRA, "9 associations; FSx allows at most 8"),
    case({f"{DRA}[0].s3_prefix": DELETE}, f"{DRA}[0]", "give exactly one of s3_prefix"),
    case({f"{DRA}[0].s3_uri": "s3://bucket-a/x/"}, f"{DRA}[0]", "give exactly one of s3_prefix"),
    case(
        {f"{DRA}[1]": {"file_system_path": "/", "s3_prefix": "root/"}},
        f"{DRA}[1].file_system_path",
        "'/' is allowed only as the sole association",
    ),
    case(
        {f"{DRA}[1]": {"file_system_path": "/datasets/raw", "s3_prefix": "raw/"}},
        f"{DRA}[1].file_system_path",
        f"'/datasets/raw' overlaps {DRA}[0] ('/datasets')",
    ),
    case(
        {f"{DRA}[1]": {"file_system_path": "/datasets/", "s3_prefix": "raw/"}},
        f"{DRA}[1].file_system_path",
        "must not contain one another",
    ),
    case(
        {
            f"{DRA}[1]": {"file_system_path": "/", "s3_prefix": "root/"},
            f"{DRA}[0].file_system_path": "/x",
        },
        f"{DRA}[1].file_system_path",
        "only as the sole association",
    ),
    case(
        {f"{DRA}[1]": {"file_system_path": "/raw", "s3_prefix": "datasets/raw/"}},
        f"{DRA}[1].s3_prefix",
        f"overlaps the S3 location of {DRA}[0]",
    ),
    case(
        {f"{DRA}[1]": {"file_system_path": "/raw", "s3_prefix": "datasets/"}},
        f"{DRA}[1].s3_prefix",
        "each S3 prefix serves one association",
    ),
    case(
        {
            DRA: [
                {"file_system_path": "/a", "s3_uri": "s3://shared/a/"},
                {"file_system_path": "/b", "s3_uri": "s3://shared/a/b/"},
            ]
        },
        f"{DRA}[1].s3_uri",
        f"s3://shared/a/b/ overlaps the S3 location of {DRA}[0]",
    ),
    case(
        {
            DRA: [
                {"file_system_path": "/a", "s3_uri": "s3://shared/a"},
                {"file_system_path": "/b", "s3_uri": "s3://shared"},
            ]
        },
        f"{DRA}[1].s3_uri",
        "overlaps the S3 location",
    ),
    # cluster: Continuous provisioning and Slurm settings
    case(
        {"cluster.slurm.config_strategy": "Managed"},
        "cluster.slurm.config_strategy",
        "must stay null under Continuous provisioning",
    ),
    case(
        {**ACCOUNTING, "cluster.node_provisioning_mode": None},
        "cluster.slurm.accounting_database",
        "needs cluster.node_provisioning_mode: Continuous",
    ),
    case(
        {**ACCOUNTING, "cluster.slurm.accounting_availability_zone_ids": ["usw2-az1"]},
        "cluster.slurm.accounting_availability_zone_ids",
        "needs at least two distinct AZ IDs",
    ),
    case(
        {**ACCOUNTING, "cluster.slurm.accounting_availability_zone_ids": ["usw2-az1", "usw2-az1"]},
        "cluster.slurm.accounting_availability_zone_ids",
        "two distinct AZ IDs",
    ),
    *(
        case(
            {f"cluster.slurm.{key}": value},
            f"cluster.slurm.{key}",
            "applies only with cluster.slurm.accounting_database: true",
        )
        for key, value in [
            ("accounting_instance_class", "db.r6g.large"),
            ("accounting_multi_az", False),
            ("accounting_availability_zone_ids", ["usw2-az1", "usw2-az2"]),
        ]
    ),
    case(
        {**ADOPTED_VPC, **ACCOUNTING},
        "cluster.slurm.accounting_availability_zone_ids",
        "applies only to a VPC the app creates; with network.vpc_id give accounting_subnet_ids",
    ),
    case(
        {**ADOPTED_VPC, **ACCOUNTING},
        "cluster.slurm.accounting_subnet_ids",
        "needs at least two private subnets",
    ),
    # instance groups
    case(
        {f"{G}[2].name": "login"},
        f"{G}[2].name",
        "'login' is already the name of instance_groups[1]",
    ),
    case(
        {f"{G}[2].instance_type": DELETE},
        f"{G}[2].instance_type",
        "is required (or instance_types under Continuous provisioning)",
    ),
    case(
        {f"{G}[2].instance_types": ["ml.p5.48xlarge"]},
        f"{G}[2].instance_types",
        "give instance_type or instance_types, not both",
    ),
    case(
        {
            "cluster.node_provisioning_mode": None,
            f"{G}[2].instance_type": DELETE,
            f"{G}[2].instance_types": ["ml.p5.48xlarge"],
        },
        f"{G}[2].instance_types",
        "needs cluster.node_provisioning_mode: Continuous",
    ),
    case(
        {"cluster.node_provisioning_mode": None, f"{G}[2].min_count": 0},
        f"{G}[2].min_count",
        "needs cluster.node_provisioning_mode: Continuous",
    ),
    case(
        {"cluster.node_provisioning_mode": None, f"{G}[2].capacity_type": "spot"},
        f"{G}[2].capacity_type",
        "spot needs cluster.node_provisioning_mode: Continuous",
    ),
    case({f"{G}[2].min_count": 3}, f"{G}[2].min_count", "3 is more than count (2)"),
    case(
        {f"{G}[3]": group("cpu", "ml.c5.9xlarge", deep_health_checks=["InstanceStress"])},
        f"{G}[3].deep_health_checks",
        "GPU and Trainium instances only, not ml.c5.9xlarge",
    ),
    case(
        {
            f"{G}[2].instance_type": DELETE,
            f"{G}[2].instance_types": ["ml.p5.48xlarge", "ml.m5.24xlarge"],
            f"{G}[2].deep_health_checks": ["InstanceStress"],
        },
        f"{G}[2].deep_health_checks",
        "not ml.m5.24xlarge",
    ),
    case(
        {f"{G}[2].ebs_kms_key_arn": KMS_EAST}, f"{G}[2].ebs_kms_key_arn", "the key is in us-east-1"
    ),
    case(
        {"cluster.node_provisioning_mode": None, f"{G}[2].ebs_kms_key_arn": KMS_WEST},
        f"{G}[2].ebs_kms_key_arn",
        "a customer managed EBS key needs cluster.node_provisioning_mode: Continuous",
    ),
    case(
        {f"{G}[2].training_plan_arn": PLAN.replace("us-west-2", "us-east-1")},
        f"{G}[2].training_plan_arn",
        "the plan is in us-east-1, the environment in us-west-2",
    ),
    case(
        {"account": "444455556666", f"{G}[2].training_plan_arn": PLAN},
        f"{G}[2].training_plan_arn",
        f"belongs to account {ACCOUNT}",
    ),
    case(
        {f"{G}[2].training_plan_arn": PLAN, f"{G}[2].capacity_type": "spot"},
        f"{G}[2].capacity_type",
        "spot cannot use a training plan's reserved capacity",
    ),
    *(
        case(
            {f"{G}[2].{key}": {**first, "batch_percent": 10, "batch_count": 1}},
            f"{G}[2].{key}",
            "give batch_percent or batch_count, not both",
        )
        for key, first in [
            ("scheduled_update", {"schedule": "cron(0 3 ? * SUN *)"}),
            ("auto_patch", {"strategy": "WhenIdle"}),
        ]
    ),
    # Slurm topology
    case({f"{G}[0].node_type": "Compute"}, G, "needs exactly one group with node_type: Controller"),
    case({f"{G}[0].node_type": DELETE}, G, "needs exactly one group with node_type: Controller"),
    case(
        {f"{G}[3]": group("controller2", node_type="Controller")},
        f"{G}[3].node_type",
        "a second Controller group; instance_groups[0] is the controller",
    ),
    case(
        {f"{G}[3]": group("login2", node_type="Login")},
        f"{G}[3].node_type",
        "a second Login group; at most one (instance_groups[1])",
    ),
    case(
        {f"{G}[0].partition": "ctl"},
        f"{G}[0].partition",
        "only Compute groups have a partition, not Controller",
    ),
    case(
        {f"{G}[1].partition": "login"},
        f"{G}[1].partition",
        "only Compute groups have a partition, not Login",
    ),
    case(
        {
            f"{G}[0].instance_type": DELETE,
            f"{G}[0].instance_types": ["ml.m5.2xlarge", "ml.m5.4xlarge"],
        },
        f"{G}[0].instance_types",
        "a Controller group runs one instance_type",
    ),
    case(
        {"cluster.lifecycle_hook": "OnCreate"},
        "cluster.lifecycle_hook",
        "OnCreate is not supported on Slurm: the lifecycle scripts run after HyperPod has set up "
        "Slurm, Docker and FSx (OnInitComplete)",
    ),
    case(
        {"cluster.node_provisioning_mode": None, "cluster.lifecycle_hook": "OnCreate"},
        "cluster.lifecycle_hook",
        "use OnInitComplete (the default)",
    ),
    case(
        {f"{G}[2].partition": "dev"}, f"{G}[2].partition", "'dev' is HyperPod's built-in partition"
    ),
    case({f"{G}[3]": group("dev")}, f"{G}[3].partition", "'dev' is HyperPod's built-in partition"),
    case({f"{G}[0].count": 0}, f"{G}[0].count", "the Controller group needs at least one instance"),
    case(
        {f"{G}[0].count": 2},
        f"{G}[0].count",
        "multi-head controllers are not supported under Continuous provisioning",
    ),
    case(
        {f"{G}[0].capacity_type": "spot"},
        f"{G}[0].capacity_type",
        "the Controller runs on on_demand capacity",
    ),
]

SLURM_ACCEPTED = [
    {},
    {"account": ACCOUNT, "region": "eu-west-1", "network.availability_zone_id": "euw1-az2"},
    {**AZ3, "network.nat_gateways": 2, f"{G}[2].availability_zone_id": "usw2-az3"},
    {f"{G}[2].availability_zone_id": "usw2-az2"},  # the main AZ needs no extra subnet
    {"network.closed_network": True},
    {
        "network.closed_network": True,
        "network.nat_gateways": 0,
        "network.interface_endpoints": ["ssm", "logs"],
    },
    {"network.cidr": "10.0.0.0/24"},
    {"network.cidr": "10.0.0.0/26"},  # quarters are /28s: the smallest subnets AWS allows
    {
        "network.cidr": "10.0.0.0/21",
        "network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"},
    },
    {"network.compute_cidr": "10.1.0.0/28"},
    {"network.cidr": "10.0.0.0/16", "network.compute_cidr": "100.64.0.0/16"},
    {"tags": {f"k{i}": "v" for i in range(45)}},
    {
        "account": ACCOUNT,
        "iam.permissions_boundary_arn": "arn:aws:iam::aws:policy/PowerUserAccess",
        "cluster.execution_role_arn": "arn:aws:iam::111122223333:role/exec",
        f"{G}[2].execution_role_arn": "arn:aws:iam::111122223333:role/gpu",
    },
    {
        "iam.permissions_boundary_arn": "arn:aws:iam::444455556666:policy/b"
    },  # no account: not checked
    ADOPTED_VPC,
    {
        **ADOPTED_VPC,
        "network.security_group_ids": [f"sg-0123456789abcdef{i}" for i in range(4)],
        "network.additional_compute_subnet_ids": {"usw2-az3": SUBNETS[1]},
        f"{G}[2].availability_zone_id": "usw2-az3",
    },
    {
        **ADOPTED_VPC,
        "cluster.slurm": {"accounting_database": True, "accounting_subnet_ids": SUBNETS},
    },
    ADOPTED_FSX,
    {
        **ADOPTED_FSX,
        f"{FSX}.mount_path": "/shared",
        f"{DRA}[0]": {"file_system_path": "/d", "s3_uri": "s3://bkt/d/"},
    },
    {"storage": {"fsx": {"enabled": False}}},
    *(
        {
            f"{FSX}.efa_enabled": True,
            f"{FSX}.throughput_per_tib": tput,
            f"{FSX}.storage_capacity_gib": capacity,
        }
        for tput, capacity in [(125, 38400), (250, 19200), (500, 9600), (1000, 4800), (1000, 9600)]
    ),
    {
        f"{FSX}.efa_enabled": True,
        f"{FSX}.throughput_per_tib": 1000,
        f"{FSX}.storage_capacity_gib": 4800,
        f"{FSX}.metadata_iops": 12000,
    },
    {f"{FSX}.lustre_version": "2.12"},
    {f"{FSX}.kms_key_arn": KMS_WEST},
    {DRA: [], f"{FSX}.backup_retention_days": 7},
    {DRA: dras(8)},
    {DRA: [{"file_system_path": "/", "s3_prefix": "all/"}]},
    {
        f"{DRA}[1]": {"file_system_path": "/data", "s3_prefix": "data/"}
    },  # /data and /datasets are siblings
    {f"{DRA}[1]": {"file_system_path": "/d2", "s3_prefix": "datasets2/"}},
    {f"{DRA}[1]": {"file_system_path": "/d2", "s3_uri": "s3://other-bucket/datasets/"}},
    {
        DRA: [
            {"file_system_path": "/a", "s3_uri": "s3://bucket-a/x/"},
            {"file_system_path": "/b", "s3_uri": "s3://bucket-b/x/"},
        ]
    },
    {"cluster.node_provisioning_mode": None, "cluster.slurm.config_strategy": "Managed"},
    {"cluster.node_provisioning_mode": None, f"{G}[0].count": 2},  # multi-head outside Continuous
    ACCOUNTING,
    {
        **ACCOUNTING,
        "cluster.slurm.accounting_multi_az": True,
        "cluster.slurm.accounting_instance_class": "db.r6g.large",
    },
    {f"{G}[2].min_count": 2, f"{G}[2].capacity_type": "spot"},
    {f"{G}[2].min_count": 0},
    {
        f"{G}[2].instance_type": DELETE,
        f"{G}[2].instance_types": ["ml.p5.48xlarge", "ml.p5e.48xlarge"],
        f"{G}[2].deep_health_checks": ["InstanceStress"],
    },
    {f"{G}[2].training_plan_arn": PLAN, "account": ACCOUNT},
    {
        f"{G}[2].deep_health_checks": ["InstanceStress", "InstanceConnectivity"],
        f"{G}[2].ebs_kms_key_arn": KMS_WEST,
    },
    *(
        {f"{G}[3]": group("acc", t, deep_health_checks=["InstanceStress"])}
        for t in ("ml.trn1.32xlarge", "ml.g5.48xlarge", "ml.p4d.24xlarge")
    ),
    {f"{G}[3]": group("gpu2", partition="gpu")},  # two groups may share a partition
    {f"{G}[1]": group("more", count=0)},  # no Login group; a Compute group may be empty
    {
        f"{G}[2].scheduled_update": {"schedule": "cron(0 3 ? * SUN *)", "batch_percent": 10},
        f"{G}[2].auto_patch": {"strategy": "WhenIdle", "batch_count": 1},
    },
]

EKS_REJECTED = [
    case({"cluster.slurm": {}}, "cluster.slurm", "applies only with orchestrator: slurm"),
    case(
        {f"{G}[0].node_type": "Compute"},
        f"{G}[0].node_type",
        "applies only with orchestrator: slurm",
    ),
    case(
        {f"{G}[0].partition": "gpu"}, f"{G}[0].partition", "applies only with orchestrator: slurm"
    ),
    case(
        {"network.eks_availability_zone_ids": ["usw2-az1"]},
        "network.eks_availability_zone_ids",
        "needs at least two distinct AZ IDs",
    ),
    case(
        {"network.eks_availability_zone_ids": ["usw2-az1", "usw2-az1"]},
        "network.eks_availability_zone_ids",
        "must not repeat",
    ),
    case(
        {"network.eks_availability_zone_ids": ["usw2-az1", "use1-az2"]},
        "network.eks_availability_zone_ids[1]",
        "not an AZ ID of us-west-2",
    ),
    case(
        {**ADOPTED_VPC, "network.eks_availability_zone_ids": DELETE},
        "network.eks_subnet_ids",
        "needs at least two subnets",
    ),
    case(
        {"cluster.node_provisioning_mode": None, "cluster.auto_scaling": True},
        "cluster.auto_scaling",
        "needs cluster.node_provisioning_mode: Continuous",
    ),
    case(
        {"cluster.auto_scaling": True, "cluster.node_recovery": "None"},
        "cluster.auto_scaling",
        "needs cluster.node_recovery: Automatic",
    ),
    case(
        {
            f"{G}[0].deep_health_checks": ["InstanceStress"],
            f"{G}[0].taints": [{"key": "gpu", "effect": "NoSchedule"}],
        },
        f"{G}[0].taints",
        "custom taints are not allowed on a group with deep_health_checks",
    ),
    case(
        {"eks.cluster_arn": "arn:aws:eks:us-east-1:111122223333:cluster/shared"},
        "eks.cluster_arn",
        "is not in us-west-2",
    ),
    case(
        {"eks.cluster_arn": "arn:aws:eks:us-west-2:111122223333:cluster/shared"},
        "eks.kubernetes_version",
        "give the adopted cluster's version",
    ),
    case(
        {**EKS_ADOPTED, "eks.logging": ["api"]},
        "eks.logging",
        "applies only to an EKS cluster the app creates",
    ),
    case(
        {"eks.dependencies.health_monitoring_agent": False},
        "eks.dependencies.health_monitoring_agent",
        "cluster.node_recovery: Automatic needs the health monitoring agent",
    ),
    case(
        {
            "eks.dependencies.health_monitoring_agent": False,
            "cluster.node_recovery": "None",
            "cluster.auto_scaling": True,
        },
        "eks.dependencies.health_monitoring_agent",
        "cluster.auto_scaling (Karpenter) needs the health monitoring agent",
    ),
    case(
        {
            "eks.dependencies.deep_health_check": False,
            f"{G}[0].deep_health_checks": ["InstanceStress"],
        },
        f"{G}[0].deep_health_checks",
        "needs eks.dependencies.deep_health_check: true",
    ),
    case(
        {
            "region": "il-central-1",
            "network.availability_zone_id": "ilc1-az2",
            "network.eks_availability_zone_ids": ["ilc1-az1", "ilc1-az2"],
            "eks.dependencies.health_monitoring_agent": False,
            "cluster.node_recovery": "None",
        },
        "eks.dependencies.efa_device_plugin",
        "its image is not published in il-central-1",
    ),
    case(
        {
            "region": "ap-northeast-2",
            "network.availability_zone_id": "apne2-az2",
            "network.eks_availability_zone_ids": ["apne2-az1", "apne2-az2"],
        },
        "eks.dependencies.health_monitoring_agent",
        "its image is not published in ap-northeast-2 (AWS publishes it in ap-northeast-1, ",
    ),
    case(
        {"network.closed_network": True},
        "eks.dependencies.nvidia_device_plugin",
        "a closed network cannot pull nvcr.io/nvidia/k8s-device-plugin:v0.16.1 (no NAT); mirror",
    ),
    case(
        {"network.closed_network": True, "eks.image_registry": "registry.example.com/mirror"},
        "eks.image_registry",
        "a closed network reaches only private Amazon ECR registries",
    ),
    case(
        {"eks.image_registry": "https://registry.example.com/"},
        "eks.image_registry",
        "a registry host with an optional path",
    ),
    case(
        {**EKS_ADOPTED, "eks.dependencies": {"patching": True}},
        "eks.dependencies",
        "say for each whether the app installs it (true) or the cluster's owner has it (false): "
        "health_monitoring_agent, deep_health_check, job_auto_restart, training_operator",
    ),
    case(
        {
            **EKS_ADOPTED,
            "eks.dependencies": dict.fromkeys(
                (
                    "health_monitoring_agent",
                    "deep_health_check",
                    "job_auto_restart",
                    "patching",
                    "training_operator",
                    "mpi_operator",
                    "nvidia_device_plugin",
                    "efa_device_plugin",
                    "scientist_rbac",
                ),
                True,
            ),
        },
        "eks.dependencies.neuron_device_plugin",
        "say for each whether",
    ),  # fmt: skip
    case(
        {k: v for k, v in EKS_ADOPTED.items() if k != "eks.addons.fsx_csi_driver"},
        "eks.addons.fsx_csi_driver",
        "may already have the FSx CSI driver add-on",
    ),
    case(
        {
            "eks.dependencies.mpi_operator": False,
            "eks.chart_values.image_tags.mpi_operator": "0.6.0",
        },
        "eks.chart_values.image_tags.mpi_operator",
        "eks.dependencies.mpi_operator is off",
    ),
    case(
        {"eks.chart_values.image_tags.patching": "1"},
        "eks.chart_values.image_tags.patching",
        "'patching' is not allowed",
    ),
    case(
        {"eks.chart_values.extra_tolerations": [{"key": "gpu", "effect": "NoDrain"}]},
        "eks.chart_values.extra_tolerations[0].effect",
        "'NoDrain' is not allowed",
    ),
    case(
        {"eks.chart_values.extra_instance_types.efa": ["p5.48xlarge"]},
        "eks.chart_values.extra_instance_types.efa[0]",
        "an ml.* instance type like ml.p5.48xlarge",
    ),
    case(
        {
            f"{G}[0].taints": [{"key": "gpu", "effect": "NoSchedule"}],
            f"{G}[1].taints": [{"key": "cpu", "effect": "NoExecute"}],
        },
        "cluster.instance_groups",
        "CoreDNS and the add-ons in eks.addons run on an instance group with a count above 0 and "
        "no NoSchedule or NoExecute taint",
    ),  # fmt: skip
    case(
        {"storage.fsx.enabled": False, "eks.addons.fsx_csi_driver": True},
        "eks.addons.fsx_csi_driver",
        "needs a file system",
    ),
    case({"eks.dependencies.helm": True}, "eks.dependencies.helm", "unknown key"),
    case({"eks.addons.karpenter": True}, "eks.addons.karpenter", "unknown key"),
    case(
        {"eks.endpoint_access": "public"},
        "eks.public_access_cidrs",
        "an empty list opens the Kubernetes API to the internet",
    ),
    case(
        {**EKS_ADOPTED, "eks.endpoint_access": "public"},
        "eks.endpoint_access",
        "applies only to an EKS cluster the app creates",
    ),
    case(
        {"eks.kubectl_role_arn": "arn:aws:iam::111122223333:role/kubectl"},
        "eks.kubectl_role_arn",
        "applies only with eks.cluster_arn",
    ),
    case(
        {"eks.public_access_cidrs": ["203.0.113.0/24"]},
        "eks.public_access_cidrs",
        "needs endpoint_access public or public_and_private",
    ),
    case(
        {"eks.endpoint_access": "public", "eks.public_access_cidrs": ["0.0.0.0/0"]},
        "eks.public_access_cidrs[0]",
        "opens the API endpoint to the internet",
    ),
    case({"eks.kubernetes_version": "1.29"}, "eks.kubernetes_version", "'1.29' is not allowed"),
    case({"eks.logging": ["kubelet"]}, "eks.logging[0]", "'kubelet' is not allowed"),
    case(
        {f"{G}[0].image_release_version": "2025"},
        f"{G}[0].image_release_version",
        "a HyperPod AMI release like 1.2.3",
    ),
]

EKS_ACCEPTED = [
    {},
    {
        f"{G}[0].labels": {"example.com/team": "research"},
        f"{G}[1].taints": [{"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}],
        f"{G}[0].image_release_version": "1.2.3",
        f"{G}[0].deep_health_checks": ["InstanceStress", "InstanceConnectivity"],
    },
    {"cluster.auto_scaling": True, "cluster.tiered_storage": {"memory_percent": 20}},
    {**EKS_ADOPTED, "eks.kubectl_role_arn": "arn:aws:iam::111122223333:role/kubectl"},
    {"eks.endpoint_access": "public_and_private", "eks.public_access_cidrs": ["203.0.113.0/24"]},
    {"eks.kubernetes_version": "1.30", "eks.logging": ["api", "audit"]},
    {**ADOPTED_VPC, "network.eks_availability_zone_ids": DELETE, "network.eks_subnet_ids": SUBNETS},
    {**EKS_ADOPTED, "eks.kubernetes_version": "1.31"},
    {
        "eks.dependencies": {"neuron_device_plugin": False, "mpi_operator": False},
        "eks.addons": {
            "training_operator": True,
            "task_governance": True,
            "observability": True,
            "fsx_csi_driver": True,
        },
    },
    {"eks.dependencies.health_monitoring_agent": False, "cluster.node_recovery": "None"},
    {"storage.fsx.enabled": False},
    # a mirror serves every image: a closed network, and a region without AWS's regional images
    {"network.closed_network": True, "eks.image_registry": ECR_MIRROR},
    {
        "region": "ap-northeast-2",
        "network.availability_zone_id": "apne2-az2",
        "network.eks_availability_zone_ids": ["apne2-az1", "apne2-az2"],
        "eks.image_registry": ECR_MIRROR.replace("us-west-2", "ap-northeast-2"),
    },
    {
        "eks.chart_values": {
            "extra_tolerations": [{"key": "example.com/pool", "operator": "Exists"}],
            "extra_instance_types": {"nvidia_gpu": ["ml.p7.48xlarge"]},
            "image_tags": {"health_monitoring_agent": "1.0.2297.0_1.0.474.0"},
        }
    },
    # one untainted group is enough for CoreDNS and the add-ons
    {f"{G}[0].taints": [{"key": "gpu", "effect": "NoSchedule"}]},
    {f"{G}[1].taints": [{"key": "cpu", "effect": "PreferNoSchedule"}]},
]

PIPELINE_REJECTED = [
    case(
        {"pipeline.connection_arn": "arn:aws:s3:::bucket"},
        "pipeline.connection_arn",
        "a CodeConnections connection ARN",
    ),
    case({"pipeline.repository": "hyperpod-env"}, "pipeline.repository", "owner/repository"),
    case({"pipeline.stages": []}, "pipeline.stages", "at least 1 item(s) are needed"),
    case({"pipeline.stages[1].name": "dev"}, "pipeline.stages", "stage names must not repeat"),
    case(
        {"pipeline.stages[0].aproval": True},
        "pipeline.stages[0].aproval",
        "did you mean 'approval'?",
    ),
    case({"account": DELETE}, "account", "required key is missing"),
    case({"cluster": {}}, "cluster", "unknown key"),
]


@pytest.mark.parametrize(("changes", "path", "fragment"), SLURM_REJECTED)
def test_slurm_rejected(check, changes: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(check(changes), path, fragment)


@pytest.mark.parametrize("changes", SLURM_ACCEPTED, ids=lambda c: ",".join(c) or "base")
def test_slurm_accepted(check, changes: dict[str, Any]) -> None:
    assert [str(i) for i in check(changes)] == []


@pytest.mark.parametrize(("changes", "path", "fragment"), EKS_REJECTED)
def test_eks_rejected(check, changes: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(check(changes, base="eks"), path, fragment)


@pytest.mark.parametrize("changes", EKS_ACCEPTED, ids=lambda c: ",".join(c) or "base")
def test_eks_accepted(check, changes: dict[str, Any]) -> None:
    assert [str(i) for i in check(changes, base="eks")] == []


@pytest.mark.parametrize(("changes", "path", "fragment"), PIPELINE_REJECTED)
def test_pipeline_rejected(check, changes: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(check(changes, base="pipeline"), path, fragment)


def test_pipeline_accepted(check) -> None:
    assert check(base="pipeline") == []


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        ({}, "is not a directory under"),
        ({"README.md": "scripts"}, "has no entrypoint.sh, the entry script the cluster runs"),
        (
            {"entrypoint.sh": "", "slurm/provisioning_parameters.json": "{}"},
            "contains provisioning_parameters.json",
        ),
    ],
    ids=["missing", "no-entry-script", "legacy-file"],
)
def test_lifecycle_scripts_rejected(
    check, tmp_path: Path, files: dict[str, str], fragment: str
) -> None:
    if files:
        for name, text in files.items():
            (tmp_path / "lifecycle_assets" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "lifecycle_assets" / name).write_text(text)
    assert_issue(check(root=tmp_path), "cluster.lifecycle_scripts", fragment)


def test_lifecycle_scripts_accepted(check, tmp_path: Path) -> None:
    (tmp_path / "scripts" / "slurm").mkdir(parents=True)
    (tmp_path / "scripts" / "entrypoint.sh").write_text("#!/bin/bash\n")
    assert check({"cluster.lifecycle_scripts": "scripts"}, root=tmp_path) == []


EFA_FSX = {
    f"{FSX}.efa_enabled": True,
    f"{FSX}.throughput_per_tib": 1000,
    f"{FSX}.storage_capacity_gib": 4800,
}


@pytest.mark.parametrize(
    ("changes", "path", "fragment"),
    [
        case(
            {**EFA_FSX, **AZ3, f"{G}[3]": group("az3", availability_zone_id="usw2-az3")},
            f"{G}[3].availability_zone_id",
            "this group reaches it over TCP",
        ),
        case(
            {**EFA_FSX, f"{G}[3]": group("trn", "ml.trn2.48xlarge")},
            f"{G}[3]",
            "ml.trn2.48xlarge is not an EFA client of FSx for Lustre",
        ),
    ],
)
def test_warnings(warnings_of, changes: dict[str, Any], path: str, fragment: str) -> None:
    found = warnings_of(changes)
    assert_issue(found, path, fragment)
    assert all(i.severity == "warning" and str(i).startswith("config warning: ") for i in found)


def test_adopted_cluster_without_system_nodes_is_a_warning(warnings_of) -> None:
    taints = [{"key": "gpu", "effect": "NoSchedule"}]
    found = warnings_of(
        {**EKS_ADOPTED, f"{G}[0].taints": taints, f"{G}[1].taints": taints}, base="eks"
    )
    assert_issue(
        found, "cluster.instance_groups", "can start only on the adopted cluster's own nodes"
    )


def test_no_warnings_without_efa_file_system(warnings_of) -> None:
    assert (
        warnings_of(
            {**AZ3, f"{G}[3]": group("trn", "ml.trn2.48xlarge", availability_zone_id="usw2-az3")}
        )
        == []
    )

"""Field-level rules (shape, allowed values, limits of one key): one failing and one passing case each.

Each failing case changes one key of a valid base config and names the exact dotted path and a
key part of the message; each passing case is a valid value of the same key.
"""

from __future__ import annotations

from typing import Any

import pytest
from config_testkit import DELETE, assert_issue, build

from hyperpod_cdk.config import parse
from hyperpod_cdk.facts.versions import SUPPORTED_KUBERNETES_VERSIONS

G = "cluster.instance_groups"
FSX = "storage.fsx"
DRA = "storage.fsx.data_repository_associations"
KMS = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def case(changes: dict[str, Any], path: str, fragment: str) -> Any:
    return pytest.param(changes, path, fragment, id=f"{path}: {fragment}")


REJECTED = [
    # top level
    case({"name": "Research_1"}, "name", "2-32 lowercase letters"),
    case({"name": "a" * 33}, "name", "2-32 lowercase letters"),
    case({"name": DELETE}, "name", "required key is missing"),
    case({"region": "us-west"}, "region", "a region name like us-west-2"),
    case({"region": DELETE}, "region", "required key is missing"),
    case({"account": "12345"}, "account", "a 12-digit AWS account id"),
    case({"account": 111122223333}, "account", 'quote it ("111122223333")'),
    case({"orchestrator": "k8s"}, "orchestrator", "'k8s' is not allowed; use 'slurm' or 'eks'"),
    case({"tags": {"aws:team": "x"}}, "tags", "uses the prefix 'aws:'"),
    case({"tags": {"team": 5}}, "tags.team", "is a number here; quote it"),
    case({"tags": {"team": "x" * 257}}, "tags.team", "at most 256 characters"),
    case({"tags": ["team"]}, "tags", "is a list; a mapping of keys is expected here"),
    case({"compliance_packs": ["CIS"]}, "compliance_packs[0]", "'CIS' is not allowed"),
    case({"compliance_packs": ["HIPAA", "HIPAA"]}, "compliance_packs", "must not repeat"),
    case({"nmae": "x"}, "nmae", "unknown key (did you mean 'name'?)"),
    case({"iam.role_path": "hyperpod"}, "iam.role_path", "is not valid"),
    case(
        {"iam.permissions_boundary_arn": "arn:aws:iam::111122223333:role/boundary"},
        "iam.permissions_boundary_arn",
        "is not valid",
    ),
    case({"iam.roles": []}, "iam.roles", "unknown key"),
    # network
    case({"network": DELETE}, "network.availability_zone_id", "required key is missing"),
    case({"network": None}, "network", "is empty (null); a mapping of keys is expected here"),
    case(
        {"network.availability_zone_id": "us-west-2a"},
        "network.availability_zone_id",
        "'us-west-2a' is an AZ name, not an AZ ID; use an AZ ID of us-west-2 like usw2-az1",
    ),
    case({"network.vpc_id": "vpc-xyz"}, "network.vpc_id", "a VPC id like vpc-0123456789abcdef0"),
    case(
        {"network.cidr": "10.0.0.1/16"},
        "network.cidr",
        "has host bits set; the block is 10.0.0.0/16",
    ),
    case({"network.cidr": "10.0.0/16x"}, "network.cidr", "is not an IPv4 CIDR block"),
    case(
        {"network.compute_cidr": "2001:db8::/32"},
        "network.compute_cidr",
        "is not an IPv4 CIDR block",
    ),
    case(
        {"network.additional_compute_cidrs": {"us-west-2c": "10.2.0.0/16"}},
        "network.additional_compute_cidrs.us-west-2c",
        "is an AZ name, not an AZ ID; use an AZ ID of us-west-2 like usw2-az1",
    ),
    case({"network.nat_gateways": -1}, "network.nat_gateways", "greater than or equal to 0"),
    case({"network.nat_gateways": 17}, "network.nat_gateways", "less than or equal to 16"),
    case(
        {"network.interface_endpoints": ["s3"]},
        "network.interface_endpoints",
        "'s3' is not an interface endpoint",
    ),
    case(
        {"network.interface_endpoints": ["sts", "sts"]},
        "network.interface_endpoints",
        "must not repeat",
    ),
    case(
        {"network.security_group_ids": ["sg-1"]},
        "network.security_group_ids[0]",
        "a security group id",
    ),
    case(
        {"network.security_group_ids": ["sg-0123456789abcdef0"] * 2},
        "network.security_group_ids",
        "must not repeat",
    ),
    case({"network.compute_subnet_id": "subnet-1"}, "network.compute_subnet_id", "a subnet id"),
    case({"network.flow_logs": "sometimes"}, "network.flow_logs", "is not valid"),
    case({"network.cidrs": "10.0.0.0/16"}, "network.cidrs", "did you mean 'cidr'?"),
    # FSx
    case(
        {f"{FSX}.storage_capacity_gib": 1300},
        f"{FSX}.storage_capacity_gib",
        "use 1200 or a multiple of 2400",
    ),
    case(
        {f"{FSX}.storage_capacity_gib": 3600},
        f"{FSX}.storage_capacity_gib",
        "not valid for PERSISTENT_2",
    ),
    case(
        {f"{FSX}.storage_capacity_gib": 4_802_400},
        f"{FSX}.storage_capacity_gib",
        "more than the FSx maximum",
    ),
    case(
        {f"{FSX}.storage_capacity_gib": 0},
        f"{FSX}.storage_capacity_gib",
        "greater than or equal to 1",
    ),
    case(
        {f"{FSX}.throughput_per_tib": 200}, f"{FSX}.throughput_per_tib", "use 125, 250, 500 or 1000"
    ),
    case({f"{FSX}.compression": "GZIP"}, f"{FSX}.compression", "'GZIP' is not allowed"),
    case({f"{FSX}.lustre_version": "2.10"}, f"{FSX}.lustre_version", "use '2.12' or '2.15'"),
    case(
        {f"{FSX}.metadata_iops": 2000},
        f"{FSX}.metadata_iops",
        "use 1500, 3000, 6000, 12000 or a multiple of 12000",
    ),
    case({f"{FSX}.metadata_iops": 18000}, f"{FSX}.metadata_iops", "up to 192000"),
    case({f"{FSX}.metadata_iops": 204000}, f"{FSX}.metadata_iops", "up to 192000"),
    case({f"{FSX}.mount_path": "fsx"}, f"{FSX}.mount_path", "an absolute path like /fsx"),
    case({f"{FSX}.mount_path": "/fsx/../etc"}, f"{FSX}.mount_path", "no '.', '..' or '//' parts"),
    case({f"{FSX}.mount_path": "/"}, f"{FSX}.mount_path", "is a system directory"),
    case({f"{FSX}.mount_path": "/opt/sagemaker/"}, f"{FSX}.mount_path", "is a system directory"),
    case(
        {f"{FSX}.backup_retention_days": 91},
        f"{FSX}.backup_retention_days",
        "less than or equal to 90",
    ),
    case({f"{FSX}.kms_key_arn": "alias/fsx"}, f"{FSX}.kms_key_arn", "is not valid"),
    case(
        {f"{FSX}.removal_policy": "snapshot"}, f"{FSX}.removal_policy", "use 'retain' or 'destroy'"
    ),
    case({f"{FSX}.file_system_id": "fs-1"}, f"{FSX}.file_system_id", "a file system id"),
    case({f"{FSX}.mount_name": "Mount_1"}, f"{FSX}.mount_name", "is not valid"),
    case({f"{FSX}.dns_name": "fsx.example.com"}, f"{FSX}.dns_name", "is not valid"),
    case({f"{FSX}.size": 1200}, f"{FSX}.size", "unknown key"),
    # data repository associations
    case(
        {f"{DRA}[0].file_system_path": "datasets"},
        f"{DRA}[0].file_system_path",
        "an absolute path like /fsx",
    ),
    case(
        {f"{DRA}[0].file_system_path": "/a//b"},
        f"{DRA}[0].file_system_path",
        "no '.', '..' or '//' parts",
    ),
    case({f"{DRA}[0].s3_prefix": "/datasets/"}, f"{DRA}[0].s3_prefix", "with no leading '/'"),
    case(
        {f"{DRA}[0].s3_prefix": "datasets"}, f"{DRA}[0].s3_prefix", "an S3 key prefix ending in '/'"
    ),
    case({f"{DRA}[0].s3_prefix": "a//b/"}, f"{DRA}[0].s3_prefix", "an S3 key prefix"),
    case(
        {f"{DRA}[0].s3_prefix": DELETE, f"{DRA}[0].s3_uri": "https://b/x"},
        f"{DRA}[0].s3_uri",
        "an S3 URI like",
    ),
    case(
        {f"{DRA}[0].auto_import": ["NEW", "MODIFIED"]},
        f"{DRA}[0].auto_import[1]",
        "'MODIFIED' is not allowed",
    ),
    case({f"{DRA}[0].auto_export": ["NEW", "NEW"]}, f"{DRA}[0].auto_export", "must not repeat"),
    case({f"{DRA}[0].path": "/x"}, f"{DRA}[0].path", "unknown key"),
    # cluster
    case({"cluster": DELETE}, "cluster.instance_groups", "required key is missing"),
    case({"cluster.name": "my_cluster"}, "cluster.name", "letters, digits and hyphens"),
    case({"cluster.node_recovery": "Manual"}, "cluster.node_recovery", "use 'Automatic' or 'None'"),
    case(
        {"cluster.node_provisioning_mode": "Eager"},
        "cluster.node_provisioning_mode",
        "'Eager' is not allowed",
    ),
    case(
        {"cluster.lifecycle_hook": "OnStart"},
        "cluster.lifecycle_hook",
        "use 'OnInitComplete' or 'OnCreate'",
    ),
    case({"cluster.execution_role_arn": "role/x"}, "cluster.execution_role_arn", "is not valid"),
    case(
        {"cluster.slurm.config_strategy": "Replace"},
        "cluster.slurm.config_strategy",
        "'Replace' is not allowed",
    ),
    case(
        {"cluster.slurm.accounting_instance_class": "r6g.large"},
        "cluster.slurm.accounting_instance_class",
        "is not valid",
    ),
    case(
        {"cluster.slurm.accounting_subnet_ids": ["subnet-x"]},
        "cluster.slurm.accounting_subnet_ids[0]",
        "a subnet id",
    ),
    case({"cluster.slurm.database": True}, "cluster.slurm.database", "unknown key"),
    case(
        {"cluster.tiered_storage": {"memory_percent": 19}},
        "cluster.tiered_storage.memory_percent",
        "greater than or equal to 20",
    ),
    case({G: []}, G, "at least 1 item(s) are needed"),
    case({G: {"controller": {}}}, G, "is a mapping; a list is expected here"),
    case(
        {G: [{"name": f"g{i}", "instance_type": "ml.m5.large", "count": 1} for i in range(101)]},
        G,
        "101 items; at most 100 are allowed",
    ),
    # instance groups
    case({f"{G}[2].name": "gpu_1"}, f"{G}[2].name", "letters, digits and single hyphens"),
    case({f"{G}[2].name": "g" * 64}, f"{G}[2].name", "at most 63 characters"),
    case({f"{G}[2].count": DELETE}, f"{G}[2].count", "required key is missing"),
    case({f"{G}[2].count": -1}, f"{G}[2].count", "greater than or equal to 0"),
    case({f"{G}[2].count": 6759}, f"{G}[2].count", "less than or equal to 6758"),
    case({f"{G}[2].count": "two"}, f"{G}[2].count", "expected a number, got text ('two')"),
    case(
        {f"{G}[2].instance_type": "p5.48xlarge"}, f"{G}[2].instance_type", "an ml.* instance type"
    ),
    case(
        {f"{G}[2].instance_types": ["ml.p5.48xlarge"] * 2},
        f"{G}[2].instance_types",
        "must not repeat",
    ),
    case(
        {
            f"{G}[2].instance_type": DELETE,
            f"{G}[2].instance_types": [f"ml.g5.{i}xlarge" for i in range(1, 22)],
        },
        f"{G}[2].instance_types",
        "21 items; at most 20",
    ),
    case({f"{G}[2].node_type": "Worker"}, f"{G}[2].node_type", "'Worker' is not allowed"),
    case({f"{G}[2].partition": "gpu nodes"}, f"{G}[2].partition", "letters and digits, with '-'"),
    # the HyperPod API's pattern [a-zA-Z0-9](-*[a-zA-Z0-9])*: no '_', no '-' at either end
    case(
        {f"{G}[2].partition": "gpu_a"}, f"{G}[2].partition", "with '-' only between them (no '_')"
    ),
    case({f"{G}[2].partition": "-gpu"}, f"{G}[2].partition", "like gpu-p5"),
    case({f"{G}[2].partition": "gpu-"}, f"{G}[2].partition", "like gpu-p5"),
    case({f"{G}[2].partition": "p" * 65}, f"{G}[2].partition", "at most 64 characters"),
    case({f"{G}[2].threads_per_core": 3}, f"{G}[2].threads_per_core", "use 1 or 2"),
    case({f"{G}[2].ebs_volume_gb": 0}, f"{G}[2].ebs_volume_gb", "greater than or equal to 1"),
    case({f"{G}[2].ebs_volume_gb": 16385}, f"{G}[2].ebs_volume_gb", "less than or equal to 16384"),
    case({f"{G}[2].ebs_kms_key_arn": "key-1"}, f"{G}[2].ebs_kms_key_arn", "is not valid"),
    case(
        {f"{G}[2].deep_health_checks": ["GpuBurn"]},
        f"{G}[2].deep_health_checks[0]",
        "'GpuBurn' is not allowed",
    ),
    case(
        {f"{G}[2].deep_health_checks": ["InstanceStress"] * 2},
        f"{G}[2].deep_health_checks",
        "must not repeat",
    ),
    case(
        {f"{G}[2].training_plan_arn": "arn:aws:sagemaker:us-west-2:111122223333:plan/x"},
        f"{G}[2].training_plan_arn",
        "is not valid",
    ),
    case(
        {f"{G}[2].availability_zone_id": "us-west-2b"},
        f"{G}[2].availability_zone_id",
        "an AZ ID of us-west-2 like usw2-az1",
    ),
    case({f"{G}[2].image_id": "ami-XYZ"}, f"{G}[2].image_id", "an AMI id like"),
    case(
        {f"{G}[2].image_release_version": "2025.1"}, f"{G}[2].image_release_version", "is not valid"
    ),
    case({f"{G}[2].min_count": -1}, f"{G}[2].min_count", "greater than or equal to 0"),
    case(
        {f"{G}[2].capacity_type": "reserved"}, f"{G}[2].capacity_type", "use 'on_demand' or 'spot'"
    ),
    case(
        {f"{G}[2].network_interface": "ena"}, f"{G}[2].network_interface", "use 'efa' or 'efa-only'"
    ),
    case({f"{G}[2].instance_count": 2}, f"{G}[2].instance_count", "unknown key"),
    case({f"{G}[2].partitions": ["gpu"]}, f"{G}[2].partitions", "did you mean 'partition'?"),
    case(
        {f"{G}[2].scheduled_update": {"schedule": "0 3 * * SUN"}},
        f"{G}[2].scheduled_update.schedule",
        "six-field cron",
    ),
    case(
        {f"{G}[2].scheduled_update": {"schedule": "cron(0 3 * * *)"}},
        f"{G}[2].scheduled_update.schedule",
        "six-field cron",
    ),
    case(
        {f"{G}[2].scheduled_update": {"batch_percent": 10}},
        f"{G}[2].scheduled_update.schedule",
        "required key is missing",
    ),
    case(
        {f"{G}[2].scheduled_update": {"schedule": "cron(0 3 ? * SUN *)", "batch_percent": 0}},
        f"{G}[2].scheduled_update.batch_percent",
        "greater than or equal to 1",
    ),
    case(
        {f"{G}[2].scheduled_update": {"schedule": "cron(0 3 ? * SUN *)", "wait_seconds": 3601}},
        f"{G}[2].scheduled_update.wait_seconds",
        "less than or equal to 3600",
    ),
    case(
        {
            f"{G}[2].scheduled_update": {
                "schedule": "cron(0 3 ? * SUN *)",
                "rollback_alarms": [f"a{i}" for i in range(11)],
            }
        },
        f"{G}[2].scheduled_update.rollback_alarms",
        "11 items; at most 10",
    ),
    case(
        {f"{G}[2].auto_patch": {"strategy": "Always"}},
        f"{G}[2].auto_patch.strategy",
        "use 'WhenIdle' or 'WhenAllIdle'",
    ),
    case(
        {f"{G}[2].auto_patch": {"batch_count": 1}},
        f"{G}[2].auto_patch.strategy",
        "required key is missing",
    ),
    case({f"{G}[2].labels": {"bad key!": "x"}}, f"{G}[2].labels.bad key!", "is not valid"),
    case(
        {f"{G}[2].taints": [{"key": "gpu", "effect": "Evict"}]},
        f"{G}[2].taints[0].effect",
        "'Evict' is not allowed",
    ),
]

ACCEPTED = [
    {"account": "111122223333"},
    {"name": "ab"},
    {"name": "a" * 32},
    {"region": "eu-central-1", "network.availability_zone_id": "euc1-az2"},
    {"region": "us-gov-west-1", "network.availability_zone_id": "usgw1-az1"},
    {"tags": {f"k{i}": "v" for i in range(45)}},
    {"tags": {"cost-center": "4711", "team:sub": "a b/c=d+e@f"}},
    {"compliance_packs": ["AwsSolutions", "NIST80053R5", "HIPAA", "PCIDSS321"]},
    {"compliance_packs": []},
    {
        "iam.role_path": "/hyperpod/ml/",
        "iam.permissions_boundary_arn": "arn:aws:iam::111122223333:policy/boundary",
    },
    {"iam.permissions_boundary_arn": "arn:aws:iam::aws:policy/PowerUserAccess"},
    {"network.cidr": "10.10.0.0/16", "network.compute_cidr": "10.11.0.0/16"},
    {"network.cidr": "192.168.0.0/16", "network.compute_cidr": "100.64.0.0/16"},
    {
        "network.interface_endpoints": [
            "ecr.api",
            "ecr.dkr",
            "sts",
            "logs",
            "ssm",
            "ssmmessages",
            "ec2messages",
            "sagemaker.api",
        ]
    },
    {"network.nat_gateways": 1, "network.flow_logs": False},
    {f"{FSX}.storage_capacity_gib": 1200},
    {f"{FSX}.storage_capacity_gib": 2400},
    {f"{FSX}.storage_capacity_gib": 9600},
    {f"{FSX}.storage_capacity_gib": 4_800_000},
    *({f"{FSX}.throughput_per_tib": t} for t in (125, 250, 500, 1000)),
    *({f"{FSX}.metadata_iops": m} for m in (1500, 3000, 6000, 12000, 24000, 192000)),
    {f"{FSX}.compression": "NONE", f"{FSX}.lustre_version": "2.12"},
    {f"{FSX}.lustre_version": 2.15},  # unquoted in YAML
    {f"{FSX}.mount_path": "/fsx/shared"},
    {f"{FSX}.kms_key_arn": KMS, f"{FSX}.removal_policy": "destroy"},
    {f"{FSX}.kms_key_arn": "arn:aws:kms:us-west-2:111122223333:alias/fsx-key"},
    {
        f"{DRA}[0].s3_prefix": "team/raw-data/",
        f"{DRA}[0].auto_import": [],
        f"{DRA}[0].auto_export": ["NEW"],
    },
    {f"{DRA}[0].s3_prefix": DELETE, f"{DRA}[0].s3_uri": "s3://my-bucket.example"},
    {f"{DRA}[0].import_metadata_on_create": False},
    {"cluster.name": "Research-Cluster-1", "cluster.node_recovery": "None"},
    {"cluster.node_provisioning_mode": None, "cluster.lifecycle_hook": "OnInitComplete"},
    {"cluster.execution_role_arn": "arn:aws:iam::111122223333:role/path/hyperpod-exec"},
    {"cluster.slurm": {}},
    {f"{G}[2].name": "gpu-1--a", f"{G}[2].partition": "gpu--a-1"},
    {f"{G}[2].partition": "P" * 64},
    {f"{G}[2].name": "g" * 63},
    {f"{G}[2].count": 0},
    {f"{G}[2].count": 6758},
    {f"{G}[2].threads_per_core": 1, f"{G}[2].ebs_volume_gb": 1},
    {f"{G}[2].threads_per_core": 2, f"{G}[2].ebs_volume_gb": 16384, f"{G}[2].ebs_kms_key_arn": KMS},
    {f"{G}[2].deep_health_checks": ["InstanceStress", "InstanceConnectivity"]},
    {f"{G}[2].image_id": "ami-0123456789abcdef0", f"{G}[2].network_interface": "efa-only"},
    {f"{G}[2].execution_role_arn": "arn:aws:iam::111122223333:role/gpu"},
    {f"{G}[2].scheduled_update": {"schedule": "cron(0 3 ? * SUN *)"}},
    {
        f"{G}[2].scheduled_update": {
            "schedule": "cron(30 2 1 * ? *)",
            "batch_count": 1,
            "wait_seconds": 3600,
            "rollback_alarms": [f"a{i}" for i in range(10)],
        }
    },
    {f"{G}[2].auto_patch": {"strategy": "WhenAllIdle", "batch_percent": 100, "wait_seconds": 0}},
]


@pytest.mark.parametrize(("changes", "path", "fragment"), REJECTED)
def test_rejected(check, changes: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(check(changes), path, fragment)


@pytest.mark.parametrize(
    "changes", ACCEPTED, ids=lambda c: ",".join(c) if isinstance(c, dict) else None
)
def test_accepted(check, changes: dict[str, Any]) -> None:
    assert [str(i) for i in check(changes)] == []


def test_unquoted_versions_read_as_the_version_they_show(project_root) -> None:
    cfg = parse(build({f"{FSX}.lustre_version": 2.12}), project_root)
    assert cfg.storage.fsx.lustre_version == "2.12"
    eks = parse(build({"eks.kubernetes_version": 1.3}, base="eks"), project_root)
    assert eks.eks is not None and eks.eks.kubernetes_version == "1.30"


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_kubernetes_version_of_the_facts_table_is_accepted(project_root, version) -> None:
    # the config's choices are facts.versions.SUPPORTED_KUBERNETES_VERSIONS itself (no copy)
    eks = parse(build({"eks.kubernetes_version": version}, base="eks"), project_root)
    assert eks.eks is not None and eks.eks.kubernetes_version == version


def test_a_kubernetes_version_outside_the_facts_table_is_refused(check) -> None:
    found = check({"eks.kubernetes_version": "1.29"}, base="eks")
    listed = " or ".join([", ".join(repr(v) for v in SUPPORTED_KUBERNETES_VERSIONS[:-1]),
                          repr(SUPPORTED_KUBERNETES_VERSIONS[-1])])  # fmt: skip
    assert_issue(found, "eks.kubernetes_version", listed)


def test_partition_names_follow_the_cloudformation_schema() -> None:
    """The partition pattern accepts exactly what AWS::SageMaker::Cluster's schema accepts
    (cfn-lint's copy of the registry schema), over every short name of letters, '-' and '_'."""
    import itertools
    import json
    import re
    from pathlib import Path

    import cfnlint

    from hyperpod_cdk import facts

    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    providers = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    schema = json.loads(
        (schemas / "resources" / f"{providers['AWS::SageMaker::Cluster']}.json").read_text()
    )
    item = schema["definitions"]["ClusterSlurmConfig"]["properties"]["PartitionNames"]["items"]
    theirs, ours = re.compile(item["pattern"]), re.compile(facts.PARTITION_NAME_PATTERN)
    for size in range(1, 6):
        for letters in itertools.product("a9-_", repeat=size):
            name = "".join(letters)
            assert bool(theirs.match(name)) == bool(ours.match(name)), name
    assert item["maxLength"] >= facts.PARTITION_NAME_MAX

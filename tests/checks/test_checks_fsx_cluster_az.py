"""HyperPod-FsxClusterAz: an FSx file system of the app sits in the AZ (ID) of the subnets of the
HyperPod cluster that uses it."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from checks_testkit import (
    COMPLIANT,
    NON_COMPLIANT,
    NOT_APPLICABLE,
    check,
    new_app,
    resource,
    retain,
    stack,
)

from hyperpod_cdk.compliance.rules import FSX_CLUSTER_AZ


def subnet(scope: cdk.Stack, name: str, **placement: str) -> cdk.CfnResource:
    return resource(
        scope, name, "AWS::EC2::Subnet", {"VpcId": "vpc-1", "CidrBlock": "10.1.0.0/16", **placement}
    )


def file_system(scope: cdk.Stack, subnet_id: Any) -> cdk.CfnResource:
    fs = resource(
        scope,
        "FileSystem",
        "AWS::FSx::FileSystem",
        {"FileSystemType": "LUSTRE", "StorageCapacity": 1200, "SubnetIds": [subnet_id]},
    )
    retain(fs)
    return fs


def cluster(
    scope: cdk.Stack, name: str, subnet_id: Any, *, mounts: cdk.CfnResource | None = None
) -> None:
    group: dict[str, Any] = {"InstanceGroupName": "gpu", "InstanceCount": 1}
    if mounts is not None:
        group["InstanceStorageConfigs"] = [
            {"FsxLustreConfig": {"DnsName": mounts.get_att("DNSName"), "MountName": "abc"}}
        ]
    resource(
        scope,
        name,
        "AWS::SageMaker::Cluster",
        {
            "VpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": [subnet_id]},
            "InstanceGroups": [group],
        },
    )


def test_a_file_system_in_the_cluster_subnet_complies() -> None:
    app = new_app()
    network = stack(app, "network")
    compute = subnet(network, "Compute", AvailabilityZoneId="usw2-az2")
    fs = file_system(stack(app, "storage"), compute.ref)
    cluster(stack(app, "cluster"), "Cluster", compute.ref, mounts=fs)
    checked = check(app)
    assert checked.verdict(FSX_CLUSTER_AZ, fs) == COMPLIANT
    assert not checked.failed


def test_another_subnet_of_the_same_az_id_complies() -> None:
    app = new_app()
    network = stack(app, "network")
    compute = subnet(network, "Compute", AvailabilityZoneId="usw2-az2")
    storage_subnet = subnet(network, "Storage", AvailabilityZoneId="usw2-az2")
    fs = file_system(stack(app, "storage"), storage_subnet.ref)
    cluster(stack(app, "cluster"), "Cluster", compute.ref)
    assert check(app).verdict(FSX_CLUSTER_AZ, fs) == COMPLIANT


def test_a_file_system_in_another_az_is_a_finding() -> None:
    app = new_app()
    network = stack(app, "network")
    compute = subnet(network, "Compute", AvailabilityZoneId="usw2-az2")
    elsewhere = subnet(network, "Elsewhere", AvailabilityZoneId="usw2-az3")
    fs = file_system(stack(app, "storage"), elsewhere.ref)
    cluster(stack(app, "cluster"), "Cluster", compute.ref, mounts=fs)
    checked = check(app)
    assert checked.verdict(FSX_CLUSTER_AZ, fs) == NON_COMPLIANT
    assert checked.found(FSX_CLUSTER_AZ, fs)


def test_az_names_compare_with_names() -> None:
    app = new_app()
    network = stack(app, "network")
    compute = subnet(network, "Compute", AvailabilityZone="us-west-2b")
    elsewhere = subnet(network, "Elsewhere", AvailabilityZone="us-west-2c")
    fs = file_system(stack(app, "storage"), elsewhere.ref)
    cluster(stack(app, "cluster"), "Cluster", compute.ref)
    assert check(app).verdict(FSX_CLUSTER_AZ, fs) == NON_COMPLIANT


def test_only_the_clusters_that_mount_the_file_system_count() -> None:
    app = new_app()
    network = stack(app, "network")
    az2 = subnet(network, "Az2", AvailabilityZoneId="usw2-az2")
    az3 = subnet(network, "Az3", AvailabilityZoneId="usw2-az3")
    fs = file_system(stack(app, "storage"), az2.ref)
    clusters = stack(app, "cluster")
    cluster(clusters, "Mounts", az2.ref, mounts=fs)
    cluster(clusters, "Other", az3.ref)
    checked = check(app)
    assert checked.verdict(FSX_CLUSTER_AZ, fs) == COMPLIANT
    assert not checked.failed


def test_without_a_cluster_or_with_adopted_subnets_it_is_not_applicable() -> None:
    app = new_app()
    network = stack(app, "network")
    compute = subnet(network, "Compute", AvailabilityZoneId="usw2-az2")
    alone = file_system(stack(app, "storage"), compute.ref)
    assert check(app).verdict(FSX_CLUSTER_AZ, alone) == NOT_APPLICABLE

    # an adopted subnet (a literal id): its AZ is not in the app; the account preflight checks it
    app = new_app()
    network = stack(app, "network")
    compute = subnet(network, "Compute", AvailabilityZoneId="usw2-az2")
    adopted = file_system(stack(app, "storage"), "subnet-0123456789abcdef0")
    cluster(stack(app, "cluster"), "Cluster", compute.ref)
    checked = check(app)
    assert checked.verdict(FSX_CLUSTER_AZ, adopted) == NOT_APPLICABLE
    assert not checked.failed


def test_the_same_adopted_subnet_on_both_sides_complies() -> None:
    app = new_app()
    fs = file_system(stack(app, "storage"), "subnet-0123456789abcdef0")
    cluster(stack(app, "cluster"), "Cluster", "subnet-0123456789abcdef0")
    assert check(app).verdict(FSX_CLUSTER_AZ, fs) == COMPLIANT

"""Preflight checks of adopted resources: VPC, subnets, security groups, FSx, EKS cluster."""

from __future__ import annotations

import pytest
from ops_testkit import (
    StubbedAws,
    by_name,
    eks_cluster,
    environment,
    file_system,
    security_group,
    subnet,
    vpc,
)

from hyperpod_ops.adopted import (
    check_eks_cluster,
    check_file_system,
    check_security_groups,
    check_subnets,
    check_vpc,
)

# the ids of config/examples/existing-vpc-fsx.yaml
VPC = "vpc-0a1b2c3d4e5f67890"
SUBNET = "subnet-0a1b2c3d4e5f67890"
SG = "sg-0a1b2c3d4e5f67890"
FS = "fs-0a1b2c3d4e5f67890"
DNS = f"{FS}.fsx.us-west-2.amazonaws.com"
# and of config/examples/eks-existing-cluster.yaml
EKS_VPC = "vpc-0123456789abcdef0"
EKS_SG = "sg-0123456789abcdef0"


# -- created resources are skipped -----------------------------------------------------------


def test_a_config_that_adopts_nothing_skips_every_adoption_check(aws: StubbedAws) -> None:
    config = environment("default")
    checks = [
        *check_vpc(config, aws("ec2")),
        *check_subnets(config, aws("ec2")),
        *check_security_groups(config, aws("ec2")),
        *check_file_system(config, aws("fsx"), aws("ec2")),
        *check_eks_cluster(config, aws("eks")),
    ]
    assert [c.outcome for c in checks] == ["skip"] * 5


def test_a_created_eks_cluster_is_skipped(aws: StubbedAws) -> None:
    (check,) = check_eks_cluster(environment("eks-minimal"), aws("eks"))
    assert check.outcome == "skip" and "eks-minimal-eks" in check.detail


# -- VPC -------------------------------------------------------------------------------------


def test_an_existing_vpc_passes(aws: StubbedAws) -> None:
    vpc(aws, VPC)
    (check,) = check_vpc(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "pass"


def test_a_missing_vpc_fails(aws: StubbedAws) -> None:
    aws.error("ec2", "describe_vpcs", "InvalidVpcID.NotFound", {"VpcIds": [VPC]})
    (check,) = check_vpc(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and "does not exist" in check.detail
    assert check.fix and "network.vpc_id" in check.fix


def test_a_vpc_that_is_not_available_fails(aws: StubbedAws) -> None:
    vpc(aws, VPC, state="pending")
    (check,) = check_vpc(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and "pending" in check.detail


# -- subnets ---------------------------------------------------------------------------------


def test_the_compute_subnet_in_the_vpc_and_az_passes(aws: StubbedAws) -> None:
    subnet(aws, SUBNET, VPC, "usw2-az2")
    (check,) = check_subnets(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "pass", check


def test_a_missing_subnet_fails(aws: StubbedAws) -> None:
    aws.error("ec2", "describe_subnets", "InvalidSubnetID.NotFound", {"SubnetIds": [SUBNET]})
    (check,) = check_subnets(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and "network.compute_subnet_id" in check.detail


@pytest.mark.parametrize(
    ("vpc_id", "az_id", "public", "problem"),
    [
        ("vpc-0ffffffffffffffff", "usw2-az2", False, "not in vpc-0a1b2c3d4e5f67890"),
        (VPC, "usw2-az1", False, "it is in usw2-az1, not in usw2-az2"),
        (VPC, "usw2-az2", True, "must be private"),
    ],
    ids=["other-vpc", "other-az", "public"],
)
def test_a_subnet_elsewhere_fails(
    aws: StubbedAws, vpc_id: str, az_id: str, public: bool, problem: str
) -> None:
    subnet(aws, SUBNET, vpc_id, az_id, public=public)
    (check,) = check_subnets(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and problem in check.detail


def test_additional_compute_subnets_are_checked_in_their_az(aws: StubbedAws) -> None:
    other = "subnet-0b1b2c3d4e5f67890"
    config = environment(
        "existing-vpc-fsx",
        {
            "network.additional_compute_subnet_ids": {"usw2-az3": other},
            "cluster.instance_groups[2].availability_zone_id": "usw2-az3",
        },
    )
    subnet(aws, SUBNET, VPC, "usw2-az2")
    subnet(aws, other, VPC, "usw2-az2")  # wrong AZ
    checks = by_name(check_subnets(config, aws("ec2")))
    assert checks[f"subnet {SUBNET}"].outcome == "pass"
    assert checks[f"subnet {other}"].outcome == "fail"
    assert "not in usw2-az3" in checks[f"subnet {other}"].detail


def test_eks_subnets_of_a_created_cluster_need_two_azs(aws: StubbedAws) -> None:
    first, second = "subnet-0c1b2c3d4e5f67890", "subnet-0d1b2c3d4e5f67890"
    config = environment(
        "eks-minimal",
        {
            "network.vpc_id": VPC,
            "network.compute_subnet_id": SUBNET,
            "network.eks_subnet_ids": [first, second],
            "network.eks_availability_zone_ids": [],
            "storage.fsx.enabled": False,
        },
    )
    subnet(aws, SUBNET, VPC)
    subnet(aws, first, VPC, "usw2-az1")
    subnet(aws, second, VPC, "usw2-az1")
    checks = by_name(check_subnets(config, aws("ec2")))
    assert checks["eks subnet ids"].outcome == "fail"
    assert "two AZs" in checks["eks subnet ids"].detail


# -- security groups -------------------------------------------------------------------------


def test_a_group_with_both_self_rules_passes(aws: StubbedAws) -> None:
    security_group(aws, SG, VPC)
    (check,) = check_security_groups(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "pass"


def test_a_missing_group_fails(aws: StubbedAws) -> None:
    aws.error("ec2", "describe_security_groups", "InvalidGroup.NotFound", {"GroupIds": [SG]})
    (check,) = check_security_groups(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and "does not exist" in check.detail


@pytest.mark.parametrize(
    ("ingress", "egress", "missing"),
    [
        (False, True, "no inbound all-traffic rule from itself"),
        (True, False, "no outbound all-traffic rule to itself"),
    ],
)
def test_a_group_without_a_self_rule_fails_the_efa_rule(
    aws: StubbedAws, ingress: bool, egress: bool, missing: str
) -> None:
    security_group(aws, SG, VPC, ingress=ingress, egress=egress)
    (check,) = check_security_groups(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and missing in check.detail
    assert check.fix and "authorize-security-group-ingress" in check.fix


def test_a_self_rule_for_one_port_only_does_not_count(aws: StubbedAws) -> None:
    aws.stub("ec2").add_response(
        "describe_security_groups",
        {
            "SecurityGroups": [
                {
                    "GroupId": SG,
                    "VpcId": VPC,
                    "IpPermissions": [
                        {
                            "IpProtocol": "tcp",
                            "FromPort": 22,
                            "ToPort": 22,
                            "UserIdGroupPairs": [{"GroupId": SG}],
                        }  # fmt: skip
                    ],
                    "IpPermissionsEgress": [
                        {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": SG}]}
                    ],
                }
            ]
        },
        {"GroupIds": [SG]},
    )
    (check,) = check_security_groups(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and "inbound" in check.detail


def test_a_group_of_another_vpc_fails(aws: StubbedAws) -> None:
    security_group(aws, SG, "vpc-0ffffffffffffffff")
    (check,) = check_security_groups(environment("existing-vpc-fsx"), aws("ec2"))
    assert check.outcome == "fail" and "belongs to vpc-0ffffffffffffffff" in check.detail


# -- FSx -------------------------------------------------------------------------------------


def _fs(aws: StubbedAws, **overrides: str) -> None:
    values = {"vpc_id": VPC, "subnet_id": SUBNET, "dns_name": DNS, "mount_name": "abcdefgh"}
    values.update(overrides)
    file_system(aws, FS, **values)


def test_the_adopted_file_system_passes(aws: StubbedAws) -> None:
    _fs(aws)
    subnet(aws, SUBNET, VPC, "usw2-az2")
    (check,) = check_file_system(environment("existing-vpc-fsx"), aws("fsx"), aws("ec2"))
    assert check.outcome == "pass", check


def test_a_missing_file_system_fails(aws: StubbedAws) -> None:
    aws.error("fsx", "describe_file_systems", "FileSystemNotFound", {"FileSystemIds": [FS]})
    (check,) = check_file_system(environment("existing-vpc-fsx"), aws("fsx"), aws("ec2"))
    assert check.outcome == "fail" and "does not exist" in check.detail


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"vpc_id": "vpc-0ffffffffffffffff"}, "not vpc-0a1b2c3d4e5f67890"),
        ({"mount_name": "zzzzzzzz"}, "mount name is zzzzzzzz"),
        ({"dns_name": "fs-0ffffffffffffffff.fsx.us-west-2.amazonaws.com"}, "DNS name is"),
        ({"lifecycle": "CREATING"}, "it is CREATING"),
        ({"fs_type": "OPENZFS"}, "not Lustre"),
    ],
    ids=["vpc", "mount-name", "dns-name", "lifecycle", "type"],
)
def test_a_file_system_that_does_not_match_fails(
    aws: StubbedAws, overrides: dict[str, str], problem: str
) -> None:
    _fs(aws, **overrides)
    subnet(aws, SUBNET, VPC, "usw2-az2")
    (check,) = check_file_system(environment("existing-vpc-fsx"), aws("fsx"), aws("ec2"))
    assert check.outcome == "fail" and problem in check.detail


def test_a_file_system_in_another_az_fails(aws: StubbedAws) -> None:
    other = "subnet-0e1b2c3d4e5f67890"
    _fs(aws, subnet_id=other)
    subnet(aws, other, VPC, "usw2-az1")
    (check,) = check_file_system(environment("existing-vpc-fsx"), aws("fsx"), aws("ec2"))
    assert check.outcome == "fail" and "usw2-az1" in check.detail


# -- EKS -------------------------------------------------------------------------------------


def test_the_adopted_eks_cluster_passes(aws: StubbedAws) -> None:
    eks_cluster(aws, "shared-platform", vpc_id=EKS_VPC, version="1.33")
    checks = check_eks_cluster(environment("eks-existing-cluster"), aws("eks"))
    assert [c.outcome for c in checks] == ["pass", "pass", "pass"]


def test_a_missing_eks_cluster_fails(aws: StubbedAws) -> None:
    aws.error("eks", "describe_cluster", "ResourceNotFoundException", {"name": "shared-platform"})
    checks = by_name(check_eks_cluster(environment("eks-existing-cluster"), aws("eks")))
    assert checks["eks cluster shared-platform"].outcome == "fail"
    assert checks["eks authentication mode"].outcome == "skip"


@pytest.mark.parametrize("mode", ["CONFIG_MAP", None])
def test_config_map_authentication_fails(aws: StubbedAws, mode: str | None) -> None:
    eks_cluster(aws, "shared-platform", vpc_id=EKS_VPC, mode=mode)
    check = by_name(check_eks_cluster(environment("eks-existing-cluster"), aws("eks")))[
        "eks authentication mode"
    ]
    assert check.outcome == "fail" and "CONFIG_MAP" in check.detail
    assert check.fix and "authenticationMode=API_AND_CONFIG_MAP" in check.fix


def test_api_authentication_passes(aws: StubbedAws) -> None:
    eks_cluster(aws, "shared-platform", vpc_id=EKS_VPC, mode="API")
    check = by_name(check_eks_cluster(environment("eks-existing-cluster"), aws("eks")))[
        "eks authentication mode"
    ]
    assert check.outcome == "pass"


def test_another_kubernetes_version_fails(aws: StubbedAws) -> None:
    eks_cluster(aws, "shared-platform", vpc_id=EKS_VPC, version="1.32")
    check = by_name(check_eks_cluster(environment("eks-existing-cluster"), aws("eks")))[
        "eks kubernetes version"
    ]
    assert check.outcome == "fail" and "runs Kubernetes 1.32" in check.detail
    assert check.fix and 'kubernetes_version: "1.32"' in check.fix


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"vpc_id": "vpc-0ffffffffffffffff"}, "not vpc-0123456789abcdef0"),
        ({"vpc_id": EKS_VPC, "status": "CREATING"}, "it is CREATING"),
        ({"vpc_id": EKS_VPC, "account": "444455556666"}, "its ARN is"),
    ],
    ids=["vpc", "status", "account"],
)
def test_an_eks_cluster_elsewhere_fails(
    aws: StubbedAws, kwargs: dict[str, str], problem: str
) -> None:
    eks_cluster(aws, "shared-platform", **kwargs)
    check = by_name(check_eks_cluster(environment("eks-existing-cluster"), aws("eks")))[
        "eks cluster shared-platform"
    ]
    assert check.outcome == "fail" and problem in check.detail

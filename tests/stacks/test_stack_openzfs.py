"""storage.openzfs: the homes' FSx for OpenZFS file system in the storage stack (created or
adopted), mounted by HyperPod on every Slurm node next to Lustre, its NFS export, network rules,
retention and pinned logical ids; and the construct's own guards."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match
from stack_testkit import get_att, ref

from hyperpod_cdk import (
    ClusterConfig,
    HyperPodCluster,
    LifecycleRef,
    OpenZfsConfig,
    OpenZfsFileSystem,
    OpenZfsHandle,
)
from hyperpod_cdk.storage.openzfs import NFS_EXPORT_OPTIONS

Z = "storage.openzfs"
FSX = "AWS::FSx::FileSystem"
DNS = "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"
ADOPTED = {Z: {"file_system_id": "fs-0123456789abcdef0", "dns_name": DNS}}
CREATED: dict[str, Any] = {Z: {}}
FLAG = {"destroy_data": "true"}
# NFS (FSx for OpenZFS user guide, "Amazon VPC security groups")
NFS_RULES = {
    (protocol, first, last)
    for protocol in ("tcp", "udp")
    for first, last in ((111, 111), (2049, 2049), (20001, 20003))
}


@pytest.fixture(scope="module")
def created(build_variant):
    return build_variant(CREATED)


@pytest.fixture(scope="module")
def adopted(build_variant):
    return build_variant(ADOPTED)


def openzfs(synth) -> dict[str, Any]:
    return synth.template("storage")["Resources"]["OpenZfsFileSystem"]


def props(synth) -> dict[str, Any]:
    return openzfs(synth)["Properties"]


def storage_configs(synth) -> dict[str, list[dict[str, Any]]]:
    groups = synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"][
        "InstanceGroups"
    ]
    return {g["InstanceGroupName"]: g.get("InstanceStorageConfigs", []) for g in groups}


def egress_rules(synth) -> set[tuple[str, int, int, str]]:
    (_, group) = [
        (k, r)
        for k, r in synth.resources("network", "AWS::EC2::SecurityGroup").items()
        if k.startswith("NetworkNodeSecurityGroup")
    ][0]
    return {
        (r["IpProtocol"], r.get("FromPort", -1), r.get("ToPort", -1), r.get("CidrIp", ""))
        for r in group["Properties"].get("SecurityGroupEgress", [])
    }


# -- the created file system --------------------------------------------------------------------


def test_the_file_system_is_openzfs_on_ssd_with_the_config_defaults(created) -> None:
    p = props(created)
    assert (p["FileSystemType"], p["StorageType"], p["StorageCapacity"]) == ("OPENZFS", "SSD", 1024)
    zfs = p["OpenZFSConfiguration"]
    assert zfs["DeploymentType"] == "SINGLE_AZ_2"
    assert zfs["ThroughputCapacity"] == 160  # the smallest of SINGLE_AZ_2
    assert zfs["RootVolumeConfiguration"]["DataCompressionType"] == "LZ4"


def test_daily_backups_are_kept_with_their_tags(created, build_variant) -> None:
    zfs = props(created)["OpenZFSConfiguration"]
    assert zfs["AutomaticBackupRetentionDays"] == 7
    assert zfs["DailyAutomaticBackupStartTime"] == "05:00"
    assert zfs["CopyTagsToBackups"] is True
    none = props(build_variant({Z: {"backup_retention_days": 0}}, nag=False))
    # 0 written out: FSx for OpenZFS keeps 30 days when the property is missing
    assert none["OpenZFSConfiguration"]["AutomaticBackupRetentionDays"] == 0
    assert "DailyAutomaticBackupStartTime" not in none["OpenZFSConfiguration"]


def test_every_knob_comes_from_the_config(build_variant) -> None:
    synth = build_variant(
        {
            Z: {
                "deployment_type": "SINGLE_AZ_HA_1",
                "throughput_mbps": 512,
                "storage_capacity_gib": 2048,
                "compression": "ZSTD",
                "backup_retention_days": 30,
            }
        },
        nag=False,
    )
    p = props(synth)
    zfs = p["OpenZFSConfiguration"]
    assert p["StorageCapacity"] == 2048
    assert (zfs["DeploymentType"], zfs["ThroughputCapacity"]) == ("SINGLE_AZ_HA_1", 512)
    assert zfs["RootVolumeConfiguration"]["DataCompressionType"] == "ZSTD"
    assert zfs["AutomaticBackupRetentionDays"] == 30


def test_the_file_system_is_in_the_hyperpod_subnet_and_the_efa_group(created) -> None:
    p = created.resolve(props(created))
    lustre = created.resolve(created.template("storage")["Resources"]["FileSystem"]["Properties"])
    # the Lustre file system's subnet and group: the HyperPod subnet and the nodes' EFA group
    assert p["SubnetIds"] == lustre["SubnetIds"]
    assert len(p["SubnetIds"]) == 1
    assert p["SecurityGroupIds"] == lustre["SecurityGroupIds"]
    assert p["SecurityGroupIds"][0]["Fn::GetAtt"][0].startswith("NetworkNodeSecurityGroup")


def test_the_file_system_waits_for_the_group_rules(created) -> None:
    # the group's rules are separate resources in the network stack: the stack waits for them
    assert "network" in created.dependencies("storage")


def test_the_root_volume_is_exported_to_the_hyperpod_subnets_only_without_root_squash(
    created, build_variant
) -> None:
    exports = props(created)["OpenZFSConfiguration"]["RootVolumeConfiguration"]["NfsExports"]
    assert exports == [
        {"ClientConfigurations": [{"Clients": "10.1.0.0/16", "Options": list(NFS_EXPORT_OPTIONS)}]}
    ]
    assert NFS_EXPORT_OPTIONS == ("rw", "crossmnt", "no_root_squash")
    two_azs = build_variant(
        {"network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"}, **CREATED}, nag=False
    )
    clients = props(two_azs)["OpenZFSConfiguration"]["RootVolumeConfiguration"]["NfsExports"][0][
        "ClientConfigurations"
    ]
    assert [c["Clients"] for c in clients] == ["10.1.0.0/16", "10.2.0.0/16"]


def test_configured_nfs_clients_replace_the_subnets(build_variant) -> None:
    synth = build_variant({Z: {"nfs_client_cidrs": ["10.0.0.0/8"]}}, nag=False)
    clients = props(synth)["OpenZFSConfiguration"]["RootVolumeConfiguration"]["NfsExports"][0][
        "ClientConfigurations"
    ]
    assert [c["Clients"] for c in clients] == ["10.0.0.0/8"]


def test_the_file_system_is_encrypted_with_a_rotating_retained_key_of_its_own(created) -> None:
    resources = created.template("storage")["Resources"]
    assert props(created)["KmsKeyId"] == ref("OpenZfsKey38766273")
    key = resources["OpenZfsKey38766273"]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    assert (key["DeletionPolicy"], key["UpdateReplacePolicy"]) == ("Retain", "Retain")
    # not the Lustre file system's key
    assert props(created)["KmsKeyId"] != resources["FileSystem"]["Properties"]["KmsKeyId"]


def test_the_file_system_uses_the_configured_kms_key(build_variant) -> None:
    arn = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    synth = build_variant({Z: {"kms_key_arn": arn}}, nag=False)
    assert props(synth)["KmsKeyId"] == "1234abcd-12ab-34cd-56ef-1234567890ab"
    assert not [k for k in synth.resources("storage", "AWS::KMS::Key") if k.startswith("OpenZfs")]


def test_logical_ids_are_pinned(created) -> None:
    resources = created.template("storage")["Resources"]
    assert resources["OpenZfsFileSystem"]["Type"] == FSX
    assert resources["OpenZfsKey38766273"]["Type"] == "AWS::KMS::Key"


def test_outputs_name_the_file_system(created) -> None:
    outputs = created.outputs("storage")
    assert outputs["OpenZfsFileSystemId"]["Value"] == ref("OpenZfsFileSystem")
    assert outputs["OpenZfsDnsName"]["Value"] == get_att("OpenZfsFileSystem", "DNSName")


# -- retention -------------------------------------------------------------------------------------


def test_the_file_system_is_retained_by_default(created) -> None:
    resource = openzfs(created)
    assert (resource["DeletionPolicy"], resource["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert created.artifact("storage").termination_protection is True


def test_destroy_needs_the_flag_too(build_variant) -> None:
    destroy = {Z: {"removal_policy": "destroy"}}
    kept = build_variant(destroy)
    assert openzfs(kept)["DeletionPolicy"] == "Retain"
    assert kept.artifact("storage").termination_protection is True
    Annotations.from_stack(kept.stack("storage")).has_warning(
        "/ml-research-storage",
        Match.string_like_regexp("storage.openzfs.removal_policy is destroy.*destroy_data=true"),
    )
    flag_only = build_variant(CREATED, context=FLAG)
    assert openzfs(flag_only)["DeletionPolicy"] == "Retain"
    assert flag_only.artifact("storage").termination_protection is True
    # both keys (cdk-nag clean: the retention finding is acknowledged with the reason)
    deleted = build_variant(destroy, context=FLAG)
    resource = openzfs(deleted)
    assert (resource["DeletionPolicy"], resource["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert deleted.artifact("storage").termination_protection is False
    # the Lustre file system keeps its own removal policy
    assert deleted.template("storage")["Resources"]["FileSystem"]["DeletionPolicy"] == "Retain"


# -- HyperPod mounts it --------------------------------------------------------------------------


def test_every_slurm_group_mounts_lustre_and_openzfs_once_each(created) -> None:
    for group, configs in storage_configs(created).items():
        kinds = [next(iter(c)) for c in configs]
        assert kinds.count("FsxLustreConfig") == 1, group
        assert kinds.count("FsxOpenZfsConfig") == 1, group
        (zfs,) = [c["FsxOpenZfsConfig"] for c in configs if "FsxOpenZfsConfig" in c]
        assert zfs["MountPath"] == "/home"
        assert created.resolve(zfs["DnsName"]) == get_att("OpenZfsFileSystem", "DNSName")


def test_the_mount_path_comes_from_the_config(build_variant) -> None:
    synth = build_variant({Z: {"mount_path": "/shared/home"}}, nag=False)
    for configs in storage_configs(synth).values():
        (zfs,) = [c["FsxOpenZfsConfig"] for c in configs if "FsxOpenZfsConfig" in c]
        assert zfs["MountPath"] == "/shared/home"


def test_openzfs_alone_is_mounted_without_lustre(build_variant) -> None:
    synth = build_variant({"storage.fsx": {"enabled": False}, **CREATED}, nag=False)
    for configs in storage_configs(synth).values():
        kinds = [next(iter(c)) for c in configs]
        assert "FsxLustreConfig" not in kinds
        assert kinds.count("FsxOpenZfsConfig") == 1


def test_a_created_file_system_adds_no_network_rule(synthesized, created) -> None:
    """The file system sits in the nodes' EFA group, which allows all traffic from and to
    itself: NFS between nodes and file system needs no rule of its own."""
    assert created.template("network") == synthesized("default").template("network")


# -- adopted ---------------------------------------------------------------------------------------


def test_an_adopted_file_system_is_mounted_and_not_created(adopted) -> None:
    assert "OpenZfsFileSystem" not in adopted.template("storage")["Resources"]
    for configs in storage_configs(adopted).values():
        (zfs,) = [c["FsxOpenZfsConfig"] for c in configs if "FsxOpenZfsConfig" in c]
        assert zfs == {"DnsName": DNS, "MountPath": "/home"}
    outputs = adopted.outputs("storage")
    assert outputs["OpenZfsFileSystemId"]["Value"] == "fs-0123456789abcdef0"
    assert outputs["OpenZfsDnsName"]["Value"] == DNS


def test_nodes_reach_an_adopted_file_system_on_the_nfs_ports(adopted, synthesized) -> None:
    added = egress_rules(adopted) - egress_rules(synthesized("default"))
    assert {(p, a, b) for p, a, b, _ in added} == NFS_RULES
    assert {cidr for *_, cidr in added} == {"0.0.0.0/0"}


def test_all_egress_needs_no_nfs_rule(build_variant) -> None:
    base = build_variant({"network.node_egress": "all"}, nag=False)
    synth = build_variant({"network.node_egress": "all", **ADOPTED}, nag=False)
    assert synth.template("network") == base.template("network")


# -- the constructs on their own -----------------------------------------------------------------


def _stack() -> tuple[cdk.Stack, ec2.ISubnet, ec2.ISecurityGroup]:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="111122223333", region="us-west-2"))
    subnet = ec2.Subnet.from_subnet_id(stack, "Subnet", "subnet-0a1b2c3d4e5f67890")
    group = ec2.SecurityGroup.from_security_group_id(stack, "Group", "sg-0a1b2c3d4e5f67890")
    return stack, subnet, group


def test_an_adopted_subnet_needs_the_client_cidrs() -> None:
    stack, subnet, group = _stack()
    with pytest.raises(ValueError, match="has no known CIDR: pass client_cidrs"):
        OpenZfsFileSystem(
            stack, "Z", config=OpenZfsConfig(), subnet=subnet, security_groups=[group]
        )
    made = OpenZfsFileSystem(
        stack,
        "Z2",
        config=OpenZfsConfig(),
        subnet=subnet,
        security_groups=[group],
        client_cidrs=["172.31.0.0/20"],
    )
    assert made.handle.mount_path == "/home"


@pytest.mark.parametrize("clients", [["*"], ["0.0.0.0/0"]])
def test_the_construct_never_exports_to_everyone(clients: list[str]) -> None:
    stack, subnet, group = _stack()
    with pytest.raises(ValueError, match="would let any host mount the homes as root"):
        OpenZfsFileSystem(
            stack,
            "Z",
            config=OpenZfsConfig(),
            subnet=subnet,
            security_groups=[group],
            client_cidrs=clients,
        )


def test_the_construct_creates_no_adopted_file_system() -> None:
    stack, subnet, group = _stack()
    config = OpenZfsConfig(file_system_id="fs-0123456789abcdef0", dns_name=DNS)
    with pytest.raises(ValueError, match="pass OpenZfsHandle.from_config"):
        OpenZfsFileSystem(stack, "Z", config=config, subnet=subnet, security_groups=[group])
    assert OpenZfsHandle.from_config(config) == OpenZfsHandle("fs-0123456789abcdef0", DNS, "/home")


@pytest.mark.parametrize("path", ["home", "/home/", "/etc", "/a//b", "/a/../etc"])
def test_the_handle_checks_its_mount_path(path: str) -> None:
    with pytest.raises(ValueError, match="mount_path"):
        OpenZfsHandle("fs-0123456789abcdef0", DNS, path)


def test_the_cluster_mounts_openzfs_on_slurm_only() -> None:
    stack, subnet, group = _stack()
    config = ClusterConfig.model_validate(
        {"instance_groups": [{"name": "gpu", "instance_type": "ml.p5.48xlarge", "count": 1}]}
    )
    with pytest.raises(ValueError, match="on Slurm clusters only"):
        HyperPodCluster(
            stack,
            "Cluster",
            config=config,
            cluster_name="c",
            execution_role_arn="arn:aws:iam::111122223333:role/nodes",
            lifecycle=LifecycleRef("s3://sagemaker-x/lifecycle/", "entrypoint.sh"),
            subnets={"usw2-az2": subnet},
            main_az_id="usw2-az2",
            security_groups=[group],
            openzfs_file_system=OpenZfsHandle("fs-0123456789abcdef0", DNS),
            eks_cluster_arn="arn:aws:eks:us-west-2:111122223333:cluster/c",
        )


# -- compliance -------------------------------------------------------------------------------------


@pytest.mark.parametrize("changes", [CREATED, ADOPTED], ids=["created", "adopted"])
def test_every_compliance_pack_accepts_the_file_system(build_variant, changes) -> None:
    from hyperpod_cdk.compliance.nag import PACKS

    # raises with the validation report's findings when one is not acknowledged
    build_variant({**changes, "compliance_packs": list(PACKS)})

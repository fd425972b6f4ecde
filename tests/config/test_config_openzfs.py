"""storage.openzfs: the users' homes on FSx for OpenZFS (config/storage.py). One failing and one
passing case per rule, each at its dotted key with the words of its message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk import facts
from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.storage import OpenZfsConfig, shared_homes_directory

Z = "storage.openzfs"
DNS = "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"
ADOPTED = {Z: {"file_system_id": "fs-0123456789abcdef0", "dns_name": DNS}}
KMS_EAST = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ADOPTED_VPC = {
    "network.vpc_id": "vpc-0123456789abcdef0",
    "network.compute_subnet_id": "subnet-0123456789abcdef0",
}


def created(**keys: Any) -> dict[str, Any]:
    return {Z: dict(keys)}


# -- defaults ---------------------------------------------------------------------------------


def test_openzfs_is_off_by_default(check) -> None:
    assert EnvironmentConfig.model_validate(build()).storage.openzfs is None
    assert check() == []


def test_an_empty_mapping_creates_the_default_file_system(check) -> None:
    assert check(created()) == []
    zfs = OpenZfsConfig()
    assert (zfs.mount_path, zfs.deployment_type, zfs.storage_capacity_gib) == (
        "/home",
        "SINGLE_AZ_2",
        1024,
    )
    assert (zfs.compression, zfs.backup_retention_days, zfs.removal_policy) == ("LZ4", 7, "retain")
    assert not zfs.adopted


@pytest.mark.parametrize(
    ("deployment_type", "smallest"),
    [("SINGLE_AZ_2", 160), ("SINGLE_AZ_HA_2", 160), ("SINGLE_AZ_1", 64), ("SINGLE_AZ_HA_1", 64)],
)
def test_the_default_throughput_is_the_smallest_of_the_deployment_type(
    deployment_type: str, smallest: int
) -> None:
    assert OpenZfsConfig(deployment_type=deployment_type).effective_throughput_mbps == smallest  # type: ignore[arg-type]
    assert OpenZfsConfig(throughput_mbps=640).effective_throughput_mbps == 640


# -- slurm only ---------------------------------------------------------------------------------


def test_openzfs_is_slurm_only(check) -> None:
    assert_issue(
        check(created(), base="eks"),
        Z,
        "applies only with orchestrator: slurm (HyperPod mounts FSx for OpenZFS, "
        "FsxOpenZfsConfig, on Slurm nodes only)",
    )


# -- deployment type, capacity, throughput ------------------------------------------------------


def test_multi_az_is_refused_with_the_reason(check) -> None:
    assert_issue(
        check(created(deployment_type="MULTI_AZ_1")),
        f"{Z}.deployment_type",
        "MULTI_AZ_1 needs subnets in two AZs",
    )
    assert check(created(deployment_type="SINGLE_AZ_HA_2")) == []


def test_an_unknown_deployment_type_lists_the_single_az_ones(check) -> None:
    assert_issue(
        check(created(deployment_type="SINGLE_AZ_3")),
        f"{Z}.deployment_type",
        "use 'SINGLE_AZ_1', 'SINGLE_AZ_2', 'SINGLE_AZ_HA_1' or 'SINGLE_AZ_HA_2'",
    )


@pytest.mark.parametrize(
    ("capacity", "valid"), [(63, False), (64, True), (524288, True), (524289, False)]
)
def test_capacity_is_64_to_524288_gib(check, capacity: int, valid: bool) -> None:
    issues = check(created(storage_capacity_gib=capacity))
    if valid:
        assert issues == []
    else:
        assert_issue(issues, f"{Z}.storage_capacity_gib", f"{capacity} is not valid")


@pytest.mark.parametrize(
    "deployment_type", ["SINGLE_AZ_1", "SINGLE_AZ_2", "SINGLE_AZ_HA_1", "SINGLE_AZ_HA_2"]
)
def test_every_throughput_of_the_deployment_type_is_valid(check, deployment_type: str) -> None:
    for mbps in facts.OPENZFS_THROUGHPUTS[deployment_type]:
        assert check(created(deployment_type=deployment_type, throughput_mbps=mbps)) == [], mbps


@pytest.mark.parametrize(
    ("deployment_type", "mbps", "allowed"),
    [
        ("SINGLE_AZ_2", 64, "160, 320, 640, 1280, 2560, 3840, 5120, 7680, 10240"),
        ("SINGLE_AZ_HA_2", 4096, "160, 320, 640, 1280, 2560, 3840, 5120, 7680, 10240"),
        ("SINGLE_AZ_1", 160, "64, 128, 256, 512, 1024, 2048, 3072, 4096"),
        ("SINGLE_AZ_HA_1", 10240, "64, 128, 256, 512, 1024, 2048, 3072, 4096"),
    ],
)
def test_a_throughput_of_another_deployment_type_is_an_error(
    check, deployment_type: str, mbps: int, allowed: str
) -> None:
    assert_issue(
        check(created(deployment_type=deployment_type, throughput_mbps=mbps)),
        f"{Z}.throughput_mbps",
        f"{mbps} is not valid for {deployment_type}; use one of {allowed}",
    )


def test_compression_is_lz4_zstd_or_none(check) -> None:
    for value in ("LZ4", "ZSTD", "NONE"):
        assert check(created(compression=value)) == []
    assert_issue(check(created(compression="GZIP")), f"{Z}.compression", "'GZIP' is not allowed")


def test_backups_are_kept_up_to_90_days(check) -> None:
    assert check(created(backup_retention_days=0)) == []
    assert check(created(backup_retention_days=90)) == []
    assert_issue(check(created(backup_retention_days=91)), f"{Z}.backup_retention_days", "91")


def test_the_key_is_in_the_environments_region(check) -> None:
    assert_issue(
        check(created(kms_key_arn=KMS_EAST)),
        f"{Z}.kms_key_arn",
        "the key is in us-east-1, the environment in us-west-2",
    )


# -- adopt or create, never both ----------------------------------------------------------------


def test_an_adopted_file_system_is_valid(check) -> None:
    assert check(ADOPTED) == []


def test_an_adopted_file_system_needs_its_dns_name(check) -> None:
    assert_issue(
        check({Z: {"file_system_id": "fs-0123456789abcdef0"}}),
        f"{Z}.dns_name",
        "is required with storage.openzfs.file_system_id",
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("deployment_type", "SINGLE_AZ_2"),
        ("storage_capacity_gib", 2048),
        ("throughput_mbps", 320),
        ("compression", "ZSTD"),
        ("backup_retention_days", 7),
        ("kms_key_arn", KMS_EAST.replace("us-east-1", "us-west-2")),
        ("removal_policy", "destroy"),
        ("nfs_client_cidrs", ["10.1.0.0/16"]),
    ],
)
def test_creation_keys_do_not_apply_to_an_adopted_file_system(check, key: str, value: Any) -> None:
    changes = {Z: {**ADOPTED[Z], key: value}}
    assert_issue(
        check(changes),
        f"{Z}.{key}",
        "applies only to a file system the app creates, not an adopted one",
    )


def test_a_dns_name_without_a_file_system_id_is_an_error(check) -> None:
    assert_issue(
        check(created(dns_name=DNS)),
        f"{Z}.dns_name",
        "applies only with storage.openzfs.file_system_id (an adopted file system)",
    )


def test_the_dns_name_is_the_adopted_file_systems_in_the_region(check) -> None:
    other = "fs-0123456789abcdef1.fsx.us-east-1.amazonaws.com"
    issues = check({Z: {**ADOPTED[Z], "dns_name": other}})
    assert_issue(issues, f"{Z}.dns_name", f"{other!r} is not the DNS name of fs-0123456789abcdef0")
    assert_issue(issues, f"{Z}.dns_name", "is not in region us-west-2")


# -- mount path -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/home", "/shared/home", "/homes"])
def test_a_plain_absolute_mount_path_is_valid(check, path: str) -> None:
    assert check(created(mount_path=path)) == []


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("home", "use an absolute path"),
        ("/home/", "'/home/' ends in '/'; write /home"),
        ("/etc", "'/etc' is a system directory"),
        ("/", "'/' is a system directory"),
        ("/home/../etc", "not a plain absolute path"),
    ],
)
def test_the_mount_path_is_an_absolute_path_outside_the_system(
    check, path: str, fragment: str
) -> None:
    assert_issue(check(created(mount_path=path)), f"{Z}.mount_path", fragment)


@pytest.mark.parametrize("path", ["/fsx", "/fsx/home"])
def test_the_mount_path_does_not_overlap_the_lustre_mount(check, path: str) -> None:
    assert_issue(
        check(created(mount_path=path)),
        f"{Z}.mount_path",
        f"{path!r} overlaps storage.fsx.mount_path ('/fsx'): one file system would hide the other",
    )


def test_the_lustre_mount_inside_the_openzfs_mount_is_an_error(check) -> None:
    assert_issue(
        check({**created(mount_path="/shared"), "storage.fsx.mount_path": "/shared/fsx"}),
        f"{Z}.mount_path",
        "overlaps storage.fsx.mount_path ('/shared/fsx')",
    )


def test_the_mount_path_may_be_the_lustre_one_when_lustre_is_off(check) -> None:
    changes = {"storage.fsx": {"enabled": False}, **created(mount_path="/fsx")}
    assert [i for i in check(changes) if i.path.startswith(Z)] == []


# -- NFS clients ----------------------------------------------------------------------------------


def test_nfs_clients_default_to_the_hyperpod_subnets(check) -> None:
    assert OpenZfsConfig().nfs_client_cidrs == []
    assert check(created(nfs_client_cidrs=["10.1.0.0/16"])) == []
    # a wider block that covers the HyperPod subnet is allowed
    assert check(created(nfs_client_cidrs=["10.0.0.0/8"])) == []


def test_nfs_clients_never_include_everyone(check) -> None:
    assert_issue(
        check(created(nfs_client_cidrs=["0.0.0.0/0"])),
        f"{Z}.nfs_client_cidrs",
        "0.0.0.0/0 would let any host mount the homes as root",
    )


def test_nfs_clients_do_not_repeat(check) -> None:
    assert_issue(
        check(created(nfs_client_cidrs=["10.1.0.0/16", "10.1.0.0/16"])),
        f"{Z}.nfs_client_cidrs",
        "'10.1.0.0/16' appears more than once",
    )


def test_nfs_clients_cover_every_hyperpod_subnet(check) -> None:
    changes = {
        "network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"},
        **created(nfs_client_cidrs=["10.1.0.0/16"]),
    }
    assert_issue(
        check(changes),
        f"{Z}.nfs_client_cidrs",
        "does not cover the HyperPod subnet 10.2.0.0/16: its nodes could not mount the homes",
    )


def test_an_adopted_vpc_names_its_nfs_clients(check) -> None:
    assert_issue(
        check({**ADOPTED_VPC, **created()}),
        f"{Z}.nfs_client_cidrs",
        "is required with network.vpc_id (an adopted VPC",
    )
    assert check({**ADOPTED_VPC, **created(nfs_client_cidrs=["172.31.0.0/20"])}) == []
    # an adopted file system brings its own exports
    assert check({**ADOPTED_VPC, **ADOPTED}) == []


# -- the homes ------------------------------------------------------------------------------------


def _config(changes: dict[str, Any]) -> EnvironmentConfig:
    return EnvironmentConfig.model_validate(build(changes))


def test_the_homes_go_to_the_openzfs_mount() -> None:
    assert shared_homes_directory(_config({})) == "/fsx/home"
    assert shared_homes_directory(_config(created())) == "/home"
    assert shared_homes_directory(_config(created(mount_path="/shared/home"))) == "/shared/home"
    assert (
        shared_homes_directory(_config({"storage.fsx": {"enabled": False}, **created()})) == "/home"
    )
    assert shared_homes_directory(_config({"storage.fsx": {"enabled": False}})) is None
    local = {"cluster.node_setup.home_on_shared_storage": False}
    assert shared_homes_directory(_config({**local, **created(mount_path="/shared")})) is None
    assert shared_homes_directory(EnvironmentConfig.model_validate(build(created(), "eks"))) is None


def test_local_homes_under_an_openzfs_home_mount_are_an_error(check) -> None:
    assert_issue(
        check({"cluster.node_setup.home_on_shared_storage": False, **created()}),
        "cluster.node_setup.home_on_shared_storage",
        "false keeps the homes in each node's /home, where storage.openzfs mounts the shared "
        "file system",
    )
    # mounted elsewhere, local homes stay local
    changes = {"cluster.node_setup.home_on_shared_storage": False, **created(mount_path="/shared")}
    assert check(changes) == []


DRA = "storage.fsx.data_repository_associations"


def test_exporting_lustre_home_is_no_error_when_the_homes_are_on_openzfs(
    check, project_root: Path
) -> None:
    """The rule that keeps the SSH private keys out of S3 looks at the Lustre file system's /home
    only while the homes are there."""
    (project_root / "users.yaml").write_text("users:\n  - name: alice\n    uid: 2001\n")
    dra = {"file_system_path": "/home", "s3_prefix": "all/", "auto_export": ["NEW", "CHANGED"]}
    changes = {"cluster.node_setup.users_file": "users.yaml", DRA: [dra]}
    assert_issue(
        check(changes),
        f"{DRA}[0].auto_export",
        "exports '/home', which holds the users' home directories",
    )
    assert check({**changes, **created()}) == []

"""The ``storage`` section: FSx for Lustre (created or adopted) and its data repository
associations, the optional FSx for OpenZFS file system of the users' homes, the models and the
cross-key rules.

The models check each key; :func:`check_storage` relates keys of the section to each other and
to the rest of the environment (the region, the instance groups), as rules.py does for the other
sections.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field, field_validator

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import (
    WHOLE_NUMBER,
    AbsolutePath,
    Cidr,
    IssueSink,
    KmsKeyArn,
    StrictModel,
    decimal_version,
    is_system_directory,
    matching,
    slurm_only,
    unique,
)

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# A key prefix of the app's data bucket: segments ending in '/', no leading '/' or empty segment.
S3_PREFIX_PATTERN = r"^([A-Za-z0-9!_.*'()-]+/)+$"
DraEvent = Literal["NEW", "CHANGED", "DELETED"]
# An FSx file system of the config (Lustre or OpenZFS): its id and its DNS name.
FileSystemId = Annotated[
    str, matching(r"^fs-[0-9a-f]{8,21}$", "a file system id like fs-0123456789abcdef0")
]
FileSystemDnsName = Annotated[
    str,
    matching(
        r"^fs-[0-9a-f]{8,21}\.fsx\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$",
        "the file system's DNS name, like fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    ),
]


class DataRepositoryAssociation(StrictModel):
    """An FSx data repository association: a file system path linked to an S3 prefix."""

    file_system_path: AbsolutePath = Field(description="Path in the file system, e.g. /datasets.")
    s3_prefix: (
        Annotated[
            str,
            matching(
                S3_PREFIX_PATTERN,
                "an S3 key prefix ending in '/' with no leading '/', like datasets/ or team/raw/",
                max_length=900,
            ),
        ]
        | None
    ) = Field(
        default=None, description="A prefix (ending in /) of the data bucket this app creates."
    )
    s3_uri: (
        Annotated[
            str,
            matching(
                r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$",
                "an S3 URI like s3://bucket/prefix/",
            ),
        ]
        | None
    ) = Field(default=None, description="Or an existing bucket (and prefix) in the same region.")
    auto_import: list[DraEvent] = Field(
        default_factory=lambda: list(get_args(DraEvent)),
        description="S3 events imported into the file system automatically.",
    )
    auto_export: list[DraEvent] = Field(
        default_factory=list, description="File system events exported to S3 automatically."
    )
    import_metadata_on_create: bool = Field(
        default=True,
        description="Import the metadata of existing S3 objects when the association is made.",
    )

    @field_validator("auto_import", "auto_export")
    @classmethod
    def _no_repeat_events(cls, value: list[str]) -> list[str]:
        return unique(value, "events")


class FsxConfig(StrictModel):
    """FSx for Lustre PERSISTENT_2: created in the HyperPod subnet, or adopted."""

    enabled: bool = Field(
        default=True, description="Create (or adopt) a file system and mount it on the nodes."
    )
    file_system_id: FileSystemId | None = Field(
        default=None,
        description="Adopt this file system; then dns_name and mount_name are required.",
    )
    dns_name: FileSystemDnsName | None = Field(
        default=None, description="Adopted file system: its DNS name."
    )
    mount_name: (
        Annotated[
            str,
            matching(
                r"^[a-z0-9]{1,8}$",
                "the file system's Lustre mount name: up to 8 lowercase letters and digits",
            ),
        ]
        | None
    ) = Field(default=None, description="Adopted file system: its Lustre mount name.")
    storage_capacity_gib: Annotated[int, Field(ge=1), WHOLE_NUMBER] = Field(
        default=1200, description="1200, 2400 or a multiple of 2400 GiB."
    )
    throughput_per_tib: Annotated[Literal[125, 250, 500, 1000], WHOLE_NUMBER] = Field(
        default=250, description="MB/s per TiB."
    )
    compression: Literal["LZ4", "NONE"] = Field(
        default="LZ4",
        description="Data compression of a new file system: LZ4 or NONE; default LZ4.",
    )
    lustre_version: Annotated[Literal["2.12", "2.15"], BeforeValidator(decimal_version)] = Field(
        default="2.15",
        description="Lustre version of a new file system: 2.15 (needed by metadata_iops and "
        "efa_enabled) or 2.12; default 2.15.",
    )
    efa_enabled: bool = Field(
        default=False, description="EFA-enabled file system (creation-time only)."
    )
    metadata_iops: Annotated[int, Field(ge=1), WHOLE_NUMBER] | None = Field(
        default=None, description="USER_PROVISIONED metadata IOPS; null means AUTOMATIC."
    )
    mount_path: AbsolutePath = Field(
        default="/fsx", description="Where the nodes mount the file system."
    )
    backup_retention_days: Annotated[
        int, Field(ge=0, le=facts.FSX_MAX_BACKUP_RETENTION_DAYS), WHOLE_NUMBER
    ] = Field(
        default=0,
        description="Automatic backups; must be 0 while data repository associations exist.",
    )
    kms_key_arn: KmsKeyArn | None = Field(
        default=None, description="Customer managed key; else an app-made key."
    )
    removal_policy: Literal["retain", "destroy"] = Field(
        default="retain", description="destroy also needs the context flag destroy_data=true."
    )
    data_repository_associations: list[DataRepositoryAssociation] = Field(
        default_factory=list,
        description="S3 prefixes linked to folders of the file system (data repository "
        "associations); default: none.",
    )

    @field_validator("mount_path")
    @classmethod
    def _not_a_system_directory(cls, value: str) -> str:
        if is_system_directory(value):
            raise ValueError(
                f"{value!r} is a system directory; mount the file system elsewhere, e.g. /fsx"
            )
        return value

    @field_validator("storage_capacity_gib")
    @classmethod
    def _persistent_2_capacity(cls, value: int) -> int:
        step = facts.FSX_PERSISTENT_2_CAPACITY_STEP
        if value not in facts.FSX_PERSISTENT_2_SMALL_CAPACITIES and value % step != 0:
            raise ValueError(
                f"{value} is not valid for PERSISTENT_2; use 1200 or a multiple of {step}"
            )
        if value > facts.FSX_MAX_CAPACITY_GIB:
            raise ValueError(
                f"{value} is more than the FSx maximum of {facts.FSX_MAX_CAPACITY_GIB} GiB"
            )
        return value

    @field_validator("metadata_iops")
    @classmethod
    def _metadata_iops(cls, value: int | None) -> int | None:
        if value is None:
            return value
        step, top = facts.FSX_METADATA_IOPS_STEP, facts.FSX_METADATA_IOPS_MAX
        if value not in facts.FSX_METADATA_IOPS_SMALL and not (value % step == 0 and value <= top):
            raise ValueError(
                f"{value} is not valid; use 1500, 3000, 6000, 12000 or a multiple of {step} up to {top}"
            )
        return value


def _single_az(value: object) -> object:
    """MULTI_AZ_1, an FSx for OpenZFS deployment type, is refused with the reason."""
    if value == "MULTI_AZ_1":
        raise ValueError(
            "MULTI_AZ_1 needs subnets in two AZs, and the HyperPod nodes and their file systems "
            "are in the HyperPod subnet of one; use SINGLE_AZ_HA_2 for a standby file server in "
            "the same AZ"
        )
    return value


# FSx for OpenZFS deployment types of one AZ (MULTI_AZ_1 needs two subnets: refused).
OpenZfsDeploymentType = Annotated[
    Literal["SINGLE_AZ_1", "SINGLE_AZ_2", "SINGLE_AZ_HA_1", "SINGLE_AZ_HA_2"],
    BeforeValidator(_single_az),
]
# The keys of a file system the app creates (an error on an adopted one).
_OPENZFS_CREATION_KEYS = (
    "deployment_type", "storage_capacity_gib", "throughput_mbps", "compression",
    "backup_retention_days", "kms_key_arn", "removal_policy", "nfs_client_cidrs",
)  # fmt: skip


class OpenZfsConfig(StrictModel):
    """FSx for OpenZFS for the users' home directories, mounted by HyperPod on every
    Slurm node (``InstanceStorageConfigs`` ``FsxOpenZfsConfig``) at ``mount_path``: Lustre
    (``storage.fsx``) keeps the data, OpenZFS the homes. Created in the HyperPod subnet and the
    nodes' EFA security group, with an NFS export that lets the nodes' root (the controller makes
    the homes) write as root from the cluster's subnets only; or adopted (``file_system_id`` and
    ``dns_name``). HyperPod mounts it when it provisions a node: running nodes get it when they
    are replaced (docs/updating.md)."""

    file_system_id: FileSystemId | None = Field(
        default=None, description="Adopt this file system; then dns_name is required."
    )
    dns_name: FileSystemDnsName | None = Field(
        default=None, description="Adopted file system: its DNS name."
    )
    mount_path: AbsolutePath = Field(
        default="/home",
        description="Where HyperPod mounts the file system on every Slurm node; with "
        "cluster.node_setup.home_on_shared_storage the homes are <mount_path>/<name>.",
    )
    deployment_type: OpenZfsDeploymentType = Field(
        default="SINGLE_AZ_2",
        description="SINGLE_AZ_2 (default: NVMe read cache, one file server in the HyperPod "
        "AZ), SINGLE_AZ_HA_2 (a standby file server in the same AZ: no outage during "
        "maintenance or a server failure, twice the cost), SINGLE_AZ_1 or SINGLE_AZ_HA_1 (first "
        "generation, from 64 MB/s). MULTI_AZ_1 needs subnets in two AZs and is refused.",
    )
    storage_capacity_gib: Annotated[
        int,
        Field(ge=facts.OPENZFS_MIN_CAPACITY_GIB, le=facts.OPENZFS_MAX_CAPACITY_GIB),
        WHOLE_NUMBER,
    ] = Field(default=1024, description="SSD capacity, 64 to 524288 GiB (it can grow later).")
    throughput_mbps: Annotated[int, Field(ge=1), WHOLE_NUMBER] | None = Field(
        default=None,
        description="MB/s of the file server: 160, 320, 640, 1280, 2560, 3840, 5120, 7680 or "
        "10240 for the *_2 types; 64, 128, 256, 512, 1024, 2048, 3072 or 4096 for the *_1 types; "
        "null: the smallest the deployment type allows.",
    )
    compression: Literal["LZ4", "ZSTD", "NONE"] = Field(
        default="LZ4", description="Compression of the root volume."
    )
    backup_retention_days: Annotated[
        int, Field(ge=0, le=facts.FSX_MAX_BACKUP_RETENTION_DAYS), WHOLE_NUMBER
    ] = Field(
        default=7,
        description="Daily automatic backups (05:00 UTC), kept this many days; 0: none. The "
        "homes have no other copy (no data repository in S3).",
    )
    kms_key_arn: KmsKeyArn | None = Field(
        default=None, description="Customer managed key; else an app-made key."
    )
    removal_policy: Literal["retain", "destroy"] = Field(
        default="retain", description="destroy also needs the context flag destroy_data=true."
    )
    nfs_client_cidrs: list[Cidr] = Field(
        default_factory=list,
        description="Who may mount the file system read-write with root not squashed: left "
        "empty, the HyperPod subnets' CIDRs (compute_cidr, additional_compute_cidrs); required "
        "with network.vpc_id (an adopted VPC): the CIDRs of its HyperPod subnets.",
    )

    @field_validator("mount_path")
    @classmethod
    def _mountable_path(cls, value: str) -> str:
        if is_system_directory(value):
            raise ValueError(
                f"{value!r} is a system directory; mount the file system elsewhere, e.g. /home"
            )
        # HyperPod's ClusterFsxOpenZfsConfig.MountPath (AWS::SageMaker::Cluster schema): no
        # trailing '/'
        if value.endswith("/"):
            raise ValueError(f"{value!r} ends in '/'; write {value.rstrip('/')}")
        return value

    @field_validator("nfs_client_cidrs")
    @classmethod
    def _cluster_clients(cls, value: list[ipaddress.IPv4Network]) -> list[ipaddress.IPv4Network]:
        if any(block.prefixlen == 0 for block in value):
            raise ValueError(
                "0.0.0.0/0 would let any host mount the homes as root; list the HyperPod "
                "subnets' CIDRs"
            )
        if len(value) > facts.OPENZFS_MAX_NFS_CLIENTS:
            raise ValueError(
                f"{len(value)} entries; an NFS export takes at most {facts.OPENZFS_MAX_NFS_CLIENTS}"
            )
        unique([str(block) for block in value], "CIDR blocks")
        return value

    @property
    def adopted(self) -> bool:
        """True for an existing file system (``file_system_id``)."""
        return self.file_system_id is not None

    @property
    def effective_throughput_mbps(self) -> int:
        """``throughput_mbps``, or the smallest throughput of the deployment type."""
        return self.throughput_mbps or facts.OPENZFS_THROUGHPUTS[self.deployment_type][0]


class StorageConfig(StrictModel):
    """Shared storage of the environment."""

    fsx: FsxConfig = Field(
        default_factory=FsxConfig,
        description="FSx for Lustre, mounted on every node: a new file system, an adopted one "
        "(file_system_id), or none (enabled: false); left out: a new one with the "
        "defaults below.",
    )
    openzfs: OpenZfsConfig | None = Field(
        default=None,
        description="The users' home directories on FSx for OpenZFS, mounted by HyperPod "
        "(FsxOpenZfsConfig); null: none (the homes are under the Lustre mount).",
        json_schema_extra=slurm_only(
            "HyperPod mounts FSx for OpenZFS, FsxOpenZfsConfig, on Slurm nodes only"
        ),
    )


# -- cross-key rules --------------------------------------------------------------------------


def _check_adopted(
    section: Any,
    base: str,
    required: Sequence[str],
    creation_keys: Sequence[str],
    region: str,
    out: IssueSink,
) -> None:
    """An adopted file system (``section.file_system_id`` set) of ``base``: its names are
    given, nothing of a file system the app creates is, and its DNS name is the file system's
    own, in the config's region."""
    for key in required:
        if getattr(section, key) is None:
            out.error(
                f"{base}.{key}", f"is required with {base}.file_system_id (an adopted file system)"
            )
    for key in creation_keys:
        if section.is_set(key):
            out.error(
                f"{base}.{key}", "applies only to a file system the app creates, not an adopted one"
            )
    dns_name, file_system_id = section.dns_name, section.file_system_id
    if dns_name and not dns_name.startswith(file_system_id + "."):
        out.error(f"{base}.dns_name", f"{dns_name!r} is not the DNS name of {file_system_id}")
    if dns_name and f".fsx.{region}." not in dns_name:
        out.error(f"{base}.dns_name", f"{dns_name!r} is not in region {region}")


def check_storage(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems (errors and warnings) of ``storage`` into ``out``."""
    _check_fsx(cfg.storage.fsx, cfg, out)
    if cfg.storage.openzfs is not None:
        _check_openzfs(cfg.storage.openzfs, cfg, out)
    _check_homes_not_exported(cfg, out)


# Where the users' homes are inside the Lustre file system when they are on it (lifecycle
# users.sh: <mount_path>/home/<name>), with their SSH private keys (~/.ssh/id_ed25519).
HOMES_IN_FILE_SYSTEM = "/home"


def shared_homes_directory(cfg: EnvironmentConfig) -> str | None:
    """The directory on the Slurm nodes that holds the users' home directories when they are on
    shared storage (``cluster.node_setup.home_on_shared_storage``): the FSx for OpenZFS mount
    (``storage.openzfs.mount_path``) when there is one, else ``<storage.fsx.mount_path>/home``;
    None when they are on each node's local ``/home`` (no shared file system, or EKS)."""
    setup = cfg.cluster.node_setup
    if not (cfg.is_slurm and setup.home_on_shared_storage):
        return None
    if cfg.storage.openzfs is not None:
        return cfg.storage.openzfs.mount_path
    if cfg.storage.fsx.enabled:
        return cfg.storage.fsx.mount_path.rstrip("/") + HOMES_IN_FILE_SYSTEM
    return None


def _check_homes_not_exported(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """An association that exports the homes (at /, /home or inside it) copies every user's SSH
    private key to S3. Homes on FSx for OpenZFS are not in the Lustre file system."""
    fsx, setup = cfg.storage.fsx, cfg.cluster.node_setup
    homes = shared_homes_directory(cfg)
    if not (fsx.enabled and setup.users_file and homes) or cfg.storage.openzfs is not None:
        return
    for i, dra in enumerate(fsx.data_repository_associations):
        path = dra.file_system_path
        if not dra.auto_export or not (
            _is_parent(path, HOMES_IN_FILE_SYSTEM) or _is_parent(HOMES_IN_FILE_SYSTEM, path)
        ):
            continue
        out.error(
            f"storage.fsx.data_repository_associations[{i}].auto_export",
            f"exports {path!r}, which holds the users' home directories "
            f"({fsx.mount_path.rstrip('/')}{HOMES_IN_FILE_SYSTEM}/<name>) with their SSH private "
            "keys: S3 would get a copy of every key; export a path outside /home, or set "
            "cluster.node_setup.home_on_shared_storage: false",
        )


def _check_openzfs(zfs: OpenZfsConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    base = "storage.openzfs"
    if not cfg.is_slurm:
        return  # slurm only: check_orchestrator_scope
    if zfs.adopted:
        _check_adopted(zfs, base, ("dns_name",), _OPENZFS_CREATION_KEYS, cfg.region, out)
    else:
        if zfs.dns_name is not None:
            out.error(
                f"{base}.dns_name",
                "applies only with storage.openzfs.file_system_id (an adopted file system)",
            )
        _check_new_openzfs(zfs, cfg, out)
    _check_openzfs_mount_path(zfs, cfg, out)


def _check_new_openzfs(zfs: OpenZfsConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    base = "storage.openzfs"
    allowed = facts.OPENZFS_THROUGHPUTS[zfs.deployment_type]
    if zfs.throughput_mbps is not None and zfs.throughput_mbps not in allowed:
        out.error(
            f"{base}.throughput_mbps",
            f"{zfs.throughput_mbps} is not valid for {zfs.deployment_type}; use one of "
            f"{', '.join(map(str, allowed))}",
        )
    if zfs.kms_key_arn:
        check_kms_key_region(zfs.kms_key_arn, f"{base}.kms_key_arn", cfg, out)
    net = cfg.network
    if net.vpc_id is not None and not zfs.nfs_client_cidrs:
        out.error(
            f"{base}.nfs_client_cidrs",
            "is required with network.vpc_id (an adopted VPC, whose subnet CIDRs the app does "
            "not know): list the CIDRs of the HyperPod subnets (network.compute_subnet_id and "
            "additional_compute_subnet_ids), which may mount the homes as root",
        )
    if net.vpc_id is None and zfs.nfs_client_cidrs:
        for block in [net.compute_cidr, *net.additional_compute_cidrs.values()]:
            if not any(block.subnet_of(client) for client in zfs.nfs_client_cidrs):
                out.error(
                    f"{base}.nfs_client_cidrs",
                    f"does not cover the HyperPod subnet {block}: its nodes could not mount the "
                    "homes; add it, or leave nfs_client_cidrs out (the HyperPod subnets)",
                )


def _check_openzfs_mount_path(zfs: OpenZfsConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Two file systems mounted at one path (or one inside the other) hide each other's files,
    whichever HyperPod mounts last; homes kept local on nodes whose /home is the shared mount
    would be made on it by every node at once."""
    fsx, setup = cfg.storage.fsx, cfg.cluster.node_setup
    path = "storage.openzfs.mount_path"
    if fsx.enabled and (
        _is_parent(zfs.mount_path, fsx.mount_path) or _is_parent(fsx.mount_path, zfs.mount_path)
    ):
        out.error(
            path,
            f"{zfs.mount_path!r} overlaps storage.fsx.mount_path ({fsx.mount_path!r}): one file "
            "system would hide the other; mount them apart, e.g. /home and /fsx",
        )
    explicitly_local = setup.is_set("home_on_shared_storage") and not setup.home_on_shared_storage
    if explicitly_local and zfs.mount_path == "/home":
        out.error(
            "cluster.node_setup.home_on_shared_storage",
            "false keeps the homes in each node's /home, where storage.openzfs mounts the shared "
            "file system: every node would make them there; set it to true (the controller makes "
            "them, once), or mount storage.openzfs elsewhere",
        )


def _check_fsx(fsx: FsxConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    base = "storage.fsx"
    creation_keys = (
        "storage_capacity_gib", "throughput_per_tib", "compression", "lustre_version", "efa_enabled",
        "metadata_iops", "backup_retention_days", "kms_key_arn", "removal_policy",
    )  # fmt: skip
    if not fsx.enabled:
        for key in (
            "file_system_id",
            "dns_name",
            "mount_name",
            "mount_path",
            *creation_keys,
            "data_repository_associations",
        ):
            if fsx.is_set(key):
                out.error(
                    f"{base}.{key}", "has no effect with storage.fsx.enabled: false; remove it"
                )
        return
    if fsx.file_system_id is not None:
        _check_adopted(fsx, base, ("dns_name", "mount_name"), creation_keys, cfg.region, out)
    else:
        for key in ("dns_name", "mount_name"):
            if getattr(fsx, key) is not None:
                out.error(
                    f"{base}.{key}",
                    "applies only with storage.fsx.file_system_id (an adopted file system)",
                )
        _check_new_fsx(fsx, cfg, out)
    _check_dras(fsx, out)
    _check_dra_paths_in_mount(fsx, out)


def _check_new_fsx(fsx: FsxConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    base = "storage.fsx"
    if fsx.lustre_version == "2.12":
        if fsx.metadata_iops is not None:
            out.error(
                f"{base}.metadata_iops",
                "needs lustre_version 2.15 (no metadata configuration on 2.12)",
            )
        if fsx.efa_enabled:
            out.error(
                f"{base}.efa_enabled",
                "needs lustre_version 2.15 (EFA needs a metadata configuration)",
            )
    if fsx.efa_enabled:
        multiple = facts.FSX_EFA_CAPACITY_MULTIPLE[fsx.throughput_per_tib]
        if fsx.storage_capacity_gib % multiple:
            out.error(
                f"{base}.storage_capacity_gib",
                f"{fsx.storage_capacity_gib} is not valid for an EFA-enabled file system at "
                f"{fsx.throughput_per_tib} MB/s/TiB; use a multiple of {multiple}",
            )
        for i, group in enumerate(cfg.cluster.instance_groups):
            no_efa = [
                t
                for t in group.all_instance_types
                if t.split(".")[1] in facts.FSX_EFA_UNSUPPORTED_FAMILIES
            ]
            if no_efa:
                out.warn(
                    f"cluster.instance_groups[{i}]",
                    f"{no_efa[0]} is not an EFA client of FSx for Lustre; this group reaches the "
                    "EFA-enabled file system over TCP",
                )
            az = group.availability_zone_id
            if az and az != cfg.network.availability_zone_id:
                out.warn(
                    f"cluster.instance_groups[{i}].availability_zone_id",
                    f"{az} is not the file system's AZ; an EFA-enabled file system serves clients over EFA "
                    "only in its own AZ and /16, so this group reaches it over TCP",
                )
    if fsx.kms_key_arn:
        check_kms_key_region(fsx.kms_key_arn, f"{base}.kms_key_arn", cfg, out)
    if fsx.backup_retention_days > 0 and fsx.data_repository_associations:
        out.error(
            f"{base}.backup_retention_days",
            "must be 0 while data_repository_associations exist (FSx takes no backups of linked file systems)",
        )


def _dra_target(dra: DataRepositoryAssociation) -> tuple[str, str]:
    """(bucket, key prefix with a trailing slash); the app's own bucket is ''."""
    if dra.s3_uri:
        bucket, _, key = dra.s3_uri[len("s3://") :].partition("/")
        return bucket, key.rstrip("/") + "/" if key else ""
    return "", dra.s3_prefix or ""


def _is_parent(a: str, b: str) -> bool:
    """True when path ``a`` equals ``b`` or is a parent directory of it."""
    a, b = a.rstrip("/") + "/", b.rstrip("/") + "/"
    return b.startswith(a)


def _check_dras(fsx: FsxConfig, out: IssueSink) -> None:
    base = "storage.fsx.data_repository_associations"
    dras = fsx.data_repository_associations
    if len(dras) > facts.MAX_DATA_REPOSITORY_ASSOCIATIONS:
        out.error(
            base,
            f"{len(dras)} associations; FSx allows at most {facts.MAX_DATA_REPOSITORY_ASSOCIATIONS}",
        )
    for i, dra in enumerate(dras):
        path = f"{base}[{i}]"
        if (dra.s3_prefix is None) == (dra.s3_uri is None):
            out.error(
                path,
                "give exactly one of s3_prefix (the app's data bucket) or s3_uri (an existing bucket)",
            )
        if dra.file_system_path == "/" and len(dras) > 1:
            out.error(f"{path}.file_system_path", "'/' is allowed only as the sole association")
        for j, other in enumerate(dras[:i]):
            paths = (dra.file_system_path, other.file_system_path)
            # '/' contains every path: the rule above reports it once.
            if "/" not in paths and (_is_parent(*paths) or _is_parent(*reversed(paths))):
                out.error(
                    f"{path}.file_system_path",
                    f"{dra.file_system_path!r} overlaps {base}[{j}] ({other.file_system_path!r}); "
                    "association paths must not contain one another",
                )
            if (dra.s3_prefix is None) == (dra.s3_uri is None) or (other.s3_prefix is None) == (
                other.s3_uri is None
            ):
                continue
            (bucket, key), (other_bucket, other_key) = _dra_target(dra), _dra_target(other)
            if bucket == other_bucket and (key.startswith(other_key) or other_key.startswith(key)):
                where = dra.s3_uri or f"data bucket prefix {dra.s3_prefix}"
                out.error(
                    f"{path}.{'s3_uri' if dra.s3_uri else 's3_prefix'}",
                    f"{where} overlaps the S3 location of {base}[{j}]; each S3 prefix serves one association",
                )


def _check_dra_paths_in_mount(fsx: FsxConfig, out: IssueSink) -> None:
    """A DRA path is a path inside the file system, which the nodes mount at mount_path: a path
    that repeats the mount path puts the data one level deeper than meant (/fsx/fsx/datasets)."""
    mount = fsx.mount_path.rstrip("/")
    for i, dra in enumerate(fsx.data_repository_associations):
        path = dra.file_system_path.rstrip("/")
        if not _is_parent(mount, path):
            continue
        inside = path[len(mount) :] or "/"
        out.warn(
            f"storage.fsx.data_repository_associations[{i}].file_system_path",
            f"{dra.file_system_path!r} is a path inside the file system, which the nodes mount "
            f"at {fsx.mount_path}, so the data appears at {mount}{path}; write {inside} to see it "
            f"at {dra.file_system_path}",
        )


def check_kms_key_region(arn: str, path: str, cfg: EnvironmentConfig, out: IssueSink) -> None:
    """A KMS key (of FSx, of a group's EBS volume) is used in its own region only."""
    region = arn.split(":")[3]
    if region != cfg.region:
        out.error(
            path,
            f"the key is in {region}, the environment in {cfg.region}; use a key of {cfg.region}",
        )

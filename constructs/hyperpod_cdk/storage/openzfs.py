"""FSx for OpenZFS for the users' home directories, created or adopted; HyperPod mounts it on the
Slurm nodes over NFS (``InstanceStorageConfigs`` ``FsxOpenZfsConfig``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from constructs import Construct, IDependable

from hyperpod_cdk.config.base import ABSOLUTE_PATH_PATTERN, has_relative_parts, is_system_directory
from hyperpod_cdk.config.storage import OpenZfsConfig

# FSx for OpenZFS user guide, "Amazon VPC security groups": NFS clients reach the file server on
# TCP and UDP 111 (rpcbind), 2049 (nfsd) and 20001-20003 (mountd, the lock manager and statd).
NFS_PORTS = (
    ec2.Port.tcp(111),
    ec2.Port.udp(111),
    ec2.Port.tcp(2049),
    ec2.Port.udp(2049),
    ec2.Port.tcp_range(20001, 20003),
    ec2.Port.udp_range(20001, 20003),
)
# The root volume's export to the cluster's subnets: read-write; crossmnt (FSx's default, keeps
# the snapshot directory reachable); no_root_squash, so that root on the controller makes the
# homes and hands them to their users (root squashed to nobody could do neither).
NFS_EXPORT_OPTIONS = ("rw", "crossmnt", "no_root_squash")
# HyperPod's ClusterFsxOpenZfsConfig.MountPath (AWS::SageMaker::Cluster schema): no trailing '/'.
_MOUNT_PATH = re.compile(r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


@dataclass(frozen=True)
class OpenZfsHandle:
    """What a HyperPod cluster needs to mount an FSx for OpenZFS file system on its Slurm nodes.

    This is how an existing file system is adopted: build the handle from its attributes or from
    the ``storage.openzfs`` config (:meth:`from_config`) and pass it to
    :class:`~hyperpod_cdk.HyperPodCluster` (``openzfs_file_system``), where an
    :attr:`OpenZfsFileSystem.handle` would go. Values may be CloudFormation tokens (a file system
    of this app) or literals (an adopted one).

    :param file_system_id: e.g. ``fs-0123456789abcdef0``.
    :param dns_name: the file system's DNS name (HyperPod mounts its root volume, ``/fsx``).
    :param mount_path: where the nodes mount it; ``/home`` when left out.
    """

    file_system_id: str
    dns_name: str
    mount_path: str = "/home"

    def __post_init__(self) -> None:
        check_openzfs_mount_path(self.mount_path)

    @classmethod
    def from_config(cls, config: OpenZfsConfig) -> OpenZfsHandle:
        """The handle of the adopted file system named by ``storage.openzfs``."""
        if not (config.file_system_id and config.dns_name):
            raise ValueError(
                "storage.openzfs needs file_system_id and dns_name to adopt a file system"
            )
        return cls(config.file_system_id, config.dns_name, config.mount_path)


def check_openzfs_mount_path(mount_path: str) -> None:
    """The rules of ``storage.openzfs.mount_path``, with messages that name the parameter."""
    if cdk.Token.is_unresolved(mount_path):
        return
    if (
        not re.match(ABSOLUTE_PATH_PATTERN, mount_path)
        or has_relative_parts(mount_path)
        or not _MOUNT_PATH.match(mount_path)
    ):
        raise ValueError(
            f"mount_path {mount_path!r} is not a plain absolute path without a trailing '/'; "
            "give one like /home"
        )
    if is_system_directory(mount_path):
        raise ValueError(
            f"mount_path {mount_path!r} is a system directory; mount the file system elsewhere, "
            "e.g. /home"
        )


def allow_nfs_egress(group: ec2.ISecurityGroup) -> None:
    """Let the nodes in ``group`` reach an NFS server in another group (an adopted FSx for OpenZFS
    file system) on the NFS ports, as the group's Lustre rules do for Lustre. A file system in
    the group itself needs nothing more: the EFA group allows all traffic from and to itself."""
    for port in NFS_PORTS:
        group.add_egress_rule(
            ec2.Peer.any_ipv4(), port, "NFS to an FSx for OpenZFS file system in another group"
        )


class OpenZfsFileSystem(Construct):
    """An FSx for OpenZFS file system in the HyperPod subnet, for the users' home directories.

    Built on the L1 resource (the CDK has no OpenZFS L2). Every knob of ``storage.openzfs`` is
    applied: deployment type, SSD capacity, throughput (the deployment type's smallest when the
    config leaves it out), compression of the root volume, daily automatic backups at 05:00 UTC
    with the tags copied. The root volume is exported over NFS to ``client_cidrs`` only, with
    ``rw,crossmnt,no_root_squash`` (:data:`NFS_EXPORT_OPTIONS`): the nodes' root makes the
    homes. The file system is encrypted with ``kms_key`` (a new rotating key when not given).

    The construct always creates a file system; to use an existing one, skip it and pass an
    :class:`OpenZfsHandle` to the cluster instead.

    :param config: the ``storage.openzfs`` section (a file system to create).
    :param subnet: the HyperPod subnet (created or adopted): the file system's single subnet,
        in the AZ of the nodes.
    :param security_groups: groups of the file system: the nodes' EFA group, which allows all
        traffic within itself, NFS included (no further rule is needed).
    :param client_cidrs: who may mount it (read-write, root not squashed): the HyperPod subnets'
        CIDRs. When left out: ``config.nfs_client_cidrs``, else the CIDR of ``subnet`` (which an
        adopted ``ec2.Subnet.from_subnet_id`` does not have: then give them).
    :param kms_key: the key that encrypts the file system (an existing ``kms.IKey``); when left
        out, the key of ``config.kms_key_arn`` if set, else a new rotating key that is retained
        with the data. Giving both ``kms_key`` and ``config.kms_key_arn`` is an error.
    :param depends_on: constructs that must exist first, e.g. the security group rules; none
        when left out.
    :param removal_policy: RETAIN (default) keeps the file system and the homes when the
        resource leaves the stack; DESTROY deletes them.

    :ivar handle: the :class:`OpenZfsHandle` to pass to :class:`~hyperpod_cdk.HyperPodCluster`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: OpenZfsConfig,
        subnet: ec2.ISubnet,
        security_groups: Sequence[ec2.ISecurityGroup],
        client_cidrs: Sequence[str] | None = None,
        kms_key: kms.IKey | None = None,
        depends_on: Sequence[IDependable] = (),
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        if config.adopted:
            raise ValueError(
                f"storage.openzfs adopts {config.file_system_id}: pass OpenZfsHandle.from_config "
                "to the cluster instead of creating a file system"
            )
        if kms_key is not None and config.kms_key_arn:
            raise ValueError(
                f"both kms_key and storage.openzfs.kms_key_arn ({config.kms_key_arn}) name the "
                "key of the file system; give only one of them"
            )
        clients = list(client_cidrs or [str(c) for c in config.nfs_client_cidrs])
        if not clients:
            try:
                clients = [subnet.ipv4_cidr_block]
            except Exception:  # an adopted subnet (from_subnet_id) has no CIDR to read
                raise ValueError(
                    f"the subnet {subnet.subnet_id} has no known CIDR: pass client_cidrs (the "
                    "HyperPod subnets' CIDRs, storage.openzfs.nfs_client_cidrs)"
                ) from None
        if any(c.strip() in ("*", "0.0.0.0/0") for c in clients if not cdk.Token.is_unresolved(c)):
            raise ValueError(
                "client_cidrs must name the cluster's subnets: '*' or 0.0.0.0/0 would let any host "
                "mount the homes as root"
            )
        if kms_key is None:
            kms_key = (
                kms.Key.from_key_arn(self, "Key", config.kms_key_arn)
                if config.kms_key_arn
                else kms.Key(
                    self,
                    "Key",
                    description="Encryption at rest of the HyperPod FSx for OpenZFS file system "
                    "(home directories)",
                    enable_key_rotation=True,
                    removal_policy=cdk.RemovalPolicy.RETAIN,
                )
            )
        self.kms_key = kms_key
        backups = config.backup_retention_days
        root_volume = fsx.CfnFileSystem.RootVolumeConfigurationProperty(
            data_compression_type=config.compression,
            copy_tags_to_snapshots=True,
            nfs_exports=[
                fsx.CfnFileSystem.NfsExportsProperty(
                    client_configurations=[
                        fsx.CfnFileSystem.ClientConfigurationsProperty(
                            clients=cidr, options=list(NFS_EXPORT_OPTIONS)
                        )
                        for cidr in clients
                    ]
                )
            ],
        )
        openzfs = fsx.CfnFileSystem.OpenZFSConfigurationProperty(
            deployment_type=config.deployment_type,
            throughput_capacity=config.effective_throughput_mbps,
            # FSx for OpenZFS keeps 30 days of backups when the property is left out
            automatic_backup_retention_days=backups,
            daily_automatic_backup_start_time="05:00" if backups else None,
            copy_tags_to_backups=True if backups else None,
            copy_tags_to_volumes=True,
            root_volume_configuration=root_volume,
        )
        self.resource = fsx.CfnFileSystem(
            self,
            "Resource",
            file_system_type="OPENZFS",
            storage_type="SSD",
            storage_capacity=config.storage_capacity_gib,
            subnet_ids=[subnet.subnet_id],
            security_group_ids=[sg.security_group_id for sg in security_groups],
            kms_key_id=kms_key.key_id,
            open_zfs_configuration=openzfs,
        )
        self.resource.apply_removal_policy(removal_policy)
        for dependency in depends_on:
            self.resource.node.add_dependency(dependency)
        self.handle = OpenZfsHandle(
            file_system_id=self.resource.ref,
            dns_name=self.resource.attr_dns_name,
            mount_path=config.mount_path,
        )

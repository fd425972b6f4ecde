"""FSx for Lustre PERSISTENT_2 for HyperPod, created or adopted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from constructs import Construct, IDependable

from hyperpod_cdk.config.models import FsxConfig


@dataclass(frozen=True)
class FileSystemHandle:
    """What a HyperPod cluster needs to mount a Lustre file system.

    This is how an existing file system is adopted: build the handle from its
    attributes (or :meth:`from_config`) and pass it where a
    :attr:`LustreFileSystem.handle` would go. Values may be CloudFormation
    tokens (a file system of this app) or literals (an adopted one).

    :param file_system_id: e.g. ``fs-0123456789abcdef0``.
    :param dns_name: the file system's DNS name.
    :param mount_name: its Lustre mount name (``aws fsx describe-file-systems``:
        ``LustreConfiguration.MountName``).
    :param mount_path: where the nodes mount it; ``/fsx`` when left out.
    """

    file_system_id: str
    dns_name: str
    mount_name: str
    mount_path: str = "/fsx"

    @classmethod
    def from_config(cls, config: FsxConfig) -> FileSystemHandle:
        """The handle of the adopted file system named by ``storage.fsx``."""
        if not (config.file_system_id and config.dns_name and config.mount_name):
            raise ValueError(
                "storage.fsx needs file_system_id, dns_name and mount_name to adopt a file system"
            )
        return cls(config.file_system_id, config.dns_name, config.mount_name, config.mount_path)


class LustreFileSystem(Construct):
    """An FSx for Lustre PERSISTENT_2 file system in the HyperPod subnet.

    Built on the L1 resource because the L2 has no EFA or metadata
    configuration. Every knob of ``storage.fsx`` is applied; the file system
    is encrypted with ``kms_key`` (a new rotating key when not given).

    The construct always creates a file system; to use an existing one, skip
    it and pass a :class:`FileSystemHandle` to the cluster instead.

    :param config: the ``storage.fsx`` section (a file system to create).
    :param subnet: the HyperPod subnet (created or adopted): FSx takes exactly
        one subnet, and an EFA-enabled file system must share its clients' AZ and /16.
    :param security_groups: groups of the file system (created or adopted); the
        EFA group of the nodes, so Lustre and EFA traffic flow within the group.
    :param kms_key: the key that encrypts the file system (an existing
        ``kms.IKey``); when left out, the key of ``config.kms_key_arn`` if set,
        else a new rotating key that is retained with the data.
    :param depends_on: constructs that must exist first, e.g. the security
        group rules (FSx fails with ``InvalidNetworkSettings`` without them);
        none when left out.
    :param removal_policy: RETAIN (default) keeps the file system and its data
        when the resource leaves the stack; DESTROY deletes it.

    :ivar handle: the :class:`FileSystemHandle` to pass to :class:`~hyperpod_cdk.HyperPodCluster`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FsxConfig,
        subnet: ec2.ISubnet,
        security_groups: Sequence[ec2.ISecurityGroup],
        kms_key: kms.IKey | None = None,
        depends_on: Sequence[IDependable] = (),
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        if kms_key is None:
            kms_key = (
                kms.Key.from_key_arn(self, "Key", config.kms_key_arn)
                if config.kms_key_arn
                else kms.Key(
                    self,
                    "Key",
                    description="Encryption at rest of the HyperPod FSx for Lustre file system",
                    enable_key_rotation=True,
                    removal_policy=cdk.RemovalPolicy.RETAIN,
                )
            )
        self.kms_key = kms_key
        metadata: dict[str, object] = (
            {"mode": "USER_PROVISIONED", "iops": config.metadata_iops}
            if config.metadata_iops
            else {"mode": "AUTOMATIC"}
        )
        lustre = fsx.CfnFileSystem.LustreConfigurationProperty(
            deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=config.throughput_per_tib,
            data_compression_type=config.compression,
            automatic_backup_retention_days=config.backup_retention_days,
            daily_automatic_backup_start_time="05:00" if config.backup_retention_days else None,
            copy_tags_to_backups=True if config.backup_retention_days else None,
            efa_enabled=config.efa_enabled or None,
            metadata_configuration=metadata if config.lustre_version != "2.12" else None,
        )
        self.resource = fsx.CfnFileSystem(
            self,
            "Resource",
            file_system_type="LUSTRE",
            file_system_type_version=config.lustre_version,
            storage_type="SSD",
            storage_capacity=config.storage_capacity_gib,
            subnet_ids=[subnet.subnet_id],
            security_group_ids=[sg.security_group_id for sg in security_groups],
            kms_key_id=kms_key.key_id,
            lustre_configuration=lustre,
        )
        self.resource.apply_removal_policy(removal_policy)
        for dependency in depends_on:
            self.resource.node.add_dependency(dependency)
        self.handle = FileSystemHandle(
            file_system_id=self.resource.ref,
            dns_name=self.resource.attr_dns_name,
            mount_name=self.resource.attr_lustre_mount_name,
            mount_path=config.mount_path,
        )

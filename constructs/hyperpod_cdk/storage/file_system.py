"""FSx for Lustre PERSISTENT_2 for HyperPod, created or adopted."""

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
from hyperpod_cdk.config.storage import FsxConfig


@dataclass(frozen=True)
class FileSystemHandle:
    """What a HyperPod cluster needs to mount a Lustre file system.

    This is how an existing file system is adopted: build the handle from its
    attributes, from the ``storage.fsx`` config (:meth:`from_config`) or from
    an ``aws_fsx.LustreFileSystem`` (:meth:`from_lustre_file_system`), and
    pass it where a :attr:`LustreFileSystem.handle` would go. Values may be
    CloudFormation tokens (a file system of this app) or literals (an adopted one).

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

    def __post_init__(self) -> None:
        _check_mount_path(self.mount_path)

    @classmethod
    def from_config(cls, config: FsxConfig) -> FileSystemHandle:
        """The handle of the adopted file system named by ``storage.fsx``."""
        if not (config.file_system_id and config.dns_name and config.mount_name):
            raise ValueError(
                "storage.fsx needs file_system_id, dns_name and mount_name to adopt a file system"
            )
        return cls(config.file_system_id, config.dns_name, config.mount_name, config.mount_path)

    @classmethod
    def from_lustre_file_system(
        cls,
        file_system: fsx.IFileSystem,
        mount_path: str = "/fsx",
        *,
        mount_name: str | None = None,
    ) -> FileSystemHandle:
        """The handle of an ``aws_fsx`` Lustre file system: one this app creates
        (``fsx.LustreFileSystem``) or one imported with
        ``fsx.LustreFileSystem.from_lustre_file_system_attributes``.

        :param file_system: the file system; its ``file_system_id`` and
            ``dns_name`` (and ``mount_name``, which only a created one has) are used.
        :param mount_path: where the nodes mount it; ``/fsx`` when left out.
        :param mount_name: its Lustre mount name; needed for an imported file
            system (its attributes have none), taken from ``file_system`` when left out.
        """
        dns_name = getattr(file_system, "dns_name", None)
        own_mount_name = getattr(file_system, "mount_name", None)
        if mount_name is not None and own_mount_name is not None:
            raise ValueError(
                "give mount_name only for an imported file system; this one has its own mount_name"
            )
        mount_name = mount_name or own_mount_name
        if not dns_name:
            raise ValueError(
                f"{file_system.file_system_id!r} has no dns_name: pass an fsx.LustreFileSystem "
                "(created, or imported with from_lustre_file_system_attributes)"
            )
        if not mount_name:
            raise ValueError(
                "an imported Lustre file system has no mount_name: pass mount_name= "
                "(aws fsx describe-file-systems: LustreConfiguration.MountName)"
            )
        return cls(file_system.file_system_id, dns_name, mount_name, mount_path)


def _check_mount_path(mount_path: str) -> None:
    if cdk.Token.is_unresolved(mount_path):
        return
    # the rules of storage.fsx.mount_path, with messages that name the handle's parameter
    if not re.match(ABSOLUTE_PATH_PATTERN, mount_path) or has_relative_parts(mount_path):
        raise ValueError(
            f"mount_path {mount_path!r} is not a plain absolute path; give one like /fsx"
        )
    if is_system_directory(mount_path):
        raise ValueError(
            f"mount_path {mount_path!r} is a system directory; mount the file system elsewhere, "
            "e.g. /fsx"
        )


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
        else a new rotating key that is retained with the data. Giving both
        ``kms_key`` and ``config.kms_key_arn`` is an error.
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
        if kms_key is not None and config.kms_key_arn:
            raise ValueError(
                f"both kms_key and storage.fsx.kms_key_arn ({config.kms_key_arn}) name the key of "
                "the file system; give only one of them"
            )
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

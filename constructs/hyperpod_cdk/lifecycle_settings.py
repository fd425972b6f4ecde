"""The settings the lifecycle scripts read on the node (``settings.json``), from a config.

Pure Python (no CDK): the synth uploads exactly this beside the scripts, and
``make lifecycle-dry-run`` runs the scripts on a fake node with it.
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.node_setup import USERS_FILE_ON_NODE, exporter_images
from hyperpod_cdk.config.storage import shared_homes_directory


def node_settings(config: EnvironmentConfig) -> dict[str, Any]:
    """The settings the lifecycle scripts read on the node (``settings.json``).

    Only literal values: a token here would change the content hash on every synth.
    None values are left out: the uploaded JSON must be the one hashed.
    """
    fsx_cfg = config.storage.fsx
    fsx: dict[str, Any] = {
        "enabled": fsx_cfg.enabled,
        "mount_path": fsx_cfg.mount_path,
        "efa": fsx_cfg.efa_enabled,
    }
    if fsx_cfg.enabled:
        fsx["type"] = "lustre"
        # HyperPod mounts FSx on Slurm nodes (InstanceStorageConfigs); on EKS pods use the FSx
        # CSI driver and the node does not mount it.
        fsx["mounted_by"] = "hyperpod" if config.is_slurm else "none"
        # An adopted file system's names are literals: the scripts can mount it themselves
        # should HyperPod's mount not appear (a created one's names are deploy-time tokens).
        if fsx_cfg.dns_name and fsx_cfg.mount_name:
            fsx["dns_name"] = fsx_cfg.dns_name
            fsx["mount_name"] = fsx_cfg.mount_name
    setup = config.cluster.node_setup
    node_setup = setup.model_dump(mode="json", exclude={"users_file", "directory"})
    # each image as the node pulls it (HyperPod's of the region when the config names none), its
    # registry, and the region to log in to for a private Amazon ECR registry: no region logic
    # on the node
    exporters = node_setup["exporters"]
    for key in ("node_image", "dcgm_image"):
        exporters.pop(key)
    for image in exporter_images(config):
        exporters[f"{image.exporter}_image"] = image.uri
        exporters[f"{image.exporter}_registry"] = image.registry
        if image.ecr_region is not None:
            exporters[f"{image.exporter}_ecr_region"] = image.ecr_region
    if config.is_slurm and setup.users_file is not None:
        node_setup["users_file"] = USERS_FILE_ON_NODE
    if config.is_slurm and setup.directory is not None:
        # the server, the groups and the two secrets' ARNs: the node reads the bind password and
        # the CA certificate from Secrets Manager at boot, so neither is in settings.json (or S3)
        node_setup["directory"] = setup.directory.model_dump(mode="json", exclude_none=True)
    settings: dict[str, Any] = {
        "environment": config.name,
        "orchestrator": config.orchestrator,
        "cluster_name": config.cluster_name,
        "lifecycle_hook": config.cluster.effective_lifecycle_hook(config.is_slurm),
        "fsx": fsx,
        "slurm_accounting_database": config.is_slurm
        and config.cluster.slurm_settings.accounting_database,
        "node_setup": node_setup,
        "instance_groups": {
            g.name: {
                key: value
                for key, value in (
                    ("node_type", g.effective_node_type if config.is_slurm else "eks"),
                    ("partition", g.effective_partition),
                    ("instance_type", g.instance_type),
                )
                if value is not None
            }
            for g in config.cluster.instance_groups
        },
    }
    if config.is_slurm:
        settings["cluster_network"] = cluster_network(config)
        settings["homes"] = homes(config)
        if config.storage.openzfs is not None:
            # HyperPod mounts it (FsxOpenZfsConfig); the scripts wait for it and verify it
            settings["openzfs"] = {"enabled": True, "mount_path": config.storage.openzfs.mount_path}
    return settings


def homes(config: EnvironmentConfig) -> dict[str, Any]:
    """Where the users' home directories are: on shared storage (the FSx for OpenZFS mount, else
    ``<Lustre mount>/home``; the controller makes them), or each node's local ``/home``."""
    shared = shared_homes_directory(config)
    if shared is None:
        return {"shared": False, "path": "/home"}
    openzfs = config.storage.openzfs
    mount = openzfs.mount_path if openzfs is not None else config.storage.fsx.mount_path
    return {"shared": True, "path": shared, "mount_path": mount}


def cluster_network(config: EnvironmentConfig) -> dict[str, Any]:
    """Where the cluster's nodes are (their SSH host-key policy): the HyperPod subnets' CIDRs
    when this app creates them; an adopted VPC's subnet ids, which the node resolves at boot
    (ec2:DescribeSubnets, in the region given here)."""
    net = config.network
    if net.vpc_id is None:
        cidrs = [net.compute_cidr, *net.additional_compute_cidrs.values()]
        return {"region": config.region, "cidrs": [str(c) for c in cidrs], "subnet_ids": []}
    subnet_ids = [net.compute_subnet_id, *net.additional_compute_subnet_ids.values()]
    return {
        "region": config.region,
        "cidrs": [],
        "subnet_ids": [s for s in subnet_ids if s is not None],
    }

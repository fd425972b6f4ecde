"""Where the HyperPod cluster keeps what the rules look for (``AWS::SageMaker::Cluster``)."""

from __future__ import annotations

from hyperpod_cdk.compliance.model import Assembly, Resource, Value

CLUSTER = "AWS::SageMaker::Cluster"


def clusters(assembly: Assembly) -> list[Resource]:
    """The HyperPod clusters of one App or Stage."""
    return list(assembly.resources(CLUSTER))


def instance_groups(cluster: Resource) -> list[Value]:
    """Every instance group of the cluster, restricted instance groups included."""
    groups = cluster.prop("InstanceGroups").items() or []
    return groups + (cluster.prop("RestrictedInstanceGroups").items() or [])


def node_security_groups(cluster: Resource) -> list[Value]:
    """The security groups on the nodes: the cluster's, and each group's override."""
    found = list(cluster.prop("VpcConfig", "SecurityGroupIds").items() or [])
    for group in instance_groups(cluster):
        found.extend(group.get("OverrideVpcConfig", "SecurityGroupIds").items() or [])
    return found


def cluster_subnets(cluster: Resource) -> list[Value]:
    """The cluster's own subnets (``VpcConfig``), without the per-group overrides."""
    return cluster.prop("VpcConfig", "Subnets").items() or []


def mounted_file_system_dns_names(cluster: Resource) -> list[Value]:
    """The DNS names of the FSx file systems (for Lustre and for OpenZFS) HyperPod mounts on the
    nodes."""
    return [
        config.get(kind, "DnsName")
        for group in instance_groups(cluster)
        for config in group.get("InstanceStorageConfigs").items() or []
        for kind in ("FsxLustreConfig", "FsxOpenZfsConfig")
        if not config.get(kind).missing
    ]

"""HyperPod-FsxClusterAz: an FSx file system of the app sits in the AZ of the HyperPod cluster.

Nodes reach a file system in another AZ only across AZs: slower, billed per GB, and not at all
over EFA (an EFA-enabled FSx for Lustre file system must share the AZ and the /16 of its
clients; FSx for Lustre user guide "Working with EFA-enabled file systems"). Capacity and
training plans are per AZ *ID*, so the comparison uses ``AvailabilityZoneId`` of the subnets
(``AvailabilityZone`` names only compare with names).

The rule looks at each single-subnet ``AWS::FSx::FileSystem`` of the app (multi-AZ file
systems serve both AZs) against the cluster-level ``VpcConfig.Subnets`` of the HyperPod
clusters that mount it through ``InstanceStorageConfigs`` (on EKS, pods mount it: then every
cluster of the app). Instance groups placed in another AZ on purpose (``OverrideVpcConfig``)
are not held against the file system. Subnets given as literal ids come from outside the app:
unless both sides name the same subnet, the rule cannot tell and is not applicable.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.hyperpod import (
    cluster_subnets,
    clusters,
    mounted_file_system_dns_names,
)
from hyperpod_cdk.compliance.model import Ref, Resource, Value
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, NOT_APPLICABLE, HyperPodRule

FILE_SYSTEM = "AWS::FSx::FileSystem"


def availability_zone(subnet: Value) -> tuple[str, str] | None:
    """``("id", "usw2-az2")`` or ``("name", "us-west-2b")`` of a subnet of the app, else None."""
    target = subnet.target()
    if not isinstance(target, Ref) or target.resource.type != "AWS::EC2::Subnet":
        return None
    resource = target.resource
    for kind, key in (("id", "AvailabilityZoneId"), ("name", "AvailabilityZone")):
        value = resource.prop(key).literal
        if isinstance(value, str):
            return kind, value
    return None


def _same_subnet(a: Value, b: Value) -> bool:
    left, right = a.target(), b.target()
    if isinstance(left, Ref) and isinstance(right, Ref):
        return left.resource is right.resource
    return isinstance(left, str) and left == right


def _clusters_using(file_system: Resource) -> list[Resource]:
    found = clusters(file_system.assembly)
    mounting = [
        cluster
        for cluster in found
        if any(
            dns.refers_to(file_system, "DNSName") for dns in mounted_file_system_dns_names(cluster)
        )
    ]
    return mounting or found


def _verdict(subnet: Value, cluster: Resource) -> NagRuleCompliance:
    subnets = cluster_subnets(cluster)
    if any(_same_subnet(subnet, s) for s in subnets):
        return COMPLIANT
    zone = availability_zone(subnet)
    zones = [availability_zone(s) for s in subnets]
    if zone is None or not zones:
        return NOT_APPLICABLE
    if zone in zones:
        return COMPLIANT
    if any(z is None or z[0] != zone[0] for z in zones):
        return NOT_APPLICABLE  # a subnet from outside the app, or names against ids
    return NON_COMPLIANT


def check(file_system: Resource) -> NagRuleCompliance:
    subnets = file_system.prop("SubnetIds").items() or []
    using = _clusters_using(file_system)
    if len(subnets) != 1 or not using:
        return NOT_APPLICABLE
    verdicts = {_verdict(subnets[0], cluster) for cluster in using}
    for verdict in (NON_COMPLIANT, COMPLIANT):
        if verdict in verdicts:
            return verdict
    return NOT_APPLICABLE


RULE = HyperPodRule(
    name="FsxClusterAz",
    info="The FSx file system is not in the availability zone of the HyperPod cluster's subnets.",
    explanation="HyperPod nodes reach a file system in another AZ only across AZs (slower, "
    "billed, and never over EFA); create it in the HyperPod subnet.",
    resource_types=frozenset({FILE_SYSTEM}),
    check=check,
)

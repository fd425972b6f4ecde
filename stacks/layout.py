"""Which stacks an environment has: pure config logic, shared by the app and the tests."""

from __future__ import annotations

import hashlib
import json

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.observability import observability_settings

# Stack kinds in deploy order; each stack is named "<name>-<kind>".
STACK_KINDS = (
    "network",
    "egress",
    "storage",
    "nodes",
    "eks",
    "eks-dependencies",
    "cluster",
    "metrics",
    "eks-addons",
    "data-repositories",
)


def needs_egress(config: EnvironmentConfig) -> bool:
    """True when the ``egress`` stack has something to create.

    A created VPC always has egress (NAT or, in a closed network, interface
    endpoints), flow logs and the closure of its default security group; an
    adopted one only the interface endpoints the config asks for.
    """
    net = config.network
    return net.vpc_id is None or bool(net.interface_endpoints)


def fsx_csi_driver_enabled(config: EnvironmentConfig) -> bool:
    """``eks.addons.fsx_csi_driver``, defaulting to on when the environment has a file system."""
    return config.fsx_csi_driver_enabled


def needs_eks_addons(config: EnvironmentConfig) -> bool:
    """True when the ``eks-addons`` stack has something to create."""
    return config.needs_eks_addons


def needs_metrics(config: EnvironmentConfig) -> bool:
    """True when the ``metrics`` stack has something to create: Slurm with ``observability``
    (on EKS the eks-addons stack holds the metrics, beside the observability add-on)."""
    return config.is_slurm and observability_settings(config) is not None


def stack_kinds(config: EnvironmentConfig) -> list[str]:
    """The kinds of stack the app builds for ``config``, in deploy order."""
    fsx = config.storage.fsx
    present = {
        "egress": needs_egress(config),
        "eks": not config.is_slurm and config.eks_settings.cluster_arn is None,
        "eks-dependencies": not config.is_slurm,
        "metrics": needs_metrics(config),
        "eks-addons": needs_eks_addons(config),
        "data-repositories": fsx.enabled and bool(fsx.data_repository_associations),
    }
    return [kind for kind in STACK_KINDS if present.get(kind, True)]


def cluster_identity(config: EnvironmentConfig) -> str:
    """A short digest of what the HyperPod cluster's create-only properties come from.

    ``ClusterName``, ``VpcConfig`` and ``Orchestrator.Eks`` are create-only: when one changes,
    CloudFormation replaces the cluster and its ARN changes. A stack that reads the ARN by weak
    reference writes this digest into its own template, so that its template changes too and
    ``cdk deploy`` updates it (a weak reference is never re-read on its own).
    """
    net = config.network
    eks = None if config.is_slurm else config.eks_settings
    inputs = {
        "name": config.cluster_name,
        "orchestrator": config.orchestrator,
        "eks": None if eks is None else (eks.cluster_arn or config.eks_cluster_name),
        "vpc": net.vpc_id,
        "az": net.availability_zone_id,
        "compute": net.compute_subnet_id or str(net.compute_cidr),
        "more": sorted(
            [*net.additional_compute_subnet_ids.items(),
             *((az, str(c)) for az, c in net.additional_compute_cidrs.items())]
        ),
        "groups": net.security_group_ids,
    }  # fmt: skip
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    return digest[:16]

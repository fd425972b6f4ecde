"""Which stacks an environment has: pure config logic, shared by the app and the tests."""

from __future__ import annotations

from hyperpod_cdk.config import EnvironmentConfig

# Stack kinds in deploy order; each stack is named "<name>-<kind>".
STACK_KINDS = (
    "network",
    "egress",
    "storage",
    "nodes",
    "eks",
    "eks-dependencies",
    "cluster",
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
    value = config.eks_settings.addons.fsx_csi_driver
    return config.storage.fsx.enabled if value is None else value


def needs_eks_addons(config: EnvironmentConfig) -> bool:
    """True when the ``eks-addons`` stack has something to create.

    A created EKS cluster always gets CoreDNS there; an adopted one only the
    optional add-ons asked for.
    """
    if config.is_slurm:
        return False
    eks = config.eks_settings
    addons = eks.addons
    return (
        eks.cluster_arn is None
        or addons.training_operator
        or addons.task_governance
        or addons.observability
        or fsx_csi_driver_enabled(config)
    )


def stack_kinds(config: EnvironmentConfig) -> list[str]:
    """The kinds of stack the app builds for ``config``, in deploy order."""
    fsx = config.storage.fsx
    present = {
        "egress": needs_egress(config),
        "eks": not config.is_slurm and config.eks_settings.cluster_arn is None,
        "eks-dependencies": not config.is_slurm,
        "eks-addons": needs_eks_addons(config),
        "data-repositories": fsx.enabled and bool(fsx.data_repository_associations),
    }
    return [kind for kind in STACK_KINDS if present.get(kind, True)]

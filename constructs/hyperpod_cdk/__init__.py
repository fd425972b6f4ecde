"""hyperpod_cdk: AWS CDK constructs for a complete Amazon SageMaker HyperPod environment.

The constructs take real CDK objects (``ec2.IVpc``, ``ec2.ISubnet``,
``ec2.ISecurityGroup``, ``kms.IKey``, ``s3.IBucket``, an ``aws_eks_v2.ICluster``
through :class:`AdoptedEksCluster`, a :class:`FileSystemHandle`, also built from
an ``aws_fsx.LustreFileSystem``) so a platform team can compose them with its own
resources, or adopt existing ones; the typed config models describe a whole environment (or one section of
it) and validate it with messages that name the key.

Everything listed in ``__all__`` can be imported from here::

    from hyperpod_cdk import ClusterConfig, HyperPodCluster, LustreFileSystem

Names are imported on first use, so the config models and the loader
(``hyperpod_cdk.EnvironmentConfig``, ``hyperpod_cdk.load_environment``) load
without starting the CDK's JavaScript runtime.

The constructs need some of the CDK's feature flags; outside a ``cdk.json`` that
sets them, create the App with them::

    app = cdk.App(context=hyperpod_cdk.recommended_context())

The EKS constructs need the kubectl Lambda layers of the ``eks`` extra (the package is not
on PyPI: ``pip install 'dist/hyperpod_cdk-0.1.0-py3-none-any.whl[eks]'`` for a wheel built from
the repository, or ``pip install 'hyperpod-cdk[eks] @ git+https://...#subdirectory=constructs'``);
the Slurm ones do not.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the module that defines it.
_EXPORTS = {
    # network
    "EfaSecurityGroup": "hyperpod_cdk.network",
    "HyperPodNetwork": "hyperpod_cdk.network",
    # storage
    "DataBucket": "hyperpod_cdk.storage",
    "DataRepositoryAssociations": "hyperpod_cdk.storage",
    "FileSystemHandle": "hyperpod_cdk.storage",
    "LustreFileSystem": "hyperpod_cdk.storage",
    "OpenZfsFileSystem": "hyperpod_cdk.storage",
    "OpenZfsHandle": "hyperpod_cdk.storage",
    # IAM
    "ClusterAutoScalingRole": "hyperpod_cdk.iam",
    "ExecutionRole": "hyperpod_cdk.iam",
    "RolePath": "hyperpod_cdk.iam.aspects",
    # the HyperPod cluster
    "AccountingDatabaseRef": "hyperpod_cdk.cluster",
    "HyperPodCluster": "hyperpod_cdk.cluster",
    "LifecycleRef": "hyperpod_cdk.cluster",
    "LifecycleScripts": "hyperpod_cdk.cluster",
    "SlurmAccountingDatabase": "hyperpod_cdk.cluster",
    "node_settings": "hyperpod_cdk.lifecycle.settings",
    "build_node_settings": "hyperpod_cdk.lifecycle.settings",
    "NodeSettings": "hyperpod_cdk.lifecycle.settings",
    "SettingsError": "hyperpod_cdk.lifecycle.settings",
    # EKS orchestration
    "AdoptedEksCluster": "hyperpod_cdk.eks.cluster",
    "HyperPodDependencies": "hyperpod_cdk.eks.dependencies",
    "HyperPodEksAddons": "hyperpod_cdk.eks.addons",
    "HyperPodEksCluster": "hyperpod_cdk.eks.cluster",
    "HyperPodNodeWait": "hyperpod_cdk.eks.node_wait",
    # alerts
    "HyperPodAlerts": "hyperpod_cdk.alerts.construct",
    "HyperPodRollbackAlarms": "hyperpod_cdk.alerts.construct",
    # log encryption
    "EncryptLogGroups": "hyperpod_cdk.log_encryption",
    "LogsKey": "hyperpod_cdk.log_encryption",
    # the CDK feature flags the constructs are tested with
    "recommended_context": "hyperpod_cdk.context",
    # compliance
    "HyperPodChecks": "hyperpod_cdk.compliance",
    "acknowledge": "hyperpod_cdk.compliance.nag",
    "register_compliance_packs": "hyperpod_cdk.compliance.nag",
    # config: models
    "AlertsConfig": "hyperpod_cdk.config.alerts",
    "AutoPatch": "hyperpod_cdk.config",
    "ClusterConfig": "hyperpod_cdk.config",
    "DataRepositoryAssociation": "hyperpod_cdk.config",
    "EksAddons": "hyperpod_cdk.config.eks",
    "EksConfig": "hyperpod_cdk.config",
    "EksDependencies": "hyperpod_cdk.config.eks",
    "EnvironmentConfig": "hyperpod_cdk.config",
    "FsxConfig": "hyperpod_cdk.config",
    "IamConfig": "hyperpod_cdk.config",
    "InstanceGroup": "hyperpod_cdk.config",
    "NetworkConfig": "hyperpod_cdk.config",
    "NodeSetup": "hyperpod_cdk.config.node_setup",
    "OpenZfsConfig": "hyperpod_cdk.config",
    "PipelineConfig": "hyperpod_cdk.config",
    "PipelineFileConfig": "hyperpod_cdk.config",
    "PipelineStage": "hyperpod_cdk.config",
    "ScheduledUpdate": "hyperpod_cdk.config",
    "SlurmSettings": "hyperpod_cdk.config",
    "StorageConfig": "hyperpod_cdk.config",
    "Taint": "hyperpod_cdk.config",
    "TieredStorageConfig": "hyperpod_cdk.config",
    # config: loading and validation
    "ConfigError": "hyperpod_cdk.config",
    "Issue": "hyperpod_cdk.config",
    "check_environment": "hyperpod_cdk.config",
    "load_config": "hyperpod_cdk.config",
    "load_environment": "hyperpod_cdk.config",
    "parse": "hyperpod_cdk.config",
    "validate": "hyperpod_cdk.config",
    "validate_file": "hyperpod_cdk.config",
}

__all__ = [
    "AccountingDatabaseRef",
    "AdoptedEksCluster",
    "AlertsConfig",
    "AutoPatch",
    "ClusterAutoScalingRole",
    "ClusterConfig",
    "ConfigError",
    "DataBucket",
    "DataRepositoryAssociation",
    "DataRepositoryAssociations",
    "EfaSecurityGroup",
    "EksAddons",
    "EksConfig",
    "EksDependencies",
    "EncryptLogGroups",
    "EnvironmentConfig",
    "ExecutionRole",
    "FileSystemHandle",
    "FsxConfig",
    "HyperPodAlerts",
    "HyperPodChecks",
    "HyperPodCluster",
    "HyperPodDependencies",
    "HyperPodEksAddons",
    "HyperPodEksCluster",
    "HyperPodNetwork",
    "HyperPodNodeWait",
    "HyperPodRollbackAlarms",
    "IamConfig",
    "InstanceGroup",
    "Issue",
    "LifecycleRef",
    "LifecycleScripts",
    "LogsKey",
    "LustreFileSystem",
    "NetworkConfig",
    "NodeSettings",
    "NodeSetup",
    "OpenZfsConfig",
    "OpenZfsFileSystem",
    "OpenZfsHandle",
    "PipelineConfig",
    "PipelineFileConfig",
    "PipelineStage",
    "RolePath",
    "ScheduledUpdate",
    "SlurmAccountingDatabase",
    "SettingsError",
    "SlurmSettings",
    "StorageConfig",
    "Taint",
    "TieredStorageConfig",
    "acknowledge",
    "build_node_settings",
    "check_environment",
    "load_config",
    "load_environment",
    "node_settings",
    "parse",
    "recommended_context",
    "register_compliance_packs",
    "validate",
    "validate_file",
]

if TYPE_CHECKING:
    from hyperpod_cdk.alerts.construct import HyperPodAlerts, HyperPodRollbackAlarms
    from hyperpod_cdk.cluster import (
        AccountingDatabaseRef,
        HyperPodCluster,
        LifecycleRef,
        LifecycleScripts,
        SlurmAccountingDatabase,
    )
    from hyperpod_cdk.compliance import HyperPodChecks
    from hyperpod_cdk.compliance.nag import acknowledge, register_compliance_packs
    from hyperpod_cdk.config import (
        AutoPatch,
        ClusterConfig,
        ConfigError,
        DataRepositoryAssociation,
        EksConfig,
        EnvironmentConfig,
        FsxConfig,
        IamConfig,
        InstanceGroup,
        Issue,
        NetworkConfig,
        OpenZfsConfig,
        PipelineConfig,
        PipelineFileConfig,
        PipelineStage,
        ScheduledUpdate,
        SlurmSettings,
        StorageConfig,
        Taint,
        TieredStorageConfig,
        check_environment,
        load_config,
        load_environment,
        parse,
        validate,
        validate_file,
    )
    from hyperpod_cdk.config.alerts import AlertsConfig
    from hyperpod_cdk.config.eks import EksAddons, EksDependencies
    from hyperpod_cdk.config.node_setup import NodeSetup
    from hyperpod_cdk.context import recommended_context
    from hyperpod_cdk.eks.addons import HyperPodEksAddons
    from hyperpod_cdk.eks.cluster import AdoptedEksCluster, HyperPodEksCluster
    from hyperpod_cdk.eks.dependencies import HyperPodDependencies
    from hyperpod_cdk.eks.node_wait import HyperPodNodeWait
    from hyperpod_cdk.iam import ClusterAutoScalingRole, ExecutionRole
    from hyperpod_cdk.iam.aspects import RolePath
    from hyperpod_cdk.lifecycle.settings import (
        NodeSettings,
        SettingsError,
        build_node_settings,
        node_settings,
    )
    from hyperpod_cdk.log_encryption import EncryptLogGroups, LogsKey
    from hyperpod_cdk.network import EfaSecurityGroup, HyperPodNetwork
    from hyperpod_cdk.storage import (
        DataBucket,
        DataRepositoryAssociations,
        FileSystemHandle,
        LustreFileSystem,
        OpenZfsFileSystem,
        OpenZfsHandle,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hyperpod_cdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

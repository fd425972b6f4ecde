"""hyperpod_cdk: AWS CDK constructs for a complete Amazon SageMaker HyperPod environment.

The constructs take real CDK objects (``ec2.IVpc``, ``ec2.ISubnet``,
``ec2.ISecurityGroup``, a :class:`FileSystemHandle`) so a platform team can
compose them with its own resources; the typed config models describe a whole
environment from one YAML file.

Names are imported on first use, so ``hyperpod_cdk.config`` (validation)
loads without starting the CDK's JavaScript runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AccountingDatabaseRef": "hyperpod_cdk.cluster",
    "HyperPodCluster": "hyperpod_cdk.cluster",
    "LifecycleRef": "hyperpod_cdk.cluster",
    "LifecycleScripts": "hyperpod_cdk.cluster",
    "SlurmAccountingDatabase": "hyperpod_cdk.cluster",
    "ConfigError": "hyperpod_cdk.config",
    "EnvironmentConfig": "hyperpod_cdk.config",
    "load_config": "hyperpod_cdk.config",
    "load_environment": "hyperpod_cdk.config",
    "ExecutionRole": "hyperpod_cdk.iam",
    "EfaSecurityGroup": "hyperpod_cdk.network",
    "HyperPodNetwork": "hyperpod_cdk.network",
    "DataBucket": "hyperpod_cdk.storage",
    "DataRepositoryAssociations": "hyperpod_cdk.storage",
    "FileSystemHandle": "hyperpod_cdk.storage",
    "LustreFileSystem": "hyperpod_cdk.storage",
}

__all__ = [
    "AccountingDatabaseRef",
    "ConfigError",
    "DataBucket",
    "DataRepositoryAssociations",
    "EfaSecurityGroup",
    "EnvironmentConfig",
    "ExecutionRole",
    "FileSystemHandle",
    "HyperPodCluster",
    "HyperPodNetwork",
    "LifecycleRef",
    "LifecycleScripts",
    "LustreFileSystem",
    "SlurmAccountingDatabase",
    "load_config",
    "load_environment",
]

if TYPE_CHECKING:
    from hyperpod_cdk.cluster import (
        AccountingDatabaseRef,
        HyperPodCluster,
        LifecycleRef,
        LifecycleScripts,
        SlurmAccountingDatabase,
    )
    from hyperpod_cdk.config import ConfigError, EnvironmentConfig, load_config, load_environment
    from hyperpod_cdk.iam import ExecutionRole
    from hyperpod_cdk.network import EfaSecurityGroup, HyperPodNetwork
    from hyperpod_cdk.storage import (
        DataBucket,
        DataRepositoryAssociations,
        FileSystemHandle,
        LustreFileSystem,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hyperpod_cdk' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

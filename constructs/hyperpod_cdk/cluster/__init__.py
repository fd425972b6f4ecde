"""The HyperPod cluster, its lifecycle scripts and the Slurm accounting database.

The accounting database (``aws_rds``) is imported on first use: an app without one does not
load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hyperpod_cdk.cluster.hyperpod_cluster import (
    AccountingDatabaseRef,
    HyperPodCluster,
    LifecycleRef,
)
from hyperpod_cdk.lifecycle.scripts import (
    SETTINGS_FILE,
    LifecycleScripts,
    content_hash,
    lifecycle_bucket_name,
)

if TYPE_CHECKING:
    from hyperpod_cdk.cluster.accounting import SlurmAccountingDatabase

__all__ = [
    "SETTINGS_FILE",
    "AccountingDatabaseRef",
    "HyperPodCluster",
    "LifecycleRef",
    "LifecycleScripts",
    "SlurmAccountingDatabase",
    "content_hash",
    "lifecycle_bucket_name",
]


def __getattr__(name: str) -> Any:
    if name == "SlurmAccountingDatabase":
        from hyperpod_cdk.cluster.accounting import SlurmAccountingDatabase

        return SlurmAccountingDatabase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

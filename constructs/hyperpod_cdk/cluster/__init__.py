"""The HyperPod cluster, its lifecycle scripts and the Slurm accounting database."""

from hyperpod_cdk.cluster.accounting import SlurmAccountingDatabase
from hyperpod_cdk.cluster.hyperpod_cluster import (
    AccountingDatabaseRef,
    HyperPodCluster,
    LifecycleRef,
)
from hyperpod_cdk.cluster.lifecycle import SETTINGS_FILE, LifecycleScripts, content_hash

__all__ = [
    "SETTINGS_FILE",
    "AccountingDatabaseRef",
    "HyperPodCluster",
    "LifecycleRef",
    "LifecycleScripts",
    "SlurmAccountingDatabase",
    "content_hash",
]

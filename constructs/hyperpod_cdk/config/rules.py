"""Every cross-key rule of an environment config, in the order of the file.

Each section module holds its models and its rules (:mod:`.network`, :mod:`.storage`,
:mod:`.cluster`, :mod:`.eks`, ...); :func:`check_environment` runs them all and collects what
they find as :class:`~hyperpod_cdk.config.base.Issue` objects instead of raising, so that one run
reports every problem. The field-level limits live on the models; the rules are the ones
CloudFormation or HyperPod would only reject at deploy time, checked before anything reaches AWS.
"""

from __future__ import annotations

from pathlib import Path

from hyperpod_cdk.config.alerts import check_alerts
from hyperpod_cdk.config.autoscaling import check_autoscaling
from hyperpod_cdk.config.base import Issue, check_orchestrator_scope
from hyperpod_cdk.config.cluster import check_cluster, check_instance_types, check_lifecycle_dir
from hyperpod_cdk.config.eks import check_eks
from hyperpod_cdk.config.inference import check_inference
from hyperpod_cdk.config.models import EnvironmentConfig, check_top_level
from hyperpod_cdk.config.network import check_az_ids, check_network
from hyperpod_cdk.config.node_setup import check_node_setup
from hyperpod_cdk.config.observability import check_observability
from hyperpod_cdk.config.storage import check_storage
from hyperpod_cdk.config.task_governance import check_task_governance


class _Collector:
    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def error(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message))

    def warn(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message, "warning"))


def check_environment(cfg: EnvironmentConfig, project_root: Path | None = None) -> list[Issue]:
    """Every cross-key problem of ``cfg``, in the order of the file."""
    out = _Collector()
    check_top_level(cfg, out)
    check_az_ids(cfg, out)
    # every key marked eks_only / slurm_only (hyperpod_cdk.config.base.only_with)
    check_orchestrator_scope(cfg, cfg.orchestrator, out)
    check_network(cfg, out)
    check_storage(cfg, out)
    check_cluster(cfg, out)
    check_autoscaling(cfg, out)
    check_instance_types(cfg, out)
    check_eks(cfg, out)
    check_task_governance(cfg, out)
    check_inference(cfg, out)
    check_node_setup(cfg, project_root, out)
    check_alerts(cfg, out)
    check_observability(cfg, out)
    if project_root is not None:
        check_lifecycle_dir(cfg, project_root, out)
    return out.issues

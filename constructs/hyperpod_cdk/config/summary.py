"""The one line that says what a valid config file describes (`make validate`, every synth)."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.pipeline import LoadedStage, PipelineFileConfig


def describe(
    cfg: EnvironmentConfig | PipelineFileConfig, stages: Sequence[LoadedStage] = ()
) -> str:
    """``environment 'demo' (slurm, us-west-2), cluster 'demo' with 3 instance groups, 6 nodes``,
    or, for a pipeline file and its loaded ``stages``, the pipeline's account and region and
    each stage's."""
    if isinstance(cfg, EnvironmentConfig):
        groups = cfg.cluster.instance_groups
        nodes = sum(group.count for group in groups)
        return (
            f"environment {cfg.name!r} ({cfg.orchestrator}, {cfg.region}), "
            f"cluster {cfg.cluster_name!r} with {len(groups)} instance groups, {nodes} nodes"
        )
    parts = []
    for stage in stages:
        where = [f"account {stage.config.account or 'of the pipeline'}", stage.config.region]
        if stage.stage.approval:
            where.append("after a manual approval")
        parts.append(f"{stage.name} ({', '.join(where)})")
    count = len(cfg.pipeline.stages)
    return (
        f"pipeline {cfg.name!r} (account {cfg.account}, {cfg.region}) with {count} "
        f"stage{'s' if count != 1 else ''}: {', '.join(parts)}"
    )

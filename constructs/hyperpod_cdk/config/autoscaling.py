"""The autoscaling keys of ``cluster``: ``node_pools``, and the cluster fields the HyperPod API
has but CloudFormation cannot express yet.

``cluster.auto_scaling`` makes HyperPod run a managed Karpenter, which scales nothing until a
``HyperpodNodeClass`` (the instance groups it may use) and a ``NodePool`` (the limits) exist.
Each ``cluster.node_pools`` entry becomes one of each, installed by the ``eks-addons`` stack
after the HyperPod cluster (:mod:`hyperpod_cdk.eks.cluster_objects`).

Facts (SageMaker developer guide, "Create a NodeClass" and "Create a NodePool",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-nodeclass.html
and ...-autoscaling-nodepool.html, read 2026-11-25): a NodeClass lists at most 10 instance
groups; the groups start at 0 nodes (Karpenter scales a group that starts above 0 down to 0);
no training plan or reserved capacity; no deep health checks (they take 60-90 minutes while pods
stay pending, which over-provisions). Spot groups may be in a NodeClass: "Spot instances in
Amazon SageMaker HyperPod", section "Karpenter based Autoscaling"
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-spot-instance.html, read
2026-11-27): "Karpenter prioritizes Spot instance groups over On-Demand instances, using
On-Demand as a fallback when specified", and "You can also include onDemand IGs for fallback"
(the NodeClass page's older "only on-demand capacity" is superseded). A pool of spot groups only
is a warning: nothing takes over when Spot capacity is reclaimed.

Cluster fields in the SageMaker API but not in ``AWS::SageMaker::Cluster`` (its registry
schema and aws-cdk-lib 2.276, HYPERPOD_FACTS 2026-11-24): AutoPatch ``PatchingStrategy:
DrainFirst``, ``IdleWaitWindowInSeconds`` and ``DrainPolicy``, and the deep health check
``MultiNodeTrainingValidation``. The config accepts them only to reject them with that reason
(the two values in the models' validators, the two keys here).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, field_validator

from hyperpod_cdk.config.base import (
    NOT_IN_CLOUDFORMATION,
    WHOLE_NUMBER,
    IssueSink,
    StrictModel,
    matching,
)

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

MAX_NODE_CLASS_GROUPS = 10  # "You can specify up to 10 instance groups in a NodeClass."
# NodePool and HyperpodNodeClass are cluster-scoped objects named by the pool: a DNS label
# (lowercase letters, digits and inner hyphens, at most 63 characters), which is also a valid
# label value (karpenter.sh/nodepool on the nodes).
NODE_POOL_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
NODE_POOL_NAME_MAX = 63

NodePoolName = Annotated[
    str,
    matching(
        NODE_POOL_NAME_PATTERN,
        "a Kubernetes object name: lowercase letters, digits and inner hyphens, like gpu-burst",
        max_length=NODE_POOL_NAME_MAX,
    ),
]


class NodePoolLimits(StrictModel):
    """The most a node pool may hold at once (the NodePool's spec.limits)."""

    gpus: Annotated[int, Field(ge=0, le=100_000), WHOLE_NUMBER] = Field(
        description="NVIDIA GPUs (nvidia.com/gpu) across the pool's nodes; 0 for a CPU pool."
    )
    cpu: Annotated[int, Field(ge=1, le=10_000_000), WHOLE_NUMBER] | None = Field(
        default=None, description="vCPUs across the pool's nodes; default: no limit."
    )
    memory_gib: Annotated[int, Field(ge=1, le=100_000_000), WHOLE_NUMBER] | None = Field(
        default=None, description="Memory in GiB across the pool's nodes; default: no limit."
    )

    def as_kubernetes(self) -> dict[str, str]:
        """``spec.limits`` as Karpenter reads it (resource quantities as strings)."""
        limits = {"nvidia.com/gpu": str(self.gpus)}
        if self.cpu is not None:
            limits["cpu"] = str(self.cpu)
        if self.memory_gib is not None:
            limits["memory"] = f"{self.memory_gib}Gi"
        return limits


class NodePool(StrictModel):
    """With ``cluster.auto_scaling``: instance groups Karpenter scales (from 0), and
    their limits: one ``HyperpodNodeClass`` and one ``NodePool`` of this name."""

    name: NodePoolName = Field(description="Names the HyperpodNodeClass and the NodePool.")
    instance_groups: Annotated[list[str], Field(min_length=1, max_length=MAX_NODE_CLASS_GROUPS)] = (
        Field(
            description="Names of this cluster's instance groups (at most 10), on-demand or "
            "spot (Karpenter prefers spot, on-demand is the fallback), without a training plan "
            "or deep health checks, starting at count 0."
        )
    )
    limits: NodePoolLimits = Field(
        description="The most the pool may hold at once (the NodePool's spec.limits)."
    )

    @field_validator("instance_groups")
    @classmethod
    def _unique_groups(cls, value: list[str]) -> list[str]:
        twice = sorted(name for name, n in Counter(value).items() if n > 1)
        if twice:
            raise ValueError(f"instance group {twice[0]!r} is listed twice")
        return value


# -- cross-key rules --------------------------------------------------------------------------


def check_autoscaling(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``cluster.node_pools`` and of the API-only cluster fields."""
    _check_api_only_fields(cfg, out)
    cluster = cfg.cluster
    pools = cluster.node_pools
    if cfg.is_slurm:
        return  # cluster.node_pools is eks only (check_orchestrator_scope)
    if pools and not cluster.auto_scaling:
        out.error(
            "cluster.node_pools",
            "needs cluster.auto_scaling: true (HyperPod's managed Karpenter scales the pools)",
        )
    if cluster.auto_scaling and not pools:
        out.warn(
            "cluster.auto_scaling",
            "no cluster.node_pools: HyperPod runs Karpenter but nothing will scale until a "
            "HyperpodNodeClass and a NodePool exist; add a node pool",
        )
    groups = {g.name: (i, g) for i, g in enumerate(cluster.instance_groups)}
    pooled: set[str] = set()
    seen: dict[str, int] = {}
    for p, pool in enumerate(pools):
        path = f"cluster.node_pools[{p}]"
        if pool.name in seen:
            out.error(
                f"{path}.name",
                f"{pool.name!r} is already the name of node_pools[{seen[pool.name]}]",
            )
        seen.setdefault(pool.name, p)
        spot: list[str] = []
        for g, name in enumerate(pool.instance_groups):
            where = f"{path}.instance_groups[{g}]"
            if name not in groups:
                known = ", ".join(groups) or "none"
                out.error(where, f"{name!r} is not an instance group of this cluster ({known})")
                continue
            pooled.add(name)
            i, group = groups[name]
            group_path = f"cluster.instance_groups[{i}]"
            if group.capacity_type == "spot":
                spot.append(name)
            if group.training_plan_arn:
                out.error(
                    f"{group_path}.training_plan_arn",
                    f"group {name!r} is in node pool {pool.name!r}: HyperPod autoscaling does "
                    "not use training plans or reserved capacity; remove it from the pool",
                )
            if group.deep_health_checks:
                out.error(
                    f"{group_path}.deep_health_checks",
                    f"group {name!r} is in node pool {pool.name!r}: HyperPod autoscaling does "
                    "not support deep health checks (60-90 minutes of pending pods); remove them",
                )
            if group.count > 0:
                out.warn(
                    f"{group_path}.count",
                    f"group {name!r} is in node pool {pool.name!r}: Karpenter scales a group "
                    f"that starts above 0 down to 0 (AWS); set count: 0",
                )
        if spot and len(spot) == len(pool.instance_groups):
            out.warn(
                f"{path}.instance_groups",
                f"every group of node pool {pool.name!r} is spot ({', '.join(spot)}): when Spot "
                "capacity is reclaimed or unavailable nothing takes over; AWS's spot page "
                "suggests an on-demand group in the same pool as the fallback",
            )
    if not cluster.auto_scaling:
        return
    for i, group in enumerate(cluster.instance_groups):
        if group.count == 0 and not group.min_count and group.name not in pooled:
            out.error(
                f"cluster.instance_groups[{i}].count",
                f"0, and group {group.name!r} is in no node pool, so nothing ever scales it up: "
                "add it to a cluster.node_pools entry or give it a count",
            )


def _check_api_only_fields(cfg: EnvironmentConfig, out: IssueSink) -> None:
    for i, group in enumerate(cfg.cluster.instance_groups):
        path = f"cluster.instance_groups[{i}]"
        patch = group.auto_patch
        if patch is None:
            continue
        for key, api in (
            ("idle_wait_seconds", "IdleWaitWindowInSeconds"),
            ("drain_policy", "DrainPolicy"),
        ):
            if patch.is_set(key):
                out.error(f"{path}.auto_patch.{key}", f"({api}) {NOT_IN_CLOUDFORMATION}; remove it")

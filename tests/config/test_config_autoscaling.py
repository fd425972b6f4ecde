"""cluster.node_pools, tiered storage's range and the cluster fields CloudFormation lacks."""

from __future__ import annotations

import functools
from typing import Any

import config_testkit as kit
import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk.config import EnvironmentConfig, validate

G = "cluster.instance_groups"
BURST = {"name": "burst", "instance_type": "ml.g5.8xlarge", "count": 0}


errors = functools.partial(kit.errors, base="eks")
warnings = functools.partial(kit.warnings, base="eks")


def pool(name: str = "burst", groups: tuple[str, ...] = ("burst",), **limits: Any) -> dict:
    return {"name": name, "instance_groups": list(groups), "limits": limits or {"gpus": 8}}


def scaling(**changes: Any) -> dict[str, Any]:
    """Autoscaling with a group that starts at 0 in one node pool, plus ``changes``."""
    out: dict[str, Any] = {
        "cluster.auto_scaling": True,
        f"{G}[2]": dict(BURST),
        "cluster.node_pools": [pool()],
    }
    out.update(changes)
    return out


def test_a_node_pool_of_a_group_at_zero_is_valid() -> None:
    cfg, found = validate(build(scaling(), "eks"), None)
    assert isinstance(cfg, EnvironmentConfig)
    assert [i for i in found if i.severity == "error"] == []
    (only,) = cfg.cluster.node_pools
    assert only.instance_groups == ["burst"]
    assert only.limits.as_kubernetes() == {"nvidia.com/gpu": "8"}


def test_limits_become_kubernetes_quantities() -> None:
    cfg, _ = validate(
        build(scaling(**{"cluster.node_pools": [pool(gpus=0, cpu=64, memory_gib=512)]}), "eks"),
        None,
    )
    assert isinstance(cfg, EnvironmentConfig)
    assert cfg.cluster.node_pools[0].limits.as_kubernetes() == {
        "nvidia.com/gpu": "0",
        "cpu": "64",
        "memory": "512Gi",
    }


def test_autoscaling_without_node_pools_warns_that_nothing_scales() -> None:
    found = warnings({"cluster.auto_scaling": True})
    assert_issue(found, "cluster.auto_scaling", "nothing will scale")


@pytest.mark.parametrize(
    ("changes", "path", "fragment"),
    [
        pytest.param(
            {"cluster.auto_scaling": False},
            "cluster.node_pools",
            "needs cluster.auto_scaling: true",
            id="pools-without-autoscaling",
        ),
        pytest.param(
            {"cluster.node_pools": [pool(groups=("nope",))]},
            "cluster.node_pools[0].instance_groups[0]",
            "'nope' is not an instance group of this cluster (gpu, cpu, burst)",
            id="unknown-group",
        ),
        pytest.param(
            {"cluster.node_pools": [pool(), pool()]},
            "cluster.node_pools[1].name",
            "already the name of node_pools[0]",
            id="duplicate-pool",
        ),
        pytest.param(
            {"cluster.node_pools": [pool(groups=("burst", "burst"))]},
            "cluster.node_pools[0].instance_groups",
            "'burst' is listed twice",
            id="group-twice",
        ),
        pytest.param(
            {"cluster.node_pools": [pool(groups=tuple(f"g{i}" for i in range(11)))]},
            "cluster.node_pools[0].instance_groups",
            "at most 10",
            id="eleven-groups",
        ),
        pytest.param(
            {"cluster.node_pools": [pool(name="Burst_Pool")]},
            "cluster.node_pools[0].name",
            "a Kubernetes object name",
            id="pool-name",
        ),
        pytest.param(
            {"cluster.node_pools": [{"name": "burst", "instance_groups": ["burst"], "limits": {}}]},
            "cluster.node_pools[0].limits.gpus",
            "required key is missing",
            id="gpus-limit-required",
        ),
        pytest.param(
            {
                f"{G}[2].training_plan_arn": (
                    "arn:aws:sagemaker:us-west-2:111122223333:training-plan/plan"
                )
            },
            f"{G}[2].training_plan_arn",
            "does not use training plans",
            id="training-plan-in-pool",
        ),
        pytest.param(
            {
                f"{G}[2].instance_type": "ml.p5.48xlarge",
                f"{G}[2].deep_health_checks": ["InstanceStress"],
            },
            f"{G}[2].deep_health_checks",
            "does not support deep health checks",
            id="deep-health-checks-in-pool",
        ),
        pytest.param(
            {f"{G}[3]": {"name": "idle", "instance_type": "ml.m5.large", "count": 0}},
            f"{G}[3].count",
            "is in no node pool, so nothing ever scales it up",
            id="zero-outside-pools",
        ),
    ],
)
def test_node_pool_errors(changes: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(errors(scaling(**changes)), path, fragment)


def test_a_pooled_group_that_starts_above_zero_is_a_warning() -> None:
    found = warnings(scaling(**{f"{G}[2].count": 2}))
    assert_issue(found, f"{G}[2].count", "scales a group that starts above 0 down to 0")


def test_node_pools_are_eks_only() -> None:
    found = errors({"cluster.node_pools": [pool(groups=("gpu",))]}, base="slurm")
    assert_issue(found, "cluster.node_pools", "applies only with orchestrator: eks")


def test_a_group_at_zero_is_fine_without_autoscaling() -> None:
    assert errors({f"{G}[2]": dict(BURST)}) == []


@pytest.mark.parametrize("percent", [20, 100])
def test_tiered_storage_takes_20_to_100(percent: int) -> None:
    changes = {"cluster.tiered_storage": {"memory_percent": percent}}
    assert errors(changes) == []


@pytest.mark.parametrize("percent", [1, 19, 101])
def test_tiered_storage_outside_20_to_100_is_an_error(percent: int) -> None:
    changes = {"cluster.tiered_storage": {"memory_percent": percent}}
    found = errors(changes)
    assert [i.path for i in found] == ["cluster.tiered_storage.memory_percent"]


# -- what the HyperPod API has and CloudFormation cannot express --------------------------


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("auto_patch", {"strategy": "DrainFirst"}, "DrainFirst is in the HyperPod API but not in "
         "CloudFormation"),
        ("auto_patch", {"strategy": "WhenIdle", "idle_wait_seconds": 600},
         "(IdleWaitWindowInSeconds) is in the HyperPod API but not in CloudFormation"),
        ("auto_patch", {"strategy": "WhenIdle", "drain_policy": {"mode": "x"}},
         "(DrainPolicy) is in the HyperPod API but not in CloudFormation"),
        ("deep_health_checks", ["InstanceStress", "MultiNodeTrainingValidation"],
         "MultiNodeTrainingValidation is in the HyperPod API but not in CloudFormation"),
    ],
    ids=["drain-first", "idle-wait-window", "drain-policy", "multi-node-validation"],
)  # fmt: skip
def test_api_only_fields_are_refused_with_the_reason(key: str, value: Any, fragment: str) -> None:
    found = errors({f"{G}[0].{key}": value})
    assert any(fragment in i.message and i.path.startswith(f"{G}[0].{key}") for i in found), found


def test_an_unknown_patching_strategy_does_not_suggest_the_api_only_one() -> None:
    found = errors({f"{G}[0].auto_patch": {"strategy": "Always"}})
    assert_issue(found, f"{G}[0].auto_patch.strategy", "use 'WhenIdle' or 'WhenAllIdle'")


def test_a_team_quota_past_an_autoscaled_type_names_the_node_pool_limit() -> None:
    team = {"name": "a", "quota": [{"instance_type": "ml.g5.8xlarge", "count": 3}]}
    found = warnings(
        scaling(**{"eks.addons.task_governance": True, "eks.task_governance": {"teams": [team]}})
    )
    assert_issue(
        found,
        "eks.task_governance.teams[0].quota[0].count",
        "the groups autoscale (node pool burst: nvidia.com/gpu 8)",
    )


def test_spot_groups_are_allowed_in_a_node_pool() -> None:
    """AWS's spot page (https://docs.aws.amazon.com/sagemaker/latest/dg/
    sagemaker-hyperpod-spot-instance.html, "Karpenter based Autoscaling"): a HyperpodNodeClass
    lists spot groups; Karpenter prefers them and falls back to the on-demand ones."""
    changes = scaling(
        **{
            f"{G}[2].capacity_type": "spot",
            f"{G}[3]": {"name": "burst-od", "instance_type": "ml.g5.8xlarge", "count": 0},
            "cluster.node_pools": [pool(groups=("burst", "burst-od"))],
        }
    )
    assert errors(changes) == []
    assert not [w for w in warnings(changes) if "spot" in w.message]


def test_a_pool_of_spot_groups_only_is_a_warning() -> None:
    changes = scaling(**{f"{G}[2].capacity_type": "spot"})
    assert errors(changes) == []
    assert_issue(warnings(changes), "cluster.node_pools[0].instance_groups", "nothing takes over")

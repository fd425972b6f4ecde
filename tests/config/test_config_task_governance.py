"""eks.task_governance: the cluster policy and the teams, their limits and cross-key rules."""

from __future__ import annotations

import functools
from typing import Any

import config_testkit as kit
import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk.config import validate
from hyperpod_cdk.config.task_governance import local_queue_of, namespace_of

KEY = "eks.task_governance"
ADMIN = "arn:aws:iam::111122223333:role/Admin"
RESEARCH = "arn:aws:iam::111122223333:role/research-ds"


errors = functools.partial(kit.errors, base="eks")
config = functools.partial(kit.config, base="eks")


def team(name: str = "research", **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": name,
        "quota": [{"instance_type": "ml.p5.48xlarge", "count": 1}],
    }
    base.update(extra)
    return base


def governed(**changes: Any) -> dict[str, Any]:
    """Changes that turn task governance on with one team, plus ``changes``."""
    out: dict[str, Any] = {"eks.addons.task_governance": True, KEY: {"teams": [team()]}}
    out.update(changes)
    return out


def test_a_team_with_the_addon_is_valid_and_the_policy_defaults_to_aws_five_classes() -> None:
    cfg = config(governed())
    governance = cfg.eks_settings.task_governance
    assert governance is not None
    assert [(p.name, p.weight) for p in governance.policy.priority_classes] == [
        ("inference", 100),
        ("experimentation", 90),
        ("training", 80),
        ("fine-tuning", 70),
        ("interactive", 60),
    ]
    assert governance.policy.fair_share and governance.policy.idle_resource_sharing
    only = governance.teams[0]
    assert (only.sharing.strategy, only.preempt_team_tasks) == ("LendAndBorrow", "LowerPriority")


def test_names_of_the_team_namespace_and_queue() -> None:
    assert namespace_of("research") == "hyperpod-ns-research"
    assert local_queue_of("research") == "hyperpod-ns-research-localqueue"


def test_needs_the_task_governance_addon() -> None:
    found = errors({KEY: {"teams": [team()]}})
    assert_issue(found, KEY, "set eks.addons.task_governance: true")


def test_at_most_ten_priority_classes() -> None:
    classes = [{"name": f"c{i}", "weight": i} for i in range(11)]
    assert_issue(
        errors(governed(**{f"{KEY}.policy": {"priority_classes": classes}})),
        f"{KEY}.policy.priority_classes",
        "at most 10",
    )


@pytest.mark.parametrize(
    ("entry", "path", "fragment"),
    [
        ({"name": "Training", "weight": 1}, "name", "lowercase letters"),
        ({"name": "-x", "weight": 1}, "name", "lowercase letters"),
        ({"name": "a" * 41, "weight": 1}, "name", "at most 40"),
        ({"name": "ok", "weight": 101}, "weight", "100"),
        ({"name": "ok", "weight": -1}, "weight", "0"),
        ({"name": "ok", "weight": "5"}, "weight", "without quotes"),
    ],
)
def test_priority_class_names_and_weights_as_the_api_allows(
    entry: dict[str, Any], path: str, fragment: str
) -> None:
    found = errors(governed(**{f"{KEY}.policy": {"priority_classes": [entry]}}))
    assert_issue(found, f"{KEY}.policy.priority_classes[0].{path}", fragment)


def test_a_priority_class_twice_is_an_error() -> None:
    classes = [{"name": "training", "weight": 1}, {"name": "training", "weight": 2}]
    found = errors(governed(**{f"{KEY}.policy": {"priority_classes": classes}}))
    assert_issue(found, f"{KEY}.policy.priority_classes", "'training' appears 2 times")


@pytest.mark.parametrize(("name", "fragment"), [("ML", "lowercase"), ("a" * 41, "at most 40")])
def test_team_names_as_the_api_allows(name: str, fragment: str) -> None:
    assert_issue(
        errors(governed(**{f"{KEY}.teams": [team(name)]})), f"{KEY}.teams[0].name", fragment
    )


def test_the_quota_name_fits_63_characters() -> None:
    long_team = "t" * 40
    found = errors(governed(**{"cluster.name": "c" * 30, f"{KEY}.teams": [team(long_team)]}))
    assert_issue(found, f"{KEY}.teams[0].name", "at most 63: shorten the team name")


def test_a_team_twice_is_an_error_and_a_principal_in_two_teams_is_not() -> None:
    teams = [team(principals=[RESEARCH]), team(principals=[RESEARCH])]
    assert_issue(errors(governed(**{f"{KEY}.teams": teams})), f"{KEY}.teams[1].name", "twice")
    teams = [team("a", principals=[RESEARCH]), team("b", principals=[RESEARCH])]
    cfg = config(governed(**{f"{KEY}.teams": teams, "eks.admin_principal_arns": [RESEARCH]}))
    governance = cfg.eks_settings.task_governance
    assert governance is not None
    assert governance.principal_namespaces() == {RESEARCH: ["hyperpod-ns-a", "hyperpod-ns-b"]}


def test_at_most_15_quota_lines() -> None:
    lines = [{"instance_type": "ml.p5.48xlarge", "accelerators": 1}] * 16
    found = errors(governed(**{f"{KEY}.teams": [team(quota=lines)]}))
    assert_issue(found, f"{KEY}.teams[0].quota", "at most 15")


def test_quota_instance_types_must_be_the_cluster_groups() -> None:
    lines = [{"instance_type": "ml.g5.xlarge", "count": 1}]
    found = errors(governed(**{f"{KEY}.teams": [team(quota=lines)]}))
    assert_issue(
        found,
        f"{KEY}.teams[0].quota[0].instance_type",
        "ml.g5.xlarge is not a type of this cluster's instance groups (ml.m5.2xlarge, ml.p5.48xlarge)",
    )


def test_the_teams_quotas_of_a_type_may_not_exceed_its_groups() -> None:
    # EKS_BASE has 2 x ml.p5.48xlarge
    teams = [team("a"), team("b", quota=[{"instance_type": "ml.p5.48xlarge", "count": 2}])]
    found = errors(governed(**{f"{KEY}.teams": teams}))
    assert_issue(found, f"{KEY}.teams[1].quota[0].count", "add up to 3 instances, more than the 2")


def test_with_autoscaling_the_excess_is_a_warning() -> None:
    teams = [team("a", quota=[{"instance_type": "ml.p5.48xlarge", "count": 3}])]
    _, warnings = validate(
        build(governed(**{f"{KEY}.teams": teams, "cluster.auto_scaling": True}), "eks"), None
    )
    assert_issue(list(warnings), f"{KEY}.teams[0].quota[0].count", "the groups autoscale")


def test_accelerators_on_a_type_without_them() -> None:
    lines = [{"instance_type": "ml.m5.2xlarge", "accelerators": 1}]
    found = errors(governed(**{f"{KEY}.teams": [team(quota=lines)]}))
    assert_issue(
        found, f"{KEY}.teams[0].quota[0].accelerators", "ml.m5.2xlarge has no accelerators"
    )


@pytest.mark.parametrize(
    ("line", "path", "fragment"),
    [
        ({"instance_type": "ml.p5.48xlarge"}, "", "give count, or accelerators"),
        (
            {"instance_type": "ml.p5.48xlarge", "count": 1, "vcpu": 4},
            "",
            "give count (whole instances) or amounts (vcpu), not both",
        ),
        (
            {"instance_type": "ml.p5.48xlarge", "mig": {"profile": "mig-9g.1gb", "count": 1}},
            ".mig.profile",
            "mig-1g.10gb",
        ),
        ({"instance_type": "ml.p5.48xlarge", "count": -1}, ".count", "0"),
    ],
)
def test_a_quota_line_is_count_or_amounts(line: dict[str, Any], path: str, fragment: str) -> None:
    found = errors(governed(**{f"{KEY}.teams": [team(quota=[line])]}))
    assert_issue(found, f"{KEY}.teams[0].quota[0]{path}", fragment)


def test_mig_on_a_type_without_an_nvidia_gpu() -> None:
    lines = [{"instance_type": "ml.m5.2xlarge", "mig": {"profile": "mig-1g.10gb", "count": 7}}]
    found = errors(governed(**{f"{KEY}.teams": [team(quota=lines)]}))
    assert_issue(found, f"{KEY}.teams[0].quota[0].mig", "no NVIDIA GPU")


def test_mig_slices_of_a_gpu_type_are_valid() -> None:
    lines = [{"instance_type": "ml.p5.48xlarge", "mig": {"profile": "mig-1g.10gb", "count": 7}}]
    assert errors(governed(**{f"{KEY}.teams": [team(quota=lines)]})) == []


@pytest.mark.parametrize("limit", [0, 501])
def test_borrow_limit_is_1_to_500(limit: int) -> None:
    sharing = {"strategy": "LendAndBorrow", "borrow_limit_percent": limit}
    found = errors(governed(**{f"{KEY}.teams": [team(sharing=sharing)]}))
    assert_issue(found, f"{KEY}.teams[0].sharing.borrow_limit_percent", "")


@pytest.mark.parametrize("strategy", ["Lend", "DontLend"])
def test_borrow_limit_only_with_lend_and_borrow(strategy: str) -> None:
    sharing = {"strategy": strategy, "borrow_limit_percent": 100}
    found = errors(governed(**{f"{KEY}.teams": [team(sharing=sharing)]}))
    assert_issue(
        found, f"{KEY}.teams[0].sharing.borrow_limit_percent", "only with strategy LendAndBorrow"
    )


def test_a_fair_share_weight_while_fair_share_is_off() -> None:
    changes = governed(
        **{
            f"{KEY}.policy": {"fair_share": False},
            f"{KEY}.teams": [team(fair_share_weight=50)],
        }
    )
    assert_issue(
        errors(changes), f"{KEY}.teams[0].fair_share_weight", "set policy.fair_share: true"
    )


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("preempt_team_tasks", "Always", "'Never'"),
        ("principals", ["not-an-arn"], "an IAM role or user ARN"),
        ("fair_share_weight", 101, "100"),
        ("owner", "x", "unknown key"),
    ],
)
def test_bad_team_keys(key: str, value: Any, fragment: str) -> None:
    found = errors(governed(**{f"{KEY}.teams": [team(**{key: value})]}))
    path = f"{KEY}.teams[0].{key}" + ("[0]" if key == "principals" else "")
    assert_issue(found, path, fragment)


def test_all_errors_are_reported_at_once() -> None:
    teams = [
        team("a", fair_share_weight=10, sharing={"strategy": "Lend", "borrow_limit_percent": 5}),
        team("b", quota=[{"instance_type": "ml.g5.xlarge", "count": 1}]),
    ]
    found = errors({KEY: {"policy": {"fair_share": False}, "teams": teams}})
    assert {i.path for i in found} >= {
        KEY,
        f"{KEY}.teams[0].fair_share_weight",
        f"{KEY}.teams[0].sharing.borrow_limit_percent",
        f"{KEY}.teams[1].quota[0].instance_type",
    }

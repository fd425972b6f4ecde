"""eks.task_governance in the eks-addons stack: the cluster policy, the team quotas (native or
custom resource by region), their dependencies, the teams' access entries, cfn-lint per region
and update safety."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cfnlint
import pytest
from stack_testkit import depends_on, joined_text
from support.cfn_lint_schemas import lint_errors

from hyperpod_cdk.eks.cluster import TEAM_ACCESS_POLICY
from hyperpod_cdk.facts.task_governance_types import (
    COMPUTE_QUOTA_TYPE,
    CUSTOM_TYPES,
    SCHEDULER_CONFIG_TYPE,
)

KIND = "eks-addons"
PARAMETER = "HyperPodReady"
US_EAST_1 = {
    "region": "us-east-1",
    "network.availability_zone_id": "use1-az4",
    "network.eks_availability_zone_ids": ["use1-az1", "use1-az4"],
}
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"


def resources(synth: Any, type_name: str) -> dict[str, dict[str, Any]]:
    template = synth.template(KIND)
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


def only(found: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    assert len(found) == 1, sorted(found)
    return next(iter(found.items()))


def create_only(type_name: str) -> list[str]:
    """The type's createOnlyProperties, from the registry schema cfn-lint ships."""
    providers = json.loads((SCHEMAS / "providers" / "us-east-1.json").read_text())
    schema = json.loads((SCHEMAS / "resources" / f"{providers[type_name]}.json").read_text())
    return [p.removeprefix("/properties/") for p in schema["createOnlyProperties"]]


@pytest.fixture(scope="module")
def east(build_variant: Any) -> Any:
    return build_variant(US_EAST_1, base="eks-full")


def test_native_types_in_us_east_1(east: Any) -> None:
    _, policy = only(resources(east, SCHEDULER_CONFIG_TYPE))
    props = policy["Properties"]
    assert props["Name"] == "eks-full"
    assert props["SchedulerConfig"] == {
        "PriorityClasses": [
            {"Name": "inference", "Weight": 100},
            {"Name": "training", "Weight": 80},
            {"Name": "experimentation", "Weight": 50},
        ],
        "FairShare": "Enabled",
        "IdleResourceSharing": "Enabled",
    }
    quotas = resources(east, COMPUTE_QUOTA_TYPE)
    by_team = {q["Properties"]["ComputeQuotaTarget"]["TeamName"]: q for q in quotas.values()}
    assert set(by_team) == {"research", "applied"}
    research = by_team["research"]["Properties"]
    assert research["Name"] == "eks-full-research"
    assert research["ComputeQuotaTarget"] == {"TeamName": "research", "FairShareWeight": 60}
    assert research["ComputeQuotaConfig"] == {
        "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 2}],
        "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 100},
        "PreemptTeamTasks": "LowerPriority",
    }
    applied = by_team["applied"]["Properties"]["ComputeQuotaConfig"]
    assert applied["ComputeQuotaResources"] == [
        {"InstanceType": "ml.p5.48xlarge", "Accelerators": 8},
        {"InstanceType": "ml.trn1.32xlarge", "Count": 2},
    ]
    assert applied["ResourceSharingConfig"] == {"Strategy": "Lend"}
    assert not resources(east, CUSTOM_TYPES[SCHEDULER_CONFIG_TYPE])


def test_policy_and_quotas_use_the_cluster_arn_parameter_and_wait_for_the_addon(
    east: Any,
) -> None:
    template = east.template(KIND)
    addon = next(
        k
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::EKS::Addon"
        and r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-taskgovernance"
    )
    policy_id, policy = only(resources(east, SCHEDULER_CONFIG_TYPE))
    for logical_id, resource in [(policy_id, policy), *resources(east, COMPUTE_QUOTA_TYPE).items()]:
        arn = resource["Properties"]["ClusterArn"]
        assert PARAMETER in json.dumps(arn), logical_id
        assert addon in depends_on(resource), logical_id
    for resource in resources(east, COMPUTE_QUOTA_TYPE).values():
        assert policy_id in depends_on(resource)


def test_custom_resource_path_in_us_west_2(synthesized: Any) -> None:
    # eks-full is in us-west-2: no ClusterSchedulerConfig there, ComputeQuota native
    synth = synthesized("eks-full")
    assert not resources(synth, SCHEDULER_CONFIG_TYPE)
    _, custom = only(resources(synth, CUSTOM_TYPES[SCHEDULER_CONFIG_TYPE]))
    props = custom["Properties"]
    assert props["Kind"] == "ClusterSchedulerConfig"
    request = json.dumps(props["Request"])
    assert '\\"Name\\":\\"eks-full\\"' in request, request
    assert '\\"FairShare\\":\\"Enabled\\"' in request
    assert PARAMETER in request
    assert len(resources(synth, COMPUTE_QUOTA_TYPE)) == 2
    # the handler may touch only policies and quotas, this cluster and its access entries
    # the handlers: eks-dependencies (Grafana's content handler, beside its workspace, is the
    # only function of eks-addons)
    functions = resources(synth, "AWS::Lambda::Function")
    assert all(name.startswith("Grafana") for name in functions), sorted(functions)
    policies = [
        r
        for r in synth.template(KIND)["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        and "task governance" in r["Properties"].get("Description", "")
    ]
    statements = only({"p": policies[0]})[1]["Properties"]["PolicyDocument"]["Statement"]
    text = json.dumps(statements)
    assert "sagemaker:*" not in text and '"*"' not in text
    assert "cluster-scheduler-config/*" in text and "compute-quota/*" in text
    assert "access-entry/eks-full-eks/*" in text


def test_team_access_entries_are_scoped_to_the_team_namespaces(synthesized: Any) -> None:
    synth = synthesized("eks-full")
    entries = resources(synth, "AWS::EKS::AccessEntry")
    by_principal = {e["Properties"]["PrincipalArn"]: e["Properties"] for e in entries.values()}
    # the admin in a team keeps its one entry in the eks stack
    assert "arn:aws:iam::111122223333:role/PlatformAdmin" not in by_principal
    for principal, namespace in [
        ("arn:aws:iam::111122223333:role/ResearchScientists", "hyperpod-ns-research"),
        ("arn:aws:iam::111122223333:role/AppliedScientists", "hyperpod-ns-applied"),
    ]:
        (policy,) = by_principal[principal]["AccessPolicies"]
        assert policy["AccessScope"] == {"Type": "namespace", "Namespaces": [namespace]}
        assert TEAM_ACCESS_POLICY in joined_text(policy["PolicyArn"])
    admin = [
        r["Properties"]
        for r in synth.template("eks")["Resources"].values()
        if r["Type"] == "AWS::EKS::AccessEntry"
        and r["Properties"]["PrincipalArn"] == "arn:aws:iam::111122223333:role/PlatformAdmin"
    ]
    (entry,) = admin
    scopes = [p["AccessScope"] for p in entry["AccessPolicies"]]
    assert {"Type": "cluster"} in scopes
    assert {"Type": "namespace", "Namespaces": ["hyperpod-ns-research"]} in scopes


def test_a_principal_in_two_teams_gets_one_entry(build_variant: Any) -> None:
    shared = "arn:aws:iam::111122223333:role/Both"
    synth = build_variant(
        {
            "eks.task_governance.teams[0].principals": [shared],
            "eks.task_governance.teams[1].principals": [shared],
        },
        base="eks-full",
        nag=False,
    )
    entries = [
        e["Properties"]
        for e in resources(synth, "AWS::EKS::AccessEntry").values()
        if e["Properties"]["PrincipalArn"] == shared
    ]
    (entry,) = entries
    (policy,) = entry["AccessPolicies"]
    assert policy["AccessScope"]["Namespaces"] == ["hyperpod-ns-research", "hyperpod-ns-applied"]


@pytest.mark.parametrize("region", ["us-east-1", "us-west-2"])
def test_cfn_lint_clean_per_region(
    region: str,
    synthesized: Any,
    build_variant: Any,
) -> None:
    synth = (
        synthesized("eks-full")
        if region == "us-west-2"
        else build_variant(US_EAST_1, base="eks-full")
    )
    assert lint_errors(synth.template(KIND), region) == []


# -- update safety ------------------------------------------------------------------------------


def _changed_stacks(before: Any, after: Any) -> list[str]:
    return sorted(
        kind
        for kind in ("network", "storage", "cluster", "eks", "eks-dependencies", KIND)
        if before.has(kind) and before.template(kind) != after.template(kind)
    )


@pytest.mark.parametrize(
    "change",
    [
        {"eks.task_governance.teams[0].quota[0].count": 1},
        {"eks.task_governance.teams[0].fair_share_weight": 10},
        {"eks.task_governance.policy.priority_classes[1].weight": 70},
    ],
    ids=["quota", "team-weight", "class-weight"],
)
def test_a_quota_or_a_weight_updates_in_place(
    change: dict[str, Any], build_variant: Any, east: Any
) -> None:
    after = build_variant({**US_EAST_1, **change}, base="eks-full")
    assert _changed_stacks(east, after) == [KIND]
    for type_name in (SCHEDULER_CONFIG_TYPE, COMPUTE_QUOTA_TYPE):
        old, new = resources(east, type_name), resources(after, type_name)
        assert sorted(old) == sorted(new)  # same logical ids
        for logical_id in old:
            for key in create_only(type_name):
                head, _, tail = key.partition("/")
                a = old[logical_id]["Properties"].get(head)
                b = new[logical_id]["Properties"].get(head)
                if tail:
                    a, b = (a or {}).get(tail), (b or {}).get(tail)
                assert a == b, f"{logical_id}: create-only {key} changed"


def test_renaming_a_team_is_a_replacement(build_variant: Any, east: Any) -> None:
    after = build_variant(
        {**US_EAST_1, "eks.task_governance.teams[1].name": "product"}, base="eks-full"
    )
    old = resources(east, COMPUTE_QUOTA_TYPE)
    new = resources(after, COMPUTE_QUOTA_TYPE)
    assert set(old) != set(new)  # a new logical id: CloudFormation creates, then deletes
    assert "ComputeQuotaTarget/TeamName" in create_only(COMPUTE_QUOTA_TYPE)

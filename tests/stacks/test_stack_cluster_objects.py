"""The hyperpod-cdk-cluster-objects release in the eks-addons stack: when it exists, what it
waits for, and the values it carries (the cluster ARN through the parameter). The deployed
values are rendered in tests/eks/test_cluster_objects_chart.py."""

from __future__ import annotations

import json
from typing import Any

from stack_testkit import depends_on

from hyperpod_cdk.eks.cluster_objects import NAMESPACE, RELEASE
from hyperpod_cdk.facts.task_governance_types import (
    COMPUTE_QUOTA_TYPE,
    CUSTOM_TYPES,
    SCHEDULER_CONFIG_TYPE,
)

KIND = "eks-addons"
HELM_CHART = "Custom::AWSCDK-EKS-HelmChart"
ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef012345"


def releases(synth: Any, kind: str = KIND) -> dict[str, dict[str, Any]]:
    return {
        k: r
        for k, r in synth.template(kind)["Resources"].items()
        if r["Type"] == HELM_CHART and r["Properties"]["Release"] == RELEASE
    }


def the_release(synth: Any) -> tuple[str, dict[str, Any]]:
    found = releases(synth)
    assert len(found) == 1, sorted(found)
    return next(iter(found.items()))


def deployed_values(resource: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The release's values with the parameter's value put in, and the parameter's logical id."""
    parts = resource["Properties"]["Values"]["Fn::Join"][1]
    refs = [p["Fn::GetAtt"] for p in parts if isinstance(p, dict)]
    assert len(refs) == 1 and refs[0][1] == "Value", parts
    text = "".join(p if isinstance(p, str) else ARN for p in parts)
    return json.loads(text), refs[0][0]


def test_eks_full_installs_the_release_after_the_cluster_and_the_quotas(synthesized: Any) -> None:
    synth = synthesized("eks-full")
    assert not releases(synth, "eks-dependencies")  # never before the HyperPod cluster
    logical_id, resource = the_release(synth)
    values, parameter = deployed_values(resource)
    assert parameter.startswith("HyperPodReady")
    assert values["clusterArn"] == ARN
    assert resource["Properties"]["Namespace"] == NAMESPACE
    # bounded: no wait for readiness (a NodeClass is Ready only once autoscaling is InService,
    # which Helm cannot see), five minutes for Helm
    assert resource["Properties"].get("Wait", False) is False
    assert resource["Properties"]["Timeout"] == "300s"
    needs = depends_on(resource)
    assert parameter in needs
    template = synth.template(KIND)["Resources"]
    governance = [
        k
        for k, r in template.items()
        if r["Type"]
        in (
            COMPUTE_QUOTA_TYPE,
            SCHEDULER_CONFIG_TYPE,
            CUSTOM_TYPES[SCHEDULER_CONFIG_TYPE],
            CUSTOM_TYPES[COMPUTE_QUOTA_TYPE],
        )
    ]
    assert len(governance) == 3  # the policy and two quotas
    assert set(governance) <= set(needs), logical_id


def test_eks_full_values_hold_the_node_pool_and_the_teams(synthesized: Any) -> None:
    values, _ = deployed_values(the_release(synthesized("eks-full"))[1])
    assert values["nodePools"] == [
        {
            "name": "gpu-burst",
            "instanceGroups": ["gpu-burst"],
            "limits": {"nvidia.com/gpu": "16", "cpu": "192", "memory": "768Gi"},
        }
    ]
    assert values["teams"] == [
        {
            "name": "research",
            "namespace": "hyperpod-ns-research",
            "group": "hyperpod-cdk-team-research",
        },
        {
            "name": "applied",
            "namespace": "hyperpod-ns-applied",
            "group": "hyperpod-cdk-team-applied",
        },
    ]
    assert values["hyperpodTrainingOperator"] is True


def test_team_access_entries_carry_the_team_groups(synthesized: Any) -> None:
    synth = synthesized("eks-full")
    entries = {
        r["Properties"]["PrincipalArn"]: r["Properties"]
        for r in synth.template(KIND)["Resources"].values()
        if r["Type"] == "AWS::EKS::AccessEntry"
    }
    research = entries["arn:aws:iam::111122223333:role/ResearchScientists"]
    assert research["KubernetesGroups"] == ["hyperpod-cdk-team-research"]
    applied = entries["arn:aws:iam::111122223333:role/AppliedScientists"]
    assert applied["KubernetesGroups"] == ["hyperpod-cdk-team-applied"]


def test_no_release_without_node_pools_or_teams(synthesized: Any) -> None:
    for name in ("eks-minimal", "eks-existing-cluster"):
        synth = synthesized(name)
        assert not synth.config.cluster.node_pools
        if synth.stack_name(KIND) in synth.templates:
            assert not releases(synth), name


def test_node_pools_alone_make_the_release(build_variant: Any) -> None:
    synth = build_variant({"eks.task_governance": None}, base="eks-full", nag=False)
    values, _ = deployed_values(the_release(synth)[1])
    assert values["teams"] == []
    assert [p["name"] for p in values["nodePools"]] == ["gpu-burst"]


def test_teams_alone_make_the_release(build_variant: Any) -> None:
    synth = build_variant(
        {"cluster.node_pools": [], "cluster.instance_groups[3].count": 1},
        base="eks-full",
        nag=False,
    )
    values, _ = deployed_values(the_release(synth)[1])
    assert values["nodePools"] == []
    assert [t["name"] for t in values["teams"]] == ["research", "applied"]


def test_an_adopted_cluster_with_node_pools_has_the_stack(build_variant: Any) -> None:
    synth = build_variant(
        {
            "cluster.auto_scaling": True,
            "cluster.instance_groups": [
                {"name": "gpu", "instance_type": "ml.g6e.12xlarge", "count": 2},
                {"name": "burst", "instance_type": "ml.g5.8xlarge", "count": 0},
            ],
            "cluster.node_pools": [
                {"name": "burst", "instance_groups": ["burst"], "limits": {"gpus": 4}}
            ],
        },
        base="eks-existing-cluster",
        nag=False,
    )
    values, _ = deployed_values(the_release(synth)[1])
    assert [p["name"] for p in values["nodePools"]] == ["burst"]

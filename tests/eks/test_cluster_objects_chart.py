"""The hyperpod-cdk-cluster-objects chart (node pools, team RBAC): linted and rendered with the
deploy-time helm; its version guarded by its content."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from chart_testkit import by_kind_name, helm, lint, render, render_result

from hyperpod_cdk.config.autoscaling import NodePool
from hyperpod_cdk.eks import cluster_objects
from hyperpod_cdk.eks.cluster_objects import CHART_DIR, NAMESPACE, cluster_objects_values

HELM35 = "1.35"
ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef012345"
POOL = NodePool.model_validate(
    {"name": "gpu-burst", "instance_groups": ["gpu-burst", "gpu-burst-b"], "limits": {"gpus": 16}}
)


def values(**changes: Any) -> dict[str, Any]:
    base = cluster_objects_values(cluster_arn=ARN, node_pools=[POOL], teams=["research", "applied"])
    base.update(changes)
    return base


def objects(**changes: Any) -> list[dict[str, Any]]:
    return render(
        helm(HELM35),
        values(**changes),
        release=cluster_objects.RELEASE,
        namespace=NAMESPACE,
        chart_dir=CHART_DIR,
    )


# -- the version follows the content ---------------------------------------------------------

# The chart's content per released version. A change of a template or of values.yaml must bump
# Chart.yaml's version (it is in every object's helm.sh/chart label, and `helm history` shows it)
# and add its digest here.
CHART_DIGESTS = {
    "1.0.0": "a9de4e6574f8f1e6047b6f0bb8f974f2ecbdd95e855fea4fea9a301829366f21",
}


def _chart_digest() -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in CHART_DIR.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(CHART_DIR)).encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def _chart_version() -> str:
    import yaml

    return str(yaml.safe_load((CHART_DIR / "Chart.yaml").read_text(encoding="utf-8"))["version"])


def test_the_chart_version_changes_with_its_content() -> None:
    version = _chart_version()
    assert version in CHART_DIGESTS, f"chart version {version} has no digest here: add it"
    assert _chart_digest() == CHART_DIGESTS[version], (
        f"the chart changed but its version is still {version}: bump Chart.yaml's version and "
        f"add {{{version!r}: {_chart_digest()!r}}} to CHART_DIGESTS"
    )


def test_the_chart_ships_in_the_wheel() -> None:
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[2] / "constructs" / "pyproject.toml").read_text()
    for pattern in ("/.helmignore", "/*.yaml", "/templates/*"):
        assert f'"eks/charts/{cluster_objects.CHART_NAME}{pattern}"' in pyproject


# -- lint and render -------------------------------------------------------------------------


def test_lint_is_clean() -> None:
    result = lint(helm(HELM35), values(), NAMESPACE, chart_dir=CHART_DIR)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_node_pool_is_a_hyperpod_node_class_and_a_node_pool() -> None:
    found = by_kind_name(objects())
    node_class = found[("HyperpodNodeClass", "gpu-burst")]
    assert node_class["apiVersion"] == "karpenter.sagemaker.amazonaws.com/v1"
    assert node_class["spec"] == {"instanceGroups": ["gpu-burst", "gpu-burst-b"]}
    pool = found[("NodePool", "gpu-burst")]
    assert pool["apiVersion"] == "karpenter.sh/v1"
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.sagemaker.amazonaws.com",
        "kind": "HyperpodNodeClass",
        "name": "gpu-burst",
    }
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "16"}
    assert pool["spec"]["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists"}
    ]
    for obj in (node_class, pool):
        assert obj["metadata"]["annotations"]["hyperpod-cdk.aws/cluster-arn"] == ARN
        assert "namespace" not in obj["metadata"]


def test_each_team_gets_a_role_bound_to_its_group_in_its_namespace_only() -> None:
    rendered = objects()
    kinds = {o["kind"] for o in rendered}
    assert kinds == {"HyperpodNodeClass", "NodePool", "Role", "RoleBinding"}  # nothing cluster-wide
    for team in ("research", "applied"):
        namespace = f"hyperpod-ns-{team}"
        (role,) = [
            o for o in rendered if o["kind"] == "Role" and o["metadata"]["namespace"] == namespace
        ]
        (binding,) = [
            o
            for o in rendered
            if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] == namespace
        ]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": role["metadata"]["name"],
        }
        assert binding["subjects"] == [
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
             "name": f"hyperpod-cdk-team-{team}"}
        ]  # fmt: skip
        rules = {(g, r): set(rule["verbs"]) for rule in role["rules"]
                 for g in rule["apiGroups"] for r in rule["resources"]}  # fmt: skip
        assert rules[("kubeflow.org", "pytorchjobs")] >= {"create", "get", "list", "watch"}
        assert rules[("kueue.x-k8s.io", "workloads")] == {"get", "list", "watch"}
        assert rules[("", "pods/log")] == {"get"}
        assert ("sagemaker.amazonaws.com", "hyperpodpytorchjobs") not in rules
        assert not any("*" in verbs for verbs in rules.values())


def test_hyperpod_training_operator_jobs_when_the_addon_is_on() -> None:
    role = next(o for o in objects(hyperpodTrainingOperator=True) if o["kind"] == "Role")
    rules = {(g, r): set(rule["verbs"]) for rule in role["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}  # fmt: skip
    assert rules[("sagemaker.amazonaws.com", "hyperpodpytorchjobs")] >= {"create", "watch"}


def test_only_teams_or_only_pools() -> None:
    assert {o["kind"] for o in objects(nodePools=[])} == {"Role", "RoleBinding"}
    assert {o["kind"] for o in objects(teams=[])} == {"HyperpodNodeClass", "NodePool"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"clusterArn": ""}, "clusterArn is required"),
        (
            {"nodePools": [{"name": "x", "instanceGroups": [f"g{i}" for i in range(11)],
                            "limits": {"nvidia.com/gpu": "1"}}]},
            "at most 10 instance groups",
        ),
    ],
    ids=["no-cluster-arn", "eleven-groups"],
)  # fmt: skip
def test_render_refuses(changes: dict[str, Any], message: str) -> None:
    result = render_result(
        helm(HELM35), values(**changes), namespace=NAMESPACE, chart_dir=CHART_DIR
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_the_values_eks_full_deploys_render(synthesized: Any) -> None:
    """The release's values as the eks-addons template holds them (the ARN is a reference to the
    HyperPodReady parameter, put in here) render to the node pool's and the teams' objects."""
    import json

    from chart_testkit import HELM_CHART

    synth = synthesized("eks-full")
    (resource,) = [
        r
        for r in synth.template("eks-addons")["Resources"].values()
        if r["Type"] == HELM_CHART and r["Properties"]["Release"] == cluster_objects.RELEASE
    ]
    parts = resource["Properties"]["Values"]["Fn::Join"][1]
    refs = [p["Fn::GetAtt"] for p in parts if isinstance(p, dict)]
    assert len(refs) == 1 and refs[0][0].startswith("HyperPodReady"), parts
    deployed = json.loads("".join(p if isinstance(p, str) else ARN for p in parts))
    version = synth.config.eks_settings.kubernetes_version
    rendered = render(helm(version), deployed, release=cluster_objects.RELEASE,
                      namespace=NAMESPACE, kube_version=version, chart_dir=CHART_DIR)  # fmt: skip
    found = by_kind_name(rendered)
    assert found[("HyperpodNodeClass", "gpu-burst")]["spec"]["instanceGroups"] == ["gpu-burst"]
    assert found[("NodePool", "gpu-burst")]["spec"]["limits"]["nvidia.com/gpu"] == "16"
    assert sorted(o["metadata"]["namespace"] for o in rendered if o["kind"] == "Role") == [
        "hyperpod-ns-applied",
        "hyperpod-ns-research",
    ]
    lint_result = lint(helm(version), deployed, NAMESPACE, chart_dir=CHART_DIR)
    assert lint_result.returncode == 0, lint_result.stdout + lint_result.stderr

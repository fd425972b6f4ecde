"""The rendered chart held to the facts of AWS's HyperPod dependencies chart (aws_chart_facts.py,
with its source commit): instance lists, tolerations, RBAC and images; every deliberate
difference is named in that table with its reason."""

from __future__ import annotations

from typing import Any

import aws_chart_facts as aws
import pytest
from chart_testkit import affinity_types, all_on, by_kind_name, helm, images, render

from hyperpod_cdk.facts import chart

REGION = "us-west-2"


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    rendered: list[dict[str, Any]] = []
    for release in chart.RELEASES:
        values = chart.release_values(release, region=REGION, enabled=chart.DEPENDENCY_KEYS)
        rendered += render(helm("1.35"), values, release=release.name, namespace=release.namespace)
    return by_kind_name(rendered)


def _pod(objects, kind: str, name: str) -> dict[str, Any]:
    return objects[(kind, name)]["spec"]["template"]["spec"]


def test_the_table_names_its_source_commit() -> None:
    assert len(aws.SOURCE_COMMIT) == 40
    assert aws.SOURCE_COMMIT in (chart.CHART_DIR / "values.yaml").read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # the differences aws.DIFFERENCES["instance_types.nvidia"] and ["instance_types.efa"]
        (
            "nvidia-device-plugin-daemonset",
            sorted([*aws.NVIDIA_GPU_TYPES, *aws.ADDED_NVIDIA_TYPES]),
        ),
        (
            "health-monitoring-agent",
            sorted([*aws.HEALTH_AGENT_NVIDIA_TYPES, *aws.ADDED_NVIDIA_TYPES]),
        ),
        ("health-monitoring-agent-non-nvidia", aws.HEALTH_AGENT_NEURON_TYPES),
        ("aws-efa-k8s-device-plugin-daemonset", sorted([*aws.EFA_TYPES, *aws.ADDED_EFA_TYPES])),
        # the one difference (aws.DIFFERENCES["instance_types.neuron"])
        ("neuron-device-plugin-daemonset", sorted([*aws.NEURON_TYPES, "ml.trn2.3xlarge"])),
    ],
)
def test_instance_type_lists_match_aws(objects, name: str, expected: list[str]) -> None:
    types = affinity_types(_pod(objects, "DaemonSet", name))
    assert sorted(types) == expected
    assert len(types) == len(set(types))


def test_p6_b300_g7e_and_trn2_3xlarge_are_covered(objects) -> None:
    nvidia = affinity_types(_pod(objects, "DaemonSet", "nvidia-device-plugin-daemonset"))
    agent = affinity_types(_pod(objects, "DaemonSet", "health-monitoring-agent"))
    efa = affinity_types(_pod(objects, "DaemonSet", "aws-efa-k8s-device-plugin-daemonset"))
    assert "ml.p6-b300.48xlarge" in nvidia and "ml.p6-b300.48xlarge" in agent
    assert {"ml.g7e.8xlarge", "ml.g7e.12xlarge", "ml.g7e.24xlarge", "ml.g7e.48xlarge",
            "ml.p6-b300.48xlarge", "ml.trn2.3xlarge"} <= set(efa)  # fmt: skip


@pytest.mark.parametrize("name", sorted(aws.TOLERATIONS))
def test_every_aws_toleration_is_kept(objects, name: str) -> None:
    kind = "Deployment" if name.endswith("operator") else "DaemonSet"
    ours = _pod(objects, kind, name)["tolerations"]
    for toleration in aws.TOLERATIONS[name]:
        assert toleration in ours, (name, toleration)


def test_efa_plugin_tolerates_the_aws_efa_taint_and_runs_privileged(objects) -> None:
    pod = _pod(objects, "DaemonSet", "aws-efa-k8s-device-plugin-daemonset")
    keys = {t.get("key") for t in pod["tolerations"]}
    assert "aws.amazon.com/efa" in keys and "vpc.amazonaws.com/efa" not in keys
    (container,) = pod["containers"]
    assert container["securityContext"]["privileged"] is True
    assert container["securityContext"]["runAsUser"] == 0


def _triples(rules: list[Any]) -> set[tuple[str, str, str]]:
    out = set()
    for rule in rules:
        groups, resources, verbs = (
            (rule["apiGroups"], rule["resources"], rule["verbs"])
            if isinstance(rule, dict)
            else rule
        )
        expanded = aws._VERBS if "*" in verbs else verbs
        out |= {(g, r, v) for g in groups for r in resources for v in expanded}
    return out


def _role(objects, name: str) -> dict[str, Any]:
    return objects.get(("ClusterRole", name)) or objects[("Role", name)]


@pytest.mark.parametrize("role", sorted(aws.RBAC))
def test_rbac_matches_aws_but_for_the_named_differences(objects, role: str) -> None:
    ours = _triples(_role(objects, role)["rules"])
    theirs = _triples(aws.RBAC[role])
    not_granted = {(g, r, v) for (name, g, r, v) in aws.RBAC_NOT_GRANTED if name == role}
    assert theirs - ours == not_granted, "AWS grants it and the table does not say why we do not"
    assert ours - theirs == set(), "broader than AWS's chart"


# role -> (AWS's namespace, ours, why): where this chart puts a role elsewhere than AWS's.
NAMESPACE_DIFFERENCES = {
    "hyperpod-scientist-user-namespace-level-role": (
        "kubeflow",
        chart.SCIENTIST_NAMESPACE,
        "kubeflow holds the training operator's ServiceAccount, bound cluster-wide to create "
        "pods; a pod may run as any ServiceAccount of its namespace, so pod create there is pod "
        "create everywhere (security review H2, issue 34). The group keeps AWS's name.",
    ),
}


@pytest.mark.parametrize("role", sorted(aws.SCIENTIST_BINDINGS))
def test_scientist_roles_are_bound_to_the_groups_aws_names(objects, role: str) -> None:
    kind, name, namespace, group = aws.SCIENTIST_BINDINGS[role]
    if role in NAMESPACE_DIFFERENCES:
        theirs, namespace, _why = NAMESPACE_DIFFERENCES[role]
        assert theirs == aws.SCIENTIST_BINDINGS[role][2]
    binding = objects[(kind, name)]
    assert binding["metadata"].get("namespace") == namespace
    assert _role(objects, role)["metadata"].get("namespace") == namespace
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": kind.removesuffix("Binding"), "name": role}  # fmt: skip
    assert binding["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": group}
    ]


def test_patching_is_no_broader_than_aws(objects) -> None:
    ours = _triples(objects[("ClusterRole", "hyperpod-patching")]["rules"])
    assert ours == {("", "pods", "list"), ("", "pods/eviction", "create")}


def test_training_operator_may_patch_and_update_services_and_keep_configmaps(objects) -> None:
    ours = _triples(objects[("ClusterRole", "training-operator")]["rules"])
    assert {("", "services", "patch"), ("", "services", "update"), ("", "endpoints", "create"),
            ("", "configmaps", "create"), ("", "configmaps", "update")} <= ours  # fmt: skip


def test_images_match_aws_but_for_the_named_differences(objects) -> None:
    found = images(list(objects.values()))
    ours = {key: chart.component_images(key, REGION) for key in chart.DEPENDENCY_KEYS}
    assert found == {i for group in ours.values() for i in group}
    different = {k.removeprefix("images.") for k in aws.DIFFERENCES if k.startswith("images.")}
    for key, expected in aws.IMAGES.items():
        (image,) = ours[key]
        if key in different:
            assert not image.endswith(expected), f"{key}: the table names a difference that is gone"
        else:
            assert image.endswith(expected), (key, image)


def test_health_agent_registries_match_aws() -> None:
    accounts = chart.default_values()["images"]["healthMonitoringAgent"]["accounts"]
    assert accounts == aws.HEALTH_AGENT_ACCOUNTS


def test_every_component_of_aws_is_one_of_ours() -> None:
    assert set(aws.IMAGES) <= set(chart.DEPENDENCY_KEYS)


def test_all_on_values_render_every_release(objects) -> None:
    assert all_on()["efaDevicePlugin"] == {"enabled": True}
    namespaces = {o["metadata"].get("namespace") for o in objects.values()} - {None}
    # the scientist Role's own namespace besides the releases' (NAMESPACE_DIFFERENCES)
    assert namespaces == {r.namespace for r in chart.RELEASES} | {chart.SCIENTIST_NAMESPACE}

"""Behaviour of the Kubernetes objects HyperPod needs on EKS (hyperpod_cdk.eks.manifests).

Pure data: no CDK, no cluster. Each test states a rule the objects must keep for the cluster
to work (or for the CDK deployment to succeed) and checks every component against it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from hyperpod_cdk.config.models import EksDependencies
from hyperpod_cdk.eks.manifests import (
    DEPENDENCY_KEYS,
    HEALTH_TAINT_TOLERATION,
    Component,
    dependency_components,
    health_agent_supported_regions,
    namespace_manifests,
)

REGION = "us-west-2"
HEALTH_TAINT = {
    "key": "sagemaker.amazonaws.com/node-health-status",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}
# CloudFormation custom-resource properties are limited in size; stay far below it.
SIZE_BUDGET_BYTES = 64 * 1024

EXPECTED_NAMESPACES = {
    "health_monitoring_agent": "aws-hyperpod",
    "deep_health_check": "aws-hyperpod",
    "job_auto_restart": "aws-hyperpod",
    "patching": "aws-hyperpod",
    "training_operator": "kubeflow",
    "mpi_operator": "mpi-operator",
    "nvidia_device_plugin": "kube-system",
    "neuron_device_plugin": "kube-system",
    "efa_device_plugin": "kube-system",
}
DEVICE_TAINTS = {
    "nvidia_device_plugin": "nvidia.com/gpu",
    "neuron_device_plugin": "aws.amazon.com/neuron",
    "efa_device_plugin": "vpc.amazonaws.com/efa",
}
WORKLOAD_KINDS = {"Deployment", "DaemonSet"}
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


# -- helpers -----------------------------------------------------------------------------------


def all_components(region: str = REGION, **kwargs: Any) -> list[Component]:
    return dependency_components(region=region, enabled=DEPENDENCY_KEYS, **kwargs)


def workloads(component: Component) -> Iterator[dict[str, Any]]:
    return (obj for obj in component.manifests if obj["kind"] in WORKLOAD_KINDS)


def pod_spec(workload: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def tolerates(tolerations: list[Mapping[str, str]], taint: Mapping[str, str]) -> bool:
    """Kubernetes' rule: some toleration matches the taint's key (or has none), value and effect."""
    for tol in tolerations:
        if tol.get("effect") not in (None, "", taint["effect"]):
            continue
        key = tol.get("key")
        if key in (None, ""):
            if tol.get("operator") == "Exists":
                return True
            continue
        if key != taint["key"]:
            continue
        if tol.get("operator", "Equal") == "Exists":
            return True
        if tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def instance_type_values(spec: Mapping[str, Any]) -> list[str]:
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    return [
        value
        for term in terms
        for expr in term["matchExpressions"]
        if expr["key"] == "node.kubernetes.io/instance-type"
        for value in expr["values"]
    ]


def container_images(component: Component) -> set[str]:
    return {
        c["image"]
        for w in workloads(component)
        for c in [*pod_spec(w).get("initContainers", []), *pod_spec(w)["containers"]]
    }


def by_key(components: list[Component]) -> dict[str, Component]:
    return {c.key: c for c in components}


# -- the helpers themselves can fail -----------------------------------------------------------


def test_tolerates_follows_kubernetes_matching() -> None:
    assert tolerates([HEALTH_TAINT_TOLERATION], HEALTH_TAINT)
    assert tolerates([{"operator": "Exists", "effect": "NoSchedule"}], HEALTH_TAINT)
    assert tolerates([{"key": HEALTH_TAINT["key"], "operator": "Exists"}], HEALTH_TAINT)
    assert not tolerates([], HEALTH_TAINT)
    assert not tolerates([{"key": "CriticalAddonsOnly", "operator": "Exists"}], HEALTH_TAINT)
    assert not tolerates([{**HEALTH_TAINT_TOLERATION, "value": "Schedulable"}], HEALTH_TAINT)
    assert not tolerates([{**HEALTH_TAINT_TOLERATION, "effect": "NoExecute"}], HEALTH_TAINT)


# -- the set of components ---------------------------------------------------------------------


def test_keys_are_the_config_model_fields_in_install_order() -> None:
    assert tuple(EksDependencies.model_fields) == DEPENDENCY_KEYS
    assert [c.key for c in all_components()] == list(DEPENDENCY_KEYS)


def test_enabled_selects_components_and_install_order_wins() -> None:
    chosen = ["efa_device_plugin", "patching", "health_monitoring_agent", "patching"]
    keys = [c.key for c in dependency_components(region=REGION, enabled=chosen)]
    assert keys == ["health_monitoring_agent", "patching", "efa_device_plugin"]
    assert dependency_components(region=REGION, enabled=[]) == []


def test_config_model_enabled_list_is_accepted() -> None:
    config = EksDependencies(mpi_operator=False, neuron_device_plugin=False)
    keys = [c.key for c in dependency_components(region=REGION, enabled=config.enabled())]
    assert "mpi_operator" not in keys and "neuron_device_plugin" not in keys
    assert len(keys) == len(DEPENDENCY_KEYS) - 2


def test_unknown_key_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="mpi_opertor"):
        dependency_components(region=REGION, enabled=["mpi_opertor"])


@pytest.mark.parametrize("region", ["mars-north-1", "us-west-9", ""])
def test_unknown_region_is_rejected_by_name(region: str) -> None:
    with pytest.raises(ValueError, match=f"region '{re.escape(region)}'"):
        dependency_components(region=region, enabled=DEPENDENCY_KEYS)


def test_region_without_the_agent_image_is_rejected_only_when_the_agent_is_on() -> None:
    region = "ap-northeast-2"  # an EKS region where AWS publishes no agent image
    assert region not in health_agent_supported_regions()
    with pytest.raises(ValueError, match="ap-northeast-2.*health monitoring agent"):
        dependency_components(region=region, enabled=DEPENDENCY_KEYS)
    others = [k for k in DEPENDENCY_KEYS if k != "health_monitoring_agent"]
    assert [c.key for c in dependency_components(region=region, enabled=others)] == others


# -- objects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_objects_are_well_formed(component: Component) -> None:
    assert component.manifests, component.key
    assert component.title
    for obj in component.manifests:
        assert obj["apiVersion"] and obj["kind"], obj
        name = obj["metadata"]["name"]
        assert DNS_SUBDOMAIN.match(name) and len(name) <= 253, name
        json.dumps(obj)  # plain data only


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_objects_are_in_apply_order(component: Component) -> None:
    def rank(kind: str) -> int:
        if kind == "Namespace":
            return 0
        if kind == "CustomResourceDefinition":
            return 1
        if kind in RBAC_KINDS:
            return 2
        return 3

    ranks = [rank(obj["kind"]) for obj in component.manifests]
    assert ranks == sorted(ranks), [obj["kind"] for obj in component.manifests]


def test_object_names_are_unique_across_components() -> None:
    components = all_components()
    identities = Counter(
        (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        for c in components
        for obj in c.manifests
        if obj["kind"] != "Namespace"
    )
    assert [identity for identity, n in identities.items() if n > 1] == []
    # a namespace shared by several components is emitted identically by each
    namespaces: dict[str, str] = {}
    for c in components:
        for obj in c.manifests:
            if obj["kind"] == "Namespace":
                text = json.dumps(obj, sort_keys=True)
                assert namespaces.setdefault(obj["metadata"]["name"], text) == text


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_each_component_fits_the_size_budget(component: Component) -> None:
    size = len(json.dumps(list(component.manifests), separators=(",", ":")))
    assert size < SIZE_BUDGET_BYTES, f"{component.key}: {size} bytes"


# -- namespaces --------------------------------------------------------------------------------


def test_components_live_in_their_namespaces() -> None:
    for component in all_components():
        assert component.namespace == EXPECTED_NAMESPACES[component.key]
        for obj in component.manifests:
            ns = obj["metadata"].get("namespace")
            assert ns in (None, component.namespace), (component.key, obj["metadata"])
            for subject in obj.get("subjects", []):
                if subject["kind"] == "ServiceAccount":
                    assert subject["namespace"] == component.namespace


def test_namespace_objects_come_first_and_kube_system_is_never_emitted() -> None:
    for component in all_components():
        emitted = [o["metadata"]["name"] for o in component.manifests if o["kind"] == "Namespace"]
        namespaced = any("namespace" in o["metadata"] for o in component.manifests)
        if component.namespace == "kube-system" or not namespaced:
            assert emitted == [], component.key
        else:
            assert emitted == [component.namespace], component.key
            assert component.manifests[0]["kind"] == "Namespace"


def test_namespaces_can_be_applied_separately() -> None:
    components = all_components(include_namespaces=False)
    assert not any(o["kind"] == "Namespace" for c in components for o in c.manifests)
    names = [ns["metadata"]["name"] for ns in namespace_manifests(components)]
    assert names == ["aws-hyperpod", "kubeflow", "mpi-operator"]
    only_plugins = [c for c in components if c.namespace == "kube-system"]
    assert namespace_manifests(only_plugins) == []


# -- pods --------------------------------------------------------------------------------------


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_every_pod_template_tolerates_the_health_taint(component: Component) -> None:
    for workload in workloads(component):
        assert tolerates(pod_spec(workload).get("tolerations", []), HEALTH_TAINT), workload[
            "metadata"
        ]["name"]


@pytest.mark.parametrize("key", sorted(DEVICE_TAINTS))
def test_device_plugins_tolerate_their_device_taint(key: str) -> None:
    taint = {"key": DEVICE_TAINTS[key], "effect": "NoSchedule"}
    plugins = list(workloads(by_key(all_components())[key]))
    assert plugins
    for workload in plugins:
        assert tolerates(pod_spec(workload)["tolerations"], taint)


def test_agents_and_plugins_run_only_on_hyperpod_instance_types() -> None:
    for component in all_components():
        for workload in workloads(component):
            spec = pod_spec(workload)
            if workload["kind"] != "DaemonSet":
                assert "affinity" not in spec  # the operators may run on any node
                continue
            values = instance_type_values(spec)
            assert values, workload["metadata"]["name"]
            assert all(v.startswith("ml.") for v in values), values
            assert len(values) == len(set(values))


def test_affinities_target_the_right_devices() -> None:
    components = by_key(all_components())

    def types_of(key: str) -> set[str]:
        return {v for w in workloads(components[key]) for v in instance_type_values(pod_spec(w))}

    gpu, neuron, efa = (
        types_of("nvidia_device_plugin"),
        types_of("neuron_device_plugin"),
        types_of("efa_device_plugin"),
    )
    assert {"ml.p5.48xlarge", "ml.p4d.24xlarge", "ml.g5.xlarge", "ml.p6-b200.48xlarge"} <= gpu
    assert {"ml.trn1.32xlarge", "ml.trn2.48xlarge", "ml.inf2.xlarge"} <= neuron
    assert {"ml.p5.48xlarge", "ml.trn1.32xlarge"} <= efa
    assert not gpu & neuron
    assert types_of("health_monitoring_agent") <= gpu | neuron
    assert "ml.g5.xlarge" not in efa  # no EFA on the small g5 sizes


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_workloads_select_their_own_pods_and_use_existing_identities(component: Component) -> None:
    accounts = {o["metadata"]["name"] for o in component.manifests if o["kind"] == "ServiceAccount"}
    for workload in workloads(component):
        selector = workload["spec"]["selector"]["matchLabels"]
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
        account = pod_spec(workload).get("serviceAccountName")
        assert account is None or account in accounts, account


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_bindings_refer_to_roles_of_the_same_component(component: Component) -> None:
    roles = {o["metadata"]["name"] for o in component.manifests if o["kind"] == "ClusterRole"}
    for binding in (o for o in component.manifests if o["kind"] == "ClusterRoleBinding"):
        assert binding["roleRef"]["name"] in roles
        assert binding["subjects"]


def test_hyperpod_acts_as_its_service_linked_role_user() -> None:
    components = by_key(all_components())
    for key in ("job_auto_restart", "patching"):
        subjects = [
            s
            for o in components[key].manifests
            if o["kind"] == "ClusterRoleBinding"
            for s in o["subjects"]
        ]
        assert {"kind": "User", "name": "hyperpod-service-linked-role"} in [
            {"kind": s["kind"], "name": s["name"]} for s in subjects
        ], key


# -- images ------------------------------------------------------------------------------------

PINNED_IMAGE = re.compile(
    r"^(?P<registry>[a-z0-9.-]+\.[a-z]{2,}(:\d+)?)/(?P<path>[a-z0-9._/-]+)"
    r"(:(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?(@sha256:[a-f0-9]{64})?$"
)


@pytest.mark.parametrize("component", all_components(), ids=lambda c: c.key)
def test_images_are_listed_qualified_pinned_and_not_from_github(component: Component) -> None:
    assert set(component.images) == container_images(component)
    assert len(component.images) == len(set(component.images))
    for image in component.images:
        match = PINNED_IMAGE.match(image)
        assert match, f"not a fully qualified image: {image}"
        assert match["tag"] or "@sha256:" in image, f"unpinned: {image}"
        assert match["tag"] != "latest", image
        assert "ghcr.io" not in match["registry"] and "github" not in image, image


def test_workloads_have_images() -> None:
    with_workloads = [c for c in all_components() if any(workloads(c))]
    assert {c.key for c in with_workloads} == {
        "health_monitoring_agent",
        "training_operator",
        "mpi_operator",
        "nvidia_device_plugin",
        "neuron_device_plugin",
        "efa_device_plugin",
    }
    assert all(c.images for c in with_workloads)


@pytest.mark.parametrize("region", sorted(health_agent_supported_regions()))
def test_regional_images_come_from_the_nodes_own_region(region: str) -> None:
    components = by_key(
        dependency_components(
            region=region, enabled=["health_monitoring_agent", "efa_device_plugin"]
        )
    )
    (agent,) = components["health_monitoring_agent"].images
    (efa,) = components["efa_device_plugin"].images
    assert re.match(rf"^\d{{12}}\.dkr\.ecr\.{region}\.amazonaws\.com/", agent), agent
    assert agent.split("/", 1)[1].startswith("hyperpod-health-monitoring-agent:")
    assert re.match(rf"^\d{{12}}\.dkr\.ecr\.{region}\.amazonaws\.com/eks/", efa), efa


def test_agent_registry_accounts_differ_by_region() -> None:
    accounts = {
        region: dependency_components(region=region, enabled=["health_monitoring_agent"])[0]
        .images[0]
        .split(".")[0]
        for region in ("us-east-1", "us-west-2", "eu-west-1")
    }
    assert accounts == {
        "us-east-1": "767398015722",
        "us-west-2": "905418368575",
        "eu-west-1": "533267293120",
    }


# -- operators ---------------------------------------------------------------------------------


def crds(component: Component) -> list[dict[str, Any]]:
    return [o for o in component.manifests if o["kind"] == "CustomResourceDefinition"]


def test_crds_have_open_schemas_and_status() -> None:
    for component in all_components():
        for crd in crds(component):
            spec = crd["spec"]
            assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
            (version,) = spec["versions"]
            assert version["served"] and version["storage"]
            assert version["schema"]["openAPIV3Schema"] == {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }
            assert version["subresources"]["status"] == {}


def test_mpijob_belongs_to_the_mpi_operator_only() -> None:
    components = by_key(all_components())
    training, mpi = components["training_operator"], components["mpi_operator"]
    assert [c["spec"]["names"]["kind"] for c in crds(mpi)] == ["MPIJob"]
    assert crds(mpi)[0]["spec"]["versions"][0]["name"] == "v2beta1"
    training_kinds = {c["spec"]["names"]["kind"] for c in crds(training)}
    assert "PyTorchJob" in training_kinds and "MPIJob" not in training_kinds
    (deployment,) = workloads(training)
    args = pod_spec(deployment)["containers"][0]["args"]
    schemes = {a.split("=", 1)[1] for a in args if a.startswith("--enable-scheme=")}
    assert schemes == {kind.lower() for kind in training_kinds}


def test_pytorchjob_can_be_scaled_elastically() -> None:
    training = by_key(all_components())["training_operator"]
    (pytorch,) = [c for c in crds(training) if c["spec"]["names"]["kind"] == "PyTorchJob"]
    scale = pytorch["spec"]["versions"][0]["subresources"]["scale"]
    assert scale["specReplicasPath"].startswith(".spec.")
    assert scale["statusReplicasPath"].startswith(".status.")


def test_operators_need_no_webhooks() -> None:
    kinds = {o["kind"] for c in all_components() for o in c.manifests}
    assert not kinds & {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
    assert "Secret" not in kinds


def test_changing_the_exported_toleration_does_not_change_the_manifests() -> None:
    saved = dict(HEALTH_TAINT_TOLERATION)
    HEALTH_TAINT_TOLERATION["value"] = "changed"
    try:
        for component in all_components():
            for workload in workloads(component):
                assert tolerates(pod_spec(workload)["tolerations"], HEALTH_TAINT)
    finally:
        HEALTH_TAINT_TOLERATION.update(saved)


def test_the_package_does_not_import_the_cdk() -> None:
    code = (
        "import sys, hyperpod_cdk.eks.manifests; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii')); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

"""The hyperpod-cdk-dependencies chart: linted and rendered with the deploy-time helm, for the
values every shipped EKS config really deploys (read back from its synthesized template)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from chart_testkit import (
    affinity_types,
    by_kind_name,
    chart_releases,
    helm,
    images,
    lint,
    pod_specs,
    render,
    render_result,
    structural_problems,
    unknown_fields,
)
from stack_testkit import EKS_CONFIGS, config_id
from syrupy.extensions.json import JSONSnapshotExtension

from hyperpod_cdk.facts import chart

EKS = [pytest.param(p, id=config_id(p)) for p in EKS_CONFIGS]
HEALTH_TAINT = "sagemaker.amazonaws.com/node-health-status"
REGION = "us-west-2"
HELM35 = "1.35"


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


def _deployed(synth) -> list[Any]:
    return chart_releases(synth.template("eks-dependencies"))


def _render_deployed(synth) -> dict[str, list[dict[str, Any]]]:
    version = synth.config.eks_settings.kubernetes_version
    return {
        r.release: render(
            helm(version), r.values, release=r.release, namespace=r.namespace, kube_version=version
        )  # fmt: skip
        for r in _deployed(synth)
    }


# -- what the templates install --------------------------------------------------------------


@pytest.mark.parametrize("path", EKS)
def test_dependencies_are_helm_releases_of_the_chart_asset(path: Path, synthesized) -> None:
    synth = synthesized(path)
    releases = _deployed(synth)
    enabled = synth.config.eks_settings.dependencies.enabled()
    assert [r.release for r in releases] == [r.name for r in chart.releases_for(enabled)]
    for r in releases:
        props = r.properties
        # from the CDK asset bucket, never a chart repository
        assert "ChartAssetURL" in props and "Repository" not in props and "Chart" not in props
        assert "Wait" not in props  # DaemonSets wait for nodes that do not exist yet
        assert r.release != chart.AWS_RELEASE and r.release.startswith("hyperpod-cdk-")
        assert r.values["region"] == synth.config.region
    # nothing the chart covers is left as a raw manifest
    assert not synth.resources("eks-dependencies", "Custom::AWSCDK-EKS-KubernetesResource")


@pytest.mark.parametrize("path", EKS)
def test_each_release_enables_only_its_own_components(path: Path, synthesized) -> None:
    synth = synthesized(path)
    enabled = set(synth.config.eks_settings.dependencies.enabled())
    on_somewhere: list[str] = []
    for r in _deployed(synth):
        (release,) = [x for x in chart.RELEASES if x.name == r.release]
        assert r.namespace == release.namespace
        on = [key for key, vk in chart.COMPONENT_VALUES.items() if r.values[vk]["enabled"]]
        assert set(on) <= set(release.components)
        on_somewhere += on
    assert sorted(on_somewhere) == sorted(enabled)


@pytest.mark.parametrize("path", EKS)
def test_helm_lint_passes_with_the_deployed_values(path: Path, synthesized) -> None:
    synth = synthesized(path)
    binary = helm(synth.config.eks_settings.kubernetes_version)
    for r in _deployed(synth):
        result = lint(binary, r.values, r.namespace)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("minor", range(30, 36))
def test_every_layers_helm_lints_and_renders_the_chart(minor: int) -> None:
    version = f"1.{minor}"
    binary = helm(version)
    for release in chart.RELEASES:
        values = chart.release_values(release, region=REGION, enabled=chart.DEPENDENCY_KEYS)
        result = lint(binary, values, release.namespace)
        assert result.returncode == 0, result.stdout + result.stderr
        assert render(binary, values, release=release.name, namespace=release.namespace,
                      kube_version=version)  # fmt: skip


# the one EKS config that installs every component (the snapshot), and the others
SNAPSHOT_CONFIG = "eks-full"
OTHERS = [p for p in EKS if p.id != SNAPSHOT_CONFIG]
POLICY_BINDING = ("ValidatingAdmissionPolicyBinding", "hyperpod-cdk-workload-pods")


@pytest.mark.parametrize("path", [p for p in EKS if p.id == SNAPSHOT_CONFIG])
def test_rendered_manifests_match_snapshot(path: Path, synthesized, snapshot_json) -> None:
    synth = synthesized(path)
    assert set(synth.config.eks_settings.dependencies.enabled()) == set(chart.DEPENDENCY_KEYS)
    assert _render_deployed(synth) == snapshot_json


def _component(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["labels"]["app.kubernetes.io/component"])


def _binding_namespaces(rendered: dict[str, list[dict[str, Any]]]) -> list[str]:
    (binding,) = [
        o for objs in rendered.values() for o in objs
        if (o["kind"], o["metadata"]["name"]) == POLICY_BINDING
    ]  # fmt: skip
    (expression,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expression["key"] == "kubernetes.io/metadata.name" and expression["operator"] == "In"
    return list(expression["values"])


@pytest.mark.parametrize("path", OTHERS)
def test_other_configs_render_the_snapshotted_objects_of_their_components(
    path: Path, synthesized
) -> None:
    """What the snapshot of another EKS config would hold: the snapshotted config's objects of
    the components it enables, each the same, and the pod policy binding holding the scientists'
    namespace and its task governance teams' (scientist_rbac, a component, labels its objects
    with its key's name; the policy objects are labelled pod-policy)."""
    from hyperpod_cdk.config.task_governance import namespace_of

    synth = synthesized(path)
    eks = synth.config.eks_settings
    enabled = eks.dependencies.enabled()
    teams = [
        namespace_of(t.name) for t in (eks.task_governance.teams if eks.task_governance else [])
    ]
    labels = {key.replace("_", "-") for key in enabled} | {"pod-policy"}
    full = _render_deployed(synthesized(SNAPSHOT_CONFIG))
    mine = _render_deployed(synth)
    assert _binding_namespaces(mine) == chart.pod_policy_namespaces(enabled, teams)
    if "scientist_rbac" in enabled:
        assert _binding_namespaces(mine)[0] == "hyperpod-scientists"

    def comparable(rendered: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        """The objects of the enabled components, the binding's namespaces left out."""
        result = copy.deepcopy(rendered)
        for objs in result.values():
            for o in objs:
                if (o["kind"], o["metadata"]["name"]) == POLICY_BINDING:
                    del o["spec"]["matchResources"]["namespaceSelector"]
        return {r: [o for o in objs if _component(o) in labels] for r, objs in result.items()}

    expected = {r: objs for r, objs in comparable(full).items() if objs or r in mine}
    assert comparable(mine) == expected


# -- what the rendered objects are -----------------------------------------------------------


@pytest.fixture(scope="module")
def everything() -> list[dict[str, Any]]:
    """Every object of every release, as the app installs them, all components on."""
    objects = []
    for release in chart.RELEASES:
        values = chart.release_values(release, region=REGION, enabled=chart.DEPENDENCY_KEYS)
        objects += render(helm(HELM35), values, release=release.name, namespace=release.namespace)
    return objects


def test_every_pod_tolerates_the_health_taint(everything) -> None:
    for workload, pod in pod_specs(everything):
        tolerations = pod["tolerations"]
        assert any(t.get("key") == HEALTH_TAINT for t in tolerations) or any(
            "key" not in t and t["operator"] == "Exists" and t.get("effect") == "NoSchedule"
            for t in tolerations
        ), workload["metadata"]["name"]


def test_every_image_is_pinned_and_none_comes_from_github(everything) -> None:
    found = images(everything)
    assert found == {
        image for key in chart.DEPENDENCY_KEYS for image in chart.component_images(key, REGION)
    }
    for image in found:
        assert ":" in image.rsplit("/", 1)[1] and not image.endswith(":latest"), image
        assert "ghcr.io" not in image and "github" not in image


def test_the_registry_override_reaches_every_image() -> None:
    registry = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror"
    for release in chart.RELEASES:
        values = chart.release_values(
            release, region=REGION, enabled=chart.DEPENDENCY_KEYS, image_registry=registry
        )
        objects = render(helm(HELM35), values, release=release.name, namespace=release.namespace)
        for image in images(objects):
            assert image.startswith(registry + "/"), image
        assert images(objects) == {
            i for key in release.components for i in chart.component_images(key, REGION, registry)
        }


def test_python_image_table_matches_what_helm_renders_in_every_region() -> None:
    (core,) = [r for r in chart.RELEASES if r.name == "hyperpod-cdk-core"]
    for region in sorted(chart.image_regions("healthMonitoringAgent")):
        values = chart.release_values(core, region=region, enabled=["health_monitoring_agent"])
        objects = render(helm(HELM35), values, release=core.name, namespace=core.namespace)
        assert images(objects) == set(chart.component_images("health_monitoring_agent", region))


def test_a_region_without_the_image_fails_the_render_with_the_fix() -> None:
    (plugins,) = [r for r in chart.RELEASES if r.name == "hyperpod-cdk-device-plugins"]
    values = chart.release_values(plugins, region="mars-east-1", enabled=["efa_device_plugin"])
    result = render_result(helm(HELM35), values, release=plugins.name, namespace=plugins.namespace)
    assert result.returncode != 0
    assert 'images.efaDevicePlugin is not published in region "mars-east-1"' in result.stderr
    assert "set imageRegistry" in result.stderr


def test_hyperpod_components_refuse_another_namespace() -> None:
    result = render_result(helm(HELM35), {"region": REGION, "patching": {"enabled": True}},
                           namespace="default")  # fmt: skip
    assert result.returncode != 0
    assert "must be released in namespace aws-hyperpod" in result.stderr


def test_nothing_is_rendered_when_every_component_is_off() -> None:
    assert render(helm(HELM35), {"region": REGION}) == []


def test_extra_tolerations_and_instance_types_reach_the_pods() -> None:
    (plugins,) = [r for r in chart.RELEASES if r.name == "hyperpod-cdk-device-plugins"]
    toleration = {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    values = chart.release_values(
        plugins,
        region=REGION,
        enabled=["nvidia_device_plugin"],
        extra_tolerations=[toleration],
        extra_instance_types={"nvidiaGpu": ["ml.p7.48xlarge", "ml.p5.48xlarge"]},
    )
    objects = render(helm(HELM35), values, release=plugins.name, namespace=plugins.namespace)
    ((_, pod),) = list(pod_specs(objects))
    assert toleration in pod["tolerations"]
    types = affinity_types(pod)
    assert types[-1] == "ml.p7.48xlarge" and types.count("ml.p5.48xlarge") == 1


def test_image_tag_override() -> None:
    (core,) = [r for r in chart.RELEASES if r.name == "hyperpod-cdk-core"]
    values = chart.release_values(
        core, region=REGION, enabled=["health_monitoring_agent"],
        image_tags={"health_monitoring_agent": "1.0.9999.0_1.0.999.0"},
    )  # fmt: skip
    objects = render(helm(HELM35), values, release=core.name, namespace=core.namespace)
    assert {i.rsplit(":", 1)[1] for i in images(objects)} == {"1.0.9999.0_1.0.999.0"}


# -- CRDs ------------------------------------------------------------------------------------


def _crds(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "CustomResourceDefinition"}


def test_crds_are_structural(everything) -> None:
    crds = _crds(everything)
    assert set(crds) == {
        "pytorchjobs.kubeflow.org", "tfjobs.kubeflow.org", "mxjobs.kubeflow.org",
        "xgboostjobs.kubeflow.org", "paddlejobs.kubeflow.org", "mpijobs.kubeflow.org",
    }  # fmt: skip
    for name, crd in crds.items():
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            assert structural_problems(schema) == [], name
            # typed down to the replica specs, not an open object
            assert not schema["properties"]["spec"].get("x-kubernetes-preserve-unknown-fields")


def _job(kind: str, api: str, specs: str, **spec: Any) -> dict[str, Any]:
    replica = {
        "replicas": 2,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": []}},
    }
    return {
        "apiVersion": api, "kind": kind, "metadata": {"name": "j"},
        "spec": {specs: {"Worker": replica}, **spec},
    }  # fmt: skip


def _schema(everything, name: str) -> dict[str, Any]:
    return _crds(everything)[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_a_valid_job_has_no_unknown_fields(everything) -> None:
    job = _job("PyTorchJob", "kubeflow.org/v1", "pytorchReplicaSpecs",
               elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "rdzvBackend": "c10d"},
               runPolicy={"cleanPodPolicy": "None"}, nprocPerNode="8")  # fmt: skip
    assert unknown_fields(job, _schema(everything, "pytorchjobs.kubeflow.org")) == []
    mpi = _job("MPIJob", "kubeflow.org/v2beta1", "mpiReplicaSpecs", slotsPerWorker=8)
    assert unknown_fields(mpi, _schema(everything, "mpijobs.kubeflow.org")) == []


def test_a_typo_in_a_job_is_rejected(everything) -> None:
    typo = _job("PyTorchJob", "kubeflow.org/v1", "pytorchReplicaSpec")
    schema = _schema(everything, "pytorchjobs.kubeflow.org")
    assert unknown_fields(typo, schema) == [".spec.pytorchReplicaSpec"]
    assert "pytorchReplicaSpecs" in schema["properties"]["spec"]["required"]
    wrong_type = _job("PyTorchJob", "kubeflow.org/v1", "pytorchReplicaSpecs")
    wrong_type["spec"]["pytorchReplicaSpecs"]["Wroker"] = wrong_type["spec"][
        "pytorchReplicaSpecs"
    ].pop("Worker")
    assert unknown_fields(wrong_type, schema) == [".spec.pytorchReplicaSpecs.Wroker"]


def test_elastic_jobs_scale_through_worker_status(everything) -> None:
    for name, specs in (("pytorchjobs.kubeflow.org", "pytorchReplicaSpecs"),
                        ("paddlejobs.kubeflow.org", "paddleReplicaSpecs")):  # fmt: skip
        scale = _crds(everything)[name]["spec"]["versions"][0]["subresources"]["scale"]
        assert scale == {
            "specReplicasPath": f".spec.{specs}.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
        status = _schema(everything, name)["properties"]["status"]
        worker = status["properties"]["replicaStatuses"]["additionalProperties"]["properties"]
        assert {"active", "selector"} <= set(worker)


def test_crds_are_templates_so_upgrades_reach_them() -> None:
    assert not (chart.CHART_DIR / "crds").exists()


# -- RBAC ------------------------------------------------------------------------------------


def test_aggregated_kubeflow_roles(everything) -> None:
    roles = by_kind_name(everything)
    admin = roles[("ClusterRole", "kubeflow-training-admin")]
    assert admin["aggregationRule"]["clusterRoleSelectors"] == [
        {
            "matchLabels": {
                "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-training-admin": "true"
            }
        }
    ]
    edit = roles[("ClusterRole", "kubeflow-training-edit")]["metadata"]["labels"]
    assert edit["rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit"] == "true"
    assert edit["rbac.authorization.kubeflow.org/aggregate-to-kubeflow-training-admin"] == "true"
    view = roles[("ClusterRole", "kubeflow-training-view")]["metadata"]["labels"]
    assert view["rbac.authorization.kubeflow.org/aggregate-to-kubeflow-view"] == "true"
    for name in ("kubeflow-mpijobs-admin", "kubeflow-mpijobs-edit", "kubeflow-mpijobs-view"):
        assert ("ClusterRole", name) in roles


def test_every_binding_names_a_role_and_account_of_the_chart(everything) -> None:
    objects = by_kind_name(everything)
    for (kind, name), obj in objects.items():
        if kind != "ClusterRoleBinding":
            continue
        assert ("ClusterRole", obj["roleRef"]["name"]) in objects, name
        for subject in obj["subjects"]:
            if subject["kind"] == "ServiceAccount":
                assert ("ServiceAccount", subject["name"]) in objects, name


def test_objects_carry_the_release_labels(everything) -> None:
    for obj in everything:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/instance"].startswith("hyperpod-cdk-")
        assert labels["helm.sh/chart"] == f"{chart.CHART_NAME}-{chart.chart_version()}"


# -- versioning ------------------------------------------------------------------------------

# The chart's content per released version. A change of a template or of values.yaml must bump
# Chart.yaml's version (it is in every object's helm.sh/chart label, and `helm history` shows it)
# and add its digest here.
CHART_DIGESTS = {
    "1.0.0": "181eaebed3cea7aaa1ea0316f837906064d02460b19d9861a4d43610125183e4",
    "1.1.0": "d047ce32d73c444431a7b9856e3385ddb2161a605ec02b735f5e90a42bd13648",
    "1.2.0": "74741dc691c8e86b028cf7fb96ac1d5ee67f56a8f37f3bbdf859a0395b60ba83",
    "1.2.1": "b5fa5c43d476a79ad7573f33480dd9e396e89841fce9db324ed4f2b9c275424c",
}


def _chart_digest() -> str:
    import hashlib

    digest = hashlib.sha256()
    for file in sorted(p for p in chart.CHART_DIR.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(chart.CHART_DIR)).encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def test_the_chart_version_changes_with_its_content() -> None:
    version = chart.chart_version()
    assert version in CHART_DIGESTS, f"chart version {version} has no digest here: add it"
    assert _chart_digest() == CHART_DIGESTS[version], (
        f"the chart changed but its version is still {version}: bump Chart.yaml's version and "
        f"add {{{chart.chart_version()!r}: {_chart_digest()!r}}} to CHART_DIGESTS"
    )

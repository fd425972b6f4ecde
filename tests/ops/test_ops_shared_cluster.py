"""Preflight on an adopted (shared) EKS cluster: what it already runs, and the health agent image.

The Kubernetes side answers through a fake API server that behaves like the real one on what the
checks read: list bodies (``{"kind": "...List", "items": [...]}``), 404 for an object that does
not exist, 403 for a caller without access, and an endpoint that does not answer.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from typing import Any
from unittest.mock import ANY

import pytest
from ops_testkit import (
    ACCOUNT,
    PROJECT_ROOT,
    StubbedAws,
    agent_image,
    by_name,
    endpoint_only,
    environment,
    healthy_account,
)
from stack_testkit import DELETE

from hyperpod_cdk.facts import chart
from hyperpod_ops import shared_cluster
from hyperpod_ops.k8s import (
    CLUSTER_ID_HEADER,
    TOKEN_PREFIX,
    Kubernetes,
    KubernetesUnreachable,
    Response,
    eks_token,
)

NAME = "shared-platform"
ALL_ON = dict.fromkeys(("health_monitoring_agent", "deep_health_check", "job_auto_restart", "patching", "training_operator", "mpi_operator", "nvidia_device_plugin", "neuron_device_plugin", "efa_device_plugin", "scientist_rbac"), True)  # fmt: skip


def adopted(**dependencies: bool) -> Any:
    return environment("eks-existing-cluster", {"eks.dependencies": {**ALL_ON, **dependencies}})


class FakeApi:
    """A Kubernetes API server holding a few objects (GET only)."""

    def __init__(self, *, denied: bool = False, down: bool = False) -> None:
        self.denied, self.down = denied, down
        self.objects: dict[str, list[dict[str, Any]]] = {}
        self.crds: dict[str, dict[str, Any]] = {}
        self.named: dict[str, dict[str, Any]] = {}  # one object by its API path (RBAC)
        self.paths: list[str] = []

    def add(self, path: str, obj: dict[str, Any]) -> None:
        self.objects.setdefault(path, []).append(obj)

    def __call__(self, method: str, path: str, body: dict[str, Any] | None) -> Response:
        assert method == "GET" and body is None  # preflight only reads
        self.paths.append(path)
        if self.down:
            raise KubernetesUnreachable("timed out")
        if self.denied:
            return Response(403, {"kind": "Status", "message": "secrets is forbidden"})
        if path.startswith("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"):
            name = path.rsplit("/", 1)[1]
            if name in self.crds:
                return Response(200, self.crds[name])
            return Response(404, {"kind": "Status", "reason": "NotFound"})
        if re.fullmatch(
            r"/apis/rbac\.authorization\.k8s\.io/v1/(namespaces/[^/]+/)?\w+/[^/?]+", path
        ) or re.fullmatch(
            r"/api/v1/namespaces/[^/?]+|/apis/admissionregistration\.k8s\.io/v1/\w+/[^/?]+", path
        ):
            if path in self.named:
                return Response(200, self.named[path])
            return Response(404, {"kind": "Status", "reason": "NotFound"})
        base, _, query = path.partition("?")
        items = self.objects.get(base, [])
        selector = urllib.parse.parse_qs(query).get("labelSelector", [""])[0]
        items = [i for i in items if matches(selector, i["metadata"].get("labels") or {})]
        return Response(200, {"kind": "List", "items": items})


def matches(selector: str, labels: dict[str, str]) -> bool:
    """A label selector of equality (``k=v``) and set (``k in (a,b)``) requirements."""
    for requirement in re.findall(r"[^,(]+(?:\([^)]*\))?", selector):
        set_based = re.fullmatch(r"\s*(\S+)\s+in\s+\((.*)\)\s*", requirement)
        if set_based:
            key, values = set_based[1], {v.strip() for v in set_based[2].split(",")}
            if labels.get(key) not in values:
                return False
        else:
            key, _, value = requirement.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
    return True


def helm_release(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": f"sh.helm.release.v1.{name}.v1", "namespace": namespace,
                         "labels": {"owner": "helm", "name": name, "status": "deployed"}}}  # fmt: skip


def workload(name: str, namespace: str, image: str, release: str | None = None) -> dict[str, Any]:
    annotations = {"meta.helm.sh/release-name": release} if release else {}
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }


def run(
    config: Any, api: FakeApi, aws: StubbedAws, addons: list[str] | None = None
) -> dict[str, Any]:
    aws.stub("eks").add_response("list_addons", {"addons": addons or []}, {"clusterName": NAME})
    endpoint_only(aws, NAME, "https://example.eks.amazonaws.com")
    if api.denied:
        aws.stub("sts").add_response(
            "get_caller_identity",
            {
                "Account": ACCOUNT,
                "Arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/Dev/bob",
                "UserId": "x",
            },
        )
    checks = shared_cluster.check_shared_cluster(
        config, aws("eks"), aws("sts"), connect=lambda *_: Kubernetes(api)
    )
    return by_name(checks)


@pytest.fixture
def aws() -> StubbedAws:
    return StubbedAws()


def test_aws_release_present_fails_with_the_keys_to_switch_off(aws: StubbedAws) -> None:
    api = FakeApi()
    api.add("/api/v1/secrets", helm_release(chart.AWS_RELEASE, "kube-system"))
    check = run(adopted(mpi_operator=False, neuron_device_plugin=False), api, aws)[
        "shared cluster objects"
    ]
    assert check.failed
    assert "AWS's Helm release kube-system/hyperpod-dependencies (the health agent" in check.detail
    assert "eks.dependencies.health_monitoring_agent: false" in check.fix
    assert "eks.dependencies.efa_device_plugin: false" in check.fix
    assert "eks.dependencies.mpi_operator" not in check.fix  # already off
    assert "eks.dependencies.neuron_device_plugin" not in check.fix
    assert "helm uninstall hyperpod-dependencies --namespace kube-system" in check.fix


def test_our_own_releases_are_an_update(aws: StubbedAws) -> None:
    api = FakeApi()
    api.add("/api/v1/secrets", helm_release("hyperpod-cdk-core", "aws-hyperpod"))
    api.add("/apis/apps/v1/daemonsets", workload(
        "nvidia-device-plugin-daemonset", "kube-system", "nvcr.io/nvidia/k8s-device-plugin:v0.16.1",
        release="hyperpod-cdk-device-plugins"))  # fmt: skip
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.outcome == "pass"
    assert "already has this app's releases hyperpod-cdk-core" in check.detail


@pytest.mark.parametrize("on", [True, False])
def test_the_gpu_operators_device_plugin_conflicts_only_when_ours_is_on(
    aws: StubbedAws, on: bool
) -> None:
    api = FakeApi()
    api.add("/apis/apps/v1/daemonsets", workload(
        "nvidia-device-plugin-daemonset", "gpu-operator",
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.0-ubi9", release="gpu-operator"))  # fmt: skip
    check = run(adopted(nvidia_device_plugin=on), api, aws)["shared cluster objects"]
    assert check.failed is on
    if on:
        assert "DaemonSet gpu-operator/nvidia-device-plugin-daemonset" in check.detail
        assert check.fix.startswith("set eks.dependencies.nvidia_device_plugin: false")


def test_an_existing_mpi_operator_and_its_crd_conflict(aws: StubbedAws) -> None:
    api = FakeApi()
    api.add("/apis/apps/v1/deployments", workload(
        "mpi-operator", "mpi-operator", "docker.io/mpioperator/mpi-operator:0.6.0"))  # fmt: skip
    api.crds["mpijobs.kubeflow.org"] = {"metadata": {"name": "mpijobs.kubeflow.org"}}
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.failed
    assert (
        "mpi_operator: CRD mpijobs.kubeflow.org, Deployment mpi-operator/mpi-operator"
        in check.detail
    )
    assert "eks.dependencies.mpi_operator: false" in check.fix
    assert (
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org" in api.paths
    )


SCIENTIST_ROLE = (
    "/apis/rbac.authorization.k8s.io/v1/clusterroles/hyperpod-scientist-user-cluster-role"
)
SCIENTIST_NAMESPACED_ROLE = (
    "/apis/rbac.authorization.k8s.io/v1/namespaces/hyperpod-scientists/roles/"
    "hyperpod-scientist-user-namespace-level-role"
)


def test_scientist_roles_applied_by_someone_else_conflict(aws: StubbedAws) -> None:
    api = FakeApi()
    api.named[SCIENTIST_ROLE] = {"metadata": {"name": "hyperpod-scientist-user-cluster-role"}}
    api.named[SCIENTIST_NAMESPACED_ROLE] = {"metadata": {
        "name": "hyperpod-scientist-user-namespace-level-role", "namespace": "hyperpod-scientists",
        "annotations": {"meta.helm.sh/release-name": "team-rbac"}}}  # fmt: skip
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.failed
    assert (
        "scientist_rbac: ClusterRole hyperpod-scientist-user-cluster-role, "
        "Role hyperpod-scientists/hyperpod-scientist-user-namespace-level-role (Helm release team-rbac)"
        in check.detail
    )
    assert check.fix.startswith("set eks.dependencies.scientist_rbac: false (the owner's")


def test_our_own_scientist_roles_or_the_component_off_do_not_conflict(aws: StubbedAws) -> None:
    api = FakeApi()
    ours = {"annotations": {"meta.helm.sh/release-name": "hyperpod-cdk-scientist-rbac"}}
    api.named[SCIENTIST_ROLE] = {"metadata": ours}
    api.named[SCIENTIST_NAMESPACED_ROLE] = {"metadata": ours}
    assert run(adopted(), api, aws)["shared cluster objects"].outcome == "pass"
    assert SCIENTIST_ROLE in api.paths
    api.named[SCIENTIST_ROLE] = {"metadata": {"name": "hyperpod-scientist-user-cluster-role"}}
    api.paths.clear()
    check = run(adopted(scientist_rbac=False), api, aws)["shared cluster objects"]
    assert check.outcome == "pass", check
    assert SCIENTIST_ROLE not in api.paths


def test_an_efa_plugin_of_someone_else_conflicts(aws: StubbedAws) -> None:
    api = FakeApi()
    api.add("/apis/apps/v1/daemonsets", workload(
        "aws-efa-k8s-device-plugin", "kube-system",
        "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6"))  # fmt: skip
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.failed and "efa_device_plugin: DaemonSet kube-system/aws-efa" in check.detail
    # aws-efa-k8s-device-plugin is not NVIDIA's k8s-device-plugin
    assert "nvidia" not in check.detail
    assert check.fix.startswith("set eks.dependencies.efa_device_plugin: false (the owner's")


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.0-ubi9", "nvidia/k8s-device-plugin"),
        ("nvidia/k8s-device-plugin", "nvidia/k8s-device-plugin"),
        ("localhost:5000/nvidia/k8s-device-plugin:v1", "nvidia/k8s-device-plugin"),
        (
            f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/mirror/nvidia/k8s-device-plugin@sha256:"
            + "0" * 64,
            "mirror/nvidia/k8s-device-plugin",
        ),  # fmt: skip
        ("docker.io/mpioperator/mpi-operator:0.6.0", "mpioperator/mpi-operator"),
    ],
)
def test_image_repository_drops_registry_tag_and_digest(image: str, repository: str) -> None:
    assert shared_cluster.image_repository(image) == repository


def test_someone_elses_copies_of_our_images_conflict_wherever_they_come_from(
    aws: StubbedAws,
) -> None:
    api = FakeApi()
    mirror = f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/mirror"
    api.add("/apis/apps/v1/daemonsets", workload(
        "nvidia-device-plugin", "kube-system",
        f"{mirror}/nvidia/k8s-device-plugin@sha256:{'0' * 64}"))  # fmt: skip
    api.add("/apis/apps/v1/daemonsets", workload(
        "neuron-device-plugin", "kube-system",
        "public.ecr.aws/neuron/neuron-device-plugin:2.22.4.0"))  # fmt: skip
    api.add("/apis/apps/v1/daemonsets", workload(
        "health-monitoring-agent", "aws-hyperpod",
        "905418368575.dkr.ecr.us-west-2.amazonaws.com/hyperpod-health-monitoring-agent:1.0.1"))  # fmt: skip
    api.add("/apis/apps/v1/deployments", workload(
        "training-operator", "kubeflow", "kubeflow/training-operator:v1-855e096",
        release="kubeflow-training"))  # fmt: skip
    api.crds["pytorchjobs.kubeflow.org"] = {"metadata": {
        "name": "pytorchjobs.kubeflow.org",
        "annotations": {"meta.helm.sh/release-name": "kubeflow-training"}}}  # fmt: skip
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.failed
    assert "nvidia_device_plugin: DaemonSet kube-system/nvidia-device-plugin" in check.detail
    assert "neuron_device_plugin: DaemonSet kube-system/neuron-device-plugin" in check.detail
    assert "health_monitoring_agent: DaemonSet aws-hyperpod/health-monitoring-agent" in check.detail
    assert (
        "training_operator: CRD pytorchjobs.kubeflow.org (Helm release kubeflow-training), "
        "Deployment kubeflow/training-operator (kubeflow/training-operator:v1-855e096)"
        in check.detail
    )
    for key in ("nvidia_device_plugin", "neuron_device_plugin", "health_monitoring_agent",
                "training_operator"):  # fmt: skip
        assert f"eks.dependencies.{key}: false" in check.fix
    assert "mpi_operator" not in check.fix
    assert "helm uninstall" not in check.fix  # AWS's release is not there


def test_look_alikes_and_our_own_crds_do_not_conflict(aws: StubbedAws) -> None:
    api = FakeApi()
    # AMD's GPU plugin and a DaemonSet that only uses NVIDIA's image in an init container
    api.add("/apis/apps/v1/daemonsets", workload(
        "amdgpu-device-plugin-daemonset", "kube-system", "rocm/k8s-device-plugin:1.31.0.7"))  # fmt: skip
    api.add("/apis/apps/v1/daemonsets", {
        "metadata": {"name": "gpu-check", "namespace": "ops"},
        "spec": {"template": {"spec": {
            "initContainers": [{"name": "i", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}],
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}}})  # fmt: skip
    for crd in ("mpijobs.kubeflow.org", "pytorchjobs.kubeflow.org"):
        api.crds[crd] = {"metadata": {"name": crd, "annotations": {
            "meta.helm.sh/release-name": "hyperpod-cdk-training-operator"}}}  # fmt: skip
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.outcome == "pass", check
    assert check.detail == "nothing of the HyperPod dependencies is installed on shared-platform"


def test_only_the_releases_that_matter_are_read_and_uninstalled_ones_do_not_count(
    aws: StubbedAws,
) -> None:
    api = FakeApi()
    kept = helm_release(chart.AWS_RELEASE, "kube-system")
    kept["metadata"]["labels"]["status"] = "uninstalled"  # helm uninstall --keep-history
    api.add("/api/v1/secrets", kept)
    api.add("/api/v1/secrets", helm_release("prometheus", "monitoring"))
    api.add("/api/v1/secrets", helm_release("hyperpod-cdk-device-plugins", "kube-system"))
    api.add("/api/v1/secrets", helm_release("hyperpod-cdk-core", "aws-hyperpod"))
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.outcome == "pass"
    assert check.detail == (
        "shared-platform already has this app's releases hyperpod-cdk-core, "
        "hyperpod-cdk-device-plugins (a deploy updates them)"
    )
    # a label selector names the releases: no other release's Secret (its payload) is read
    selector = urllib.parse.parse_qs(api.paths[0].partition("?")[2])["labelSelector"][0]
    assert api.paths[0].startswith("/api/v1/secrets?labelSelector=")
    assert selector.startswith("owner=helm,name in (")
    assert "hyperpod-dependencies" in selector and "hyperpod-cdk-core" in selector


def test_a_config_that_installs_no_component_reads_no_object(aws: StubbedAws) -> None:
    config = environment("eks-existing-cluster", {
        "eks.dependencies": dict.fromkeys(ALL_ON, False), "cluster.node_recovery": "None",
        "cluster.instance_groups[0].deep_health_checks": DELETE})  # fmt: skip
    aws.stub("eks").add_response("list_addons", {"addons": []}, {"clusterName": NAME})

    def connect(*_: Any) -> Kubernetes:
        raise AssertionError("no Kubernetes call expected")

    checks = by_name(
        shared_cluster.check_shared_cluster(config, aws("eks"), aws("sts"), connect=connect)
    )
    assert checks["shared cluster add-ons"].outcome == "pass"
    check = checks["shared cluster objects"]
    assert check.outcome == "skip" and "every eks.dependencies component is off" in check.detail


def test_a_cluster_without_an_endpoint_or_gone_is_skipped(aws: StubbedAws) -> None:
    eks = aws.stub("eks")
    eks.add_response("list_addons", {"addons": []}, {"clusterName": NAME})
    eks.add_response("describe_cluster", {"cluster": {"name": NAME, "status": "CREATING"}},
                     {"name": NAME})  # fmt: skip
    eks.add_response("list_addons", {"addons": []}, {"clusterName": NAME})
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", "No cluster found",
                         404, expected_params={"name": NAME})  # fmt: skip
    for detail in ("shared-platform has no API endpoint yet (CREATING)",
                   "shared-platform does not exist"):  # fmt: skip
        checks = by_name(
            shared_cluster.check_shared_cluster(
                adopted(), aws("eks"), aws("sts"), connect=lambda *_: Kubernetes(FakeApi())
            )
        )
        assert checks["shared cluster objects"].outcome == "skip"
        assert checks["shared cluster objects"].detail == detail


def test_existing_addons_the_app_would_create_fail_with_their_key(aws: StubbedAws) -> None:
    config = environment(
        "eks-existing-cluster",
        {"eks.dependencies": ALL_ON, "eks.addons": {"training_operator": True}},
    )
    check = run(config, FakeApi(), aws, addons=["cert-manager", "vpc-cni"])[
        "shared cluster add-ons"
    ]
    assert check.failed
    assert "already has cert-manager" in check.detail
    assert check.fix.startswith("set eks.addons.training_operator: false")


def test_existing_addons_across_pages_each_name_their_key(aws: StubbedAws) -> None:
    config = environment(
        "eks-existing-cluster",
        {
            "eks.dependencies": ALL_ON,
            "eks.addons": {"task_governance": True, "observability": True,
                           "fsx_csi_driver": True},
            "storage.fsx.enabled": True,
        },
    )  # fmt: skip
    eks = aws.stub("eks")
    eks.add_response("list_addons", {"addons": ["vpc-cni", "amazon-sagemaker-hyperpod-taskgovernance"],
                                     "nextToken": "t1"}, {"clusterName": NAME})  # fmt: skip
    eks.add_response("list_addons", {"addons": ["aws-fsx-csi-driver"]},
                     {"clusterName": NAME, "nextToken": "t1"})  # fmt: skip
    endpoint_only(aws, NAME, "https://example.eks.amazonaws.com")
    checks = by_name(shared_cluster.check_shared_cluster(
        config, aws("eks"), aws("sts"), connect=lambda *_: Kubernetes(FakeApi())))  # fmt: skip
    check = checks["shared cluster add-ons"]
    assert check.failed
    assert check.detail == (
        "shared-platform already has amazon-sagemaker-hyperpod-taskgovernance, "
        "aws-fsx-csi-driver, which the app would create (the create fails)"
    )
    assert check.fix == (
        "set eks.addons.fsx_csi_driver: false and eks.addons.task_governance: false "
        "(the cluster's add-on stays as it is)"
    )
    assert checks["shared cluster objects"].outcome == "pass"


def test_existing_addons_the_app_does_not_create_pass_listed(aws: StubbedAws) -> None:
    checks = run(adopted(), FakeApi(), aws, addons=["vpc-cni", "coredns"])
    assert checks["shared cluster add-ons"].detail == (
        "none of the app's add-ons is on shared-platform; it already has coredns, vpc-cni"
    )


def test_a_denied_list_addons_fails_the_step_naming_the_api(aws: StubbedAws) -> None:
    from hyperpod_ops.preflight import run_preflight

    config = adopted()
    healthy_account(aws, config, leave_out={"shared_cluster"})
    aws.error("eks", "list_addons", "AccessDeniedException", {"clusterName": NAME},
              message="not authorized to perform: eks:ListAddons")  # fmt: skip
    checks = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))
    check = checks["shared cluster"]
    assert check.failed
    assert check.detail.startswith("eks:ListAddons returned AccessDeniedException")
    assert checks["health agent image"].outcome == "pass"  # the next step still runs


def test_an_unreachable_endpoint_is_skipped_with_the_route(aws: StubbedAws) -> None:
    checks = run(adopted(), FakeApi(down=True), aws)
    check = checks["shared cluster objects"]
    assert check.outcome == "skip"
    assert "cannot reach the API endpoint of shared-platform" in check.detail
    assert "from inside the VPC" in check.detail
    assert checks["shared cluster add-ons"].outcome == "pass"  # the AWS side still runs


def test_a_caller_without_access_is_skipped_naming_it(aws: StubbedAws) -> None:
    check = run(adopted(), FakeApi(denied=True), aws)["shared cluster objects"]
    assert check.outcome == "skip"
    assert "arn:aws:sts::111122223333:assumed-role/Dev/bob may not read" in check.detail
    assert "access entry" in check.detail


def test_a_created_cluster_is_skipped(aws: StubbedAws) -> None:
    (check,) = shared_cluster.check_shared_cluster(
        environment("eks-minimal"), aws("eks"), aws("sts")
    )
    assert check.outcome == "skip" and "the app creates the EKS cluster" in check.detail


def test_the_token_is_a_presigned_get_caller_identity_naming_the_cluster(aws: StubbedAws) -> None:
    token = eks_token(aws("sts"), NAME)
    assert token.startswith(TOKEN_PREFIX)
    encoded = token.removeprefix(TOKEN_PREFIX)
    assert "=" not in encoded
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    assert url.startswith("https://sts.us-west-2.amazonaws.com/")
    assert query["Action"] == ["GetCallerIdentity"]
    assert CLUSTER_ID_HEADER in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Expires"] == ["60"]
    assert query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    # signed with the caller's credentials for STS in the config's region
    assert query["X-Amz-Credential"][0].startswith("testing/")
    assert query["X-Amz-Credential"][0].endswith("/us-west-2/sts/aws4_request")


# -- the health agent image ------------------------------------------------------------------


def test_the_agent_image_exists(aws: StubbedAws) -> None:
    config = environment("eks-minimal")
    agent_image(aws, config)
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.outcome == "pass"
    assert check.detail.startswith("905418368575.dkr.ecr.us-west-2.amazonaws.com/hyperpod-health")


def test_a_missing_tag_fails_with_the_fix(aws: StubbedAws) -> None:
    config = environment(
        "eks-minimal", {"eks.chart_values.image_tags.health_monitoring_agent": "9.9.9"}
    )
    agent_image(aws, config, found=False, tag="9.9.9")
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.failed
    assert (
        ":9.9.9 (tag from eks.chart_values.image_tags.health_monitoring_agent) cannot be pulled (ImageNotFound)"
        in check.detail
    )
    assert "eks.chart_values.image_tags.health_monitoring_agent" in check.fix


def test_access_denied_cannot_tell(aws: StubbedAws) -> None:
    config = environment("eks-minimal")
    aws.stub("ecr").add_client_error("batch_get_image", "AccessDeniedException", "no")
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.outcome == "skip" and "AccessDeniedException" in check.detail


def test_an_ecr_mirror_is_checked_there(aws: StubbedAws) -> None:
    config = environment(
        "eks-minimal", {"eks.image_registry": "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror"}
    )
    agent_image(aws, config)
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.outcome == "pass"
    assert "/mirror/hyperpod-health-monitoring-agent:" in check.detail


def test_a_non_ecr_registry_and_slurm_are_skipped(aws: StubbedAws) -> None:
    config = environment("eks-minimal", {"eks.image_registry": "registry.example.com/mirror"})
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.outcome == "skip"
    assert check.detail.startswith("cannot check a non-ECR registry from here (registry.example")
    (check,) = shared_cluster.check_agent_image(environment("minimal"), aws("ecr"))
    assert check.outcome == "skip"


def test_the_agent_image_call_is_the_pull_of_the_regional_repository(aws: StubbedAws) -> None:
    config = environment("eks-minimal")
    (image,) = chart.component_images("health_monitoring_agent", "us-west-2")
    tag = image.rsplit(":", 1)[1]
    aws.stub("ecr").add_response(
        "batch_get_image",
        {"images": [{"imageId": {"imageTag": tag}}], "failures": []},
        {
            "registryId": "905418368575",
            "repositoryName": "hyperpod-health-monitoring-agent",
            "imageIds": [{"imageTag": tag}],
            "acceptedMediaTypes": [
                "application/vnd.docker.distribution.manifest.v2+json",
                "application/vnd.docker.distribution.manifest.list.v2+json",
                "application/vnd.oci.image.manifest.v1+json",
                "application/vnd.oci.image.index.v1+json",
            ],
        },
    )
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.outcome == "pass" and check.detail == f"{image} exists"


def test_a_mirror_without_the_repository_fails_with_the_copy_to_make(aws: StubbedAws) -> None:
    mirror = f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/mirror"
    config = environment("eks-minimal", {"eks.image_registry": mirror})
    aws.stub("ecr").add_client_error(
        "batch_get_image", "RepositoryNotFoundException", "The repository does not exist",
        expected_params={"registryId": ACCOUNT,
                         "repositoryName": "mirror/hyperpod-health-monitoring-agent",
                         "imageIds": ANY, "acceptedMediaTypes": ANY})  # fmt: skip
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.failed
    assert check.detail.endswith("cannot be pulled (RepositoryNotFound)")
    assert check.fix.startswith(f"copy the image into {mirror} (python -m hyperpod_ops.chart "
                                "--mirror-list us-west-2 lists what to copy)")  # fmt: skip


def test_a_failure_that_does_not_say_missing_cannot_tell(aws: StubbedAws) -> None:
    config = environment("eks-minimal")
    aws.stub("ecr").add_response("batch_get_image", {"images": [], "failures": [
        {"imageId": {"imageTag": "x"}, "failureCode": "UpstreamUnavailable",
         "failureReason": "upstream registry unavailable"}]})  # fmt: skip
    (check,) = shared_cluster.check_agent_image(config, aws("ecr"))
    assert check.outcome == "skip"
    assert check.detail.endswith("(UpstreamUnavailable: upstream registry unavailable)")


def test_an_agent_switched_off_or_a_mirror_in_another_region_is_skipped(aws: StubbedAws) -> None:
    off = environment("eks-minimal", {"eks.dependencies.health_monitoring_agent": False,
                                      "cluster.node_recovery": "None"})  # fmt: skip
    (check,) = shared_cluster.check_agent_image(off, aws("ecr"))
    assert check.outcome == "skip" and "health_monitoring_agent is off" in check.detail
    other = environment(
        "eks-minimal", {"eks.image_registry": f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/m"}
    )
    (check,) = shared_cluster.check_agent_image(other, aws("ecr"))
    assert check.outcome == "skip" and "another region's registry" in check.detail

"""Preflight on an adopted (shared) EKS cluster: what it already runs, and the health agent image.

The Kubernetes side answers through a fake API server that behaves like the real one on what the
checks read: list bodies (``{"kind": "...List", "items": [...]}``), 404 for an object that does
not exist, 403 for a caller without access, and an endpoint that does not answer.
"""

from __future__ import annotations

import base64
import urllib.parse
from typing import Any

import pytest
from ops_testkit import (
    ACCOUNT,
    StubbedAws,
    agent_image,
    by_name,
    endpoint_only,
    environment,
)

from hyperpod_cdk.eks import chart
from hyperpod_cdk.ops import shared_cluster
from hyperpod_cdk.ops.k8s import (
    CLUSTER_ID_HEADER,
    TOKEN_PREFIX,
    Kubernetes,
    KubernetesUnreachable,
    Response,
    eks_token,
)

NAME = "shared-platform"
ALL_ON = dict.fromkeys(("health_monitoring_agent", "deep_health_check", "job_auto_restart", "patching", "training_operator", "mpi_operator", "nvidia_device_plugin", "neuron_device_plugin", "efa_device_plugin"), True)  # fmt: skip


def adopted(**dependencies: bool) -> Any:
    return environment("eks-existing-cluster", {"eks.dependencies": {**ALL_ON, **dependencies}})


class FakeApi:
    """A Kubernetes API server holding a few objects (GET only)."""

    def __init__(self, *, denied: bool = False, down: bool = False) -> None:
        self.denied, self.down = denied, down
        self.objects: dict[str, list[dict[str, Any]]] = {}
        self.crds: dict[str, dict[str, Any]] = {}
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
        base, _, query = path.partition("?")
        items = self.objects.get(base, [])
        selector = urllib.parse.parse_qs(query).get("labelSelector", [""])[0]
        if selector:
            key, _, value = selector.partition("=")
            items = [i for i in items if i["metadata"].get("labels", {}).get(key) == value]
        return Response(200, {"kind": "List", "items": items})


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
    assert "Helm release hyperpod-dependencies (AWS's dependencies chart)" in check.detail
    assert "eks.dependencies.health_monitoring_agent: false" in check.fix
    assert "eks.dependencies.mpi_operator" not in check.fix  # already off


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


def test_an_efa_plugin_of_someone_else_conflicts(aws: StubbedAws) -> None:
    api = FakeApi()
    api.add("/apis/apps/v1/daemonsets", workload(
        "aws-efa-k8s-device-plugin", "kube-system",
        "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6"))  # fmt: skip
    check = run(adopted(), api, aws)["shared cluster objects"]
    assert check.failed and "efa_device_plugin" in check.detail


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
    assert ":9.9.9 cannot be pulled (ImageNotFound)" in check.detail
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
    assert check.outcome == "skip" and "not an Amazon ECR registry" in check.detail
    (check,) = shared_cluster.check_agent_image(environment("minimal"), aws("ecr"))
    assert check.outcome == "skip"

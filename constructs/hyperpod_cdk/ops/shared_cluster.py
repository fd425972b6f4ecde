"""Preflight checks of an adopted (shared) EKS cluster: what of HyperPod's dependencies and
add-ons it already runs, so nothing is installed twice and nothing the owner manages is
overwritten; and whether the health agent image the chart will pull exists.

Each conflict fails with the config change that avoids it (``eks.dependencies.<key>: false``,
``eks.addons.<key>: false``). Pure Python plus boto3 clients; the Kubernetes API is read
through :mod:`hyperpod_cdk.ops.k8s`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.eks import chart
from hyperpod_cdk.ops.addons import app_addons
from hyperpod_cdk.ops.adopted import eks_cluster_name
from hyperpod_cdk.ops.aws import error_code, paginate
from hyperpod_cdk.ops.check import Check, failed, passed, skipped
from hyperpod_cdk.ops.k8s import (
    Kubernetes,
    KubernetesDenied,
    KubernetesUnreachable,
    eks_token,
    https_transport,
)

# the config key that installs each EKS add-on
ADDON_KEYS = {
    "cert-manager": "eks.addons.training_operator",
    "amazon-sagemaker-hyperpod-training-operator": "eks.addons.training_operator",
    "amazon-sagemaker-hyperpod-taskgovernance": "eks.addons.task_governance",
    "amazon-sagemaker-hyperpod-observability": "eks.addons.observability",
    "aws-fsx-csi-driver": "eks.addons.fsx_csi_driver",
}

# A workload of someone else that does the job of a component: (kind, image path fragment)
WORKLOAD_IMAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "nvidia_device_plugin": (("DaemonSet", "k8s-device-plugin"),),
    "efa_device_plugin": (("DaemonSet", "aws-efa-k8s-device-plugin"),),
    "neuron_device_plugin": (("DaemonSet", "neuron-device-plugin"),),
    "health_monitoring_agent": (("DaemonSet", "hyperpod-health-monitoring-agent"),),
    "mpi_operator": (("Deployment", "mpioperator/mpi-operator"),),
    "training_operator": (("Deployment", "kubeflow/training-operator"),),
}
# CRDs of someone else's operator: a second controller would act on the same objects
COMPONENT_CRDS = {
    "mpi_operator": "mpijobs.kubeflow.org",
    "training_operator": "pytorchjobs.kubeflow.org",
}
_PATHS = {
    "DaemonSet": "/apis/apps/v1/daemonsets",
    "Deployment": "/apis/apps/v1/deployments",
}
_OURS = {release.name for release in chart.RELEASES}

MakeKubernetes = Callable[[str, str, str], Kubernetes]  # (endpoint, CA data, token)


def _connect(endpoint: str, ca_data: str, token: str) -> Kubernetes:
    return Kubernetes(https_transport(endpoint, ca_data, token))


def check_shared_cluster(
    config: EnvironmentConfig,
    eks: Any,
    sts: Any,
    connect: MakeKubernetes = _connect,
) -> list[Check]:
    """On an adopted cluster: existing add-ons the app would create, and Kubernetes objects
    that already do what an ``eks.dependencies`` component switched on would install."""
    if config.is_slurm:
        return [skipped("shared cluster", "slurm orchestrator: no EKS cluster")]
    settings = config.eks_settings
    if settings.cluster_arn is None:
        return [skipped("shared cluster", "the app creates the EKS cluster: nothing is there yet")]
    name = eks_cluster_name(config)
    checks = [_check_addons(config, eks, name)]
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except Exception as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return [*checks, skipped("shared cluster objects", f"{name} does not exist")]
        raise
    endpoint = str(cluster.get("endpoint", ""))
    ca_data = str(cluster.get("certificateAuthority", {}).get("data", ""))
    try:
        api = connect(endpoint, ca_data, eks_token(sts, name))
        checks.append(_check_objects(config, api, name))
    except KubernetesUnreachable as exc:
        checks.append(
            skipped(
                "shared cluster objects",
                f"cannot reach the API endpoint of {name} from here ({exc}); the endpoint may be "
                "private: run make preflight from inside the VPC (or through a host that reaches "
                "it) to list what the cluster already runs",
            )
        )
    except KubernetesDenied as exc:
        caller = sts.get_caller_identity().get("Arn", "the caller")
        checks.append(
            skipped(
                "shared cluster objects",
                f"{caller} may not read {name}'s objects ({exc}); it needs an access entry with "
                "read access (e.g. AmazonEKSAdminViewPolicy) to list what the cluster runs",
            )
        )
    return checks


def _check_addons(config: EnvironmentConfig, eks: Any, name: str) -> Check:
    existing = set(paginate(eks, "list_addons", "addons", clusterName=name))
    wanted = app_addons(config)
    both = [a for a in wanted if a in existing]
    if not both:
        found = f"; it already has {', '.join(sorted(existing))}" if existing else ""
        return passed("shared cluster add-ons", f"none of the app's add-ons is on {name}{found}")
    keys = sorted({ADDON_KEYS[a] for a in both})
    return failed(
        "shared cluster add-ons",
        f"{name} already has {', '.join(both)}, which the app would create (the create fails)",
        f"set {' and '.join(f'{k}: false' for k in keys)} (the cluster's add-on stays as it is)",
    )


def _release_of(obj: dict[str, Any]) -> str | None:
    annotations = obj.get("metadata", {}).get("annotations") or {}
    release = annotations.get("meta.helm.sh/release-name")
    return str(release) if release else None


def _images(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
    return [str(c.get("image", "")) for c in containers]


def _check_objects(config: EnvironmentConfig, api: Kubernetes, name: str) -> Check:
    enabled = set(config.eks_settings.dependencies.enabled())
    conflicts: dict[str, list[str]] = {}

    def conflict(component: str, what: str) -> None:
        conflicts.setdefault(component, []).append(what)

    releases = {
        str(s.get("metadata", {}).get("labels", {}).get("name", ""))
        for s in api.items("/api/v1/secrets?labelSelector=owner%3Dhelm")
    }
    if chart.AWS_RELEASE in releases:
        for component in sorted(enabled):
            conflict(component, f"Helm release {chart.AWS_RELEASE} (AWS's dependencies chart)")
    for kind, path in _PATHS.items():
        for obj in api.items(path):
            if _release_of(obj) in _OURS:
                continue
            meta = obj.get("metadata", {})
            where = f"{kind} {meta.get('namespace')}/{meta.get('name')}"
            for component, signatures in WORKLOAD_IMAGES.items():
                if component not in enabled:
                    continue
                for sig_kind, fragment in signatures:
                    image = next((i for i in _images(obj) if fragment in i), None)
                    if sig_kind == kind and image:
                        conflict(component, f"{where} ({image})")
    for component, crd in COMPONENT_CRDS.items():
        if component not in enabled:
            continue
        found = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
        if found is not None and _release_of(found) not in _OURS:
            conflict(component, f"CRD {crd}")
    if not conflicts:
        ours = sorted(releases & _OURS)
        detail = (
            f"{name} already has this app's releases {', '.join(ours)} (a deploy updates them)"
            if ours
            else f"nothing of the HyperPod dependencies is installed on {name}"
        )
        return passed("shared cluster objects", detail)
    detail = "; ".join(f"{c}: {', '.join(sorted(set(w)))}" for c, w in sorted(conflicts.items()))
    keys = ", ".join(f"eks.dependencies.{c}: false" for c in sorted(conflicts))
    return failed(
        "shared cluster objects",
        f"{name} already runs what the app would install: {detail}",
        f"set {keys} (the owner's copies stay), or remove them from the cluster",
    )


def check_agent_image(config: EnvironmentConfig, ecr: Any) -> list[Check]:
    """The health monitoring agent image the chart will pull exists (ECR BatchGetImage, the call
    image pulls make, which AWS's public-pull repository policies allow from any account)."""
    name = "health agent image"
    if config.is_slurm:
        return [skipped(name, "slurm orchestrator: the agent runs on EKS only")]
    settings = config.eks_settings
    if not settings.dependencies.health_monitoring_agent:
        return [skipped(name, "eks.dependencies.health_monitoring_agent is off")]
    registry = settings.image_registry
    tag = settings.chart_values.image_tags.get("health_monitoring_agent")
    try:
        (image,) = chart.component_images("health_monitoring_agent", config.region, registry)
    except KeyError:
        return [skipped(name, f"AWS publishes no agent image in {config.region}")]
    if tag:
        image = f"{image.rsplit(':', 1)[0]}:{tag}"
    host, _, rest = image.partition("/")
    repository, _, tag = rest.rpartition(":")
    if ".dkr.ecr." not in host or not host.endswith(".amazonaws.com"):
        return [skipped(name, f"cannot check {image} from here: not an Amazon ECR registry")]
    account, image_region = host.split(".")[0], host.split(".")[3]
    if image_region != config.region:
        return [skipped(name, f"{image} is in another region's registry")]
    try:
        answer = ecr.batch_get_image(
            registryId=account,
            repositoryName=repository,
            imageIds=[{"imageTag": tag}],
            acceptedMediaTypes=[
                "application/vnd.docker.distribution.manifest.v2+json",
                "application/vnd.docker.distribution.manifest.list.v2+json",
                "application/vnd.oci.image.manifest.v1+json",
                "application/vnd.oci.image.index.v1+json",
            ],
        )
    except Exception as exc:
        code = error_code(exc)
        if code in ("AccessDeniedException", "AccessDenied"):
            return [skipped(name, f"cannot tell whether {image} exists: {code}")]
        if code == "RepositoryNotFoundException":
            answer = {"images": [], "failures": [{"failureCode": "RepositoryNotFound"}]}
        else:
            raise
    if answer.get("images"):
        return [passed(name, f"{image} exists")]
    codes = ", ".join(str(f.get("failureCode")) for f in answer.get("failures", [])) or "none"
    return [
        failed(
            name,
            f"{image} cannot be pulled ({codes})",
            "set eks.chart_values.image_tags.health_monitoring_agent to a published tag (or copy "
            "the image into eks.image_registry), or switch eks.dependencies.health_monitoring_agent off",
        )
    ]

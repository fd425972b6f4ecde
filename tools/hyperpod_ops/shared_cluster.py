"""Preflight checks of an adopted (shared) EKS cluster: what of HyperPod's dependencies and
add-ons it already runs, so nothing is installed twice and nothing the owner manages is
overwritten; and whether the health agent image the chart will pull exists.

Each conflict fails with the config change that avoids it (``eks.dependencies.<key>: false``,
``eks.addons.<key>: false``). Pure Python plus boto3 clients; the Kubernetes API is read
through :mod:`hyperpod_ops.k8s`.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.facts import chart
from hyperpod_ops.addons import app_addons
from hyperpod_ops.adopted import eks_cluster_name
from hyperpod_ops.aws import describe_error, error_code, paginate
from hyperpod_ops.check import Check, failed, passed, skipped
from hyperpod_ops.k8s import (
    Kubernetes,
    KubernetesDenied,
    KubernetesUnreachable,
    MakeKubernetes,
    connect_https,
    eks_token,
)

# the config key that installs each EKS add-on
ADDON_KEYS = {
    "cert-manager": "eks.addons.training_operator",
    "amazon-sagemaker-hyperpod-training-operator": "eks.addons.training_operator",
    "amazon-sagemaker-hyperpod-taskgovernance": "eks.addons.task_governance",
    "amazon-sagemaker-hyperpod-observability": "eks.addons.observability",
    "aws-fsx-csi-driver": "eks.addons.fsx_csi_driver",
}

# A workload of someone else that does the job of a component: (kind, image repository suffix).
# The suffix is matched on whole path segments of the image's repository (registry, tag and
# digest left out), so a mirror's copy matches, and aws-efa-k8s-device-plugin or AMD's
# rocm/k8s-device-plugin is not NVIDIA's plugin. NVIDIA's GPU operator runs its device plugin
# from nvcr.io/nvidia/k8s-device-plugin too.
WORKLOAD_IMAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "nvidia_device_plugin": (("DaemonSet", "nvidia/k8s-device-plugin"),),
    "efa_device_plugin": (("DaemonSet", "aws-efa-k8s-device-plugin"),),
    "neuron_device_plugin": (("DaemonSet", "neuron-device-plugin"),),
    "health_monitoring_agent": (("DaemonSet", "hyperpod-health-monitoring-agent"),),
    "mpi_operator": (("Deployment", "mpioperator/mpi-operator"),),
    "training_operator": (("Deployment", "kubeflow/training-operator"),),
}
# Named objects of a component made by someone else: (what, API path). A CRD means a second
# controller would act on the same objects; a role of the same name means Helm refuses to
# install ours (it does not adopt an object another release or kubectl made).
_RBAC = "/apis/rbac.authorization.k8s.io/v1"
COMPONENT_OBJECTS: dict[str, tuple[tuple[str, str], ...]] = {
    "mpi_operator": (
        ("CRD mpijobs.kubeflow.org",
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org"),
    ),
    "training_operator": (
        ("CRD pytorchjobs.kubeflow.org",
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pytorchjobs.kubeflow.org"),
    ),
    "scientist_rbac": (
        ("ClusterRole hyperpod-scientist-user-cluster-role",
         f"{_RBAC}/clusterroles/hyperpod-scientist-user-cluster-role"),
        # the namespaced role is in its own namespace, made by the release (issue 34, H2)
        (f"Namespace {chart.SCIENTIST_NAMESPACE}",
         f"/api/v1/namespaces/{chart.SCIENTIST_NAMESPACE}"),
        (f"Role {chart.SCIENTIST_NAMESPACE}/hyperpod-scientist-user-namespace-level-role",
         f"{_RBAC}/namespaces/{chart.SCIENTIST_NAMESPACE}/roles/"
         "hyperpod-scientist-user-namespace-level-role"),
        ("ValidatingAdmissionPolicy hyperpod-cdk-workload-pods",
         "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/"
         "hyperpod-cdk-workload-pods"),
    ),
}  # fmt: skip
_PATHS = {
    "DaemonSet": "/apis/apps/v1/daemonsets",
    "Deployment": "/apis/apps/v1/deployments",
}
_OURS = {release.name for release in chart.RELEASES}
# Helm 3/4 keep each revision of a release in a Secret labelled owner=helm, name=<release>,
# status=<deployed|superseded|failed|pending-*|uninstalled>; uninstalled revisions stay only
# after `helm uninstall --keep-history`.
HELM_RELEASES_PATH = "/api/v1/secrets?labelSelector=" + urllib.parse.quote(
    f"owner=helm,name in ({','.join(sorted({chart.AWS_RELEASE, *_OURS}))})", safe=""
)
_GONE = "uninstalled"

OBJECTS = "shared cluster objects"


def check_shared_cluster(
    config: EnvironmentConfig,
    eks: Any,
    sts: Any,
    connect: MakeKubernetes = connect_https,
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
    if not settings.dependencies.enabled():
        return [
            *checks,
            skipped(OBJECTS, "every eks.dependencies component is off: the app installs none"),
        ]
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except Exception as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return [*checks, skipped(OBJECTS, f"{name} does not exist")]
        raise
    endpoint = str(cluster.get("endpoint") or "")
    ca_data = str((cluster.get("certificateAuthority") or {}).get("data") or "")
    if not endpoint or not ca_data:
        status = cluster.get("status", "not ACTIVE")
        return [*checks, skipped(OBJECTS, f"{name} has no API endpoint yet ({status})")]
    try:
        api = connect(endpoint, ca_data, eks_token(sts, name))
        checks.append(_check_objects(config, api, name))
    except KubernetesUnreachable as exc:
        checks.append(
            skipped(
                OBJECTS,
                f"cannot reach the API endpoint of {name} from here ({exc}); the endpoint may be "
                "private: run make preflight from inside the VPC (or through a host that reaches "
                "it) to list what the cluster already runs",
            )
        )
    except KubernetesDenied as exc:
        caller = sts.get_caller_identity().get("Arn", "the caller")
        checks.append(
            skipped(
                OBJECTS,
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


def image_repository(image: str) -> str:
    """``nvcr.io/nvidia/k8s-device-plugin:v0.17.0@sha256:...`` -> ``nvidia/k8s-device-plugin``
    (no registry host, tag or digest)."""
    name = image.split("@", 1)[0]
    if name.rfind(":") > name.rfind("/"):
        name = name.rsplit(":", 1)[0]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return rest
    return name


def _runs(obj: dict[str, Any], suffix: str) -> str | None:
    """The image of a container of ``obj`` whose repository ends with ``suffix``."""
    containers = obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
    for container in containers:
        image = str(container.get("image", ""))
        repository = image_repository(image)
        if repository == suffix or repository.endswith("/" + suffix):
            return image
    return None


def _helm_releases(api: Kubernetes) -> dict[str, set[str]]:
    """``{release: {namespace, ...}}`` of the installed releases named like AWS's or ours."""
    found: dict[str, set[str]] = {}
    for secret in api.items(HELM_RELEASES_PATH):
        meta = secret.get("metadata", {})
        labels = meta.get("labels") or {}
        if labels.get("owner") != "helm" or labels.get("status") == _GONE:
            continue
        found.setdefault(str(labels.get("name", "")), set()).add(str(meta.get("namespace")))
    return found


def _check_objects(config: EnvironmentConfig, api: Kubernetes, name: str) -> Check:
    enabled = set(config.eks_settings.dependencies.enabled())
    conflicts: dict[str, list[str]] = {}

    def conflict(component: str, what: str) -> None:
        conflicts.setdefault(component, []).append(what)

    releases = _helm_releases(api)
    aws_namespaces = sorted(releases.get(chart.AWS_RELEASE, ()))
    for kind, path in _PATHS.items():
        for obj in api.items(path):
            if _release_of(obj) in _OURS:
                continue
            meta = obj.get("metadata", {})
            where = f"{kind} {meta.get('namespace')}/{meta.get('name')}"
            for component, signatures in WORKLOAD_IMAGES.items():
                if component not in enabled:
                    continue
                for sig_kind, suffix in signatures:
                    image = _runs(obj, suffix) if sig_kind == kind else None
                    if image:
                        conflict(component, f"{where} ({image})")
    for component, named in COMPONENT_OBJECTS.items():
        if component not in enabled:
            continue
        for what, path in named:
            existing = api.get(path)
            owner = _release_of(existing) if existing is not None else None
            if existing is not None and owner not in _OURS:
                conflict(component, what + (f" (Helm release {owner})" if owner else ""))
    if not conflicts and not aws_namespaces:
        ours = sorted(set(releases) & _OURS)
        detail = (
            f"{name} already has this app's releases {', '.join(ours)} (a deploy updates them)"
            if ours
            else f"nothing of the HyperPod dependencies is installed on {name}"
        )
        return passed(OBJECTS, detail)
    found = [f"{c}: {', '.join(sorted(set(w)))}" for c, w in sorted(conflicts.items())]
    # AWS's release installs every component (its chart is the one ours follows)
    components = set(conflicts) | (enabled if aws_namespaces else set())
    keys = ", ".join(f"eks.dependencies.{c}: false" for c in sorted(components))
    remove = "or remove them from the cluster"
    if aws_namespaces:
        where = ", ".join(f"{ns}/{chart.AWS_RELEASE}" for ns in aws_namespaces)
        found.insert(
            0,
            f"AWS's Helm release {where} (the health agent, RBAC, operators and device plugins)",
        )
        uninstall = " and ".join(
            f"helm uninstall {chart.AWS_RELEASE} --namespace {ns}" for ns in aws_namespaces
        )
        remove = f"or remove them from the cluster (AWS's release: {uninstall})"
    return failed(
        OBJECTS,
        f"{name} already runs what the app would install: {'; '.join(found)}",
        f"set {keys} (the owner's copies stay), {remove}",
    )


# -- the health monitoring agent image -------------------------------------------------------

AGENT_IMAGE = "health agent image"
# <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]: a private Amazon ECR registry
_ECR_HOST = re.compile(
    r"^(?P<account>[0-9]{12})\.dkr\.ecr(-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$"
)
# what a pull accepts: Docker and OCI manifests and manifest lists / indexes
IMAGE_MEDIA_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
)
# BatchGetImage failure codes that say the image is not there (others: cannot tell)
_NOT_THERE = ("ImageNotFound", "RepositoryNotFound", "InvalidImageTag")
_ACCESS_DENIED = ("AccessDeniedException", "AccessDenied")
_TAG_KEY = "eks.chart_values.image_tags.health_monitoring_agent"
_SWITCH = "eks.dependencies.health_monitoring_agent"


def check_agent_image(config: EnvironmentConfig, ecr: Any) -> list[Check]:
    """The health monitoring agent image the chart will pull exists (ECR BatchGetImage, the call
    image pulls make, which AWS's public-pull repository policies allow from any account)."""
    name = AGENT_IMAGE
    if config.is_slurm:
        return [skipped(name, "slurm orchestrator: the agent runs on EKS only")]
    settings = config.eks_settings
    if not settings.dependencies.health_monitoring_agent:
        return [skipped(name, f"{_SWITCH} is off")]
    registry = settings.image_registry
    override = settings.chart_values.image_tags.get("health_monitoring_agent")
    try:
        (image,) = chart.component_images("health_monitoring_agent", config.region, registry)
    except KeyError:
        return [skipped(name, f"AWS publishes no agent image in {config.region}")]
    if override:
        image = f"{image.rsplit(':', 1)[0]}:{override}"
    host, _, rest = image.partition("/")
    repository, _, tag = rest.rpartition(":")
    ecr_host = _ECR_HOST.match(host)
    if ecr_host is None:
        return [skipped(name, f"cannot check a non-ECR registry from here ({image})")]
    if ecr_host["region"] != config.region:
        return [skipped(name, f"cannot check {image} from here: another region's registry")]
    try:
        answer = ecr.batch_get_image(
            registryId=ecr_host["account"],
            repositoryName=repository,
            imageIds=[{"imageTag": tag}],
            acceptedMediaTypes=list(IMAGE_MEDIA_TYPES),
        )
    except Exception as exc:
        code = error_code(exc)
        if code in _ACCESS_DENIED:
            return [
                skipped(name, f"cannot tell whether {image} exists: {describe_error(exc, [ecr])}")
            ]
        if code != "RepositoryNotFoundException":
            raise
        answer = {"images": [], "failures": [{"failureCode": "RepositoryNotFound"}]}
    if answer.get("images"):
        return [passed(name, f"{image} exists")]
    failures = answer.get("failures") or []
    codes = sorted({str(f.get("failureCode")) for f in failures})
    if codes and not set(codes) & set(_NOT_THERE):
        reasons = "; ".join(f"{f.get('failureCode')}: {f.get('failureReason')}" for f in failures)
        return [skipped(name, f"cannot tell whether {image} exists ({reasons})")]
    where = f" (tag from {_TAG_KEY})" if override else ""
    if registry:
        fix = (
            f"copy the image into {registry} (python -m hyperpod_ops.chart --mirror-list "
            f"{config.region} lists what to copy), set {_TAG_KEY} to a tag it has, or switch "
            f"{_SWITCH} off"
        )
    else:
        fix = f"set {_TAG_KEY} to a published tag, or switch {_SWITCH} off"
    return [
        failed(
            name,
            f"{image}{where} cannot be pulled ({', '.join(codes) or 'ImageNotFound'})",
            fix,
        )
    ]

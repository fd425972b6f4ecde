"""The container images of the HyperPod dependencies: registries, repositories and pinned tags.

No image comes from GitHub (ghcr.io) and none is pulled by a moving tag. Two
images live in AWS-owned, region-specific Amazon ECR registries, so nodes pull
them from their own region (over an ECR interface endpoint in a closed network);
the others are on public registries, which a closed network must mirror or
reach through an ECR pull-through cache.
"""

from __future__ import annotations

from collections.abc import Mapping

# -- HyperPod health monitoring agent ----------------------------------------------------------

# Tag released in aws/sagemaker-hyperpod-cli PR #443 (2026-08), the chart's default image tag.
HEALTH_AGENT_TAG = "1.0.2297.0_1.0.474.0"
HEALTH_AGENT_REPOSITORY = "hyperpod-health-monitoring-agent"

# ECR account that publishes the agent, per region: the region-to-account map of the AWS chart
# (charts/health-monitoring-agent/templates/_helpers.tpl; helm_chart/readme.md "Notes"), with the
# four regions PR #360 added (ca-central-1, ap-southeast-3, ap-southeast-4, eu-south-2): the
# 17 regions where HyperPod on EKS is generally available.
HEALTH_AGENT_ACCOUNTS: Mapping[str, str] = {
    "us-east-1": "767398015722",
    "us-east-2": "851725546812",
    "us-west-1": "011528288828",
    "us-west-2": "905418368575",
    "ca-central-1": "843976229209",
    "sa-east-1": "025066253954",
    "eu-central-1": "211125453373",
    "eu-north-1": "654654141839",
    "eu-west-1": "533267293120",
    "eu-west-2": "011528288831",
    "eu-south-2": "626887787726",
    "ap-northeast-1": "533267052152",
    "ap-south-1": "011528288864",
    "ap-southeast-1": "905418428165",
    "ap-southeast-2": "851725636348",
    "ap-southeast-3": "971422672635",
    "ap-southeast-4": "084375568333",
}


def health_agent_image(region: str) -> str:
    """The health monitoring agent image of ``region``; KeyError if it is not published there."""
    account = HEALTH_AGENT_ACCOUNTS[region]
    return f"{account}.dkr.ecr.{region}.amazonaws.com/{HEALTH_AGENT_REPOSITORY}:{HEALTH_AGENT_TAG}"


# -- Amazon EKS image registries (EFA device plugin) -------------------------------------------

# Amazon EKS replicates its images to a registry in every region it supports; most regions use
# account 602401143452, opt-in regions their own. Source: Amazon EKS User Guide, "View Amazon
# container image registries for Amazon EKS add-ons" (add-ons-images.html).
EKS_REGISTRY_DEFAULT_ACCOUNT = "602401143452"
EKS_REGISTRY_ACCOUNTS: Mapping[str, str] = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902",
    "ap-southeast-5": "151610086707",
    "ap-southeast-7": "121268973566",
    "eu-central-2": "900612956339",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "me-central-1": "759879836304",
    "me-south-1": "558608220178",
}
EKS_REGISTRY_DEFAULT_REGIONS: frozenset[str] = frozenset(
    {
        "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
        "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2", "eu-west-3",
        "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
        "ap-southeast-1", "ap-southeast-2",
    }
)  # fmt: skip

# aws/eks-charts stable/aws-efa-k8s-device-plugin: appVersion v0.5.20 (eks-charts PR #1338, CVE
# fixes). The AWS HyperPod chart pins that chart's version 0.5.20; v0.5.13 or newer fixes the
# SIGSEGV of v0.5.6 on g6 instances.
EFA_DEVICE_PLUGIN_TAG = "v0.5.20"


def eks_registry(region: str) -> str:
    """The Amazon EKS image registry of ``region``; KeyError for a region EKS does not serve."""
    if region in EKS_REGISTRY_ACCOUNTS:
        account = EKS_REGISTRY_ACCOUNTS[region]
    elif region in EKS_REGISTRY_DEFAULT_REGIONS:
        account = EKS_REGISTRY_DEFAULT_ACCOUNT
    else:
        raise KeyError(region)
    return f"{account}.dkr.ecr.{region}.amazonaws.com"


def efa_device_plugin_image(region: str) -> str:
    """The EFA device plugin image, from the region's own EKS registry."""
    return f"{eks_registry(region)}/eks/aws-efa-k8s-device-plugin:{EFA_DEVICE_PLUGIN_TAG}"


def known_regions() -> frozenset[str]:
    """Every region this module can place an image in."""
    return frozenset(EKS_REGISTRY_ACCOUNTS) | EKS_REGISTRY_DEFAULT_REGIONS


# -- public registries -------------------------------------------------------------------------

# Kubeflow training operator v1.7.0, the version of the AWS chart (charts/training-operators,
# appVersion v1.7.0); v1-855e096 is the image tag of the v1.7.0 release (Docker Hub kubeflow/).
TRAINING_OPERATOR_IMAGE = "docker.io/kubeflow/training-operator:v1-855e096"

# Kubeflow MPI operator v0.5 (AWS chart charts/mpi-operator/values.yaml pins `0.5`; 0.5.0 is the
# immutable release tag of the same version).
MPI_OPERATOR_IMAGE = "docker.io/mpioperator/mpi-operator:0.5.0"

# NVIDIA device plugin: the AWS chart depends on NVIDIA's chart 0.16.1, whose image is this tag
# (NVIDIA/k8s-device-plugin, deployments/static; NGC catalog nvidia/k8s-device-plugin).
NVIDIA_DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.16.1"

# AWS Neuron device plugin, as pinned by the AWS chart (charts/neuron-device-plugin); release
# notes: Neuron K8 release 2.19.16.0 (awsdocs-neuron, "Neuron K8 Release Notes").
NEURON_DEVICE_PLUGIN_IMAGE = "public.ecr.aws/neuron/neuron-device-plugin:2.19.16.0"

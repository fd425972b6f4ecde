"""Pinned Amazon EKS add-on versions for the Kubernetes versions the app supports.

Every add-on this project installs is pinned here, so a deploy never picks up a
new add-on build by itself; bumping a version is a reviewed change of this file.

Each table names the page it was read from and when. Where AWS publishes no
version table for an add-on, the pinned build is one an AWS page names, and
the comment says so: check those with
``aws eks describe-addon-versions --addon-name <name> --kubernetes-version <v>``
before a bump.

Pure Python (no ``aws_cdk`` import): the config validation may use it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Kubernetes versions HyperPod supports and this app accepts (eks.kubernetes_version).
SUPPORTED_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")

# Installed with every EKS cluster, before any node joins.
CORE_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")

# Installed by HyperPodEksAddons once the HyperPod cluster has nodes (eks.addons).
OPTIONAL_ADDONS = (
    "cert-manager",
    "amazon-sagemaker-hyperpod-training-operator",
    "amazon-sagemaker-hyperpod-taskgovernance",
    "amazon-sagemaker-hyperpod-observability",
    "aws-fsx-csi-driver",
    # the inference operator and what it needs besides cert-manager and the FSx CSI driver
    # (HyperPodInference)
    "aws-mountpoint-s3-csi-driver",
    "metrics-server",
    "amazon-sagemaker-hyperpod-inference",
)

# HyperPod needs the Amazon VPC CNI 1.18.3 or newer (HyperPod developer guide,
# "Getting started with Amazon EKS support in SageMaker HyperPod", Networking).
MIN_VPC_CNI = (1, 18, 3)

# -- add-ons whose build depends on the Kubernetes minor -------------------------------------

# Amazon EKS user guide, "Manage kube-proxy in Amazon EKS clusters", table "kube-proxy
# versions" (latest Amazon EKS type per Kubernetes version); 1.31-1.35 from the revision
# that already lists 1.36 (November 2026). 1.30 left extended support, so that revision
# dropped it: its build is the last one the table listed (same page, mid-2026 revision).
_KUBE_PROXY = {
    "1.35": "v1.35.3-eksbuild.13",
    "1.34": "v1.34.6-eksbuild.13",
    "1.33": "v1.33.10-eksbuild.13",
    "1.32": "v1.32.13-eksbuild.16",
    "1.31": "v1.31.14-eksbuild.20",
    "1.30": "v1.30.14-eksbuild.28",
}

# Amazon EKS user guide, "Manage CoreDNS for DNS in Amazon EKS clusters", table "CoreDNS
# versions" (revision that lists 1.36, November 2026).
_COREDNS = {
    "1.35": "v1.14.3-eksbuild.3",
    "1.34": "v1.13.2-eksbuild.11",
    "1.33": "v1.12.4-eksbuild.18",
    "1.32": "v1.11.4-eksbuild.40",
    "1.31": "v1.11.4-eksbuild.40",
    "1.30": "v1.11.4-eksbuild.40",
}

# -- add-ons with one build for every supported Kubernetes minor -----------------------------

_SAME_FOR_ALL = {
    # Amazon EKS user guide, "Assign IPs to Pods with the Amazon VPC CNI", table "Amazon VPC
    # CNI versions": the same build for 1.29 through 1.35 (revision that lists 1.35, 2026).
    "vpc-cni": "v1.21.1-eksbuild.7",
    # The EKS user guide publishes no version table for the Pod Identity Agent ("Set up the
    # Amazon EKS Pod Identity Agent" only shows v1.0.0-eksbuild.1 as an example); this is
    # the build public EKS 1.34/1.35 configurations pin in 2026. Unverified against AWS.
    "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
    # Community add-on. SageMaker developer guide, HyperPod inference operator setup: "Cert
    # Manager (minimum version: v1.18.2-eksbuild.2)"; the same build is the default of AWS's
    # HyperPod cluster-setup template (aws/sagemaker-hyperpod-cluster-setup,
    # eks/cloudformation/cert-manager-addon-template.yaml), 2026.
    "cert-manager": "v1.18.2-eksbuild.2",
    # No AWS version table. v1.2.1-eksbuild.1 is the default build for Kubernetes 1.28-1.35
    # per DescribeAddonVersions as quoted in awslabs/awsome-distributed-ai PR #1076 (May
    # 2026); it no longer declares IAM permissions, so its pod identity association must be
    # a standalone resource (see HyperPodEksAddons). Elastic training needs >= v1.2
    # (SageMaker developer guide, "Using elastic training in Amazon SageMaker HyperPod").
    "amazon-sagemaker-hyperpod-training-operator": "v1.2.1-eksbuild.1",
    # SageMaker developer guide, "Upgrade the task governance add-on": "Version
    # v1.6.0-eksbuild.1 packages Kueue v0.19.2" (2026).
    "amazon-sagemaker-hyperpod-taskgovernance": "v1.6.0-eksbuild.1",
    # No AWS version table. SageMaker developer guide, "Troubleshooting the Amazon SageMaker
    # HyperPod observability add-on" names v1.0.5-eksbuild.1 (the first build that tolerates
    # restricted instance group taints); newer builds may exist. Unverified beyond that page.
    "amazon-sagemaker-hyperpod-observability": "v1.0.5-eksbuild.1",
    # No AWS version table. SageMaker developer guide, HyperPod inference operator setup:
    # "Amazon FSx CSI Driver (minimum version: v1.6.0-eksbuild.1)" (2026).
    "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
    # No AWS version table. SageMaker developer guide, "Setting up your HyperPod clusters for
    # model deployment" (sagemaker-hyperpod-model-deployment-setup), Required Add-ons: "Amazon S3
    # Mountpoint CSI Driver (minimum version: v1.14.1-eksbuild.1)" (read 2026-11-25). Newer
    # builds exist; preflight (check_addon_versions) confirms the pin is offered for the
    # cluster's Kubernetes version before a bump or a deploy.
    "aws-mountpoint-s3-csi-driver": "v1.14.1-eksbuild.1",
    # No AWS version table. Same page: "Metrics Server (minimum version: v0.7.2-eksbuild.4)"
    # (read 2026-11-25); confirmed per Kubernetes version by preflight as above.
    "metrics-server": "v0.7.2-eksbuild.4",
    # No AWS version table. SageMaker developer guide, "Inference Gateway for Amazon SageMaker
    # HyperPod Inference" (sagemaker-hyperpod-model-deployment-inference-gateway): "The Inference
    # Gateway is available starting with version v2.0.0-eksbuild.2" and its install command pins
    # that build (read 2026-11-25). One build with and without the gateway, so that turning
    # eks.addons.inference.gateway on is a configuration change, not an add-on upgrade.
    "amazon-sagemaker-hyperpod-inference": "v2.0.0-eksbuild.2",
}

# The oldest build of an add-on that the features this app turns on work with. Every pin above
# must be at or above it (:func:`below_minimum`, tested).
MINIMUM_VERSIONS: dict[str, tuple[str, str]] = {
    # add-on: (minimum build, where AWS says so)
    "aws-mountpoint-s3-csi-driver": (
        "v1.14.1-eksbuild.1",
        "SageMaker developer guide, sagemaker-hyperpod-model-deployment-setup, Required Add-ons "
        "(read 2026-11-24)",
    ),
    "aws-fsx-csi-driver": (
        "v1.6.0-eksbuild.1",
        "SageMaker developer guide, sagemaker-hyperpod-model-deployment-setup, Required Add-ons "
        "(read 2026-11-24)",
    ),
    "metrics-server": (
        "v0.7.2-eksbuild.4",
        "SageMaker developer guide, sagemaker-hyperpod-model-deployment-setup, Required Add-ons "
        "(read 2026-11-24)",
    ),
    "cert-manager": (
        "v1.18.2-eksbuild.2",
        "SageMaker developer guide, sagemaker-hyperpod-model-deployment-setup, Required Add-ons "
        "(read 2026-11-24)",
    ),
    "amazon-sagemaker-hyperpod-inference": (
        "v2.0.0-eksbuild.2",
        "SageMaker developer guide, sagemaker-hyperpod-model-deployment-inference-gateway, "
        "Add-on version (the first build with the Inference Gateway; read 2026-11-25)",
    ),
}

_PER_KUBERNETES = {"kube-proxy": _KUBE_PROXY, "coredns": _COREDNS}

KNOWN_ADDONS = (*CORE_ADDONS, *OPTIONAL_ADDONS)

_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.(\d+)$")


def parse_addon_version(version: str) -> tuple[int, int, int, int]:
    """``"v1.21.1-eksbuild.7"`` -> ``(1, 21, 1, 7)``; ValueError for anything else."""
    match = _VERSION.match(version)
    if not match:
        raise ValueError(f"{version!r} is not an EKS add-on version like v1.21.1-eksbuild.7")
    major, minor, patch, build = (int(part) for part in match.groups())
    return major, minor, patch, build


def addon_version(addon: str, kubernetes_version: str) -> str:
    """The pinned build of an EKS add-on for a Kubernetes version, e.g. ``v1.21.1-eksbuild.7``.

    :param addon: the EKS add-on name (``vpc-cni``, ``cert-manager``, ...).
    :param kubernetes_version: the cluster's Kubernetes minor, ``"1.30"`` .. ``"1.35"``.
    :raises KeyError: the add-on is not one this project installs.
    :raises ValueError: the Kubernetes version is not supported.
    """
    if addon not in KNOWN_ADDONS:
        raise KeyError(
            f"no pinned version for EKS add-on {addon!r}; known add-ons: {', '.join(KNOWN_ADDONS)}"
        )
    if kubernetes_version not in SUPPORTED_KUBERNETES_VERSIONS:
        raise ValueError(
            f"Kubernetes {kubernetes_version!r} is not supported; "
            f"use one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}"
        )
    per_kubernetes = _PER_KUBERNETES.get(addon)
    if per_kubernetes is not None:
        return per_kubernetes[kubernetes_version]
    return _SAME_FOR_ALL[addon]


def below_minimum(
    pinned: Mapping[str, str] | None = None,
    minimums: Mapping[str, tuple[str, str]] = MINIMUM_VERSIONS,
) -> list[str]:
    """The pins (``{add-on: build}``, default: every add-on of this module) below their minimum
    build, as readable lines; empty when every pin is at or above it."""
    if pinned is None:
        pinned = {addon: _SAME_FOR_ALL[addon] for addon in minimums if addon in _SAME_FOR_ALL}
    problems = []
    for addon, (minimum, source) in minimums.items():
        build = pinned.get(addon)
        if build is not None and parse_addon_version(build) < parse_addon_version(minimum):
            problems.append(f"{addon} {build} is below the minimum {minimum} ({source})")
    return problems


# -- upgrade paths: moves of an add-on that a plain add-on update cannot make ----------------

TASK_GOVERNANCE_UPGRADE_DOCS = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-eks-operate-console-ui-governance-upgrade.html"
)


@dataclass(frozen=True)
class UpgradeBoundary:
    """A version boundary of an add-on that an in-place update cannot cross.

    A cluster running a build older than ``old_before`` that is moved to ``new_from`` or later
    needs ``migration`` (AWS's documented procedure) first: preflight refuses such a deploy.

    :param addon: the EKS add-on name.
    :param old_before: ``(major, minor)``: builds older than this are on the old side.
    :param new_from: ``(major, minor)``: builds from this one on are on the new side.
    :param why: what breaks on a plain update.
    :param migration: the page of the documented migration ("" while none is documented).
    """

    addon: str
    old_before: tuple[int, int]
    new_from: tuple[int, int]
    why: str
    migration: str

    def crosses(self, installed: str, target: str) -> bool:
        """True when moving from ``installed`` to ``target`` crosses this boundary."""
        return (
            parse_addon_version(installed)[:2] < self.old_before
            and parse_addon_version(target)[:2] >= self.new_from
        )


UPGRADE_BOUNDARIES: tuple[UpgradeBoundary, ...] = (
    # SageMaker developer guide, "Upgrade the task governance add-on"
    # (sagemaker-hyperpod-eks-operate-console-ui-governance-upgrade, read 2026-11-24): a plain
    # update from v1.3.x to v1.5 or later fails, because Kueue's CRDs are
    # stored as v1alpha1; AWS documents a backup, update and restore of the Kueue objects.
    UpgradeBoundary(
        addon="amazon-sagemaker-hyperpod-taskgovernance",
        old_before=(1, 4),
        new_from=(1, 5),
        why="Kueue's CRDs of v1.3.x are stored as v1alpha1, so a plain update to v1.5 or "
        "later fails",
        migration=TASK_GOVERNANCE_UPGRADE_DOCS,
    ),
)


def upgrade_boundaries(addon: str) -> tuple[UpgradeBoundary, ...]:
    """The boundaries of ``addon`` (none for most add-ons)."""
    return tuple(b for b in UPGRADE_BOUNDARIES if b.addon == addon)


def undocumented_crossings(
    pinned: Mapping[str, str], boundaries: Iterable[UpgradeBoundary] = UPGRADE_BOUNDARIES
) -> list[str]:
    """The boundaries a pinned build (``{add-on: build}``) is past without a documented
    migration: a cluster still on the old side could not be moved to the pin."""
    problems = []
    for boundary in boundaries:
        build = pinned.get(boundary.addon)
        if build is None or parse_addon_version(build)[:2] < boundary.new_from:
            continue
        if not boundary.migration.startswith("https://"):
            problems.append(
                f"{boundary.addon} {build} is past the v{boundary.old_before[0]}."
                f"{boundary.old_before[1] - 1} -> v{boundary.new_from[0]}.{boundary.new_from[1]} "
                f"boundary ({boundary.why}) and the table names no migration page"
            )
    return problems

"""Preflight check: EKS offers every add-on build the app pins, for the Kubernetes version.

The list mirrors what the app installs (``hyperpod_cdk.eks``): the core add-ons on a
cluster it creates (none on an adopted one) and the optional add-ons ``eks.addons``
switches on. Pure Python: importing the CDK constructs would start the CDK runtime.
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.facts import versions
from hyperpod_ops.aws import call_or_none, paginate
from hyperpod_ops.check import Check, failed, passed, skipped

CERT_MANAGER = "cert-manager"
TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
OBSERVABILITY = "amazon-sagemaker-hyperpod-observability"
FSX_CSI_DRIVER = "aws-fsx-csi-driver"
S3_CSI_DRIVER = "aws-mountpoint-s3-csi-driver"
METRICS_SERVER = "metrics-server"
INFERENCE = "amazon-sagemaker-hyperpod-inference"


def app_addons(config: EnvironmentConfig) -> list[str]:
    """The EKS add-ons the app installs for ``config``, in install order."""
    if config.is_slurm:
        return []
    settings = config.eks_settings
    names = [] if settings.cluster_arn else list(versions.CORE_ADDONS)
    if settings.addons.training_operator:
        names += [CERT_MANAGER, TRAINING_OPERATOR]
    if settings.addons.task_governance:
        names.append(TASK_GOVERNANCE)
    if config.observability_enabled:  # observability.enabled or eks.addons.observability
        names.append(OBSERVABILITY)
    if config.fsx_csi_driver_enabled:
        names.append(FSX_CSI_DRIVER)
    if settings.addons.inference_settings is not None:
        # HyperPodInference: one cert-manager per cluster (the training operator's, when there)
        names += [n for n in (CERT_MANAGER,) if n not in names]
        names += [S3_CSI_DRIVER, METRICS_SERVER, INFERENCE]
    return names


def check_addon_versions(config: EnvironmentConfig, eks: Any) -> list[Check]:
    """Each pinned add-on build is offered by DescribeAddonVersions for eks.kubernetes_version."""
    if config.is_slurm:
        return [skipped("eks add-ons", "slurm orchestrator: no EKS add-ons")]
    names = app_addons(config)
    if not names:
        return [skipped("eks add-ons", "the app installs no EKS add-on on the adopted cluster")]
    kubernetes = config.eks_settings.kubernetes_version
    checks = []
    for addon in names:
        pinned = versions.addon_version(addon, kubernetes)
        name = f"eks add-on {addon}"
        offered = [
            str(v.get("addonVersion"))
            for info in paginate(
                eks,
                "describe_addon_versions",
                "addons",
                addonName=addon,
                kubernetesVersion=kubernetes,
            )
            if info.get("addonName", addon) == addon
            for v in info.get("addonVersions", [])
        ]
        if pinned in offered:
            checks.append(passed(name, f"{pinned} is offered for Kubernetes {kubernetes}"))
            continue
        newest = ", ".join(sorted(offered, key=_version_key, reverse=True)[:3])
        checks.append(
            failed(
                name,
                f"{pinned} is not offered for Kubernetes {kubernetes} in {config.region} "
                f"(offered: {newest or 'none'})",
                f"pin an offered build in hyperpod_cdk/facts/versions.py, or change "
                f"eks.kubernetes_version (aws eks describe-addon-versions --region {config.region} "
                f"--addon-name {addon} --kubernetes-version {kubernetes})",
            )
        )
    return checks


def check_addon_upgrades(config: EnvironmentConfig, eks: Any) -> list[Check]:
    """An installed add-on the deploy would move across a boundary of
    :data:`~hyperpod_cdk.facts.versions.UPGRADE_BOUNDARIES` (the task governance add-on from
    v1.3.x to v1.5+) fails, with the documented migration as the fix, instead of failing in
    CloudFormation. Reads the add-on with DescribeAddon on the adopted cluster, or on the
    app's own EKS cluster once deployed; nothing is checked before the add-on exists."""
    if config.is_slurm:
        return []
    settings = config.eks_settings
    cluster = (
        settings.cluster_arn.rsplit("/", 1)[-1] if settings.cluster_arn else config.eks_cluster_name
    )
    kubernetes = settings.kubernetes_version
    checks = []
    for addon in app_addons(config):
        boundaries = versions.upgrade_boundaries(addon)
        if not boundaries:
            continue
        pinned = versions.addon_version(addon, kubernetes)
        name = f"eks add-on {addon} upgrade"
        # ResourceNotFoundException: no such cluster (not deployed yet) or no such add-on
        found = call_or_none(
            eks.describe_addon, ["ResourceNotFoundException"], clusterName=cluster, addonName=addon
        )
        installed = str((found or {}).get("addon", {}).get("addonVersion") or "")
        if not installed:
            checks.append(passed(name, f"not on {cluster} yet: the deploy installs {pinned}"))
            continue
        crossed = [b for b in boundaries if _crosses(b, installed, pinned)]
        if not crossed:
            checks.append(passed(name, f"{installed} on {cluster} -> {pinned}: an in-place update"))
            continue
        boundary = crossed[0]
        checks.append(
            failed(
                name,
                f"{installed} on {cluster} cannot be updated in place to {pinned}: {boundary.why}",
                f"migrate first as AWS documents (back up, update, restore): {boundary.migration}; "
                "then deploy again",
            )
        )
    return checks


def _crosses(boundary: versions.UpgradeBoundary, installed: str, pinned: str) -> bool:
    try:
        return boundary.crosses(installed, pinned)
    except ValueError:  # a build label this app cannot read: leave it to the update
        return False


def _version_key(version: str) -> tuple[int, ...]:
    try:
        return versions.parse_addon_version(version)
    except ValueError:
        return (-1,)

"""Pinned EKS add-on versions: one for every add-on and supported Kubernetes version, well formed,
and the HyperPod minimum for the VPC CNI."""

from __future__ import annotations

import pytest

from hyperpod_cdk.facts.versions import (
    CORE_ADDONS,
    KNOWN_ADDONS,
    MIN_VPC_CNI,
    OPTIONAL_ADDONS,
    SUPPORTED_KUBERNETES_VERSIONS,
    addon_version,
    parse_addon_version,
)

EVERY_PAIR = [
    pytest.param(addon, version, id=f"{addon}-{version}")
    for addon in KNOWN_ADDONS
    for version in SUPPORTED_KUBERNETES_VERSIONS
]


def test_core_addons_are_the_four_hyperpod_needs() -> None:
    assert CORE_ADDONS == ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")


def test_optional_addons_are_the_hyperpod_addons() -> None:
    assert set(OPTIONAL_ADDONS) == {
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-observability",
        "aws-fsx-csi-driver",
        "aws-mountpoint-s3-csi-driver",
        "metrics-server",
        "amazon-sagemaker-hyperpod-inference",
    }


@pytest.mark.parametrize(("addon", "kubernetes_version"), EVERY_PAIR)
def test_every_addon_is_pinned_for_every_supported_version(
    addon: str, kubernetes_version: str
) -> None:
    version = addon_version(addon, kubernetes_version)
    major, minor, patch, build = parse_addon_version(version)
    assert version == f"v{major}.{minor}.{patch}-eksbuild.{build}"


@pytest.mark.parametrize("kubernetes_version", SUPPORTED_KUBERNETES_VERSIONS)
def test_vpc_cni_meets_the_hyperpod_minimum(kubernetes_version: str) -> None:
    assert MIN_VPC_CNI == (1, 18, 3)
    assert parse_addon_version(addon_version("vpc-cni", kubernetes_version))[:3] >= MIN_VPC_CNI


@pytest.mark.parametrize("kubernetes_version", SUPPORTED_KUBERNETES_VERSIONS)
def test_kube_proxy_follows_the_kubernetes_minor(kubernetes_version: str) -> None:
    major, minor, _, _ = parse_addon_version(addon_version("kube-proxy", kubernetes_version))
    assert f"{major}.{minor}" == kubernetes_version


def test_kube_proxy_and_coredns_differ_per_kubernetes_version() -> None:
    for addon in ("kube-proxy", "coredns"):
        assert addon_version(addon, "1.35") != addon_version(addon, "1.30"), addon
    assert addon_version("kube-proxy", "1.35") == "v1.35.3-eksbuild.13"
    assert addon_version("coredns", "1.35") == "v1.14.3-eksbuild.3"
    assert addon_version("coredns", "1.30") == "v1.11.4-eksbuild.40"


def test_documented_pins() -> None:
    assert addon_version("vpc-cni", "1.35") == "v1.21.1-eksbuild.7"
    assert addon_version("cert-manager", "1.35") == "v1.18.2-eksbuild.2"
    assert addon_version("amazon-sagemaker-hyperpod-taskgovernance", "1.30") == "v1.6.0-eksbuild.1"
    assert (
        addon_version("amazon-sagemaker-hyperpod-training-operator", "1.33") == "v1.2.1-eksbuild.1"
    )


def test_unknown_addon_is_a_key_error_naming_the_known_ones() -> None:
    with pytest.raises(
        KeyError, match=r"no pinned version for EKS add-on 'aws-ebs-csi-driver'.*vpc-cni"
    ):
        addon_version("aws-ebs-csi-driver", "1.35")


@pytest.mark.parametrize("kubernetes_version", ["1.29", "1.36", "1.35.2", "", "v1.35"])
def test_unsupported_kubernetes_version_is_a_value_error(kubernetes_version: str) -> None:
    with pytest.raises(ValueError, match=r"is not supported; use one of 1\.30, .*1\.35"):
        addon_version("coredns", kubernetes_version)


@pytest.mark.parametrize("version", ["1.21.1-eksbuild.7", "v1.21.1", "v1.21-eksbuild.1", "latest"])
def test_parse_addon_version_rejects_other_forms(version: str) -> None:
    with pytest.raises(ValueError, match="is not an EKS add-on version"):
        parse_addon_version(version)

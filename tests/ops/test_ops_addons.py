"""Preflight: the pinned EKS add-on builds are offered for the Kubernetes version."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from ops_testkit import (
    StubbedAws,
    addon_absent,
    addon_installed,
    addon_versions,
    by_name,
    environment,
)

from hyperpod_cdk.facts import versions
from hyperpod_ops import addons
from hyperpod_ops.addons import app_addons, check_addon_upgrades, check_addon_versions


def test_a_created_cluster_gets_the_core_addons_and_the_fsx_driver() -> None:
    assert app_addons(environment("eks-minimal")) == [*versions.CORE_ADDONS, "aws-fsx-csi-driver"]


def test_every_optional_addon_of_eks_full() -> None:
    assert app_addons(environment("eks-full")) == [
        *versions.CORE_ADDONS,
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-observability",
        "aws-fsx-csi-driver",
        # eks.addons.inference (cert-manager is the training operator's)
        "aws-mountpoint-s3-csi-driver",
        "metrics-server",
        "amazon-sagemaker-hyperpod-inference",
    ]


def test_an_adopted_cluster_without_optional_addons_gets_none() -> None:
    assert app_addons(environment("eks-existing-cluster")) == []
    assert app_addons(environment("default")) == []


def test_the_names_are_the_ones_the_constructs_install() -> None:
    # imports the CDK constructs (no synth): the preflight's copy of the names must match
    from hyperpod_cdk.eks import addons as constructs
    from hyperpod_cdk.eks.cluster import EARLY_CORE_ADDONS

    for name in ("CERT_MANAGER", "TRAINING_OPERATOR", "TASK_GOVERNANCE", "OBSERVABILITY", "FSX_CSI_DRIVER"):  # fmt: skip
        assert getattr(addons, name) == getattr(constructs, name)
    assert {*EARLY_CORE_ADDONS, "coredns"} == set(versions.CORE_ADDONS)


def test_offered_builds_pass(aws: StubbedAws) -> None:
    config = environment("eks-minimal")
    for name in app_addons(config):
        pinned = versions.addon_version(name, "1.35")
        addon_versions(aws, name, "1.35", ["v0.0.1-eksbuild.1", pinned])
    checks = check_addon_versions(config, aws("eks"))
    assert [c.outcome for c in checks] == ["pass"] * 5


def test_a_build_that_is_not_offered_fails(aws: StubbedAws) -> None:
    config = environment("eks-minimal", {"storage.fsx.enabled": False})
    for name in app_addons(config):
        pinned = versions.addon_version(name, "1.35")
        offered = ["v1.99.0-eksbuild.1", "v1.21.0-eksbuild.2"] if name == "vpc-cni" else [pinned]
        addon_versions(aws, name, "1.35", offered)
    checks = by_name(check_addon_versions(config, aws("eks")))
    check = checks["eks add-on vpc-cni"]
    assert check.outcome == "fail"
    assert "v1.21.1-eksbuild.7 is not offered for Kubernetes 1.35" in check.detail
    assert "offered: v1.99.0-eksbuild.1, v1.21.0-eksbuild.2" in check.detail
    assert check.fix and "versions.py" in check.fix
    assert checks["eks add-on kube-proxy"].outcome == "pass"


def test_an_addon_unknown_for_the_version_fails(aws: StubbedAws) -> None:
    config = environment("eks-existing-cluster", {"eks.addons.task_governance": True})
    aws.stub("eks").add_response(
        "describe_addon_versions",
        {"addons": []},
        {"addonName": "amazon-sagemaker-hyperpod-taskgovernance", "kubernetesVersion": "1.33"},
    )
    (check,) = check_addon_versions(config, aws("eks"))
    assert check.outcome == "fail" and "offered: none" in check.detail


def test_versions_are_read_from_every_page(aws: StubbedAws) -> None:
    config = environment("eks-existing-cluster", {"eks.addons.task_governance": True})
    pinned = versions.addon_version("amazon-sagemaker-hyperpod-taskgovernance", "1.33")
    offered = ["v1.1.0-eksbuild.1", "v1.2.0-eksbuild.1", pinned]
    addon_versions(aws, "amazon-sagemaker-hyperpod-taskgovernance", "1.33", offered, pages=3)
    (check,) = check_addon_versions(config, aws("eks"))
    assert check.outcome == "pass"


def test_slurm_and_addon_free_configs_are_skipped(aws: StubbedAws) -> None:
    assert [c.outcome for c in check_addon_versions(environment("default"), aws("eks"))] == ["skip"]
    assert [
        c.outcome for c in check_addon_versions(environment("eks-existing-cluster"), aws("eks"))
    ] == ["skip"]


# -- the upgrade path: a deploy never moves an add-on across a documented boundary ---------

TG = "amazon-sagemaker-hyperpod-taskgovernance"


def _governed_adopted() -> Any:
    return environment("eks-existing-cluster", {"eks.addons.task_governance": True})


def test_a_deploy_across_the_kueue_migration_boundary_fails_with_the_migration_page(
    aws: StubbedAws,
) -> None:
    config = _governed_adopted()
    addon_installed(aws, config, TG, "v1.3.1-eksbuild.1")
    (check,) = check_addon_upgrades(config, aws("eks"))
    assert check.name == f"eks add-on {TG} upgrade"
    assert check.outcome == "fail"
    pinned = versions.addon_version(TG, "1.33")
    assert f"v1.3.1-eksbuild.1 on shared-platform cannot be updated in place to {pinned}" in (
        check.detail
    )
    assert "v1alpha1" in check.detail
    assert check.fix and versions.TASK_GOVERNANCE_UPGRADE_DOCS in check.fix
    aws.verify()


@pytest.mark.parametrize("installed", ["v1.5.0-eksbuild.1", "v1.6.0-eksbuild.1"])
def test_an_update_on_the_new_side_passes(aws: StubbedAws, installed: str) -> None:
    config = _governed_adopted()
    addon_installed(aws, config, TG, installed)
    (check,) = check_addon_upgrades(config, aws("eks"))
    assert check.outcome == "pass" and "an in-place update" in check.detail


def test_an_addon_not_installed_yet_passes(aws: StubbedAws) -> None:
    config = environment("eks-full")  # its own EKS cluster, not deployed yet
    addon_absent(aws, config, TG)
    (check,) = check_addon_upgrades(config, aws("eks"))
    assert check.outcome == "pass"
    assert "not on eks-full-eks yet" in check.detail
    aws.verify()


def test_no_upgrade_check_without_an_addon_that_has_a_boundary(aws: StubbedAws) -> None:
    assert check_addon_upgrades(environment("eks-minimal"), aws("eks")) == []
    assert check_addon_upgrades(environment("default"), aws("eks")) == []


def test_the_boundary_reads_versions() -> None:
    (boundary,) = versions.upgrade_boundaries(TG)
    assert boundary.crosses("v1.3.4-eksbuild.2", "v1.5.0-eksbuild.1")
    assert boundary.crosses("v1.2.0-eksbuild.1", "v1.6.0-eksbuild.1")
    assert not boundary.crosses("v1.5.0-eksbuild.1", "v1.6.0-eksbuild.1")
    assert not boundary.crosses("v1.3.4-eksbuild.2", "v1.3.5-eksbuild.1")


def test_the_pinned_builds_cross_no_boundary_without_a_documented_migration() -> None:
    pinned = {a: versions.addon_version(a, "1.35") for a in versions.OPTIONAL_ADDONS}
    assert versions.undocumented_crossings(pinned) == []
    # the guard itself: the same boundary with no migration page is reported
    (boundary,) = versions.upgrade_boundaries(TG)
    undocumented = dataclasses.replace(boundary, migration="")
    (problem,) = versions.undocumented_crossings(pinned, [undocumented])
    assert "v1.3 -> v1.5 boundary" in problem and "no migration page" in problem
    # a pin still on the old side needs no migration
    assert versions.undocumented_crossings({TG: "v1.3.1-eksbuild.1"}, [undocumented]) == []

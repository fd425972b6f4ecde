"""eks.addons.inference: the switch, its settings and every rule, each at its key path."""

from __future__ import annotations

import functools
from typing import Any

import config_testkit as kit
import pytest
from config_testkit import assert_issue

from hyperpod_cdk.config.inference import (
    InferenceSettings,
    bucket_name_problem,
    default_tls_bucket_name,
)

KEY = "eks.addons.inference"
DEPENDENCIES = [
    "health_monitoring_agent", "deep_health_check", "job_auto_restart", "patching",
    "training_operator", "mpi_operator", "nvidia_device_plugin", "neuron_device_plugin",
    "efa_device_plugin", "scientist_rbac",
]  # fmt: skip
CLUSTER = "arn:aws:eks:us-west-2:111122223333:cluster/shared"
PROVIDER = (
    "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/"
    "EXAMPLED539D4633E53DE1B71EXAMPLE"
)


issues = functools.partial(kit.issues, base="eks")
errors = functools.partial(kit.errors, base="eks")
config = functools.partial(kit.config, base="eks")


def adopted(**inference: Any) -> dict[str, Any]:
    """An adopted EKS cluster (what eks-existing-cluster needs) with inference settings."""
    return {
        "account": "111122223333",
        "eks.cluster_arn": CLUSTER,
        "eks.kubernetes_version": "1.33",
        "eks.dependencies": {**dict.fromkeys(DEPENDENCIES, False), "health_monitoring_agent": True},
        "eks.addons.fsx_csi_driver": True,
        KEY: inference,
    }


# -- the switch -----------------------------------------------------------------------------------


def test_off_by_default() -> None:
    cfg = config({})
    assert cfg.eks_settings.addons.inference is False
    assert cfg.eks_settings.addons.inference_settings is None


def test_true_means_the_defaults() -> None:
    cfg = config({KEY: True})
    assert cfg.eks_settings.addons.inference_settings == InferenceSettings()
    settings = cfg.eks_settings.addons.inference_settings
    assert settings is not None
    assert not settings.gateway and not settings.gated_models_enabled
    assert settings.gated_model_namespaces is None


def test_the_mapping() -> None:
    cfg = config(
        {
            KEY: {
                "gateway": True,
                "gated_models": {"namespaces": ["team-a", "team-b"]},
                "tls_bucket": "hyperpod-tls-mine",
                "s3_buckets": ["models-a", "models.b"],
            }
        }
    )
    settings = cfg.eks_settings.addons.inference_settings
    assert settings is not None
    assert settings.gateway
    assert settings.gated_model_namespaces == ["team-a", "team-b"]
    assert settings.tls_bucket == "hyperpod-tls-mine"
    assert settings.s3_buckets == ["models-a", "models.b"]


def test_gated_models_true_trusts_every_namespace() -> None:
    settings = config({KEY: {"gated_models": True}}).eks_settings.addons.inference_settings
    assert settings is not None and settings.gated_models_enabled
    assert settings.gated_model_namespaces is None


def test_inference_turns_the_fsx_driver_on_without_a_file_system() -> None:
    cfg = config({KEY: True, "storage.fsx.enabled": False})
    assert cfg.fsx_csi_driver_enabled
    assert cfg.needs_eks_addons
    # and fsx_csi_driver: true without a file system is no error then
    assert (
        errors({KEY: True, "storage.fsx.enabled": False, "eks.addons.fsx_csi_driver": True}) == []
    )
    # (without inference it still is)
    assert_issue(
        errors({"storage.fsx.enabled": False, "eks.addons.fsx_csi_driver": True}),
        "eks.addons.fsx_csi_driver",
        "needs a file system",
    )


def test_an_adopted_cluster_needs_eks_addons_for_inference() -> None:
    cfg = config(adopted(oidc_provider_arn=PROVIDER, alb_controller="install", keda="install"))
    assert cfg.needs_eks_addons


# -- the rules, each at its key path ------------------------------------------------------------


def test_inference_only_with_orchestrator_eks() -> None:
    found = errors({"orchestrator": "slurm", KEY: True}, base="eks")
    assert_issue(found, KEY, "needs orchestrator: eks")


def test_fsx_driver_false_with_inference_is_an_error() -> None:
    assert_issue(
        errors({KEY: True, "eks.addons.fsx_csi_driver": False}),
        "eks.addons.fsx_csi_driver",
        "which the inference operator needs",
    )


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("Upper-case", "an S3 bucket name"),
        ("ab", "an S3 bucket name"),
        ("x" * 64, "at most 63 characters"),
        ("-leading", "an S3 bucket name"),
        ("two..dots", "two adjacent dots"),
        ("192.168.5.4", "the form of an IP address"),
        ("xn--bucket", "the reserved prefix 'xn--'"),
        ("sthree-bucket", "the reserved prefix 'sthree-'"),
        ("bucket-s3alias", "the reserved suffix '-s3alias'"),
        ("bucket--ol-s3", "the reserved suffix '--ol-s3'"),
    ],
)
def test_bucket_names_must_be_valid_s3_names(name: str, fragment: str) -> None:
    assert_issue(
        errors({KEY: {"s3_buckets": ["fine-bucket", name]}}), f"{KEY}.s3_buckets[1]", fragment
    )
    assert_issue(errors({KEY: {"tls_bucket": name}}), f"{KEY}.tls_bucket", fragment)


def test_bucket_name_problem() -> None:
    assert bucket_name_problem("hyperpod-tls-a") is None
    assert bucket_name_problem("a..b") == "two adjacent dots"


def test_a_bucket_listed_twice() -> None:
    assert_issue(
        errors({KEY: {"s3_buckets": ["models", "models"]}}), f"{KEY}.s3_buckets[1]", "appears twice"
    )


def test_the_tls_bucket_is_not_a_model_bucket() -> None:
    assert_issue(
        errors({KEY: {"tls_bucket": "hyperpod-tls-x", "s3_buckets": ["hyperpod-tls-x"]}}),
        f"{KEY}.s3_buckets[0]",
        "is the TLS bucket",
    )


def test_a_tls_bucket_outside_the_prefix_is_a_warning() -> None:
    found = issues({KEY: {"tls_bucket": "my-certificates"}})
    (warning,) = [i for i in found if i.path == f"{KEY}.tls_bucket"]
    assert warning.severity == "warning"
    assert "'hyperpod-tls-'" in warning.message
    assert "grants the execution role" in warning.message
    assert not [
        i for i in issues({KEY: {"tls_bucket": "hyperpod-tls-mine"}}) if i.path.startswith(KEY)
    ]


def test_the_default_tls_bucket_name() -> None:
    assert (
        default_tls_bucket_name("eks-full", "111122223333", "us-west-2")
        == "hyperpod-tls-eks-full-111122223333-us-west-2"
    )


def test_a_default_tls_bucket_name_over_63_characters() -> None:
    long_name = "a" * 28 + "-env"  # 32 characters: 13 + 32 + 1 + 12 + 1 + 9 = 68
    found = errors({"name": long_name, KEY: True})
    assert_issue(found, f"{KEY}.tls_bucket", "has 68 characters; S3 allows 63")
    # naming an existing bucket resolves it
    assert errors({"name": long_name, KEY: {"tls_bucket": "hyperpod-tls-short"}}) == []


def test_an_adopted_cluster_must_name_its_oidc_provider() -> None:
    assert_issue(errors(adopted()), f"{KEY}.oidc_provider_arn", "needs its IAM OIDC provider")
    assert (
        errors(adopted(oidc_provider_arn=PROVIDER, alb_controller="install", keda="existing")) == []
    )


@pytest.mark.parametrize("key", ["alb_controller", "keda"])
def test_an_adopted_cluster_must_say_whether_it_runs_the_controller(key: str) -> None:
    """AWS documents alb/keda {enabled: false} for a cluster that already runs them (SageMaker
    developer guide, https://docs.aws.amazon.com/sagemaker/latest/dg/
    sagemaker-hyperpod-model-deployment-ts.html, "missing ALB Controller" / "missing KEDA
    operator", Option 2); a second copy collides with the cluster's, so the choice is explicit."""
    other = "keda" if key == "alb_controller" else "alb_controller"
    found = errors(adopted(oidc_provider_arn=PROVIDER, **{other: "install"}))
    assert [i.path for i in found] == [f"{KEY}.{key}"]
    assert_issue(found, f"{KEY}.{key}", "must say whether it already runs")
    assert f"config error: {KEY}.{key}: an adopted cluster" in str(found[0])
    assert errors(adopted(oidc_provider_arn=PROVIDER, **{other: "install", key: "existing"})) == []


def test_a_created_cluster_installs_both_controllers_by_default() -> None:
    settings = config({KEY: True}).eks_settings.addons.inference_settings
    assert settings is not None
    assert settings.installs_alb_controller and settings.installs_keda


@pytest.mark.parametrize("key", ["alb_controller", "keda"])
def test_existing_on_a_created_cluster_is_an_error(key: str) -> None:
    assert_issue(errors({KEY: {key: "existing"}}), f"{KEY}.{key}", "applies only to an adopted")
    assert errors({KEY: {key: "install"}}) == []


def test_the_controller_choice_takes_install_or_existing() -> None:
    assert_issue(errors({KEY: {"keda": "managed"}}), f"{KEY}.keda", "'install' or 'existing'")


def test_a_created_cluster_takes_no_oidc_provider() -> None:
    assert_issue(
        errors({KEY: {"oidc_provider_arn": PROVIDER}}),
        f"{KEY}.oidc_provider_arn",
        "applies only to an adopted cluster",
    )


def test_the_oidc_provider_of_another_account_or_region() -> None:
    other_account = PROVIDER.replace("111122223333", "444455556666")
    assert_issue(
        errors(adopted(oidc_provider_arn=other_account)),
        f"{KEY}.oidc_provider_arn",
        "is in account 444455556666",
    )
    other_region = PROVIDER.replace("oidc.eks.us-west-2", "oidc.eks.us-east-1")
    assert_issue(
        errors(adopted(oidc_provider_arn=other_region)),
        f"{KEY}.oidc_provider_arn",
        "a cluster in us-east-1",
    )


def test_an_oidc_provider_arn_must_look_like_one() -> None:
    assert_issue(
        errors(adopted(oidc_provider_arn="arn:aws:iam::111122223333:role/x")),
        f"{KEY}.oidc_provider_arn",
        "IAM OIDC provider ARN",
    )


@pytest.mark.parametrize(
    ("gated", "path", "fragment"),
    [
        ({"namespaces": []}, "gated_models.namespaces", "at least 1"),
        ({"namespaces": ["a", "a"]}, "gated_models.namespaces", "appears twice"),
        ({"namespaces": ["Bad_NS"]}, "gated_models.namespaces[0]", "Kubernetes namespace"),
        ({"teams": ["a"]}, "gated_models.teams", ""),
    ],
)
def test_gated_models_options(gated: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(errors({KEY: {"gated_models": gated}}), f"{KEY}.{path}", fragment)


def test_unknown_keys_and_wrong_types() -> None:
    assert_issue(errors({KEY: {"gatway": True}}), f"{KEY}.gatway", "")
    assert_issue(errors({KEY: ["gateway"]}), KEY, "")

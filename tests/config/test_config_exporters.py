"""cluster.node_setup.exporters: which image each exporter runs (HyperPod's regional Amazon ECR
image unless the config names one), the rules on it (each a config error at its key), and what
reaches the node's settings.json (issue 20, closed network)."""

from __future__ import annotations

from typing import Any

import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk import facts
from hyperpod_cdk.config import ConfigError, EnvironmentConfig, Issue, validate
from hyperpod_cdk.config.node_setup import ExporterImage, exporter_images
from hyperpod_cdk.lifecycle.settings import node_settings

EXP = "cluster.node_setup.exporters"
ON = {f"{EXP}.node": True, f"{EXP}.dcgm": True}
CLOSED = {"network.closed_network": True}
HYPERPOD = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
NVCR = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
MIRROR = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror/dcgm-exporter:4.2.3-4.1.3"


def issues_of(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    """Errors and warnings of the changed base config."""
    try:
        return validate(build(changes, base))[1]
    except ConfigError as exc:
        return exc.issues


def errors_of(changes: dict[str, Any]) -> list[Issue]:
    return [i for i in issues_of(changes) if i.severity == "error"]


def config_of(changes: dict[str, Any], base: str = "slurm") -> EnvironmentConfig:
    cfg, _ = validate(build(changes, base))
    assert isinstance(cfg, EnvironmentConfig)
    return cfg


# -- the registry table ------------------------------------------------------------------------


def test_the_table_knows_every_region_the_config_accepts() -> None:
    """A region added to REGIONS needs a decision here (or exporters.*_image in its configs)."""
    table = facts.HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS
    assert set(table) == set(facts.REGIONS)
    assert all(len(account) == 12 and account.isdigit() for account in table.values())
    # the account AWS's own output shows in the two regions it was seen in
    assert table["us-east-1"] == table["us-west-2"] == "602401143452"


@pytest.mark.parametrize(
    ("region", "registry"),
    [
        ("us-west-2", "602401143452.dkr.ecr.us-west-2.amazonaws.com"),
        ("us-east-1", "602401143452.dkr.ecr.us-east-1.amazonaws.com"),
        ("eu-south-1", "590381155156.dkr.ecr.eu-south-1.amazonaws.com"),
        # the EKS table names ap-east-1's host for ap-east-2: the region's own host is kept
        ("ap-east-2", "533267051163.dkr.ecr.ap-east-2.amazonaws.com"),
        ("cn-north-1", "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn"),
    ],
)
def test_hyperpods_image_of_a_region(region: str, registry: str) -> None:
    assert facts.hyperpod_exporter_image("node", region) == (
        f"{registry}/hyperpod/node_exporter:v1.9.1"
    )
    assert facts.hyperpod_exporter_image("dcgm", region) == (
        f"{registry}/hyperpod/dcgm_exporter:4.1.1-4.0.4-ubi9"
    )


# -- the image each exporter runs --------------------------------------------------------------


def test_no_image_given_means_hyperpods_image_of_the_region() -> None:
    images = exporter_images(config_of(ON))
    assert [(i.exporter, i.uri, i.hyperpod) for i in images] == [
        ("node", f"{HYPERPOD}/hyperpod/node_exporter:v1.9.1", True),
        ("dcgm", f"{HYPERPOD}/hyperpod/dcgm_exporter:4.1.1-4.0.4-ubi9", True),
    ]
    assert [i.repository_arn() for i in images] == [
        "arn:aws:ecr:us-west-2:602401143452:repository/hyperpod/node_exporter",
        "arn:aws:ecr:us-west-2:602401143452:repository/hyperpod/dcgm_exporter",
    ]


def test_only_exporters_that_pull_and_are_on_have_an_image() -> None:
    assert exporter_images(config_of({})) == []
    assert exporter_images(config_of({f"{EXP}.efa": True})) == []  # ships with the scripts
    (image,) = exporter_images(config_of({f"{EXP}.dcgm": True}))
    assert image.exporter == "dcgm" and image.key == "exporters.dcgm_image"
    assert exporter_images(config_of({}, base="eks")) == []


def test_an_image_given_is_taken_as_it_is() -> None:
    digest = "registry.example.com:5000/obs/node-exporter@sha256:" + "a" * 64
    images = exporter_images(
        config_of({**ON, f"{EXP}.node_image": digest, f"{EXP}.dcgm_image": MIRROR})
    )
    node, dcgm = images
    assert (node.uri, node.hyperpod, node.registry) == (digest, False, "registry.example.com:5000")
    assert node.repository == "obs/node-exporter"
    assert node.reference == {"imageDigest": "sha256:" + "a" * 64}
    assert node.ecr_region is None and node.repository_arn() is None  # no ECR: no grant, no login
    assert dcgm.reference == {"imageTag": "4.2.3-4.1.3"}
    assert dcgm.repository_arn() == (
        "arn:aws:ecr:us-west-2:111122223333:repository/mirror/dcgm-exporter"
    )


@pytest.mark.parametrize(
    ("uri", "arn"),
    [
        ("111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn/x/y:1",
         "arn:aws-cn:ecr:cn-north-1:111122223333:repository/x/y"),
        ("111122223333.dkr.ecr-fips.us-gov-west-1.amazonaws.com/x:1",
         "arn:aws-us-gov:ecr:us-gov-west-1:111122223333:repository/x"),
    ],
)  # fmt: skip
def test_repository_arns_are_in_the_registrys_partition(uri: str, arn: str) -> None:
    assert ExporterImage("node", uri, hyperpod=False).repository_arn() == arn


# -- rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("exporter", ["node", "dcgm"])
def test_a_floating_or_unpinned_image_is_refused(exporter: str) -> None:
    key = f"{EXP}.{exporter}_image"
    assert_issue(errors_of({key: "quay.io/prometheus/node-exporter:latest"}), key, "is not pinned")
    assert_issue(
        errors_of({key: "node-exporter"}), key, "a container image pinned by tag or digest"
    )


def test_a_region_the_table_lacks_asks_for_the_image(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(facts.HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS, "us-west-2")
    errors = errors_of(ON)
    for exporter in ("node", "dcgm"):
        assert_issue(
            errors,
            f"{EXP}.{exporter}_image",
            f"not set, and HyperPod's hyperpod/{exporter}_exporter:",
        )
        assert_issue(
            errors,
            f"{EXP}.{exporter}_image",
            f"into a private Amazon ECR repository of us-west-2 and set {exporter}_image to it, "
            f"or switch exporters.{exporter} off",
        )
    # an image given, or the exporter off: nothing to ask
    assert errors_of({f"{EXP}.dcgm": True, f"{EXP}.dcgm_image": MIRROR}) == []
    assert errors_of({f"{EXP}.efa": True}) == []


def test_a_closed_network_runs_hyperpods_images() -> None:
    """Issue 20: the Ubuntu package of the node exporter was an error here; HyperPod's images
    come through the closed network's ECR endpoints."""
    assert errors_of({**CLOSED, **ON}) == []
    assert errors_of({**CLOSED, **ON, f"{EXP}.dcgm_image": MIRROR}) == []


@pytest.mark.parametrize(
    ("image", "where"),
    [
        (NVCR, "reaches no image in nvcr.io"),
        ("public.ecr.aws/bitnami/node-exporter:1.9.1", "reaches no image in public.ecr.aws"),
        (
            "111122223333.dkr.ecr.eu-west-1.amazonaws.com/mirror/node-exporter:1.9.1",
            "reaches no image in Amazon ECR of eu-west-1",
        ),
    ],
)
def test_a_closed_network_refuses_images_outside_its_regions_ecr(image: str, where: str) -> None:
    for exporter in ("node", "dcgm"):
        key = f"{EXP}.{exporter}_image"
        errors = errors_of({**CLOSED, **ON, key: image})
        assert_issue(errors, key, f"a closed network (network.closed_network: true) {where}")
        assert_issue(errors, key, f"copy {image} into a private Amazon ECR repository of us-west-2")
        assert len(errors) == 1, errors


def test_an_open_network_takes_any_pinned_image() -> None:
    assert errors_of({**ON, f"{EXP}.dcgm_image": NVCR}) == []


def test_dcgm_without_gpu_groups_stays_a_warning() -> None:
    changes = {f"{EXP}.dcgm": True, "cluster.instance_groups[2].instance_type": "ml.c5.18xlarge"}
    issues = issues_of(changes)
    assert_issue(issues, f"{EXP}.dcgm", "no instance group has NVIDIA GPUs")
    assert [i.severity for i in issues if i.path.startswith(EXP)] == ["warning"]


# -- settings.json -----------------------------------------------------------------------------


def test_the_node_gets_the_resolved_images_their_registry_and_login_region() -> None:
    exporters = node_settings(config_of(ON))["node_setup"]["exporters"]
    assert exporters == {
        "node": True,
        "dcgm": True,
        "efa": False,
        "node_port": 9100,
        "dcgm_port": 9400,
        "efa_port": 9109,
        "node_image": f"{HYPERPOD}/hyperpod/node_exporter:v1.9.1",
        "node_registry": HYPERPOD,
        "node_ecr_region": "us-west-2",
        "dcgm_image": f"{HYPERPOD}/hyperpod/dcgm_exporter:4.1.1-4.0.4-ubi9",
        "dcgm_registry": HYPERPOD,
        "dcgm_ecr_region": "us-west-2",
    }


def test_another_registry_needs_no_login_and_an_exporter_off_no_image() -> None:
    exporters = node_settings(config_of({f"{EXP}.dcgm": True, f"{EXP}.dcgm_image": NVCR}))[
        "node_setup"
    ]["exporters"]
    assert exporters["dcgm_image"] == NVCR
    assert exporters["dcgm_registry"] == "nvcr.io"
    assert "dcgm_ecr_region" not in exporters
    assert not [k for k in exporters if k.startswith("node_") and k != "node_port"]

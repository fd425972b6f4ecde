"""Preflight of the exporters' images (issue 20): each image the nodes will pull exists where the
config says (ecr:BatchGetImage, the call a pull makes). It settles the registry table's
assumption for regions other than us-east-1 and us-west-2: HyperPod's image missing there fails
with the copy to make."""

from __future__ import annotations

from typing import Any

from ops_testkit import (
    ACCOUNT,
    ANY_MEDIA_TYPES,
    PROJECT_ROOT,
    StubbedAws,
    by_name,
    environment,
    healthy_account,
)

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.node_setup import exporter_images
from hyperpod_ops.aws import READ_ONLY_ACTIONS
from hyperpod_ops.exporter_images import check_exporter_images
from hyperpod_ops.preflight import run_preflight

EXP = "cluster.node_setup.exporters"
BOTH = {f"{EXP}.node": True, f"{EXP}.dcgm": True}
HYPERPOD = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
NODE_IMAGE = f"{HYPERPOD}/hyperpod/node_exporter:v1.9.1"


def batch_get_image(aws: StubbedAws, registry: str, repository: str, image_id: dict[str, str],
                    *, found: bool = True, code: str = "ImageNotFound") -> None:  # fmt: skip
    """Queue BatchGetImage of one image, as ECR answers it."""
    answer: dict[str, Any] = (
        {"images": [{"imageId": image_id, "imageManifest": "{}"}], "failures": []}
        if found
        else {"images": [], "failures": [{"imageId": image_id, "failureCode": code,
                                          "failureReason": "Requested image not found"}]}
    )  # fmt: skip
    params = {
        "registryId": registry,
        "repositoryName": repository,
        "imageIds": [image_id],
        "acceptedMediaTypes": ANY_MEDIA_TYPES,
    }
    aws.stub("ecr").add_response("batch_get_image", answer, params)


def exporter_answers(aws: StubbedAws, config: EnvironmentConfig, *, found: bool = True) -> None:
    """BatchGetImage of every exporter image ``config`` pulls."""
    for image in exporter_images(config):
        assert image.ecr_account is not None
        batch_get_image(aws, image.ecr_account, image.repository, image.reference, found=found)


def test_hyperpods_images_exist_in_the_region(aws: StubbedAws) -> None:
    config = environment("minimal", BOTH)
    batch_get_image(aws, "602401143452", "hyperpod/node_exporter", {"imageTag": "v1.9.1"})
    batch_get_image(aws, "602401143452", "hyperpod/dcgm_exporter", {"imageTag": "4.1.1-4.0.4-ubi9"})
    checks = by_name(check_exporter_images(config, aws("ecr")))
    assert list(checks) == ["exporter image node", "exporter image dcgm"]
    assert checks["exporter image node"].outcome == "pass"
    assert checks["exporter image node"].detail == f"{NODE_IMAGE} exists"


def test_hyperpods_image_missing_in_a_region_fails_with_the_copy_to_make() -> None:
    """The table's assumed account for a region other than us-east-1/us-west-2 is wrong there."""
    aws = StubbedAws("eu-south-1")
    config = environment(
        "minimal",
        {"region": "eu-south-1", "network.availability_zone_id": "eus1-az1", f"{EXP}.node": True},
    )
    batch_get_image(aws, "590381155156", "hyperpod/node_exporter", {"imageTag": "v1.9.1"},
                    found=False, code="RepositoryNotFound")  # fmt: skip
    # nor in the registry AWS's own install scripts use in every region
    batch_get_image(aws, "602401143452", "hyperpod/node_exporter", {"imageTag": "v1.9.1"},
                    found=False, code="RepositoryNotFound")  # fmt: skip
    (check,) = check_exporter_images(config, aws("ecr"))
    aws.verify()
    assert check.failed
    assert check.detail == (
        "HyperPod's image 590381155156.dkr.ecr.eu-south-1.amazonaws.com/hyperpod/node_exporter:"
        "v1.9.1 is not in the registry the app assumes for eu-south-1 (RepositoryNotFound): the "
        "nodes could not pull it"
    )
    assert check.fix == (
        f"copy HyperPod's image of us-west-2 ({NODE_IMAGE}) into an Amazon ECR repository of "
        "your account in eu-south-1 (docker pull, docker tag, docker push) and set "
        "cluster.node_setup.exporters.node_image to the copy, or switch "
        "cluster.node_setup.exporters.node off"
    )


def test_hyperpods_image_found_where_aws_scripts_pull_it_names_that_registry() -> None:
    """awslabs/awsome-distributed-ai@95b939cdc5b24ded03a70da21533964f9354b731
    1.architectures/5.sagemaker-hyperpod/Extensions/observability/install_node_exporter.sh:
    ECR_ACCOUNT_ID=602401143452 in every region; the check settles the table's assumption."""
    aws = StubbedAws("eu-south-1")
    config = environment(
        "minimal",
        {"region": "eu-south-1", "network.availability_zone_id": "eus1-az1", f"{EXP}.node": True},
    )
    batch_get_image(aws, "590381155156", "hyperpod/node_exporter", {"imageTag": "v1.9.1"},
                    found=False, code="RepositoryNotFound")  # fmt: skip
    batch_get_image(aws, "602401143452", "hyperpod/node_exporter", {"imageTag": "v1.9.1"})
    (check,) = check_exporter_images(config, aws("ecr"))
    aws.verify()
    assert check.failed
    assert check.detail.endswith(
        "it is in 602401143452's registry of eu-south-1, where AWS's own install scripts pull it"
    )
    assert check.fix == (
        "set cluster.node_setup.exporters.node_image to 602401143452.dkr.ecr.eu-south-1."
        "amazonaws.com/hyperpod/node_exporter:v1.9.1"
    )


def test_a_configured_image_missing_fails_naming_its_key(aws: StubbedAws) -> None:
    mirror = f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/mirror/dcgm@sha256:" + "b" * 64
    config = environment("minimal", {f"{EXP}.dcgm": True, f"{EXP}.dcgm_image": mirror})
    aws.error("ecr", "batch_get_image", "RepositoryNotFoundException",
              {"registryId": ACCOUNT, "repositoryName": "mirror/dcgm",
               "imageIds": [{"imageDigest": "sha256:" + "b" * 64}],
               "acceptedMediaTypes": ANY_MEDIA_TYPES})  # fmt: skip
    (check,) = check_exporter_images(config, aws("ecr"))
    assert check.failed
    assert check.detail == (
        f"{mirror} (cluster.node_setup.exporters.dcgm_image) cannot be pulled (RepositoryNotFound)"
    )
    assert check.fix and check.fix.startswith("copy the image into an Amazon ECR repository")


def test_what_cannot_be_told_is_skipped(aws: StubbedAws) -> None:
    config = environment("minimal", {f"{EXP}.node": True})
    aws.stub("ecr").add_client_error("batch_get_image", "AccessDeniedException", "no")
    (check,) = check_exporter_images(config, aws("ecr"))
    assert check.outcome == "skip" and "AccessDeniedException" in check.detail
    batch_get_image(aws, "602401143452", "hyperpod/node_exporter", {"imageTag": "v1.9.1"},
                    found=False, code="UpstreamUnavailable")  # fmt: skip
    (check,) = check_exporter_images(config, aws("ecr"))
    assert check.outcome == "skip" and "UpstreamUnavailable" in check.detail


def test_nothing_to_check_without_an_ecr_image_of_the_region(aws: StubbedAws) -> None:
    (check,) = check_exporter_images(environment("minimal"), aws("ecr"))
    assert check.outcome == "skip" and check.name == "exporter images"
    (check,) = check_exporter_images(environment("minimal", {f"{EXP}.efa": True}), aws("ecr"))
    assert check.outcome == "skip"
    nvcr = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
    config = environment("minimal", {f"{EXP}.dcgm": True, f"{EXP}.dcgm_image": nvcr})
    (check,) = check_exporter_images(config, aws("ecr"))
    assert check.outcome == "skip" and "outside Amazon ECR" in check.detail
    other = f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/m/node:1"
    config = environment("minimal", {f"{EXP}.node": True, f"{EXP}.node_image": other})
    (check,) = check_exporter_images(config, aws("ecr"))
    assert check.outcome == "skip" and "another region's registry" in check.detail
    (check,) = check_exporter_images(environment("eks-minimal"), aws("ecr"))
    assert check.outcome == "skip"


def test_preflight_runs_it_with_read_only_calls(aws: StubbedAws) -> None:
    config = environment("minimal", BOTH)
    healthy_account(aws, config)
    exporter_answers(aws, config)
    checks = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))
    names = list(checks)
    assert names.index("exporter image node") == names.index("health agent image") + 1
    assert checks["exporter image dcgm"].outcome == "pass"
    assert not [c for c in checks.values() if c.failed]
    assert aws.called <= set(READ_ONLY_ACTIONS)

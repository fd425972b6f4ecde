"""Preflight: the exporters' images exist where the nodes will pull them from.

HyperPod's exporter images are in an AWS-owned Amazon ECR registry of each region; the facts
table takes that registry's account from AWS's own output for us-east-1 and us-west-2 and
assumes, for the other regions, the account of the region's EKS add-on registry. AWS's own
install scripts, though, pull from 602401143452 in every region (awslabs/awsome-distributed-ai
@95b939cd ``1.architectures/5.sagemaker-hyperpod/Extensions/observability/install_*_exporter.sh``:
``ECR_ACCOUNT_ID=602401143452``, ``$ECR_ACCOUNT_ID.dkr.ecr.$REGION.amazonaws.com``; read
2026-11-27). This check settles it for the config's region before a deploy
(``ecr:BatchGetImage``, the call a pull makes): when HyperPod's image is not in the assumed
registry, it also asks 602401143452's registry of the region and, when the image is there,
says to name that one. It checks a configured private image the same way: a node that cannot
pull fails.
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.node_setup import ExporterImage, exporter_images
from hyperpod_cdk.facts import ecr_registry, hyperpod_exporter_image
from hyperpod_ops.aws import describe_error, error_code
from hyperpod_ops.check import Check, failed, passed, skipped
from hyperpod_ops.shared_cluster import IMAGE_MEDIA_TYPES

NAME = "exporter images"
# BatchGetImage failure codes that say the image is not there (others: cannot tell)
_NOT_THERE = ("ImageNotFound", "RepositoryNotFound", "InvalidImageTag", "InvalidImageDigest")
_ACCESS_DENIED = ("AccessDeniedException", "AccessDenied")
_KEY = "cluster.node_setup.exporters"
#: the registry account AWS's own install scripts use in every region (see the module docstring)
AWS_SCRIPTS_ACCOUNT = "602401143452"


def check_exporter_images(config: EnvironmentConfig, ecr: Any) -> list[Check]:
    """One check per exporter image the nodes will pull (``exporter image node``, ...), or one
    skip when none is."""
    if not config.is_slurm:
        return [skipped(NAME, "eks orchestrator: the exporters run on Slurm nodes only")]
    images = exporter_images(config)
    if not images:
        return [skipped(NAME, f"no exporter that pulls an image is on ({_KEY}.node, .dcgm)")]
    return [_check_image(config, ecr, image) for image in images]


def _check_image(config: EnvironmentConfig, ecr: Any, image: ExporterImage) -> Check:
    name = f"exporter image {image.exporter}"
    if image.ecr_account is None:
        return skipped(name, f"cannot check a registry outside Amazon ECR from here ({image.uri})")
    if image.ecr_region != config.region:
        return skipped(name, f"cannot check {image.uri} from here: another region's registry")
    try:
        answer = _batch_get_image(ecr, image.ecr_account, image)
    except _CannotTell as exc:
        return skipped(name, f"cannot tell whether {image.uri} exists: {exc}")
    if answer.get("images"):
        return passed(name, f"{image.uri} exists")
    failures = answer.get("failures") or []
    codes = sorted({str(f.get("failureCode")) for f in failures})
    if codes and not set(codes) & set(_NOT_THERE):
        reasons = "; ".join(f"{f.get('failureCode')}: {f.get('failureReason')}" for f in failures)
        return skipped(name, f"cannot tell whether {image.uri} exists ({reasons})")
    key = f"{_KEY}.{image.exporter}_image"
    if image.hyperpod:
        detail = (
            f"HyperPod's image {image.uri} is not in the registry the app assumes for "
            f"{config.region} ({', '.join(codes) or 'ImageNotFound'}): the nodes could not pull it"
        )
    else:
        detail = f"{image.uri} ({key}) cannot be pulled ({', '.join(codes) or 'ImageNotFound'})"
    if image.hyperpod and image.ecr_account != AWS_SCRIPTS_ACCOUNT:
        other = f"{ecr_registry(AWS_SCRIPTS_ACCOUNT, config.region)}/{image.uri.split('/', 1)[1]}"
        try:
            found = _batch_get_image(ecr, AWS_SCRIPTS_ACCOUNT, image).get("images")
        except _CannotTell:
            found = None
        if found:
            return failed(
                name,
                f"{detail}; it is in {AWS_SCRIPTS_ACCOUNT}'s registry of {config.region}, where "
                "AWS's own install scripts pull it",
                f"set {key} to {other}",
            )
    source = "the image"
    if image.hyperpod:
        source = f"HyperPod's image of us-west-2 ({hyperpod_exporter_image(image.exporter, 'us-west-2')})"
    fix = (
        f"copy {source} into an Amazon ECR repository of your account in {config.region} "
        f"(docker pull, docker tag, docker push) and set {key} to the copy, or switch "
        f"{_KEY}.{image.exporter} off"
    )
    return failed(name, detail, fix)


class _CannotTell(Exception):
    """ECR did not say whether the image is there (access denied)."""


def _batch_get_image(ecr: Any, account: str | None, image: ExporterImage) -> dict[str, Any]:
    """BatchGetImage of ``image``'s repository and reference in ``account``'s registry; a
    missing repository answers as a failure, as a missing image does.

    :raises _CannotTell: access denied (the message says by whom).
    """
    try:
        answer: dict[str, Any] = ecr.batch_get_image(
            registryId=account,
            repositoryName=image.repository,
            imageIds=[image.reference],
            acceptedMediaTypes=list(IMAGE_MEDIA_TYPES),
        )
    except Exception as exc:
        code = error_code(exc)
        if code in _ACCESS_DENIED:
            raise _CannotTell(describe_error(exc, [ecr])) from exc
        if code != "RepositoryNotFoundException":
            raise
        return {"images": [], "failures": [{"failureCode": "RepositoryNotFound"}]}
    return answer

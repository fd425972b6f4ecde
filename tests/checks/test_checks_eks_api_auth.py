"""HyperPod-EksApiAuth: an EKS cluster of the app uses AuthenticationMode API."""

from __future__ import annotations

import pytest
from checks_testkit import COMPLIANT, NON_COMPLIANT, NOT_APPLICABLE
from eks_testkit import eks_cluster

from hyperpod_cdk.compliance import AppModel
from hyperpod_cdk.compliance.rules import EKS_API_AUTH


def test_api_mode_complies() -> None:
    checked, cluster = eks_cluster()
    assert checked.verdict(EKS_API_AUTH, cluster) == COMPLIANT
    assert not checked.failed


@pytest.mark.parametrize(
    "access",
    [
        pytest.param({"AuthenticationMode": "API_AND_CONFIG_MAP"}, id="also-config-map"),
        pytest.param({"AuthenticationMode": "CONFIG_MAP"}, id="config-map"),
        pytest.param(None, id="default-config-map"),
    ],
)
def test_other_modes_are_a_finding(access: dict[str, str] | None) -> None:
    checked, cluster = eks_cluster(AccessConfig=access)
    assert checked.verdict(EKS_API_AUTH, cluster) == NON_COMPLIANT
    assert checked.found(EKS_API_AUTH, cluster)


def test_other_resources_are_not_applicable() -> None:
    model = AppModel.from_templates({"s": {"Resources": {"B": {"Type": "AWS::S3::Bucket"}}}})
    bucket = model.resource("<memory>/s.template.json", "B")
    assert bucket is not None
    assert EKS_API_AUTH(bucket) == NOT_APPLICABLE

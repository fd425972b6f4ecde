"""HyperPod-EksPrivateEndpoint: the API endpoint of an EKS cluster of the app is private only
(its own rule id, so that the app can acknowledge it where the config asks for public access)."""

from __future__ import annotations

from typing import Any

import pytest
from checks_testkit import COMPLIANT, NON_COMPLIANT
from eks_testkit import eks_cluster

from hyperpod_cdk.compliance.rules import EKS_API_AUTH, EKS_LOGGING, EKS_PRIVATE_ENDPOINT

SUBNETS = {"SubnetIds": ["subnet-1", "subnet-2"]}


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param({"EndpointPrivateAccess": True, "EndpointPublicAccess": False}, id="booleans"),
        pytest.param(
            {"EndpointPrivateAccess": "true", "EndpointPublicAccess": "false"}, id="strings"
        ),
    ],
)
def test_a_private_endpoint_complies(flags: dict[str, Any]) -> None:
    checked, cluster = eks_cluster(ResourcesVpcConfig={**SUBNETS, **flags})
    assert checked.verdict(EKS_PRIVATE_ENDPOINT, cluster) == COMPLIANT
    assert not checked.failed


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param({}, id="cloudformation-defaults-public"),
        pytest.param({"EndpointPrivateAccess": True}, id="public-and-private"),
        pytest.param({"EndpointPrivateAccess": False, "EndpointPublicAccess": True}, id="public"),
    ],
)
def test_a_public_endpoint_is_a_finding_of_its_own(flags: dict[str, Any]) -> None:
    checked, cluster = eks_cluster(ResourcesVpcConfig={**SUBNETS, **flags})
    assert checked.verdict(EKS_PRIVATE_ENDPOINT, cluster) == NON_COMPLIANT
    assert checked.found(EKS_PRIVATE_ENDPOINT, cluster)
    # the rest of the cluster stays compliant: acknowledging the endpoint hides nothing else
    assert checked.verdict(EKS_API_AUTH, cluster) == COMPLIANT
    assert checked.verdict(EKS_LOGGING, cluster) == COMPLIANT

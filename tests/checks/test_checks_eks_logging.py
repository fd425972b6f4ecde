"""HyperPod-EksLogging: an EKS cluster of the app sends the api, audit and authenticator logs."""

from __future__ import annotations

import pytest
from checks_testkit import COMPLIANT, NON_COMPLIANT
from eks_testkit import AUDIT_LOGS, eks_cluster

from hyperpod_cdk.compliance.rules import EKS_LOGGING


@pytest.mark.parametrize(
    "types",
    [
        pytest.param(AUDIT_LOGS, id="the-three"),
        pytest.param(
            [*AUDIT_LOGS, {"Type": "controllerManager"}, {"Type": "scheduler"}], id="all-five"
        ),
    ],
)
def test_audit_logs_comply(types: list[dict[str, str]]) -> None:
    checked, cluster = eks_cluster(Logging={"ClusterLogging": {"EnabledTypes": types}})
    assert checked.verdict(EKS_LOGGING, cluster) == COMPLIANT
    assert not checked.failed


@pytest.mark.parametrize(
    "logging",
    [
        pytest.param(None, id="off"),
        pytest.param({"ClusterLogging": {"EnabledTypes": AUDIT_LOGS[:2]}}, id="no-authenticator"),
        pytest.param(
            {"ClusterLogging": {"EnabledTypes": [{"Type": "scheduler"}]}}, id="scheduler-only"
        ),
    ],
)
def test_missing_audit_logs_are_a_finding(logging: dict[str, object] | None) -> None:
    checked, cluster = eks_cluster(Logging=logging)
    assert checked.verdict(EKS_LOGGING, cluster) == NON_COMPLIANT
    assert checked.found(EKS_LOGGING, cluster)

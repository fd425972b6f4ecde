"""An ``AWS::EKS::Cluster`` of raw properties, for the EKS rule tests."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from checks_testkit import Checked, check, new_app, resource, stack

PRIVATE = {"EndpointPrivateAccess": True, "EndpointPublicAccess": False}
AUDIT_LOGS = [{"Type": "api"}, {"Type": "audit"}, {"Type": "authenticator"}]


def eks_cluster(**overrides: Any) -> tuple[Checked, cdk.CfnResource]:
    """A compliant EKS cluster, with ``overrides`` of its top-level properties (None removes one)."""
    properties: dict[str, Any] = {
        "RoleArn": "arn:aws:iam::111122223333:role/eks",
        "AccessConfig": {"AuthenticationMode": "API"},
        "ResourcesVpcConfig": {"SubnetIds": ["subnet-1", "subnet-2"], **PRIVATE},
        "Logging": {"ClusterLogging": {"EnabledTypes": AUDIT_LOGS}},
    }
    for key, value in overrides.items():
        if value is None:
            properties.pop(key)
        else:
            properties[key] = value
    app = new_app()
    cluster = resource(stack(app, "eks"), "Cluster", "AWS::EKS::Cluster", properties)
    return check(app), cluster

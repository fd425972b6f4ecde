"""HyperPod-EksPrivateEndpoint: the Kubernetes API of an EKS cluster of the app is private.

The HyperPod nodes, the kubectl handler and the add-ons all reach the API server from inside
the VPC; a public endpoint only adds an attack surface. CloudFormation's defaults are a
*public* endpoint and no private one, so both ``EndpointPrivateAccess: true`` and
``EndpointPublicAccess: false`` must be set (EKS user guide, "Cluster API server endpoint").

A config may choose ``eks.endpoint_access: public_and_private`` or ``public`` (with
``public_access_cidrs``); the app then acknowledges this rule on the cluster, which is why the
endpoint has a rule id of its own. The rule looks at each ``AWS::EKS::Cluster`` of the app.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.model import Resource
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, HyperPodRule

EKS_CLUSTER = "AWS::EKS::Cluster"


def _flag(value: object, default: bool) -> bool | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).lower())


def check(cluster: Resource) -> NagRuleCompliance:
    config = cluster.prop("ResourcesVpcConfig")
    private = _flag(config.get("EndpointPrivateAccess").literal, default=False)
    public = _flag(config.get("EndpointPublicAccess").literal, default=True)
    return COMPLIANT if private is True and public is False else NON_COMPLIANT


RULE = HyperPodRule(
    name="EksPrivateEndpoint",
    info="The EKS cluster's API endpoint is not private only (EndpointPrivateAccess true, "
    "EndpointPublicAccess false).",
    explanation="Everything HyperPod needs reaches the Kubernetes API from inside the VPC; a "
    "public endpoint is acknowledged only where the config asks for it (eks.endpoint_access).",
    resource_types=frozenset({EKS_CLUSTER}),
    check=check,
)

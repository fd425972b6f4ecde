"""HyperPod-EksApiAuth: an EKS cluster of the app authenticates with access entries only (``API``).

HyperPod creates EKS access entries for its service-linked role and the execution role, so the
cluster must accept them: ``API`` or ``API_AND_CONFIG_MAP``; CloudFormation's default,
``CONFIG_MAP``, is rejected (SageMaker developer guide, "sagemaker-hyperpod-eks-prerequisites").
A cluster the app creates uses ``API`` alone: the ``aws-auth`` ConfigMap
is a second, unaudited way to grant cluster access.

The rule looks at each ``AWS::EKS::Cluster`` of the app; an adopted cluster is not in the app.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.model import Resource
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, HyperPodRule

EKS_CLUSTER = "AWS::EKS::Cluster"


def check(cluster: Resource) -> NagRuleCompliance:
    mode = cluster.prop("AccessConfig", "AuthenticationMode").literal
    return COMPLIANT if mode == "API" else NON_COMPLIANT


RULE = HyperPodRule(
    name="EksApiAuth",
    info="The EKS cluster does not use AccessConfig.AuthenticationMode API.",
    explanation="HyperPod grants its roles cluster access through EKS access entries, which "
    "the default CONFIG_MAP mode does not accept; API alone leaves no aws-auth ConfigMap path.",
    resource_types=frozenset({EKS_CLUSTER}),
    check=check,
)

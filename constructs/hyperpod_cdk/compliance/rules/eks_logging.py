"""HyperPod-EksLogging: an EKS cluster of the app sends its security-relevant control-plane logs.

EKS control-plane logging is off unless enabled per log type. The rule requires the three
types that answer "who did what to the cluster": ``api`` (requests to the API server),
``audit`` (the Kubernetes audit trail) and ``authenticator`` (which IAM principal became which
Kubernetes identity, i.e. how HyperPod's access entries are used). ``controllerManager`` and
``scheduler`` help debugging, not auditing: the config turns them on by default
(``eks.logging``), the rule does not require them. (EKS user guide, "Send control plane logs
to CloudWatch Logs"; cdk-nag's AwsSolutions-EKS2 asks for all five, but only for the
``aws_eks`` v1 construct.)

The rule looks at each ``AWS::EKS::Cluster`` of the app.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.model import Resource
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, HyperPodRule

EKS_CLUSTER = "AWS::EKS::Cluster"
REQUIRED_LOG_TYPES = frozenset({"api", "audit", "authenticator"})


def enabled_log_types(cluster: Resource) -> set[str]:
    types = cluster.prop("Logging", "ClusterLogging", "EnabledTypes").items() or []
    return {t for t in (entry.get("Type").literal for entry in types) if isinstance(t, str)}


def check(cluster: Resource) -> NagRuleCompliance:
    return COMPLIANT if enabled_log_types(cluster) >= REQUIRED_LOG_TYPES else NON_COMPLIANT


RULE = HyperPodRule(
    name="EksLogging",
    info="The EKS cluster does not send the api, audit and authenticator control-plane logs.",
    explanation="Without the api, audit and authenticator logs nobody can tell who changed the "
    "cluster or which IAM principal acted as which Kubernetes user.",
    resource_types=frozenset({EKS_CLUSTER}),
    check=check,
)

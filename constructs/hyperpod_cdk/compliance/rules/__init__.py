"""The rules of the HyperPod pack, one module each (cdk-nag's layout: ``src/rules/<service>/``).

Each module has a docstring saying what it checks and why, a ``check(resource)`` returning
``NagRuleCompliance`` and a ``RULE`` (:class:`hyperpod_cdk.compliance.rule.HyperPodRule`).
"""

from __future__ import annotations

from hyperpod_cdk.compliance.rule import HyperPodRule
from hyperpod_cdk.compliance.rules import (
    data_retained,
    dra_no_overlap,
    efa_self_rules,
    eks_api_auth,
    eks_logging,
    eks_private_endpoint,
    fsx_cluster_az,
    lifecycle_readable,
)

EFA_SELF_RULES = efa_self_rules.RULE
FSX_CLUSTER_AZ = fsx_cluster_az.RULE
DATA_RETAINED = data_retained.RULE
LIFECYCLE_READABLE = lifecycle_readable.RULE
DRA_NO_OVERLAP = dra_no_overlap.RULE
EKS_API_AUTH = eks_api_auth.RULE
EKS_PRIVATE_ENDPOINT = eks_private_endpoint.RULE
EKS_LOGGING = eks_logging.RULE

RULES: tuple[HyperPodRule, ...] = (
    EFA_SELF_RULES,
    FSX_CLUSTER_AZ,
    DATA_RETAINED,
    LIFECYCLE_READABLE,
    DRA_NO_OVERLAP,
    EKS_API_AUTH,
    EKS_PRIVATE_ENDPOINT,
    EKS_LOGGING,
)

__all__ = [
    "DATA_RETAINED",
    "DRA_NO_OVERLAP",
    "EFA_SELF_RULES",
    "EKS_API_AUTH",
    "EKS_LOGGING",
    "EKS_PRIVATE_ENDPOINT",
    "FSX_CLUSTER_AZ",
    "LIFECYCLE_READABLE",
    "RULES",
]

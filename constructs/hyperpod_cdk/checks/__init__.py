"""The project's own compliance rules, in cdk-nag's shape (pack ``HyperPod``).

One module per rule under :mod:`hyperpod_cdk.checks.rules`, each returning compliant,
non-compliant or not applicable for one resource; :class:`HyperPodChecks` runs them as a
cdk-nag ``NagPack`` over the synthesized templates of the whole App, following cross-stack
references. ``hyperpod_cdk.nag.register_compliance_packs`` always registers it.

Rule ids (acknowledge them like any cdk-nag finding):

- ``HyperPod-EfaSelfRules``: node security groups allow all traffic from and to themselves
- ``HyperPod-FsxClusterAz``: FSx sits in the HyperPod cluster's AZ
- ``HyperPod-DataRetained``: FSx and data buckets are retained on deletion and replacement
- ``HyperPod-LifecycleReadable``: the execution role can read the lifecycle scripts
- ``HyperPod-DraNoOverlap``: data repository associations do not overlap
- ``HyperPod-EksApiAuth``: EKS authentication mode API
- ``HyperPod-EksPrivateEndpoint``: EKS API endpoint private only
- ``HyperPod-EksLogging``: EKS api, audit and authenticator logs on
"""

from __future__ import annotations

from hyperpod_cdk.checks.model import AppModel, Ref, Resource, Value
from hyperpod_cdk.checks.pack import HyperPodChecks
from hyperpod_cdk.checks.rule import PACK_NAME, HyperPodRule
from hyperpod_cdk.checks.rules import RULES

__all__ = [
    "PACK_NAME",
    "RULES",
    "AppModel",
    "HyperPodChecks",
    "HyperPodRule",
    "Ref",
    "Resource",
    "Value",
]

"""Compliance: every cdk-nag pack, acknowledgment and checkov skip of the product, in one place.

- :mod:`hyperpod_cdk.compliance.nag`: registers the packs on an App (cdk-nag 3
  ``Validations``), ``acknowledge`` and the granular-id helpers.
- :mod:`hyperpod_cdk.compliance.packs`: acknowledgments under the NIST 800-53 R5, HIPAA Security
  and PCI DSS 3.2.1 packs (``acknowledge_controls``).
- :mod:`hyperpod_cdk.compliance.checkov_skips`: checkov skips written into template metadata.
- :mod:`hyperpod_cdk.compliance.provider_framework`: the findings of CDK's own provider framework.
- The project's own rules, in cdk-nag's shape (pack ``HyperPod``), below.

One module per rule under :mod:`hyperpod_cdk.compliance.rules`, each returning compliant,
non-compliant or not applicable for one resource; :class:`HyperPodChecks` runs them as a
cdk-nag ``NagPack`` over the synthesized templates of the whole App, following cross-stack
references. ``hyperpod_cdk.compliance.nag.register_compliance_packs`` always registers it.

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

from hyperpod_cdk.compliance.model import AppModel, Ref, Resource, Value
from hyperpod_cdk.compliance.pack import HyperPodChecks
from hyperpod_cdk.compliance.rule import PACK_NAME, HyperPodRule
from hyperpod_cdk.compliance.rules import RULES

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

"""What a HyperPod rule is: an id, the words of its finding, and a check of one resource."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cdk_nag import NagMessageLevel, NagRuleCompliance

from hyperpod_cdk.compliance.model import Resource

# The pack name prefixes every rule id (``HyperPod-EfaSelfRules``), as cdk-nag's own packs do.
PACK_NAME = "HyperPod"

COMPLIANT = NagRuleCompliance.COMPLIANT
NON_COMPLIANT = NagRuleCompliance.NON_COMPLIANT
NOT_APPLICABLE = NagRuleCompliance.NOT_APPLICABLE


@dataclass(frozen=True)
class HyperPodRule:
    """One rule of the pack, in cdk-nag's shape: a check returning compliant, non-compliant or
    not applicable for one resource.

    :param name: the rule id without the pack prefix (``EfaSelfRules``).
    :param info: why the rule was triggered (the finding's description in the report).
    :param explanation: why the rule exists (shown with ``verbose``).
    :param resource_types: the CloudFormation types the rule looks at; the pack only asks the
        rule about resources of these types, any other is not applicable.
    :param check: the rule itself; it sees the resource in its synthesized template, with the
        whole app around it.
    :param level: ERROR fails the synth (the default), WARN only reports.
    """

    name: str
    info: str
    explanation: str
    resource_types: frozenset[str]
    check: Callable[[Resource], NagRuleCompliance]
    level: NagMessageLevel = NagMessageLevel.ERROR

    @property
    def id(self) -> str:
        """The finding id, as reports show it and acknowledgments name it."""
        return f"{PACK_NAME}-{self.name}"

    def __call__(self, resource: Resource) -> NagRuleCompliance:
        if resource.type not in self.resource_types:
            return NOT_APPLICABLE
        return self.check(resource)

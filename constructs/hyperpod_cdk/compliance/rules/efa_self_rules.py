"""HyperPod-EfaSelfRules: every security group on the HyperPod nodes allows all traffic in from
itself and out to itself.

EFA traffic between nodes (and to an EFA-enabled FSx for Lustre file system) only flows when
each security group attached to the instances has an inbound all-traffic rule from itself and
an outbound all-traffic rule to itself; an allow-all egress to 0.0.0.0/0 does not count, and a
missing self egress rule on any one group fails the EFA health check. (EC2 user guide "Prepare
an EFA-enabled security group"; awslabs/awsome-distributed-ai PR #259 and #546.)

The rule looks at each ``AWS::EC2::SecurityGroup`` of the app that an
``AWS::SageMaker::Cluster`` puts on its nodes (``VpcConfig`` or an instance group's
``OverrideVpcConfig``), in any stack. The self rules may be inline or separate
``AWS::EC2::SecurityGroupIngress`` / ``AWS::EC2::SecurityGroupEgress`` resources (CDK makes
self rules separate resources). Groups given as literal ids come from outside the app: the
account preflight checks those.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.hyperpod import clusters, node_security_groups
from hyperpod_cdk.compliance.model import Resource, Value
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, NOT_APPLICABLE, HyperPodRule

SECURITY_GROUP = "AWS::EC2::SecurityGroup"
# a security group's Ref and its GroupId attribute are both the group id
_GROUP_ID = (None, "GroupId")


def on_hyperpod_nodes(group: Resource) -> bool:
    """True when a HyperPod cluster of the app attaches ``group`` to its nodes."""
    return any(
        value.refers_to(group, *_GROUP_ID)
        for cluster in clusters(group.assembly)
        for value in node_security_groups(cluster)
    )


def _all_traffic(rule: Value) -> bool:
    # -1 is every protocol (and every port); CloudFormation takes it as a string or a number
    return str(rule.get("IpProtocol").literal) == "-1"


def _has_self_rule(group: Resource, inline: str, resource_type: str, peer: str) -> bool:
    for rule in group.prop(inline).items() or []:
        if _all_traffic(rule) and rule.get(peer).refers_to(group, *_GROUP_ID):
            return True
    return any(
        rule.prop("GroupId").refers_to(group, *_GROUP_ID)
        and _all_traffic(rule.properties)
        and rule.prop(peer).refers_to(group, *_GROUP_ID)
        for rule in group.assembly.resources(resource_type)
    )


def check(group: Resource) -> NagRuleCompliance:
    if not on_hyperpod_nodes(group):
        return NOT_APPLICABLE
    ingress = _has_self_rule(
        group, "SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress", "SourceSecurityGroupId"
    )
    egress = _has_self_rule(
        group, "SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress", "DestinationSecurityGroupId"
    )
    return COMPLIANT if ingress and egress else NON_COMPLIANT


RULE = HyperPodRule(
    name="EfaSelfRules",
    info="A security group on the HyperPod nodes lacks an all-traffic (IpProtocol -1) ingress "
    "rule from itself or an all-traffic egress rule to itself.",
    explanation="EFA needs every security group on the instances to allow all traffic from and "
    "to the group itself; 0.0.0.0/0 egress does not count, and one group without the self "
    "egress rule fails the EFA health check of the nodes.",
    resource_types=frozenset({SECURITY_GROUP}),
    check=check,
)

"""The EFA security group every HyperPod node (and the file system) sits in."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.config.network import EgressRule

# FSx for Lustre user guide "File system access control with Amazon VPC":
# LNet uses TCP 988 and 1018-1023 between clients and file servers.
LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))


class EfaSecurityGroup(Construct):
    """A security group that satisfies the EFA rule, for nodes and FSx.

    EFA needs all traffic in from the group itself *and* out to the group
    itself; a 0.0.0.0/0 egress rule does not count (awsome-distributed-ai
    PR #259). CDK drops an explicit self egress rule when
    ``allow_all_outbound`` is on, so the group is created with it off and gets
    the egress the nodes need explicitly: HTTPS (AWS APIs through NAT or
    endpoints), HTTP (distribution package mirrors, unless ``closed_network``)
    and the Lustre ports (an adopted file system in another group).

    Make anything that needs these rules in place (the file system) depend on
    this construct: the rules are separate resources.

    To use an existing group instead, skip this construct and pass your
    ``ec2.ISecurityGroup`` to the other constructs; it must allow all traffic
    from and to itself (the ``HyperPod-EfaSelfRules`` check verifies a group of
    the app).

    :param vpc: the VPC of the HyperPod subnet (created or adopted).
    :param closed_network: no HTTP egress to the internet when True; False
        (HTTP allowed, for distribution package mirrors) when left out.
    :param node_egress: ``"default"`` (the rules above), ``"all"`` (every port everywhere, as
        AWS's console stacks; an explicit rule, so the group's own egress rule stays), or
        :class:`~hyperpod_cdk.config.models.EgressRule` s added to the default rules
        (``network.node_egress``).

    :ivar security_group: the group, to put on the nodes and the file system.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        closed_network: bool = False,
        node_egress: str | Sequence[EgressRule] = "default",
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "Group",
            vpc=vpc,
            allow_all_outbound=False,
            description="HyperPod nodes and FSx: all traffic within the group (EFA), egress for AWS APIs",
        )
        group = self.security_group
        group.add_ingress_rule(
            group, ec2.Port.all_traffic(), "EFA and Lustre: all traffic from this group"
        )
        self_ingress = next(
            child for child in group.node.children if isinstance(child, ec2.CfnSecurityGroupIngress)
        )
        acknowledge_controls(
            self_ingress,
            "EC2RestrictedCommonPorts",
            "EFA requires a group that allows all traffic from itself (EFA user guide, 'Prepare an "
            "EFA-enabled security group'); the source is this group only, never an address range.",
        )
        group.add_egress_rule(
            group, ec2.Port.all_traffic(), "EFA and Lustre: all traffic to this group"
        )
        if node_egress == "all":
            # an explicit rule, with allow_all_outbound kept off: turning it on would make CDK
            # drop the explicit rules, the group's own egress rule (EFA) included; CDK refuses an
            # all-traffic rule through add_egress_rule then, so it is the L1 resource
            everything = ec2.CfnSecurityGroupEgress(
                self,
                "AllEgress",
                group_id=group.security_group_id,
                ip_protocol="-1",
                cidr_ip="0.0.0.0/0",
                description="All egress (network.node_egress: all, as AWS's console stacks)",
            )
            skip_check(
                everything,
                "CKV_AWS_382",
                "The config asks for all egress from the nodes (network.node_egress: all), as "
                "AWS's console stacks have it; ingress stays limited to the group itself.",
            )
            return
        group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS APIs (NAT or endpoints)"
        )
        if not closed_network:
            group.add_egress_rule(
                ec2.Peer.any_ipv4(), ec2.Port.tcp(80), "HTTP to distribution package mirrors"
            )
        for port in LUSTRE_PORTS:
            group.add_egress_rule(
                ec2.Peer.any_ipv4(), port, "Lustre to a file system in another group"
            )
        for rule in [] if isinstance(node_egress, str) else node_egress:
            last = rule.to_port or rule.port
            if rule.protocol == "tcp":
                port = (
                    ec2.Port.tcp_range(rule.port, last)
                    if last != rule.port
                    else ec2.Port.tcp(rule.port)
                )
            else:
                port = (
                    ec2.Port.udp_range(rule.port, last)
                    if last != rule.port
                    else ec2.Port.udp(rule.port)
                )
            group.add_egress_rule(
                ec2.Peer.ipv4(str(rule.cidr)),
                port,
                rule.description
                or f"network.node_egress: {rule.protocol} {rule.port}"
                + (f"-{last}" if last != rule.port else "")
                + f" to {rule.cidr}",
            )

    def allow_egress_to(self, peer: ec2.ISecurityGroup, port: ec2.Port, description: str) -> None:
        """Let the nodes reach ``peer`` on ``port`` (e.g. the accounting database)."""
        self.security_group.add_egress_rule(peer, port, description)

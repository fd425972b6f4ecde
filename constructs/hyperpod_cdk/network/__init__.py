"""Network of a HyperPod environment: the VPC (created by AZ ID or adopted) and the EFA security group."""

from hyperpod_cdk.network.network import HyperPodNetwork, small_subnet_cidr
from hyperpod_cdk.network.security_group import LUSTRE_PORTS, EfaSecurityGroup

__all__ = ["LUSTRE_PORTS", "EfaSecurityGroup", "HyperPodNetwork", "small_subnet_cidr"]

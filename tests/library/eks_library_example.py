"""The smallest use of the library's EKS construct, as a platform team's app would write it; it
needs the library's `eks` extra (pip install '<the wheel>[eks]') for the kubectl layer.
tests/library/test_wheel.py runs it in a fresh virtual environment, with and without the extra."""

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from hyperpod_cdk import HyperPodEksCluster, recommended_context

app = cdk.App(context=recommended_context())
env = cdk.Environment(account="111122223333", region="us-west-2")
stack = cdk.Stack(app, "research-eks", env=env)
# the EKS control plane needs subnets in two AZs
vpc = ec2.Vpc(stack, "Vpc", availability_zones=["us-west-2a", "us-west-2b"], nat_gateways=1)
HyperPodEksCluster(stack, "Eks", vpc=vpc, subnets=vpc.private_subnets, kubernetes_version="1.35")
app.synth()

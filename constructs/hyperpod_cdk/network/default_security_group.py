"""Closing the default security group of a VPC the app creates."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from hyperpod_cdk.compliance.checkov_skips import (
    CUSTOM_RESOURCE_FAILURES,
    DEPLOY_TIME_ONLY,
    skip_check,
)

HANDLER_DIR = Path(__file__).parent / "restrict_default_sg"
RESOURCE_TYPE = "Custom::VpcRestrictDefaultSG"
# cdk-nag's VPCDefaultSecurityGroupClosed (NIST 800-53 R5, HIPAA, PCI DSS) looks for a child of
# this id and type next to the CfnVPC, as CDK's own ec2.Vpc makes it.
CONSTRUCT_ID = "RestrictDefaultSecurityGroupCustomResource"


def restrict_default_security_group(scope: Construct, vpc: ec2.CfnVPC) -> cdk.CustomResource:
    """Remove the default rules of ``vpc``'s default security group (in ``scope``, beside the VPC).

    Nothing the app creates uses the default group; closing it means an interface
    that someone creates later without a group gets no traffic, instead of all
    traffic within the group and out to anywhere. Deleting the resource restores
    the two default rules.
    """
    stack = cdk.Stack.of(scope)
    group_arn = stack.format_arn(
        service="ec2", resource="security-group", resource_name=vpc.attr_default_security_group
    )
    provider = cdk.CustomResourceProvider.get_or_create_provider(
        scope,
        "HyperPodRestrictDefaultSecurityGroup",
        code_directory=str(HANDLER_DIR),
        runtime=cdk.CustomResourceProviderRuntime.NODEJS_22_X,
        description="Closes the default security group of the HyperPod VPC",
        timeout=cdk.Duration.minutes(2),
        policy_statements=[
            {
                "Effect": "Allow",
                "Action": [
                    "ec2:AuthorizeSecurityGroupEgress",
                    "ec2:AuthorizeSecurityGroupIngress",
                    "ec2:RevokeSecurityGroupEgress",
                    "ec2:RevokeSecurityGroupIngress",
                ],
                "Resource": group_arn,
            }
        ],
    )
    handler = provider.node.find_child("Handler")
    assert isinstance(handler, cdk.CfnResource)
    what = "The handler that closes the default security group"
    for check_id, comment in (
        ("CKV_AWS_115", f"{what}: {DEPLOY_TIME_ONLY}."),
        ("CKV_AWS_116", f"{what}: {CUSTOM_RESOURCE_FAILURES}."),
        (
            "CKV_AWS_117",
            f"{what} calls only the EC2 API on the VPC's default security group during deploys, "
            "and must work before the VPC has any endpoint or NAT; CustomResourceProvider "
            "functions run outside VPCs.",
        ),
    ):
        skip_check(handler, check_id, comment)
    return cdk.CustomResource(
        scope,
        CONSTRUCT_ID,
        service_token=provider.service_token,
        resource_type=RESOURCE_TYPE,
        properties={
            "DefaultSecurityGroupId": vpc.attr_default_security_group,
            "Account": stack.account,
        },
    )

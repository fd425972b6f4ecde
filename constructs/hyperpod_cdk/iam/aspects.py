"""Aspects that apply IAM settings to every role in a scope."""

from __future__ import annotations

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from constructs import IConstruct


@jsii.implements(cdk.IAspect)
class RolePath:
    """Sets the IAM path of every role in the scope, including the roles of CDK's own custom resources.

    ``cdk.Aspects.of(stack).add(RolePath("/ml-platform/"))``

    :param path: the IAM path, e.g. ``/ml-platform/`` (starts and ends with ``/``).
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, iam.CfnRole):
            node.path = self.path
        elif isinstance(node, cdk.CfnResource) and node.cfn_resource_type == "AWS::IAM::Role":
            node.add_property_override("Path", self.path)

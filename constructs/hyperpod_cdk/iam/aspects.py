"""Aspects that apply IAM settings to every role in a scope."""

from __future__ import annotations

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from constructs import IConstruct


@jsii.implements(cdk.IAspect)
class RolePath:
    """Sets the IAM path of every role and customer managed policy in the scope, including the
    roles of CDK's own custom resources.

    The policies share the path so that a new path replaces them together with the roles: a
    policy in another stack that names a replaced role by a weak reference is re-created and
    reads the new role's name (a weak reference is read only when its resource changes).

    ``cdk.Aspects.of(stack).add(RolePath("/ml-platform/"))``

    :param path: the IAM path, e.g. ``/ml-platform/`` (starts and ends with ``/``).
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, (iam.CfnRole, iam.CfnManagedPolicy)):
            node.path = self.path
        elif isinstance(node, cdk.CfnResource) and node.cfn_resource_type in (
            "AWS::IAM::Role",
            "AWS::IAM::ManagedPolicy",
        ):
            node.add_property_override("Path", self.path)

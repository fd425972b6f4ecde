"""What every stack of an environment shares."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.iam.aspects import RolePath


def output(scope: Construct, name: str, value: str, description: str) -> None:
    """A CloudFormation output of the stack of ``scope``."""
    cdk.CfnOutput(scope, name, value=value, description=description)


class EnvironmentStack(cdk.Stack):
    """A stack of the environment: tags, role path and permissions boundary applied."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: EnvironmentConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        cdk.Tags.of(self).add("hyperpod-environment", config.name)
        for key, value in config.tags.items():
            cdk.Tags.of(self).add(key, value)
        if config.iam.permissions_boundary_arn:
            boundary = iam.ManagedPolicy.from_managed_policy_arn(
                self, "PermissionsBoundary", config.iam.permissions_boundary_arn
            )
            iam.PermissionsBoundary.of(self).apply(boundary)
        if config.iam.role_path != "/":
            cdk.Aspects.of(self).add(RolePath(config.iam.role_path))

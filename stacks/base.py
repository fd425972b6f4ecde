"""What every stack of an environment shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IValidation

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.iam import IamConfig
from hyperpod_cdk.config.observability import observability_settings
from hyperpod_cdk.iam.aspects import RolePath
from hyperpod_cdk.network import HyperPodNetwork
from hyperpod_cdk.observability.grafana import HyperPodGrafana
from hyperpod_cdk.observability.metrics import HyperPodMetrics


def output(scope: Construct, name: str, value: str, description: str) -> None:
    """A CloudFormation output of the stack of ``scope``."""
    cdk.CfnOutput(scope, name, value=value, description=description)


def metrics_outputs(
    scope: Construct, config: EnvironmentConfig, metrics: HyperPodMetrics, network: HyperPodNetwork
) -> HyperPodGrafana | None:
    """The workspace's outputs beside ``metrics`` and, with ``observability.grafana``, the Grafana
    workspace on it (its URL an output too); the same on both orchestrators."""
    output(scope, "PrometheusWorkspaceArn", metrics.workspace_arn,
           "Amazon Managed Prometheus workspace of the cluster's metrics")  # fmt: skip
    output(scope, "PrometheusEndpoint", metrics.prometheus_endpoint,
           "Its Prometheus query endpoint")  # fmt: skip
    settings = observability_settings(config)
    if settings is None or not settings.grafana:
        return None
    grafana = HyperPodGrafana(
        scope,
        "Grafana",
        name=config.name,
        orchestrator=config.orchestrator,
        prometheus_workspace_arn=metrics.workspace_arn,
        prometheus_endpoint=metrics.prometheus_endpoint,
        role_path=config.iam.role_path,
        network=network,
    )
    output(scope, "GrafanaUrl", grafana.url, "Amazon Managed Grafana (dashboards)")
    return grafana


def ready_parameter(scope: Construct, construct_id: str, value: str, description: str,
                    waits_for: list[Construct]) -> ssm.StringParameter:  # fmt: skip
    """A parameter holding ``value`` once everything in ``waits_for`` is created.

    A stack that reads the parameter's value (rather than ``value`` itself) waits for all of
    them in its template, not only through a stack barrier.
    """
    parameter = ssm.StringParameter(
        scope, construct_id, string_value=value, description=description
    )
    for construct in waits_for:
        parameter.node.add_dependency(construct)
    return parameter


def apply_account_settings(
    stack: cdk.Stack, tags: Mapping[str, str], iam_config: IamConfig
) -> None:
    """Tag ``stack`` and every resource in it, and give every role it creates the config's
    permissions boundary and role path (``iam``)."""
    for key, value in tags.items():
        cdk.Tags.of(stack).add(key, value)
    if iam_config.permissions_boundary_arn:
        boundary = iam.ManagedPolicy.from_managed_policy_arn(
            stack, "PermissionsBoundary", iam_config.permissions_boundary_arn
        )
        iam.PermissionsBoundary.of(stack).apply(boundary)
    if iam_config.role_path != "/":
        cdk.Aspects.of(stack).add(RolePath(iam_config.role_path))


# aws-cdk-lib writes the outputs its weak cross-stack references read (Fn::GetStackOutput) under
# this construct of the producing stack, as PublishOutput<hash>, without a description
_PUBLISHED_OUTPUTS = "Publish"
PUBLISHED_OUTPUT_DESCRIPTION = (
    "Plumbing: read by another stack of this environment (a cross-stack reference through "
    "Fn::GetStackOutput), not an output for people"
)


@jsii.implements(IValidation)
class _DescribePublishedOutputs:
    """Gives the outputs of the weak references a description, so that ``cdk deploy`` shows
    them as plumbing beside the real outputs.

    aws-cdk-lib creates them while it prepares the app for synthesis, after every aspect has
    run; validation runs after that and before the templates are written, so this is the one
    hook that still sees them. It changes only their description and reports no problem.
    """

    def __init__(self, stack: cdk.Stack) -> None:
        self._stack = stack

    def validate(self) -> list[str]:
        scope = self._stack.node.try_find_child(_PUBLISHED_OUTPUTS)
        for child in scope.node.children if scope is not None else ():
            if isinstance(child, cdk.CfnOutput) and not child.description:
                child.description = PUBLISHED_OUTPUT_DESCRIPTION
        return []


class EnvironmentStack(cdk.Stack):
    """A stack of the environment: tags, role path and permissions boundary applied."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: EnvironmentConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.node.add_validation(_DescribePublishedOutputs(self))
        apply_account_settings(
            self, {"hyperpod-environment": config.name, **config.tags}, config.iam
        )

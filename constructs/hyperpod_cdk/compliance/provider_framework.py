"""The cdk-nag findings and checkov skips of CDK's custom-resource provider framework.

``aws_cdk.custom_resources.Provider`` with an ``is_complete`` handler makes three framework
functions (onEvent, isComplete, onTimeout) and a waiter state machine, without one only onEvent;
no setting of ``Provider`` changes them. Every provider of this library (the node wait, task
governance, the observability extension, Grafana) answers their findings the same way, here,
with the reasons naming which provider it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from hyperpod_cdk.compliance.checkov_skips import (
    CUSTOM_RESOURCE_FAILURES,
    DEPLOY_TIME_ONLY,
    skip_check,
)
from hyperpod_cdk.compliance.nag import acknowledge, nag_ref
from hyperpod_cdk.compliance.packs import acknowledge_controls, acknowledge_framework_function

_BASIC_EXECUTION_NAME = "AWSLambdaBasicExecutionRole"
_VPC_ACCESS_NAME = "AWSLambdaVPCAccessExecutionRole"
_BASIC_EXECUTION = f"arn:<AWS::Partition>:iam::aws:policy/service-role/{_BASIC_EXECUTION_NAME}"


def handler_function(
    scope: Construct,
    construct_id: str,
    *,
    purpose: str,
    description: str,
    handler: str,
    code: lambda_.Code,
    runtime: lambda_.Runtime,
    timeout: cdk.Duration,
    role_path: str = "/",
    vpc: ec2.IVpc | None = None,
    subnets: Sequence[ec2.ISubnet] = (),
    security_groups: Sequence[ec2.ISecurityGroup] = (),
) -> lambda_.Function:
    """A provider's handler function with its own role (``<construct_id>Role``): the AWS managed
    basic execution policy (and the VPC access policy in a VPC), nothing else; the caller
    attaches what the handler calls. Role and function are described ``"<purpose>:
    <description>"``.
    """
    managed = [_BASIC_EXECUTION_NAME] + ([_VPC_ACCESS_NAME] if vpc is not None else [])
    role = iam.Role(
        scope,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{purpose}: {description}",
        managed_policies=[
            iam.ManagedPolicy.from_aws_managed_policy_name(f"service-role/{name}")
            for name in managed
        ],
        path=role_path,
    )
    return lambda_.Function(
        scope,
        construct_id,
        runtime=runtime,
        handler=handler,
        code=code,
        role=role,
        timeout=timeout,
        description=f"{purpose}: {description}",
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)) if subnets else None,
        security_groups=list(security_groups) or None,
    )


def framework_functions(provider: cr.Provider) -> list[lambda_.Function]:
    """The Lambda functions CDK's provider framework makes (onEvent, isComplete, onTimeout)."""
    return [
        child
        for child in provider.node.children
        if isinstance(child, lambda_.Function) and child.node.id.startswith("framework-")
    ]


def cfn_function(function: IConstruct) -> lambda_.CfnFunction:
    """The ``AWS::Lambda::Function`` of an L2 function."""
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    return cfn


def acknowledge_deploy_time_handler(function: lambda_.Function, what: str) -> None:
    """Answer the findings every deploy-time custom-resource handler of a provider shares: no
    reserved concurrency, no dead-letter queue, the AWS managed basic execution policy.

    :param what: the handler's name in the checkov comments, e.g. ``"The HyperPod node wait
        handler"``.
    """
    acknowledge_controls(
        function,
        "LambdaConcurrency",
        "A deploy-time custom-resource handler; reserved concurrency would take from the "
        "account's unreserved pool and fails the deploy in accounts at the minimum of 10.",
    )
    acknowledge_controls(
        function,
        "LambdaDLQ",
        "A deploy-time custom-resource handler: CloudFormation waits for its result and "
        "fails the stack operation on error, so a dead-letter queue would hold nothing.",
    )
    assert function.role is not None
    acknowledge(
        function.role,
        f"AwsSolutions-IAM4[Policy::{_BASIC_EXECUTION}]",
        "The AWS managed Lambda execution policy grants the handler only log writing; "
        "AWS keeps it current for the Lambda service.",
    )
    cfn = cfn_function(function)
    skip_check(cfn, "CKV_AWS_115", f"{what}: {DEPLOY_TIME_ONLY}.")
    skip_check(cfn, "CKV_AWS_116", f"{what}: {CUSTOM_RESOURCE_FAILURES}.")


def acknowledge_provider_framework(
    provider: cr.Provider,
    handlers: Sequence[lambda_.Function],
    *,
    name: str,
    outside: str,
    interval_seconds: int,
) -> None:
    """Answer the findings of ``provider``'s framework functions and waiter.

    :param handlers: the provider's own handlers (on_event, is_complete): the framework invokes
        every version of them.
    :param name: what the provider is, e.g. ``"node wait"`` (its handlers are "the <name>
        handler").
    :param outside: why the framework functions run outside the VPC.
    :param interval_seconds: the waiter's query interval (unused without ``is_complete``: such a
        provider has one framework function and no waiter).
    """
    frameworks = framework_functions(provider)
    what = f"CDK's provider framework function of the HyperPod {name}"
    # only a provider with an is_complete handler has the waiter
    waited = provider.node.try_find_child("waiter-state-machine") is not None
    for function in frameworks:
        # in_vpc=True: that LambdaInsideVPC reason is about S3 copies; this one's follows
        acknowledge_framework_function(function, in_vpc=True)
        acknowledge_controls(function, "LambdaInsideVPC", outside)
        acknowledge(
            function,
            f"AwsSolutions-IAM4[Policy::{_BASIC_EXECUTION}]",
            "CDK's provider framework function writes its logs with the AWS managed Lambda "
            "execution policy, which grants only log writing.",
        )
        for handler in handlers:
            acknowledge(
                function,
                f"AwsSolutions-IAM5[Resource::{nag_ref(cfn_function(handler), 'Arn')}:*]",
                f"CDK's provider framework invokes every version of the {name} handler "
                "function and nothing else (CDK custom-resource provider pattern).",
            )
        cfn = cfn_function(function)
        skip_check(cfn, "CKV_AWS_115", f"{what}: {DEPLOY_TIME_ONLY}.")
        skip_check(cfn, "CKV_AWS_116", f"{what}: {CUSTOM_RESOURCE_FAILURES}.")
        skip_check(cfn, "CKV_AWS_117", outside)
        skip_check(
            cfn,
            "CKV_AWS_173",
            f"{what}: its environment holds only the ARNs aws-cdk-lib writes (the handlers, "
            + ("the waiter state machine" if waited else "no waiter")
            + "), no secret; Lambda encrypts it at rest with an AWS managed key.",
        )
    if waited:
        _acknowledge_waiter(provider, frameworks, name, interval_seconds)


def _acknowledge_waiter(
    provider: cr.Provider, frameworks: Sequence[lambda_.Function], name: str, interval: int
) -> None:
    waiter = provider.node.find_child("waiter-state-machine")
    for function in frameworks:
        if function.node.id != "framework-onEvent":  # the only one the waiter does not run
            acknowledge(
                waiter,
                f"AwsSolutions-IAM5[Resource::{nag_ref(cfn_function(function), 'Arn')}:*]",
                "The provider framework's waiter state machine invokes every version of the "
                "framework's isComplete and onTimeout functions and nothing else.",
            )
    acknowledge(
        waiter,
        "AwsSolutions-SF1",
        "The provider framework's waiter has one task: the framework's isComplete function, "
        f"retried every {interval} seconds. Each attempt logs in that function's and the {name} "
        "handler's log groups, and Step Functions keeps the execution history. Logging ALL "
        "events would add a log group and, as the framework enables it, logs:* on every "
        "resource for the state machine's role, for nothing those logs lack.",
    )
    acknowledge(
        waiter,
        "AwsSolutions-SF2",
        "X-Ray traces of the provider framework's one-task waiter would show only the Lambda "
        "invocations its functions already log; aws-cdk-lib's Provider has no tracing setting.",
    )
    acknowledge_controls(
        waiter.node.find_child("Role").node.find_child("DefaultPolicy"),
        "IAMNoInlinePolicy",
        "CDK writes this inline policy for the provider framework's waiter state machine from "
        "its grants: it only invokes the framework's isComplete and onTimeout functions.",
    )

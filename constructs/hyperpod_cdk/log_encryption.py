"""Customer managed KMS encryption for every CloudWatch Logs log group of an environment.

CloudWatch Logs encrypts with a KMS key only when the key policy lets the regional
Logs service principal use it, limited by the ``aws:logs:arn`` encryption context
(CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using AWS KMS").
:class:`LogsKey` is such a key; :class:`EncryptLogGroups` is an aspect that puts it
on every log group below a scope that has no key yet, including the ones CDK makes
for its own framework functions (BucketDeployment, the kubectl handler).
"""

from __future__ import annotations

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct


class LogsKey(Construct):
    """A rotating KMS key that CloudWatch Logs of this account and region may use.

    To use an existing key instead, pass it (a ``kms.IKey``) where ``LogsKey.key``
    would go (``HyperPodNetwork(logs_key=...)``, :class:`EncryptLogGroups`).

    :param removal_policy: RETAIN (default) keeps the key when its stack is deleted, so the
        retained log groups stay readable; DESTROY schedules its deletion.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        self.key = kms.Key(
            self,
            "Key",
            description=f"CloudWatch Logs of {stack.stack_name}",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        log_groups = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name="*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsOfThisAccount",
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=[
                    "kms:Decrypt*",
                    "kms:Describe*",
                    "kms:Encrypt*",
                    "kms:GenerateDataKey*",
                    "kms:ReEncrypt*",
                ],
                resources=["*"],
                conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_groups}},
            )
        )


@jsii.implements(cdk.IAspect)
class EncryptLogGroups:
    """Sets ``key`` on every ``AWS::Logs::LogGroup`` below the scope that has no key.

    Add it to each stack that may hold log groups:
    ``cdk.Aspects.of(stack).add(EncryptLogGroups(logs_key.key))``.

    :param key: the key (a :class:`LogsKey`'s ``key`` or any ``kms.IKey`` whose
        policy lets CloudWatch Logs use it).
    """

    def __init__(self, key: kms.IKey) -> None:
        self.key = key

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, logs.CfnLogGroup) and node.kms_key_id is None:
            node.kms_key_id = self.key.key_arn

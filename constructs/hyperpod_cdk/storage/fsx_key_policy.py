"""The data key's policy statement for a file system's FSx S3 service-linked role."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct

from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.compliance.provider_framework import acknowledge_deploy_time_handler, cfn_function

HANDLER_DIR = Path(__file__).parent / "key_policy_handler"
RESOURCE_TYPE = "Custom::FsxDataKeyPolicy"
STATEMENT_SID = "FsxDataRepositoryThroughS3"
# FSx for Lustre user guide, "Working with server-side encrypted Amazon S3 buckets": the
# statement a data repository on an SSE-KMS bucket needs, for this service-linked role.
FSX_S3_ROLE_PATH = "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
FSX_S3_ROLE_PREFIX = "AWSServiceRoleForFSxS3Access_"
KEY_ACTIONS = [
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:Encrypt",
    "kms:GenerateDataKey*",
    "kms:ReEncrypt*",
]
# CloudFormation fails the resource if the handler has not answered by then (its ServiceTimeout)
SERVICE_TIMEOUT = cdk.Duration.minutes(10)
HANDLER_TIMEOUT = cdk.Duration.minutes(5)
_BASIC_EXECUTION = "service-role/AWSLambdaBasicExecutionRole"


def fsx_s3_role_arn(scope: Construct, file_system_id: str) -> str:
    """The ARN of ``AWSServiceRoleForFSxS3Access_<file system id>`` in ``scope``'s account."""
    return cdk.Stack.of(scope).format_arn(
        service="iam",
        region="",
        resource="role",
        resource_name=f"{FSX_S3_ROLE_PATH}{FSX_S3_ROLE_PREFIX}{file_system_id}",
        arn_format=cdk.ArnFormat.SLASH_RESOURCE_NAME,
    )


@jsii.implements(cdk.IStableStringProducer)
class _PolicyDigest:
    """The SHA-256 of a key's own policy, as its stack writes it (read at synthesis, when every
    statement is in)."""

    def __init__(self, key: kms.Key) -> None:
        self._key = key

    def produce(self) -> str:
        cfn = self._key.node.default_child
        assert isinstance(cfn, kms.CfnKey)
        policy = cdk.Stack.of(self._key).resolve(cfn.key_policy)
        return hashlib.sha256(json.dumps(policy, sort_keys=True).encode()).hexdigest()


class FsxDataKeyPolicy(Construct):
    """Adds to ``key``'s policy the statement that lets FSx use it for ``file_system_id``'s data
    repositories, naming the file system's S3 service-linked role as the principal (the FSx
    guide's statement: ``kms:CallerAccount`` this account, ``kms:ViaService`` S3 of the region).

    FSx creates that role with the file system's first data repository association, and KMS
    refuses a policy naming a principal that does not exist: put this construct after the
    associations (``depends_on``). A ``Custom::FsxDataKeyPolicy`` resource whose handler
    (Lambda, outside any VPC, ``kms:GetKeyPolicy``/``kms:PutKeyPolicy`` on this key only)
    rewrites the one statement by its Sid and removes it on delete. The resource carries a
    digest of the key's own policy: a deploy that changes the key's policy (and so rewrites it
    without this statement) changes this resource too, which writes the statement again.

    :param key: the data bucket's key (a :class:`DataBucket`'s ``key``).
    :param file_system_id: the Lustre file system whose associations use the key.
    :param depends_on: the data repository associations (the role exists once one does).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        key: kms.Key,
        file_system_id: str,
        depends_on: Sequence[IConstruct] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        self.role_arn = fsx_s3_role_arn(self, file_system_id)
        statement = {
            "Sid": STATEMENT_SID,
            "Effect": "Allow",
            "Principal": {"AWS": self.role_arn},
            "Action": KEY_ACTIONS,
            "Resource": "*",
            "Condition": {
                "StringEquals": {
                    "kms:CallerAccount": stack.account,
                    "kms:ViaService": f"s3.{stack.region}.amazonaws.com",
                }
            },
        }
        role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Writes the FSx service-linked role's statement into the data key policy",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(_BASIC_EXECUTION)],
        )
        self.policy = iam.ManagedPolicy(
            self,
            "KeyPolicyAccess",
            description="Read and write the data key's policy (FSx service-linked role statement)",
            statements=[
                iam.PolicyStatement(
                    sid="DataKeyPolicy",
                    actions=["kms:GetKeyPolicy", "kms:PutKeyPolicy"],
                    resources=[key.key_arn],
                )
            ],
            roles=[role],
        )
        self.function = lambda_.Function(
            self,
            "Handler",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            role=role,
            timeout=HANDLER_TIMEOUT,
            description="FSx data key policy: the file system's S3 service-linked role statement",
        )
        self.function.node.add_dependency(self.policy)
        self.resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=self.function.function_arn,
            resource_type=RESOURCE_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            properties={
                "KeyArn": key.key_arn,
                "Statement": stack.to_json_string(statement),
                "KeyPolicyDigest": cdk.Lazy.string(_PolicyDigest(key)),
            },
        )
        for dependency in depends_on:
            self.resource.node.add_dependency(dependency)
        self._acknowledge(role)

    def _acknowledge(self, role: iam.Role) -> None:
        what = "The FSx data key policy handler"
        acknowledge_deploy_time_handler(self.function, what)
        outside = (
            f"{what} calls only the KMS API (the data key's policy) and CloudFormation's "
            "pre-signed URL during deploys; it reaches nothing in the VPC."
        )
        acknowledge_controls(self.function, "LambdaInsideVPC", outside)
        cfn = cfn_function(self.function)
        skip_check(cfn, "CKV_AWS_117", outside)

"""checkov suppressions: in the resource's own template metadata, each with a reason.

checkov reads ``Metadata: {checkov: {skip: [{id: CKV_AWS_115, comment: ...}]}}`` on a
CloudFormation resource (checkov docs, "Suppressing/Skipping": CloudFormation). A skip
therefore ships with the template, next to the resource it excuses, and a reviewer reads the
reason there; nothing is skipped on the checkov command line.

:func:`skip_check` writes one skip. :class:`FrameworkCheckovSkips` is an aspect that writes
the justified skips on the Lambda functions aws-cdk-lib builds for itself (BucketDeployment's
handler, S3 auto-delete, the kubectl handler of ``aws_eks_v2`` and its provider framework),
which no construct of ours can configure.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

# A reviewer must be able to judge the reason, so a few words are not enough.
MIN_COMMENT_LENGTH = 20
# checkov's own check ids (CKV_AWS_115, CKV2_AWS_5); the platform's BC_* ids need its mapping,
# which is downloaded, so they are not accepted
CHECK_ID = re.compile(r"CKV2?_[A-Z0-9]+_\d+")
METADATA_KEY = "checkov"


def skip_check(resource: cdk.CfnResource, check_id: str, comment: str) -> None:
    """Skip checkov's ``check_id`` on ``resource``, for the reason ``comment``.

    Adds to the skips already in the resource's ``checkov`` metadata; skipping the same check
    again with the same comment changes nothing.

    :raises ValueError: for an id that is not a checkov check id, a comment shorter than
        :data:`MIN_COMMENT_LENGTH` characters, or a second, different comment for one check.
    """
    if not CHECK_ID.fullmatch(check_id):
        raise ValueError(f"{check_id!r} is not a checkov check id (e.g. CKV_AWS_115)")
    comment = comment.strip()
    if len(comment) < MIN_COMMENT_LENGTH:
        raise ValueError(
            f"the skip of {check_id} on {resource.node.path} needs a comment of at least "
            f"{MIN_COMMENT_LENGTH} characters that says why"
        )
    metadata: dict[str, Any] = dict(resource.get_metadata(METADATA_KEY) or {})
    skips: list[dict[str, str]] = [dict(s) for s in metadata.get("skip", [])]
    for existing in skips:
        if existing.get("id") == check_id:
            if existing.get("comment") == comment:
                return
            raise ValueError(
                f"{check_id} is already skipped on {resource.node.path} with another comment: "
                f"{existing.get('comment')!r}"
            )
    metadata["skip"] = [*skips, {"id": check_id, "comment": comment}]
    resource.add_metadata(METADATA_KEY, metadata)


def skipped_checks(resource: cdk.CfnResource) -> dict[str, str]:
    """The checkov skips on ``resource``: check id -> comment."""
    metadata = resource.get_metadata(METADATA_KEY) or {}
    return {s["id"]: s["comment"] for s in metadata.get("skip", [])}


# -- CDK's own Lambda functions -----------------------------------------------------------------

# aws-cdk-lib names BucketDeployment's singleton handler "Custom::CDKBucketDeployment" + this
# fixed UUID (without dashes) + suffixes for memory size, ephemeral storage and VPC.
_BUCKET_DEPLOYMENT_HANDLER = re.compile(
    r"Custom::CDKBucketDeployment8693BB64968944B69AAFB0CC9EB8756C\w*"
)
_AUTO_DELETE_PROVIDER = "Custom::S3AutoDeleteObjectsCustomResourceProvider"
# the functions of aws_eks_v2.KubectlProvider, as paths below it
_KUBECTL_FUNCTIONS = ("Handler/Resource", "Provider/framework-onEvent/Resource")

# When a function passes a check (what checkov looks at): such a check is not skipped, so a skip
# never hides a fix. CDK's auto-delete handler is a plain CfnResource, whose properties cannot be
# read back; CustomResourceProvider has none of these settings anyway.
_PASSES: Mapping[str, Callable[[lambda_.CfnFunction], bool]] = {
    "CKV_AWS_115": lambda f: f.reserved_concurrent_executions is not None,
    "CKV_AWS_116": lambda f: f.dead_letter_config is not None,
    "CKV_AWS_117": lambda f: f.vpc_config is not None,
    "CKV_AWS_173": lambda f: f.environment is None or f.kms_key_arn is not None,
}

DEPLOY_TIME_ONLY = (
    "it runs only while CloudFormation deploys this stack, so reserved concurrency would only "
    "withhold capacity from the account's other functions"
)
CUSTOM_RESOURCE_FAILURES = (
    "it is a CloudFormation custom-resource handler: a failed invocation fails the stack "
    "operation and shows in the stack events and the function's log, so a DLQ would hold "
    "nothing to act on"
)


@dataclass(frozen=True)
class FrameworkFunction:
    """One kind of Lambda function aws-cdk-lib builds, and the checks skipped on it (id -> why)."""

    name: str
    matches: Callable[[cdk.CfnResource], bool]
    skips: Mapping[str, str]


def _scope(node: IConstruct, levels: int) -> IConstruct | None:
    """The scope ``levels`` above ``node`` (1: its parent), or None above the root."""
    scopes = node.node.scopes  # root first, node last
    return scopes[-1 - levels] if len(scopes) > levels else None


def _is_bucket_deployment_handler(resource: cdk.CfnResource) -> bool:
    function, stack = _scope(resource, 1), _scope(resource, 2)
    return (
        resource.node.id == "Resource"
        and function is not None
        and _BUCKET_DEPLOYMENT_HANDLER.fullmatch(function.node.id) is not None
        and stack is not None
        and cdk.Stack.is_stack(stack)
    )


def _is_auto_delete_handler(resource: cdk.CfnResource) -> bool:
    provider, stack = _scope(resource, 1), _scope(resource, 2)
    return (
        resource.node.id == "Handler"
        and provider is not None
        and provider.node.id == _AUTO_DELETE_PROVIDER
        and stack is not None
        and cdk.Stack.is_stack(stack)
    )


def _is_kubectl_function(resource: cdk.CfnResource) -> bool:
    # an app that never imported aws_eks_v2 has no kubectl handler (and need not load it)
    eks = sys.modules.get("aws_cdk.aws_eks_v2")
    if eks is None:
        return False
    path = resource.node.path
    return any(
        isinstance(scope, eks.KubectlProvider)
        and path.removeprefix(scope.node.path + "/") in _KUBECTL_FUNCTIONS
        for scope in resource.node.scopes[:-1]
    )


FRAMEWORK_FUNCTIONS: tuple[FrameworkFunction, ...] = (
    FrameworkFunction(
        "BucketDeployment handler",
        _is_bucket_deployment_handler,
        {
            "CKV_AWS_115": f"CDK's BucketDeployment handler: {DEPLOY_TIME_ONLY}.",
            "CKV_AWS_116": f"CDK's BucketDeployment handler: {CUSTOM_RESOURCE_FAILURES}.",
            "CKV_AWS_117": "CDK's BucketDeployment handler only copies the lifecycle scripts from "
            "the CDK asset bucket to the lifecycle bucket through the S3 API, with its IAM role; "
            "it reaches nothing in the VPC.",
            "CKV_AWS_173": "CDK's BucketDeployment handler: its environment holds only non-secret "
            "settings written by aws-cdk-lib (the CA bundle path), which Lambda encrypts at rest "
            "with an AWS managed key.",
        },
    ),
    FrameworkFunction(
        "S3 auto-delete handler",
        _is_auto_delete_handler,
        {
            "CKV_AWS_115": "CDK's S3 auto-delete handler runs only when CloudFormation deletes "
            "its bucket; CustomResourceProvider has no concurrency setting, and reserved "
            "concurrency would only withhold capacity from the account's other functions.",
            "CKV_AWS_116": f"CDK's S3 auto-delete handler: {CUSTOM_RESOURCE_FAILURES} "
            "(CustomResourceProvider has no DLQ setting).",
            "CKV_AWS_117": "CDK's S3 auto-delete handler only lists and deletes the objects of "
            "its bucket through the S3 API when the bucket is deleted; CustomResourceProvider "
            "cannot run in a VPC, and it reaches nothing there.",
        },
    ),
    FrameworkFunction(
        "kubectl handler",
        _is_kubectl_function,
        {
            "CKV_AWS_115": "The kubectl handler of aws_eks_v2 (or its custom-resource framework "
            f"function): {DEPLOY_TIME_ONLY}.",
            "CKV_AWS_116": "The kubectl handler of aws_eks_v2 (or its custom-resource framework "
            f"function): {CUSTOM_RESOURCE_FAILURES}.",
            "CKV_AWS_173": "The kubectl handler of aws_eks_v2 (or its custom-resource framework "
            "function): its environment holds only non-secret settings written by aws-cdk-lib "
            "(STS endpoint mode, the handler's ARN), which Lambda encrypts at rest with an AWS "
            "managed key; KubectlProvider offers no key setting.",
        },
    ),
)


def framework_function(resource: cdk.CfnResource) -> FrameworkFunction | None:
    """Which of :data:`FRAMEWORK_FUNCTIONS` ``resource`` is, if any."""
    # aws-cdk-lib builds these as lambda.CfnFunction or, in CustomResourceProvider, as a plain
    # CfnResource; any other L1 class is another resource type, known without asking the jsii
    # runtime for its type (this runs on every resource of every stack)
    if not isinstance(resource, lambda_.CfnFunction) and type(resource) is not cdk.CfnResource:
        return None
    if resource.cfn_resource_type != "AWS::Lambda::Function":
        return None
    return next((f for f in FRAMEWORK_FUNCTIONS if f.matches(resource)), None)


@jsii.implements(cdk.IAspect)
class FrameworkCheckovSkips:
    """Skips, with their reasons, the checkov checks that CDK's own Lambda functions fail.

    Only the functions of :data:`FRAMEWORK_FUNCTIONS` are touched, each found by its place in
    the construct tree, never by its type alone; a check that the function passes (a property
    set by a construct or an earlier aspect) is not skipped. Add it to every stack, after the
    aspects that change resources:
    ``cdk.Aspects.of(stack).add(FrameworkCheckovSkips(), priority=cdk.AspectPriority.READONLY)``.
    """

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, cdk.CfnResource):
            return
        function = framework_function(node)
        if function is None:
            return
        for check_id, comment in function.skips.items():
            passes = _PASSES.get(check_id)
            if isinstance(node, lambda_.CfnFunction) and passes is not None and passes(node):
                continue
            skip_check(node, check_id, comment)

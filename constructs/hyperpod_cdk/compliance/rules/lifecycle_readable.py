"""HyperPod-LifecycleReadable: each instance group's execution role can read its lifecycle scripts.

HyperPod downloads ``LifeCycleConfig.SourceS3Uri`` with the group's ``ExecutionRole``. The
managed policy ``AmazonSageMakerClusterInstanceRolePolicy`` reads only buckets named
``sagemaker-*``; any other bucket needs ``s3:ListBucket`` on the bucket and ``s3:GetObject``
on the objects below the prefix, or node creation fails with "lifecycle scripts did not run
successfully" (awslabs/awsome-distributed-ai issue #1044, PR #85). A bucket ARN where the object
ARN belongs (``bucket`` instead of ``bucket/*``) is a common way to get it wrong.

The rule looks at each ``AWS::SageMaker::Cluster``. For every instance group whose role is an
``AWS::IAM::Role`` of the app, it collects the role's inline policies, the ``AWS::IAM::Policy``,
``AWS::IAM::ManagedPolicy`` and ``AWS::IAM::RolePolicy`` resources attached to it (in any
stack), and the known AWS managed policies; wildcards in actions and resources count, an
``s3:prefix`` condition on ``s3:ListBucket`` must admit the lifecycle prefix, and an
unconditional Deny wins. Roles given as ARNs come from outside the app (not applicable: the
account preflight checks those).
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.hyperpod import instance_groups
from hyperpod_cdk.compliance.iam import ConditionCheck, allows, role_statements, wildcard_match
from hyperpod_cdk.compliance.model import PARTITION, Ref, Resource, Value
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, NOT_APPLICABLE, HyperPodRule

CLUSTER = "AWS::SageMaker::Cluster"
ROLE = "AWS::IAM::Role"
# any object below the prefix: the whole directory is downloaded, not only the entry script
ANY_OBJECT = "⟦object⟧"


def split_s3_uri(uri: str) -> tuple[str, str] | None:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b/")``: the bucket and the key prefix (a folder)."""
    if not uri.startswith("s3://"):
        return None
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    if not bucket:
        return None
    return bucket, (key if not key or key.endswith("/") else key + "/")


def _prefix_admitted(prefix: str) -> ConditionCheck:
    """Whether an ``s3:ListBucket`` statement's condition lets the nodes list ``prefix``."""

    def holds(statement: Value) -> bool:
        condition = statement.get("Condition").resolved().raw
        if not isinstance(condition, dict):
            return True
        for operator, block in condition.items():
            values = Value(statement.stack, block)
            for key in block if isinstance(block, dict) else ():
                if key.lower() != "s3:prefix":
                    continue
                patterns = [t for t in (v.text() for v in values.get(key).items_or_one()) if t]
                test = operator.split(":")[-1]  # ForAnyValue:StringLike -> StringLike
                like = test.startswith(("StringLike", "StringNotLike"))
                matched = any(wildcard_match(p, prefix) if like else p == prefix for p in patterns)
                if matched == ("Not" in test):
                    return False
        return True

    return holds


def group_can_read(group: Value) -> bool | None:
    """True/False for a group whose role and scripts the app defines, None when not applicable."""
    role = group.get("ExecutionRole").target()
    uri = group.get("LifeCycleConfig", "SourceS3Uri")
    if not isinstance(role, Ref) or role.resource.type != ROLE or uri.missing:
        return None
    text = uri.text()
    location = split_s3_uri(text) if text else None
    if location is None:
        return None
    bucket, prefix = location
    statements = role_statements(role.resource)
    bucket_arn = f"arn:{PARTITION}:s3:::{bucket}"
    return allows(
        statements, "s3:ListBucket", bucket_arn, condition_holds=_prefix_admitted(prefix)
    ) and allows(statements, "s3:GetObject", f"{bucket_arn}/{prefix}{ANY_OBJECT}")


def check(cluster: Resource) -> NagRuleCompliance:
    verdicts = [group_can_read(group) for group in instance_groups(cluster)]
    if False in verdicts:
        return NON_COMPLIANT
    return COMPLIANT if True in verdicts else NOT_APPLICABLE


RULE = HyperPodRule(
    name="LifecycleReadable",
    info="An instance group's execution role cannot read its lifecycle scripts: it needs "
    "s3:ListBucket on the bucket and s3:GetObject on the objects below SourceS3Uri.",
    explanation="HyperPod downloads the lifecycle scripts as the group's execution role; the "
    "managed AmazonSageMakerClusterInstanceRolePolicy only reads sagemaker-* buckets, so any "
    "other bucket needs explicit permissions or node creation fails.",
    resource_types=frozenset({CLUSTER}),
    check=check,
)

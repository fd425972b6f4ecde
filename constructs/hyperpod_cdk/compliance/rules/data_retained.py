"""HyperPod-DataRetained: FSx file systems and data buckets survive the deletion of their stack.

Without ``DeletionPolicy: Retain`` a stack deletion deletes the file system or bucket, and
its data with it; without ``UpdateReplacePolicy: Retain`` a replacement does the same. The
project keeps data unless the config says ``removal_policy: destroy`` and the deploy passes
``-c destroy_data=true`` (STYLE.md point 7, "data needs two keys to delete"): then the app
acknowledges this rule on the storage it lets go. FSx has no ``Snapshot`` policy
(cfn-lint E3035); ``RetainExceptOnCreate`` keeps the resource too, except when its own
creation rolls back.

Which buckets hold data: every ``AWS::S3::Bucket`` of the app except those whose content the
app itself recreates: the destination of a CDK ``BucketDeployment`` (the lifecycle scripts,
uploaded again on every deploy) and a bucket that only receives the server access logs of
such buckets. The access logs of a data bucket are its audit trail and count as data.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.model import Resource
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, NOT_APPLICABLE, HyperPodRule

FILE_SYSTEM = "AWS::FSx::FileSystem"
BUCKET = "AWS::S3::Bucket"
BUCKET_DEPLOYMENT = "Custom::CDKBucketDeployment"
RETAINED_ON_DELETE = ("Retain", "RetainExceptOnCreate")
RETAINED_ON_REPLACE = ("Retain",)


def _deployed_to(bucket: Resource) -> bool:
    return any(
        deployment.prop("DestinationBucketName").refers_to(bucket, None)
        for deployment in bucket.assembly.resources(BUCKET_DEPLOYMENT)
    )


def is_data_bucket(bucket: Resource, _seen: frozenset[int] = frozenset()) -> bool:
    """False for a bucket whose content the app recreates (see the module docstring)."""
    if _deployed_to(bucket):
        return False
    logged = [
        source
        for source in bucket.assembly.resources(BUCKET)
        if source.prop("LoggingConfiguration", "DestinationBucketName").refers_to(bucket, None)
        and id(source) not in _seen
        and source is not bucket
    ]
    seen = _seen | {id(bucket)}
    return not logged or any(is_data_bucket(source, seen) for source in logged)


def check(resource: Resource) -> NagRuleCompliance:
    if resource.type == BUCKET and not is_data_bucket(resource):
        return NOT_APPLICABLE
    retained = (
        resource.deletion_policy in RETAINED_ON_DELETE
        and resource.update_replace_policy in RETAINED_ON_REPLACE
    )
    return COMPLIANT if retained else NON_COMPLIANT


RULE = HyperPodRule(
    name="DataRetained",
    info="The FSx file system or data bucket does not have DeletionPolicy and "
    "UpdateReplacePolicy Retain: deleting or replacing it deletes the data.",
    explanation="Data needs two keys to delete: storage.fsx.removal_policy destroy in the config "
    "and -c destroy_data=true at deploy; only then does the app acknowledge this rule.",
    resource_types=frozenset({FILE_SYSTEM, BUCKET}),
    check=check,
)

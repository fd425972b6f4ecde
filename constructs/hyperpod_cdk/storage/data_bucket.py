"""The environment's S3 data bucket (and its access-log bucket)."""

from __future__ import annotations

from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.context import SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, require_feature_flags


def secure_bucket_props() -> dict[str, object]:
    """Settings every bucket of the app shares: encrypted, TLS only, private."""
    return {
        "encryption": s3.BucketEncryption.S3_MANAGED,
        "enforce_ssl": True,
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    }


def access_log_bucket(
    scope: Construct, construct_id: str, *, logged: str, removal_policy: cdk.RemovalPolicy
) -> s3.Bucket:
    """A private, versioned bucket that receives another bucket's server access logs (kept a year).

    It is SSE-S3 encrypted: S3 server access logging delivers only to target
    buckets whose default encryption is SSE-S3 (S3 user guide, "Enabling Amazon S3
    server access logging"). DESTROY empties it too, so that deleting the stack
    does not stop at a non-empty log bucket.

    S3 may deliver the logs only through this bucket's policy, as the bucket has no ACLs
    (BucketOwnerEnforced); the CDK writes that policy instead of an ACL only with the feature
    flag ``@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy``. Without the flag this raises a
    ValueError that names it, instead of the CDK's own error deep in the synth.

    :param logged: what the logged bucket holds, for the cdk-nag acknowledgment.
    """
    require_feature_flags(scope, SERVER_ACCESS_LOGS_USE_BUCKET_POLICY)
    bucket = s3.Bucket(
        scope,
        construct_id,
        **secure_bucket_props(),  # type: ignore[arg-type]
        removal_policy=removal_policy,
        auto_delete_objects=removal_policy == cdk.RemovalPolicy.DESTROY,
        versioned=True,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="expire-access-logs",
                expiration=cdk.Duration.days(365),
                noncurrent_version_expiration=cdk.Duration.days(30),
            )
        ],
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        f"This is the access-log bucket of the {logged}; logging it into itself would loop.",
    )
    skip_check(
        cast(cdk.CfnResource, bucket.node.default_child),
        "CKV_AWS_18",
        f"This bucket receives the server access logs of the {logged}; logging its own access "
        "would loop into itself or need yet another log bucket.",
    )
    acknowledge_controls(
        bucket,
        "S3DefaultEncryptionKMS",
        "S3 server access logging delivers only to target buckets with SSE-S3 default encryption "
        "(S3 user guide); the logs hold request metadata, not the data itself.",
    )
    acknowledge_controls(
        bucket,
        "S3BucketReplicationEnabled",
        f"Access logs of the {logged} are versioned and kept a year in this region; replicating them "
        "to a second region is an account-wide audit decision, not one environment's.",
    )
    return bucket


class DataBucket(Construct):
    """A versioned, KMS-encrypted, TLS-only, private bucket with server access logs.

    The data repository associations link prefixes of this bucket into FSx; the
    file system's FSx service-linked role may use the key once
    :class:`DataRepositoryAssociations` has created them (its
    :class:`FsxDataKeyPolicy` names the role in the key policy, through S3 of this
    account only, as FSx requires for an SSE-KMS repository).

    The construct always creates the buckets and the key; to use an existing
    bucket, pass it (an ``s3.IBucket``) to :class:`DataRepositoryAssociations`
    instead.

    :param removal_policy: RETAIN (default) keeps the bucket (and its data) when
        the stack is deleted; DESTROY empties and deletes both buckets (the app
        passes DESTROY only when the config *and* a context flag ask for it).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = access_log_bucket(
            self, "AccessLogs", logged="data bucket", removal_policy=removal_policy
        )
        self.key = kms.Key(
            self,
            "Key",
            description="Data bucket of the HyperPod environment",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        props = {
            **secure_bucket_props(),
            "encryption": s3.BucketEncryption.KMS,
            "encryption_key": self.key,
            "bucket_key_enabled": True,
        }
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **props,  # type: ignore[arg-type]
            versioned=True,
            removal_policy=removal_policy,
            auto_delete_objects=removal_policy == cdk.RemovalPolicy.DESTROY,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="data-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    noncurrent_version_expiration=cdk.Duration.days(30),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(7),
                )
            ],
        )
        acknowledge_controls(
            self.bucket,
            "S3BucketReplicationEnabled",
            "The bucket is versioned and retained; cross-region replication needs a destination "
            "bucket and region chosen by the data owner, so it is left to the account's data policy.",
        )

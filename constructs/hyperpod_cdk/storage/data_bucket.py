"""The environment's S3 data bucket (and its access-log bucket)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_cdk.nag import acknowledge


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
    """A private bucket that receives another bucket's server access logs (kept a year).

    DESTROY empties it too, so that deleting the stack does not stop at a
    non-empty log bucket.

    :param logged: what the logged bucket holds, for the cdk-nag acknowledgment.
    """
    bucket = s3.Bucket(
        scope,
        construct_id,
        **secure_bucket_props(),  # type: ignore[arg-type]
        removal_policy=removal_policy,
        auto_delete_objects=removal_policy == cdk.RemovalPolicy.DESTROY,
        lifecycle_rules=[
            s3.LifecycleRule(id="expire-access-logs", expiration=cdk.Duration.days(365))
        ],
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        f"This is the access-log bucket of the {logged}; logging it into itself would loop.",
    )
    return bucket


class DataBucket(Construct):
    """A versioned, encrypted, TLS-only, private bucket with server access logs.

    The data repository associations link prefixes of this bucket into FSx.

    :param removal_policy: RETAIN keeps the bucket (and its data) when the
        stack is deleted; DESTROY empties and deletes both buckets (the app
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
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **secure_bucket_props(),  # type: ignore[arg-type]
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

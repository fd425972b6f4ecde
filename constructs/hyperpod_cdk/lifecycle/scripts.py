"""Lifecycle scripts uploaded, unpacked, under a content-hashed S3 prefix."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from hyperpod_cdk import config
from hyperpod_cdk.compliance.nag import acknowledge, cdk_assets_objects, nag_ref
from hyperpod_cdk.compliance.packs import acknowledge_controls, acknowledge_framework_function
from hyperpod_cdk.config.cluster import LIFECYCLE_ENTRY_SCRIPT
from hyperpod_cdk.lifecycle.prefix import LIFECYCLE_ROOT as LIFECYCLE_ROOT
from hyperpod_cdk.lifecycle.prefix import UPLOAD_EXCLUDE, lifecycle_prefix
from hyperpod_cdk.lifecycle.prefix import content_hash as content_hash
from hyperpod_cdk.lifecycle.settings import NodeSettings, check_settings
from hyperpod_cdk.storage.data_bucket import access_log_bucket, secure_bucket_props

SETTINGS_FILE = "settings.json"
# The lifecycle scripts shipped with the library (package data: ./assets, with their modes).
PACKAGED_SCRIPTS = config.PACKAGED_SCRIPTS


# HyperPod API reference, ClusterLifeCycleConfig.SourceS3Uri: "the path must start with
# s3://sagemaker-" (and the managed AmazonSageMakerClusterInstanceRolePolicy reads sagemaker-*
# buckets only); every AWS reference deployment names the bucket that way.
LIFECYCLE_BUCKET_PREFIX = "sagemaker-"
# S3 user guide, "General purpose bucket naming rules": 3-63 characters, lowercase letters,
# digits, dots and hyphens, starting and ending with a letter or digit.
MAX_BUCKET_NAME = 63
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# the longest region name the budget assumes when the region is only known at deploy time
# (ap-southeast-7 and us-isob-east-1 have 14 characters)
_MAX_REGION = 16
_ACCOUNT_ID = 12
_NAME_HASH = 6


def lifecycle_bucket_name(name: str, account: str, region: str) -> str:
    """``sagemaker-<name>-lifecycle-<account>-<region>``, at most 63 characters.

    ``name`` is lowercased and cut to what fits, with ``-`` and 6 hex digits of its SHA-256
    when cut (or when lowercasing changed it), so that two names never share a bucket name.
    ``account`` and ``region`` may be deploy-time tokens (``Aws.ACCOUNT_ID``): an account id
    has 12 digits, and an unknown region is counted as 16 characters.
    """
    region_length = _MAX_REGION if cdk.Token.is_unresolved(region) else len(region)
    if cdk.Token.is_unresolved(name):
        raise ValueError("the lifecycle bucket name needs a literal environment name")
    fixed = len(f"{LIFECYCLE_BUCKET_PREFIX}-lifecycle--") + _ACCOUNT_ID + region_length
    budget = MAX_BUCKET_NAME - fixed
    readable = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    if readable != name or len(readable) > budget:
        digest = hashlib.sha256(name.encode()).hexdigest()[:_NAME_HASH]
        readable = f"{readable[: budget - _NAME_HASH - 1].rstrip('-')}-{digest}".lstrip("-")
    return f"{LIFECYCLE_BUCKET_PREFIX}{readable}-lifecycle-{account}-{region}"


def check_lifecycle_bucket_name(bucket_name: str) -> None:
    """Raise ValueError unless a literal ``bucket_name`` is a valid S3 bucket name that starts
    with ``sagemaker-`` (tokens are checked for the prefix only)."""
    if not bucket_name.startswith(LIFECYCLE_BUCKET_PREFIX):
        raise ValueError(
            f"bucket_name {bucket_name!r}: HyperPod reads lifecycle scripts only from an S3 URI "
            f"that starts with s3://{LIFECYCLE_BUCKET_PREFIX} (API reference, SourceS3Uri)"
        )
    if cdk.Token.is_unresolved(bucket_name):
        return
    if not _BUCKET_NAME.fullmatch(bucket_name) or ".." in bucket_name:
        raise ValueError(
            f"bucket_name {bucket_name!r} is not an S3 bucket name: 3-63 lowercase letters, "
            "digits, dots and hyphens, starting and ending with a letter or digit"
        )


def _settings_and_files(
    settings: Mapping[str, Any] | NodeSettings, extra_files: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings and the extra files, from a NodeSettings (with its users file) or a mapping."""
    if isinstance(settings, NodeSettings):
        return dict(settings.settings), {**settings.extra_files, **(extra_files or {})}
    return dict(settings), dict(extra_files or {})


def _check_settings_for(settings: Mapping[str, Any], directory: Path) -> None:
    """Stop the synth when ``directory``'s scripts would fail every node with ``settings``: the
    scripts' own schema (settings.schema.json beside them) says what they need; deploy-time
    values (tokens) are not checked."""
    check_settings(settings, directory, token=cdk.Token.is_unresolved)


class LifecycleScripts(Construct):
    """The scripts every HyperPod node runs, in S3 where the nodes can read them.

    The directory is uploaded unpacked (HyperPod reads files, not a zip) with
    the generated ``settings.json`` beside it, into ``lifecycle/<hash>/`` of a
    private bucket: a change to any script or setting gives a new prefix, which
    is how HyperPod picks changed scripts up, and older prefixes are kept for
    nodes that are replaced later.

    To use scripts already in S3 instead, skip this construct and pass a
    :class:`~hyperpod_cdk.cluster.LifecycleRef` to the cluster.

    :param directory: the scripts; must contain ``entrypoint.sh``. Default:
        :data:`PACKAGED_SCRIPTS`, the scripts shipped with the library (this
        repository's ``lifecycle_assets/``; their ``entrypoint.sh`` says which
        ``settings`` they read).
    :param settings: the values the scripts read on the node (the scripts themselves hold
        no environment-specific values): best a
        :class:`~hyperpod_cdk.lifecycle.settings.NodeSettings` from
        :func:`~hyperpod_cdk.lifecycle.settings.build_node_settings` (its users file comes
        along as an extra file), or a JSON-serialisable mapping. When the directory has a
        ``settings.schema.json`` (the packaged scripts do), settings a node could not boot
        with stop the synth with a
        :class:`~hyperpod_cdk.lifecycle.settings.SettingsError` naming each key
        (``config error: settings.cluster_network: missing: ...``).
    :param access_logs_bucket: where the bucket's server access logs go; a
        log bucket of its own when not given.
    :param extra_files: more generated files written beside ``settings.json``,
        by file name (e.g. ``users.json``); none when not given.
    :param bucket_name: the bucket's name; it must start with ``sagemaker-`` (HyperPod's
        ``SourceS3Uri`` rule). Default: :func:`lifecycle_bucket_name` of the stack's name,
        account and region.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        directory: str | Path | None = None,
        settings: Mapping[str, Any] | NodeSettings,
        access_logs_bucket: s3.IBucket | None = None,
        extra_files: Mapping[str, str] | None = None,
        bucket_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        if bucket_name is None:
            bucket_name = lifecycle_bucket_name(stack.stack_name, stack.account, stack.region)
        check_lifecycle_bucket_name(bucket_name)
        directory = PACKAGED_SCRIPTS if directory is None else Path(directory)
        if not (directory / LIFECYCLE_ENTRY_SCRIPT).is_file():
            raise ValueError(f"{directory} has no {LIFECYCLE_ENTRY_SCRIPT}")
        values, extra = _settings_and_files(settings, extra_files)
        _check_settings_for(values, directory)
        for name in extra:
            if name == SETTINGS_FILE or "/" in name or name.startswith(".") or not name:
                raise ValueError(
                    f"extra file {name!r}: use a plain file name other than {SETTINGS_FILE}"
                )
            if (directory / name).exists():
                raise ValueError(f"extra file {name!r} would replace {directory / name}")
        self.entry_script = LIFECYCLE_ENTRY_SCRIPT
        self.hash = content_hash(directory, values, extra)
        self.prefix = lifecycle_prefix(self.hash)
        if access_logs_bucket is None:
            access_logs_bucket = access_log_bucket(
                self,
                "AccessLogs",
                logged="lifecycle script bucket",
                removal_policy=cdk.RemovalPolicy.DESTROY,
            )
        self.bucket_name = bucket_name
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **secure_bucket_props(),  # type: ignore[arg-type]
            bucket_name=bucket_name,
            versioned=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            auto_delete_objects=True,
            server_access_logs_bucket=access_logs_bucket,
            server_access_logs_prefix="lifecycle-bucket/",
        )
        acknowledge_controls(
            self.bucket,
            "S3DefaultEncryptionKMS",
            "The bucket holds only the lifecycle scripts of this repository (no data, no secrets), "
            "SSE-S3 encrypted and TLS-only; HyperPod nodes fetch them at boot with the execution role.",
        )
        acknowledge_controls(
            self.bucket,
            "S3BucketReplicationEnabled",
            "The scripts are rebuilt from the repository by every deploy; a replica in another "
            "region would hold nothing that cannot be recreated.",
        )
        self.deployment = s3deploy.BucketDeployment(
            self,
            "Upload",
            sources=[
                s3deploy.Source.asset(str(directory), exclude=UPLOAD_EXCLUDE),
                s3deploy.Source.json_data(SETTINGS_FILE, values),
                *(s3deploy.Source.data(name, content) for name, content in sorted(extra.items())),
            ],
            destination_bucket=self.bucket,
            destination_key_prefix=self.prefix,
            extract=True,
            prune=False,
            retain_on_delete=True,
            memory_limit=256,
        )
        # the name itself (not a reference to the bucket): a consumer in another stack writes it
        # in its own template
        self.source_s3_uri = f"s3://{bucket_name}/{self.prefix}"
        self._acknowledge_upload_handler()

    def _acknowledge_upload_handler(self) -> None:
        """The findings of CDK's BucketDeployment handler (one Lambda per stack), named one by one."""
        stack = cdk.Stack.of(self)
        handler = next(
            (c for c in stack.node.children if c.node.id.startswith("Custom::CDKBucketDeployment")),
            None,
        )
        if handler is None:
            return
        bucket = self.bucket.node.default_child
        assert isinstance(bucket, cdk.CfnResource)
        assets = cdk_assets_objects(stack)
        reason = (
            "CDK's BucketDeployment handler copies the script asset from the CDK asset bucket into "
            "this app's lifecycle bucket; its role is generated by CDK and limited to those two buckets."
        )
        for finding in (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]",
            "AwsSolutions-IAM5[Action::s3:GetObject*]",
            "AwsSolutions-IAM5[Action::s3:List*]",
            "AwsSolutions-IAM5[Action::s3:Abort*]",
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]",
            f"AwsSolutions-IAM5[Resource::{assets}]",
            f"AwsSolutions-IAM5[Resource::{nag_ref(bucket, 'Arn')}/*]",
        ):
            acknowledge(handler, finding, reason)
        acknowledge(
            handler,
            "AwsSolutions-L1",
            "The handler's runtime is chosen and updated by aws-cdk-lib's BucketDeployment; it runs only "
            "during deploys to copy the scripts.",
        )
        acknowledge_framework_function(handler, in_vpc=False)

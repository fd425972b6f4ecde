"""The CDK feature flags the constructs are built and tested with, and the check for the ones
they cannot work without.

A CDK app reads its feature flags from the context, which the CDK CLI takes from ``cdk.json``.
An app that has no ``cdk.json`` (``python app.py``, a test, a notebook) or one written by an
older ``cdk init`` runs with the flags unset, and some constructs then fail deep inside the CDK.
``cdk.App(context=hyperpod_cdk.recommended_context())`` gives it the flags this repository's
``cdk.json`` sets (the ones ``cdk init`` writes for the pinned aws-cdk-lib); context given by
the CDK CLI (``cdk.json``, ``-c``) is merged over it.

Pure Python at import (``aws_cdk`` is imported by the check only), so that the flags can be read
before the CDK's JavaScript runtime starts.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from constructs import IConstruct

# package data: a copy of the "context" of the repository's cdk.json (a test keeps them equal)
CONTEXT_FILE = "recommended_context.json"

SERVER_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"

# Flag -> why the constructs need it on. Only flags without which a construct does not work:
# every other flag of recommended_context() is advice, and the constructs synthesize (and pass
# their compliance packs) with the flag either way.
REQUIRED_FLAGS: dict[str, str] = {
    SERVER_ACCESS_LOGS_USE_BUCKET_POLICY: (
        "the access-log buckets are BucketOwnerEnforced (no ACLs), so S3 may deliver server "
        "access logs to them only through a bucket policy; without the flag the CDK grants "
        "the delivery with the LogDeliveryWrite ACL, which such a bucket refuses"
    ),
}


def recommended_context() -> dict[str, Any]:
    """The feature flags of this repository's ``cdk.json``, as a new dict on every call.

    Use it as the App's context, ``cdk.App(context=hyperpod_cdk.recommended_context())``, or
    copy it into the ``"context"`` of your ``cdk.json``. That is for a new app: in an app that
    has deployed stacks, some flags change what is already there (cross-stack references
    become weak ones, Lambda functions get log groups of their own), so such an app sets only
    the flags of :data:`REQUIRED_FLAGS`.
    """
    text = resources.files("hyperpod_cdk").joinpath(CONTEXT_FILE).read_text(encoding="utf-8")
    context: dict[str, Any] = json.loads(text)
    return context


def require_feature_flags(scope: IConstruct, *flags: str) -> None:
    """Raise ValueError, naming the flags and what to do, unless every flag of ``flags`` (keys
    of :data:`REQUIRED_FLAGS`) is on where ``scope`` is.

    The CDK decides (``FeatureFlags.is_enabled``), from the context of ``scope``: the App's,
    the CLI's, or a Stage's or Stack's own.
    """
    import aws_cdk as cdk

    missing = [flag for flag in flags if not cdk.FeatureFlags.of(scope).is_enabled(flag)]
    if not missing:
        return
    needed = "; ".join(f"{flag} set to true: {REQUIRED_FLAGS[flag]}" for flag in missing)
    plural = len(missing) > 1
    raise ValueError(
        f"{scope.node.path} needs the CDK feature flag{'s' if plural else ''} {needed}. "
        "Create the App with cdk.App(context=hyperpod_cdk.recommended_context()), or set "
        f'{"them" if plural else "it"} in the "context" of your cdk.json.'
    )

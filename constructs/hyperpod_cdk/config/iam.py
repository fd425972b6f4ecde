"""The ``iam`` section: settings applied to every IAM role the app creates."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hyperpod_cdk.config.base import StrictModel, matching

PolicyArn = Annotated[
    str,
    matching(
        r"^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/[A-Za-z0-9+=,.@_/-]+$",
        "a managed policy ARN like arn:aws:iam::111122223333:policy/name",
        max_length=600,
    ),
]


class IamConfig(StrictModel):
    """Settings applied to every IAM role the app creates."""

    permissions_boundary_arn: PolicyArn | None = Field(
        default=None, description="A managed policy put as permissions boundary on every role."
    )
    role_path: Annotated[
        str,
        matching(
            r"^/([\x21-\x7e]+/)?$",
            "an IAM path that starts and ends with '/', like /hyperpod/",
            max_length=512,
        ),
    ] = Field(default="/", description="IAM path of every role the app creates, e.g. /hyperpod/.")

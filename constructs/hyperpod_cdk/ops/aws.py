"""boto3 sessions and AWS errors, shared by the preflight and status commands.

boto3 and botocore are imported only inside functions (through importlib, so
the type checker needs no stubs for them): ``import hyperpod_cdk`` never needs
them. Clients are plain ``Any``; every call site names the fields it reads.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

# A function that returns the boto3 client of a service ("ec2", "sagemaker", ...).
ClientFactory = Callable[[str], Any]

# Error codes with which AWS rejects the credentials themselves (not a missing permission).
CREDENTIAL_ERROR_CODES = frozenset(
    {
        "AuthFailure",  # EC2
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "InvalidToken",
        "RequestExpired",  # a clock far off, or a signature made too long ago
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
    }
)

_LOGIN_HINT = (
    "set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), "
    "run `aws configure` or `aws sso login`, then retry"
)


class AwsUnavailable(Exception):
    """No usable AWS credentials, or AWS cannot be reached: the command stops with one line."""


def _botocore_exceptions() -> Any:
    try:
        return importlib.import_module("botocore.exceptions")
    except ImportError:
        return None


def session_clients(region: str, profile: str | None = None) -> ClientFactory:
    """Clients of one boto3 session in ``region`` (one client per service, made on first use).

    :raises AwsUnavailable: boto3 is not installed, or ``profile`` does not exist.
    """
    try:
        boto3 = importlib.import_module("boto3")
        botocore_config = importlib.import_module("botocore.config")
    except ImportError:
        raise AwsUnavailable(
            "boto3 is not installed; install the library with its ops extra "
            "(`pip install 'hyperpod-cdk[ops]'`), or inside this repository run `make bootstrap`"
        ) from None
    try:
        session = boto3.session.Session(region_name=region, profile_name=profile)
    except Exception as exc:
        reason = unavailable_reason(exc)
        if reason is None:
            raise
        raise AwsUnavailable(reason) from None
    settings = botocore_config.Config(
        retries={"mode": "standard", "max_attempts": 5}, user_agent_extra="hyperpod-cdk-ops"
    )
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            clients[service] = session.client(service, config=settings)
        return clients[service]

    return client


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ``ClientError`` (None for any other exception)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code else None


def error_message(exc: BaseException) -> str:
    """The AWS error message of a ``ClientError`` (else the exception's text)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        message = response.get("Error", {}).get("Message")
        if message:
            return str(message)
    return str(exc)


def is_client_error(exc: BaseException) -> bool:
    """True for an error AWS answered with (botocore ``ClientError``)."""
    return error_code(exc) is not None


def describe_error(exc: BaseException, clients: Iterable[Any] = ()) -> str:
    """``ec2:DescribeVpcs returned UnauthorizedOperation: <message>``.

    The IAM prefix comes from the first of ``clients`` that has the failed operation.
    """
    operation = str(getattr(exc, "operation_name", "") or "the AWS call")
    action = operation
    for client in clients:
        model = client.meta.service_model
        if operation in model.operation_names:
            action = f"{model.signing_name}:{operation}"
            break
    return f"{action} returned {error_code(exc)}: {error_message(exc)}"


def unavailable_reason(exc: BaseException) -> str | None:
    """One line saying why no AWS call can succeed, or None when ``exc`` is something else."""
    code = error_code(exc)
    if code in CREDENTIAL_ERROR_CODES:
        return f"AWS rejected the credentials ({code}: {error_message(exc)}); {_LOGIN_HINT}"
    if code is not None:
        return None
    errors = _botocore_exceptions()
    if errors is None:
        return None
    if isinstance(exc, errors.NoCredentialsError):
        return f"no AWS credentials found; {_LOGIN_HINT}"
    if isinstance(exc, errors.PartialCredentialsError):
        return f"incomplete AWS credentials ({exc}); {_LOGIN_HINT}"
    if isinstance(exc, errors.SSOError | errors.TokenRetrievalError | errors.SSOTokenLoadError):
        return f"the AWS SSO session is missing or expired ({exc}); run `aws sso login` and retry"
    if isinstance(exc, errors.CredentialRetrievalError | errors.UnknownCredentialError):
        return f"AWS credentials could not be loaded ({exc}); {_LOGIN_HINT}"
    if isinstance(exc, errors.ProfileNotFound):
        return f"{exc}; name an existing profile (aws configure list-profiles)"
    if isinstance(exc, errors.ConnectionError):
        return f"cannot reach AWS ({exc}); check the network or proxy settings"
    return None


def call_or_none(method: Callable[..., Any], missing: Iterable[str], **params: Any) -> Any:
    """``method(**params)``; None when AWS answers with one of the ``missing`` error codes."""
    try:
        return method(**params)
    except Exception as exc:
        if error_code(exc) in set(missing):
            return None
        raise


def paginate(client: Any, operation: str, key: str, **params: Any) -> Iterator[Any]:
    """Every item under ``key`` of every page of ``operation``."""
    for page in client.get_paginator(operation).paginate(**params):
        yield from page.get(key, [])


# Every IAM action the two commands call (all read-only): the README's policy.
READ_ONLY_ACTIONS = (
    "sts:GetCallerIdentity",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeVpcs",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeImages",
    "kms:DescribeKey",
    "kms:GetKeyPolicy",
    "servicequotas:ListServiceQuotas",
    "sagemaker:DescribeTrainingPlan",
    "sagemaker:DescribeCluster",
    "sagemaker:ListClusterNodes",
    "fsx:DescribeFileSystems",
    "eks:DescribeCluster",
    "eks:DescribeAddonVersions",
    "eks:ListAddons",
    "ecr:BatchGetImage",
    "rds:DescribeDBEngineVersions",
    "cloudformation:DescribeStacks",
    "cloudformation:DescribeStackResource",
    "ssm:GetParameter",
)

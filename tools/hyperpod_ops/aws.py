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

# Error codes of a throttled request (botocore's standard retry mode retries exactly these).
THROTTLING_ERROR_CODES = frozenset(
    {
        "BandwidthLimitExceeded",
        "EC2ThrottledException",
        "LimitExceededException",
        "PriorRequestNotComplete",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        "ThrottledException",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "TransactionInProgressException",
    }
)

# How a command's user names a profile; each command passes its own (make: OPS_ARGS, CDK_ARGS).
PROFILE_OPTION = "--profile NAME"

# botocore's settings for every client: standard retries (throttling included), 5 attempts.
MAX_ATTEMPTS = 5


def login_hint(profile_option: str = PROFILE_OPTION) -> str:
    """What to do when there are no usable credentials, naming how this command takes a profile."""
    return (
        f"set AWS_PROFILE=NAME or pass {profile_option}, or set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY (`aws configure` sets up a profile), then retry"
    )


def one_line(text: str) -> str:
    """``text`` on one line: botocore messages may carry a credential process's stderr."""
    return " ".join(text.split())


class AwsUnavailable(Exception):
    """No usable AWS credentials, or AWS cannot be reached: the command stops with one line.

    ``error`` is the exception that made AWS unusable, when there is one: each command words its
    reason with :func:`unavailable_reason` (which names that command's profile option).
    ``stage`` says what was being set up when ``error`` came: ``config`` (reading the AWS CLI's
    configuration) or ``credentials`` (loading them); it words an error no rule below knows.
    """

    def __init__(
        self, reason: str, *, error: BaseException | None = None, stage: str = "config"
    ) -> None:
        super().__init__(one_line(reason))
        self.error = error
        self.stage = stage


def _botocore_exceptions() -> Any:
    try:
        return importlib.import_module("botocore.exceptions")
    except ImportError:
        return None


def session_clients(region: str, profile: str | None = None) -> ClientFactory:
    """Clients of one boto3 session in ``region`` (one client per service, made on first use).

    The AWS CLI's files are read and the credentials loaded here, before any command's first
    call: every problem of either (a broken ~/.aws/config, a missing profile, a failing
    ``credential_process``, an expired SSO session, no credentials at all) is then one
    :class:`AwsUnavailable`, whatever botocore raised, instead of a traceback from the middle of
    a command.

    :raises AwsUnavailable: boto3 is not installed, the configuration cannot be used, or there
        are no usable credentials.
    """
    try:
        boto3 = importlib.import_module("boto3")
        botocore_config = importlib.import_module("botocore.config")
    except ImportError:
        raise AwsUnavailable(
            "boto3 is not installed; install the tools package with its dependencies "
            "(`pip install ./tools`), or inside this repository run `make bootstrap`"
        ) from None
    try:
        session = boto3.session.Session(region_name=region, profile_name=profile)
    except Exception as exc:
        raise _unusable(exc, "config") from None
    _load_credentials(session)
    settings = botocore_config.Config(
        retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS},
        user_agent_extra="hyperpod-cdk-ops",
    )
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            try:
                clients[service] = session.client(service, config=settings)
            except Exception as exc:
                raise _unusable(exc, "config") from None
        return clients[service]

    return client


def _unusable(exc: BaseException, stage: str) -> AwsUnavailable:
    """``exc`` (raised while the session was set up) as the one-line error of the command."""
    return AwsUnavailable(_fallback_reason(exc, stage), error=exc, stage=stage)


def _load_credentials(session: Any) -> None:
    """Resolve the session's credentials now (botocore defers them to the first call).

    A credential process, an SSO token, a web identity token file or an assumed role are read
    here, so each of their failures, in whatever form botocore raises it (its own exceptions, but
    also a JSONDecodeError or a FileNotFoundError), is a credentials problem.
    """
    try:
        credentials = session.get_credentials()
        if credentials is not None:
            credentials.get_frozen_credentials()
    except Exception as exc:
        raise _unusable(exc, "credentials") from None
    if credentials is None:
        errors = _botocore_exceptions()
        raise _unusable(errors.NoCredentialsError(), "credentials")


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


def action_name(exc: BaseException, clients: Iterable[Any] = ()) -> str:
    """The IAM action of the failed call, ``ec2:DescribeVpcs``.

    The prefix comes from the first of ``clients`` that has the failed operation.
    """
    operation = str(getattr(exc, "operation_name", "") or "the AWS call")
    for client in clients:
        model = client.meta.service_model
        if operation in model.operation_names:
            return f"{model.signing_name}:{operation}"
    return operation


def describe_error(exc: BaseException, clients: Iterable[Any] = ()) -> str:
    """``ec2:DescribeVpcs returned UnauthorizedOperation: <message>``."""
    return f"{action_name(exc, clients)} returned {error_code(exc)}: {error_message(exc)}"


def unavailable_reason(exc: BaseException, profile_option: str = PROFILE_OPTION) -> str | None:
    """One line saying why no AWS call can succeed, or None when ``exc`` is something else.

    ``profile_option`` is how the user of this command names a profile (in the login hint).
    Throttling is such a reason only on ``sts:GetCallerIdentity``: that call needs no permission
    and is the first one, so when it is still throttled after botocore's retries nothing else
    will get through; a throttled call inside a check only fails that check.
    """
    if isinstance(exc, AwsUnavailable):
        if exc.error is None:
            return str(exc)
        return _fallback_reason(exc.error, exc.stage, profile_option)
    reason = _reason(exc, profile_option)
    return None if reason is None else one_line(reason)


def throttled_reason(exc: BaseException, clients: Iterable[Any] = ()) -> str | None:
    """One line when ``exc`` says AWS still throttled a call after botocore's retries, else None.

    ``clients`` name the call's IAM prefix, as in :func:`describe_error`.
    """
    if error_code(exc) not in THROTTLING_ERROR_CODES:
        return None
    return _throttled(exc, action_name(exc, clients))


def _throttled(exc: BaseException, action: str) -> str:
    return one_line(
        f"AWS kept throttling {action} through {MAX_ATTEMPTS} attempts ({error_code(exc)}: "
        f"{error_message(exc)}); wait a few minutes, then retry"
    )


def _reason(exc: BaseException, profile_option: str) -> str | None:
    """The reason for ``exc`` by its AWS error code or botocore class; None for any other."""
    code = error_code(exc)
    if code in CREDENTIAL_ERROR_CODES:
        return f"AWS rejected the credentials ({code}: {error_message(exc)}); {login_hint(profile_option)}"
    if (
        code in THROTTLING_ERROR_CODES
        and getattr(exc, "operation_name", None) == "GetCallerIdentity"
    ):
        return _throttled(exc, "sts:GetCallerIdentity")
    errors = _botocore_exceptions()
    if code is not None or errors is None:
        return None
    for names, words in _BOTOCORE_REASONS:
        if isinstance(exc, _classes(errors, names)):
            return words.format(error=exc, hint=login_hint(profile_option))
    return None


# botocore's exception classes (by name: a name this botocore lacks is skipped) and the reason
# given for them, first match wins; {error} is botocore's message, {hint} the login hint.
_BOTOCORE_REASONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("NoCredentialsError",), "no AWS credentials found; {hint}"),
    (("PartialCredentialsError",), "incomplete AWS credentials ({error}); {hint}"),
    (
        ("SSOError", "TokenRetrievalError"),  # SSOTokenLoadError, UnauthorizedSSOTokenError
        "the AWS SSO session is missing or expired ({error}); run `aws sso login` with the "
        "profile you use, then retry",
    ),
    (
        ("LoginError",),  # the `aws login` session
        "the AWS login session is missing or expired ({error}); run `aws login`, then retry",
    ),
    (
        (
            "CredentialRetrievalError",  # credential_process, container or instance metadata
            "UnknownCredentialError",
            "MetadataRetrievalError",
            "RefreshWithMFAUnsupportedError",
            "NoAuthTokenError",
        ),
        "AWS credentials could not be loaded ({error}); {hint}",
    ),
    (("ProfileNotFound",), "{error}; name an existing profile (aws configure list-profiles)"),
    (
        ("ConfigParseError", "ConfigNotFound"),
        "the AWS CLI configuration cannot be read ({error}); fix that file, or point "
        "AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE elsewhere, then retry",
    ),
    (
        (
            "InvalidConfigError",  # a missing source_profile, a loop of them, a credential_source
            "InvalidRegionError",
            "InvalidDefaultsMode",
            "InvalidRetryConfigurationError",
            "InvalidProxiesConfigError",
            "InvalidIMDSEndpointError",
            "InvalidIMDSEndpointModeError",
            "InvalidSTSRegionalEndpointsConfigError",
            "InvalidEndpointConfigurationError",
            "InvalidEndpointDiscoveryConfigurationError",
            "InvalidChecksumConfigError",
            "UnknownSignatureVersionError",
            "UnknownTokenProviderError",
        ),
        "the AWS CLI configuration is not valid ({error}); fix it, then retry",
    ),
    (
        # EndpointConnectionError, ConnectTimeoutError, ProxyConnectionError, SSLError;
        # ReadTimeoutError, ConnectionClosedError
        ("ConnectionError", "HTTPClientError"),
        "cannot reach AWS ({error}); check the network or proxy settings, then retry",
    ),
)


def _classes(errors: Any, names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    return tuple(getattr(errors, name) for name in names if hasattr(errors, name))


def _fallback_reason(exc: BaseException, stage: str, profile_option: str = PROFILE_OPTION) -> str:
    """The reason for an error no rule knows, raised while the session was set up."""
    known = _reason(exc, profile_option)
    if known is not None:
        return one_line(known)
    detail = f"{type(exc).__name__}: {exc}"
    if stage == "credentials":
        return one_line(
            f"AWS credentials could not be loaded ({detail}); {login_hint(profile_option)}"
        )
    return one_line(f"the AWS CLI configuration cannot be used ({detail}); fix it, then retry")


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
    "eks:DescribeAddon",
    "eks:DescribeAddonConfiguration",
    "eks:ListAddons",
    "eks:ListAccessEntries",
    "ecr:BatchGetImage",
    "rds:DescribeDBEngineVersions",
    "cloudformation:DescribeStacks",
    "cloudformation:DescribeStackResource",
    "cloudformation:DescribeType",
    "cloudwatch:DescribeAlarms",
    "sns:GetTopicAttributes",
    "sagemaker:ListClusterExtensionVersions",
    "aps:DescribeWorkspace",
    "aps:DescribeAlertManagerDefinition",
    "iam:GetOpenIDConnectProvider",
    "s3:GetBucketLocation",
    "sso:ListInstances",
    "grafana:ListVersions",
    "ssm:GetParameter",
)

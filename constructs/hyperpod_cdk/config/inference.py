"""``eks.addons.inference``: the HyperPod inference operator in one switch.

``true`` installs the ``amazon-sagemaker-hyperpod-inference`` EKS add-on with everything it needs
(:class:`hyperpod_cdk.eks.inference.HyperPodInference`); a mapping does the same with settings:

- ``gateway``: the add-on's *Inference Gateway* (``inferenceGateway.enabled``), the LLM-aware
  router AWS ships in the same add-on from v2.0.0-eksbuild.2 on, with the certificate issuer
  role its controller needs. Off by default: AWS documents that the gateway's endpoints have
  no request authentication unless each ``InferenceGatewayConfig`` sets ``spec.auth.jwt``
  (SageMaker developer guide, sagemaker-hyperpod-model-deployment-inference-gateway, read
  2026-11-25), so it is opt-in. Without it the operator still gives each model its own
  Application Load Balancer endpoint.
- ``gated_models``: the role through which deployed JumpStart *gated* models are downloaded
  (``jumpstartGatedModelDownloadRoleArn``); ``{namespaces: [...]}`` limits its trust to the
  model service accounts of those namespaces instead of every namespace.
- ``tls_bucket``: an existing bucket for the operator's TLS certificates; left out, the app
  creates ``hyperpod-tls-<env>-<account>-<region>``. The operator's managed policy reaches
  only buckets named ``hyperpod-tls-*``; another name is accepted and the app grants the
  execution role the access AWS documents for it (a config warning says so).
- ``s3_buckets``: buckets the Mountpoint for S3 CSI driver may read and write, besides the
  environment's data bucket (always included).
- ``alb_controller`` and ``keda``: ``install`` (the add-on installs its own AWS Load Balancer
  Controller / KEDA operator, with their IRSA roles) or ``existing`` (the cluster already runs
  one: the add-on gets ``alb: {enabled: false}`` / ``keda: {enabled: false}``, as AWS's
  troubleshooting page documents for a cluster that has them: SageMaker developer guide,
  sagemaker-hyperpod-model-deployment-ts, "missing ALB Controller" / "missing KEDA operator",
  Option 2, read 2026-11-27; a second copy collides with the first and the add-on fails).
  Default ``install`` on a cluster the app creates; an adopted cluster must say which, and
  ``make preflight`` lists what it runs.
- ``oidc_provider_arn``: on an adopted cluster (``eks.cluster_arn``), its existing IAM OIDC
  provider (IAM allows one per issuer, so the app cannot create a second); preflight checks
  it exists. On a cluster the app creates, the app creates the provider.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag, field_validator

from hyperpod_cdk.config.base import IssueSink, StrictModel, matching

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# The operator's managed policy (AmazonSageMakerHyperPodInferenceAccess) reaches TLS buckets
# named with this prefix only; another name needs explicit access (SageMaker developer guide,
# sagemaker-hyperpod-model-deployment-setup: "Bucket should have prefix: hyperpod-tls-*", and
# the policy it lists for a custom bucket name; read 2026-11-25).
TLS_BUCKET_PREFIX = "hyperpod-tls-"
MAX_BUCKET_NAME = 63

# S3 user guide, "General purpose bucket naming rules" (read 2026-11-25): 3-63 characters,
# lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit; no
# two adjacent dots; not an IP address; these prefixes and suffixes are reserved.
BUCKET_NAME_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")

# The IAM OIDC provider of an EKS cluster: oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID>
# (EKS user guide, "Create an IAM OIDC provider for your cluster").
OIDC_PROVIDER_PATTERN = (
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/oidc\.eks\.[a-z0-9-]+\.amazonaws\.com(\.cn)?"
    r"/id/[0-9A-Za-z]+$"
)


def bucket_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid general purpose bucket name, or None."""
    if ".." in name:
        return "two adjacent dots"
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return "the form of an IP address"
    for prefix in RESERVED_BUCKET_PREFIXES:
        if name.startswith(prefix):
            return f"the reserved prefix {prefix!r}"
    for suffix in RESERVED_BUCKET_SUFFIXES:
        if name.endswith(suffix):
            return f"the reserved suffix {suffix!r}"
    return None


def _valid_bucket(name: str) -> str:
    problem = bucket_name_problem(name)
    if problem:
        raise ValueError(f"{name!r} is not a valid S3 bucket name: it has {problem}")
    return name


BucketName = Annotated[
    str,
    matching(
        BUCKET_NAME_PATTERN,
        "an S3 bucket name: 3-63 lowercase letters, digits, dots and hyphens",
        max_length=MAX_BUCKET_NAME,
    ),
    AfterValidator(_valid_bucket),
]
NamespaceName = Annotated[
    str,
    matching(
        # (the node pool name's pattern, written apart: hints are keyed by pattern)
        r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
        "a Kubernetes namespace: lowercase letters, digits and inner hyphens",
        max_length=63,
    ),
]
OidcProviderArn = Annotated[
    str,
    matching(
        OIDC_PROVIDER_PATTERN,
        "an EKS cluster's IAM OIDC provider ARN like arn:aws:iam::111122223333:oidc-provider/"
        "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
    ),
]


class GatedModels(StrictModel):
    """``gated_models`` as a mapping: the gated-model role, trusted by the model service accounts
    of the listed namespaces only."""

    namespaces: list[NamespaceName] = Field(
        min_length=1,
        description="Namespaces whose model service accounts (hyperpod-inference-service-account*) "
        "may download gated models; AWS's setup trusts every namespace.",
    )

    @field_validator("namespaces")
    @classmethod
    def unique(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for name in value:
            if name in seen:
                raise ValueError(f"namespace {name!r} appears twice")
            seen.add(name)
        return value


# true/false, or the mapping (tags left out of key paths, as FsxCsiDriverOption does)
GatedModelsOption = Annotated[
    Annotated[bool, Tag("<switch>")] | Annotated[GatedModels, Tag("<settings>")],
    Discriminator(
        lambda value: "<settings>" if isinstance(value, dict | GatedModels) else "<switch>"
    ),
]


# Who provides a controller the operator needs: the add-on, or the cluster already.
INSTALL = "install"
EXISTING = "existing"
ControllerSource = Literal["install", "existing"]


class InferenceSettings(StrictModel):
    """``eks.addons.inference`` as a mapping: the inference operator, with settings."""

    gateway: bool = Field(
        default=False,
        description="The add-on's Inference Gateway (LLM-aware routing of several models behind "
        "one endpoint) with its certificate issuer role. Its endpoints need spec.auth.jwt for "
        "request authentication (AWS docs).",
    )
    gated_models: GatedModelsOption = Field(
        default=False,
        description="A role to download JumpStart gated models; {namespaces: [...]} trusts the "
        "model service accounts of those namespaces only.",
    )
    tls_bucket: BucketName | None = Field(
        default=None,
        description="An existing bucket for the operator's TLS certificates; default: a new "
        "bucket hyperpod-tls-<env>-<account>-<region> (TLS-only, encrypted, versioned, retained).",
    )
    s3_buckets: list[BucketName] = Field(
        default_factory=list,
        description="Buckets the Mountpoint for S3 CSI driver may read and write, besides the "
        "environment's data bucket.",
    )
    alb_controller: ControllerSource | None = Field(
        default=None,
        description="install: the add-on installs its AWS Load Balancer Controller (and its IRSA "
        "role); existing: the cluster already runs one (alb.enabled: false). Default install on a "
        "cluster the app creates; required on an adopted cluster (eks.cluster_arn).",
    )
    keda: ControllerSource | None = Field(
        default=None,
        description="install: the add-on installs its KEDA operator (and its IRSA role); "
        "existing: the cluster already runs KEDA (keda.enabled: false). Default install on a "
        "cluster the app creates; required on an adopted cluster (eks.cluster_arn).",
    )
    oidc_provider_arn: OidcProviderArn | None = Field(
        default=None,
        description="Adopted cluster (eks.cluster_arn) only, and required there: its existing IAM "
        "OIDC provider. The app creates the provider of a cluster it creates.",
    )

    @property
    def gated_model_namespaces(self) -> list[str] | None:
        """The namespaces the gated-model role trusts; None: every namespace."""
        value = self.gated_models
        return list(value.namespaces) if isinstance(value, GatedModels) else None

    @property
    def gated_models_enabled(self) -> bool:
        return self.gated_models is not False

    @property
    def installs_alb_controller(self) -> bool:
        """The add-on installs its own AWS Load Balancer Controller (``alb.enabled``)."""
        return self.alb_controller != EXISTING

    @property
    def installs_keda(self) -> bool:
        """The add-on installs its own KEDA operator (``keda.enabled``)."""
        return self.keda != EXISTING


# true/false, or the mapping
InferenceOption = Annotated[
    Annotated[bool, Tag("<switch>")] | Annotated[InferenceSettings, Tag("<settings>")],
    Discriminator(
        lambda value: "<settings>" if isinstance(value, dict | InferenceSettings) else "<switch>"
    ),
]


def inference_settings(value: bool | InferenceSettings) -> InferenceSettings | None:
    """The settings of an ``eks.addons.inference`` value; None when it is off."""
    if isinstance(value, InferenceSettings):
        return value
    return InferenceSettings() if value else None


def default_tls_bucket_name(environment: str, account: str, region: str) -> str:
    """The TLS bucket the app creates: ``hyperpod-tls-<env>-<account>-<region>`` (the prefix
    the operator's managed policy reaches; account and region make it unique in S3)."""
    return f"{TLS_BUCKET_PREFIX}{environment}-{account}-{region}"


# The operator's execution role: AWS's chart, installed as the add-on, refuses an executionRoleArn
# whose role name does not start with this prefix (aws/sagemaker-hyperpod-cli@011ca927:
# helm_chart/HyperPodHelmChart/charts/inference-operator/templates/_validateRequiredValues.tpl,
# "executionRoleArn must have a role name with prefix 'SageMakerHyperPodInference'"), and the
# operator's managed policy AmazonSageMakerHyperPodInferenceAccess (v3, AllowPassRoleToSageMaker)
# passes only arn:aws:iam::*:role/SageMakerHyperPodInference*, which a role under a path
# (role/hyperpod/...) does not match. So the role has this prefix and the path /.
OPERATOR_ROLE_PREFIX = "SageMakerHyperPodInference"
# IAM quotas: a role name has at most 64 characters (IAM user guide, "IAM object quotas").
MAX_ROLE_NAME = 64
_HASH_LENGTH = 8


def operator_role_name(environment: str, region: str) -> str:
    """The inference operator's execution role: ``SageMakerHyperPodInference-<env>-<region>``
    (IAM role names are per account, so environment and region make it unique); when that
    passes IAM's 64 characters, the environment name is cut and a hash of both appended, so
    two environments never share a name."""
    name = f"{OPERATOR_ROLE_PREFIX}-{environment}-{region}"
    if len(name) <= MAX_ROLE_NAME:
        return name
    digest = hashlib.sha256(f"{environment}/{region}".encode()).hexdigest()[:_HASH_LENGTH]
    room = MAX_ROLE_NAME - len(OPERATOR_ROLE_PREFIX) - len(region) - _HASH_LENGTH - 3
    return f"{OPERATOR_ROLE_PREFIX}-{environment[:room].rstrip('-')}-{region}-{digest}"


# -- cross-key rules --------------------------------------------------------------------------


_PATH = "eks.addons.inference"
_ACCOUNT_DIGITS = 12


def check_inference(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``eks.addons.inference`` into ``out``, each with its key path."""
    if cfg.eks is None:
        return
    settings = inference_settings(cfg.eks.addons.inference)
    if settings is None:
        return
    if cfg.is_slurm:
        out.error(
            _PATH,
            "the HyperPod inference operator is an EKS add-on: it needs orchestrator: eks",
        )
        return
    if cfg.eks.addons.fsx_csi_driver is False:
        out.error(
            "eks.addons.fsx_csi_driver",
            "false turns off the FSx CSI driver add-on, which the inference operator needs "
            "(a required add-on of amazon-sagemaker-hyperpod-inference); remove the key or set "
            "it to true",
        )
    adopted = cfg.eks.cluster_arn is not None
    provider = settings.oidc_provider_arn
    if adopted and provider is None:
        out.error(
            f"{_PATH}.oidc_provider_arn",
            "an adopted cluster (eks.cluster_arn) needs its IAM OIDC provider named here: the "
            "operator's roles are IAM roles for service accounts. Find it with aws eks "
            "describe-cluster --query cluster.identity.oidc.issuer; create it with eksctl utils "
            "associate-iam-oidc-provider if there is none",
        )
    if not adopted and provider is not None:
        out.error(
            f"{_PATH}.oidc_provider_arn",
            "applies only to an adopted cluster (eks.cluster_arn): the app creates the OIDC "
            "provider of the cluster it creates",
        )
    if provider is not None:
        provider_account = provider.split(":")[4]
        if cfg.account and provider_account != cfg.account:
            out.error(
                f"{_PATH}.oidc_provider_arn",
                f"is in account {provider_account}; the roles that trust it are in the "
                f"environment's account {cfg.account}, and IAM trusts only a provider of its own "
                "account",
            )
        issuer_region = provider.split("oidc.eks.", 1)[1].split(".", 1)[0]
        if issuer_region != cfg.region:
            out.error(
                f"{_PATH}.oidc_provider_arn",
                f"is the provider of a cluster in {issuer_region}; the cluster is in {cfg.region}",
            )
    for key, article, what in (
        ("alb_controller", "an", "AWS Load Balancer Controller"),
        ("keda", "a", "KEDA operator"),
    ):
        source = getattr(settings, key)
        if adopted and source is None:
            out.error(
                f"{_PATH}.{key}",
                f"an adopted cluster (eks.cluster_arn) must say whether it already runs {article} {what}: "
                f"{EXISTING} (the add-on installs none; a second one collides with it) or "
                f"{INSTALL} (the add-on installs its own); make preflight lists what the cluster "
                "runs",
            )
        if not adopted and source == EXISTING:
            out.error(
                f"{_PATH}.{key}",
                f"{EXISTING} applies only to an adopted cluster (eks.cluster_arn): a cluster the "
                f"app creates runs no {what} but the add-on's; leave the key out or set {INSTALL}",
            )
    tls = settings.tls_bucket
    if tls is None:
        name = default_tls_bucket_name(cfg.name, cfg.account or "0" * _ACCOUNT_DIGITS, cfg.region)
        if len(name) > MAX_BUCKET_NAME:
            out.error(
                f"{_PATH}.tls_bucket",
                f"the TLS bucket the app would create, {name!r}, has {len(name)} characters; S3 "
                f"allows {MAX_BUCKET_NAME}: name an existing bucket (ideally hyperpod-tls-...), or "
                "shorten the environment name",
            )
    elif not tls.startswith(TLS_BUCKET_PREFIX):
        out.warn(
            f"{_PATH}.tls_bucket",
            f"{tls!r} does not start with {TLS_BUCKET_PREFIX!r}, the prefix the operator's managed "
            "policy reaches; the app grants the execution role the read, write and delete "
            "access AWS documents for such a bucket",
        )
    seen: set[str] = set()
    for index, bucket in enumerate(settings.s3_buckets):
        path = f"{_PATH}.s3_buckets[{index}]"
        if bucket in seen:
            out.error(path, f"bucket {bucket!r} appears twice")
        seen.add(bucket)
        if tls is not None and bucket == tls:
            out.error(
                path,
                f"{bucket!r} is the TLS bucket, which holds the endpoints' certificates and keys; "
                "model pods must not mount it",
            )

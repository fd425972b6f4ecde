"""The root of an environment YAML file: :class:`EnvironmentConfig` composes the sections, each
of which lives in a module of its own with its models and its rules (:mod:`.network`,
:mod:`.storage`, :mod:`.cluster`, :mod:`.eks`, ...), and the rules of the top-level keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from hyperpod_cdk import facts
from hyperpod_cdk.config.alerts import AlertsConfig
from hyperpod_cdk.config.base import (
    IssueSink,
    StrictModel,
    eks_only,
    matching,
    unique,
)
from hyperpod_cdk.config.cluster import ClusterConfig
from hyperpod_cdk.config.eks import EksConfig, FsxCsiDriver
from hyperpod_cdk.config.iam import IamConfig
from hyperpod_cdk.config.network import NetworkConfig
from hyperpod_cdk.config.observability import ObservabilityConfig
from hyperpod_cdk.config.storage import StorageConfig

# Tag keys hyperpod-cdk sets itself (stacks/base.py, eks/addons.py ENVIRONMENT_TAG): never
# from the config's tags.
RESERVED_TAG_PREFIX = "hyperpod-cdk:"
RESERVED_TAG_KEYS = frozenset({"hyperpod-environment"})

# Tags the app adds itself; AWS allows 50 per resource.
MAX_USER_TAGS = 45

CompliancePack = Literal["AwsSolutions", "NIST80053R5", "HIPAA", "PCIDSS321"]


def default_compliance_packs() -> list[CompliancePack]:
    """The packs an environment (or pipeline) file gets when it names none."""
    return ["AwsSolutions"]


EnvName = Annotated[
    str,
    matching(
        r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$",
        "2-32 lowercase letters, digits and hyphens, starting with a letter",
    ),
]


def _known_region(value: str) -> str:
    """A region of facts.REGIONS (commercial, GovCloud, China)."""
    if value not in facts.REGIONS:
        guess = facts.close_region(value)
        hint = f"did you mean {guess!r}?" if guess else "use one like us-west-2"
        raise ValueError(
            f"{value!r} is not a region of the AWS commercial, GovCloud or China partitions "
            f"({facts.REGIONS_AS_OF}); {hint}"
        )
    return value


Region = Annotated[
    str,
    matching(facts.REGION_PATTERN, "a region name like us-west-2"),
    AfterValidator(_known_region),
]
Account = Annotated[str, matching(facts.ACCOUNT_PATTERN, "a 12-digit AWS account id, quoted")]
TagKey = Annotated[
    str,
    matching(
        r"^[\w\s.:/=+@-]+$",
        "letters, digits, spaces and _ . : / = + - @",
        min_length=1,
        max_length=128,
    ),
]
TagValue = Annotated[
    str,
    matching(r"^[\w\s.:/=+@-]*$", "letters, digits, spaces and _ . : / = + - @", max_length=256),
]


class EnvironmentConfig(StrictModel):
    """One HyperPod environment: the root of an environment YAML file."""

    name: EnvName = Field(description="Prefixes stacks and resource names.")
    account: Account | None = Field(
        default=None, description="Else CDK_DEFAULT_ACCOUNT; synth works without it."
    )
    region: Region = Field(
        description="The AWS Region of the environment (commercial, GovCloud or China partition), "
        "e.g. us-west-2."
    )
    orchestrator: Literal["slurm", "eks"] = Field(
        default="slurm",
        description="What orchestrates the HyperPod cluster: slurm or eks (an EKS cluster, created"
        " or adopted with the eks section); default slurm.",
    )
    tags: dict[TagKey, TagValue] = Field(
        default_factory=dict, description="Applied to every taggable resource."
    )
    compliance_packs: list[CompliancePack] = Field(
        default_factory=default_compliance_packs,
        description="cdk-nag rule packs every stack is checked against at synth (besides the "
        "project's HyperPod rules); default: AwsSolutions.",
    )
    iam: IamConfig = Field(
        default_factory=IamConfig,
        description="Settings applied to every IAM role the app creates; left out: no permissions "
        "boundary, path /.",
    )
    network: NetworkConfig = Field(
        description="The VPC the environment runs in: created, or adopted with vpc_id."
    )
    storage: StorageConfig = Field(
        default_factory=StorageConfig,
        description="Shared storage of the environment; left out: a new FSx for Lustre file system"
        " with the defaults of storage.fsx.",
    )
    cluster: ClusterConfig = Field(description="The HyperPod cluster and its instance groups.")
    eks: EksConfig | None = Field(
        default=None,
        description="The EKS cluster that orchestrates HyperPod; null: a cluster the app creates, "
        "with the defaults below.",
        json_schema_extra=eks_only(),
    )
    alerts: AlertsConfig | None = Field(
        default=None, description="Who is told when the cluster breaks (docs/alerts.md)."
    )
    observability: ObservabilityConfig | None = Field(
        default=None,
        description="Metrics in Amazon Managed Prometheus, their alert rules and Grafana, on "
        "both orchestrators (docs/observability.md).",
    )

    @field_validator("compliance_packs")
    @classmethod
    def _unique_packs(cls, value: list[str]) -> list[str]:
        return unique(value, "compliance packs")

    @field_validator("tags")
    @classmethod
    def _no_aws_prefix(cls, value: dict[str, str]) -> dict[str, str]:
        reserved = [k for k in value if k.lower().startswith("aws:")]
        if reserved:
            raise ValueError(f"tag key {reserved[0]!r} uses the prefix 'aws:', which AWS reserves")
        # the product's own tags: policies key on them (the FSx CSI controller may create file
        # systems tagged hyperpod-cdk:environment), so a config tag must not put them on the
        # environment's resources (security review M1, issue 34)
        ours = [
            k
            for k in value
            if k.lower().startswith(RESERVED_TAG_PREFIX) or k.lower() in RESERVED_TAG_KEYS
        ]
        if ours:
            raise ValueError(
                f"tag key {ours[0]!r} is the product's own (keys starting with "
                f"{RESERVED_TAG_PREFIX!r} and {', '.join(sorted(RESERVED_TAG_KEYS))} are set by "
                "hyperpod-cdk and IAM policies rely on them); choose another key"
            )
        return value

    @property
    def cluster_name(self) -> str:
        """The HyperPod cluster name."""
        return self.cluster.name or self.name

    @property
    def is_slurm(self) -> bool:
        """True for Slurm orchestration."""
        return self.orchestrator == "slurm"

    @property
    def eks_settings(self) -> EksConfig:
        """The ``eks`` section, defaults when it is absent."""
        return self.eks or EksConfig()

    @property
    def fsx_csi_driver_enabled(self) -> bool:
        """``eks.addons.fsx_csi_driver``; left out, on when the environment has a file system
        or the inference operator (which needs the driver) is on."""
        value = self.eks_settings.addons.fsx_csi_driver
        if value is None:
            return (
                self.storage.fsx.enabled or self.eks_settings.addons.inference_settings is not None
            )
        return True if isinstance(value, FsxCsiDriver) else value

    @property
    def needs_eks_addons(self) -> bool:
        """EKS only: something is installed once the cluster has nodes (the ``eks-addons``
        stack): CoreDNS on a created cluster, else the optional add-ons asked for."""
        if self.is_slurm:
            return False
        eks = self.eks_settings
        addons = eks.addons
        return (
            eks.cluster_arn is None
            or addons.training_operator
            or addons.task_governance
            or self.observability_enabled
            or addons.inference_settings is not None
            or self.fsx_csi_driver_enabled
            # the node pools' objects (the cluster-objects release)
            or bool(self.cluster.node_pools)
        )

    @property
    def observability_enabled(self) -> bool:
        """Metrics are on: ``observability.enabled``, or on EKS the shorthand
        ``eks.addons.observability: true``."""
        if self.observability is not None and self.observability.enabled:
            return True
        return not self.is_slurm and self.eks_settings.addons.observability

    @property
    def eks_cluster_name(self) -> str:
        """Name of the EKS cluster the app creates: ``<name>-eks``."""
        return f"{self.name}-eks"


# -- cross-key rules of the top-level keys ----------------------------------------------------


def check_top_level(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of the top-level keys (tags, the account of adopted ARNs)."""
    _check_tags(cfg, out)
    _check_arn_accounts(cfg, out)


def _check_tags(cfg: EnvironmentConfig, out: IssueSink) -> None:
    if len(cfg.tags) > MAX_USER_TAGS:
        out.error(
            "tags",
            f"{len(cfg.tags)} tags; at most {MAX_USER_TAGS} (AWS allows 50 per resource, the app adds some)",
        )


# Why each ARN a config adopts must belong to the environment's own account. Left out, because
# AWS lets them be in another account: eks.admin_principal_arns (STANDARD access entries take
# principals of any account: EKS user guide "Create access entries") and the KMS keys
# storage.fsx.kms_key_arn and instance_groups[].ebs_kms_key_arn (a key policy can let other
# accounts use a key: KMS developer guide "Allowing users in other accounts to use a KMS key";
# their region is checked apart).
_SAME_ACCOUNT_BOUNDARY = "a permissions boundary is a managed policy of the roles' own account"
_SAME_ACCOUNT_ROLE = "HyperPod is passed roles of its own account only"
_SAME_ACCOUNT_PLAN = "a training plan reserves capacity for its own account"
_SAME_ACCOUNT_EKS = "HyperPod is orchestrated by an EKS cluster of its own account"
_SAME_ACCOUNT_KUBECTL = (
    "it is the execution role of the kubectl handler Lambda function, which takes a role of its "
    "own account"
)


def _same_account_arns(cfg: EnvironmentConfig) -> Iterable[tuple[str, str, str]]:
    """(key path, ARN, why it must be in the environment's account) of every such ARN set."""
    cluster = cfg.cluster
    if cfg.iam.permissions_boundary_arn:
        yield (
            "iam.permissions_boundary_arn",
            cfg.iam.permissions_boundary_arn,
            _SAME_ACCOUNT_BOUNDARY,
        )
    for key in ("execution_role_arn", "cluster_role_arn"):
        arn = getattr(cluster, key)
        if arn:
            yield f"cluster.{key}", arn, _SAME_ACCOUNT_ROLE
    for i, group in enumerate(cluster.instance_groups):
        path = f"cluster.instance_groups[{i}]"
        if group.execution_role_arn:
            yield f"{path}.execution_role_arn", group.execution_role_arn, _SAME_ACCOUNT_ROLE
        if group.training_plan_arn:
            yield f"{path}.training_plan_arn", group.training_plan_arn, _SAME_ACCOUNT_PLAN
    eks = cfg.eks
    if eks is not None and eks.cluster_arn:
        yield "eks.cluster_arn", eks.cluster_arn, _SAME_ACCOUNT_EKS
    if eks is not None and eks.kubectl_role_arn:
        yield "eks.kubectl_role_arn", eks.kubectl_role_arn, _SAME_ACCOUNT_KUBECTL


def _check_arn_accounts(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """The ARNs that must belong to the deploying account belong to ``account`` when it is set."""
    if cfg.account is None:
        return
    for path, arn, why in _same_account_arns(cfg):
        account = arn.split(":")[4]
        if account not in (cfg.account, "aws"):  # "aws": an AWS managed policy
            out.error(
                path,
                f"belongs to account {account} but the key account says {cfg.account}; {why}: "
                "fix one of the two",
            )

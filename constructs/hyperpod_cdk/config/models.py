"""Typed, frozen models of the environment YAML (SPEC section 4).

The models check the shape and the per-field limits of every key; the rules
that relate several keys live in :mod:`hyperpod_cdk.config.rules`, so that all
problems are reported in one run. A section with a module of its own
(:mod:`~hyperpod_cdk.config.node_setup`, :mod:`~hyperpod_cdk.config.storage`)
holds its models and its rules together. Every model forbids unknown keys: they
are usually typos; numbers are YAML numbers only (:data:`WHOLE_NUMBER`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    field_validator,
    model_validator,
)

from hyperpod_cdk import facts

# The hint shown when a value does not match a pattern, by pattern (read by the loader).
PATTERN_HINTS: dict[str, str] = {}


def _matching(regex: str, hint: str, **limits: Any) -> StringConstraints:
    """A string constraint whose mismatch message tells what is expected: ``hint``."""
    PATTERN_HINTS[regex] = hint
    return StringConstraints(pattern=regex, **limits)


def describe_value(value: Any) -> str:
    """How a YAML value reads to the person who wrote it: ``a boolean (true)``, ``a number (5)``,
    ``text ('12')``, ``null``, ``a list``, ``a mapping``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"text ({value[:40]!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _whole_number(value: Any) -> Any:
    """A YAML integer and nothing else. Pydantic's lax mode would read ``true`` as 1, ``"12"`` as
    12 and ``2.0`` as 2; each of those is a mistake in a config file (a quoted number is text)."""
    if isinstance(value, bool | str):
        fix = ""
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
            fix = f"; write {value.strip()} without quotes"
        raise ValueError(f"expected a number, got {describe_value(value)}{fix}")
    if isinstance(value, float):
        fix = f"; write {int(value)}" if value.is_integer() else ""
        raise ValueError(f"expected a whole number, got {value}{fix}")
    return value


# Every int (and int Literal) of the config carries this, *after* its Field limits (so that the
# JSON Schema keeps minimum/maximum): ``Annotated[int, Field(ge=0), WHOLE_NUMBER]``.
WHOLE_NUMBER = BeforeValidator(_whole_number)


# Tag keys hyperpod-cdk sets itself (stacks/base.py, eks/addons.py ENVIRONMENT_TAG): never
# from the config's tags.
RESERVED_TAG_PREFIX = "hyperpod-cdk:"
RESERVED_TAG_KEYS = frozenset({"hyperpod-environment"})


class StrictModel(BaseModel):
    """Base of every config model: frozen, and unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    def is_set(self, key: str) -> bool:
        """True when the YAML gave ``key`` explicitly (not the default)."""
        return key in self.model_fields_set


# node_setup builds on StrictModel, so it is imported once StrictModel exists.
from hyperpod_cdk.config.node_setup import NodeSetup  # noqa: E402

AzId = Annotated[
    str,
    _matching(
        facts.AZ_ID_PATTERN,
        "an AZ ID like usw2-az2 (an AZ name like us-west-2a maps to different AZs per account)",
    ),
    Field(description="An Availability Zone *ID*, e.g. usw2-az2 (not a name like us-west-2a)."),
]


def _parse_cidr(value: Any) -> Any:
    """An IPv4 CIDR block; a block with host bits set names the network it meant. Only text (or
    a default already parsed): ipaddress would take a number, or true, as an address."""
    if isinstance(value, ipaddress.IPv4Network):
        return value
    if not isinstance(value, str):
        raise ValueError(
            f"expected an IPv4 CIDR block like 10.1.0.0/16, got {describe_value(value)}"
        )
    try:
        return ipaddress.IPv4Network(value)
    except ValueError:
        pass
    try:
        network = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise ValueError(f"{value!r} is not an IPv4 CIDR block; use one like 10.1.0.0/16") from None
    raise ValueError(f"{value!r} has host bits set; the block is {network}")


def _decimal_version(value: Any) -> Any:
    """YAML reads an unquoted 2.15 or 1.30 as a number: take it as the version it shows."""
    if isinstance(value, float):
        return f"{value:.2f}"
    return value


# what an absolute path (storage.fsx.mount_path, ...) may hold
ABSOLUTE_PATH_PATTERN = r"^/[A-Za-z0-9._/-]*$"


def has_relative_parts(path: str) -> bool:
    """True when an absolute ``path`` has a '.', '..' or empty ('//') part."""
    return "//" in path or any(part in (".", "..") for part in path.split("/")[1:])


def is_system_directory(path: str) -> bool:
    """True for a directory of the node's own (:data:`facts.RESERVED_MOUNT_PATHS`) or one inside
    it (/etc/ssh, /var/lib, /usr/local, /opt/slurm, /opt/dlami/nvme: a mount there hides sshd's
    keys, Docker, Slurm or the NVMe; security review L2, issue 34). Only / and /tmp are
    refused themselves, not what is under them: /home, /fsx and a scratch folder under /tmp
    hide nothing of the node's."""
    clean = path.rstrip("/") or "/"
    return any(
        clean == reserved or (reserved not in ("/", "/tmp") and clean.startswith(reserved + "/"))
        for reserved in facts.RESERVED_MOUNT_PATHS
    )


def _clean_path(value: str) -> str:
    if has_relative_parts(value):
        raise ValueError(f"{value!r} is not a plain absolute path; no '.', '..' or '//' parts")
    return value


Cidr = Annotated[
    ipaddress.IPv4Network,
    BeforeValidator(_parse_cidr),
    Field(description="An IPv4 CIDR block, e.g. 10.1.0.0/16."),
]
VpcId = Annotated[str, _matching(r"^vpc-[0-9a-f]{8,17}$", "a VPC id like vpc-0123456789abcdef0")]
SubnetId = Annotated[
    str, _matching(r"^subnet-[0-9a-f]{8,17}$", "a subnet id like subnet-0123456789abcdef0")
]
SecurityGroupId = Annotated[
    str, _matching(r"^sg-[0-9a-f]{8,17}$", "a security group id like sg-0123456789abcdef0")
]
AbsolutePath = Annotated[
    str,
    _matching(ABSOLUTE_PATH_PATTERN, "an absolute path like /fsx", max_length=4096),
    AfterValidator(_clean_path),
]
RoleArn = Annotated[
    str,
    _matching(
        r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]+$",
        "an IAM role ARN like arn:aws:iam::111122223333:role/name",
        max_length=600,
    ),
]
PolicyArn = Annotated[
    str,
    _matching(
        r"^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/[A-Za-z0-9+=,.@_/-]+$",
        "a managed policy ARN like arn:aws:iam::111122223333:policy/name",
        max_length=600,
    ),
]
KmsKeyArn = Annotated[
    str,
    _matching(
        r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key/[0-9a-fA-F-]{36}|key/mrk-[0-9a-f]{32}|alias/[\w/-]+)$",
        "a KMS key ARN like arn:aws:kms:us-west-2:111122223333:key/<key id> (or an alias ARN)",
    ),
]


def _offered_instance_type(value: str) -> str:
    """An instance type of HyperPod's table (facts.HYPERPOD_INSTANCE_TYPES), or one shaped like
    an instance type name: a type launched after the table is a warning (rules.py), not an error."""
    if value in facts.HYPERPOD_INSTANCE_TYPES or facts.has_instance_type_shape(value):
        return value
    guess = facts.close_instance_type(value, cutoff=0.6)
    hint = f"did you mean {guess!r}?" if guess else "use one like ml.p5.48xlarge or ml.m5.2xlarge"
    raise ValueError(f"{value!r} is not an instance type HyperPod offers; {hint}")


InstanceType = Annotated[
    str,
    _matching(facts.INSTANCE_TYPE_PATTERN, "an ml.* instance type like ml.p5.48xlarge"),
    AfterValidator(_offered_instance_type),
]
# EventBridge-style cron with six fields (minutes hours day-of-month month day-of-week year),
# the ScheduleExpression of ScheduledUpdateConfig.
CRON_PATTERN = r"^cron\(\S+( \S+){5}\)$"
# The alerts section and the rollback alarms (`auto` or names) live in their own module.
from hyperpod_cdk.config.alerts import AlertsConfig, RollbackAlarms  # noqa: E402

# The observability section (metrics, alert rules, Grafana) lives in its own module too.
from hyperpod_cdk.config.observability import ObservabilityConfig  # noqa: E402

CompliancePack = Literal["AwsSolutions", "NIST80053R5", "HIPAA", "PCIDSS321"]
EksLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]


def _default_packs() -> list[CompliancePack]:
    return ["AwsSolutions"]


def _unique(values: list[Any], what: str) -> list[Any]:
    seen: set[Any] = set()
    dupes = [v for v in values if v in seen or seen.add(v)]  # type: ignore[func-returns-value]
    if dupes:
        raise ValueError(f"{what} must not repeat; {dupes[0]!r} appears more than once")
    return values


class IamConfig(StrictModel):
    """Settings applied to every IAM role the app creates."""

    permissions_boundary_arn: PolicyArn | None = Field(
        default=None, description="A managed policy put as permissions boundary on every role."
    )
    role_path: Annotated[
        str,
        _matching(
            r"^/([\x21-\x7e]+/)?$",
            "an IAM path that starts and ends with '/', like /hyperpod/",
            max_length=512,
        ),
    ] = Field(default="/", description="IAM path of every role the app creates, e.g. /hyperpod/.")


# the network keys only a VPC the app creates uses (an adopted VPC has them already)
NEW_VPC_KEYS = (
    "cidr",
    "compute_cidr",
    "additional_compute_cidrs",
    "nat_gateways",
    "closed_network",
)


class EgressRule(StrictModel):
    """One more egress rule of the nodes' security group (``network.node_egress``)."""

    port: Annotated[int, Field(ge=1, le=65535), WHOLE_NUMBER] = Field(
        description="The port, or the first port of a range."
    )
    to_port: Annotated[int, Field(ge=1, le=65535), WHOLE_NUMBER] | None = Field(
        default=None, description="The last port of a range (default: port)."
    )
    protocol: Literal["tcp", "udp"] = "tcp"
    cidr: Cidr = Field(description="Where to, e.g. 0.0.0.0/0 or 10.20.0.0/16.")
    description: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = None

    @model_validator(mode="after")
    def _range(self) -> EgressRule:
        if self.to_port is not None and self.to_port < self.port:
            raise ValueError(f"to_port {self.to_port} is below port {self.port}")
        return self


# network.node_egress is a word or a list of rules: the value's own type picks the branch, so a
# problem is reported in that branch only; the tags are dropped from the reported key path
# (UNION_TAG_PREFIX, read by the loader).
UNION_TAG_PREFIX = "<"
NodeEgress = Annotated[
    Annotated[Literal["default", "all"], Tag("<word>")]
    | Annotated[list[EgressRule], Tag("<rules>")],
    Discriminator(lambda value: "<rules>" if isinstance(value, list) else "<word>"),
]


class NetworkConfig(StrictModel):
    """The VPC: created (public subnets, NAT, a HyperPod subnet per AZ) or adopted."""

    vpc_id: VpcId | None = Field(
        default=None, description="Adopt this VPC; then compute_subnet_id is required."
    )
    cidr: Cidr = Field(
        default=ipaddress.IPv4Network("10.0.0.0/16"), description="Primary CIDR of a new VPC."
    )
    compute_cidr: Cidr = Field(
        default=ipaddress.IPv4Network("10.1.0.0/16"),
        description="Secondary CIDR of a new VPC, used whole for the HyperPod subnet (and FSx).",
    )
    availability_zone_id: AzId = Field(
        description="AZ ID of the HyperPod nodes and of FSx, e.g. usw2-az2."
    )
    additional_compute_cidrs: dict[AzId, Cidr] = Field(
        default_factory=dict,
        description="A further HyperPod subnet per AZ ID, for groups with their own availability_zone_id.",
    )
    additional_compute_subnet_ids: dict[AzId, SubnetId] = Field(
        default_factory=dict,
        description="Adopted VPC: the HyperPod subnet of each further AZ ID used by a group.",
    )
    eks_availability_zone_ids: list[AzId] = Field(
        default_factory=list,
        description="eks only: AZ IDs of the EKS control-plane subnets (>= 2).",
    )
    nat_gateways: Annotated[int, Field(ge=0, le=16), WHOLE_NUMBER] = Field(
        default=1, description="NAT gateways of a new VPC (0 with closed_network)."
    )
    compute_subnet_id: SubnetId | None = Field(
        default=None, description="Adopted VPC: the private HyperPod subnet."
    )
    eks_subnet_ids: list[SubnetId] = Field(
        default_factory=list, description="eks only, adopted VPC: EKS control-plane subnets."
    )
    security_group_ids: list[SecurityGroupId] = Field(
        default_factory=list,
        description="Extra groups put on the nodes; each must allow all traffic from and to itself (EFA).",
    )
    interface_endpoints: list[str] = Field(
        default_factory=list,
        description="Interface VPC endpoints to create, e.g. [ssm, logs, ecr.api].",
    )
    closed_network: bool = Field(
        default=False,
        description="No internet gateway or NAT; every endpoint the environment needs.",
    )
    flow_logs: bool = Field(default=True, description="VPC flow logs to CloudWatch Logs (new VPC).")
    node_egress: NodeEgress = Field(
        default="default",
        description="Egress of the nodes' security group besides the group itself (EFA): "
        "default: HTTPS (443), HTTP (80, not in a closed network) and the Lustre ports, so a "
        "job reaches nothing else (no git over SSH); all: every port everywhere (AWS's console "
        "default); a list of {port, to_port, protocol, cidr}: the default rules plus these.",
    )

    @field_validator("interface_endpoints")
    @classmethod
    def _known_endpoints(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in facts.INTERFACE_ENDPOINT_SERVICES]
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not an interface endpoint service this app creates; allowed: "
                + ", ".join(facts.INTERFACE_ENDPOINT_SERVICES)
            )
        return _unique(value, "interface endpoints")

    @field_validator("eks_availability_zone_ids", "eks_subnet_ids", "security_group_ids")
    @classmethod
    def _no_repeats(cls, value: list[str]) -> list[str]:
        return _unique(value, "entries")


# The storage section lives in its own module (its models and rules) and builds on the types
# above; FsxConfig, OpenZfsConfig and DataRepositoryAssociation are importable from here.
from hyperpod_cdk.config.storage import (  # noqa: E402, F401
    DataRepositoryAssociation,
    FsxConfig,
    OpenZfsConfig,
    StorageConfig,
)


class TieredStorageConfig(StrictModel):
    """eks only: HyperPod managed tiered checkpointing memory."""

    # AWS documents 20-100 (managed-tier-checkpointing-setup); the service fails on 1-19 today
    memory_percent: Annotated[int, Field(ge=20, le=100), WHOLE_NUMBER] = Field(
        default=20, description="Share of instance memory given to the tiered storage (20-100)."
    )


class SlurmSettings(StrictModel):
    """slurm only: orchestrator-level Slurm settings."""

    config_strategy: Literal["Managed", "Merge", "Overwrite"] | None = Field(
        default=None,
        description="SlurmConfigStrategy; must stay null under Continuous provisioning.",
    )
    accounting_database: bool = Field(
        default=False,
        # AWS doc "Using an external accounting database with SageMaker HyperPod Slurm clusters"
        description="Continuous only: an RDS for MySQL 8.4 database for slurmdbd (HyperPod "
        "takes any MySQL-compatible database slurmdbd supports: RDS for MySQL or Aurora MySQL), "
        "Extended Support off. Needs HyperPod AMIs released after 2026-08-30 (build a custom "
        "image_id on one); HyperPod cannot take it off a cluster again (make preflight checks an "
        "update). A database created with MySQL 8.0 is upgraded in place on the next deploy "
        "(same instance, data, endpoint and secret; slurmdbd pauses for the upgrade): take a "
        "snapshot first (aws rds create-db-snapshot).",
    )
    accounting_instance_class: (
        Annotated[
            str, _matching(r"^db\.[a-z0-9]+\.[a-z0-9]+$", "an RDS instance class like db.r6g.large")
        ]
        | None
    ) = Field(
        default=None,
        description="RDS instance class of the accounting database (default db.t4g.medium).",
    )
    accounting_multi_az: bool = Field(default=False, description="A standby in a second AZ.")
    accounting_availability_zone_ids: list[AzId] = Field(
        default_factory=list,
        description="New VPC: two or more AZ IDs for the database subnets (RDS needs two AZs).",
    )
    accounting_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description="Adopted VPC: private subnets in two or more AZs for the database.",
    )


class ScheduledUpdate(StrictModel):
    """A rolling AMI update window for a group (ScheduledUpdateConfig)."""

    schedule: Annotated[
        str,
        _matching(
            CRON_PATTERN, 'a six-field cron expression like "cron(0 3 ? * SUN *)"', max_length=256
        ),
    ] = Field(description='An EventBridge cron expression, e.g. "cron(0 3 ? * SUN *)".')
    batch_percent: Annotated[int, Field(ge=1, le=100), WHOLE_NUMBER] | None = Field(
        default=None, description="Share of the group updated at once."
    )
    batch_count: Annotated[int, Field(ge=1, le=facts.MAX_INSTANCE_COUNT), WHOLE_NUMBER] | None = (
        Field(default=None, description="Or a number of instances updated at once.")
    )
    wait_seconds: Annotated[int, Field(ge=0, le=3600), WHOLE_NUMBER] | None = Field(
        default=None, description="Wait between batches."
    )
    rollback_alarms: RollbackAlarms = Field(
        default_factory=list,
        description="CloudWatch alarm names that roll the update back (at most 10), or auto: "
        "the app creates the group's alarm (its unhealthy-node and error events).",
    )


# What the config says of a value the HyperPod API has and AWS::SageMaker::Cluster cannot
# express yet (HYPERPOD_FACTS 2026-11-24): refused with this reason, never accepted and dropped.
NOT_IN_CLOUDFORMATION = (
    "is in the HyperPod API but not in CloudFormation (AWS::SageMaker::Cluster) yet, so the "
    "app cannot set it"
)


def _refuse_api_only(value: Any, api_only: tuple[str, ...], instead: str) -> Any:
    for item in value if isinstance(value, list) else [value]:
        if item in api_only:
            raise ValueError(f"{item} {NOT_IN_CLOUDFORMATION}; use {instead}")
    return value


class AutoPatch(StrictModel):
    """Automatic security-patch AMI updates of a group (AutoPatchConfig)."""

    strategy: Literal["WhenIdle", "WhenAllIdle"] = Field(
        description="WhenIdle or WhenAllIdle (DrainFirst is not in CloudFormation yet)."
    )
    batch_percent: Annotated[int, Field(ge=1, le=100), WHOLE_NUMBER] | None = None
    batch_count: Annotated[int, Field(ge=1, le=facts.MAX_INSTANCE_COUNT), WHOLE_NUMBER] | None = (
        None
    )
    wait_seconds: Annotated[int, Field(ge=0, le=3600), WHOLE_NUMBER] | None = None
    rollback_alarms: RollbackAlarms = Field(
        default_factory=list,
        description="As scheduled_update.rollback_alarms: names, [] for none, or auto.",
    )
    # in the API only: accepted as keys so that the rules refuse them with the reason
    idle_wait_seconds: Any = Field(
        default=None, description="IdleWaitWindowInSeconds: not in CloudFormation yet (refused)."
    )
    drain_policy: Any = Field(
        default=None, description="DrainPolicy: not in CloudFormation yet (refused)."
    )

    @field_validator("strategy", mode="before")
    @classmethod
    def _refuse_drain_first(cls, value: Any) -> Any:
        return _refuse_api_only(value, ("DrainFirst",), "WhenIdle or WhenAllIdle")


KubernetesKey = Annotated[
    str,
    _matching(
        r"^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
        "a Kubernetes key like example.com/name (a name of up to 63 letters, digits, '-', '_' and '.')",
    ),
]
KubernetesValue = Annotated[
    str,
    _matching(
        r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
        "a Kubernetes value: up to 63 letters, digits, '-', '_' and '.'",
    ),
]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(StrictModel):
    """eks only: a Kubernetes taint put on the group's nodes."""

    key: KubernetesKey
    value: KubernetesValue | None = None
    effect: TaintEffect


class InstanceGroup(StrictModel):
    """One HyperPod instance group."""

    name: Annotated[
        str,
        _matching(
            facts.INSTANCE_GROUP_NAME_PATTERN,
            "letters, digits and single hyphens, starting and ending with a letter or digit",
            max_length=facts.INSTANCE_GROUP_NAME_MAX,
        ),
    ] = Field(description="Unique; letters, digits and hyphens, at most 63 characters.")
    instance_type: InstanceType | None = Field(default=None, description="e.g. ml.p5.48xlarge.")
    instance_types: Annotated[
        list[InstanceType], Field(max_length=facts.MAX_FLEXIBLE_INSTANCE_TYPES)
    ] = Field(
        default_factory=list,
        description="Continuous only: types HyperPod may choose from, in priority order.",
    )
    count: Annotated[int, Field(ge=0, le=facts.MAX_INSTANCE_COUNT), WHOLE_NUMBER] = Field(
        description="Target instance count."
    )
    node_type: Literal["Controller", "Login", "Compute"] | None = Field(
        default=None, description="slurm only; default Compute."
    )
    partition: (
        Annotated[
            str,
            _matching(
                facts.PARTITION_NAME_PATTERN,
                "letters and digits, with '-' only between them (no '_'), like gpu-p5",
                max_length=facts.PARTITION_NAME_MAX,
            ),
        ]
        | None
    ) = Field(default=None, description="slurm Compute groups only; default: the group name.")
    threads_per_core: Annotated[Literal[1, 2], WHOLE_NUMBER] | None = Field(
        default=None, description="1 disables hyperthreading."
    )
    ebs_volume_gb: Annotated[int, Field(ge=1, le=facts.MAX_EBS_GB), WHOLE_NUMBER] | None = Field(
        default=None, description="Extra EBS volume per instance, mounted at /opt/sagemaker."
    )
    ebs_kms_key_arn: KmsKeyArn | None = None
    deep_health_checks: list[Literal["InstanceStress", "InstanceConnectivity"]] = Field(
        default_factory=list,
        description="GPU and Trainium groups only (MultiNodeTrainingValidation is not in "
        "CloudFormation yet).",
    )
    training_plan_arn: (
        Annotated[
            str,
            _matching(
                r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:training-plan/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$",
                "a training plan ARN like arn:aws:sagemaker:us-west-2:111122223333:training-plan/name",
            ),
        ]
        | None
    ) = Field(
        default=None, description="A SageMaker training plan that reserves this group's capacity."
    )
    availability_zone_id: AzId | None = Field(
        default=None, description="Another AZ for this group; needs a HyperPod subnet there."
    )
    execution_role_arn: RoleArn | None = None
    image_id: (
        Annotated[str, _matching(r"^ami-[0-9a-f]{8,17}$", "an AMI id like ami-0123456789abcdef0")]
        | None
    ) = Field(default=None, description="A custom AMI built from a HyperPod AMI.")
    image_release_version: (
        Annotated[str, _matching(r"^[0-9]+\.[0-9]+\.[0-9]+$", "a HyperPod AMI release like 1.2.3")]
        | None
    ) = Field(default=None, description="eks only: a HyperPod AMI release.")
    min_count: Annotated[int, Field(ge=0, le=facts.MAX_INSTANCE_COUNT), WHOLE_NUMBER] | None = (
        Field(
            default=None,
            description="Continuous only: the group is InService once this many are up.",
        )
    )
    capacity_type: Literal["on_demand", "spot"] = Field(
        default="on_demand", description="spot: Continuous only."
    )
    network_interface: Literal["efa", "efa-only"] | None = None
    scheduled_update: ScheduledUpdate | None = None
    auto_patch: AutoPatch | None = None
    labels: dict[
        Annotated[
            str,
            _matching(
                r"^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
                "a Kubernetes key like example.com/name (a name of up to 63 letters, digits, '-', '_' and '.')",
            ),
        ],
        Annotated[
            str,
            _matching(
                r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
                "a Kubernetes value: up to 63 letters, digits, '-', '_' and '.'",
            ),
        ],
    ] = Field(default_factory=dict, description="eks only: Kubernetes node labels.")
    taints: list[Taint] = Field(default_factory=list, description="eks only: Kubernetes taints.")

    @field_validator("deep_health_checks", mode="before")
    @classmethod
    def _refuse_multi_node_validation(cls, value: Any) -> Any:
        return _refuse_api_only(
            value, ("MultiNodeTrainingValidation",), "InstanceStress and InstanceConnectivity"
        )

    @field_validator("deep_health_checks")
    @classmethod
    def _unique_checks(cls, value: list[str]) -> list[str]:
        return _unique(value, "deep health checks")

    @field_validator("instance_types")
    @classmethod
    def _unique_types(cls, value: list[str]) -> list[str]:
        return _unique(value, "instance types")

    @property
    def effective_node_type(self) -> str:
        """The Slurm node type, Compute when not given."""
        return self.node_type or "Compute"

    @property
    def effective_partition(self) -> str | None:
        """The Slurm partition of a Compute group (default: the group name)."""
        if self.effective_node_type != "Compute":
            return None
        return self.partition or self.name

    @property
    def all_instance_types(self) -> list[str]:
        """Every instance type this group may run."""
        return [self.instance_type] if self.instance_type else list(self.instance_types)


# cluster.node_pools and its rules live in their own module (built on StrictModel).
from hyperpod_cdk.config.autoscaling import NodePool  # noqa: E402


class ClusterConfig(StrictModel):
    """The HyperPod cluster."""

    name: (
        Annotated[
            str,
            _matching(
                facts.CLUSTER_NAME_PATTERN, "letters, digits and hyphens, at most 63 characters"
            ),
        ]
        | None
    ) = Field(default=None, description="Cluster name; default: the environment name.")
    node_recovery: Literal["Automatic", "None"] = "Automatic"
    node_provisioning_mode: Literal["Continuous"] | None = "Continuous"
    lifecycle_scripts: str = Field(
        default="lifecycle_assets",
        description="Directory uploaded, unpacked, under a content-hashed prefix (relative to the project root).",
    )
    lifecycle_hook: Literal["OnInitComplete", "OnCreate"] | None = Field(
        default=None,
        description="When HyperPod runs the entry script; default per orchestrator: "
        "OnInitComplete on slurm (after HyperPod has set up Slurm, Docker and FSx; OnCreate is "
        "refused there), OnCreate on eks (before the node joins the cluster, as AWS's EKS "
        "scripts; OnInitComplete is documented for Slurm only).",
    )
    execution_role_arn: RoleArn | None = None
    auto_scaling: bool = Field(
        default=False, description="eks only, Continuous: Karpenter autoscaling."
    )
    cluster_role_arn: RoleArn | None = None
    tiered_storage: TieredStorageConfig | None = None
    node_pools: list[NodePool] = Field(
        default_factory=list,
        description="eks only, with auto_scaling: instance groups Karpenter scales from 0, "
        "each pool one HyperpodNodeClass and one NodePool.",
    )
    slurm: SlurmSettings | None = Field(default=None, description="slurm only.")
    node_setup: NodeSetup = Field(
        default_factory=NodeSetup,
        description="What the lifecycle scripts do on each node on top of HyperPod's own setup.",
    )
    instance_groups: Annotated[
        list[InstanceGroup], Field(min_length=1, max_length=facts.MAX_INSTANCE_GROUPS)
    ]

    @property
    def slurm_settings(self) -> SlurmSettings:
        """The Slurm settings, defaults when the section is absent."""
        return self.slurm or SlurmSettings()

    @property
    def continuous(self) -> bool:
        """True under Continuous node provisioning."""
        return self.node_provisioning_mode == "Continuous"

    def system_pod_groups(self) -> list[str]:
        """The groups whose nodes can run cluster add-ons (CoreDNS, cert-manager, operators):
        a target count above 0 and no NoSchedule or NoExecute taint."""
        return [
            group.name
            for group in self.instance_groups
            if max(group.count, group.min_count or 0) > 0
            and not any(t.effect in ("NoSchedule", "NoExecute") for t in group.taints)
        ]

    def effective_lifecycle_hook(self, slurm: bool) -> str:
        """``lifecycle_hook``, or the orchestrator's default (OnInitComplete on Slurm, OnCreate
        on EKS)."""
        return self.lifecycle_hook or ("OnInitComplete" if slurm else "OnCreate")


class EksDependencies(StrictModel):
    """eks only: the components HyperPod needs on the EKS cluster, each on by default.

    They are installed before the HyperPod cluster is created, tolerate the
    HyperPod node-health taint and are pinned to a version.
    """

    health_monitoring_agent: bool = Field(
        default=True,
        description="HyperPod health monitoring agent (aws-hyperpod); needed for automatic node recovery.",
    )
    deep_health_check: bool = Field(
        default=True, description="RBAC HyperPod's deep health checks use (aws-hyperpod)."
    )
    job_auto_restart: bool = Field(
        default=True, description="RBAC HyperPod's job auto-restart uses (aws-hyperpod)."
    )
    patching: bool = Field(
        default=True, description="RBAC HyperPod's AMI patching (node drain) uses (aws-hyperpod)."
    )
    training_operator: bool = Field(
        default=True, description="Kubeflow training operator (PyTorchJob and friends; kubeflow)."
    )
    mpi_operator: bool = Field(default=True, description="Kubeflow MPI operator (mpi-operator).")
    nvidia_device_plugin: bool = Field(
        default=True, description="NVIDIA device plugin (nvidia.com/gpu; kube-system)."
    )
    neuron_device_plugin: bool = Field(
        default=True, description="AWS Neuron device plugin (Trainium/Inferentia; kube-system)."
    )
    efa_device_plugin: bool = Field(
        default=True, description="EFA device plugin (vpc.amazonaws.com/efa; kube-system)."
    )
    scientist_rbac: bool = Field(
        default=True,
        description="AWS's data scientist roles: list pods and nodes cluster-wide (group "
        "hyperpod-scientist-user-cluster-role-cluster-level) and run PyTorchJobs in kubeflow "
        "(group hyperpod-scientist-user-namespace-level-role-kubeflow-level); an access entry "
        "naming a group gives them to an IAM principal.",
    )

    def enabled(self) -> list[str]:
        """The names of the components switched on, in declaration order."""
        return [name for name in type(self).model_fields if getattr(self, name)]


class Toleration(StrictModel):
    """eks only: a Kubernetes toleration added to the pods of the dependencies chart."""

    key: KubernetesKey | None = Field(
        default=None, description="The taint key; left out: every key (operator Exists)."
    )
    operator: Literal["Equal", "Exists"] = "Exists"
    value: KubernetesValue | None = None
    effect: TaintEffect | None = Field(
        default=None, description="The taint effect; left out: every effect."
    )

    def as_kubernetes(self) -> dict[str, str]:
        """The toleration as Kubernetes writes it (camelCase, unset fields left out)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ExtraInstanceTypes(StrictModel):
    """Instance types appended to the chart's lists (a type AWS launched after the pinned chart)."""

    nvidia_gpu: list[InstanceType] = Field(
        default_factory=list,
        description="More NVIDIA GPU types for the NVIDIA device plugin and the health agent.",
    )
    neuron: list[InstanceType] = Field(
        default_factory=list,
        description="More Trainium/Inferentia types for the Neuron plugin and the health agent.",
    )
    efa: list[InstanceType] = Field(
        default_factory=list, description="More EFA-capable types for the EFA device plugin."
    )


DependencyKey = Literal[
    "health_monitoring_agent",
    "training_operator",
    "mpi_operator",
    "nvidia_device_plugin",
    "neuron_device_plugin",
    "efa_device_plugin",
]


class EksChartValues(StrictModel):
    """eks only: what the config may change in the releases of the dependencies chart."""

    extra_tolerations: list[Toleration] = Field(
        default_factory=list,
        description="Tolerations added to every pod of the chart (e.g. a custom taint of your groups).",
    )
    extra_instance_types: ExtraInstanceTypes = Field(
        default_factory=lambda: ExtraInstanceTypes(),
        description="Instance types appended to the chart's device lists.",
    )
    image_tags: dict[
        DependencyKey,
        Annotated[str, _matching(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", "a container image tag")],
    ] = Field(
        default_factory=dict,
        description="A component's image tag instead of the pinned one (preflight checks the "
        "health agent's tag exists).",
    )


# A Kubernetes object name (RFC 1123 subdomain, as a StorageClass name must be).
K8S_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


class FsxCsiDriver(StrictModel):
    """``eks.addons.fsx_csi_driver`` as a mapping: the driver, with dynamic provisioning."""

    dynamic_provisioning: bool = Field(
        default=True,
        description="A StorageClass that creates a new PERSISTENT_2 file system per claim, in "
        "the HyperPod subnet and the nodes' security group, retained when the claim goes.",
    )
    storage_class: Annotated[
        str, _matching(K8S_NAME_PATTERN, "a Kubernetes name like fsx-sc", max_length=253)
    ] = Field(default="fsx-sc", description="Name of that StorageClass (AWS's console: fsx-sc).")


# true/false, or the mapping: the value's type picks the branch (tags left out of key paths)
FsxCsiDriverOption = Annotated[
    Annotated[bool, Tag("<switch>")] | Annotated[FsxCsiDriver, Tag("<settings>")],
    Discriminator(
        lambda value: "<settings>" if isinstance(value, dict | FsxCsiDriver) else "<switch>"
    ),
]


# The inference switch lives in its own module (its models and rules) and builds on the types
# above (StrictModel).
from hyperpod_cdk.config.inference import (  # noqa: E402
    InferenceOption,
    InferenceSettings,
    inference_settings,
)


class EksAddons(StrictModel):
    """eks only: optional HyperPod add-ons, installed after the HyperPod cluster has nodes."""

    training_operator: bool = Field(
        default=False,
        description="HyperPod training operator add-on, with cert-manager and its pod identity.",
    )
    task_governance: bool = Field(
        default=False, description="HyperPod task governance add-on (Kueue based)."
    )
    observability: bool = Field(
        default=False,
        description="HyperPod observability add-on, with an Amazon Managed Prometheus workspace.",
    )
    fsx_csi_driver: FsxCsiDriverOption | None = Field(
        default=None,
        description="FSx for Lustre CSI driver plus a PersistentVolume and claim for the "
        "environment's file system; default: on when storage.fsx is enabled. "
        "{dynamic_provisioning: true}: also a StorageClass (storage_class, default fsx-sc) "
        "through which a PersistentVolumeClaim creates a new file system, with the driver's "
        "controller role limited to file systems tagged for this environment.",
    )
    inference: InferenceOption = Field(
        default=False,
        description="The HyperPod inference operator add-on with everything it needs: the "
        "Mountpoint for S3 CSI driver, metrics-server, cert-manager and FSx CSI driver add-ons, "
        "the cluster's IAM OIDC provider, the operator's, load balancer controller's and KEDA's "
        "roles, a TLS certificate bucket and the subnet tags for internal load balancers. A "
        "mapping sets gateway, gated_models, tls_bucket, s3_buckets, oidc_provider_arn, alb_controller "
        "and keda (install | existing; required on an adopted cluster).",
    )

    @property
    def inference_settings(self) -> InferenceSettings | None:
        """The ``inference`` settings; None when the switch is off."""
        return inference_settings(self.inference)

    @property
    def fsx_csi_dynamic(self) -> FsxCsiDriver | None:
        """The dynamic provisioning settings, when ``fsx_csi_driver`` asks for it."""
        value = self.fsx_csi_driver
        if isinstance(value, FsxCsiDriver) and value.dynamic_provisioning:
            return value
        return None


# The task governance section lives in its own module (its models and rules) and builds on the
# types above (InstanceType).
from hyperpod_cdk.config.task_governance import TaskGovernance  # noqa: E402


class EksConfig(StrictModel):
    """eks only: the EKS cluster that orchestrates HyperPod (created or adopted)."""

    cluster_arn: (
        Annotated[
            str,
            _matching(
                r"^arn:aws[a-z-]*:eks:[a-z0-9-]+:[0-9]{12}:cluster/[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$",
                "an EKS cluster ARN like arn:aws:eks:us-west-2:111122223333:cluster/name",
            ),
        ]
        | None
    ) = None
    kubectl_role_arn: RoleArn | None = None
    kubernetes_version: Annotated[
        Literal["1.30", "1.31", "1.32", "1.33", "1.34", "1.35"], BeforeValidator(_decimal_version)
    ] = Field(
        default="1.35",
        description="Kubernetes version of the cluster the app creates (a version HyperPod supports); "
        "required with cluster_arn: the adopted cluster's version (picks the kubectl and add-on versions).",
    )
    endpoint_access: Literal["private", "public_and_private", "public"] = "private"
    public_access_cidrs: list[Cidr] = Field(default_factory=list)
    admin_principal_arns: list[
        Annotated[
            str,
            _matching(
                r"^arn:aws[a-z-]*:(iam::[0-9]{12}:(role|user)/.+|sts::[0-9]{12}:assumed-role/.+)$",
                "an IAM role or user ARN (or an STS assumed-role ARN)",
            ),
        ]
    ] = Field(default_factory=list)
    logging: list[EksLogType] = Field(default_factory=lambda: list(get_args(EksLogType)))
    dependencies: EksDependencies = Field(
        default_factory=lambda: EksDependencies(),
        description="What HyperPod needs on the cluster, installed before the HyperPod cluster "
        "as Helm releases of the project's chart; on an adopted cluster (cluster_arn) every "
        "component must be given explicitly.",
    )
    image_registry: (
        Annotated[
            str,
            _matching(
                r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$",
                "a registry host with an optional path, like "
                "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror (no scheme, no trailing /)",
                max_length=255,
            ),
        ]
        | None
    ) = Field(
        default=None,
        description="Pull every image of the dependencies chart from <image_registry>/<repository>:<tag> "
        "(an ECR pull-through cache or mirror; `python -m hyperpod_cdk.facts.chart --mirror-list REGION` "
        "lists what to copy). Needed in a closed network for the images of public registries.",
    )
    node_wait_minutes: Annotated[int, Field(ge=1, le=50), WHOLE_NUMBER] = Field(
        default=45,
        description="How long the add-ons that need nodes (CoreDNS, eks.addons) wait for the "
        "first Running node of a group without NoSchedule/NoExecute taints before their stack "
        "fails (1-50: CloudFormation gives a custom resource an hour).",
    )
    chart_values: EksChartValues = Field(
        default_factory=lambda: EksChartValues(),
        description="Overrides passed to the releases of the dependencies chart.",
    )
    addons: EksAddons = Field(
        default_factory=lambda: EksAddons(),
        description="Optional HyperPod add-ons, installed once the cluster has nodes.",
    )
    task_governance: TaskGovernance | None = Field(
        default=None,
        description="Task governance as code (needs addons.task_governance): the cluster "
        "policy and one compute quota per team, created once the add-on is active; see "
        "docs/task-governance.md.",
    )


class PipelineStage(StrictModel):
    """One deployment stage of the pipeline: a full environment config."""

    name: Annotated[
        str,
        _matching(
            r"^[A-Za-z][A-Za-z0-9-]{0,63}$", "a letter, then up to 63 letters, digits and '-'"
        ),
    ]
    config: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="Path of the stage's environment config, relative to the pipeline file."
    )
    approval: bool = Field(default=False, description="A manual approval before this stage.")
    allow_replace: list[
        Annotated[
            str,
            _matching(
                r"^[A-Za-z][A-Za-z0-9-]{0,127}/[A-Za-z][A-Za-z0-9]{0,254}$",
                "<stack>/<logical id> as the deploy gate names it, e.g. "
                "prod-research-cluster/HyperPodCluster",
            ),
        ]
    ] = Field(
        default_factory=list,
        description="Resources that hold data or are a cluster which this stage's deploy may "
        "replace or delete, as <stack>/<logical id> (the stage's deploy gate names them); "
        "default: none, and the stage stops before such a change. Remove an entry once deployed.",
    )


class PipelineConfig(StrictModel):
    """A self-mutating CDK pipeline in the tooling account."""

    connection_arn: Annotated[
        str,
        _matching(
            r"^arn:aws[a-z-]*:(codeconnections|codestar-connections):[a-z0-9-]+:[0-9]{12}:connection/[0-9a-f-]+$",
            "a CodeConnections connection ARN like arn:aws:codeconnections:us-west-2:111122223333:connection/<id>",
        ),
    ]
    repository: Annotated[str, _matching(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", "owner/repository")]
    branch: Annotated[str, StringConstraints(min_length=1, max_length=255)] = "main"
    stages: Annotated[list[PipelineStage], Field(min_length=1)]

    @field_validator("stages")
    @classmethod
    def _unique_stage_names(cls, value: list[PipelineStage]) -> list[PipelineStage]:
        _unique([s.name for s in value], "stage names")
        return value


EnvName = Annotated[
    str,
    _matching(
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
    _matching(facts.REGION_PATTERN, "a region name like us-west-2"),
    AfterValidator(_known_region),
]
Account = Annotated[str, _matching(facts.ACCOUNT_PATTERN, "a 12-digit AWS account id, quoted")]
TagKey = Annotated[
    str,
    _matching(
        r"^[\w\s.:/=+@-]+$",
        "letters, digits, spaces and _ . : / = + - @",
        min_length=1,
        max_length=128,
    ),
]
TagValue = Annotated[
    str,
    _matching(r"^[\w\s.:/=+@-]*$", "letters, digits, spaces and _ . : / = + - @", max_length=256),
]


class EnvironmentConfig(StrictModel):
    """One HyperPod environment: the root of an environment YAML file."""

    name: EnvName = Field(description="Prefixes stacks and resource names.")
    account: Account | None = Field(
        default=None, description="Else CDK_DEFAULT_ACCOUNT; synth works without it."
    )
    region: Region
    orchestrator: Literal["slurm", "eks"] = "slurm"
    tags: dict[TagKey, TagValue] = Field(
        default_factory=dict, description="Applied to every taggable resource."
    )
    compliance_packs: list[CompliancePack] = Field(default_factory=_default_packs)
    iam: IamConfig = Field(default_factory=IamConfig)
    network: NetworkConfig
    storage: StorageConfig = Field(default_factory=StorageConfig)
    cluster: ClusterConfig
    eks: EksConfig | None = Field(default=None, description="eks only.")
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
        return _unique(value, "compliance packs")

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


class PipelineFileConfig(StrictModel):
    """The root of a pipeline YAML file: the pipeline and where it lives."""

    name: EnvName
    account: Account
    region: Region
    tags: dict[TagKey, TagValue] = Field(default_factory=dict)
    compliance_packs: list[CompliancePack] = Field(default_factory=_default_packs)
    iam: IamConfig = Field(default_factory=IamConfig)
    pipeline: PipelineConfig


def dotted(loc: tuple[int | str, ...]) -> str:
    """``("cluster", "instance_groups", 2, "name")`` -> ``cluster.instance_groups[2].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out

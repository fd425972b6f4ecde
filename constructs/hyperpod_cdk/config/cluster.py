"""The ``cluster`` section: the HyperPod cluster, its instance groups and Slurm settings, and
their rules.

Sections of their own sit inside it: ``cluster.node_setup``
(:mod:`~hyperpod_cdk.config.node_setup`) and ``cluster.node_pools``
(:mod:`~hyperpod_cdk.config.autoscaling`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from hyperpod_cdk import facts
from hyperpod_cdk.config.alerts import RollbackAlarms
from hyperpod_cdk.config.autoscaling import NodePool
from hyperpod_cdk.config.base import (
    NOT_IN_CLOUDFORMATION,
    WHOLE_NUMBER,
    AzId,
    InstanceType,
    IssueSink,
    KmsKeyArn,
    KubernetesKey,
    KubernetesValue,
    RoleArn,
    StrictModel,
    SubnetId,
    TaintEffect,
    eks_only,
    matching,
    slurm_only,
    unique,
)
from hyperpod_cdk.config.node_setup import NodeSetup
from hyperpod_cdk.config.storage import check_kms_key_region

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# The file the cluster's LifeCycleConfig names; it must exist in the uploaded
# directory at create time (AWS::SageMaker::Cluster LifeCycleConfig).
LIFECYCLE_ENTRY_SCRIPT = "entrypoint.sh"
# A provisioning_parameters.json beside the scripts makes API-driven Slurm
# updates fail and roll back (HyperPod "Migrating to API-driven Slurm
# configuration", Troubleshooting).
LEGACY_SLURM_FILE = "provisioning_parameters.json"

# EventBridge-style cron with six fields (minutes hours day-of-month month day-of-week year),
# the ScheduleExpression of ScheduledUpdateConfig.
CRON_PATTERN = r"^cron\(\S+( \S+){5}\)$"


class TieredStorageConfig(StrictModel):
    """HyperPod managed tiered checkpointing memory."""

    # AWS documents 20-100 (managed-tier-checkpointing-setup); the service fails on 1-19 today
    memory_percent: Annotated[int, Field(ge=20, le=100), WHOLE_NUMBER] = Field(
        default=20, description="Share of instance memory given to the tiered storage (20-100)."
    )


class SlurmSettings(StrictModel):
    """Orchestrator-level Slurm settings."""

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
            str, matching(r"^db\.[a-z0-9]+\.[a-z0-9]+$", "an RDS instance class like db.r6g.large")
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
        matching(
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
    batch_percent: Annotated[int, Field(ge=1, le=100), WHOLE_NUMBER] | None = Field(
        default=None,
        description="Share of the group patched at once (or batch_count, not both); left out: "
        "HyperPod's default batch.",
    )
    batch_count: Annotated[int, Field(ge=1, le=facts.MAX_INSTANCE_COUNT), WHOLE_NUMBER] | None = (
        Field(
            default=None,
            description="Or a number of instances patched at once; left out: HyperPod's default "
            "batch.",
        )
    )
    wait_seconds: Annotated[int, Field(ge=0, le=3600), WHOLE_NUMBER] | None = Field(
        default=None, description="Wait between batches; left out: HyperPod's default."
    )
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


class Taint(StrictModel):
    """A Kubernetes taint put on the group's nodes."""

    key: KubernetesKey = Field(description="The taint key, e.g. example.com/gpu.")
    value: KubernetesValue | None = Field(
        default=None, description="The taint value; left out: none."
    )
    effect: TaintEffect = Field(description="NoSchedule, PreferNoSchedule or NoExecute.")


class InstanceGroup(StrictModel):
    """One HyperPod instance group."""

    name: Annotated[
        str,
        matching(
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
        default=None,
        description="The group's Slurm node type; default Compute.",
        json_schema_extra=slurm_only(),
    )
    partition: (
        Annotated[
            str,
            matching(
                facts.PARTITION_NAME_PATTERN,
                "letters and digits, with '-' only between them (no '_'), like gpu-p5",
                max_length=facts.PARTITION_NAME_MAX,
            ),
        ]
        | None
    ) = Field(
        default=None,
        description="The Slurm partition of a Compute group; default: the group name.",
        json_schema_extra=slurm_only(),
    )
    threads_per_core: Annotated[Literal[1, 2], WHOLE_NUMBER] | None = Field(
        default=None, description="1 disables hyperthreading."
    )
    ebs_volume_gb: Annotated[int, Field(ge=1, le=facts.MAX_EBS_GB), WHOLE_NUMBER] | None = Field(
        default=None, description="Extra EBS volume per instance, mounted at /opt/sagemaker."
    )
    ebs_kms_key_arn: KmsKeyArn | None = Field(
        default=None,
        description="Continuous only: a customer managed KMS key (of the cluster's region) that "
        "encrypts the group's EBS volumes; left out: AWS's default EBS encryption.",
    )
    deep_health_checks: list[Literal["InstanceStress", "InstanceConnectivity"]] = Field(
        default_factory=list,
        description="GPU and Trainium groups only (MultiNodeTrainingValidation is not in "
        "CloudFormation yet).",
    )
    training_plan_arn: (
        Annotated[
            str,
            matching(
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
    execution_role_arn: RoleArn | None = Field(
        default=None,
        description="An existing IAM role this group's nodes run as, of this account; left out: "
        "cluster.execution_role_arn, else the role the app creates.",
    )
    image_id: (
        Annotated[str, matching(r"^ami-[0-9a-f]{8,17}$", "an AMI id like ami-0123456789abcdef0")]
        | None
    ) = Field(default=None, description="A custom AMI built from a HyperPod AMI.")
    image_release_version: (
        Annotated[str, matching(r"^[0-9]+\.[0-9]+\.[0-9]+$", "a HyperPod AMI release like 1.2.3")]
        | None
    ) = Field(default=None, description="A HyperPod AMI release.", json_schema_extra=eks_only())
    min_count: Annotated[int, Field(ge=0, le=facts.MAX_INSTANCE_COUNT), WHOLE_NUMBER] | None = (
        Field(
            default=None,
            description="Continuous only: the group is InService once this many are up.",
        )
    )
    capacity_type: Literal["on_demand", "spot"] = Field(
        default="on_demand", description="spot: Continuous only."
    )
    network_interface: Literal["efa", "efa-only"] | None = Field(
        default=None,
        description="The nodes' network interface: efa, or efa-only (EFA without IP traffic); left"
        " out: HyperPod's default for the instance type.",
    )
    scheduled_update: ScheduledUpdate | None = Field(
        default=None,
        description="A rolling AMI update window of the group (ScheduledUpdateConfig); left out: "
        "no scheduled updates.",
    )
    auto_patch: AutoPatch | None = Field(
        default=None,
        description="Automatic security-patch AMI updates of the group (AutoPatchConfig); left "
        "out: none.",
    )
    labels: dict[
        Annotated[
            str,
            matching(
                r"^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
                "a Kubernetes key like example.com/name (a name of up to 63 letters, digits, '-', '_' and '.')",
            ),
        ],
        Annotated[
            str,
            matching(
                r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
                "a Kubernetes value: up to 63 letters, digits, '-', '_' and '.'",
            ),
        ],
    ] = Field(
        default_factory=dict, description="Kubernetes node labels.", json_schema_extra=eks_only()
    )
    taints: list[Taint] = Field(
        default_factory=list, description="Kubernetes taints.", json_schema_extra=eks_only()
    )

    @field_validator("deep_health_checks", mode="before")
    @classmethod
    def _refuse_multi_node_validation(cls, value: Any) -> Any:
        return _refuse_api_only(
            value, ("MultiNodeTrainingValidation",), "InstanceStress and InstanceConnectivity"
        )

    @field_validator("deep_health_checks")
    @classmethod
    def _unique_checks(cls, value: list[str]) -> list[str]:
        return unique(value, "deep health checks")

    @field_validator("instance_types")
    @classmethod
    def _unique_types(cls, value: list[str]) -> list[str]:
        return unique(value, "instance types")

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


class ClusterConfig(StrictModel):
    """The HyperPod cluster."""

    name: (
        Annotated[
            str,
            matching(
                facts.CLUSTER_NAME_PATTERN, "letters, digits and hyphens, at most 63 characters"
            ),
        ]
        | None
    ) = Field(default=None, description="Cluster name; default: the environment name.")
    node_recovery: Literal["Automatic", "None"] = Field(
        default="Automatic",
        description="Automatic: HyperPod replaces or reboots the nodes its health checks find "
        "faulty; None: it does not. Default Automatic (autoscaling needs it).",
    )
    node_provisioning_mode: Literal["Continuous"] | None = Field(
        default="Continuous",
        description="Continuous: HyperPod provisions nodes in the background and retries them, "
        "group by group (needed by min_count, instance_types, spot capacity, customer "
        "managed EBS keys, autoscaling and the accounting database); null: HyperPod's "
        "original mode, every node provisioned when the cluster is created or updated."
        " Default Continuous.",
    )
    lifecycle_scripts: str = Field(
        default="lifecycle_assets",
        description="Directory uploaded, unpacked, under a content-hashed prefix (relative to the "
        "project root).",
    )
    lifecycle_hook: Literal["OnInitComplete", "OnCreate"] | None = Field(
        default=None,
        description="When HyperPod runs the entry script; default per orchestrator: "
        "OnInitComplete on slurm (after HyperPod has set up Slurm, Docker and FSx; OnCreate is "
        "refused there), OnCreate on eks (before the node joins the cluster, as AWS's EKS "
        "scripts; OnInitComplete is documented for Slurm only).",
    )
    execution_role_arn: RoleArn | None = Field(
        default=None,
        description="An existing IAM role the nodes run as, of this account; left out: the role "
        "the app creates with what the nodes need (the lifecycle scripts, FSx, logs).",
    )
    auto_scaling: bool = Field(
        default=False,
        description="Continuous only: HyperPod's managed Karpenter scales the groups of "
        "cluster.node_pools; false: no autoscaling.",
        json_schema_extra=eks_only(),
    )
    cluster_role_arn: RoleArn | None = Field(
        default=None,
        description="An existing IAM role HyperPod assumes to scale the cluster (ClusterRole, for "
        "autoscaling), of this account; left out: with auto_scaling the app creates "
        "one, else none.",
    )
    tiered_storage: TieredStorageConfig | None = Field(
        default=None,
        description="HyperPod managed tiered checkpointing: a share of each instance's memory "
        "kept for checkpoints (TieredStorageConfig); null: off.",
        json_schema_extra=eks_only(),
    )
    node_pools: list[NodePool] = Field(
        default_factory=list,
        description="With auto_scaling: instance groups Karpenter scales from 0, "
        "each pool one HyperpodNodeClass and one NodePool.",
        json_schema_extra=eks_only(),
    )
    slurm: SlurmSettings | None = Field(
        default=None,
        description="Orchestrator-level Slurm settings; null: HyperPod's defaults (no accounting "
        "database).",
        json_schema_extra=slurm_only(),
    )
    node_setup: NodeSetup = Field(
        default_factory=NodeSetup,
        description="What the lifecycle scripts do on each node on top of HyperPod's own setup.",
    )
    instance_groups: Annotated[
        list[InstanceGroup], Field(min_length=1, max_length=facts.MAX_INSTANCE_GROUPS)
    ] = Field(
        description="The instance groups; a Slurm cluster has one Controller group, at most one "
        "Login group and Compute groups."
    )

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


# -- cross-key rules --------------------------------------------------------------------------


def check_cluster(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``cluster`` and its instance groups into ``out``."""
    _check_cluster(cfg.cluster, cfg, out)
    _check_groups(cfg.cluster, cfg, out)


def check_instance_types(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """An instance type HyperPod's table does not know: a warning at its path."""
    _check_instance_types(cfg, out)


def check_lifecycle_dir(cfg: EnvironmentConfig, project_root: Path, out: IssueSink) -> None:
    """``cluster.lifecycle_scripts`` is a folder of the project with the entry script."""
    _check_lifecycle_dir(cfg.cluster, project_root, out)


def _check_cluster(cluster: ClusterConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    settings = cluster.slurm_settings
    need_continuous = "needs cluster.node_provisioning_mode: Continuous"
    if not cluster.continuous:
        if settings.accounting_database:
            out.error("cluster.slurm.accounting_database", need_continuous)
        if cluster.auto_scaling:
            out.error("cluster.auto_scaling", need_continuous)
    elif settings.config_strategy is not None:
        out.error(
            "cluster.slurm.config_strategy",
            "must stay null under Continuous provisioning (HyperPod rejects any SlurmConfigStrategy then)",
        )
    if cluster.auto_scaling and cluster.node_recovery != "Automatic":
        out.error("cluster.auto_scaling", "needs cluster.node_recovery: Automatic")
    if cfg.is_slurm and cluster.lifecycle_hook == "OnCreate":
        # OnCreate = the scripts own the whole node setup (AWS: "customer managed" mode); the
        # shipped scripts extend HyperPod's own setup (Slurm from the API config, Docker, FSx)
        # and never start slurmctld or slurmd themselves
        out.error(
            "cluster.lifecycle_hook",
            "OnCreate is not supported on Slurm: the lifecycle scripts run after HyperPod has set "
            "up Slurm, Docker and FSx (OnInitComplete) and do not start slurmctld or slurmd "
            "themselves; use OnInitComplete (the default)",
        )
    if not cfg.is_slurm and cluster.lifecycle_hook == "OnInitComplete":
        out.warn(
            "cluster.lifecycle_hook",
            "OnInitComplete is documented for Slurm only; on EKS the scripts move containerd "
            "and kubelet onto the group's EBS volume before the node joins (OnCreate, the "
            "default), and leave them on the root volume of a node that has joined: remove the "
            "key to use OnCreate",
        )
    if not settings.accounting_database:
        for key in (
            "accounting_instance_class",
            "accounting_multi_az",
            "accounting_availability_zone_ids",
            "accounting_subnet_ids",
        ):
            if settings.is_set(key):
                out.error(
                    f"cluster.slurm.{key}",
                    "applies only with cluster.slurm.accounting_database: true",
                )
        return
    if cfg.network.vpc_id is None:
        if len(set(settings.accounting_availability_zone_ids)) < 2:
            out.error(
                "cluster.slurm.accounting_availability_zone_ids",
                "needs at least two distinct AZ IDs: an RDS subnet group spans two AZs",
            )
        return
    if settings.accounting_availability_zone_ids:
        out.error(
            "cluster.slurm.accounting_availability_zone_ids",
            "applies only to a VPC the app creates; with network.vpc_id give accounting_subnet_ids",
        )
    if len(settings.accounting_subnet_ids) < 2:
        out.error(
            "cluster.slurm.accounting_subnet_ids",
            "needs at least two private subnets in two AZs of the adopted VPC (an RDS subnet group spans two AZs)",
        )


def _check_groups(cluster: ClusterConfig, cfg: EnvironmentConfig, out: IssueSink) -> None:
    groups = cluster.instance_groups
    seen: dict[str, int] = {}
    for i, group in enumerate(groups):
        path = f"cluster.instance_groups[{i}]"
        if group.name in seen:
            out.error(
                f"{path}.name",
                f"{group.name!r} is already the name of instance_groups[{seen[group.name]}]",
            )
        seen.setdefault(group.name, i)
        _check_group(group, path, cluster, cfg, out)
    if cfg.is_slurm:
        _check_slurm_topology(groups, cluster, out)


def _check_group(group: InstanceGroup, path: str, cluster: ClusterConfig, cfg: EnvironmentConfig,
                 out: IssueSink) -> None:  # fmt: skip
    need_continuous = "needs cluster.node_provisioning_mode: Continuous"
    if group.instance_type and group.instance_types:
        out.error(f"{path}.instance_types", "give instance_type or instance_types, not both")
    elif not group.instance_type and not group.instance_types:
        out.error(
            f"{path}.instance_type", "is required (or instance_types under Continuous provisioning)"
        )
    if not cluster.continuous:
        if group.instance_types:
            out.error(f"{path}.instance_types", need_continuous)
        if group.min_count is not None:
            out.error(f"{path}.min_count", need_continuous)
        if group.capacity_type == "spot":
            out.error(f"{path}.capacity_type", f"spot {need_continuous}")
        if group.ebs_kms_key_arn:
            # SageMaker developer guide, "Customer managed AWS KMS key encryption for SageMaker
            # HyperPod": supported for clusters in continuous node provisioning mode only
            out.error(f"{path}.ebs_kms_key_arn", f"a customer managed EBS key {need_continuous}")
    if group.min_count is not None and group.min_count > group.count:
        out.error(f"{path}.min_count", f"{group.min_count} is more than count ({group.count})")
    if group.deep_health_checks:
        cpu_types = [t for t in group.all_instance_types if not facts.is_accelerated(t)]
        if cpu_types:
            out.error(
                f"{path}.deep_health_checks",
                f"deep health checks run on GPU and Trainium instances only, not {cpu_types[0]}; remove them",
            )
        if group.taints:
            out.error(
                f"{path}.taints", "custom taints are not allowed on a group with deep_health_checks"
            )
    if group.ebs_kms_key_arn:
        check_kms_key_region(group.ebs_kms_key_arn, f"{path}.ebs_kms_key_arn", cfg, out)
    if group.training_plan_arn:
        _check_training_plan(group.training_plan_arn, f"{path}.training_plan_arn", cfg, out)
        if group.capacity_type == "spot":
            out.error(
                f"{path}.capacity_type", "spot cannot use a training plan's reserved capacity"
            )
    for key in ("scheduled_update", "auto_patch"):
        update = getattr(group, key)
        if (
            update is not None
            and update.batch_percent is not None
            and update.batch_count is not None
        ):
            out.error(f"{path}.{key}", "give batch_percent or batch_count, not both")
    az = group.availability_zone_id
    net = cfg.network
    if az and az != net.availability_zone_id:
        if net.vpc_id is None and az not in net.additional_compute_cidrs:
            out.error(
                f"{path}.availability_zone_id",
                f"{az} has no HyperPod subnet; add network.additional_compute_cidrs.{az}",
            )
        if net.vpc_id is not None and az not in net.additional_compute_subnet_ids:
            out.error(
                f"{path}.availability_zone_id",
                f"{az} has no HyperPod subnet; add network.additional_compute_subnet_ids.{az}",
            )


def _instance_types(cfg: EnvironmentConfig) -> Iterable[tuple[str, str]]:
    """(key path, instance type) of every instance type the config names."""
    for i, group in enumerate(cfg.cluster.instance_groups):
        path = f"cluster.instance_groups[{i}]"
        if group.instance_type:
            yield f"{path}.instance_type", group.instance_type
        for j, instance_type in enumerate(group.instance_types):
            yield f"{path}.instance_types[{j}]", instance_type
    if cfg.eks is not None:
        extra = cfg.eks.chart_values.extra_instance_types
        for key in type(extra).model_fields:
            for j, instance_type in enumerate(getattr(extra, key)):
                yield f"eks.chart_values.extra_instance_types.{key}[{j}]", instance_type


def _check_instance_types(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """An instance type the table of HyperPod's types does not know is a warning: the model has
    refused every name not shaped like one, and AWS may have launched the type since."""
    for path, instance_type in _instance_types(cfg):
        if instance_type in facts.HYPERPOD_INSTANCE_TYPES:
            continue
        guess = facts.close_instance_type(instance_type)
        hint = f" (did you mean {guess!r}?)" if guess else ""
        out.warn(
            path,
            f"{instance_type!r} is not an instance type HyperPod offered on "
            f"{facts.HYPERPOD_INSTANCE_TYPES_AS_OF}{hint}; right if AWS has launched it since, "
            "else HyperPod refuses it at deploy time",
        )


def _check_training_plan(arn: str, path: str, cfg: EnvironmentConfig, out: IssueSink) -> None:
    parts = arn.split(":")
    if parts[3] != cfg.region:
        out.error(
            path,
            f"the plan is in {parts[3]}, the environment in {cfg.region}; a plan is used in its region",
        )


def _check_slurm_topology(
    groups: list[InstanceGroup], cluster: ClusterConfig, out: IssueSink
) -> None:
    controllers = [i for i, g in enumerate(groups) if g.effective_node_type == "Controller"]
    logins = [i for i, g in enumerate(groups) if g.effective_node_type == "Login"]
    if not controllers:
        out.error(
            "cluster.instance_groups",
            "a Slurm cluster needs exactly one group with node_type: Controller",
        )
    for i in controllers[1:]:
        out.error(
            f"cluster.instance_groups[{i}].node_type",
            f"a second Controller group; instance_groups[{controllers[0]}] is the controller",
        )
    for i in logins[1:]:
        out.error(
            f"cluster.instance_groups[{i}].node_type",
            f"a second Login group; at most one (instance_groups[{logins[0]}])",
        )
    for i, group in enumerate(groups):
        path = f"cluster.instance_groups[{i}]"
        node_type = group.effective_node_type
        if node_type != "Compute":
            if group.partition is not None:
                out.error(
                    f"{path}.partition", f"only Compute groups have a partition, not {node_type}"
                )
            if group.instance_types:
                out.error(f"{path}.instance_types", f"a {node_type} group runs one instance_type")
        elif group.effective_partition in facts.RESERVED_PARTITIONS:
            out.error(
                f"{path}.partition",
                f"{group.effective_partition!r} is HyperPod's built-in partition; "
                "choose another name",
            )
        if node_type == "Controller":
            if group.count < 1:
                out.error(f"{path}.count", "the Controller group needs at least one instance")
            elif cluster.continuous and group.count > 1:
                out.error(
                    f"{path}.count",
                    f"{group.count}: multi-head controllers are not supported under "
                    "Continuous provisioning; use 1",
                )
            if group.capacity_type == "spot":
                out.error(f"{path}.capacity_type", "the Controller runs on on_demand capacity")


# The lifecycle scripts this package ships (package data, hyperpod_cdk/lifecycle/assets; the
# repository's lifecycle_assets/ is a symlink to it). A library app's default (build_node_settings)
# lives in site-packages, outside any project, and is the product's own, not a folder a user
# controls. Every module that needs the folder takes it from here.
PACKAGED_SCRIPTS = (Path(__file__).parent.parent / "lifecycle" / "assets").resolve()


def _packaged_scripts(directory: Path) -> bool:
    """``directory`` is the scripts folder of an installed ``hyperpod_cdk`` (this one, or the
    one a library app synthesized with, whose environment file the ops commands read here)."""
    package = directory.parent
    root = package.parent
    return directory == PACKAGED_SCRIPTS or (
        directory.name == "assets"
        and package.name == "lifecycle"
        and root.name == "hyperpod_cdk"
        and (root / "__init__.py").is_file()
        and (package / "settings.py").is_file()
    )


def _check_lifecycle_dir(cluster: ClusterConfig, project_root: Path, out: IssueSink) -> None:
    path = "cluster.lifecycle_scripts"
    directory = (project_root / cluster.lifecycle_scripts).resolve()
    # every file there is uploaded to a bucket all nodes read: never a folder outside the
    # project (../outside, /elsewhere; security review L3). The path as written is checked: a
    # link the project itself holds may point where the project keeps its scripts.
    written = Path(os.path.normpath(project_root.absolute() / cluster.lifecycle_scripts))
    if not _packaged_scripts(directory) and not written.is_relative_to(
        Path(os.path.normpath(project_root.absolute()))
    ):
        out.error(
            path,
            f"{cluster.lifecycle_scripts!r} is outside the project ({written}); give a folder "
            f"under {project_root}",
        )
        return
    if not directory.is_dir():
        out.error(path, f"{cluster.lifecycle_scripts!r} is not a directory under {project_root}")
        return
    if not (directory / LIFECYCLE_ENTRY_SCRIPT).is_file():
        out.error(
            path,
            f"{cluster.lifecycle_scripts!r} has no {LIFECYCLE_ENTRY_SCRIPT}, the entry script the "
            "cluster runs",
        )
    if any(directory.rglob(LEGACY_SLURM_FILE)):
        out.error(
            path,
            f"contains {LEGACY_SLURM_FILE}; with API-driven Slurm it makes cluster updates fail "
            "and roll back: remove it",
        )

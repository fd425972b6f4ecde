"""The ``eks.task_governance`` section: the cluster policy and the teams of a shared cluster.

HyperPod task governance (the ``amazon-sagemaker-hyperpod-taskgovernance`` add-on, Kueue
based) schedules the jobs of several teams on one HyperPod cluster. The section becomes one
cluster policy (``AWS::SageMaker::ClusterSchedulerConfig``: priority classes, fair share,
idle resource sharing) and one compute quota per team (``AWS::SageMaker::ComputeQuota``: what
the team is guaranteed per instance type, whether it lends and borrows idle capacity, and
whether its own higher-priority tasks preempt its lower-priority ones). The service creates
the team's namespace ``hyperpod-ns-<team>`` and its Kueue queue
``hyperpod-ns-<team>-localqueue`` with the quota.

The limits below are the SageMaker API's (botocore 1.44.5 service model,
``CreateClusterSchedulerConfig`` and ``CreateComputeQuota``, read 2026-11-25).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import WHOLE_NUMBER, InstanceType, IssueSink, StrictModel, matching

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# PriorityClass.Name (ClusterSchedulerPriorityClassName) and ComputeQuotaTarget.TeamName
# (ComputeQuotaTargetTeamName) share this pattern. Kueue puts the team's queue name,
# hyperpod-ns-<team>-localqueue, in a label value (kueue.x-k8s.io/queue-name), and label values
# hold at most 63 characters: 63 - len("hyperpod-ns-") - len("-localqueue") = 40, which is what
# the pattern's {0,39} repetitions mean. Priority class names get the same limit.
TASK_GOVERNANCE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
TASK_GOVERNANCE_NAME_MAX = 40
MAX_PRIORITY_CLASSES = 10  # SchedulerConfig.PriorityClasses, max 10
MAX_QUOTA_LINES = 15  # ComputeQuotaConfig.ComputeQuotaResources, max 15
MAX_WEIGHT = 100  # PriorityClass.Weight and ComputeQuotaTarget.FairShareWeight, 0-100
# ResourceSharingConfig.BorrowLimit: the API takes 0-10000; AWS documents 1-500 percent of the
# team's quota (SageMaker developer guide, "Policies": "Borrow limit", HYPERPOD_FACTS 2026-11-24)
MIN_BORROW_LIMIT = 1
MAX_BORROW_LIMIT = 500
# The compute quota's Name (EntityName) is <cluster name>-<team>: at most 63 characters.
MAX_QUOTA_NAME = 63
# AcceleratorPartitionConfig.Type (MIGProfileType), the API's whole list. The service rejects a
# profile the instance type's GPU does not offer (CloudFormation schema of
# AWS::SageMaker::ComputeQuota: "Service rejects MIG profiles that the chosen InstanceType does
# not support"); no AWS page lists the profiles per instance type, so the config accepts the
# API's list on NVIDIA GPU types and leaves the per-GPU check to the service.
MIG_PROFILES = (
    "mig-1g.5gb", "mig-1g.10gb", "mig-1g.18gb", "mig-1g.20gb", "mig-1g.23gb", "mig-1g.35gb",
    "mig-1g.45gb", "mig-1g.47gb", "mig-2g.10gb", "mig-2g.20gb", "mig-2g.35gb", "mig-2g.45gb",
    "mig-2g.47gb", "mig-3g.20gb", "mig-3g.40gb", "mig-3g.71gb", "mig-3g.90gb", "mig-3g.93gb",
    "mig-4g.20gb", "mig-4g.40gb", "mig-4g.71gb", "mig-4g.90gb", "mig-4g.93gb", "mig-7g.40gb",
    "mig-7g.80gb", "mig-7g.141gb", "mig-7g.180gb", "mig-7g.186gb",
)  # fmt: skip
# NVIDIA GPU families (MIG is an NVIDIA feature; Trainium has no MIG).
_NVIDIA_FAMILY_PREFIXES = ("p", "g")

TaskGovernanceName = Annotated[
    str,
    matching(
        TASK_GOVERNANCE_NAME_PATTERN,
        "lowercase letters, digits and inner hyphens, like ml-research",
        max_length=TASK_GOVERNANCE_NAME_MAX,
    ),
]
Weight = Annotated[int, Field(ge=0, le=MAX_WEIGHT), WHOLE_NUMBER]
Amount = Annotated[int, Field(ge=0, le=10_000_000), WHOLE_NUMBER]
PrincipalArn = Annotated[
    str,
    matching(
        r"^arn:aws[a-z-]*:(iam::[0-9]{12}:(role|user)/.+|sts::[0-9]{12}:assumed-role/.+)$",
        "an IAM role or user ARN (or an STS assumed-role ARN)",
    ),
]


def namespace_of(team: str) -> str:
    """The Kubernetes namespace the service creates for ``team`` with its compute quota."""
    return f"hyperpod-ns-{team}"


def local_queue_of(team: str) -> str:
    """The Kueue LocalQueue of ``team``'s namespace (a job's ``kueue.x-k8s.io/queue-name``)."""
    return f"{namespace_of(team)}-localqueue"


def kubernetes_group_of(team: str) -> str:
    """The Kubernetes group of ``team``'s principals (their EKS access entries name it; the
    cluster-objects chart binds the team's Role in its namespace to it)."""
    return f"hyperpod-cdk-team-{team}"


class PriorityClass(StrictModel):
    """One priority class of the cluster policy: tasks of a higher weight are admitted first
    and may preempt tasks of a lower one."""

    name: TaskGovernanceName = Field(
        description="The class name; the service names the Kueue priority class <name>-priority, "
        "which a job names in its kueue.x-k8s.io/priority-class label."
    )
    weight: Weight = Field(description="0-100; higher runs first.")


def _default_priority_classes() -> list[PriorityClass]:
    # AWS's five classes (aws/sagemaker-hyperpod-cluster-setup
    # task-governance-cluster-policy-template.yaml; HYPERPOD_FACTS 2026-11-24)
    return [
        PriorityClass(name="inference", weight=100),
        PriorityClass(name="experimentation", weight=90),
        PriorityClass(name="training", weight=80),
        PriorityClass(name="fine-tuning", weight=70),
        PriorityClass(name="interactive", weight=60),
    ]


class TaskGovernancePolicy(StrictModel):
    """The cluster policy (``AWS::SageMaker::ClusterSchedulerConfig``)."""

    priority_classes: Annotated[list[PriorityClass], Field(max_length=MAX_PRIORITY_CLASSES)] = (
        Field(
            default_factory=_default_priority_classes,
            description="At most 10. Default: AWS's five: inference 100, experimentation 90, "
            "training 80, fine-tuning 70, interactive 60.",
        )
    )
    fair_share: bool = Field(
        default=True,
        description="Teams borrow idle compute in proportion to their fair_share_weight.",
    )
    idle_resource_sharing: bool = Field(
        default=True, description="Teams may use the idle quota of other teams."
    )


class MigSlices(StrictModel):
    """A number of MIG slices of one profile (NVIDIA GPU types only)."""

    profile: Literal[MIG_PROFILES] = Field(  # type: ignore[valid-type]
        description="A MIG profile the instance type's GPU offers, like mig-1g.10gb."
    )
    count: Amount = Field(description="How many slices of that profile.")


class QuotaLine(StrictModel):
    """What a team is guaranteed of one instance type: whole instances (``count``), or
    amounts of accelerators, vCPUs, memory or MIG slices (the service fills in the amounts left
    out in proportion to the instance)."""

    instance_type: InstanceType = Field(description="A type of this cluster's instance groups.")
    count: Amount | None = Field(default=None, description="Whole instances.")
    accelerators: Amount | None = Field(default=None, description="GPUs or Trainium devices.")
    vcpu: Annotated[float, Field(ge=0, le=10_000_000)] | None = Field(
        default=None, description="vCPUs; left out: in proportion to the other amounts."
    )
    memory_gib: Annotated[float, Field(ge=0, le=10_000_000)] | None = Field(
        default=None, description="Memory in GiB; left out: in proportion to the other amounts."
    )
    mig: MigSlices | None = Field(
        default=None,
        description="MIG slices of one profile (NVIDIA GPU types only); left out: none.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> QuotaLine:
        amounts = [
            key
            for key in ("accelerators", "vcpu", "memory_gib", "mig")
            if getattr(self, key) is not None
        ]
        if self.count is not None and amounts:
            raise ValueError(
                f"give count (whole instances) or amounts ({', '.join(amounts)}), not both"
            )
        if self.count is None and not amounts:
            raise ValueError("give count, or accelerators, vcpu, memory_gib or mig")
        return self


class Sharing(StrictModel):
    """How a team shares idle compute with the others."""

    strategy: Literal["Lend", "DontLend", "LendAndBorrow"] = Field(
        default="LendAndBorrow",
        description="Lend: others may use the team's idle quota; DontLend: they may not; "
        "LendAndBorrow: lend, and borrow others' idle compute up to borrow_limit_percent.",
    )
    borrow_limit_percent: (
        Annotated[int, Field(ge=MIN_BORROW_LIMIT, le=MAX_BORROW_LIMIT), WHOLE_NUMBER] | None
    ) = Field(
        default=None,
        description="LendAndBorrow only: how much the team may borrow, in percent of its quota "
        "(1-500); default: the service's (50).",
    )


class Team(StrictModel):
    """One team: its compute quota and the IAM principals who submit its jobs."""

    name: TaskGovernanceName = Field(
        description="The service creates namespace hyperpod-ns-<name>; renaming replaces the "
        "quota (its running jobs are stopped)."
    )
    fair_share_weight: Weight | None = Field(
        default=None,
        description="0-100: the team's share of idle compute under fair share; "
        "default: the service's.",
    )
    quota: Annotated[list[QuotaLine], Field(max_length=MAX_QUOTA_LINES)] = Field(
        default_factory=list, description="At most 15 lines, one instance type each."
    )
    sharing: Sharing = Field(
        default_factory=lambda: Sharing(),
        description="How the team shares idle compute with the others; left out: LendAndBorrow "
        "with the service's borrow limit.",
    )
    preempt_team_tasks: Literal["Never", "LowerPriority"] = Field(
        default="LowerPriority",
        description="LowerPriority: the team's higher-priority tasks preempt its own "
        "lower-priority ones.",
    )
    principals: list[PrincipalArn] = Field(
        default_factory=list,
        description="IAM roles or users of the team: an EKS access entry with a policy scoped "
        "to the team's namespace (one entry per principal, however many teams it is in).",
    )


class TaskGovernance(StrictModel):
    """Task governance as code (needs ``eks.addons.task_governance``)."""

    policy: TaskGovernancePolicy = Field(
        default_factory=lambda: TaskGovernancePolicy(),
        description="The cluster policy; default: AWS's five priority classes, fair share and "
        "idle resource sharing on.",
    )
    teams: list[Team] = Field(
        default_factory=list, description="One compute quota per team, in the team's namespace."
    )

    def principal_groups(self) -> dict[str, list[str]]:
        """Each team principal with the Kubernetes groups of its teams, in file order."""
        found: dict[str, list[str]] = {}
        for team in self.teams:
            for principal in team.principals:
                groups = found.setdefault(principal, [])
                if kubernetes_group_of(team.name) not in groups:
                    groups.append(kubernetes_group_of(team.name))
        return found

    def principal_namespaces(self) -> dict[str, list[str]]:
        """Each team principal with the namespaces of its teams, in the order of the file."""
        found: dict[str, list[str]] = {}
        for team in self.teams:
            for principal in team.principals:
                spaces = found.setdefault(principal, [])
                if namespace_of(team.name) not in spaces:
                    spaces.append(namespace_of(team.name))
        return found


# -- cross-key rules --------------------------------------------------------------------------


_PATH = "eks.task_governance"


def _family(instance_type: str) -> str:
    parts = instance_type.split(".")
    return parts[1] if len(parts) == 3 else ""


def check_task_governance(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``eks.task_governance`` into ``out``, each with its key path."""
    if cfg.is_slurm or cfg.eks is None or cfg.eks.task_governance is None:
        return
    governance = cfg.eks.task_governance
    if not cfg.eks.addons.task_governance:
        out.error(
            _PATH,
            "needs the task governance add-on, which runs the policy and the quotas (Kueue); "
            "set eks.addons.task_governance: true",
        )
    policy = governance.policy
    for name, n in Counter(p.name for p in policy.priority_classes).items():
        if n > 1:
            out.error(
                f"{_PATH}.policy.priority_classes", f"priority class {name!r} appears {n} times"
            )
    seen: set[str] = set()
    group_types = _group_capacity(cfg)
    counted: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for t, team in enumerate(governance.teams):
        path = f"{_PATH}.teams[{t}]"
        if team.name in seen:
            out.error(f"{path}.name", f"team {team.name!r} appears twice; give each team once")
        seen.add(team.name)
        quota_name = f"{cfg.cluster_name}-{team.name}"
        if len(quota_name) > MAX_QUOTA_NAME:
            out.error(
                f"{path}.name",
                f"the compute quota's name {quota_name!r} (<cluster name>-<team>) has "
                f"{len(quota_name)} characters; at most {MAX_QUOTA_NAME}: shorten the team name",
            )
        if team.fair_share_weight is not None and not policy.fair_share:
            out.error(
                f"{path}.fair_share_weight",
                "is used only under fair share, which policy.fair_share turns off; remove it or "
                "set policy.fair_share: true",
            )
        sharing = team.sharing
        if sharing.borrow_limit_percent is not None and sharing.strategy != "LendAndBorrow":
            out.error(
                f"{path}.sharing.borrow_limit_percent",
                f"applies only with strategy LendAndBorrow (strategy is {sharing.strategy}); "
                "remove it or set strategy: LendAndBorrow",
            )
        for q, line in enumerate(team.quota):
            line_path = f"{path}.quota[{q}]"
            itype = line.instance_type
            if itype not in group_types:
                known = ", ".join(sorted(group_types)) or "none"
                out.error(
                    f"{line_path}.instance_type",
                    f"{itype} is not a type of this cluster's instance groups ({known})",
                )
                continue
            if line.accelerators and not facts.is_accelerated(itype):
                out.error(
                    f"{line_path}.accelerators",
                    f"{itype} has no accelerators; give count, vcpu or memory_gib instead",
                )
            if line.mig is not None and not _family(itype).startswith(_NVIDIA_FAMILY_PREFIXES):
                out.error(
                    f"{line_path}.mig",
                    f"{itype} has no NVIDIA GPU to partition (MIG); give count or amounts instead",
                )
            if line.count:
                counted[itype].append((line_path, line.count))
    for itype, lines in counted.items():
        total = sum(n for _, n in lines)
        capacity, autoscaled = group_types[itype]
        if total <= capacity:
            continue
        where = lines[-1][0] + ".count"
        message = (
            f"the teams' quotas of {itype} add up to {total} instances, more than the "
            f"{capacity} of this cluster's groups of that type"
        )
        if autoscaled:
            pools = _node_pool_limits(cfg, itype)
            out.warn(
                where,
                f"{message}; the groups autoscale{pools}, so the nodes may come later",
            )
        else:
            out.error(where, f"{message}; lower the quotas or raise the groups' count")


def _node_pool_limits(cfg: EnvironmentConfig, instance_type: str) -> str:
    """`` (node pool a: nvidia.com/gpu 16)``: the node pools that scale groups of
    ``instance_type``, with their limits; empty when none does."""
    groups = {g.name: g for g in cfg.cluster.instance_groups}
    found = [
        f"node pool {pool.name}: "
        + ", ".join(f"{k} {v}" for k, v in pool.limits.as_kubernetes().items())
        for pool in cfg.cluster.node_pools
        if any(
            name in groups and instance_type in groups[name].all_instance_types
            for name in pool.instance_groups
        )
    ]
    return f" ({'; '.join(found)})" if found else ""


def _group_capacity(cfg: EnvironmentConfig) -> dict[str, tuple[int, bool]]:
    """Each instance type of the cluster's groups: (instances of it, whether a group of it
    may scale). A group of several types (instance_types) counts fully for each of them."""
    capacity: dict[str, tuple[int, bool]] = {}
    scales = cfg.cluster.auto_scaling
    for group in cfg.cluster.instance_groups:
        size = max(group.count, group.min_count or 0)
        for itype in group.all_instance_types:
            before, flexible = capacity.get(itype, (0, False))
            capacity[itype] = (
                before + size,
                flexible or scales or len(group.all_instance_types) > 1,
            )
    return capacity

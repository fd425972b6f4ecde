"""The ``observability`` section: metrics on both orchestrators, their alert rules, Grafana.

One section for Slurm and EKS (SPEC section 4). ``enabled`` installs HyperPod's own collection:
on EKS the ``amazon-sagemaker-hyperpod-observability`` add-on, on Slurm the
``sagemaker-observability`` cluster extension; both remote-write into an Amazon Managed
Prometheus workspace (a new one, or ``prometheus_workspace_arn``). ``levels`` sets each metric
category's level: on EKS DISABLED, BASIC or ADVANCED; on Slurm the extension's own levels per
category (:data:`SLURM_EXTENSION_SETTINGS`). ``alert_rules`` adds AWS's GPU / disk / FSx rules to
the workspace and routes them to ``alerts``; ``grafana`` adds an Amazon Managed Grafana
workspace. ``eks.addons.observability: true`` stays the EKS shorthand for
``observability.enabled: true``.

Facts (read 2026-11-25):

==============================================  ==============================================
Fact                                            Source
==============================================  ==============================================
The add-on's ``metricsProvider`` keys           ../shared/HYPERPOD_FACTS.md "Observability and
trainingMetrics, inferenceMetrics,              events" (2026-11-24); SageMaker developer
taskGovernanceMetrics, scalingMetrics,          guide, "Amazon SageMaker HyperPod observability
clusterMetrics, nodeMetrics,                    add-on"
acceleratedComputeMetrics, networkMetrics,
rayMetrics; levels DISABLED | BASIC | ADVANCED
The Slurm extension ``sagemaker-observability``  botocore 1.44.5 (pinned) ``sagemaker``
needs Continuous provisioning and a Slurm        ``CreateClusterExtension`` documentation; its
cluster; its ``ConfigurationValues`` example    ``ConfigurationValues`` example
is ``{"metricsProvider": {"nodeMetrics":
{"level": "ADVANCED"}}}``
The Slurm extension's settings, levels and      :data:`SLURM_EXTENSION_SETTINGS`, from
defaults                                        :data:`SLURM_EXTENSION_SOURCE` (read 2026-11-27)
Extension versions are ``MAJOR.MINOR.PATCH``;   SageMaker API reference, ``ExtensionVersion
the only version AWS documents is the example    Summary`` and ``CreateClusterExtension``
``1.0.0``; no list of released versions is      (``ListClusterExtensionVersions`` is the list:
published                                        ``make preflight`` checks the pin with it)
The extension's exporters (node, DCGM, EFA)     aws-samples awsome-distributed-ai
are the images the lifecycle exporters run,     ``Extensions/observability`` (HYPERPOD_FACTS
on the same default ports 9100 / 9400 / 9109    "Node scripts")
An Amazon Managed Prometheus workspace ARN is   botocore 1.44.5 ``amp`` ``WorkspaceArn``,
``arn:<partition>:aps:<region>:<account>:       ``WorkspaceId`` (pattern
workspace/<id>``                                ``[0-9A-Za-z][-.0-9A-Z_a-z]*``)
Amazon Managed Grafana regions                  :data:`hyperpod_cdk.facts.GRAFANA_REGIONS`
==============================================  ==============================================

Choices: the EKS-only categories are errors on Slurm (the extension has no Kubernetes to
measure); keys that do nothing while observability is off are warnings, like ``alerts``'
``event_levels`` without Continuous provisioning; the lifecycle exporters and the extension
together are an error (same ports, same metrics). The lifecycle exporters alone (clusters
that cannot use the extension) are local only: nothing collects them, which
docs/observability.md says (a warning would fire on every such config).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import Field

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import IssueSink, StrictModel, eks_only, matching, slurm_only
from hyperpod_cdk.facts import METRIC_KEYS as METRIC_KEYS

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

Level = Literal["DISABLED", "BASIC", "ADVANCED", "ENABLED"]

#: the version of the ``sagemaker-observability`` extension this release installs on Slurm
#: (see the facts table: the API reference's example, the only version AWS documents; preflight
#: checks that ListClusterExtensionVersions offers it)
EXTENSION_NAME: Final = "sagemaker-observability"
EXTENSION_VERSION: Final = "1.0.0"
EXTENSION_VERSION_SOURCE: Final = (
    "SageMaker API reference, ExtensionVersionSummary / CreateClusterExtension example "
    "(read 2026-11-25)"
)

# -- the Slurm extension's settings: the facts table ---------------------------------------------

#: where AWS documents the Slurm extension's ``ConfigurationValues``, and when it was read
SLURM_EXTENSION_SOURCE: Final = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-cluster-observability-slurm-extension-config.html"
)
SLURM_EXTENSION_READ: Final = "2026-11-27"


@dataclass(frozen=True)
class ExtensionCategory:
    """One ``metricsProvider`` category of the Slurm extension.

    :ivar key: its setting name (``metricsProvider.<key>.level``).
    :ivar levels: the levels it takes.
    :ivar default: the level HyperPod stores when the setting is left out.
    :ivar evidence: per level, where it comes from: ``page`` (the page's example of every
        setting with its default), ``api-example`` (botocore 1.44.5 ``CreateClusterExtension``
        ``ConfigurationValues`` example), ``inferred`` (see the note).
    """

    key: str
    levels: tuple[Level, ...]
    default: Level
    evidence: tuple[tuple[Level, str], ...]


#: The Slurm extension's ``ConfigurationValues`` as :data:`SLURM_EXTENSION_SOURCE` documents it
#: (read :data:`SLURM_EXTENSION_READ`): one JSON object, every setting optional (``{}``: the
#: defaults, metrics to CloudWatch); camelCase names; "Unknown settings are rejected at every
#: level"; HyperPod writes the defaults into the stored configuration (DescribeClusterExtension
#: shows every setting). Its example of every setting with its default::
#:
#:     {"prometheus": {"remoteWriteUrl": "https://aps-workspaces.<region>.amazonaws.com/
#:          workspaces/<id>/api/v1/remote_write"},
#:      "metricsProvider": {"nodeMetrics": {"level": "BASIC", "collectionIntervalSeconds": 30},
#:          "acceleratedComputeMetrics": {"level": "BASIC", ...}, "networkMetrics":
#:          {"level": "ENABLED", ...}, "jobMetrics": {"level": "ENABLED", ...},
#:          "clusterMetrics": {"level": "ENABLED", ...}, "ncclMetrics": {"level": "DISABLED", ...}},
#:      "profilesProvider": {"hostProfiling": {"enabled": false}}, "graf...
#:
#: The stored copy of the page read here ends in the middle of the example (a setting that
#: starts ``graf``): the levels each category takes beyond its default, and the bounds of
#: ``collectionIntervalSeconds``, are not in it. So each category takes its default and the
#: other level of its kind: BASIC | ADVANCED for the categories whose default is BASIC (ADVANCED
#: is the botocore example's ``nodeMetrics`` level; on ``acceleratedComputeMetrics`` it is the
#: DCGM "advanced" counters of AWS's Slurm sample, inferred), ENABLED | DISABLED for the switches
#: (both are in the example, on different categories). DISABLED is not sent for
#: ``nodeMetrics`` / ``acceleratedComputeMetrics``: no AWS source read here shows it there.
#: The example has no ``logging`` and no ``ampWorkspace`` (the EKS add-on's keys): ``prometheus``.
SLURM_EXTENSION_SETTINGS: Final[dict[str, ExtensionCategory]] = {
    "node": ExtensionCategory(
        "nodeMetrics", ("BASIC", "ADVANCED"), "BASIC",
        (("BASIC", "page"), ("ADVANCED", "api-example")),
    ),
    "accelerated_compute": ExtensionCategory(
        "acceleratedComputeMetrics", ("BASIC", "ADVANCED"), "BASIC",
        (("BASIC", "page"), ("ADVANCED", "inferred")),
    ),
    "network": ExtensionCategory(
        "networkMetrics", ("ENABLED", "DISABLED"), "ENABLED",
        (("ENABLED", "page"), ("DISABLED", "page, on ncclMetrics")),
    ),
    "job": ExtensionCategory(
        "jobMetrics", ("ENABLED", "DISABLED"), "ENABLED",
        (("ENABLED", "page"), ("DISABLED", "page, on ncclMetrics")),
    ),
    "cluster": ExtensionCategory(
        "clusterMetrics", ("ENABLED", "DISABLED"), "ENABLED",
        (("ENABLED", "page"), ("DISABLED", "page, on ncclMetrics")),
    ),
    "nccl": ExtensionCategory(
        "ncclMetrics", ("ENABLED", "DISABLED"), "DISABLED",
        (("DISABLED", "page"), ("ENABLED", "page, on the other switches")),
    ),
}  # fmt: skip
#: the other documented settings (path -> default) of the same page; ``prometheus.remoteWriteUrl``
#: has no default (without it metrics go to CloudWatch). The app sends the first and the levels.
SLURM_EXTENSION_OTHER_SETTINGS: Final[dict[str, object]] = {
    "prometheus.remoteWriteUrl": None,
    "metricsProvider.<category>.collectionIntervalSeconds": 30,
    "profilesProvider.hostProfiling.enabled": False,
}
#: the add-on's (EKS) levels of every category
EKS_LEVELS: Final[tuple[Level, ...]] = ("DISABLED", "BASIC", "ADVANCED")

#: the categories a Slurm cluster has (the extension's), and the EKS add-on's
SLURM_CATEGORIES: Final = tuple(SLURM_EXTENSION_SETTINGS)
EKS_CATEGORIES: Final = (
    "node", "accelerated_compute", "network", "cluster",
    "training", "inference", "task_governance", "scaling", "ray",
)  # fmt: skip
EKS_ONLY_CATEGORIES: Final = tuple(c for c in EKS_CATEGORIES if c not in SLURM_CATEGORIES)
SLURM_ONLY_CATEGORIES: Final = tuple(c for c in SLURM_CATEGORIES if c not in EKS_CATEGORIES)

#: the defaults of each orchestrator: AWS's HyperPod setup template on EKS
#: (aws/sagemaker-hyperpod-cluster-setup observability-template.yaml, what eks/addons.py sent
#: before this section existed), on Slurm the extension's own (:data:`SLURM_EXTENSION_SETTINGS`)
EKS_DEFAULT_LEVELS: Final[dict[str, Level]] = {
    "node": "BASIC",
    "accelerated_compute": "BASIC",
    "network": "DISABLED",
    "cluster": "BASIC",
    "training": "BASIC",
    "inference": "BASIC",
    "task_governance": "DISABLED",  # ADVANCED when eks.addons.task_governance is on
    "scaling": "DISABLED",
    "ray": "DISABLED",
}
SLURM_DEFAULT_LEVELS: Final[dict[str, Level]] = {
    category: setting.default for category, setting in SLURM_EXTENSION_SETTINGS.items()
}


def slurm_level_problem(category: str, level: str) -> str | None:
    """Why ``level`` is not a level of the Slurm extension's ``category``; None when it is."""
    setting = SLURM_EXTENSION_SETTINGS[category]
    if level in setting.levels:
        return None
    return (
        f"{level} is not a level of the Slurm extension's {setting.key}; use "
        f"{' or '.join(setting.levels)} ({SLURM_EXTENSION_SOURCE})"
    )


WORKSPACE_ARN_PATTERN = (
    r"^arn:aws[a-z-]*:aps:[a-z0-9-]+:[0-9]{12}:workspace/[0-9A-Za-z][-.0-9A-Z_a-z]{0,63}$"
)
WorkspaceArn = Annotated[
    str,
    matching(
        WORKSPACE_ARN_PATTERN,
        "an Amazon Managed Prometheus workspace ARN like "
        "arn:aws:aps:us-west-2:111122223333:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef",
    ),
]
ExtensionVersion = Annotated[
    str,
    matching(
        r"^[0-9]{1,9}\.[0-9]{1,9}\.[0-9]{1,9}$",
        "an extension version MAJOR.MINOR.PATCH like 1.0.0",
        max_length=64,
    ),
]


# why a category of one orchestrator is refused under the other (check_orchestrator_scope)
_ON_SLURM = f"Slurm clusters have {', '.join(SLURM_CATEGORIES)}"
_ON_EKS = f"the EKS add-on has {', '.join(EKS_CATEGORIES)}"


class MetricLevels(StrictModel):
    """The level of each metric category; left out, the orchestrator's default. EKS: DISABLED,
    BASIC or ADVANCED. Slurm (the extension's categories and levels): node and
    accelerated_compute BASIC | ADVANCED; network, job, cluster and nccl ENABLED | DISABLED."""

    node: Level | None = Field(default=None, description="Node (node exporter) metrics.")
    accelerated_compute: Level | None = Field(
        default=None, description="GPU / Trainium metrics (DCGM, Neuron)."
    )
    network: Level | None = Field(default=None, description="EFA network metrics.")
    cluster: Level | None = Field(default=None, description="Cluster (scheduler) metrics.")
    job: Level | None = Field(
        default=None,
        description="Slurm job metrics (ENABLED | DISABLED).",
        json_schema_extra=slurm_only(_ON_EKS),
    )
    nccl: Level | None = Field(
        default=None,
        description="NCCL metrics (ENABLED | DISABLED).",
        json_schema_extra=slurm_only(_ON_EKS),
    )
    training: Level | None = Field(
        default=None, description="Training job metrics.", json_schema_extra=eks_only(_ON_SLURM)
    )
    inference: Level | None = Field(
        default=None, description="Inference metrics.", json_schema_extra=eks_only(_ON_SLURM)
    )
    task_governance: Level | None = Field(
        default=None,
        description="Task governance (Kueue) metrics.",
        json_schema_extra=eks_only(_ON_SLURM),
    )
    scaling: Level | None = Field(
        default=None, description="Autoscaling metrics.", json_schema_extra=eks_only(_ON_SLURM)
    )
    ray: Level | None = Field(
        default=None, description="Ray metrics.", json_schema_extra=eks_only(_ON_SLURM)
    )

    def given(self) -> dict[str, Level]:
        """The categories the YAML sets, with their levels."""
        return {
            key: value
            for key in METRIC_KEYS
            if (value := getattr(self, key)) is not None and self.is_set(key)
        }


class ObservabilityConfig(StrictModel):
    """Metrics of the cluster in Amazon Managed Prometheus, alert rules on them, dashboards.

    EKS: the HyperPod observability add-on. Slurm: HyperPod's ``sagemaker-observability``
    cluster extension (Continuous provisioning only; it runs the node, DCGM and EFA exporters
    itself, so ``cluster.node_setup.exporters`` stay off).
    """

    enabled: bool = Field(
        default=False,
        description="EKS: the observability add-on; Slurm: the sagemaker-observability "
        "extension (needs cluster.node_provisioning_mode: Continuous).",
    )
    prometheus_workspace_arn: WorkspaceArn | None = Field(
        default=None,
        description="An existing Amazon Managed Prometheus workspace of this account and region "
        "instead of a new one: the app adds its rule groups, never its alert manager "
        "definition (docs/observability.md says how to route its alerts).",
    )
    levels: MetricLevels = Field(
        default_factory=MetricLevels,
        description="Per category. eks: node, accelerated_compute, network, cluster, training, "
        "inference, task_governance, scaling, ray -> DISABLED | BASIC | ADVANCED. slurm (the "
        "extension's): node, accelerated_compute -> BASIC | ADVANCED; network, job, cluster, "
        "nccl -> ENABLED | DISABLED.",
    )
    logging: bool = Field(
        default=False,
        description="The add-on also ships the cluster's logs (the Slurm extension has no "
        "logging setting).",
        json_schema_extra=eks_only(
            "the Slurm extension sagemaker-observability has no logging setting: it takes "
            "prometheus, metricsProvider and profilesProvider and rejects unknown settings: "
            f"{SLURM_EXTENSION_SOURCE}"
        ),
    )
    alert_rules: bool = Field(
        default=True,
        description="AWS's GPU, disk and FSx alert rules in the workspace, routed to `alerts`.",
    )
    grafana: bool = Field(
        default=False,
        description="An Amazon Managed Grafana workspace with this project's dashboards "
        "(needs IAM Identity Center; docs/dashboards.md).",
    )
    extension_version: ExtensionVersion | None = Field(
        default=None,
        description=f"The sagemaker-observability version; null: {EXTENSION_VERSION}, "
        "the one this release pins (make preflight checks it is offered).",
        json_schema_extra=slurm_only(
            "EKS uses the observability add-on, pinned with the other add-ons"
        ),
    )


def observability_settings(cfg: EnvironmentConfig) -> ObservabilityConfig | None:
    """The observability settings in force: the section when it turns metrics on, the
    defaults when only ``eks.addons.observability: true`` does; None when metrics are off."""
    if not cfg.observability_enabled:
        return None
    return cfg.observability or ObservabilityConfig(enabled=True)


def default_levels(*, slurm: bool, task_governance: bool = False) -> dict[str, Level]:
    """Every category of an orchestrator with its default level (on EKS task governance is
    ADVANCED when its add-on is on)."""
    if slurm:
        return dict(SLURM_DEFAULT_LEVELS)
    levels = dict(EKS_DEFAULT_LEVELS)
    if task_governance:
        levels["task_governance"] = "ADVANCED"
    return levels


def metrics_provider(levels: Mapping[str, Level]) -> dict[str, Level]:
    """Category levels as the add-on's (and the extension's) ``metricsProvider`` keys."""
    return {METRIC_KEYS[category]: level for category, level in levels.items()}


def metric_levels(cfg: EnvironmentConfig) -> dict[str, Level]:
    """Every category of the orchestrator with its level: the configured one, else the
    default (:func:`default_levels`)."""
    levels = default_levels(
        slurm=cfg.is_slurm,
        task_governance=not cfg.is_slurm and cfg.eks_settings.addons.task_governance,
    )
    if cfg.observability is not None:
        levels.update(
            (key, level) for key, level in cfg.observability.levels.given().items() if key in levels
        )
    return levels_backing_rules(cfg, levels)


# -- the alert rules and the levels that collect their counters ---------------------------------


def levels_backing_rules(cfg: EnvironmentConfig, levels: dict[str, Level]) -> dict[str, Level]:
    """Slurm with ``alert_rules``: a category the YAML leaves at its default is raised to the
    level every rule's counters need (accelerated_compute ADVANCED for the ECC and NVLink
    rules, :data:`hyperpod_cdk.facts.alert_rules.SLURM_METRIC_LEVELS`); a level the
    YAML sets is kept (:func:`check_rule_levels` warns about the rules it leaves out)."""
    settings = observability_settings(cfg)
    if not cfg.is_slurm or settings is None or not settings.alert_rules:
        return levels
    from hyperpod_cdk.facts.alert_rules import LEVEL_ORDER, rules_for, slurm_needs

    given = cfg.observability.levels.given() if cfg.observability is not None else {}
    backed = dict(levels)
    for rule in rules_for("slurm"):
        for category, needed in slurm_needs(rule).items():
            if category in given or category not in backed:
                continue
            if LEVEL_ORDER.index(backed[category]) < LEVEL_ORDER.index(needed):
                backed[category] = needed  # type: ignore[assignment]
    return backed


def check_rule_levels(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Slurm with ``alert_rules``: one warning per ``observability.levels`` key whose level
    leaves rules out (their counters are not collected at it), naming the rules."""
    settings = observability_settings(cfg)
    if not cfg.is_slurm or settings is None or not settings.alert_rules:
        return
    from hyperpod_cdk.facts.alert_rules import SLURM_METRIC_LEVELS, left_out, metrics_of

    by_category: dict[str, list[str]] = {}
    needs: dict[str, str] = {}
    levels = metric_levels(cfg)
    for rule, category, needed in left_out("slurm", levels):
        counters = [m for m in metrics_of(rule) if SLURM_METRIC_LEVELS[m][0] == category]
        by_category.setdefault(category, []).append(f"{rule.name} ({', '.join(counters)})")
        needs[category] = max(
            needs.get(category, needed), needed, key=("DISABLED", "BASIC", "ADVANCED").index
        )
    for category, rules in by_category.items():
        out.warn(
            f"{_PATH}.levels.{category}",
            f"{levels[category]}: the sagemaker-observability extension collects the counters of "
            f"{'; '.join(rules)} only at {needs[category]}, so the alert rules are left out of the "
            f"workspace; set {category}: {needs[category]} to keep them, or leave the key out "
            "(the default backs the rules)",
        )


def extension_version(settings: ObservabilityConfig) -> str:
    """The extension version to install: the configured one, else :data:`EXTENSION_VERSION`."""
    return settings.extension_version or EXTENSION_VERSION


_PATH = "observability"
_EXPORTERS = "cluster.node_setup.exporters"


def check_observability(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``observability`` (errors and warnings) into ``out``."""
    section = cfg.observability
    shorthand = not cfg.is_slurm and cfg.eks_settings.addons.observability
    exporters = cfg.cluster.node_setup.exporters
    exporters_on = [name for name in ("node", "dcgm", "efa") if getattr(exporters, name)]
    if section is None:
        return
    if shorthand and section.is_set("enabled") and not section.enabled:
        out.error(
            f"{_PATH}.enabled",
            "false, while eks.addons.observability: true turns the add-on on; remove one of them "
            "(eks.addons.observability is the shorthand of observability.enabled: true)",
        )
        return
    enabled = cfg.observability_enabled
    if cfg.is_slurm:
        for key, level in section.levels.given().items():
            if key in EKS_ONLY_CATEGORIES:
                continue  # check_orchestrator_scope
            if (problem := slurm_level_problem(key, level)) is not None:
                out.error(f"{_PATH}.levels.{key}", problem)
    else:
        for key, level in section.levels.given().items():
            if key in SLURM_ONLY_CATEGORIES:
                continue  # check_orchestrator_scope
            if level not in EKS_LEVELS:
                out.error(
                    f"{_PATH}.levels.{key}",
                    f"{level} is not a level of the observability add-on's {METRIC_KEYS[key]}; "
                    f"use {', '.join(EKS_LEVELS)}",
                )
    if section.prometheus_workspace_arn:
        _check_workspace_arn(section.prometheus_workspace_arn, cfg, out)
    if section.grafana and cfg.region not in facts.GRAFANA_REGIONS:
        out.error(
            f"{_PATH}.grafana",
            f"Amazon Managed Grafana is not offered in {cfg.region}; it is in "
            f"{', '.join(facts.GRAFANA_REGIONS)}: set grafana: false (or deploy in one of them)",
        )
    if not enabled:
        for key in ("prometheus_workspace_arn", "levels", "logging", "alert_rules", "grafana"):
            if key == "logging" and cfg.is_slurm:
                continue  # an error above
            if section.is_set(key) and getattr(section, key) not in (None, False):
                if key == "levels" and not section.levels.given():
                    continue
                out.warn(
                    f"{_PATH}.{key}",
                    "has no effect while observability is off (observability.enabled: false); "
                    "set enabled: true or remove it",
                )
        return
    if cfg.is_slurm:
        if not cfg.cluster.continuous:
            out.error(
                f"{_PATH}.enabled",
                "the sagemaker-observability extension needs Continuous provisioning "
                "(cluster.node_provisioning_mode: Continuous); without it use the lifecycle "
                f"exporters ({_EXPORTERS}), whose metrics stay on the nodes",
            )
        if exporters_on:
            keys = ", ".join(f"{_EXPORTERS}.{name}" for name in exporters_on)
            out.error(
                f"{_PATH}.enabled",
                f"the extension runs the node, DCGM and EFA exporters itself (same ports, same "
                f"metrics) and {keys} is on too; turn {keys} off or set "
                "observability.enabled: false",
            )
    check_rule_levels(cfg, out)
    if section.alert_rules and cfg.alerts is None:
        out.warn(
            f"{_PATH}.alert_rules",
            "no alerts section: the rules fire with nowhere to go; add alerts (emails or "
            "sns_topic_arn), or route the workspace's alert manager yourself "
            "(docs/observability.md)",
        )


def _check_workspace_arn(arn: str, cfg: EnvironmentConfig, out: IssueSink) -> None:
    from hyperpod_cdk.config.alerts import partition_of

    _, partition, _, region, account, _ = arn.split(":", 5)
    expected = partition_of(cfg.region)
    if region != cfg.region or partition != expected:
        out.error(
            f"{_PATH}.prometheus_workspace_arn",
            f"the workspace is in {partition}/{region}, the environment in {expected}/"
            f"{cfg.region}; its rule groups are created in the environment's region: use a "
            "workspace there",
        )
    if cfg.account is not None and account != cfg.account:
        out.error(
            f"{_PATH}.prometheus_workspace_arn",
            f"the workspace belongs to account {account}, the environment to {cfg.account}; "
            "rule groups and remote write need a workspace of the environment's account",
        )

"""Metrics of a HyperPod cluster in Amazon Managed Prometheus, on both orchestrators.

:class:`HyperPodMetrics` holds the workspace side: the Amazon Managed Prometheus workspace (new,
passed in, or adopted by ARN), AWS's GPU / disk / FSx alert rules as a rule-groups namespace
(:mod:`hyperpod_cdk.facts.alert_rules`), the workspace's alert manager routing them to
the alerts topic (a workspace this app owns only), and on Slurm HyperPod's
``sagemaker-observability`` cluster extension (a custom resource, the extension has no
CloudFormation type in the pinned aws-cdk-lib 2.275.0) with the nodes' right to remote-write
into this workspace and no other. On EKS the observability add-on (``eks/addons.py``) is the
collector; this construct adds the rules and the routing to the add-on's workspace.

Facts (read 2026-11-25):

==============================================  ==============================================
Fact                                            Source
==============================================  ==============================================
The workspace's remote-write endpoint is        Amazon Managed Service for Prometheus user
``https://aps-workspaces.<region>.amazonaws.    guide, "Ingest metrics ... remote write";
com/workspaces/<id>/api/v1/remote_write``;      ``AWS::APS::Workspace`` ``PrometheusEndpoint``
the Prometheus endpoint ends at ``<id>/``       (``.../workspaces/<id>/``)
A workspace's alert manager sends to SNS with   AMP user guide, "Configure your alert manager
``sns_configs{topic_arn, sigv4{region}}``;       to send messages to Amazon SNS"; its
the topic (and its KMS key) must let            "Allow Amazon Managed Service for Prometheus
``aps.amazonaws.com`` publish                   to send alert messages to your Amazon SNS
                                                topic" (the alerts topic allows it:
                                                alerts/construct.py)
``AWS::APS::Workspace`` has                     CloudFormation template reference,
``AlertManagerDefinition`` (one per workspace)  AWS::APS::Workspace; AWS::APS::RuleGroupsNamespace
and ``AWS::APS::RuleGroupsNamespace{Workspace
(ARN), Name, Data}`` adds rules to any
workspace of the account and region
Remote write needs ``aps:RemoteWrite`` on the   AMP user guide, "IAM permissions"
workspace
The extension API: see                          extension_handler/handler.py (botocore 1.44.5)
``extension_handler/handler.py``; its version
pin: ``config/observability.py``
The extension's ``ConfigurationValues``:        SageMaker developer guide, "Observability
``prometheus.remoteWriteUrl`` (the workspace's  extension configuration" (read 2026-11-27;
remote write URL) and                           ``config/observability.py``
``metricsProvider.<category>.level``; no        ``SLURM_EXTENSION_SETTINGS``)
``ampWorkspace``, no ``logging``
A custom resource's properties reach its        cloudformation-coverage-roadmap issue #1037;
handler with every scalar a string: the         aws/aws-cdk pull request #4000 (read
configuration travels as one JSON string        2026-11-27)
The extension's exporters pull from HyperPod's  awslabs/awsome-distributed-ai
ECR registry of the region (``ecr:BatchGet      Extensions/observability/README.md §3b;
Image``, ``ecr:GetDownloadUrlForLayer``,        whether the managed extension pulls with
``ecr:GetAuthorizationToken``)                  the node role is not documented
The *ClusterExtension actions' resource types   none in cfn-lint 1.58 Policies.json nor the
                                                service authorization reference read here:
                                                the cluster and ``extension/*`` both
==============================================  ==============================================
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import aws_cdk as cdk
import yaml
from aws_cdk import aws_aps as aps
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_cdk import facts
from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge, nag_account, nag_partition, nag_region
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.compliance.provider_framework import (
    acknowledge_deploy_time_handler,
    acknowledge_provider_framework,
    cfn_function,
    handler_function,
)
from hyperpod_cdk.config.observability import (
    EXTENSION_NAME,
    EXTENSION_VERSION,
    SLURM_EXTENSION_SETTINGS,
    SLURM_EXTENSION_SOURCE,
)
from hyperpod_cdk.facts.alert_rules import rule_file
from hyperpod_cdk.iam.aspects import RolePath
from hyperpod_cdk.observability import EXTENSION_HANDLER_DIR

RESOURCE_TYPE: Final = "Custom::HyperPodClusterExtension"
RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
#: as the handler's docstring recommends: poll every 30 s, the framework gives up after an hour,
#: the handler's own deadline (and readable message) comes 5 minutes before
QUERY_INTERVAL: Final = cdk.Duration.seconds(30)
TOTAL_TIMEOUT: Final = cdk.Duration.minutes(60)
HANDLER_TIMEOUT_SECONDS: Final = 55 * 60
RULE_NAMESPACE: Final = "hyperpod-alerts"
#: the handler's calls (action names = API names, SageMaker API reference)
EXTENSION_ACTIONS: Final = (
    "sagemaker:CreateClusterExtension",
    "sagemaker:UpdateClusterExtension",
    "sagemaker:DeleteClusterExtension",
    "sagemaker:DescribeClusterExtension",
)
#: the repositories of HyperPod's registry the extension's exporters come from
#: (``hyperpod/node_exporter``, ``hyperpod/dcgm_exporter``, the EFA exporter, ...)
EXPORTER_REPOSITORIES: Final = "hyperpod/*"

_WORKSPACE_ARN_SHAPE = "arn:<partition>:aps:<region>:<account>:workspace/<id>"


def new_workspace(
    scope: Construct, *, alias: str, encryption_key: kms.IKey | None = None
) -> tuple[aps.CfnWorkspace, logs.LogGroup]:
    """A new workspace (``PrometheusWorkspace``, RETAIN) that logs rule and alert manager errors
    to a log group (``PrometheusLogs``, one year) in ``scope``; both encrypted with
    ``encryption_key`` when given (its policy must let CloudWatch Logs and Amazon Managed
    Service for Prometheus use it), else with AWS owned keys.

    The construct ids are those the EKS add-ons used from the start: existing deployments keep
    their workspace (same logical ids).
    """
    log_group = logs.LogGroup(
        scope,
        "PrometheusLogs",
        retention=logs.RetentionDays.ONE_YEAR,
        encryption_key=encryption_key,
    )
    workspace = aps.CfnWorkspace(
        scope,
        "PrometheusWorkspace",
        alias=alias,
        kms_key_arn=encryption_key.key_arn if encryption_key else None,
        # AMP writes rule and alert manager errors there (LoggingConfiguration needs the log
        # group ARN with its ":*" suffix, which LogGroup.log_group_arn has)
        logging_configuration=aps.CfnWorkspace.LoggingConfigurationProperty(
            log_group_arn=log_group.log_group_arn
        ),
    )
    # it holds the metrics' history: kept when its stack goes or it moves to another stack
    workspace.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
    return workspace, log_group


def workspace_endpoint(scope: Construct, workspace_id: str, *, trailing_slash: bool = True) -> str:
    """The Prometheus endpoint of a workspace of ``scope``'s region:
    ``https://aps-workspaces.<region>.<url suffix>/workspaces/<id>/`` (the add-on's
    ``prometheusEndpoint`` is written without the final slash, as AWS's setup template does)."""
    stack = cdk.Stack.of(scope)
    base = f"https://aps-workspaces.{stack.region}.{stack.url_suffix}/workspaces/{workspace_id}"
    return f"{base}/" if trailing_slash else base


def extension_configuration(remote_write_url: str, levels: Mapping[str, str]) -> dict[str, Any]:
    """The Slurm extension's ``ConfigurationValues`` as AWS documents them
    (:data:`hyperpod_cdk.config.observability.SLURM_EXTENSION_SETTINGS`, from
    :data:`~hyperpod_cdk.config.observability.SLURM_EXTENSION_SOURCE`):
    ``prometheus.remoteWriteUrl`` (the workspace's remote write URL; without it the extension
    writes to CloudWatch) and ``metricsProvider.<key>.level`` of each category in ``levels``
    (``metricsProvider`` key -> level). Nothing else: the extension rejects unknown settings.

    :raises ValueError: a key or level the extension does not document.
    """
    by_key = {setting.key: setting for setting in SLURM_EXTENSION_SETTINGS.values()}
    for key, level in levels.items():
        if key not in by_key:
            raise ValueError(
                f"levels: {key!r} is not a metricsProvider category of the Slurm extension "
                f"({', '.join(by_key)}; {SLURM_EXTENSION_SOURCE})"
            )
        if level not in by_key[key].levels:
            raise ValueError(
                f"levels: {level} is not a level of the Slurm extension's {key}; use "
                f"{' or '.join(by_key[key].levels)}"
            )
    configuration: dict[str, Any] = {"prometheus": {"remoteWriteUrl": remote_write_url}}
    if levels:
        configuration["metricsProvider"] = {
            key: {"level": level} for key, level in sorted(levels.items())
        }
    return configuration


def workspace_id_of(arn: str) -> str:
    """The id of a workspace ARN (a literal): the part after ``workspace/``."""
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "aps" or not parts[5].startswith("workspace/"):
        raise ValueError(f"{arn!r} is not a workspace ARN ({_WORKSPACE_ARN_SHAPE})")
    return parts[5].removeprefix("workspace/")


def alert_manager_definition(*, topic_arn: str, region: str, cluster_name: str) -> str:
    """The alert manager configuration (YAML) that sends every alert to ``topic_arn``, grouped
    per alert name and cluster, with a subject naming the cluster and the alert."""
    config = {
        "route": {
            "receiver": "alerts-topic",
            "group_by": ["alertname", "hyperpod_cluster"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
        },
        "receivers": [
            {
                "name": "alerts-topic",
                "sns_configs": [
                    {
                        "topic_arn": topic_arn,
                        "sigv4": {"region": region},
                        "subject": (
                            f"[HyperPod {cluster_name}] "
                            "{{ .Status | toUpper }}: {{ .CommonLabels.alertname }}"
                        ),
                        "message": (
                            "{{ range .Alerts }}{{ .Annotations.summary }}\n"
                            "{{ .Annotations.description }}\n\n{{ end }}"
                        ),
                    }
                ],
            }
        ],
    }
    # the service wants the alert manager configuration under alertmanager_config, as a YAML
    # block (AMP user guide, "Create an alert manager configuration"); the topic ARN may be a
    # token, which YAML leaves whole (a plain or quoted scalar)
    body = yaml.safe_dump(config, sort_keys=False, width=1000)
    return "alertmanager_config: |\n" + textwrap.indent(body, "  ")


class HyperPodMetrics(Construct):
    """The Prometheus workspace of a HyperPod cluster, its alert rules and routing, and on Slurm
    the ``sagemaker-observability`` extension that fills it.

    :param cluster_name: the HyperPod cluster's name (a literal: it labels the alerts).
    :param orchestrator: ``slurm`` or ``eks`` (which rules; the extension on Slurm only).
    :param workspace: a workspace this app creates elsewhere (the EKS add-ons' one): rule
        groups and alert manager go to it.
    :param workspace_arn: an existing workspace to adopt instead: rule groups only, its alert
        manager definition is never touched.
    :param encryption_key: for a new workspace and its log group (see :func:`new_workspace`).
    :param alert_rules: add AWS's rules (a rule-groups namespace).
    :param alerts_topic_arn: where the alert manager of a workspace this app owns sends the
        alerts (an SNS topic of this region that lets aps.amazonaws.com publish).
    :param cluster_arn: Slurm: the cluster to install the extension on (a token is fine).
    :param levels: Slurm: ``metricsProvider`` key -> level, sent to the extension
        (:func:`extension_configuration`); the alert rules they cannot back are left out.
    :param logging: EKS-only (the add-on ships logs); the Slurm extension has no such setting,
        so True with ``slurm`` is a ValueError.
    :param extension_version: Slurm: the pinned extension version.
    :param node_roles: Slurm: the execution roles of the instance groups; each gets
        ``aps:RemoteWrite`` on this workspace only and ECR pull on HyperPod's exporter
        repositories (``hyperpod/*`` of HyperPod's registry of the region), before the extension
        is installed.
    :param exporter_registry_account: Slurm: the account of HyperPod's ECR registry in this
        region; default: the facts table (``HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS``) for the stack's
        region. No pull grant (and a warning) when neither gives one.
    :param role_path: IAM path of the roles here. :param permissions_boundary: their boundary.

    :ivar workspace_arn: :ivar workspace_id: :ivar prometheus_endpoint: (ends with ``/``)
    :ivar remote_write_url: :ivar workspace: the workspace resource, None when adopted.
    :ivar rule_groups: :ivar extension: the custom resource (Slurm). :ivar remote_write_policy:
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        orchestrator: Literal["slurm", "eks"],
        workspace: aps.CfnWorkspace | None = None,
        workspace_arn: str | None = None,
        encryption_key: kms.IKey | None = None,
        alert_rules: bool = True,
        alerts_topic_arn: str | None = None,
        cluster_arn: str | None = None,
        levels: Mapping[str, str] | None = None,
        logging: bool = False,
        extension_version: str = EXTENSION_VERSION,
        node_roles: Sequence[iam.IRole] = (),
        exporter_registry_account: str | None = None,
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if workspace is not None and workspace_arn is not None:
            raise ValueError("give workspace (one this app creates) or workspace_arn, not both")
        if orchestrator == "slurm" and cluster_arn is None:
            raise ValueError("orchestrator slurm: the extension needs cluster_arn")
        if orchestrator == "slurm" and logging:
            raise ValueError(
                "orchestrator slurm: the sagemaker-observability extension has no logging "
                f"setting ({SLURM_EXTENSION_SOURCE})"
            )
        stack = cdk.Stack.of(self)
        self.adopted = workspace_arn is not None
        self.log_group: logs.LogGroup | None = None
        if workspace_arn is not None:
            self.workspace: aps.CfnWorkspace | None = None
            self.workspace_arn = workspace_arn
            self.workspace_id = workspace_id_of(workspace_arn)
        else:
            if workspace is None:
                workspace, self.log_group = new_workspace(
                    self, alias=f"{cluster_name}-hyperpod", encryption_key=encryption_key
                )
            self.workspace = workspace
            self.workspace_arn = workspace.attr_arn
            self.workspace_id = workspace.attr_workspace_id
        self.prometheus_endpoint = workspace_endpoint(self, self.workspace_id)
        self.remote_write_url = f"{self.prometheus_endpoint}api/v1/remote_write"

        self.rule_groups: aps.CfnRuleGroupsNamespace | None = None
        if alert_rules:
            self.rule_groups = aps.CfnRuleGroupsNamespace(
                self,
                "AlertRules",
                workspace=self.workspace_arn,
                name=RULE_NAMESPACE,
                # on Slurm the rules the extension's levels cannot back are left out
                data=rule_file(
                    orchestrator,
                    cluster_name,
                    dict(levels or {}) if orchestrator == "slurm" else None,
                ),
            )
        self.alert_manager: str | None = None
        if self.workspace is not None and alerts_topic_arn is not None:
            self.alert_manager = alert_manager_definition(
                topic_arn=alerts_topic_arn, region=stack.region, cluster_name=cluster_name
            )
            self.workspace.alert_manager_definition = self.alert_manager

        self.remote_write_policy: iam.ManagedPolicy | None = None
        self.extension: cdk.CustomResource | None = None
        if orchestrator == "slurm":
            assert cluster_arn is not None
            # every role here, the provider framework's too
            if permissions_boundary is not None:
                iam.PermissionsBoundary.of(self).apply(permissions_boundary)
            if role_path != "/":
                cdk.Aspects.of(self).add(RolePath(role_path))
            self._extension(
                cluster_arn,
                cluster_name=cluster_name,
                levels=dict(levels or {}),
                version=extension_version,
                node_roles=node_roles,
                registry_account=exporter_registry_account,
                role_path=role_path,
            )

    # -- Slurm: the extension ----------------------------------------------------------------

    def _extension(
        self,
        cluster_arn: str,
        *,
        cluster_name: str,
        levels: dict[str, str],
        version: str,
        node_roles: Sequence[iam.IRole],
        registry_account: str | None,
        role_path: str,
    ) -> None:
        stack = cdk.Stack.of(self)
        # the nodes write into this workspace and no other
        self.remote_write_policy = iam.ManagedPolicy(
            self,
            "RemoteWritePolicy",
            description=f"HyperPod {cluster_name}: remote write into its Prometheus workspace",
            statements=[
                iam.PolicyStatement(
                    sid="PrometheusRemoteWrite",
                    actions=["aps:RemoteWrite"],
                    resources=[self.workspace_arn],
                )
            ],
        )
        for role in node_roles:
            self.remote_write_policy.attach_to_role(role)
        self.image_pull_policy = self._image_pull(cluster_name, node_roles, registry_account)

        code = lambda_.Code.from_asset(str(EXTENSION_HANDLER_DIR), exclude=["__pycache__", "*.pyc"])

        def handler(construct_id: str, entry: str, description: str) -> lambda_.Function:
            return handler_function(
                self,
                construct_id,
                purpose="HyperPod observability extension",
                description=description,
                handler=f"handler.{entry}",
                code=code,
                runtime=RUNTIME,
                # botocore: 10 s connect + 30 s read, 3 attempts per call
                timeout=cdk.Duration.minutes(3),
                role_path=role_path,
            )

        self.on_event_function = handler("OnEvent", "on_event", "creates, updates, deletes it")
        self.is_complete_function = handler("IsComplete", "is_complete", "waits until it is Active")
        extensions = stack.format_arn(service="sagemaker", resource="extension", resource_name="*")
        self.handler_policy = iam.ManagedPolicy(
            self,
            "ExtensionPolicy",
            description=f"HyperPod {cluster_name}: manage its {EXTENSION_NAME} extension",
            statements=[
                # the resource types of these actions are in no source read here (cfn-lint's
                # Policies.json has no *ClusterExtension action): the cluster and the extensions
                # of this account and region both, so that Create is allowed whichever of the two
                # IAM authorizes it on (facts_slurm_obs 1.9)
                iam.PolicyStatement(
                    sid="ManageTheClusterExtension",
                    actions=list(EXTENSION_ACTIONS),
                    resources=[cluster_arn, extensions],
                ),
            ],
        )
        for function in (self.on_event_function, self.is_complete_function):
            assert function.role is not None
            self.handler_policy.attach_to_role(function.role)
        acknowledge(
            self.handler_policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:sagemaker:{nag_region(self)}:"
            f"{nag_account(self)}:extension/*]",
            "An extension's ARN is made by CreateClusterExtension (the service authorization "
            "reference read here names no resource type for the extension actions, and "
            "cfn-lint's Policies.json has none of them); the handler may only create, update, "
            "describe and delete extensions of this account and region, on this cluster.",
        )

        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.on_event_function,
            is_complete_handler=self.is_complete_function,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
        )
        configuration = extension_configuration(self.remote_write_url, levels)
        self.extension = cdk.CustomResource(
            self,
            "Extension",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "ClusterArn": cluster_arn,
                "ExtensionName": EXTENSION_NAME,
                "ExtensionVersion": version,
                # one JSON string with real booleans: CloudFormation passes every scalar of a
                # map in a custom resource's properties as a string ("true")
                "ConfigurationValues": stack.to_json_string(configuration),
                "TimeoutSeconds": HANDLER_TIMEOUT_SECONDS,
            },
        )
        # the nodes may write before the extension starts; the handler holds its rights first
        self.extension.node.add_dependency(self.remote_write_policy, self.handler_policy)
        if self.image_pull_policy is not None:
            self.extension.node.add_dependency(self.image_pull_policy)
        if self.rule_groups is not None:
            self.extension.node.add_dependency(self.rule_groups)
        self._acknowledge()

    def _image_pull(
        self, cluster_name: str, node_roles: Sequence[iam.IRole], account: str | None
    ) -> iam.ManagedPolicy | None:
        """ECR pull on HyperPod's exporter repositories for the node roles: AWS's Slurm
        observability sample requires ``ecr:BatchGetImage``, ``ecr:GetDownloadUrlForLayer`` and
        ``ecr:GetAuthorizationToken`` for the extension's images ("Without the ECR policy ... the
        observability setup will fail"; awslabs/awsome-distributed-ai
        Extensions/observability/README.md, facts_slurm_obs 1.13); whether the managed extension
        pulls with the node role is not documented, so the nodes may, on ``hyperpod/*`` of that
        one registry only."""
        stack = cdk.Stack.of(self)
        if account is None and not cdk.Token.is_unresolved(stack.region):
            account = facts.HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS.get(stack.region)
        if account is None or not node_roles:
            if node_roles:
                cdk.Annotations.of(self).add_warning_v2(
                    "hyperpod-cdk:extension-image-pull",
                    "HyperPod's exporter registry of this region is unknown (pass "
                    "exporter_registry_account): the node roles get no ECR pull on the "
                    "extension's exporter images",
                )
            return None
        repositories = stack.format_arn(
            service="ecr",
            account=account,
            resource="repository",
            resource_name=EXPORTER_REPOSITORIES,
        )
        policy = iam.ManagedPolicy(
            self,
            "ExtensionImagePull",
            description=f"HyperPod {cluster_name}: pull the observability extension's exporters",
            statements=[
                iam.PolicyStatement(
                    sid="PullExporterImages",
                    actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                    resources=[repositories],
                ),
                iam.PolicyStatement(
                    sid="RegistryLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]
                ),
            ],
        )
        for role in node_roles:
            policy.attach_to_role(role)
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource-level permissions (Service Authorization "
            "Reference, Amazon ECR): it only issues the registry login token; the images the "
            "nodes may pull are HyperPod's exporter repositories (hyperpod/*) of HyperPod's "
            "registry of this region.",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:ecr:{nag_region(self)}:"
            f"{account}:repository/{EXPORTER_REPOSITORIES}]",
            "The observability extension runs HyperPod's exporter images (node, DCGM, EFA), "
            "whose repository names AWS does not list; the nodes may pull only from HyperPod's "
            "hyperpod/* repositories of this region's registry (AWS's Slurm observability "
            "sample grants the same pull).",
        )
        return policy

    def _acknowledge(self) -> None:
        what = "The HyperPod observability extension handler"
        outside = (
            "The observability extension handler only calls the SageMaker API (the cluster's "
            "extension) during deploys and reaches nothing in a VPC."
        )
        for function in (self.on_event_function, self.is_complete_function):
            acknowledge_deploy_time_handler(function, what)
            acknowledge_controls(function, "LambdaInsideVPC", outside)
            skip_check(cfn_function(function), "CKV_AWS_117", outside)
        acknowledge_provider_framework(
            self.provider,
            (self.on_event_function, self.is_complete_function),
            name="observability extension",
            outside=(
                "CDK's provider framework function of the HyperPod observability extension only "
                "invokes the extension handlers (Lambda API), starts or is run by its waiter "
                "state machine and answers CloudFormation's pre-signed S3 URL; it holds no data "
                "and reaches nothing in the VPC."
            ),
            interval_seconds=int(QUERY_INTERVAL.to_seconds()),
        )

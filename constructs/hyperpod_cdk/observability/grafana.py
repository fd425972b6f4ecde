"""Amazon Managed Grafana: a workspace with the Prometheus data source and this project's dashboards.

CloudFormation has ``AWS::Grafana::Workspace`` but no type for what lives inside Grafana (data
sources, folders, dashboards): a custom resource (``Custom::HyperPodGrafanaContent``, handler in
``grafana_handler/``) installs them through the Grafana HTTP API with a short-lived
service-account token (see the handler's module doc).

Facts, read 2026-11-25:

=====================================  ==========================================================
Fact                                   Source
=====================================  ==========================================================
Workspace properties, required         cfn-lint 1.58.0 registry schema of AWS::Grafana::Workspace
AccountAccessType, AuthenticationPro-  (registry data of 2026-10-20); GrafanaVersion is a free
viders, PermissionType; DataSources    string of 1-255 characters
enum incl. PROMETHEUS
Grafana 10 is offered for new          Amazon Managed Grafana user guide, "Working in Grafana
workspaces (besides 9, 12, 13);        version 10" (and the 9, 12, 13 pages); API reference
service accounts need 9 or later;      CreateWorkspaceServiceAccountToken; ListVersions (what
``ListVersions`` lists the offered     ``make preflight`` checks facts.GRAFANA_VERSION with)
versions
Prometheus query actions               AWS managed policy AmazonPrometheusQueryAccess v1:
aps:QueryMetrics, GetSeries,           aps:GetLabels, GetMetricMetadata, GetSeries,
GetLabels, GetMetricMetadata           QueryMetrics on ``*``; here on the one workspace, plus
                                       aps:DescribeWorkspace (read the workspace's status)
Workspace ARN                          Service Authorization Reference, Amazon Managed Grafana:
``arn:<p>:grafana:<r>:<a>:/workspaces/  resource type ``workspace``, which the service-account
<id>``                                 actions take
Service trust with confused-deputy     Amazon Managed Grafana user guide, "Amazon Managed
conditions (aws:SourceAccount,         Grafana permissions and policies for AWS data sources"
aws:SourceArn)                         (customer-managed role)
VPC endpoints                          user guide "Interface VPC endpoints":
``com.amazonaws.<r>.grafana`` (API),   the workspace endpoint (the Grafana HTTP API) is
``com.amazonaws.<r>.grafana-workspace``  ``grafana-workspace``
=====================================  ==========================================================
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_grafana as grafana
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_cdk import facts
from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.compliance.provider_framework import (
    acknowledge_deploy_time_handler,
    acknowledge_provider_framework,
    cfn_function,
)
from hyperpod_cdk.iam.aspects import RolePath

if TYPE_CHECKING:
    from hyperpod_cdk.network.network import HyperPodNetwork

Orchestrator = Literal["slurm", "eks"]

RESOURCE_TYPE: Final = "Custom::HyperPodGrafanaContent"
DATA_SOURCE_UID: Final = "hyperpod-prometheus"
DATA_SOURCE_NAME: Final = "HyperPod Prometheus"
FOLDER_UID: Final = "hyperpod"
FOLDER_TITLE: Final = "HyperPod"
#: each invocation's service-account token lives this long (the handler deletes it at the end)
TOKEN_SECONDS: Final = 900
OBSERVABILITY_DIR: Final = Path(__file__).parent
HANDLER_DIR: Final = OBSERVABILITY_DIR / "grafana_handler"
DASHBOARD_DIR: Final = OBSERVABILITY_DIR / "dashboards"
#: the dashboards per orchestrator, by topic (file ``<orchestrator>-<topic>.json``)
TOPICS: Final = ("cluster", "nodes-gpus", "efa", "fsx", "jobs")
RUNTIME = lambda_.Runtime.PYTHON_3_14
#: Prometheus query actions (AmazonPrometheusQueryAccess) plus DescribeWorkspace, on one workspace
PROMETHEUS_QUERY_ACTIONS: Final = (
    "aps:QueryMetrics",
    "aps:GetSeries",
    "aps:GetLabels",
    "aps:GetMetricMetadata",
    "aps:DescribeWorkspace",
)
#: what the handler does with the workspace's service accounts
SERVICE_ACCOUNT_ACTIONS: Final = (
    "grafana:ListWorkspaceServiceAccounts",
    "grafana:CreateWorkspaceServiceAccount",
    "grafana:DeleteWorkspaceServiceAccount",
    "grafana:CreateWorkspaceServiceAccountToken",
    "grafana:DeleteWorkspaceServiceAccountToken",
)
_AWS_MANAGED = "arn:<AWS::Partition>:iam::aws:policy/service-role/"
_BASIC_EXECUTION = "AWSLambdaBasicExecutionRole"
_VPC_ACCESS = "AWSLambdaVPCAccessExecutionRole"


def dashboard_files(orchestrator: str) -> list[Path]:
    """The dashboard files of ``orchestrator``, one per topic of :data:`TOPICS`."""
    return [DASHBOARD_DIR / f"{orchestrator}-{topic}.json" for topic in TOPICS]


def dashboard_entries(orchestrator: str) -> list[dict[str, str]]:
    """``{"File", "Uid", "Sha256"}`` of each dashboard of ``orchestrator``: the custom resource's
    ``Dashboards`` property. The digest changes with the file, so a changed dashboard updates the
    resource (and only the stack that holds it)."""
    entries = []
    for path in dashboard_files(orchestrator):
        raw = path.read_bytes()
        entries.append(
            {
                "File": path.name,
                "Uid": str(json.loads(raw)["uid"]),
                "Sha256": hashlib.sha256(raw).hexdigest(),
            }
        )
    return entries


def _closed(network: HyperPodNetwork | None) -> bool:
    if network is None:
        return False
    return bool(getattr(network.config, "closed_network", False))


class HyperPodGrafana(Construct):
    """An Amazon Managed Grafana workspace (IAM Identity Center sign-in, this account only,
    Grafana ``facts.GRAFANA_VERSION``, plugin administration off) whose customer-managed role may
    query exactly one Amazon Managed Prometheus workspace, and a ``Custom::HyperPodGrafanaContent``
    resource that installs the Prometheus data source (SigV4, the workspace's region and query
    endpoint) and the dashboards of ``orchestrator`` in a folder ``HyperPod``.

    Nobody can sign in until IAM Identity Center users or groups are assigned to the workspace
    (console or ``aws grafana update-permissions``; docs/dashboards.md).

    :param name: the workspace's name (the environment's name: letters, digits, ``-._~``).
    :param orchestrator: ``slurm`` or ``eks``: which dashboards.
    :param prometheus_workspace_arn: the Prometheus workspace the data source queries.
    :param prometheus_endpoint: its query endpoint
        (``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/``).
    :param role_path: IAM path of every role here.
    :param permissions_boundary: permissions boundary of every role here.
    :param network: the environment's network; in a closed network the handler runs in its
        compute subnet with a security group that allows only HTTPS out (the ``grafana`` and
        ``grafana-workspace`` endpoints answer there).

    :ivar workspace: the ``AWS::Grafana::Workspace``. :ivar url: ``https://<workspace
        endpoint>``. :ivar role: the workspace's role. :ivar content: the custom resource.
    :ivar handler: its function. :ivar provider: CDK's provider framework.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        orchestrator: str,
        prometheus_workspace_arn: str,
        prometheus_endpoint: str,
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
        network: HyperPodNetwork | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if orchestrator not in ("slurm", "eks"):
            raise ValueError(f"orchestrator: {orchestrator!r} is neither 'slurm' nor 'eks'")
        if permissions_boundary is not None:
            iam.PermissionsBoundary.of(self).apply(permissions_boundary)
        if role_path != "/":
            cdk.Aspects.of(self).add(RolePath(role_path))
        stack = cdk.Stack.of(self)

        self.role = iam.Role(
            self,
            "WorkspaceRole",
            assumed_by=iam.ServicePrincipal(
                "grafana.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{stack.partition}:grafana:{stack.region}:"
                        f"{stack.account}:/workspaces/*"
                    },
                },
            ),
            description="Amazon Managed Grafana workspace: query the HyperPod Prometheus workspace",
            path=role_path,
        )
        query_policy = iam.ManagedPolicy(
            self,
            "PrometheusQuery",
            description="Query the one Amazon Managed Prometheus workspace of this environment",
            statements=[
                iam.PolicyStatement(
                    sid="QueryThisWorkspace",
                    actions=list(PROMETHEUS_QUERY_ACTIONS),
                    resources=[prometheus_workspace_arn],
                )
            ],
            roles=[self.role],
        )
        self.workspace = grafana.CfnWorkspace(
            self,
            "Workspace",
            name=name,
            description=f"HyperPod {orchestrator} dashboards of {name}",
            account_access_type="CURRENT_ACCOUNT",
            authentication_providers=["AWS_SSO"],
            permission_type="CUSTOMER_MANAGED",
            role_arn=self.role.role_arn,
            data_sources=["PROMETHEUS"],
            # pinned in hyperpod_cdk.facts (service accounts need 9 or later; the
            # dashboards are written for schemaVersion 39)
            grafana_version=facts.GRAFANA_VERSION,
            plugin_admin_enabled=False,
        )
        # the workspace validates its role when created
        self.workspace.node.add_dependency(query_policy)
        self.url = f"https://{self.workspace.attr_endpoint}"
        workspace_arn = (
            f"arn:{stack.partition}:grafana:{stack.region}:{stack.account}:/workspaces/"
            f"{self.workspace.attr_id}"
        )

        in_vpc = network is not None and _closed(network)
        handler_role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="HyperPod Grafana: installs the data source and the dashboards",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(f"service-role/{policy}")
                for policy in [_BASIC_EXECUTION] + ([_VPC_ACCESS] if in_vpc else [])
            ],
            path=role_path,
        )
        handler_policy = iam.ManagedPolicy(
            self,
            "HandlerPolicy",
            description="HyperPod Grafana: service accounts and short-lived tokens of this "
            "workspace only",
            statements=[
                iam.PolicyStatement(
                    sid="ThisWorkspaceServiceAccounts",
                    actions=list(SERVICE_ACCOUNT_ACTIONS),
                    resources=[workspace_arn],
                )
            ],
            roles=[handler_role],
        )
        vpc_settings: dict[str, Any] = {}
        if in_vpc:
            assert network is not None
            https_only = ec2.SecurityGroup(
                self,
                "HandlerSecurityGroup",
                vpc=network.vpc,
                description="HyperPod Grafana handler: HTTPS to the Grafana API and workspace",
                allow_all_outbound=False,
            )
            https_only.add_egress_rule(
                ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "Grafana API and workspace endpoints"
            )
            vpc_settings = {
                "vpc": network.vpc,
                "vpc_subnets": ec2.SubnetSelection(subnets=[network.compute_subnet]),
                "security_groups": [https_only],
            }
        self.handler = lambda_.Function(
            self,
            "Handler",
            runtime=RUNTIME,
            handler="grafana_handler.handler.on_event",
            # the handler and the dashboards, nothing else of the observability package
            code=lambda_.Code.from_asset(
                str(OBSERVABILITY_DIR),
                exclude=[
                    "*",
                    "!grafana_handler",
                    "!grafana_handler/*.py",
                    "!dashboards",
                    "!dashboards/*.json",
                ],
            ),
            role=handler_role,
            timeout=cdk.Duration.minutes(5),
            description="HyperPod Grafana: the Prometheus data source and the dashboards",
            **vpc_settings,
        )
        self.handler.node.add_dependency(handler_policy)
        self.provider = cr.Provider(self, "Provider", on_event_handler=self.handler)
        self.content = cdk.CustomResource(
            self,
            "Content",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "WorkspaceId": self.workspace.attr_id,
                "WorkspaceEndpoint": self.workspace.attr_endpoint,
                "Region": stack.region,
                "PrometheusEndpoint": prometheus_endpoint,
                "DataSourceUid": DATA_SOURCE_UID,
                "DataSourceName": DATA_SOURCE_NAME,
                "FolderUid": FOLDER_UID,
                "FolderTitle": FOLDER_TITLE,
                "Dashboards": dashboard_entries(orchestrator),
                "TokenSecondsToLive": TOKEN_SECONDS,
            },
        )
        self.content.node.add_dependency(handler_policy)
        self._acknowledge(handler_policy, in_vpc=in_vpc)

    def _acknowledge(self, handler_policy: iam.ManagedPolicy, *, in_vpc: bool) -> None:
        """cdk-nag findings and checkov skips of the handler and CDK's provider framework."""
        what = "The HyperPod Grafana handler"
        acknowledge_deploy_time_handler(self.handler, what)
        cfn = cfn_function(self.handler)
        assert self.handler.role is not None
        if in_vpc:
            acknowledge(
                self.handler.role,
                f"AwsSolutions-IAM4[Policy::{_AWS_MANAGED}{_VPC_ACCESS}]",
                "The AWS managed Lambda VPC policy grants the handler only the network "
                "interfaces Lambda needs in the VPC; AWS keeps it current.",
            )
        else:
            outside = (
                f"{what} calls the Amazon Managed Grafana API and the workspace's public HTTPS "
                "endpoint during deploys and reaches nothing in the VPC (a closed network puts "
                "it in the VPC)."
            )
            acknowledge_controls(self.handler, "LambdaInsideVPC", outside)
            skip_check(cfn, "CKV_AWS_117", outside)
        acknowledge_provider_framework(
            self.provider,
            [self.handler],
            name="Grafana content",
            outside="CDK's provider framework function of the HyperPod Grafana content only "
            "invokes the Grafana handler (Lambda API) and answers CloudFormation's pre-signed S3 "
            "URL; it reaches nothing in the VPC.",
            interval_seconds=0,
        )

"""Task governance as code: the cluster policy, one compute quota per team, the teams' access.

CloudFormation does not offer ``AWS::SageMaker::ClusterSchedulerConfig`` and
``AWS::SageMaker::ComputeQuota`` in every region where HyperPod runs (:data:`~hyperpod_cdk.facts.task_governance_types.NATIVE_REGIONS`).
Where a type is missing, the same object is made through the SageMaker API by a custom
resource whose handler lives in ``task_governance_handler/`` (create, update with the current
``TargetVersion``, delete; ``is_complete`` waits for the asynchronous status).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct, IDependable

from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge, nag_account, nag_partition, nag_region
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.compliance.provider_framework import (
    acknowledge_deploy_time_handler,
    acknowledge_provider_framework,
    cfn_function,
    handler_function,
)
from hyperpod_cdk.config.task_governance import TaskGovernance, Team, namespace_of
from hyperpod_cdk.eks.cluster import TEAM_ACCESS_POLICY, access_entry_id
from hyperpod_cdk.facts.task_governance_types import (
    COMPUTE_QUOTA_TYPE,
    CUSTOM_TYPES,
    SCHEDULER_CONFIG_TYPE,
    is_native,
)
from hyperpod_cdk.iam.aspects import RolePath

HANDLER_DIR = Path(__file__).parent / "task_governance_handler"
RUNTIME = lambda_.Runtime.PYTHON_3_14
QUERY_INTERVAL = cdk.Duration.seconds(20)
# creating or deleting a policy or a quota takes minutes; CloudFormation gives a custom
# resource an hour at most
TOTAL_TIMEOUT = cdk.Duration.minutes(30)


def scheduler_config_request(governance: TaskGovernance) -> dict[str, Any]:
    """``SchedulerConfig`` of the cluster policy, as CloudFormation and the API spell it."""
    policy = governance.policy
    return {
        "PriorityClasses": [{"Name": p.name, "Weight": p.weight} for p in policy.priority_classes],
        "FairShare": "Enabled" if policy.fair_share else "Disabled",
        "IdleResourceSharing": "Enabled" if policy.idle_resource_sharing else "Disabled",
    }


def _scheduler_config_property(
    governance: TaskGovernance,
) -> sagemaker.CfnClusterSchedulerConfig.SchedulerConfigProperty:
    """:func:`scheduler_config_request` as the L1 class's property (its dicts are snake_case)."""
    request = scheduler_config_request(governance)
    return sagemaker.CfnClusterSchedulerConfig.SchedulerConfigProperty(
        priority_classes=[
            sagemaker.CfnClusterSchedulerConfig.PriorityClassProperty(
                name=p["Name"], weight=p["Weight"]
            )
            for p in request["PriorityClasses"]
        ],
        fair_share=request["FairShare"],
        idle_resource_sharing=request["IdleResourceSharing"],
    )


def compute_quota_config(team: Team) -> dict[str, Any]:
    """``ComputeQuotaConfig`` of ``team``, as CloudFormation and the API spell it."""
    resources: list[dict[str, Any]] = []
    for line in team.quota:
        entry: dict[str, Any] = {"InstanceType": line.instance_type}
        if line.count is not None:
            entry["Count"] = line.count
        if line.accelerators is not None:
            entry["Accelerators"] = line.accelerators
        if line.vcpu is not None:
            entry["VCpu"] = line.vcpu
        if line.memory_gib is not None:
            entry["MemoryInGiB"] = line.memory_gib
        if line.mig is not None:
            entry["AcceleratorPartition"] = {"Type": line.mig.profile, "Count": line.mig.count}
        resources.append(entry)
    sharing: dict[str, Any] = {"Strategy": team.sharing.strategy}
    if team.sharing.borrow_limit_percent is not None:
        sharing["BorrowLimit"] = team.sharing.borrow_limit_percent
    return {
        "ComputeQuotaResources": resources,
        "ResourceSharingConfig": sharing,
        "PreemptTeamTasks": team.preempt_team_tasks,
    }


def compute_quota_target(team: Team) -> dict[str, Any]:
    """``ComputeQuotaTarget`` of ``team`` (``TeamName`` is create-only: a rename replaces)."""
    target: dict[str, Any] = {"TeamName": team.name}
    if team.fair_share_weight is not None:
        target["FairShareWeight"] = team.fair_share_weight
    return target


class HyperPodTaskGovernance(Construct):
    """The cluster policy and one compute quota per team of ``eks.task_governance``, and the
    EKS access of the teams' principals.

    - The cluster policy (named after the HyperPod cluster) and each team's quota (named
      ``<cluster name>-<team>``) are CloudFormation resources where the region has the type
      (:data:`~hyperpod_cdk.facts.task_governance_types.NATIVE_REGIONS`), else custom resources of the same content made through the
      SageMaker API. Both wait for :meth:`wait_for` (the task governance add-on: its Kueue
      webhooks must answer); the quotas wait for the policy.
    - Each team principal gets one EKS access entry with :data:`TEAM_ACCESS_POLICY` scoped to
      the namespaces of its teams (``hyperpod-ns-<team>``) and the Kubernetes group of each of
      its teams (``hyperpod-cdk-team-<team>``, bound to the team's Role); principals in ``skip_principals``
      (the cluster admins, whose entry exists and carries those namespaces) get none here.

    :param cluster_arn: the HyperPod cluster's ARN (a token: read it from the parameter that
        changes with the cluster, so a replaced cluster changes this template).
    :param cluster_name: the HyperPod cluster's name (names the policy and the quotas).
    :param eks_cluster_name: the EKS cluster of the access entries.
    :param region: the stack's region (picks native or custom per type).
    :param governance: the ``eks.task_governance`` section.
    :param skip_principals: principals that have an access entry already.
    :param role_path: IAM path of the custom resource's roles.
    :param permissions_boundary: permissions boundary of those roles.
    :param provider_scope: build the handlers and the provider framework there (a stack
        deployed before the HyperPod cluster), so that only the custom resources and the policy
        that names the cluster come after it; default: here.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_arn: str,
        cluster_name: str,
        eks_cluster_name: str,
        region: str,
        governance: TaskGovernance,
        skip_principals: Sequence[str] = (),
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
        provider_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._provider_scope = provider_scope
        self._policy: iam.ManagedPolicy | None = None
        self._cluster_arn = cluster_arn
        self._provider: cr.Provider | None = None
        self._role_path = role_path
        self._permissions_boundary = permissions_boundary
        self._eks_cluster_name = eks_cluster_name
        self.waiting: list[IConstruct] = []
        """The policy and the quotas (what waits for the add-on)."""

        native_policy = is_native(SCHEDULER_CONFIG_TYPE, region)
        native_quota = is_native(COMPUTE_QUOTA_TYPE, region)
        self.policy: cdk.CfnResource | cdk.CustomResource
        if native_policy:
            self.policy = sagemaker.CfnClusterSchedulerConfig(
                self,
                "ClusterPolicy",
                name=cluster_name,
                cluster_arn=cluster_arn,
                scheduler_config=_scheduler_config_property(governance),
            )
        else:
            self.policy = self._custom(
                "ClusterPolicy",
                SCHEDULER_CONFIG_TYPE,
                {
                    "Name": cluster_name,
                    "ClusterArn": cluster_arn,
                    "SchedulerConfig": scheduler_config_request(governance),
                },
            )
        self.waiting.append(self.policy)
        self.quotas: dict[str, cdk.CfnResource | cdk.CustomResource] = {}
        """Each team's compute quota, by team name."""
        for team in governance.teams:
            properties = {
                "Name": f"{cluster_name}-{team.name}",
                "ClusterArn": cluster_arn,
                "ComputeQuotaConfig": compute_quota_config(team),
                "ComputeQuotaTarget": compute_quota_target(team),
                "ActivationState": "Enabled",
            }
            quota_id = "Quota" + "".join(part.capitalize() for part in team.name.split("-"))
            quota: cdk.CfnResource | cdk.CustomResource
            if native_quota:
                quota = cdk.CfnResource(
                    self, quota_id, type=COMPUTE_QUOTA_TYPE, properties=properties
                )
                acknowledge(
                    quota,
                    "CloudFormation-Validate::F3006",
                    "aws-cdk-lib 2.275's template validator has no schema of "
                    "AWS::SageMaker::ComputeQuota (no L1 class yet); the tests lint it with "
                    "cfn-lint 1.58, which has the registry schema, in each region.",
                )
            else:
                quota = self._custom(quota_id, COMPUTE_QUOTA_TYPE, properties)
            # one change at a time on the cluster's Kueue objects: the policy first
            quota.node.add_dependency(self.policy)
            self.quotas[team.name] = quota
            self.waiting.append(quota)

        self.access_entries: dict[str, eks.CfnAccessEntry] = {}
        """The team principals' access entries, by principal ARN."""
        skipped = set(skip_principals)
        groups = governance.principal_groups()
        for principal, namespaces in governance.principal_namespaces().items():
            if principal in skipped:
                continue
            self.access_entries[principal] = eks.CfnAccessEntry(
                self,
                access_entry_id("TeamAccess", principal),
                cluster_name=eks_cluster_name,
                principal_arn=principal,
                type="STANDARD",
                # the group the team Role of the cluster-objects chart is bound to
                kubernetes_groups=groups[principal],
                access_policies=[
                    eks.CfnAccessEntry.AccessPolicyProperty(
                        policy_arn=f"arn:{cdk.Aws.PARTITION}:eks::aws:cluster-access-policy/"
                        f"{TEAM_ACCESS_POLICY}",
                        access_scope=eks.CfnAccessEntry.AccessScopeProperty(
                            type="namespace", namespaces=namespaces
                        ),
                    )
                ],
            )

    # -- public ---------------------------------------------------------------------------

    def wait_for(self, *dependencies: IDependable) -> None:
        """Make the policy and the quotas wait for ``dependencies`` (the task governance add-on,
        the HyperPod nodes)."""
        for construct in self.waiting:
            for dependency in dependencies:
                construct.node.add_dependency(dependency)

    # -- the custom resource path ---------------------------------------------------------

    def _custom(
        self, construct_id: str, resource_type: str, request: Mapping[str, Any]
    ) -> cdk.CustomResource:
        """``resource_type``'s object made by the handler from ``request`` (the Create API's
        parameters; JSON, so numbers stay numbers)."""
        provider = self._provider or self._build_provider()
        resource = cdk.CustomResource(
            self,
            construct_id,
            service_token=provider.service_token,
            resource_type=CUSTOM_TYPES[resource_type],
            properties={
                "Kind": resource_type.rsplit("::", 1)[1],
                "Request": cdk.Stack.of(self).to_json_string(dict(request)),
            },
        )
        # the handlers hold their permissions (which name the cluster) before the first call
        assert self._policy is not None
        resource.node.add_dependency(self._policy)
        return resource

    def _build_provider(self) -> cr.Provider:
        infra = Construct(self._provider_scope or self, "TaskGovernanceHandler")
        if self._permissions_boundary is not None:
            iam.PermissionsBoundary.of(infra).apply(self._permissions_boundary)
        if self._role_path != "/":
            cdk.Aspects.of(infra).add(RolePath(self._role_path))
        code = lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"])
        stack = cdk.Stack.of(self)

        def arn(service: str, resource: str) -> str:
            return stack.format_arn(service=service, resource=resource)

        policy = iam.ManagedPolicy(
            self,
            "HandlerPolicy",
            description="HyperPod task governance: the cluster policy and the team quotas of "
            "this cluster through the SageMaker API",
            statements=[
                iam.PolicyStatement(
                    sid="PolicyAndQuotas",
                    actions=[
                        "sagemaker:CreateClusterSchedulerConfig",
                        "sagemaker:UpdateClusterSchedulerConfig",
                        "sagemaker:DescribeClusterSchedulerConfig",
                        "sagemaker:DeleteClusterSchedulerConfig",
                        "sagemaker:CreateComputeQuota",
                        "sagemaker:UpdateComputeQuota",
                        "sagemaker:DescribeComputeQuota",
                        "sagemaker:DeleteComputeQuota",
                        "sagemaker:AddTags",
                        "sagemaker:ListTags",
                    ],
                    # ids are the service's: every policy and quota of this account and region
                    resources=[
                        arn("sagemaker", "cluster-scheduler-config/*"),
                        arn("sagemaker", "compute-quota/*"),
                        self._cluster_arn,
                    ],
                ),
                iam.PolicyStatement(
                    sid="ReadTheCluster",
                    actions=["sagemaker:DescribeCluster"],
                    resources=[self._cluster_arn],
                ),
                # the service associates the team's namespace policy with the caller's
                # credentials (the registry handlers of both types ask for the same actions)
                iam.PolicyStatement(
                    sid="TeamNamespaceAccess",
                    actions=[
                        "eks:DescribeCluster",
                        "eks:DescribeAccessEntry",
                        "eks:ListAssociatedAccessPolicies",
                        "eks:AssociateAccessPolicy",
                        "eks:DisassociateAccessPolicy",
                    ],
                    resources=[
                        arn("eks", f"cluster/{self._eks_cluster_name}"),
                        arn("eks", f"access-entry/{self._eks_cluster_name}/*"),
                    ],
                ),
            ],
        )

        def handler(construct_id: str, entry: str, description: str) -> lambda_.Function:
            function = handler_function(
                infra,
                construct_id,
                purpose="HyperPod task governance",
                description=description,
                handler=f"handler.{entry}",
                code=code,
                runtime=RUNTIME,
                timeout=cdk.Duration.minutes(2),
                role_path=self._role_path,
            )
            assert function.role is not None
            policy.attach_to_role(function.role)
            return function

        on_event = handler("OnEvent", "on_event", "creates, updates and deletes")
        is_complete = handler("IsComplete", "is_complete", "waits for the status")
        attempts = math.ceil(TOTAL_TIMEOUT.to_seconds() / QUERY_INTERVAL.to_seconds())
        self._provider = cr.Provider(
            infra,
            "Provider",
            on_event_handler=on_event,
            is_complete_handler=is_complete,
            query_interval=QUERY_INTERVAL,
            total_timeout=cdk.Duration.seconds(attempts * QUERY_INTERVAL.to_seconds()),
        )
        self._policy = policy
        self._acknowledge(policy, (on_event, is_complete), self._provider)
        return self._provider

    def _acknowledge(
        self,
        policy: iam.ManagedPolicy,
        handlers: Sequence[lambda_.Function],
        provider: cr.Provider,
    ) -> None:
        """cdk-nag findings and checkov skips of the handlers and CDK's provider framework."""
        what = "The HyperPod task governance handler"
        outside = (
            f"{what} calls only the SageMaker API during deploys (public endpoints, as "
            "CloudFormation's own handlers for these types do) and reaches nothing in a VPC."
        )
        region = nag_region(self)
        account = nag_account(self)
        partition = nag_partition(self)
        for sm_resource in ("cluster-scheduler-config/*", "compute-quota/*"):
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::arn:{partition}:sagemaker:{region}:{account}:"
                f"{sm_resource}]",
                "The service names the cluster policy and the quotas by ids it picks at create "
                "time; the statement is limited to those two resource types of this account "
                "and region.",
            )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{partition}:eks:{region}:{account}:access-entry/"
            f"{self._eks_cluster_name}/*]",
            "The service associates each team's namespace policy with the access entries of "
            "this EKS cluster only; entry ARNs end in ids EKS picks.",
        )
        for function in handlers:
            acknowledge_deploy_time_handler(function, what)
            acknowledge_controls(function, "LambdaInsideVPC", outside)
            cfn = cfn_function(function)
            skip_check(cfn, "CKV_AWS_117", outside)

        acknowledge_provider_framework(
            provider,
            handlers,
            name="task governance",
            outside=(
                "CDK's provider framework function of HyperPod task governance only invokes the "
                "task governance handlers (Lambda API), starts or is run by its waiter state "
                "machine and answers CloudFormation's pre-signed S3 URL."
            ),
            interval_seconds=int(QUERY_INTERVAL.to_seconds()),
        )


def team_namespaces(governance: TaskGovernance) -> list[str]:
    """The namespaces the service creates, one per team."""
    return [namespace_of(team.name) for team in governance.teams]

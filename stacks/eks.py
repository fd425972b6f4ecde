"""The EKS stacks of an ``orchestrator: eks`` environment.

- ``<name>-eks`` (a created cluster only): the EKS control plane and its secrets key. It
  waits only for the network stack, so it is created while FSx is.
- ``<name>-eks-dependencies``: the kubectl handler (it reaches the EKS API through the egress
  stack's NAT or endpoints), the early core add-ons, the HyperPod dependencies, and the
  *ready* parameter that holds the EKS cluster ARN once all of them are in place. The HyperPod
  cluster reads its EKS cluster ARN from that parameter, so it waits for exactly these.
- ``<name>-eks-addons``: what needs nodes (CoreDNS as a managed add-on, the optional HyperPod
  add-ons, the FSx CSI driver and the file system's volume), behind a parameter that holds the
  HyperPod cluster ARN and a bounded wait for the first Running node of a group they can run
  on (``HyperPodNodeWait``), the task governance policy and quotas, and the
  ``hyperpod-cdk-cluster-objects`` release (the node pools' HyperpodNodeClass and NodePool, the
  teams' Roles) after them. Nothing waits for it.
"""

from __future__ import annotations

from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks_v2
from constructs import Construct

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.observability import (
    metric_levels,
    metrics_provider,
    observability_settings,
)
from hyperpod_cdk.config.task_governance import namespace_of
from hyperpod_cdk.eks.addons import (
    ENVIRONMENT_TAG,
    TASK_GOVERNANCE,
    TRAINING_OPERATOR,
    AddonObservability,
    HyperPodEksAddons,
)
from hyperpod_cdk.eks.cluster import AdoptedEksCluster, HyperPodEksCluster, core_dns_addon
from hyperpod_cdk.eks.cluster_objects import HyperPodClusterObjects
from hyperpod_cdk.eks.dependencies import HyperPodDependencies
from hyperpod_cdk.eks.inference import HyperPodInference
from hyperpod_cdk.eks.node_wait import HyperPodNodeWait
from hyperpod_cdk.eks.task_governance import HyperPodTaskGovernance
from hyperpod_cdk.network import HyperPodNetwork
from hyperpod_cdk.observability.grafana import HyperPodGrafana
from hyperpod_cdk.observability.metrics import HyperPodMetrics
from hyperpod_cdk.storage import DataBucket, FileSystemHandle
from stacks.base import EnvironmentStack, metrics_outputs, output, ready_parameter
from stacks.layout import cluster_identity


class EksStack(EnvironmentStack):
    """A created EKS control plane (the kubectl handler and what it applies: the
    ``eks-dependencies`` stack)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        network: HyperPodNetwork,
        kubectl_scope: Construct,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        eks_cfg = config.eks_settings
        self.eks = HyperPodEksCluster(
            self,
            "Eks",
            vpc=network.vpc,
            subnets=network.eks_subnets,
            security_groups=[network.efa.security_group],
            kubernetes_version=eks_cfg.kubernetes_version,
            cluster_name=config.eks_cluster_name,
            endpoint_access=eks_cfg.endpoint_access,
            public_access_cidrs=[str(c) for c in eks_cfg.public_access_cidrs],
            logging=eks_cfg.logging,
            admin_principal_arns=eks_cfg.admin_principal_arns,
            # an admin in a team keeps one access entry, with the team namespaces added
            admin_team_namespaces=(
                eks_cfg.task_governance.principal_namespaces()
                if eks_cfg.task_governance is not None
                else None
            ),
            kubectl_scope=kubectl_scope,
        )
        # stateful: a stable logical id, whatever the construct tree becomes
        cfn_cluster = self.eks.cluster.node.default_child
        assert isinstance(cfn_cluster, cdk.CfnResource)
        cfn_cluster.override_logical_id("EksCluster")


class EksDependenciesStack(EnvironmentStack):
    """Everything HyperPod needs on its EKS cluster (created or adopted), and the parameter that
    says it is all there."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: EnvironmentConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        # a created cluster (the eks stack) puts its kubectl handler and early add-ons here
        self.kubectl_scope = (
            Construct(self, "Eks") if config.eks_settings.cluster_arn is None else None
        )
        self.eks: HyperPodEksCluster | AdoptedEksCluster | None = None

    def build(self, *, network: HyperPodNetwork, eks: HyperPodEksCluster | None) -> None:
        """Apply the HyperPod dependencies to ``eks`` (a created cluster whose ``kubectl_scope``
        is :attr:`kubectl_scope`), or to the adopted cluster of the config when ``None``."""
        config = self.config
        eks_cfg = config.eks_settings
        if eks is None:
            assert eks_cfg.cluster_arn is not None
            self.eks = AdoptedEksCluster(
                self,
                "Eks",
                cluster_arn=eks_cfg.cluster_arn,
                vpc=network.vpc,
                kubectl_subnets=[network.compute_subnet],
                kubectl_security_groups=network.node_security_groups,
                kubectl_role_arn=eks_cfg.kubectl_role_arn,
                kubernetes_version=eks_cfg.kubernetes_version,
            )
        else:
            self.eks = eks
        chart_values = eks_cfg.chart_values
        extra = chart_values.extra_instance_types
        self.hyperpod_dependencies = HyperPodDependencies(
            self,
            "Dependencies",
            cluster=self.eks,
            region=config.region,
            enabled=eks_cfg.dependencies.enabled(),
            image_registry=eks_cfg.image_registry,
            extra_tolerations=[t.as_kubernetes() for t in chart_values.extra_tolerations],
            extra_instance_types={
                "nvidiaGpu": extra.nvidia_gpu,
                "neuron": extra.neuron,
                "efa": extra.efa,
            },
            image_tags=dict(chart_values.image_tags),
            # the pod admission policy holds every namespace where people create workloads:
            # each task governance team's (the service makes them later; the binding selects
            # by name, so it holds from the namespace's first pod)
            workload_namespaces=[
                namespace_of(team.name)
                for team in (eks_cfg.task_governance.teams if eks_cfg.task_governance else [])
            ],
        )
        self.ready = ready_parameter(
            self,
            "Ready",
            self.eks.cluster_arn,
            "The EKS cluster HyperPod orchestrates with, set once the kubectl handler, the early "
            "add-ons and the HyperPod dependencies are in place",
            [self.kubectl_scope or self.eks, self.hyperpod_dependencies],
        )
        # what the HyperPod cluster reads: the ARN, once everything above exists
        self.ready_cluster_arn = self.ready.string_value
        output(
            self, "EksClusterName", self.eks.cluster_name, "EKS cluster that orchestrates HyperPod"
        )
        output(self, "EksClusterArn", self.eks.cluster_arn, "EKS cluster ARN")
        output(
            self,
            "KubeconfigCommand",
            cdk.Fn.join(
                "",
                [
                    f"aws eks update-kubeconfig --region {config.region} --name ",
                    self.eks.cluster_name,
                ],
            ),
            "Point kubectl at the EKS cluster",
        )


def _addon_observability(config: EnvironmentConfig) -> AddonObservability | None:
    """The observability add-on's settings (None: metrics off)."""
    settings = observability_settings(config)
    if settings is None:
        return None
    return AddonObservability(
        levels=metrics_provider(metric_levels(config)),
        logging=settings.logging,
        workspace_arn=settings.prometheus_workspace_arn,
    )


class EksAddonsStack(EnvironmentStack):
    """What needs nodes: CoreDNS (managed), the optional add-ons and the FSx volume."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        eks_stack: EksDependenciesStack,
        network: HyperPodNetwork,
        file_system: FileSystemHandle | None,
        hyperpod_cluster_arn: str,
        alerts_topic_arn: str | None = None,
        data_bucket: DataBucket | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        eks_cfg = config.eks_settings
        cluster = eks_stack.eks
        assert cluster is not None
        # every add-on here needs the HyperPod nodes: it waits for this parameter, which
        # reads the HyperPod cluster (a reference in the template, not only a stack barrier)
        # (the ARN changes when the cluster is replaced; the identity digest in the description
        # changes with it, so this stack's template changes and the parameter re-reads the ARN;
        # everything here uses the ARN through the parameter)
        self.nodes_ready = ready_parameter(
            self,
            "HyperPodReady",
            hyperpod_cluster_arn,
            "The HyperPod cluster (InService) whose nodes the EKS add-ons of this stack run on "
            f"(cluster identity {cluster_identity(config)})",
            [],
        )
        # ... and, under Continuous provisioning (InService before any node exists), for the
        # first Running node of a group they can run on, within a bounded time
        waits_for: Construct = self.nodes_ready
        self.node_wait: HyperPodNodeWait | None = None
        groups = config.cluster.system_pod_groups()
        if groups:
            self.node_wait = HyperPodNodeWait(
                self,
                "NodeWait",
                cluster_arn=self.nodes_ready.string_value,
                instance_groups=groups,
                timeout=cdk.Duration.minutes(eks_cfg.node_wait_minutes),
                vpc=network.vpc,
                subnets=[network.compute_subnet],
                security_groups=network.node_security_groups,
                role_path=config.iam.role_path,
                # the handlers and the framework deploy with eks-dependencies, before the
                # HyperPod cluster, so they are not on the path after it
                provider_scope=eks_stack,
            )
            waits_for = self.node_wait.resource
        self.core_dns = None
        if isinstance(cluster, HyperPodEksCluster):
            self.core_dns = core_dns_addon(
                self,
                "CoreDnsAddon",
                cluster_name=cluster.cluster_name,
                kubernetes_version=eks_cfg.kubernetes_version,
            )
        self.addons = HyperPodEksAddons(
            self,
            "Addons",
            cluster_name=cluster.cluster_name,
            kubernetes_version=eks_cfg.kubernetes_version,
            # fsx_csi_driver left unset means: on when there is a file system
            options=eks_cfg.addons,
            cluster=cluster.kubectl_cluster,
            file_system=file_system,
            fsx_storage_capacity_gib=config.storage.fsx.storage_capacity_gib,
            # dynamic provisioning: new file systems beside the nodes, tagged for this environment
            fsx_subnet_id=network.compute_subnet.subnet_id,
            fsx_security_group_ids=[g.security_group_id for g in network.node_security_groups],
            environment_tag=(ENVIRONMENT_TAG, config.name),
            hyperpod_cluster_arn=self.nodes_ready.string_value,
            role_path=config.iam.role_path,
            shared_cluster=eks_cfg.cluster_arn is not None,
            observability=_addon_observability(config),
        )
        self.addons.wait_for(waits_for)
        self._metrics(config, network, alerts_topic_arn)
        if self.core_dns is not None:
            self.core_dns.node.add_dependency(waits_for)
        # the cluster policy and the team quotas: after the task governance add-on (its Kueue
        # webhooks must answer), on the cluster ARN read from the parameter above
        self.task_governance: HyperPodTaskGovernance | None = None
        governance = eks_cfg.task_governance
        if governance is not None and TASK_GOVERNANCE in self.addons.addons:
            self.task_governance = HyperPodTaskGovernance(
                self,
                "TaskGovernance",
                cluster_arn=self.nodes_ready.string_value,
                cluster_name=config.cluster_name,
                # a literal (the EKS cluster's name is known): it scopes IAM and names findings
                eks_cluster_name=(
                    eks_cfg.cluster_arn.rsplit("/", 1)[1]
                    if eks_cfg.cluster_arn
                    else config.eks_cluster_name
                ),
                region=config.region,
                governance=governance,
                # the admins' one entry (eks stack) carries their team namespaces
                skip_principals=eks_cfg.admin_principal_arns,
                role_path=config.iam.role_path,
                # the handlers deploy with eks-dependencies, before the HyperPod cluster
                provider_scope=eks_stack,
            )
            self.task_governance.wait_for(self.addons.addons[TASK_GOVERNANCE], waits_for)
        # the inference operator with everything it needs: after the add-ons above (it uses their
        # cert-manager and FSx CSI driver), the nodes, and the task governance add-on (Kueue's
        # webhooks must answer before the operator's add-on is created)
        self.inference: HyperPodInference | None = None
        inference = eks_cfg.addons.inference_settings
        if inference is not None:
            adopted_provider = inference.oidc_provider_arn if eks_cfg.cluster_arn else None
            # a created cluster's issuer (the jsii Cluster class has it, ICluster does not)
            issuer = (
                None
                if adopted_provider
                else cast(eks_v2.Cluster, cluster.cluster).cluster_open_id_connect_issuer_url
            )
            self.inference = HyperPodInference(
                self,
                "Inference",
                addons=self.addons,
                settings=inference,
                environment_name=config.name,
                hyperpod_cluster_arn=self.nodes_ready.string_value,
                oidc_issuer_url=issuer,
                oidc_provider_arn=adopted_provider,
                data_bucket=data_bucket.bucket if data_bucket is not None else None,
                data_bucket_key=data_bucket.key if data_bucket is not None else None,
                task_governance=self.addons.addons.get(TASK_GOVERNANCE),
                role_path=config.iam.role_path,
                shared_cluster=eks_cfg.cluster_arn is not None,
            )
            self.inference.wait_for(waits_for)
            # an ALB in the EKS subnets (two AZs) of a VPC the app creates; preflight checks
            # the tags of adopted subnets
            network.tag_internal_load_balancer_subnets()
        # the node pools' HyperpodNodeClass and NodePool and the teams' RBAC: a release after
        # the HyperPod cluster (its ARN through the parameter above) and after the quotas,
        # which make the teams' namespaces
        self.cluster_objects: HyperPodClusterObjects | None = None
        teams = (
            [t.name for t in governance.teams]
            if governance is not None and self.task_governance is not None
            else []
        )
        if config.cluster.node_pools or teams:
            self.cluster_objects = HyperPodClusterObjects(
                self,
                "ClusterObjects",
                cluster=cluster.kubectl_cluster,
                cluster_arn=self.nodes_ready.string_value,
                node_pools=config.cluster.node_pools,
                teams=teams,
                hyperpod_training_operator=TRAINING_OPERATOR in self.addons.addons,
            )
            self.cluster_objects.wait_for(self.nodes_ready)
            if self.task_governance is not None:
                self.cluster_objects.wait_for(*self.task_governance.waiting)

    def _metrics(
        self, config: EnvironmentConfig, network: HyperPodNetwork, alerts_topic_arn: str | None
    ) -> None:
        """The add-on's workspace gets AWS's alert rules and, when this app made it, an alert
        manager that routes them to the alerts topic (cluster stack, deployed before this one);
        Grafana beside it."""
        self.metrics: HyperPodMetrics | None = None
        self.grafana: HyperPodGrafana | None = None
        settings = observability_settings(config)
        if settings is None:
            return
        self.metrics = HyperPodMetrics(
            self,
            "Metrics",
            cluster_name=config.cluster_name,
            orchestrator="eks",
            workspace=self.addons.prometheus_workspace,
            workspace_arn=settings.prometheus_workspace_arn,
            alert_rules=settings.alert_rules,
            alerts_topic_arn=alerts_topic_arn if settings.alert_rules else None,
        )
        self.grafana = metrics_outputs(self, config, self.metrics, network)

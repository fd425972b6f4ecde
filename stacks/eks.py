"""The EKS stacks of an ``orchestrator: eks`` environment.

- ``<name>-eks``: the EKS cluster (created or adopted), its early core add-ons
  and the HyperPod dependencies. It waits only for the network, so it is
  created while FSx is; the HyperPod cluster waits for it.
- ``<name>-eks-addons``: what needs nodes (CoreDNS as a managed add-on, the
  optional HyperPod add-ons, the FSx CSI driver and the file system's volume).
  It waits for the HyperPod cluster; nothing waits for it.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.eks.addons import HyperPodEksAddons
from hyperpod_cdk.eks.cluster import AdoptedEksCluster, HyperPodEksCluster, core_dns_addon
from hyperpod_cdk.eks.dependencies import HyperPodDependencies
from hyperpod_cdk.network import HyperPodNetwork
from hyperpod_cdk.storage import FileSystemHandle
from stacks.base import EnvironmentStack, output


class EksStack(EnvironmentStack):
    """The EKS cluster HyperPod runs on, and everything HyperPod needs on it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        network: HyperPodNetwork,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        eks_cfg = config.eks_settings
        self.eks: HyperPodEksCluster | AdoptedEksCluster
        if eks_cfg.cluster_arn is None:
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
            )
            # stateful: a stable logical id, whatever the construct tree becomes
            cfn_cluster = self.eks.cluster.node.default_child
            assert isinstance(cfn_cluster, cdk.CfnResource)
            cfn_cluster.override_logical_id("EksCluster")
        else:
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
        self.hyperpod_dependencies = HyperPodDependencies(
            self,
            "Dependencies",
            cluster=self.eks,
            region=config.region,
            enabled=eks_cfg.dependencies.enabled(),
        )
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


class EksAddonsStack(EnvironmentStack):
    """What needs nodes: CoreDNS (managed), the optional add-ons and the FSx volume."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        eks_stack: EksStack,
        file_system: FileSystemHandle | None,
        hyperpod_cluster_arn: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        eks_cfg = config.eks_settings
        cluster = eks_stack.eks
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
            cluster=cluster.cluster,
            file_system=file_system,
            fsx_storage_capacity_gib=config.storage.fsx.storage_capacity_gib,
            hyperpod_cluster_arn=hyperpod_cluster_arn,
            role_path=config.iam.role_path,
        )

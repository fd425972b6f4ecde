"""The stacks of one HyperPod environment, built the same way from a workstation or a pipeline Stage.

Which stack waits for which (each only when it exists for the config)::

    network
    egress              network
    storage             network                       (stateful)
    nodes               network
    eks                 network                       (eks, created cluster)
    eks-dependencies    network, egress, eks          (eks)
    cluster             network, egress, storage, nodes, eks-dependencies
    metrics             cluster, nodes, network       (slurm with observability)
    eks-addons          cluster, eks-dependencies, storage   (eks)
    data-repositories   storage

- ``network`` holds only what FSx, the database and the EKS control plane need, so they start
  after about a minute; NAT, endpoints, flow logs and the default security group's closure are
  in ``egress``, which only the HyperPod cluster and the kubectl handler wait for.
- The lifecycle upload and the node role (``nodes``) deploy while FSx is created.
- The EKS control plane (``eks``) is created while FSx is; the kubectl handler, early add-ons
  and HyperPod dependencies (``eks-dependencies``) follow it; what needs the HyperPod nodes
  (``eks-addons``) comes after the cluster.
- The data repository associations (minutes each, one at a time) sit in a stack nothing waits
  for.
- Containment: a stack that holds the HyperPod cluster, the EKS cluster, a file system, the
  accounting database or the data bucket holds no optional feature that can fail on its own.
  Slurm metrics (the observability extension, Grafana and its content, the workspace and its
  rules) are in ``metrics``, after the cluster and waited for by nothing, so a failure there
  rolls back only that stack (on EKS, ``eks-addons`` holds them).
- The HyperPod cluster *reads* what it waits for (the scripts' URI, the EKS cluster's ARN) from
  parameters set once those are ready, so the waits are in the templates, not only behind
  stack barriers (what ``scripts/critical_path.py`` compares with).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IDependable

from hyperpod_cdk.alerts.construct import HyperPodAlerts, HyperPodRollbackAlarms
from hyperpod_cdk.cluster import (
    AccountingDatabaseRef,
    HyperPodCluster,
    LifecycleRef,
    LifecycleScripts,
)
from hyperpod_cdk.compliance.checkov_skips import FrameworkCheckovSkips
from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.alerts import all_rollback_alarm_names, auto_rollback_groups
from hyperpod_cdk.config.node_setup import exporter_images, lifecycle_extra_files
from hyperpod_cdk.config.observability import (
    extension_version,
    metric_levels,
    metrics_provider,
    observability_settings,
)
from hyperpod_cdk.facts import closed_network_endpoints
from hyperpod_cdk.iam import ClusterAutoScalingRole, ExecutionRole
from hyperpod_cdk.lifecycle.scripts import LIFECYCLE_ROOT, lifecycle_bucket_name
from hyperpod_cdk.lifecycle.settings import node_settings
from hyperpod_cdk.log_encryption import EncryptLogGroups
from hyperpod_cdk.network import HyperPodNetwork
from hyperpod_cdk.observability.grafana import HyperPodGrafana
from hyperpod_cdk.observability.metrics import HyperPodMetrics
from hyperpod_cdk.storage import (
    DataBucket,
    DataRepositoryAssociations,
    FileSystemHandle,
    LustreFileSystem,
    OpenZfsFileSystem,
    OpenZfsHandle,
)
from hyperpod_cdk.storage.openzfs import allow_nfs_egress
from stacks.base import EnvironmentStack, metrics_outputs, output, ready_parameter
from stacks.layout import cluster_identity, needs_egress, needs_eks_addons, needs_metrics

if TYPE_CHECKING:
    # imported when built: a Slurm environment loads neither aws_eks_v2 nor aws_rds
    from hyperpod_cdk.cluster import SlurmAccountingDatabase
    from stacks.eks import EksAddonsStack, EksDependenciesStack, EksStack

DESTROY_CONTEXT_FLAG = "destroy_data"
# A template-level Metadata key of a stack that starts after the cluster stack on purpose
# (containment, SPEC section 5); scripts/critical_path.py keeps its barrier in the ideal
CONTAINED_METADATA = "hyperpod-cdk:contained"
CONTAINED_REASON = (
    "Deploys after the cluster stack on purpose: what it holds may fail on its own, and a "
    "failure must roll back only this stack, never the cluster."
)
# The run-as Session document's inputs. Session document schema (Session Manager user guide,
# https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-schema.html, read
# 2026-11-27): s3EncryptionEnabled, cloudWatchEncryptionEnabled, cloudWatchStreamingEnabled and
# runAsEnabled are "Required: Yes" (Boolean); the string inputs are optional, set empty as the
# page's Standard_Stream example does. No session logs are sent (no bucket, no log group): if
# someone adds a destination, it must be encrypted. runAsDefaultUser stays empty on purpose:
# the user comes from the caller's SSMSessionRunAs tag, and a caller without one gets no session
# ("the user account you specify ... must exist ...; otherwise, sessions will fail to start").
# idleSessionTimeout: minutes, 1-60 (a string).
RUN_AS_SESSION_INPUTS: dict[str, Any] = {
    "s3BucketName": "",
    "s3KeyPrefix": "",
    "s3EncryptionEnabled": True,
    "cloudWatchLogGroupName": "",
    "cloudWatchEncryptionEnabled": True,
    "cloudWatchStreamingEnabled": False,
    "kmsKeyId": "",
    "runAsEnabled": True,
    "runAsDefaultUser": "",
    "idleSessionTimeout": "20",
    "shellProfile": {"linux": "cd ~ && exec bash -l", "windows": ""},
}
# a tag of the HyperPod cluster whose value is read from the nodes stack's ScriptsReady parameter
LIFECYCLE_BUCKET_TAG = "hyperpod-cdk:lifecycle-bucket"
DESTROY_REASON = (
    "storage.fsx.removal_policy is destroy and the deploy passed -c destroy_data=true: the data "
    "is meant to go with the stack."
)
OPENZFS_DESTROY_REASON = (
    "storage.openzfs.removal_policy is destroy and the deploy passed -c destroy_data=true: the "
    "home directories are meant to go with the stack."
)


def role_arn_with_literal_path(scope: Construct, role: iam.IRole, path: str) -> str:
    """The ARN of a role of another stack with its IAM ``path`` (``iam.role_path``) a literal of
    the consumer's template: a new path replaces the role and changes the consumer's template
    too, so the consumer reads the new role's name (a weak reference is read only then)."""
    return cdk.Stack.of(scope).format_arn(
        service="iam",
        region="",
        resource="role",
        resource_name=f"{path.lstrip('/')}{role.role_name}",
        arn_format=cdk.ArnFormat.SLASH_RESOURCE_NAME,
    )


def lifecycle_bucket(config: EnvironmentConfig) -> str:
    """The lifecycle bucket's name, ``sagemaker-<name>-lifecycle-<account>-<region>``: from the
    config alone, so that every stack that names it writes it in its own template (the account
    is the deploying account's ``AWS::AccountId`` when the config leaves it out)."""
    return lifecycle_bucket_name(config.name, config.account or cdk.Aws.ACCOUNT_ID, config.region)


def lifecycle_source_uri(bucket_name: str, prefix: str) -> str:
    """``s3://<bucket>/<prefix>``, bucket and content-hashed ``prefix`` literals of the
    consumer's template."""
    return cdk.Fn.join("", ["s3://", bucket_name, "/", prefix])


class EgressStack(EnvironmentStack):
    """What the nodes reach out through, and what watches the VPC: internet gateway, public
    subnets, NAT gateways and default routes, interface endpoints, flow logs, and the closure of
    the default security group.

    The network stack creates them here (``HyperPodNetwork(egress_scope=...)``): FSx, the
    database and the EKS control plane wait only for the network stack; the HyperPod cluster and
    the kubectl handler wait for this one too.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: EnvironmentConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        # the same construct path as inside the network stack: the logical ids stay those of
        # HyperPodNetwork's children
        self.network_scope = Construct(self, "Network")


class NetworkStack(EnvironmentStack):
    """VPC, HyperPod subnets and route tables, the S3 gateway endpoint, the logs key and the EFA
    security group (what NAT, endpoints and flow logs need is in :class:`EgressStack`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        egress: EgressStack | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        settings = config.cluster.slurm_settings
        accounting = config.is_slurm and settings.accounting_database
        creates_eks = not config.is_slurm and config.eks_settings.cluster_arn is None
        self.network = HyperPodNetwork(
            self,
            "Network",
            network=config.network,
            database_az_ids=settings.accounting_availability_zone_ids if accounting else (),
            database_subnet_ids=settings.accounting_subnet_ids if accounting else (),
            eks_az_ids=config.network.eks_availability_zone_ids if creates_eks else (),
            eks_subnet_ids=config.network.eks_subnet_ids if creates_eks else (),
            closed_network_endpoints=closed_network_endpoints(
                eks=not config.is_slurm,
                reads_secrets=config.is_slurm
                and (
                    config.cluster.slurm_settings.accounting_database
                    or config.cluster.node_setup.directory is not None
                ),
                observability=observability_settings(config),
            ),
            egress_scope=egress.network_scope if egress is not None else None,
        )
        net = self.network
        output(self, "VpcId", net.vpc.vpc_id, "VPC of the environment")
        output(
            self, "ComputeSubnetId", net.compute_subnet.subnet_id, "HyperPod subnet of the main AZ"
        )
        for az_id, subnet in net.compute_subnets.items():
            if az_id != config.network.availability_zone_id:
                output(
                    self,
                    f"ComputeSubnetId{az_id.replace('-', '')}",
                    subnet.subnet_id,
                    f"HyperPod subnet in {az_id}",
                )
        output(
            self,
            "NodeSecurityGroupId",
            net.efa.security_group.security_group_id,
            "EFA security group of the nodes",
        )


class StorageStack(EnvironmentStack):
    """Stateful resources: the data bucket, FSx for Lustre, FSx for OpenZFS (the homes) and the
    Slurm accounting database.

    Termination protection is on and everything is retained unless the config
    says ``removal_policy: destroy`` *and* the deploy passes ``-c destroy_data=true`` (each
    file system by its own ``removal_policy``; protection goes when one of them says destroy).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        network: HyperPodNetwork,
        allow_data_destroy: bool = False,
        **kwargs: Any,
    ) -> None:
        fsx_cfg, zfs_cfg = config.storage.fsx, config.storage.openzfs
        destroy = fsx_cfg.removal_policy == "destroy" and allow_data_destroy
        zfs_destroy = (
            zfs_cfg is not None
            and not zfs_cfg.adopted
            and zfs_cfg.removal_policy == "destroy"
            and allow_data_destroy
        )
        super().__init__(
            scope,
            construct_id,
            config=config,
            termination_protection=not (destroy or zfs_destroy),
            **kwargs,
        )
        removal = cdk.RemovalPolicy.DESTROY if destroy else cdk.RemovalPolicy.RETAIN
        if fsx_cfg.removal_policy == "destroy" and not allow_data_destroy:
            cdk.Annotations.of(self).add_warning_v2(
                "hyperpod:retain-data",
                "storage.fsx.removal_policy is destroy, but the deploy did not pass -c destroy_data=true: "
                "the file system and data bucket stay RETAIN and termination protection stays on. "
                "Pass -c destroy_data=true to let a stack deletion remove them.",
            )
        self.data = DataBucket(self, "Data", removal_policy=removal)
        if destroy:
            acknowledge(self.data, "HyperPod-DataRetained", DESTROY_REASON)
        self.data.bucket.node.default_child.override_logical_id("DataBucket")  # type: ignore[union-attr]
        output(self, "DataBucketName", self.data.bucket.bucket_name, "S3 data bucket")

        self.file_system: FileSystemHandle | None = None
        if fsx_cfg.enabled and fsx_cfg.file_system_id is None:
            lustre = LustreFileSystem(
                self,
                "Lustre",
                config=fsx_cfg,
                subnet=network.compute_subnet,
                security_groups=[network.efa.security_group],
                depends_on=[network.efa],
                removal_policy=removal,
            )
            lustre.resource.override_logical_id("FileSystem")
            if destroy:
                acknowledge(lustre, "HyperPod-DataRetained", DESTROY_REASON)
            self.file_system = lustre.handle
        elif fsx_cfg.enabled:
            self.file_system = FileSystemHandle.from_config(fsx_cfg)
        if self.file_system is not None:
            fs = self.file_system
            output(self, "FileSystemId", fs.file_system_id, "FSx for Lustre file system id")
            output(self, "FileSystemDnsName", fs.dns_name, "FSx for Lustre DNS name")
            output(self, "FileSystemMountName", fs.mount_name, "FSx for Lustre mount name")
        self.openzfs_file_system = self._openzfs(config, network, zfs_destroy)

        self.accounting: SlurmAccountingDatabase | None = None
        settings = config.cluster.slurm_settings
        if config.is_slurm and settings.accounting_database:
            from hyperpod_cdk.cluster import SlurmAccountingDatabase

            self.accounting = SlurmAccountingDatabase(
                self,
                "SlurmAccounting",
                vpc=network.vpc,
                subnets=network.database_subnets,
                clients=network.efa.security_group,
                instance_class=settings.accounting_instance_class,
                multi_az=settings.accounting_multi_az,
                removal_policy=removal,
            )
            db = self.accounting
            db.instance.node.default_child.override_logical_id("SlurmAccountingDatabase")  # type: ignore[union-attr]
            output(
                self,
                "AccountingDatabaseEndpoint",
                db.endpoint,
                "Slurm accounting database endpoint",
            )
            output(
                self,
                "AccountingSecretArn",
                db.secret_arn,
                "Secret with the accounting database credentials",
            )

    def _openzfs(
        self, config: EnvironmentConfig, network: HyperPodNetwork, destroy: bool
    ) -> OpenZfsHandle | None:
        """``storage.openzfs``: the homes' file system, created in the HyperPod subnet and the
        EFA group (all traffic within the group: NFS needs no rule of its own), or adopted (the
        nodes get egress to the NFS ports of its group, unless they have all egress already)."""
        zfs_cfg = config.storage.openzfs
        if zfs_cfg is None or not config.is_slurm:
            return None
        if zfs_cfg.removal_policy == "destroy" and not destroy and not zfs_cfg.adopted:
            cdk.Annotations.of(self).add_warning_v2(
                "hyperpod:retain-openzfs",
                "storage.openzfs.removal_policy is destroy, but the deploy did not pass "
                "-c destroy_data=true: the home directories' file system stays RETAIN. Pass "
                "-c destroy_data=true to let a stack deletion remove it.",
            )
        if zfs_cfg.adopted:
            handle = OpenZfsHandle.from_config(zfs_cfg)
            if config.network.node_egress != "all":
                # a rule of the EFA group, in the network stack
                allow_nfs_egress(network.efa.security_group)
        else:
            created = OpenZfsFileSystem(
                self,
                "OpenZfs",
                config=zfs_cfg,
                subnet=network.compute_subnet,
                security_groups=[network.efa.security_group],
                client_cidrs=[str(c) for c in zfs_cfg.nfs_client_cidrs]
                or [s.ipv4_cidr_block for s in network.compute_subnets.values()],
                depends_on=[network.efa],
                removal_policy=cdk.RemovalPolicy.DESTROY if destroy else cdk.RemovalPolicy.RETAIN,
            )
            created.resource.override_logical_id("OpenZfsFileSystem")
            if destroy:
                acknowledge(created, "HyperPod-DataRetained", OPENZFS_DESTROY_REASON)
            handle = created.handle
        output(self, "OpenZfsFileSystemId", handle.file_system_id, "FSx for OpenZFS file system id")
        output(self, "OpenZfsDnsName", handle.dns_name, "FSx for OpenZFS DNS name (the homes)")
        return handle


class DataRepositoryStack(EnvironmentStack):
    """FSx data repository associations: nothing waits for this stack."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        storage: StorageStack,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        assert storage.file_system is not None
        self.associations = DataRepositoryAssociations(
            self,
            "Associations",
            file_system_id=storage.file_system.file_system_id,
            associations=config.storage.fsx.data_repository_associations,
            data_bucket=storage.data.bucket,
        )


class LifecycleStack(EnvironmentStack):
    """What the nodes boot from and run as: the lifecycle scripts (under a
    content-hashed prefix) and the execution role that reads them.

    It waits only for the network, so it deploys while FSx is created.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        network: HyperPodNetwork,
        project_root: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        self.scripts = LifecycleScripts(
            self,
            "Scripts",
            directory=project_root / config.cluster.lifecycle_scripts,
            settings=node_settings(config),
            extra_files=lifecycle_extra_files(config, project_root),
            bucket_name=lifecycle_bucket(config),
        )
        self.execution_role = ExecutionRole(
            self,
            "ExecutionRole",
            vpc=network.vpc,
            subnets=list(network.compute_subnets.values()),
            security_groups=network.node_security_groups,
            # HyperPod mounts FSx on Slurm nodes; on EKS, pods use the CSI driver
            mounts_fsx=config.is_slurm
            and (config.storage.fsx.enabled or config.storage.openzfs is not None),
            # the directory's bind password and CA certificate, read at boot
            directory_secret_arns=config.cluster.node_setup.directory_secret_arns(config.is_slurm),
        )
        # set once the scripts are uploaded: the cluster reads it (a tag) so that it waits for
        # the upload in its template, not only behind the stack barrier. What the cluster boots
        # from, the bucket name (from the config) and the content-hashed prefix (which changes
        # with every script or setting), it writes literally in its own template
        # (lifecycle_source_uri): `cdk deploy` skips a stack whose template did not change, and
        # a weak reference is never re-read on its own.
        self.scripts_ready = ready_parameter(
            self,
            "ScriptsReady",
            self.scripts.bucket.bucket_name,
            "The bucket the HyperPod nodes read their lifecycle scripts from, set once they are "
            "uploaded",
            [self.scripts.deployment],
        )
        self.execution_role.grant_lifecycle_read(self.scripts.bucket, LIFECYCLE_ROOT)
        # Roles named in the config read the scripts too: the lifecycle bucket
        # is not a sagemaker-* bucket their managed policy would cover.
        cluster_cfg = config.cluster
        external = [
            cluster_cfg.execution_role_arn,
            *(g.execution_role_arn for g in cluster_cfg.instance_groups),
        ]
        self.configured_roles = [
            iam.Role.from_role_arn(self, f"ConfiguredRole{index}", arn, mutable=True)
            for index, arn in enumerate(dict.fromkeys(a for a in external if a))
        ]
        volume_keys = self.execution_role.grant_volume_keys(
            [g.ebs_kms_key_arn for g in cluster_cfg.instance_groups if g.ebs_kms_key_arn]
        )
        # the exporters' images: ECR read on exactly their repositories (HyperPod's of the region
        # or the configured ones), only while an exporter that pulls one is on
        image_pull = self.execution_role.grant_image_pull(
            [arn for image in exporter_images(config) if (arn := image.repository_arn())]
        )
        # a rolling update reads the groups' rollback alarms
        alarms = self.execution_role.grant_describe_alarms(all_rollback_alarm_names(config))
        for role in self.configured_roles:
            self.execution_role.lifecycle_policy.attach_to_role(role)
            if alarms is not None:
                alarms.attach_to_role(role)
            if volume_keys is not None:
                volume_keys.attach_to_role(role)
            if image_pull is not None:
                image_pull.attach_to_role(role)
            if self.execution_role.directory_policy is not None:
                self.execution_role.directory_policy.attach_to_role(role)
        self.autoscaling_role: ClusterAutoScalingRole | None = None
        if cluster_cfg.auto_scaling and cluster_cfg.cluster_role_arn is None:
            self.autoscaling_role = ClusterAutoScalingRole(self, "AutoScalingRole")
            output(
                self,
                "AutoScalingRoleArn",
                self.autoscaling_role.role.role_arn,
                "Role HyperPod assumes to scale the cluster (Karpenter)",
            )
        output(
            self,
            "ExecutionRoleArn",
            self.execution_role.role.role_arn,
            "Execution role of the nodes",
        )
        output(
            self,
            "LifecycleBucketName",
            self.scripts.bucket.bucket_name,
            "Bucket of the lifecycle scripts",
        )
        output(
            self,
            "LifecycleScriptsUri",
            self.scripts.source_s3_uri,
            "Where the nodes read their scripts",
        )


class ClusterStack(EnvironmentStack):
    """The HyperPod cluster (its execution role lives in the nodes stack), with what must be
    there before it or beside it and is plain CloudFormation: the alerts (topic, rules, log
    bridge), the rollback alarms the cluster names, the run-as Session document. Nothing
    optional that calls another service's API at deploy time: Slurm metrics are in
    :class:`MetricsStack`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        network: HyperPodNetwork,
        storage: StorageStack,
        nodes: LifecycleStack,
        egress: EgressStack | None = None,
        eks: EksDependenciesStack | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        if egress is not None:
            # the nodes reach ECR, S3 and the package mirrors through the NAT gateways (or
            # the interface endpoints) from their first boot
            self.add_stack_dependency(egress)
        cluster_cfg = config.cluster
        role, lifecycle = nodes.execution_role, nodes.scripts
        database = None
        depends_on: list[IDependable] = [lifecycle.deployment, role.policy, role.lifecycle_policy]
        eks_cluster_arn = None
        tags = dict(config.tags)
        if eks is not None:
            # The HyperPod cluster reads the EKS cluster's ARN from the parameter that is set
            # once the kubectl handler, the early add-ons and the HyperPod dependencies are in
            # place: it waits for them in its template, not only behind the stack barrier.
            eks_cluster_arn = eks.ready_cluster_arn
            eks_policy = role.grant_eks_node(eks_cluster_arn, scope=self)
            for configured in nodes.configured_roles:
                eks_policy.attach_to_role(configured)
            depends_on.append(eks_policy)
            # The HyperPod training operator looks for this tag (AWS's own setup adds it).
            tags.setdefault("SageMaker", "true")
        # read from the parameter set after the upload: the cluster waits for the scripts
        tags[LIFECYCLE_BUCKET_TAG] = nodes.scripts_ready.string_value
        if storage.accounting is not None:
            secret_read = role.grant_secret_read(storage.accounting.secret_arn, scope=self)
            for configured in nodes.configured_roles:
                secret_read.attach_to_role(configured)
            depends_on.append(secret_read)
            database = AccountingDatabaseRef(
                storage.accounting.endpoint, storage.accounting.secret_arn
            )
        self.cluster = HyperPodCluster(
            self,
            "HyperPod",
            config=cluster_cfg,
            cluster_name=config.cluster_name,
            execution_role_arn=role_arn_with_literal_path(self, role.role, config.iam.role_path),
            lifecycle=LifecycleRef(
                lifecycle_source_uri(lifecycle.bucket_name, lifecycle.prefix),
                lifecycle.entry_script,
            ),
            subnets=network.compute_subnets,
            main_az_id=config.network.availability_zone_id,
            security_groups=network.node_security_groups,
            file_system=storage.file_system,
            openzfs_file_system=storage.openzfs_file_system,
            accounting_database=database,
            eks_cluster_arn=eks_cluster_arn,
            cluster_role_arn=role_arn_with_literal_path(
                self, nodes.autoscaling_role.role, config.iam.role_path
            )
            if nodes.autoscaling_role
            else None,
            tags=tags,
            depends_on=depends_on,
        )
        self.cluster.resource.override_logical_id("HyperPodCluster")
        output(self, "ClusterName", config.cluster_name, "HyperPod cluster name")
        output(self, "ClusterArn", self.cluster.cluster_arn, "HyperPod cluster ARN")
        self._alerts(config)
        controller = next(
            (g.name for g in cluster_cfg.instance_groups if g.effective_node_type == "Controller"),
            None,
        )
        if config.is_slurm and controller:
            cluster_id = cdk.Fn.select(1, cdk.Fn.split("/", self.cluster.cluster_arn))
            output(
                self,
                "ControllerSsmCommand",
                cdk.Fn.join(
                    "",
                    [
                        f"aws sagemaker list-cluster-nodes --region {config.region} --cluster-name "
                        f"{config.cluster_name} --instance-group-name-contains {controller} "
                        "--query 'ClusterNodeSummaries[0].InstanceId' --output text  # then: "
                        f"aws ssm start-session --region {config.region} --target sagemaker-cluster:",
                        cluster_id,
                        f"_{controller}-<instance-id>",
                    ],
                ),
                "How to reach the Slurm controller (SSM)",
            )
        login = next(
            (g.name for g in cluster_cfg.instance_groups if g.effective_node_type == "Login"), None
        )
        if config.is_slurm and login:
            self._run_as_session(config, login)

    def _alerts(self, config: EnvironmentConfig) -> None:
        """``alerts`` and the groups' ``rollback_alarms: auto``, beside the cluster: they read its
        ARN from this template (a replaced cluster changes their references here, no weak
        reference); the auto alarms are made before the cluster, which names them."""
        settings = config.alerts
        self.alerts: HyperPodAlerts | None = None
        if settings is not None:
            topic = (
                sns.Topic.from_topic_arn(self, "AlertsTopic", settings.sns_topic_arn)
                if settings.sns_topic_arn
                else None
            )
            self.alerts = HyperPodAlerts(
                self,
                "Alerts",
                cluster_arn=self.cluster.cluster_arn,
                cluster_name=config.cluster_name,
                event_levels=settings.event_levels,
                node_health=settings.node_health,
                emails=settings.emails,
                topic=topic,
                # on Slurm the health agent's GPU faults reach no EventBridge rule
                health_agent_logs=config.is_slurm and settings.node_health,
            )
            output(self, "AlertsTopicArn", self.alerts.topic.topic_arn, "Where alerts go (SNS)")
        self.rollback_alarms: HyperPodRollbackAlarms | None = None
        groups = auto_rollback_groups(config)
        if groups:
            self.rollback_alarms = HyperPodRollbackAlarms(
                self,
                "RollbackAlarms",
                cluster_arn=self.cluster.cluster_arn,
                cluster_name=config.cluster_name,
                groups=groups,
                topic=self.alerts.topic if self.alerts is not None else None,
            )
            self.rollback_alarms.before(self.cluster.resource)

    def _run_as_session(self, config: EnvironmentConfig, login: str) -> None:
        """A Session Manager document with run-as, so that people reach the login node as their
        own Linux user: the user named by the ``SSMSessionRunAs`` tag of their IAM principal
        (Session Manager user guide, "Turn on run as support for Linux and macOS managed
        nodes"). There is no default user: a principal without the tag gets no session. Its
        inputs: :data:`RUN_AS_SESSION_INPUTS`."""
        document = ssm.CfnDocument(
            self,
            "RunAsSessionDocument",
            document_type="Session",
            document_format="JSON",
            content={
                "schemaVersion": "1.0",
                "description": f"A shell on a node of {config.cluster_name} as the Linux user of "
                "the caller's SSMSessionRunAs tag",
                "sessionType": "Standard_Stream",
                "inputs": RUN_AS_SESSION_INPUTS,
            },
            update_method="NewVersion",
        )
        cluster_id = cdk.Fn.select(1, cdk.Fn.split("/", self.cluster.cluster_arn))
        output(self, "RunAsDocumentName", document.ref, "Session Manager document: run as yourself")
        output(
            self,
            "LoginSsmCommand",
            cdk.Fn.join(
                "",
                [
                    f"aws ssm start-session --region {config.region} --document-name ",
                    document.ref,
                    " --target sagemaker-cluster:",
                    cluster_id,
                    f"_{login}-<instance-id>  # as the user of your SSMSessionRunAs tag",
                ],
            ),
            "How to reach the login node as yourself (SSM run-as)",
        )


class MetricsStack(EnvironmentStack):
    """Slurm ``observability``, after the cluster: the Prometheus workspace (RETAIN, or an adopted
    one) with AWS's alert rules and an alert manager routed to the alerts topic, the
    ``sagemaker-observability`` extension on the cluster (the nodes' execution roles may
    remote-write into this workspace only, by a policy of this stack attached to the nodes
    stack's roles) and Grafana with its dashboards.

    Containment: the extension and the Grafana content call services' APIs at deploy time and
    can fail on their own; here a failure rolls back this stack only, never the cluster
    (nothing the cluster stack needs waits for this one). On EKS the eks-addons stack holds the
    same, beside the observability add-on.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        network: HyperPodNetwork,
        nodes: LifecycleStack,
        cluster: ClusterStack,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, config=config, **kwargs)
        settings = observability_settings(config)
        assert settings is not None and config.is_slurm
        self.add_stack_dependency(cluster)
        # read by scripts/critical_path.py: this stack waits for the cluster stack on purpose
        self.template_options.metadata = {CONTAINED_METADATA: CONTAINED_REASON}
        # the cluster's ARN changes when the cluster is replaced; a weak reference is re-read
        # only when the resource holding it changes, so the identity of the cluster's
        # create-only inputs is written beside it (as eks-addons does) and everything here
        # reads the ARN through this parameter
        self.cluster_ready = ready_parameter(
            self,
            "ClusterReady",
            cluster.cluster.cluster_arn,
            "The HyperPod cluster whose metrics this stack collects "
            f"(cluster identity {cluster_identity(config)})",
            [],
        )
        # the alerts topic (cluster stack) has no name of its own: its ARN never changes while
        # the alerts construct stays
        topic = cluster.alerts.topic.topic_arn if cluster.alerts is not None else None
        self.metrics = HyperPodMetrics(
            self,
            "Metrics",
            cluster_name=config.cluster_name,
            orchestrator="slurm",
            workspace_arn=settings.prometheus_workspace_arn,
            alert_rules=settings.alert_rules,
            alerts_topic_arn=topic if settings.alert_rules else None,
            cluster_arn=self.cluster_ready.string_value,
            levels=metrics_provider(metric_levels(config)),
            logging=settings.logging,
            extension_version=extension_version(settings),
            node_roles=[nodes.execution_role.role, *nodes.configured_roles],
            role_path=config.iam.role_path,
        )
        self.grafana: HyperPodGrafana | None = metrics_outputs(self, config, self.metrics, network)


@dataclass
class EnvironmentStacks:
    """The stacks of one environment."""

    network: NetworkStack
    egress: EgressStack | None
    storage: StorageStack
    lifecycle: LifecycleStack
    cluster: ClusterStack
    data_repositories: DataRepositoryStack | None
    eks: EksStack | None = None
    eks_dependencies: EksDependenciesStack | None = None
    eks_addons: EksAddonsStack | None = None
    metrics: MetricsStack | None = None

    def all(self) -> list[cdk.Stack]:
        """Every stack, in deploy order."""
        stacks: list[cdk.Stack | None] = [
            self.network,
            self.egress,
            self.storage,
            self.lifecycle,
            self.eks,
            self.eks_dependencies,
            self.cluster,
            self.metrics,
            self.eks_addons,
            self.data_repositories,
        ]
        return [s for s in stacks if s is not None]


def build_environment(
    scope: Construct,
    config: EnvironmentConfig,
    *,
    project_root: Path,
    allow_data_destroy: bool = False,
    env: cdk.Environment | None = None,
) -> EnvironmentStacks:
    """Every stack of ``config`` under ``scope`` (an App or a pipeline Stage)."""
    env = env or cdk.Environment(account=config.account, region=config.region)
    prefix = config.name
    egress = None
    if needs_egress(config):
        egress = EgressStack(
            scope, f"{prefix}-egress", config=config, env=env,
            description=f"HyperPod environment {prefix}: NAT, endpoints, flow logs (what the nodes reach out through)",
        )  # fmt: skip
    network = NetworkStack(scope, f"{prefix}-network", config=config, egress=egress, env=env,
                           description=f"HyperPod environment {prefix}: network")  # fmt: skip
    storage = StorageStack(
        scope,
        f"{prefix}-storage",
        config=config,
        network=network.network,
        allow_data_destroy=allow_data_destroy,
        env=env,
        description=f"HyperPod environment {prefix}: stateful storage (FSx, data bucket, accounting database)",
    )
    lifecycle = LifecycleStack(
        scope, f"{prefix}-nodes", config=config, network=network.network, project_root=project_root, env=env,
        description=f"HyperPod environment {prefix}: lifecycle scripts and node execution role",
    )  # fmt: skip
    eks = eks_dependencies = None
    eks_addons = None
    if not config.is_slurm:
        from stacks.eks import EksAddonsStack, EksDependenciesStack, EksStack

        eks_dependencies = EksDependenciesStack(
            scope, f"{prefix}-eks-dependencies", config=config, env=env,
            description=f"HyperPod environment {prefix}: kubectl handler, early add-ons and HyperPod dependencies on EKS",
        )  # fmt: skip
        if eks_dependencies.kubectl_scope is not None:
            eks = EksStack(
                scope, f"{prefix}-eks", config=config, network=network.network,
                kubectl_scope=eks_dependencies.kubectl_scope, env=env,
                description=f"HyperPod environment {prefix}: EKS control plane",
            )  # fmt: skip
        eks_dependencies.build(network=network.network, eks=eks.eks if eks is not None else None)
        if egress is not None:
            # the kubectl handler reaches the EKS and STS APIs through NAT or the endpoints
            eks_dependencies.add_stack_dependency(egress)
    cluster = ClusterStack(
        scope,
        f"{prefix}-cluster",
        config=config,
        network=network.network,
        storage=storage,
        nodes=lifecycle,
        egress=egress,
        eks=eks_dependencies,
        env=env,
        description=f"HyperPod environment {prefix}: HyperPod cluster",
    )
    if eks_dependencies is not None and needs_eks_addons(config):
        eks_addons = EksAddonsStack(
            scope, f"{prefix}-eks-addons", config=config, eks_stack=eks_dependencies,
            network=network.network, file_system=storage.file_system, data_bucket=storage.data,
            hyperpod_cluster_arn=cluster.cluster.cluster_arn, env=env,
            alerts_topic_arn=cluster.alerts.topic.topic_arn if cluster.alerts else None,
            description=f"HyperPod environment {prefix}: EKS add-ons that need the HyperPod nodes",
        )  # fmt: skip
    metrics = None
    if needs_metrics(config):
        metrics = MetricsStack(
            scope, f"{prefix}-metrics", config=config, network=network.network, nodes=lifecycle,
            cluster=cluster, env=env,
            description=f"HyperPod environment {prefix}: Prometheus workspace, observability extension and Grafana (after the cluster)",
        )  # fmt: skip
    data_repositories = None
    fsx_cfg = config.storage.fsx
    if fsx_cfg.enabled and fsx_cfg.data_repository_associations:
        data_repositories = DataRepositoryStack(
            scope, f"{prefix}-data-repositories", config=config, storage=storage, env=env,
            description=f"HyperPod environment {prefix}: FSx data repository associations",
        )  # fmt: skip
    stacks = EnvironmentStacks(
        network,
        egress,
        storage,
        lifecycle,
        cluster,
        data_repositories,
        eks=eks,
        eks_dependencies=eks_dependencies,
        eks_addons=eks_addons,
        metrics=metrics,
    )
    # Aspects stop at Stage boundaries, so they are added per stack (here, not on the App):
    # every log group, CDK's own included, is encrypted with the environment's logs key; checkov
    # skips, with their reasons, go on CDK's own Lambda functions (READONLY priority: after the
    # aspects that change resources, so that a check a change makes pass is not skipped)
    for stack in stacks.all():
        cdk.Aspects.of(stack).add(EncryptLogGroups(network.network.logs_key))
        cdk.Aspects.of(stack).add(FrameworkCheckovSkips(), priority=cdk.AspectPriority.READONLY)
    return stacks

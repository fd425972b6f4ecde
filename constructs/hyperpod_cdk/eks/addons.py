"""Optional HyperPod add-ons on the EKS cluster, installed once the HyperPod cluster has nodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from aws_cdk import aws_eks as eks
from aws_cdk import aws_eks_v2 as eks_v2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IDependable

from hyperpod_cdk.compliance.nag import acknowledge, nag_account, nag_partition
from hyperpod_cdk.config.eks import EksAddons
from hyperpod_cdk.config.observability import default_levels, metrics_provider
from hyperpod_cdk.eks.cluster import pinned_addon
from hyperpod_cdk.facts.addon_values import cert_manager_values, observability_values
from hyperpod_cdk.observability.metrics import new_workspace, workspace_endpoint, workspace_id_of
from hyperpod_cdk.storage.file_system import FileSystemHandle

CERT_MANAGER = "cert-manager"
TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
OBSERVABILITY = "amazon-sagemaker-hyperpod-observability"
FSX_CSI_DRIVER = "aws-fsx-csi-driver"

# The training operator's controller reads its AWS credentials through this service
# account (SageMaker developer guide, "Installing the training operator").
TRAINING_OPERATOR_NAMESPACE = "aws-hyperpod"
TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"

# The observability add-on's OpenTelemetry collector (SageMaker developer guide,
# "Troubleshooting the Amazon SageMaker HyperPod observability add-on", Verify Pod Identity
# association).
OBSERVABILITY_NAMESPACE = "hyperpod-observability"
OBSERVABILITY_SERVICE_ACCOUNT = "hyperpod-observability-operator-otel-collector"

# Where HyperPod writes the cluster's logs; the collector's role reaches only these groups
# (same troubleshooting page).
HYPERPOD_LOG_GROUPS = "/aws/sagemaker/Clusters/*"

FSX_CSI_PROVISIONER = "fsx.csi.aws.com"
FSX_PERSISTENT_VOLUME = "hyperpod-fsx"
# The tag that marks what belongs to an environment (its name as the value): the file systems
# the FSx CSI driver creates for it carry it, and its controller role may touch only those.
ENVIRONMENT_TAG = "hyperpod-cdk:environment"
FSX_CLAIM = "fsx-claim"

# cert-manager's configuration (every taint tolerated: see addon_values.TOLERATE_EVERY_TAINT)
CERT_MANAGER_VALUES: dict[str, Any] = cert_manager_values()


def _nag_arn(scope: Construct, service: str, resource: str) -> str:
    """An ARN of this stack's account and region as cdk-nag writes it in a finding id.

    Partition and region are literals only when the stack resolved them (the partition needs
    ``@aws-cdk/core:enablePartitionLiterals`` and a known region); otherwise cdk-nag prints
    the pseudo parameter reference.
    """
    stack = cdk.Stack.of(scope)

    def shown(value: str, pseudo: str) -> str:
        return f"<AWS::{pseudo}>" if cdk.Token.is_unresolved(value) else value

    partition = shown(stack.partition, "Partition")
    region = shown(stack.region, "Region")
    return f"arn:{partition}:{service}:{region}:{nag_account(scope)}:{resource}"


@dataclass(frozen=True)
class AddonObservability:
    """What the observability add-on is configured with.

    :param levels: ``metricsProvider`` key (``nodeMetrics``, ... ``rayMetrics``) -> DISABLED |
        BASIC | ADVANCED.
    :param logging: ``logging.enabled``.
    :param workspace_arn: an existing workspace to write to; None: a new one (``PrometheusWorkspace``).
    """

    levels: Mapping[str, str]
    logging: bool = False
    workspace_arn: str | None = None

    @classmethod
    def defaults(cls, *, task_governance: bool) -> AddonObservability:
        """AWS's default levels (task governance ADVANCED with its add-on), no logging."""
        return cls(metrics_provider(default_levels(slurm=False, task_governance=task_governance)))


class HyperPodEksAddons(Construct):
    """The optional HyperPod add-ons of ``eks.addons``, each an EKS add-on pinned in versions.py.

    - ``training_operator``: ``cert-manager``, then the HyperPod training operator, with a
      pod identity role limited to ``sagemaker:DescribeClusterNode``.
    - ``task_governance``: the HyperPod task governance add-on (Kueue).
    - ``observability``: an Amazon Managed Prometheus workspace (logging to CloudWatch), the
      collector's pod identity role (``aps:RemoteWrite`` on that workspace, the HyperPod
      cluster log groups) and the observability add-on pointed at the workspace.
    - ``fsx_csi_driver``: the FSx for Lustre CSI driver plus a static PersistentVolume of the
      file system and a claim bound to it. Static provisioning makes no FSx API call, so the
      driver gets no AWS permissions.

    Everything here must be created after the HyperPod cluster has nodes (the add-ons'
    pods have nowhere else to run, and an add-on that cannot start fails its stack): make
    the add-ons wait with :meth:`wait_for`. The pod identity associations need the
    ``eks-pod-identity-agent`` core add-on on the cluster.

    Pod identity associations are standalone resources created before their add-on, not
    the add-on's ``PodIdentityAssociations``: training operator v1.2.1 no longer declares
    IAM permissions and rejects the inline form (awslabs/awsome-distributed-ai #1075).

    :param cluster_name: name of the EKS cluster (created or adopted; a token is fine).
    :param kubernetes_version: its Kubernetes minor, ``"1.30"`` .. ``"1.35"``; picks the
        pinned add-on builds.
    :param options: the ``eks.addons`` section.
    :param cluster: the cluster as an ``eks_v2.ICluster`` with a kubectl provider; needed
        only for the FSx PersistentVolume and claim.
    :param file_system: the Lustre file system the PersistentVolume points at.
        ``options.fsx_csi_driver`` left out (None) means: on when this is given, or when
        ``options.inference`` is on (the inference operator needs the driver; the static
        volume is made only with a file system).
    :param fsx_storage_capacity_gib: capacity written on the PersistentVolume.
    :param fsx_subnet_id: with ``fsx_csi_driver: {dynamic_provisioning: true}``: the subnet of
        the file systems the StorageClass creates (the HyperPod subnet).
    :param fsx_security_group_ids: their security groups (the nodes' EFA group).
    :param environment_tag: ``(key, value)`` the created file systems carry; the driver's
        controller role may create, update and delete only file systems with it.
    :param fsx_namespace: namespace of the claim; it must exist unless
        ``create_fsx_namespace``.
    :param create_fsx_namespace: create ``fsx_namespace`` with the claim (it is then deleted
        with the claim).
    :param hyperpod_cluster_arn: the HyperPod cluster the training operator describes nodes
        of; default: any HyperPod cluster of this account and region.
    :param role_path: IAM path of the roles.
    :param permissions_boundary: a managed policy set as permissions boundary of the roles.
    :param encryption_key: customer managed key for the Prometheus workspace and its log
        group (its key policy must let CloudWatch Logs and Amazon Managed Service for
        Prometheus use it); default: AWS owned keys.
    :param observability: the observability add-on's settings (levels, logging, an adopted
        workspace); default: on with AWS's default levels when ``options.observability``.
    :param shared_cluster: the cluster is adopted (other teams use it): the add-ons never
        overwrite a field someone else manages (``ResolveConflicts: NONE``) and stay when the
        stack is deleted; the FSx volume's create fails on existing objects of the same name
        instead of taking them over.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        kubernetes_version: str,
        options: EksAddons,
        # eks_v2.Cluster is listed too: its jsii class lacks ICluster's kubectl_provider_options
        # member, so type checkers do not accept it as an ICluster
        cluster: eks_v2.ICluster | eks_v2.Cluster | None = None,
        file_system: FileSystemHandle | None = None,
        fsx_storage_capacity_gib: int = 1200,
        fsx_subnet_id: str | None = None,
        fsx_security_group_ids: Sequence[str] = (),
        environment_tag: tuple[str, str] = (ENVIRONMENT_TAG, "hyperpod"),
        fsx_namespace: str = "default",
        create_fsx_namespace: bool = False,
        hyperpod_cluster_arn: str | None = None,
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
        encryption_key: kms.IKey | None = None,
        shared_cluster: bool = False,
        observability: AddonObservability | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        driver_option = options.fsx_csi_driver
        dynamic = options.fsx_csi_dynamic
        # the inference operator needs the driver add-on, with or without a file system (the
        # static volume below still needs one)
        inference = options.inference_settings is not None
        if inference and driver_option is False:
            raise ValueError(
                "eks.addons.inference needs the FSx CSI driver add-on; remove "
                "eks.addons.fsx_csi_driver: false"
            )
        fsx_on = (
            (file_system is not None or inference)
            if driver_option is None
            else driver_option is not False
        )
        if driver_option is True and file_system is None and not inference:
            raise ValueError(
                "eks.addons.fsx_csi_driver: true needs a file system for its PersistentVolume; "
                "enable storage.fsx (or adopt one) or set eks.addons.fsx_csi_driver: false"
            )
        if dynamic is not None and (fsx_subnet_id is None or not fsx_security_group_ids):
            raise ValueError(
                "eks.addons.fsx_csi_driver.dynamic_provisioning: the StorageClass needs the "
                "subnet and the security groups of the file systems it creates (fsx_subnet_id=, "
                "fsx_security_group_ids=)"
            )
        if fsx_on and (file_system is not None or dynamic is not None) and cluster is None:
            raise ValueError(
                "eks.addons.fsx_csi_driver: the FSx PersistentVolume and claim are Kubernetes "
                "manifests and need the EKS cluster (an eks_v2.ICluster with a kubectl provider); "
                "pass cluster= or set eks.addons.fsx_csi_driver: false"
            )
        if fsx_storage_capacity_gib <= 0:
            raise ValueError(
                f"fsx_storage_capacity_gib: {fsx_storage_capacity_gib} must be positive"
            )
        self.cluster_name = cluster_name
        self.kubernetes_version = kubernetes_version
        self._role_path = role_path
        self._shared_cluster = shared_cluster
        self._permissions_boundary = permissions_boundary
        self.fsx_csi_driver_enabled = fsx_on

        self.addons: dict[str, eks.CfnAddon] = {}
        """Every EKS add-on created, by add-on name."""
        self.pod_identity_associations: dict[str, eks.CfnPodIdentityAssociation] = {}
        """Pod identity associations, by the add-on name they serve."""
        self.roles: dict[str, iam.Role] = {}
        """Pod identity roles, by the add-on name they serve."""
        self.prometheus_workspace: aps.CfnWorkspace | None = None
        self.prometheus_log_group: logs.LogGroup | None = None
        self.training_operator_policy: iam.ManagedPolicy | None = None
        self.observability_policy: iam.ManagedPolicy | None = None
        self.fsx_volume: eks_v2.KubernetesManifest | None = None

        if options.training_operator:
            self._training_operator(hyperpod_cluster_arn)
        if options.task_governance:
            self._addon("TaskGovernance", TASK_GOVERNANCE)
        self.observability_workspace_arn: str | None = None
        if observability is None and options.observability:
            observability = AddonObservability.defaults(task_governance=options.task_governance)
        if observability is not None:
            self._observability(encryption_key, observability)
        self.fsx_storage_class: eks_v2.KubernetesManifest | None = None
        if fsx_on:
            driver = self._addon("FsxCsiDriver", FSX_CSI_DRIVER)
            if file_system is not None:
                self._fsx(
                    cast(eks_v2.ICluster, cluster),
                    driver,
                    file_system,
                    capacity_gib=fsx_storage_capacity_gib,
                    namespace=fsx_namespace,
                    create_namespace=create_fsx_namespace,
                )
            if dynamic is not None:
                assert fsx_subnet_id is not None  # checked above
                self._fsx_dynamic(
                    cast(eks_v2.ICluster, cluster),
                    driver,
                    file_system=file_system,
                    storage_class=dynamic.storage_class,
                    subnet_id=fsx_subnet_id,
                    security_group_ids=list(fsx_security_group_ids),
                    tag=environment_tag,
                )

    # -- public ---------------------------------------------------------------------------

    def wait_for(self, *dependencies: IDependable) -> None:
        """Make every add-on and Kubernetes manifest wait for ``dependencies`` (the HyperPod cluster).

        Roles, pod identity associations and the Prometheus workspace do not wait, so they
        are created while the cluster's nodes come up.
        """
        waiting: list[Construct] = [*self.addons.values()]
        for manifest in (self.fsx_volume, self.fsx_storage_class):
            if manifest is not None:
                waiting.append(manifest)
        for construct in waiting:
            for dependency in dependencies:
                construct.node.add_dependency(dependency)

    # -- building blocks ------------------------------------------------------------------

    def _addon(
        self, construct_id: str, name: str, *, configuration: dict[str, Any] | None = None
    ) -> eks.CfnAddon:
        addon = pinned_addon(
            self,
            construct_id,
            cluster_name=self.cluster_name,
            name=name,
            kubernetes_version=self.kubernetes_version,
            configuration=configuration,
            shared_cluster=self._shared_cluster,
        )
        self.addons[name] = addon
        return addon

    def _pod_role(self, construct_id: str, description: str) -> iam.Role:
        """A role only EKS Pod Identity can assume, and only for pods of this cluster."""
        stack = cdk.Stack.of(self)
        cluster_arn = stack.format_arn(
            service="eks", resource="cluster", resource_name=self.cluster_name
        )
        # Pod Identity assumes the role with session tags; the source conditions keep other
        # clusters (and accounts) from using it (HyperPod observability troubleshooting guide,
        # trust policy of the collector role).
        principal = iam.ServicePrincipal(
            "pods.eks.amazonaws.com",
            conditions={
                "StringEquals": {"aws:SourceAccount": stack.account, "aws:SourceArn": cluster_arn}
            },
        ).with_session_tags()
        return iam.Role(
            self,
            construct_id,
            assumed_by=principal,
            description=description,
            path=self._role_path,
            permissions_boundary=self._permissions_boundary,
        )

    def _associate(
        self, construct_id: str, addon: str, namespace: str, service_account: str, role: iam.Role
    ) -> eks.CfnPodIdentityAssociation:
        association = eks.CfnPodIdentityAssociation(
            self,
            construct_id,
            cluster_name=self.cluster_name,
            namespace=namespace,
            service_account=service_account,
            role_arn=role.role_arn,
        )
        self.pod_identity_associations[addon] = association
        self.roles[addon] = role
        return association

    # -- the add-ons ----------------------------------------------------------------------

    def _training_operator(self, hyperpod_cluster_arn: str | None) -> None:
        stack = cdk.Stack.of(self)
        cert_manager = self._addon("CertManager", CERT_MANAGER, configuration=CERT_MANAGER_VALUES)
        role = self._pod_role("TrainingOperatorRole", "HyperPod training operator (pod identity)")
        clusters = hyperpod_cluster_arn or stack.format_arn(
            service="sagemaker", resource="cluster", resource_name="*"
        )
        # The AWS managed policy AmazonSageMakerHyperPodTrainingOperatorAccess grants only
        # sagemaker:DescribeClusterNode (SageMaker developer guide, "AWS managed policies for
        # Amazon SageMaker HyperPod"); this is the same permission, scoped to the cluster.
        policy = iam.ManagedPolicy(
            self,
            "TrainingOperatorPolicy",
            statements=[
                iam.PolicyStatement(
                    sid="DescribeHyperPodNodes",
                    actions=["sagemaker:DescribeClusterNode"],
                    resources=[clusters],
                )
            ],
        )
        policy.attach_to_role(role)
        if hyperpod_cluster_arn is None:
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'sagemaker', 'cluster/*')}]",
                "No HyperPod cluster ARN was given to scope sagemaker:DescribeClusterNode to; it is "
                "read-only and limited to HyperPod clusters of this account and region.",
            )
        association = self._associate(
            "TrainingOperatorPodIdentity",
            TRAINING_OPERATOR,
            TRAINING_OPERATOR_NAMESPACE,
            TRAINING_OPERATOR_SERVICE_ACCOUNT,
            role,
        )
        operator = self._addon("TrainingOperator", TRAINING_OPERATOR)
        # the operator's webhooks need cert-manager's CRDs and issuer (training operator
        # prerequisites); its controller needs its credentials from the first start
        operator.add_resource_dependency(cert_manager)
        operator.add_resource_dependency(association)
        operator.node.add_dependency(policy)
        self.training_operator_policy = policy

    def _observability(self, encryption_key: kms.IKey | None, settings: AddonObservability) -> None:
        stack = cdk.Stack.of(self)
        if settings.workspace_arn is None:
            # the ids the add-on's workspace always had: existing deployments keep it
            workspace, log_group = new_workspace(
                self, alias=f"{self.cluster_name}-hyperpod", encryption_key=encryption_key
            )
            self.prometheus_log_group = log_group
            self.prometheus_workspace = workspace
            workspace_arn, workspace_id = workspace.attr_arn, workspace.attr_workspace_id
        else:
            workspace_arn = settings.workspace_arn
            workspace_id = workspace_id_of(workspace_arn)

        role = self._pod_role(
            "ObservabilityRole", "HyperPod observability collector (pod identity)"
        )
        cluster_logs = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=HYPERPOD_LOG_GROUPS,
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        # exactly the permissions the observability troubleshooting guide lists for the
        # collector role: remote write to its workspace, read/write of the cluster log groups
        policy = iam.ManagedPolicy(
            self,
            "ObservabilityPolicy",
            statements=[
                iam.PolicyStatement(
                    sid="PrometheusRemoteWrite",
                    actions=["aps:RemoteWrite"],
                    resources=[workspace_arn],
                ),
                iam.PolicyStatement(
                    sid="HyperPodClusterLogs",
                    actions=[
                        "logs:CreateLogGroup",
                        "logs:CreateLogStream",
                        "logs:DescribeLogGroups",
                        "logs:DescribeLogStreams",
                        "logs:PutLogEvents",
                        "logs:GetLogEvents",
                        "logs:FilterLogEvents",
                        "logs:GetLogRecord",
                        "logs:StartQuery",
                        "logs:StopQuery",
                        "logs:GetQueryResults",
                    ],
                    resources=[cluster_logs, f"{cluster_logs}:log-stream:*"],
                ),
            ],
        )
        policy.attach_to_role(role)
        nag_logs = _nag_arn(self, "logs", f"log-group:{HYPERPOD_LOG_GROUPS}")
        reason = (
            "HyperPod names the cluster log groups /aws/sagemaker/Clusters/<name>/<id> at creation; "
            "the collector reaches only those groups and their streams (observability add-on guide)."
        )
        acknowledge(policy, f"AwsSolutions-IAM5[Resource::{nag_logs}]", reason)
        acknowledge(policy, f"AwsSolutions-IAM5[Resource::{nag_logs}:log-stream:*]", reason)
        association = self._associate(
            "ObservabilityPodIdentity",
            OBSERVABILITY,
            OBSERVABILITY_NAMESPACE,
            OBSERVABILITY_SERVICE_ACCOUNT,
            role,
        )
        configuration = observability_values(
            prometheus_endpoint=workspace_endpoint(self, workspace_id, trailing_slash=False),
            workspace_arn=workspace_arn,
            levels=settings.levels,
            logging=settings.logging,
        )
        addon = self._addon("Observability", OBSERVABILITY, configuration=configuration)
        addon.add_resource_dependency(association)
        addon.node.add_dependency(policy)
        self.observability_policy = policy
        self.observability_workspace_arn = workspace_arn

    def _fsx(
        self,
        cluster: eks_v2.ICluster,
        driver: eks.CfnAddon,
        file_system: FileSystemHandle,
        *,
        capacity_gib: int,
        namespace: str,
        create_namespace: bool,
    ) -> None:
        # static provisioning (aws-fsx-csi-driver, examples/kubernetes/static_provisioning):
        # the volume handle is the file system id, the attributes its DNS and mount names; the
        # empty storage class keeps a default StorageClass from provisioning a new file system
        persistent_volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": FSX_PERSISTENT_VOLUME},
            "spec": {
                "capacity": {"storage": f"{capacity_gib}Gi"},
                "volumeMode": "Filesystem",
                "accessModes": ["ReadWriteMany"],
                "mountOptions": ["flock"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "csi": {
                    "driver": FSX_CSI_PROVISIONER,
                    "volumeHandle": file_system.file_system_id,
                    "volumeAttributes": {
                        "dnsname": file_system.dns_name,
                        "mountname": file_system.mount_name,
                    },
                },
            },
        }
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": FSX_CLAIM, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": FSX_PERSISTENT_VOLUME,
                "resources": {"requests": {"storage": f"{capacity_gib}Gi"}},
            },
        }
        manifest: list[dict[str, Any]] = [persistent_volume, claim]
        if create_namespace:
            manifest.insert(
                0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        volume = eks_v2.KubernetesManifest(
            self,
            "FsxVolume",
            cluster=cluster,
            manifest=manifest,
            overwrite=not self._shared_cluster,
        )
        # pods that use the claim need the driver's node plugin to mount it
        volume.node.add_dependency(driver)
        self.fsx_volume = volume

    def _fsx_dynamic(
        self,
        cluster: eks_v2.ICluster,
        driver: eks.CfnAddon,
        *,
        file_system: FileSystemHandle | None,
        storage_class: str,
        subnet_id: str,
        security_group_ids: list[str],
        tag: tuple[str, str],
    ) -> None:
        """Dynamic provisioning (aws-fsx-csi-driver, examples/kubernetes/dynamic_provisioning):
        the driver's controller creates a file system per claim with the controller role, which
        may create file systems (tagged for this environment: the StorageClass's extraTags) and
        nothing else: the StorageClass retains a released volume (reclaimPolicy Retain) and
        allows no expansion, so the driver never deletes or updates a file system, and the
        role may not. A tag the role could add to any file system therefore opens nothing
        (docs/security.md, finding M1), and an explicit deny keeps tagging, deleting and
        updating off the environment's own file system and every file system CloudFormation
        made (they carry aws:cloudformation:stack-name)."""
        stack = cdk.Stack.of(self)
        key, value = tag
        file_systems = stack.format_arn(service="fsx", resource="file-system", resource_name="*")
        guarded = [
            "fsx:DeleteFileSystem",
            "fsx:UpdateFileSystem",
            "fsx:TagResource",
            "fsx:UntagResource",
        ]
        own: list[iam.PolicyStatement] = []
        if file_system is not None:
            own.append(
                iam.PolicyStatement(
                    sid="DenyTheEnvironmentsFileSystem",
                    effect=iam.Effect.DENY,
                    actions=guarded,
                    resources=[
                        stack.format_arn(
                            service="fsx",
                            resource="file-system",
                            resource_name=file_system.file_system_id,
                        )
                    ],
                )
            )
        role = self._pod_role(
            "FsxCsiControllerRole",
            "FSx CSI driver controller: file systems of this environment only (dynamic provisioning)",
        )
        policy = iam.ManagedPolicy(
            self,
            "FsxCsiControllerPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="CreateTaggedFileSystems",
                    actions=["fsx:CreateFileSystem", "fsx:TagResource"],
                    resources=[file_systems],
                    conditions={"StringEquals": {f"aws:RequestTag/{key}": value}},
                ),
                *own,
                # CloudFormation tags what it makes: the storage stack's file systems and any
                # other stack's (a tag-on-create request has no resource tags yet)
                iam.PolicyStatement(
                    sid="DenyCloudFormationFileSystems",
                    effect=iam.Effect.DENY,
                    actions=guarded,
                    resources=[file_systems],
                    conditions={"Null": {"aws:ResourceTag/aws:cloudformation:stack-name": "false"}},
                ),
                iam.PolicyStatement(
                    sid="Describe",
                    actions=[
                        "fsx:DescribeFileSystems",
                        "ec2:DescribeSecurityGroups",
                        "ec2:DescribeSubnets",
                        "ec2:DescribeVpcs",
                    ],
                    resources=["*"],
                ),
                # FSx makes its service-linked role with the first file system of an account
                iam.PolicyStatement(
                    sid="FsxServiceLinkedRole",
                    actions=["iam:CreateServiceLinkedRole"],
                    resources=[
                        stack.format_arn(
                            service="iam",
                            region="",
                            resource="role",
                            resource_name="aws-service-role/fsx.amazonaws.com/*",
                        )
                    ],
                    conditions={"StringLike": {"iam:AWSServiceName": "fsx.amazonaws.com"}},
                ),
            ],
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "fsx:DescribeFileSystems and ec2:Describe* have no resource-level permissions "
            "(Service Authorization Reference); they are read-only.",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'fsx', 'file-system/*')}]",
            "The driver creates the file systems, so their ids are unknown in advance; create "
            f"needs the tag {key}={value} (aws:RequestTag), and the role may not delete or "
            "update any file system (an explicit deny holds the environment's own).",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:iam::"
            f"{nag_account(self)}:role/aws-service-role/fsx.amazonaws.com/*]",
            "FSx's service-linked role, made once per account with the first file system; only "
            "for the fsx.amazonaws.com service (iam:AWSServiceName).",
        )
        association = self._associate(
            "FsxCsiControllerIdentity",
            "fsx-csi-controller",
            "kube-system",
            "fsx-csi-controller-sa",
            role,
        )
        # the controller's pods must start with their identity
        driver.add_dependency(association)
        driver.node.add_dependency(policy)
        manifest = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": storage_class},
            "provisioner": FSX_CSI_PROVISIONER,
            "parameters": {
                "subnetId": subnet_id,
                "securityGroupIds": cdk.Fn.join(",", security_group_ids),
                "deploymentType": "PERSISTENT_2",
                "perUnitStorageThroughput": "250",
                "fileSystemTypeVersion": "2.15",
                "dataCompressionType": "LZ4",
                "extraTags": f"{key}={value}",
            },
            # a deleted claim leaves its file system (and its data) in place
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate",
            "mountOptions": ["flock"],
        }
        self.fsx_storage_class = eks_v2.KubernetesManifest(
            self,
            "FsxStorageClass",
            cluster=cluster,
            manifest=[manifest],
            overwrite=not self._shared_cluster,
        )
        self.fsx_storage_class.node.add_dependency(driver)

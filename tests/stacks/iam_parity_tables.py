"""IAM parity with AWS's own HyperPod role templates: one table per role.

Each row is one IAM action (or one AWS managed policy ARN): whether AWS's template grants it,
whether this project grants it, and how (``scope``) or why not / why extra (``reason``). A row
granted here only under some configs carries ``when``, a predicate on the environment config,
and ``when_text``, the same in words.

``tests/stacks/test_stack_iam_parity.py`` synthesizes the shipped ``full`` (Slurm) and
``eks-full`` (EKS) configs and fails on any action a role is granted that its table lacks, and
on any row marked granted (and applying to the config) that the role is not granted.
``docs/iam-parity.md`` is these tables rendered by ``scripts/iam_parity.py``; regenerate it with
``python scripts/iam_parity.py --write``. Test data only: nothing in the library imports it.

Source (facts read, not copied): the repository, the commit and the date below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperpod_cdk.config import EnvironmentConfig

SOURCE_REPOSITORY = "https://github.com/aws/sagemaker-hyperpod-cluster-setup"
SOURCE_COMMIT = "b920fcf430f1fd3b36c01bb63b63348f95f0b9fb"
SOURCE_COMMIT_DATE = "2025-08-29"
SOURCE_READ = "2026-11-25"
SLURM_TEMPLATE = "slurm/cloudformation/slurm-iam-role-template.yaml"
EKS_TEMPLATE = "eks/cloudformation/sagemaker-iam-role-template.yaml"

MANAGED_POLICY = "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"

Predicate = Callable[["EnvironmentConfig"], bool]


# -- when a grant applies (the same conditions stacks/environment.py grants under) ------------


def accounting_database(cfg: EnvironmentConfig) -> bool:
    """Slurm with the accounting database: the nodes read its secret."""
    return cfg.is_slurm and cfg.cluster.slurm_settings.accounting_database


def directory_users(cfg: EnvironmentConfig) -> bool:
    """Slurm with directory users: the nodes read the bind password and the CA certificate."""
    return bool(cfg.cluster.node_setup.directory_secret_arns(cfg.is_slurm))


def secret_read(cfg: EnvironmentConfig) -> bool:
    return accounting_database(cfg) or directory_users(cfg)


def exporter_image_pull(cfg: EnvironmentConfig) -> bool:
    """Slurm with an exporter whose image is in Amazon ECR."""
    from hyperpod_cdk.config.node_setup import exporter_images

    return any(image.repository_arn() for image in exporter_images(cfg))


def volume_keys(cfg: EnvironmentConfig) -> bool:
    """A group encrypts its EBS volumes with a customer managed key."""
    return any(g.ebs_kms_key_arn for g in cfg.cluster.instance_groups)


def slurm_metrics(cfg: EnvironmentConfig) -> bool:
    """Slurm with observability on: the extension's metrics are remote-written by the nodes."""
    return cfg.is_slurm and cfg.observability_enabled


def rollback_alarms(cfg: EnvironmentConfig) -> bool:
    """A group's scheduled update or auto patch names rollback alarms."""
    return any(
        update.rollback_alarms
        for g in cfg.cluster.instance_groups
        for update in (g.scheduled_update, g.auto_patch)
        if update is not None
    )


def mounts_fsx(cfg: EnvironmentConfig) -> bool:
    """Slurm with an FSx for Lustre or FSx for OpenZFS file system (HyperPod mounts it)."""
    return cfg.is_slurm and (cfg.storage.fsx.enabled or cfg.storage.openzfs is not None)


def autoscaling_role(cfg: EnvironmentConfig) -> bool:
    """Karpenter autoscaling without a cluster role named in the config: the app makes it."""
    return cfg.cluster.auto_scaling and cfg.cluster.cluster_role_arn is None


@dataclass(frozen=True)
class Row:
    """One action of a role: granted by AWS's template (``aws``), granted here (``here``)."""

    action: str
    aws: bool
    here: bool
    scope: str = ""
    reason: str = ""
    when: Predicate | None = None
    when_text: str = ""

    def applies(self, cfg: EnvironmentConfig) -> bool:
        """Whether this project grants the action for ``cfg`` (False when ``here`` is)."""
        return self.here and (self.when is None or self.when(cfg))


@dataclass(frozen=True)
class Table:
    role: str
    title: str
    source: str | None  # the template's path in SOURCE_REPOSITORY; None: AWS has none
    rows: tuple[Row, ...]

    def row(self, action: str) -> Row | None:
        return next((r for r in self.rows if r.action == action), None)


# -- shared wording ----------------------------------------------------------------------------

_MANAGED = (
    "Attached as is: HyperPod requires it on every execution role (CloudWatch logs and metrics "
    "of the cluster, read of sagemaker-* buckets)."
)
_DESCRIBE = "All resources (ec2:Describe* has no resource-level permissions); read-only."
_CREATE_ENI = (
    "Only in the HyperPod subnets and the nodes' security groups of this environment (AWS: any "
    "subnet, group and VPC of the account)."
)
_IN_VPC = "Network interfaces in this VPC only (ec2:Vpc condition)."
_DETACH = "Interfaces and instances in this VPC only (ec2:Vpc condition); AWS: all resources."
_TAGS = (
    "Network interfaces only: on creation (ec2:CreateAction = CreateNetworkInterface) or in this "
    "VPC (ec2:Vpc condition); AWS: all resources."
)
_LIST = (
    "The lifecycle bucket, limited to the content-hashed prefix of the scripts (s3:prefix "
    "condition)."
)
_GET = "Objects under the lifecycle prefix only (bucket/prefix*)."
_NO_WRITE = (
    "The nodes only read their lifecycle scripts; the deploy uploads them, so the role has no "
    "write or delete in the bucket."
)
_ALARMS = (
    "Exactly the named alarms of this account and region (AWS: all alarms, always); a rolling "
    "update reads them."
)
_ALARMS_WHEN = "a group's scheduled update or auto patch names rollback alarms"
_VOLUME_KEYS = (
    "Extra: HyperPod creates a grant on the key for the nodes' EBS volumes; only the keys named "
    "in the config (an alias is matched through kms:ResourceAliases)."
)
_VOLUME_KEYS_WHEN = "a group sets ebs_kms_key_arn"


def _execution_role_extras(*, slurm: bool) -> tuple[Row, ...]:
    """Actions this project grants the execution role that AWS's templates do not."""
    rows = [
        Row(
            "kms:CreateGrant",
            False,
            True,
            _VOLUME_KEYS,
            when=volume_keys,
            when_text=_VOLUME_KEYS_WHEN,
        ),
        Row(
            "kms:DescribeKey",
            False,
            True,
            _VOLUME_KEYS,
            when=volume_keys,
            when_text=_VOLUME_KEYS_WHEN,
        ),
    ]
    if slurm:
        rows += [
            Row(
                "fsx:DescribeFileSystems",
                False,
                True,
                "Extra: HyperPod mounts the file system on the nodes; all resources (no "
                "resource-level permissions), read-only.",
                when=mounts_fsx,
                when_text="an FSx for Lustre or FSx for OpenZFS file system",
            ),
            Row(
                "secretsmanager:GetSecretValue",
                False,
                True,
                "Extra: exactly the accounting database's secret and the directory's bind "
                "password and CA certificate secrets, read at boot.",
                when=secret_read,
                when_text="the accounting database or directory users",
            ),
            Row(
                "secretsmanager:DescribeSecret",
                False,
                True,
                "Extra: the accounting database's secret only.",
                when=accounting_database,
                when_text="the accounting database (cluster.slurm.accounting_database)",
            ),
            Row(
                "kms:Decrypt",
                False,
                True,
                "Extra: the directory secrets' key, only through Secrets Manager of their region "
                "(kms:ViaService) and only for those secrets (kms:EncryptionContext:SecretARN).",
                when=directory_users,
                when_text="directory users (cluster.node_setup.directory)",
            ),
        ]
    return tuple(rows)


# -- Slurm -------------------------------------------------------------------------------------

_ECR_EXPORTERS = "an exporter whose image is in Amazon ECR (cluster.node_setup.exporters)"

SLURM_EXECUTION_ROLE = Table(
    role="slurm-execution-role",
    title="HyperPod execution role, Slurm",
    source=SLURM_TEMPLATE,
    rows=(
        Row(MANAGED_POLICY, True, True, _MANAGED),
        Row("ec2:CreateNetworkInterface", True, True, _CREATE_ENI),
        Row("ec2:CreateNetworkInterfacePermission", True, True, _IN_VPC),
        Row("ec2:DeleteNetworkInterface", True, True, _IN_VPC),
        Row("ec2:DeleteNetworkInterfacePermission", True, True, _IN_VPC),
        Row("ec2:DescribeNetworkInterfaces", True, True, _DESCRIBE),
        Row("ec2:DescribeVpcs", True, True, _DESCRIBE),
        Row("ec2:DescribeDhcpOptions", True, True, _DESCRIBE),
        Row("ec2:DescribeSubnets", True, True, _DESCRIBE),
        Row("ec2:DescribeSecurityGroups", True, True, _DESCRIBE),
        Row("ec2:CreateTags", True, True, _TAGS),
        Row("ec2:DetachNetworkInterface", True, True, _DETACH),
        Row("s3:ListBucket", True, True, _LIST),
        Row("s3:GetObject", True, True, _GET),
        Row("s3:PutObject", True, False, reason=_NO_WRITE),
        Row("s3:DeleteObject", True, False, reason=_NO_WRITE),
        Row(
            "cloudwatch:DescribeAlarms",
            False,
            True,
            "Extra (AWS's EKS role has it, its Slurm role not): " + _ALARMS,
            when=rollback_alarms,
            when_text=_ALARMS_WHEN,
        ),
        *_execution_role_extras(slurm=True),
        *(
            Row(
                action,
                False,
                True,
                "Extra: exactly the exporters' repositories (HyperPod's of the region or the "
                "configured ones).",
                when=exporter_image_pull,
                when_text=_ECR_EXPORTERS,
            )
            for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
        ),
        Row(
            "ecr:GetAuthorizationToken",
            False,
            True,
            "Extra: the registry login for the exporters' images; all resources (no "
            "resource-level permissions).",
            when=exporter_image_pull,
            when_text=_ECR_EXPORTERS,
        ),
        Row(
            "aps:RemoteWrite",
            False,
            True,
            "Extra: the sagemaker-observability extension on the nodes writes the metrics into "
            "the environment's Prometheus workspace, and only that one (docs/observability.md).",
            when=slurm_metrics,
            when_text="observability.enabled (the sagemaker-observability extension)",
        ),
    ),
)


# -- EKS ---------------------------------------------------------------------------------------

_CNI_IPS = "Instances and network interfaces of this VPC (ec2:Vpc condition; the VPC CNI)."
_ECR_ANY = (
    "All repositories: the EKS add-ons and HyperPod agents come from AWS-owned registries in "
    "other accounts; read-only."
)

EKS_EXECUTION_ROLE = Table(
    role="eks-execution-role",
    title="HyperPod execution role, EKS (node policy and EKS node policy)",
    source=EKS_TEMPLATE,
    rows=(
        Row(MANAGED_POLICY, True, True, _MANAGED),
        Row("ec2:AttachNetworkInterface", True, True, _CNI_IPS),
        Row("ec2:AssignPrivateIpAddresses", True, True, _CNI_IPS),
        Row("ec2:UnassignPrivateIpAddresses", True, True, _CNI_IPS),
        Row("ec2:CreateNetworkInterface", True, True, _CREATE_ENI),
        Row("ec2:CreateNetworkInterfacePermission", True, True, _IN_VPC),
        Row("ec2:DeleteNetworkInterface", True, True, _IN_VPC),
        Row("ec2:DeleteNetworkInterfacePermission", True, True, _IN_VPC),
        Row(
            "ec2:ModifyNetworkInterfaceAttribute",
            True,
            True,
            "Interfaces and instances in this VPC only (ec2:Vpc condition): the VPC CNI sets "
            "delete-on-termination on the secondary interfaces it attaches.",
        ),
        Row("ec2:DetachNetworkInterface", True, True, _DETACH),
        Row(
            "ec2:CreateTags",
            True,
            True,
            "Network interfaces of this account and region (the VPC CNI tags the interfaces it "
            "creates); AWS: network interfaces of any account and region.",
        ),
        Row("ec2:DescribeInstances", True, True, _DESCRIBE),
        Row("ec2:DescribeInstanceTypes", True, True, _DESCRIBE),
        Row("ec2:DescribeTags", True, True, _DESCRIBE),
        Row("ec2:DescribeNetworkInterfaces", True, True, _DESCRIBE),
        Row("ec2:DescribeSubnets", True, True, _DESCRIBE),
        Row("ec2:DescribeVpcs", True, True, _DESCRIBE),
        Row("ec2:DescribeDhcpOptions", True, True, _DESCRIBE),
        Row("ec2:DescribeSecurityGroups", True, True, _DESCRIBE),
        Row("ecr:BatchCheckLayerAvailability", True, True, _ECR_ANY),
        Row("ecr:BatchGetImage", True, True, _ECR_ANY),
        Row("ecr:GetDownloadUrlForLayer", True, True, _ECR_ANY),
        Row(
            "ecr:GetAuthorizationToken",
            True,
            True,
            "All resources (no resource-level permissions).",
        ),
        Row(
            "eks-auth:AssumeRoleForPodIdentity",
            True,
            True,
            "This environment's EKS cluster only (pods with an EKS Pod Identity association).",
        ),
        Row("s3:ListBucket", True, True, _LIST),
        Row("s3:GetObject", True, True, _GET + " (AWS also reads an optional second RIG bucket.)"),
        Row(
            "cloudwatch:DescribeAlarms",
            True,
            True,
            _ALARMS,
            when=rollback_alarms,
            when_text=_ALARMS_WHEN,
        ),
        *_execution_role_extras(slurm=False),
        Row(
            "fsx:DescribeFileSystems",
            False,
            False,
            reason="On EKS HyperPod does not mount the file system; pods use it through the FSx "
            "CSI driver, which has its own role.",
        ),
    ),
)


# -- autoscaling (Karpenter) cluster role --------------------------------------------------------

_SCALE = "HyperPod clusters of this account and region (the role cannot name its own cluster's id)."
_SCALE_KEYS = (
    "Keys of this account and region, only through SageMaker (kms:ViaService) and only for AWS "
    "resources (kms:GrantIsForAWSResource)."
)
_NO_TEMPLATE = "Not in AWS's repository: from the HyperPod user guide (autoscaling with Karpenter)."

AUTOSCALING_CLUSTER_ROLE = Table(
    role="autoscaling-cluster-role",
    title="Autoscaling (Karpenter) cluster role, EKS",
    source=None,
    rows=tuple(
        Row(
            action,
            False,
            True,
            f"{scope} {_NO_TEMPLATE}",
            when=autoscaling_role,
            when_text="cluster.auto_scaling without cluster.cluster_role_arn",
        )
        for action, scope in (
            ("sagemaker:BatchAddClusterNodes", _SCALE),
            ("sagemaker:BatchDeleteClusterNodes", _SCALE),
            ("kms:CreateGrant", _SCALE_KEYS),
            ("kms:DescribeKey", _SCALE_KEYS),
        )
    ),
)

TABLES: tuple[Table, ...] = (SLURM_EXECUTION_ROLE, EKS_EXECUTION_ROLE, AUTOSCALING_CLUSTER_ROLE)


def table(role: str) -> Table:
    """The table of ``role`` ("slurm-execution-role", "eks-execution-role", ...)."""
    for found in TABLES:
        if found.role == role:
            return found
    raise KeyError(role)

"""The IAM role HyperPod nodes run as."""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_cdk.compliance.nag import acknowledge, nag_account, nag_partition, nag_ref, nag_region

# The AWS managed policy every HyperPod node role needs (HyperPod prerequisites,
# "IAM role for SageMaker HyperPod").
CLUSTER_INSTANCE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"


class ExecutionRole(Construct):
    """The execution role of HyperPod instance groups: the managed policy plus
    exactly what the nodes need.

    - ENI management in the HyperPod subnets and security groups (HyperPod
      attaches the nodes' network interfaces, EFA ones included, in your VPC);
    - ``fsx:DescribeFileSystems`` when a file system is mounted;
    - read of the lifecycle scripts: ``s3:ListBucket`` on the bucket limited to
      the prefix, ``s3:GetObject`` on ``bucket/prefix*`` (the managed policy
      only covers buckets named ``sagemaker-*``);
    - with ``directory_secret_arns``: ``secretsmanager:GetSecretValue`` on exactly those
      secrets, and ``kms:Decrypt`` only through Secrets Manager of their region and only for
      them (``kms:ViaService``, ``kms:EncryptionContext:SecretARN``), whichever key encrypts
      them.

    Use :meth:`grant_secret_read` for the accounting database secret.

    To use an existing role instead, skip this construct and pass its ARN to
    :class:`~hyperpod_cdk.cluster.HyperPodCluster` (``execution_role_arn``); it
    needs the same permissions.

    :param vpc: the VPC of the nodes (scopes ENI deletion by ``ec2:Vpc``).
    :param subnets: the HyperPod subnets.
    :param security_groups: the groups put on the nodes.
    :param mounts_fsx: grant ``fsx:DescribeFileSystems`` (True when left out).
    :param directory_secret_arns: Secrets Manager secrets the nodes read at boot (the
        directory's bind password and CA certificate, ``cluster.node_setup.directory``); none
        when left out.
    :param role_path: IAM path of the role; ``/`` when left out.
    :param permissions_boundary: a managed policy set as permissions boundary;
        none when left out.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        security_groups: Sequence[ec2.ISecurityGroup],
        mounts_fsx: bool = True,
        directory_secret_arns: Sequence[str] = (),
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="HyperPod cluster nodes",
            path=role_path,
            permissions_boundary=permissions_boundary,
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(CLUSTER_INSTANCE_POLICY)
            ],
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{CLUSTER_INSTANCE_POLICY}]",
            "HyperPod requires this AWS managed policy on every node execution role (HyperPod prerequisites); "
            "it covers the cluster's CloudWatch logs and metrics and the sagemaker-* buckets only.",
        )

        def arn(resource: str) -> str:
            return stack.format_arn(service="ec2", resource=resource, resource_name="*")

        eni_arn = arn("network-interface")
        in_vpc = {
            "ArnEquals": {
                "ec2:Vpc": stack.format_arn(service="ec2", resource="vpc", resource_name=vpc.vpc_id)
            }
        }
        self._vpc_id = vpc.vpc_id
        policy = iam.ManagedPolicy(self, "NodePolicy")
        policy.add_statements(
            iam.PolicyStatement(
                sid="DescribeNetwork",
                actions=[
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeVpcs",
                ],
                resources=["*"],
            ),
            iam.PolicyStatement(
                sid="CreateNodeInterfaces",
                actions=["ec2:CreateNetworkInterface"],
                resources=[
                    eni_arn,
                    *(
                        stack.format_arn(
                            service="ec2", resource="subnet", resource_name=s.subnet_id
                        )
                        for s in subnets
                    ),
                    *(
                        stack.format_arn(
                            service="ec2",
                            resource="security-group",
                            resource_name=g.security_group_id,
                        )
                        for g in security_groups
                    ),
                ],
            ),
            iam.PolicyStatement(
                sid="ManageNodeInterfacesInVpc",
                actions=[
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                    # tags on interfaces that already exist (AWS's execution role templates
                    # grant it beside CreateNetworkInterface's tag-on-create)
                    "ec2:CreateTags",
                ],
                resources=[eni_arn],
                conditions=in_vpc,
            ),
            # HyperPod detaches a node's interfaces when it replaces or removes the node (AWS's
            # execution role templates grant it); the instance and the interface are both
            # resources of the call. ec2:Vpc is a condition key of the interface only (the
            # Service Authorization Reference, as cfn-lint's Policies.json holds it): on the
            # instance it is absent and ArnEquals would deny, so the instance has a statement of
            # its own and the interface's statement keeps the call in this VPC
            iam.PolicyStatement(
                sid="DetachNodeInterfacesInVpc",
                actions=["ec2:DetachNetworkInterface"],
                resources=[eni_arn],
                conditions=in_vpc,
            ),
            iam.PolicyStatement(
                sid="DetachFromNodes",
                actions=["ec2:DetachNetworkInterface"],
                resources=[arn("instance")],
            ),
            iam.PolicyStatement(
                sid="TagNewInterfaces",
                actions=["ec2:CreateTags"],
                resources=[eni_arn],
                conditions={"StringEquals": {"ec2:CreateAction": "CreateNetworkInterface"}},
            ),
        )
        if mounts_fsx:
            policy.add_statements(
                iam.PolicyStatement(
                    sid="DescribeFileSystems", actions=["fsx:DescribeFileSystems"], resources=["*"]
                )
            )
        policy.attach_to_role(self.role)
        self.policy = policy
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ec2:Describe* and fsx:DescribeFileSystems do not support resource-level permissions "
            "(Service Authorization Reference); they are read-only.",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:ec2:{nag_region(self)}:{nag_account(self)}"
            ":network-interface/*]",
            "HyperPod creates the node network interfaces, so their ids are unknown in advance; creation is "
            "limited to the HyperPod subnets and groups, and deletion, tagging and detaching to interfaces "
            "in this VPC.",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:ec2:{nag_region(self)}:{nag_account(self)}"
            ":instance/*]",
            "HyperPod launches the nodes, so their instance ids are unknown in advance; only "
            "ec2:DetachNetworkInterface, and only for instances in this VPC (ec2:Vpc condition).",
        )
        self.directory_policy = self._read_directory_secrets(directory_secret_arns)

    def _read_directory_secrets(self, secret_arns: Sequence[str]) -> iam.ManagedPolicy | None:
        """Read of exactly these secrets, and decryption of them through Secrets Manager only."""
        arns = list(dict.fromkeys(secret_arns))
        if not arns:
            return None
        endpoints = set()
        for arn in arns:
            _, partition, _, region, _ = arn.split(":", 4)
            suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
            endpoints.add(f"secretsmanager.{region}.{suffix}")
        via: str | list[str] = endpoints.pop() if len(endpoints) == 1 else sorted(endpoints)
        policy = iam.ManagedPolicy(
            self,
            "DirectorySecrets",
            statements=[
                iam.PolicyStatement(
                    sid="ReadDirectorySecrets",
                    actions=["secretsmanager:GetSecretValue"],
                    resources=arns,
                ),
                # Secrets Manager decrypts a secret with its key (aws/secretsmanager or a customer
                # key, which may sit in another account) on the caller's behalf, with the secret's
                # ARN as encryption context (Secrets Manager user guide, "Secret encryption and
                # decryption")
                iam.PolicyStatement(
                    sid="DecryptDirectorySecrets",
                    actions=["kms:Decrypt"],
                    resources=["*"],
                    conditions={
                        "StringEquals": {
                            "kms:ViaService": via,
                            "kms:EncryptionContext:SecretARN": arns,
                        }
                    },
                ),
            ],
        )
        policy.attach_to_role(self.role)
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "kms:Decrypt of the directory secrets' key, which the app does not know (AWS managed or "
            "customer managed, possibly in another account): only through Secrets Manager of the "
            "secrets' region (kms:ViaService) and only for these two secrets "
            "(kms:EncryptionContext:SecretARN).",
        )
        return policy

    def grant_lifecycle_read(self, bucket: s3.IBucket, prefix: str) -> None:
        """Let the nodes list ``prefix`` in the bucket and read the objects below it."""
        bucket_arn = bucket.bucket_arn
        policy = iam.ManagedPolicy(
            self,
            "LifecycleRead",
            statements=[
                iam.PolicyStatement(
                    sid="ListLifecyclePrefix",
                    actions=["s3:ListBucket"],
                    resources=[bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
                ),
                iam.PolicyStatement(
                    sid="ReadLifecycleScripts",
                    actions=["s3:GetObject"],
                    resources=[f"{bucket_arn}/{prefix}*"],
                ),
            ],
        )
        policy.attach_to_role(self.role)
        cfn_bucket = bucket.node.default_child
        if isinstance(cfn_bucket, cdk.CfnResource):
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{nag_ref(cfn_bucket, 'Arn')}/{prefix}*]",
                "Read-only access to the objects under the content-hashed lifecycle prefix the cluster "
                "boots from, and nothing else in the bucket.",
            )
        self.lifecycle_policy = policy

    def grant_volume_keys(self, key_arns: Sequence[str]) -> iam.ManagedPolicy | None:
        """Let HyperPod encrypt the nodes' EBS volumes with customer managed keys: the execution
        role needs ``kms:CreateGrant`` (HyperPod creates a grant for the volumes whenever it adds
        or patches nodes) and ``kms:DescribeKey`` on each key (SageMaker developer guide,
        "Customer managed AWS KMS key encryption for SageMaker HyperPod"). An alias ARN is
        matched through ``kms:ResourceAliases`` on this account's keys of its region. None when
        no key is given."""
        keys = sorted({k for k in key_arns if ":alias/" not in k})
        aliases = sorted({k for k in key_arns if ":alias/" in k})
        if not keys and not aliases:
            return None
        actions = ["kms:CreateGrant", "kms:DescribeKey"]
        statements = []
        if keys:
            statements.append(
                iam.PolicyStatement(sid="GrantsForNodeVolumes", actions=actions, resources=keys)
            )
        for index, alias in enumerate(aliases):
            _, _, _, region, account, resource = alias.split(":", 5)
            statements.append(
                iam.PolicyStatement(
                    sid=f"GrantsForNodeVolumesByAlias{index}",
                    actions=actions,
                    resources=[f"arn:{alias.split(':')[1]}:kms:{region}:{account}:key/*"],
                    conditions={"ForAnyValue:StringEquals": {"kms:ResourceAliases": resource}},
                )
            )
        policy = iam.ManagedPolicy(self, "VolumeKeys", statements=statements)
        policy.attach_to_role(self.role)
        for alias in aliases:
            _, _, _, region, account, _ = alias.split(":", 5)
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::arn:{alias.split(':')[1]}:kms:{region}:{account}:key/*]",
                "The config names the EBS key by alias: only keys that carry that alias "
                "(kms:ResourceAliases), for creating the volume grant and describing the key.",
            )
        self.volume_keys_policy = policy
        return policy

    def grant_image_pull(self, repository_arns: Sequence[str]) -> iam.ManagedPolicy | None:
        """Let the nodes pull images from exactly these Amazon ECR repositories (the exporters'
        images, ``cluster.node_setup.exporters``): ``ecr:BatchGetImage`` and
        ``ecr:GetDownloadUrlForLayer`` on them, and ``ecr:GetAuthorizationToken`` for the registry
        login, which has no resource form. The repositories may be another account's (HyperPod's
        regional registry): its repository policy must let this account pull too. None when no
        repository is given."""
        arns = list(dict.fromkeys(repository_arns))
        if not arns:
            return None
        policy = iam.ManagedPolicy(
            self,
            "ImagePull",
            statements=[
                iam.PolicyStatement(
                    sid="PullImages",
                    actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                    resources=arns,
                ),
                iam.PolicyStatement(
                    sid="RegistryLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]
                ),
            ],
        )
        policy.attach_to_role(self.role)
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource-level permissions (Service Authorization "
            "Reference, Amazon ECR): it only issues the registry login token; the images the "
            "nodes may pull are limited to the exporters' repositories (ecr:BatchGetImage, "
            "ecr:GetDownloadUrlForLayer).",
        )
        return policy

    def grant_describe_alarms(self, alarm_names: Sequence[str]) -> iam.ManagedPolicy | None:
        """Let HyperPod read the rollback alarms of the groups' rolling updates
        (``scheduled_update`` / ``auto_patch`` ``rollback_alarms``): ``cloudwatch:DescribeAlarms``
        on exactly those alarms of this account and region. None when no alarm is named."""
        names = sorted(dict.fromkeys(alarm_names))
        if not names:
            return None
        stack = cdk.Stack.of(self)
        policy = iam.ManagedPolicy(
            self,
            "RollbackAlarms",
            statements=[
                iam.PolicyStatement(
                    sid="ReadRollbackAlarms",
                    actions=["cloudwatch:DescribeAlarms"],
                    resources=[
                        stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name=name,
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                        for name in names
                    ],
                )
            ],
        )
        policy.attach_to_role(self.role)
        return policy

    def grant_secret_read(
        self, secret_arn: str, scope: Construct | None = None
    ) -> iam.ManagedPolicy:
        """Let the nodes read one Secrets Manager secret (the accounting database credentials).

        The policy is created in ``scope`` (default: this construct), e.g. the
        stack that owns the secret's consumer, so the role's stack need not
        wait for the secret.
        """
        policy = iam.ManagedPolicy(
            scope or self,
            "AccountingSecretRead",
            statements=[
                iam.PolicyStatement(
                    sid="ReadAccountingSecret",
                    actions=["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
                    resources=[secret_arn],
                )
            ],
        )
        policy.attach_to_role(self.role)
        return policy

    def grant_eks_node(
        self, eks_cluster_arn: str, scope: Construct | None = None
    ) -> iam.ManagedPolicy:
        """What a node of an EKS-orchestrated cluster needs on top of the managed policy.

        - the Amazon VPC CNI, which runs with the node's credentials on HyperPod:
          describe calls, secondary IPs and interface attachment, tags on the
          interfaces it creates;
        - pulling images from Amazon ECR (the EKS add-ons and HyperPod agents
          are in AWS-owned registries of the region);
        - ``eks-auth:AssumeRoleForPodIdentity`` on the cluster, so pods with an
          EKS Pod Identity association get their role.

        (HyperPod user guide "IAM role for SageMaker HyperPod", Amazon EKS
        section.) The policy is created in ``scope`` (default: this construct),
        e.g. the stack that knows the cluster, so the role's stack need not
        wait for the EKS cluster.
        """
        stack = cdk.Stack.of(scope or self)

        def arn(resource: str) -> str:
            return stack.format_arn(service="ec2", resource=resource, resource_name="*")

        in_vpc = {
            "ArnEquals": {
                "ec2:Vpc": stack.format_arn(
                    service="ec2", resource="vpc", resource_name=self._vpc_id
                )
            }
        }
        policy = iam.ManagedPolicy(
            scope or self,
            "EksNodePolicy",
            statements=[
                iam.PolicyStatement(
                    sid="CniDescribe",
                    actions=[
                        "ec2:DescribeInstances",
                        "ec2:DescribeInstanceTypes",
                        "ec2:DescribeNetworkInterfaces",
                        "ec2:DescribeSubnets",
                        "ec2:DescribeTags",
                    ],
                    resources=["*"],
                ),
                # interfaces in this VPC only, as the modify below (docs/security.md, L10: without
                # it a pod with the node's credentials could attach another VPC's interface to a
                # node or strip other workloads' addresses). ec2:Vpc is a condition key of the
                # interface, not of the instance (Service Authorization Reference, cfn-lint's
                # Policies.json): the instance side of AttachNetworkInterface has its own
                # statement, and the call still needs the interface's, in this VPC
                iam.PolicyStatement(
                    sid="CniInterfaces",
                    actions=[
                        "ec2:AssignPrivateIpAddresses",
                        "ec2:AttachNetworkInterface",
                        "ec2:UnassignPrivateIpAddresses",
                    ],
                    resources=[arn("network-interface")],
                    conditions=in_vpc,
                ),
                iam.PolicyStatement(
                    sid="CniAttachToNodes",
                    actions=["ec2:AttachNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute"],
                    resources=[arn("instance")],
                ),
                iam.PolicyStatement(
                    sid="CniTagInterfaces",
                    actions=["ec2:CreateTags"],
                    resources=[arn("network-interface")],
                ),
                # the CNI sets delete-on-termination on the secondary interfaces it attaches
                # (without it, pods per node stay within the first interface's addresses); its
                # detach is the node policy's DetachNodeInterfacesInVpc; both in this VPC only
                iam.PolicyStatement(
                    sid="CniModifyInterfacesInVpc",
                    actions=["ec2:ModifyNetworkInterfaceAttribute"],
                    resources=[arn("network-interface")],
                    conditions=in_vpc,
                ),
                iam.PolicyStatement(
                    sid="PullImages",
                    actions=[
                        "ecr:BatchCheckLayerAvailability",
                        "ecr:BatchGetImage",
                        "ecr:GetAuthorizationToken",
                        "ecr:GetDownloadUrlForLayer",
                    ],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="PodIdentity",
                    actions=["eks-auth:AssumeRoleForPodIdentity"],
                    resources=[eks_cluster_arn],
                ),
            ],
        )
        policy.attach_to_role(self.role)
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ec2:Describe* and ecr:GetAuthorizationToken have no resource-level permissions; image pulls "
            "come from AWS-owned ECR registries in other accounts (EKS add-ons, HyperPod agents), so the "
            "repositories cannot be listed in advance. All are read-only.",
        )
        for resource in ("instance", "network-interface"):
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::arn:{nag_partition(stack)}:ec2:{nag_region(stack)}:"
                f"{nag_account(stack)}:{resource}/*]",
                "The VPC CNI manages secondary IPs and interfaces of the HyperPod nodes, whose instance and "
                "interface ids HyperPod assigns at launch; limited to this account and region.",
            )
        return policy

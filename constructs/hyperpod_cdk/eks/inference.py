"""The HyperPod inference operator in one switch (``eks.addons.inference``).

:class:`HyperPodInference` installs the ``amazon-sagemaker-hyperpod-inference`` EKS add-on with
what AWS documents it needs (SageMaker developer guide, "Setting up your HyperPod clusters for
model deployment", sagemaker-hyperpod-model-deployment-setup, read 2026-11-25), in this order:

1. the dependency add-ons, at or above their minimum builds (``versions.MINIMUM_VERSIONS``):
   Mountpoint for S3 CSI driver, metrics-server, cert-manager (the training operator's when it
   has one: one cert-manager per cluster), the FSx CSI driver (HyperPodEksAddons');
2. the cluster's IAM OIDC provider (created for a cluster the app creates; named in the config
   for an adopted one) and the IRSA roles, each trusted by exactly one service account
   (``sub``) for the STS audience (``aud``) of that provider;
3. the TLS certificate bucket (or an existing one);
4. the inference add-on, configured with the roles, the bucket and the HyperPod cluster ARN,
   after all of the above and after the task governance add-on when there is one (the
   operator's add-on fails to create while Kueue's webhooks have no endpoints).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IDependable

from hyperpod_cdk.compliance.nag import acknowledge, nag_account, nag_partition, nag_ref
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.config.inference import (
    TLS_BUCKET_PREFIX,
    InferenceSettings,
    default_tls_bucket_name,
    operator_role_name,
)
from hyperpod_cdk.eks.addons import (
    CERT_MANAGER,
    CERT_MANAGER_VALUES,
    FSX_CSI_DRIVER,
    HyperPodEksAddons,
    _nag_arn,
)
from hyperpod_cdk.eks.cluster import pinned_addon
from hyperpod_cdk.facts.addon_values import inference_values, metrics_server_values
from hyperpod_cdk.storage.data_bucket import access_log_bucket, secure_bucket_props

INFERENCE = "amazon-sagemaker-hyperpod-inference"
S3_CSI_DRIVER = "aws-mountpoint-s3-csi-driver"
METRICS_SERVER = "metrics-server"

# The audience EKS's OIDC issuer puts in the tokens of IAM roles for service accounts.
STS_AUDIENCE = "sts.amazonaws.com"
OPERATOR_NAMESPACE = "hyperpod-inference-system"


@dataclass(frozen=True)
class ServiceAccountFact:
    """Who assumes one of the roles, what AWS grants it, and where AWS says so."""

    namespace: str
    service_account: str
    managed_policy: str | None
    source: str


# Every service account a role here trusts, with the permissions AWS documents for it (read
# 2026-11-25). "setup" is the SageMaker developer guide page sagemaker-hyperpod-model-deployment-
# setup; "roles template" is aws/sagemaker-hyperpod-cluster-setup@3bee904
# eks/cloudformation/inference-addon-iam-roles-template.yaml.
SERVICE_ACCOUNTS: dict[str, ServiceAccountFact] = {
    "operator": ServiceAccountFact(
        OPERATOR_NAMESPACE,
        "hyperpod-inference-controller-manager",
        "AmazonSageMakerHyperPodInferenceAccess",
        "setup, Configure IAM roles for inference operator (also trusted by sagemaker.amazonaws.com)",
    ),
    "alb": ServiceAccountFact(
        OPERATOR_NAMESPACE,
        "aws-load-balancer-controller",
        None,  # the AWS Load Balancer Controller's own policy (v2.13.0 iam_policy.json)
        "setup, Create the ALB Controller role; roles template AlbControllerPolicy",
    ),
    "keda": ServiceAccountFact(
        OPERATOR_NAMESPACE,
        "keda-operator",
        None,  # CloudWatch and Amazon Managed Prometheus reads
        "setup, Create the KEDA operator role",
    ),
    "gated": ServiceAccountFact(
        "*",  # the namespaces of the models (gated_models.namespaces narrows it)
        "hyperpod-inference-service-account*",
        "AmazonSageMakerHyperPodGatedModelAccess",
        "setup, gated models role (StringLike; also trusted by sagemaker.amazonaws.com)",
    ),
    "gateway": ServiceAccountFact(
        OPERATOR_NAMESPACE,
        "inference-gateway-controller",
        "AmazonSageMakerHyperPodInferenceGatewayAccess",
        "SageMaker developer guide, sagemaker-hyperpod-model-deployment-inference-gateway, Set "
        "up the certificate issuer IAM role",
    ),
    "s3_csi": ServiceAccountFact(
        "kube-system",
        "s3-csi-driver-sa",
        None,  # Mountpoint's bucket and object actions, on the named buckets only
        "roles template S3CsiDriverRole; EKS user guide, Mountpoint for Amazon S3 CSI driver",
    ),
}

# The Mountpoint for S3 CSI driver's permissions (EKS user guide, "Mountpoint for Amazon S3 CSI
# driver": ListBucket on the bucket; Get/Put/AbortMultipartUpload/DeleteObject on its objects),
# which AWS's console stack grants on every bucket (arn:aws:s3:::*); here on the named ones.
S3_BUCKET_ACTIONS = ("s3:ListBucket",)
S3_OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject")

# The tags the AWS Load Balancer Controller puts on what it creates, and keys its policy on.
_ELB_CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def _subject(fact: ServiceAccountFact, namespace: str | None = None) -> str:
    return f"system:serviceaccount:{namespace or fact.namespace}:{fact.service_account}"


class HyperPodInference(Construct):
    """The HyperPod inference operator add-on with everything it needs (module docstring).

    :param addons: the environment's :class:`HyperPodEksAddons` (same stack): its cert-manager
        and FSx CSI driver add-ons are used, not duplicated; the FSx CSI driver must be on.
    :param settings: ``eks.addons.inference``.
    :param environment_name: names the TLS bucket the app creates.
    :param hyperpod_cluster_arn: the HyperPod cluster the operator serves.
    :param oidc_issuer_url: a cluster the app creates: its OIDC issuer URL (``https://...``);
        an IAM OIDC provider is created for it.
    :param oidc_provider_arn: an adopted cluster: its existing IAM OIDC provider.
    :param data_bucket: the environment's data bucket (the S3 CSI driver may use it).
    :param data_bucket_key: its KMS key.
    :param task_governance: the task governance add-on, which the inference add-on waits for.
    :param role_path: IAM path of the roles.
    :param permissions_boundary: permissions boundary of the roles.
    :param shared_cluster: the cluster is adopted (see HyperPodEksAddons).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        addons: HyperPodEksAddons,
        settings: InferenceSettings,
        environment_name: str,
        hyperpod_cluster_arn: str,
        oidc_issuer_url: str | None = None,
        oidc_provider_arn: str | None = None,
        data_bucket: s3.IBucket | None = None,
        data_bucket_key: kms.IKey | None = None,
        task_governance: eks.CfnAddon | None = None,
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
        shared_cluster: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        if (oidc_issuer_url is None) == (oidc_provider_arn is None):
            raise ValueError(
                "HyperPodInference takes exactly one of oidc_issuer_url (a cluster the app "
                "creates: its provider is created) or oidc_provider_arn (an adopted cluster's "
                "existing provider)"
            )
        fsx_driver = addons.addons.get(FSX_CSI_DRIVER)
        if fsx_driver is None:
            raise ValueError(
                "eks.addons.inference needs the FSx CSI driver add-on; HyperPodEksAddons made none "
                "(eks.addons.fsx_csi_driver: false?)"
            )
        self._cluster_name = addons.cluster_name
        self._kubernetes_version = addons.kubernetes_version
        self._shared_cluster = shared_cluster
        self._role_path = role_path
        self._permissions_boundary = permissions_boundary
        self.settings = settings
        self.addons: dict[str, eks.CfnAddon] = {}
        """The add-ons this construct created, by name (cert-manager only when it made it)."""
        self.roles: dict[str, iam.Role] = {}
        """The IRSA roles, by the keys of :data:`SERVICE_ACCOUNTS`."""
        self.policies: dict[str, iam.ManagedPolicy] = {}

        # -- 1. the dependency add-ons
        s3_csi = self._addon("S3CsiDriver", S3_CSI_DRIVER)
        metrics = self._addon(
            "MetricsServer", METRICS_SERVER, configuration=metrics_server_values()
        )
        cert_manager = addons.addons.get(CERT_MANAGER) or self._addon(
            "CertManager", CERT_MANAGER, configuration=CERT_MANAGER_VALUES
        )

        # -- 2. the OIDC provider and the roles
        self.oidc_provider: iam.IOidcProvider | iam.IOpenIdConnectProvider
        if oidc_issuer_url is not None:
            provider = iam.OidcProviderNative(
                self, "OidcProvider", url=oidc_issuer_url, client_ids=[STS_AUDIENCE]
            )
            self.oidc_provider = provider
            self._provider_arn = provider.oidc_provider_arn
            self._issuer = provider.oidc_provider_issuer
        else:
            assert oidc_provider_arn is not None
            self.oidc_provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
                self, "OidcProvider", oidc_provider_arn
            )
            self._provider_arn = oidc_provider_arn
            self._issuer = oidc_provider_arn.split(":oidc-provider/", 1)[1]

        self.tls_bucket = self._tls_bucket(settings, environment_name)
        tls_name = self.tls_bucket.bucket_name

        # named SageMakerHyperPodInference-... at the path /, whatever iam.role_path says: the
        # add-on refuses another name and the operator's managed policy passes no other role
        # (config/inference.py OPERATOR_ROLE_PREFIX)
        region = cdk.Stack.of(self).region
        if cdk.Token.is_unresolved(region):
            raise ValueError(
                "HyperPodInference needs a stack with a concrete region: the operator's role is "
                "named SageMakerHyperPodInference-<environment>-<region> (at most 64 characters)"
            )
        operator = self._role(
            "operator",
            "HyperPod inference operator (IRSA)",
            sagemaker=True,
            role_name=operator_role_name(environment_name, region),
        )
        self._aws_managed(
            operator,
            "operator",
            "AWS's policy for the inference operator (SageMaker developer guide, inference "
            "operator setup), kept current by AWS as the operator's needs change (v3.0 added "
            "tagging); the role is trusted by the operator's one service account only.",
        )
        if settings.tls_bucket is not None and not settings.tls_bucket.startswith(
            TLS_BUCKET_PREFIX
        ):
            self._tls_access(operator, settings.tls_bucket)
        # an existing controller (eks.addons.inference.alb_controller / keda: existing) brings
        # its own permissions: the add-on installs none, so no role is made for it
        if settings.installs_alb_controller:
            self._alb_role()
        if settings.installs_keda:
            self._keda_role()
        gated = None
        if settings.gated_models_enabled:
            gated = self._role(
                "gated",
                "HyperPod inference: JumpStart gated model download (IRSA)",
                sagemaker=True,
                namespaces=settings.gated_model_namespaces,
            )
            self._aws_managed(
                gated,
                "gated",
                "AWS's policy for downloading JumpStart gated models (SageMaker developer guide, "
                "inference operator setup); the role is trusted by model service accounts only.",
            )
        gateway = None
        if settings.gateway:
            gateway = self._role("gateway", "HyperPod Inference Gateway certificate issuer (IRSA)")
            self._aws_managed(
                gateway,
                "gateway",
                "AWS's policy for the Inference Gateway's certificate issuer: the ACM import, "
                "tag, describe and delete of the certificates it creates (Inference Gateway "
                "guide); trusted by the gateway controller's service account only.",
            )
        self._s3_csi_role(s3_csi, data_bucket, data_bucket_key, settings.s3_buckets)

        # -- 4. the inference add-on
        configuration = inference_values(
            execution_role_arn=operator.role_arn,
            tls_bucket=tls_name,
            hyperpod_cluster_arn=hyperpod_cluster_arn,
            alb_role_arn=self.roles["alb"].role_arn if "alb" in self.roles else None,
            keda_role_arn=self.roles["keda"].role_arn if "keda" in self.roles else None,
            gateway_role_arn=gateway.role_arn if gateway is not None else None,
            gated_model_role_arn=gated.role_arn if gated is not None else None,
        )
        self.configuration = configuration
        inference = self._addon("Inference", INFERENCE, configuration=configuration)
        for dependency in (s3_csi, metrics, cert_manager, fsx_driver):
            inference.add_resource_dependency(dependency)
        if task_governance is not None:
            # the operator's webhooks fail to register while Kueue's have no endpoints
            inference.add_resource_dependency(task_governance)
        for construct in (*self.roles.values(), *self.policies.values()):
            inference.node.add_dependency(construct)
        inference.node.add_dependency(self.tls_bucket)
        self.inference_addon = inference

    # -- public ---------------------------------------------------------------------------

    def wait_for(self, *dependencies: IDependable) -> None:
        """Make the add-ons created here wait for ``dependencies`` (the HyperPod nodes)."""
        for addon in self.addons.values():
            for dependency in dependencies:
                addon.node.add_dependency(dependency)

    # -- building blocks ------------------------------------------------------------------

    def _addon(
        self, construct_id: str, name: str, *, configuration: dict[str, Any] | None = None
    ) -> eks.CfnAddon:
        addon = pinned_addon(
            self,
            construct_id,
            cluster_name=self._cluster_name,
            name=name,
            kubernetes_version=self._kubernetes_version,
            configuration=configuration,
            shared_cluster=self._shared_cluster,
        )
        self.addons[name] = addon
        return addon

    def _trust_document(
        self, subjects: Sequence[str], *, like: bool, sagemaker: bool
    ) -> dict[str, Any]:
        """The trust policy: the web identity of ``subjects`` through this cluster's provider, for
        the STS audience; and SageMaker when asked. Condition keys name the issuer, a token on a
        created cluster, so the document goes to CloudFormation as a Fn::Sub string (no
        CfnJson custom resource)."""
        subject: str | list[str] = subjects[0] if len(subjects) == 1 else list(subjects)
        statements: list[dict[str, Any]] = []
        if sagemaker:
            statements.append(
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sagemaker.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            )
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"Federated": "${ProviderArn}"},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    # aud is always an exact match; sub only where AWS's subject has a wildcard
                    "StringEquals": {"${Issuer}:aud": STS_AUDIENCE}
                    | ({} if like else {"${Issuer}:sub": subject}),
                    **({"StringLike": {"${Issuer}:sub": subject}} if like else {}),
                },
            }
        )
        return {"Version": "2012-10-17", "Statement": statements}

    def _role(
        self,
        key: str,
        description: str,
        *,
        sagemaker: bool = False,
        namespaces: Sequence[str] | None = None,
        role_name: str | None = None,
    ) -> iam.Role:
        """An IRSA role trusted by ``key``'s service account; ``role_name``: a fixed name at the
        path ``/`` (a name AWS's policies match), else a generated one under the role path."""
        fact = SERVICE_ACCOUNTS[key]
        if namespaces:
            subjects = [_subject(fact, namespace) for namespace in namespaces]
        else:
            subjects = [_subject(fact)]
        like = "*" in "".join(subjects)
        role = iam.Role(
            self,
            f"{key.title().replace('_', '')}Role",
            # replaced below by the exact document; the L2 needs a principal
            assumed_by=iam.FederatedPrincipal(
                self._provider_arn, {}, "sts:AssumeRoleWithWebIdentity"
            ),
            description=description,
            role_name=role_name,
            path="/" if role_name is not None else self._role_path,
            permissions_boundary=self._permissions_boundary,
        )
        document = self._trust_document(subjects, like=like, sagemaker=sagemaker)
        cfn_role = role.node.default_child
        assert isinstance(cfn_role, iam.CfnRole)
        cfn_role.add_property_override(
            "AssumeRolePolicyDocument",
            cdk.Fn.sub(
                json.dumps(document, separators=(",", ":")),
                {"ProviderArn": self._provider_arn, "Issuer": self._issuer},
            ),
        )
        if role_name is not None:
            # an override, which wins over the stack's RolePath aspect (iam.role_path): AWS's
            # policy matches role/SageMakerHyperPodInference* only, with no path
            cfn_role.add_property_override("Path", "/")
        self.roles[key] = role
        return role

    def _policy(self, key: str, statements: list[iam.PolicyStatement]) -> iam.ManagedPolicy:
        policy = iam.ManagedPolicy(
            self, f"{key.title().replace('_', '')}Policy", statements=statements
        )
        policy.attach_to_role(self.roles[key])
        self.policies[key] = policy
        return policy

    # -- the TLS bucket -------------------------------------------------------------------

    def _tls_bucket(self, settings: InferenceSettings, environment_name: str) -> s3.IBucket:
        if settings.tls_bucket is not None:
            return s3.Bucket.from_bucket_name(self, "TlsBucket", settings.tls_bucket)
        stack = cdk.Stack.of(self)
        logs = access_log_bucket(
            self,
            "TlsBucketAccessLogs",
            logged="inference TLS certificate bucket",
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        bucket = s3.Bucket(
            self,
            "TlsBucket",
            **secure_bucket_props(),  # type: ignore[arg-type]
            bucket_name=default_tls_bucket_name(environment_name, stack.account, stack.region),
            versioned=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
            server_access_logs_bucket=logs,
            server_access_logs_prefix="tls-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    noncurrent_version_expiration=cdk.Duration.days(30),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(7),
                )
            ],
        )
        acknowledge_controls(
            bucket,
            "S3DefaultEncryptionKMS",
            "SSE-S3: the operator writes and reads the certificates through its managed policy "
            "(AmazonSageMakerHyperPodInferenceAccess), which grants no KMS key; the bucket is "
            "TLS-only, private and versioned.",
        )
        acknowledge_controls(
            bucket,
            "S3BucketReplicationEnabled",
            "The certificates are re-issued by the operator from its own state; a replica in a "
            "second region would only copy private keys further.",
        )
        return bucket

    def _tls_access(self, operator: iam.Role, bucket: str) -> None:
        """The access AWS documents for a TLS bucket not named hyperpod-tls-* (setup page)."""
        stack = cdk.Stack.of(self)
        objects = f"arn:{stack.partition}:s3:::{bucket}/*"
        own = {"StringEquals": {"aws:ResourceAccount": stack.account}}
        self.policies["tls"] = policy = iam.ManagedPolicy(
            self,
            "TlsBucketPolicy",
            roles=[operator],
            statements=[
                iam.PolicyStatement(
                    sid="TLSBucketDeleteObjects",
                    actions=["s3:DeleteObject"],
                    resources=[objects],
                    conditions=own,
                ),
                iam.PolicyStatement(
                    sid="TLSBucketGetObjects", actions=["s3:GetObject"], resources=[objects]
                ),
                iam.PolicyStatement(
                    sid="TLSBucketPutObjects",
                    actions=["s3:PutObject", "s3:PutObjectTagging"],
                    resources=[objects],
                    conditions=own,
                ),
            ],
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:s3:::{bucket}/*]",
            "The operator writes one certificate object per endpoint under names it chooses; "
            "the access is the objects of this one TLS bucket (SageMaker developer guide, "
            "custom TLS bucket name).",
        )

    # -- the roles ------------------------------------------------------------------------

    def _alb_role(self) -> None:
        """The AWS Load Balancer Controller's role: its published policy (v2.13.0
        docs/install/iam_policy.json, the one AWS's setup page downloads), with ARNs of this
        account and region where the policy has ``*:*``."""
        self._role("alb", "HyperPod inference: AWS Load Balancer Controller (IRSA)")
        stack = cdk.Stack.of(self)

        def elb(resource: str) -> str:
            return f"arn:{stack.partition}:elasticloadbalancing:{stack.region}:{stack.account}:{resource}"

        security_groups = (
            f"arn:{stack.partition}:ec2:{stack.region}:{stack.account}:security-group/*"
        )
        balancers = [
            elb("targetgroup/*/*"),
            elb("loadbalancer/net/*/*"),
            elb("loadbalancer/app/*/*"),
        ]
        listeners = [
            elb("listener/net/*/*/*"),
            elb("listener/app/*/*/*"),
            elb("listener-rule/net/*/*/*"),
            elb("listener-rule/app/*/*/*"),
        ]
        vpcs = f"arn:{stack.partition}:ec2:{stack.region}:{stack.account}:vpc/*"
        web_acls = [
            f"arn:{stack.partition}:wafv2:{stack.region}:{stack.account}:regional/webacl/*/*",
            f"arn:{stack.partition}:waf-regional:{stack.region}:{stack.account}:webacl/*",
        ]
        protections = f"arn:{stack.partition}:shield::{stack.account}:protection/*"
        request_tag = f"aws:RequestTag/{_ELB_CLUSTER_TAG}"
        resource_tag = f"aws:ResourceTag/{_ELB_CLUSTER_TAG}"
        statements = [
            iam.PolicyStatement(
                sid="ElbServiceLinkedRole",
                actions=["iam:CreateServiceLinkedRole"],
                resources=[
                    f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/"
                    "elasticloadbalancing.amazonaws.com/AWSServiceRoleForElasticLoadBalancing"
                ],
                conditions={
                    "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}
                },
            ),
            iam.PolicyStatement(
                sid="Describe",
                actions=[
                    "ec2:DescribeAccountAttributes",
                    "ec2:DescribeAddresses",
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeInternetGateways",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeVpcPeeringConnections",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeInstances",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeTags",
                    "ec2:GetCoipPoolUsage",
                    "ec2:DescribeCoipPools",
                    "ec2:GetSecurityGroupsForVpc",
                    "ec2:DescribeIpamPools",
                    "ec2:DescribeRouteTables",
                    "elasticloadbalancing:DescribeLoadBalancers",
                    "elasticloadbalancing:DescribeLoadBalancerAttributes",
                    "elasticloadbalancing:DescribeListeners",
                    "elasticloadbalancing:DescribeListenerCertificates",
                    "elasticloadbalancing:DescribeSSLPolicies",
                    "elasticloadbalancing:DescribeRules",
                    "elasticloadbalancing:DescribeTargetGroups",
                    "elasticloadbalancing:DescribeTargetGroupAttributes",
                    "elasticloadbalancing:DescribeTargetHealth",
                    "elasticloadbalancing:DescribeTags",
                    "elasticloadbalancing:DescribeTrustStores",
                    "elasticloadbalancing:DescribeListenerAttributes",
                    "elasticloadbalancing:DescribeCapacityReservation",
                    "cognito-idp:DescribeUserPoolClient",
                    "acm:ListCertificates",
                    "acm:DescribeCertificate",
                    "iam:ListServerCertificates",
                    "iam:GetServerCertificate",
                    "waf-regional:GetWebACL",
                    "waf-regional:GetWebACLForResource",
                    "wafv2:GetWebACL",
                    "wafv2:GetWebACLForResource",
                    "shield:GetSubscriptionState",
                    "shield:DescribeProtection",
                ],
                resources=["*"],
            ),
            iam.PolicyStatement(
                sid="WebAcl",
                actions=[
                    "waf-regional:AssociateWebACL",
                    "waf-regional:DisassociateWebACL",
                    "wafv2:AssociateWebACL",
                    "wafv2:DisassociateWebACL",
                ],
                resources=[*web_acls, *balancers[1:]],
            ),
            iam.PolicyStatement(
                sid="Shield",
                actions=["shield:CreateProtection", "shield:DeleteProtection"],
                resources=[protections],
            ),
            # the nodes' groups (not tagged by the controller) let the load balancer in
            iam.PolicyStatement(
                sid="NodeSecurityGroupRules",
                actions=["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
                resources=[security_groups],
            ),
            iam.PolicyStatement(
                sid="CreateSecurityGroup",
                actions=["ec2:CreateSecurityGroup"],
                resources=[security_groups, vpcs],
            ),
            iam.PolicyStatement(
                sid="TagNewSecurityGroup",
                actions=["ec2:CreateTags"],
                resources=[security_groups],
                conditions={
                    "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                    "Null": {request_tag: "false"},
                },
            ),
            iam.PolicyStatement(
                sid="RetagOwnSecurityGroups",
                actions=["ec2:CreateTags", "ec2:DeleteTags"],
                resources=[security_groups],
                conditions={"Null": {request_tag: "true", resource_tag: "false"}},
            ),
            iam.PolicyStatement(
                sid="ManageOwnSecurityGroups",
                actions=[
                    "ec2:AuthorizeSecurityGroupIngress",
                    "ec2:RevokeSecurityGroupIngress",
                    "ec2:DeleteSecurityGroup",
                ],
                resources=[security_groups],
                conditions={"Null": {resource_tag: "false"}},
            ),
            iam.PolicyStatement(
                sid="CreateTaggedBalancers",
                actions=[
                    "elasticloadbalancing:CreateLoadBalancer",
                    "elasticloadbalancing:CreateTargetGroup",
                ],
                resources=["*"],
                conditions={"Null": {request_tag: "false"}},
            ),
            iam.PolicyStatement(
                sid="Listeners",
                actions=[
                    "elasticloadbalancing:CreateListener",
                    "elasticloadbalancing:DeleteListener",
                    "elasticloadbalancing:CreateRule",
                    "elasticloadbalancing:DeleteRule",
                ],
                resources=[*balancers, *listeners],
            ),
            iam.PolicyStatement(
                sid="RetagOwnBalancers",
                actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
                resources=balancers,
                conditions={"Null": {request_tag: "true", resource_tag: "false"}},
            ),
            iam.PolicyStatement(
                sid="TagListeners",
                actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
                resources=listeners,
            ),
            iam.PolicyStatement(
                sid="ManageOwnBalancers",
                actions=[
                    "elasticloadbalancing:ModifyLoadBalancerAttributes",
                    "elasticloadbalancing:SetIpAddressType",
                    "elasticloadbalancing:SetSecurityGroups",
                    "elasticloadbalancing:SetSubnets",
                    "elasticloadbalancing:DeleteLoadBalancer",
                    "elasticloadbalancing:ModifyTargetGroup",
                    "elasticloadbalancing:ModifyTargetGroupAttributes",
                    "elasticloadbalancing:DeleteTargetGroup",
                    "elasticloadbalancing:ModifyListenerAttributes",
                    "elasticloadbalancing:ModifyCapacityReservation",
                    "elasticloadbalancing:ModifyIpPools",
                ],
                resources=["*"],
                conditions={"Null": {resource_tag: "false"}},
            ),
            iam.PolicyStatement(
                sid="TagOnCreate",
                actions=["elasticloadbalancing:AddTags"],
                resources=balancers,
                conditions={
                    "StringEquals": {
                        "elasticloadbalancing:CreateAction": [
                            "CreateTargetGroup",
                            "CreateLoadBalancer",
                        ]
                    },
                    "Null": {request_tag: "false"},
                },
            ),
            iam.PolicyStatement(
                sid="Targets",
                actions=[
                    "elasticloadbalancing:RegisterTargets",
                    "elasticloadbalancing:DeregisterTargets",
                ],
                resources=[elb("targetgroup/*/*")],
            ),
            iam.PolicyStatement(
                sid="ListenerSettings",
                actions=[
                    "elasticloadbalancing:SetWebAcl",
                    "elasticloadbalancing:ModifyListener",
                    "elasticloadbalancing:AddListenerCertificates",
                    "elasticloadbalancing:RemoveListenerCertificates",
                    "elasticloadbalancing:ModifyRule",
                    "elasticloadbalancing:SetRulePriorities",
                ],
                resources=[*balancers, *listeners],
            ),
        ]
        policy = self._policy("alb", statements)
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "The AWS Load Balancer Controller's published policy (v2.13.0 iam_policy.json, which "
            "AWS's inference setup uses): Describe/Get calls without resource-level permissions, "
            "and create/modify calls limited by the elbv2.k8s.aws/cluster tag the controller puts "
            "on what it creates, since their ARNs are unknown before creation.",
        )
        reason = (
            "Load balancers, target groups, listeners and security groups the controller creates "
            "have generated ids; the policy limits them to this account and region and, for "
            "changes, to resources carrying the controller's elbv2.k8s.aws/cluster tag."
        )
        for resource in ("security-group/*", "vpc/*"):
            acknowledge(
                policy, f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'ec2', resource)}]", reason
            )
        web_acl_reason = (
            "The web ACL (WAF) a model's ingress names is chosen when the model is deployed; the "
            "controller may associate web ACLs of this account and region with its load balancers."
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'wafv2', 'regional/webacl/*/*')}]",
            web_acl_reason,
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'waf-regional', 'webacl/*')}]",
            web_acl_reason,
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:shield::{nag_account(self)}:"
            "protection/*]",
            "Shield Advanced protections of the controller's load balancers, when an ingress asks "
            "for one; Shield protections are global resources of this account.",
        )
        for resource in (
            "targetgroup/*/*",
            "loadbalancer/net/*/*",
            "loadbalancer/app/*/*",
            "listener/net/*/*/*",
            "listener/app/*/*/*",
            "listener-rule/net/*/*/*",
            "listener-rule/app/*/*/*",
        ):
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'elasticloadbalancing', resource)}]",
                reason,
            )

    def _keda_role(self) -> None:
        """KEDA scales model deployments on CloudWatch and Amazon Managed Prometheus metrics
        (setup page, KEDA operator role); the Prometheus reads here reach this account's and
        region's workspaces only."""
        self._role("keda", "HyperPod inference: KEDA autoscaler (IRSA)")
        stack = cdk.Stack.of(self)
        workspaces = stack.format_arn(service="aps", resource="workspace", resource_name="*")
        policy = self._policy(
            "keda",
            [
                iam.PolicyStatement(
                    sid="CloudWatchMetrics",
                    actions=[
                        "cloudwatch:GetMetricData",
                        "cloudwatch:GetMetricStatistics",
                        "cloudwatch:ListMetrics",
                    ],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="PrometheusQueries",
                    actions=[
                        "aps:QueryMetrics",
                        "aps:GetLabels",
                        "aps:GetSeries",
                        "aps:GetMetricMetadata",
                    ],
                    resources=[workspaces],
                ),
            ],
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "cloudwatch:GetMetricData, GetMetricStatistics and ListMetrics have no resource-level "
            "permissions (Service Authorization Reference); they are read-only.",
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{_nag_arn(self, 'aps', 'workspace/*')}]",
            "KEDA scalers name the Prometheus workspace in each model's scaling spec, chosen when "
            "the model is deployed; read-only queries, this account and region only.",
        )

    def _s3_csi_role(
        self,
        driver: eks.CfnAddon,
        data_bucket: s3.IBucket | None,
        data_bucket_key: kms.IKey | None,
        buckets: Sequence[str],
    ) -> None:
        """The Mountpoint for S3 CSI driver's role: the named buckets only (never s3:* on *)."""
        role = self._role("s3_csi", "Mountpoint for Amazon S3 CSI driver: named buckets (IRSA)")
        stack = cdk.Stack.of(self)
        bucket_arns: list[str] = []
        data_name: ssm.StringParameter | None = None
        if data_bucket is not None:
            # the data bucket's (generated) name, as a value of this stack: a reference to another
            # stack's output has no name cdk-nag findings could be acknowledged by
            data_name = ssm.StringParameter(
                self,
                "DataBucketName",
                string_value=data_bucket.bucket_name,
                description="The environment's data bucket, which the Mountpoint for S3 CSI "
                "driver's role may read and write (HyperPod inference)",
            )
            bucket_arns.append(f"arn:{stack.partition}:s3:::{data_name.string_value}")
        bucket_arns += [f"arn:{stack.partition}:s3:::{name}" for name in buckets]
        if not bucket_arns:
            raise ValueError(
                "the S3 CSI driver's role needs a bucket: pass data_bucket= or list "
                "eks.addons.inference.s3_buckets"
            )
        statements = [
            iam.PolicyStatement(
                sid="MountpointListBuckets", actions=list(S3_BUCKET_ACTIONS), resources=bucket_arns
            ),
            iam.PolicyStatement(
                sid="MountpointObjects",
                actions=list(S3_OBJECT_ACTIONS),
                resources=[f"{arn}/*" for arn in bucket_arns],
            ),
        ]
        if data_bucket_key is not None:
            # the data bucket is SSE-KMS: reading and writing its objects uses its key through S3
            statements.append(
                iam.PolicyStatement(
                    sid="DataBucketKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[data_bucket_key.key_arn],
                    conditions={
                        "StringEquals": {"kms:ViaService": f"s3.{stack.region}.{stack.url_suffix}"}
                    },
                )
            )
        policy = self._policy("s3_csi", statements)
        reason = (
            "Mountpoint reads and writes objects whose keys the workloads choose; the access is "
            "limited to the objects of the buckets this environment names (its data bucket and "
            "eks.addons.inference.s3_buckets), never every bucket."
        )
        for name in buckets:
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:s3:::{name}/*]",
                reason,
            )
        if data_name is not None:
            shown = nag_ref(cast(cdk.CfnResource, data_name.node.default_child), "Value")
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::arn:{nag_partition(self)}:s3:::{shown}/*]",
                reason,
            )
        driver.service_account_role_arn = role.role_arn
        driver.node.add_dependency(policy)

    def _aws_managed(self, role: iam.Role, key: str, reason: str) -> None:
        """The AWS managed policy :data:`SERVICE_ACCOUNTS` names for ``key``, on ``role``."""
        name = SERVICE_ACCOUNTS[key].managed_policy
        assert name is not None, key
        role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(name))
        acknowledge(
            role, f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]", reason
        )

"""The Amazon EKS cluster that orchestrates a HyperPod cluster: created, or adopted."""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks_l1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from hyperpod_cdk.compliance.nag import acknowledge, cdk_assets_objects
from hyperpod_cdk.compliance.packs import acknowledge_framework_function
from hyperpod_cdk.facts.versions import SUPPORTED_KUBERNETES_VERSIONS, addon_version

# Every control-plane log type (EKS user guide "Control plane logs").
ALL_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# who did what, as which identity: the log types the HyperPod-EksLogging rule asks for
AUDIT_LOG_TYPES = ("api", "audit", "authenticator")
_LOG_TYPES = {
    "api": eks.ClusterLoggingTypes.API,
    "audit": eks.ClusterLoggingTypes.AUDIT,
    "authenticator": eks.ClusterLoggingTypes.AUTHENTICATOR,
    "controllerManager": eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    "scheduler": eks.ClusterLoggingTypes.SCHEDULER,
}

# The managed add-ons installed with the cluster, before HyperPod has nodes. They
# are DaemonSets, healthy with no node. CoreDNS is a Deployment: as a managed add-on
# it stays DEGRADED (and its create fails) until nodes exist, so it is installed
# after the HyperPod cluster (see :func:`core_dns_addon`); until then the CoreDNS
# EKS bootstraps serves the cluster.
EARLY_CORE_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")

# Access policy of cluster administrators (EKS user guide "Access policy permissions").
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


# How to install the kubectl layers: the library's `eks` extra (constructs/pyproject.toml). The
# package is not on PyPI (an unclaimed name there is no install hint): the wheel built from the
# repository (docs/library.md), with the extra.
EKS_EXTRA_INSTALL = "pip install '<the hyperpod_cdk wheel>[eks]' (docs/library.md, Install)"


def kubectl_layer(
    scope: Construct, construct_id: str, kubernetes_version: str
) -> lambda_.ILayerVersion:
    """The kubectl/helm Lambda layer matching ``kubernetes_version`` (1.30 .. 1.35).

    kubectl supports one minor version of skew against the API server, so the
    layer follows the cluster version (one PyPI package per version).

    The layers (~35 MB each) are the library's ``eks`` extra, so that a Slurm-only
    app does not install them; every construct that builds a kubectl handler comes
    here, and without them it stops with an ImportError that names the extra.
    """
    minor = kubernetes_version.split(".")[1]
    module_name = f"aws_cdk.lambda_layer_kubectl_v{minor}"
    package = f"aws-cdk.lambda-layer-kubectl-v{minor}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the layer package is there, something it imports is not
        if kubernetes_version not in SUPPORTED_KUBERNETES_VERSIONS:
            raise ValueError(
                f"no kubectl layer for Kubernetes {kubernetes_version}; the EKS constructs "
                f"support {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}"
            ) from None
        raise ImportError(
            f"{scope.node.path}: the EKS constructs need the kubectl Lambda layer of "
            f"Kubernetes {kubernetes_version} ({package}), which is not installed. Install "
            f"the library with its eks extra: {EKS_EXTRA_INSTALL}",
            name=module_name,
        ) from None
    layer_class = getattr(module, f"KubectlV{minor}Layer")
    layer: lambda_.ILayerVersion = layer_class(scope, construct_id)
    return layer


def pinned_addon(
    scope: Construct,
    construct_id: str,
    *,
    cluster_name: str,
    name: str,
    kubernetes_version: str,
    configuration: dict[str, Any] | None = None,
    shared_cluster: bool = False,
) -> eks_l1.CfnAddon:
    """One EKS managed add-on, pinned for ``kubernetes_version`` (:mod:`hyperpod_cdk.facts.versions`).

    On a cluster the app creates, ``OVERWRITE``: the add-on owns its Kubernetes
    objects, so it takes over the self-managed copy EKS bootstraps, and a
    conflicting field is reset to the add-on's value instead of failing the
    create or update; it is removed with the stack.

    On an adopted (``shared_cluster``) cluster, ``NONE``: a field someone else
    manages makes the create or update fail instead of being overwritten, and the
    add-on and its objects stay when the stack is deleted (workloads of other
    teams may use them).
    """
    return eks_l1.CfnAddon(
        scope,
        construct_id,
        cluster_name=cluster_name,
        addon_name=name,
        addon_version=addon_version(name, kubernetes_version),
        resolve_conflicts="NONE" if shared_cluster else "OVERWRITE",
        preserve_on_delete=shared_cluster,
        configuration_values=(
            cdk.Stack.of(scope).to_json_string(configuration) if configuration else None
        ),
    )


def core_dns_addon(
    scope: Construct, construct_id: str, *, cluster_name: str, kubernetes_version: str
) -> eks_l1.CfnAddon:
    """The CoreDNS managed add-on: create it once the cluster has nodes."""
    return pinned_addon(
        scope,
        construct_id,
        cluster_name=cluster_name,
        name="coredns",
        kubernetes_version=kubernetes_version,
    )


class HyperPodEksCluster(Construct):
    """An EKS cluster ready to orchestrate HyperPod, or an adopted one.

    A created cluster (:meth:`__init__`):

    - authentication mode ``API`` (``aws_eks_v2`` always sets it); HyperPod
      creates the access entries of its nodes itself;
    - no compute of its own: the HyperPod instance groups are its nodes;
    - the control plane in ``subnets`` (at least two AZs), with
      ``security_groups`` on its network interfaces: put the HyperPod node
      group there, so nodes and control plane reach each other;
    - endpoint access as asked (``private`` by default), control-plane logs,
      secrets encrypted with ``secrets_key`` (a new rotating key by default);
    - the managed add-ons of :data:`EARLY_CORE_ADDONS`, pinned;
    - cluster-admin access entries for ``admin_principal_arns``;
    - the kubectl handler (which applies manifests) in ``subnets``, so it
      reaches a private endpoint.

    Use :class:`AdoptedEksCluster` for a cluster that already exists.

    :param vpc: the VPC (created or adopted).
    :param subnets: the control-plane subnets, in at least two AZs; the kubectl
        handler runs there too.
    :param security_groups: the first is the control plane's security group (the
        HyperPod node group, so nodes and control plane reach each other); the
        others let the control plane in. When left out, EKS creates a group.
    :param kubernetes_version: ``1.30`` .. ``1.35``; ``1.35`` when left out.
    :param cluster_name: the EKS cluster name; a generated one when left out.
    :param endpoint_access: ``private`` (default), ``public_and_private`` or ``public``.
    :param public_access_cidrs: networks allowed to reach a public endpoint;
        empty means everywhere (EKS's default).
    :param logging: control-plane log types (all five by default).
    :param admin_principal_arns: IAM roles or users given a cluster-admin access
        entry; none when left out.
    :param admin_team_namespaces: namespaces (task governance teams) where an admin principal
        also gets the namespace-scoped team policy (:data:`TEAM_ACCESS_POLICY`) on its one
        access entry (EKS allows one entry per principal); by principal ARN.
    :param secrets_key: the KMS key of the envelope encryption of Kubernetes
        secrets (an existing ``kms.IKey``); a new rotating key when left out.
    :param removal_policy: DESTROY (default) deletes the cluster with the stack.
    :param kubectl_scope: where to create the kubectl handler (with its
        cluster-admin access entry), the early core add-ons and the manifests of
        :meth:`add_manifest`. Give a construct in another stack, one that waits
        for the VPC's egress (the handler calls the EKS and STS APIs), and the
        control plane's stack waits for neither; default: this construct.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        kubernetes_version: str = "1.35",
        cluster_name: str | None = None,
        endpoint_access: str = "private",
        public_access_cidrs: Sequence[str] = (),
        logging: Sequence[str] = ALL_LOG_TYPES,
        admin_principal_arns: Sequence[str] = (),
        admin_team_namespaces: Mapping[str, Sequence[str]] | None = None,
        secrets_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.DESTROY,
        kubectl_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.kubectl_scope: Construct = kubectl_scope or self
        if len(subnets) < 2:
            raise ValueError("the EKS control plane needs subnets in at least two AZs")
        unknown = sorted(set(logging) - set(_LOG_TYPES))
        if unknown:
            raise ValueError(f"unknown control-plane log types {unknown}; use {list(_LOG_TYPES)}")
        self.kubernetes_version = kubernetes_version
        self.secrets_key: kms.IKey = secrets_key or kms.Key(
            self,
            "SecretsKey",
            description="Envelope encryption of the EKS cluster's Kubernetes secrets",
            enable_key_rotation=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        control_plane_sg = security_groups[0] if security_groups else None
        selection = [ec2.SubnetSelection(subnets=list(subnets))]
        created = eks.Cluster(
            self,
            "Cluster",
            version=eks.KubernetesVersion.of(kubernetes_version),
            cluster_name=cluster_name,
            vpc=vpc,
            vpc_subnets=selection,
            security_group=control_plane_sg,
            endpoint_access=_endpoint_access(endpoint_access, public_access_cidrs),
            cluster_logging=[_LOG_TYPES[t] for t in logging],
            secrets_encryption_key=self.secrets_key,
            # HyperPod instance groups are the nodes: no node group, no Auto Mode
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            kubectl_provider_options=None
            if kubectl_scope
            else eks.KubectlProviderOptions(
                kubectl_layer=kubectl_layer(self, "KubectlLayer", kubernetes_version),
                private_subnets=list(subnets),
            ),
            removal_policy=removal_policy,
        )
        # jsii's Cluster class does implement ICluster; mypy cannot see it
        self.cluster: eks.ICluster = cast(eks.ICluster, created)
        # the cluster as the manifests see it: with a kubectl provider
        self.kubectl_cluster: eks.ICluster = self.cluster
        self.kubectl: AdoptedEksCluster | None = None
        if kubectl_scope is not None:
            # the handler on an import of the cluster there: a provider built into eks.Cluster
            # would sit in the cluster's own stack. It joins the control plane's group, whose
            # self rule lets it reach a private endpoint.
            self.kubectl = AdoptedEksCluster(
                kubectl_scope,
                "Cluster",
                cluster=self.cluster,
                vpc=vpc,
                kubectl_subnets=subnets,
                kubectl_security_groups=list(security_groups[:1])
                or [created.cluster_security_group],
                kubernetes_version=kubernetes_version,
            )
            self.kubectl_cluster = self.kubectl.cluster
        if endpoint_access == "public" and public_access_cidrs:
            cfn_cluster = self.cluster.node.default_child
            assert isinstance(cfn_cluster, cdk.CfnResource)
            cfn_cluster.add_property_override("ResourcesVpcConfig.EndpointPrivateAccess", False)
        for extra in security_groups[1:]:
            # the control plane takes one extra group; the rest still let it in
            extra.add_ingress_rule(
                self.cluster.connections.security_groups[0],
                ec2.Port.all_traffic(),
                "EKS control plane to the HyperPod nodes",
            )
        self.cluster_name = self.cluster.cluster_name
        self.cluster_arn = self.cluster.cluster_arn
        self.core_addons = {
            name: pinned_addon(
                self.kubectl_scope,
                "".join(p.capitalize() for p in name.split("-")) + "Addon",
                cluster_name=self.cluster_name,
                name=name,
                kubernetes_version=kubernetes_version,
            )
            for name in EARLY_CORE_ADDONS
        }
        for principal in admin_principal_arns:
            eks.AccessEntry(
                self,
                access_entry_id("Admin", principal),
                cluster=self.cluster,
                principal=principal,
                access_policies=[
                    _cluster_admin_policy(),
                    *team_access_policies((admin_team_namespaces or {}).get(principal, ())),
                ],
            )
        self._acknowledge_cluster_findings()
        self._acknowledge_configured_exposure(endpoint_access, public_access_cidrs, logging)
        if self.kubectl is None:
            acknowledge_kubectl_provider(self.cluster)

    def add_manifest(self, construct_id: str, *objects: dict[str, Any]) -> eks.KubernetesManifest:
        """Apply Kubernetes ``objects`` (in order) with the cluster's kubectl handler
        (in ``kubectl_scope``)."""
        if self.kubectl is not None:
            return self.kubectl.add_manifest(construct_id, *objects)
        return _manifest(self, construct_id, self.cluster, objects)

    def add_chart(self, construct_id: str, spec: ChartRelease) -> eks.HelmChart:
        """Install a local chart (an S3 asset) with the cluster's kubectl handler."""
        if self.kubectl is not None:
            return self.kubectl.add_chart(construct_id, spec)
        return _chart(self, construct_id, self.cluster, spec)

    def _acknowledge_configured_exposure(
        self, endpoint_access: str, public_access_cidrs: Sequence[str], logging: Sequence[str]
    ) -> None:
        """The HyperPod pack wants a private endpoint and the audit logs; a config may choose
        otherwise, and then the choice itself is the acknowledged reason."""
        if endpoint_access != "private":
            acknowledge(
                self.cluster,
                "HyperPod-EksPrivateEndpoint",
                f"eks.endpoint_access is {endpoint_access} in the environment config: the API "
                f"server is public, limited to eks.public_access_cidrs {list(public_access_cidrs)}.",
            )
        missing = [t for t in AUDIT_LOG_TYPES if t not in logging]
        if missing:
            acknowledge(
                self.cluster,
                "HyperPod-EksLogging",
                f"eks.logging in the environment config leaves out {', '.join(missing)}: the "
                "control-plane log types are the config owner's choice (CloudWatch Logs cost).",
            )

    def _acknowledge_cluster_findings(self) -> None:
        """cdk-nag findings on the CDK-made parts of the cluster, each with its reason."""
        cluster = self.cluster
        acknowledge(
            cluster,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy]",
            "The EKS service role must carry AmazonEKSClusterPolicy (EKS user guide "
            "'Amazon EKS cluster IAM role'); AWS maintains it for the control plane.",
        )


def _endpoint_access(kind: str, cidrs: Sequence[str]) -> eks.EndpointAccess:
    if kind == "private":
        return eks.EndpointAccess.PRIVATE
    if not cidrs:
        return (
            eks.EndpointAccess.PUBLIC if kind == "public" else eks.EndpointAccess.PUBLIC_AND_PRIVATE
        )
    # aws_eks_v2 restricts only a public-and-private endpoint to CIDRs; a public-only
    # endpoint gets the same restriction and its private access switched off afterwards
    return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*cidrs)


class AdoptedEksCluster(Construct):
    """An existing EKS cluster (authentication mode ``API`` or ``API_AND_CONFIG_MAP``).

    Give exactly one of ``cluster_arn`` (a cluster outside this app) or
    ``cluster`` (an ``aws_eks_v2.ICluster``: one imported with
    ``eks.Cluster.from_cluster_attributes``, or another app construct's).

    When ``cluster`` already has a kubectl provider, manifests go through it
    (its owner has let it into the cluster) and this construct creates nothing.
    Otherwise manifests reach the cluster through a new kubectl handler in
    ``kubectl_subnets`` with ``kubectl_security_groups``: give it the HyperPod
    subnet and node groups, which must reach the cluster's endpoint anyway.

    :param cluster_arn: the cluster's ARN.
    :param cluster: the cluster as an ``aws_eks_v2.ICluster``.
    :param vpc: the cluster's VPC (created or adopted); needed for a new
        kubectl handler in ``kubectl_subnets``; ``cluster.vpc`` when left out
        and ``cluster`` has one.
    :param kubectl_subnets: private subnets the new kubectl handler runs in;
        they must reach the cluster's API endpoint. None: the handler runs
        outside a VPC (a public endpoint only).
    :param kubectl_security_groups: security groups of the new kubectl handler;
        the cluster's endpoint must let them in.
    :param kubectl_role_arn: the new handler's execution role, trusted by
        ``lambda.amazonaws.com``, that already has a cluster-admin access
        entry. When ``None`` the handler gets a new role and this construct
        gives it a cluster-admin access entry (no manual step).
    :param kubernetes_version: the cluster's version (picks the kubectl layer
        of a new handler); ``1.35`` when left out.

    :ivar cluster: the cluster, as an ``ICluster`` with a kubectl provider.
    :ivar cluster_name: its name. :ivar cluster_arn: its ARN.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_arn: str | None = None,
        cluster: eks.ICluster | None = None,
        vpc: ec2.IVpc | None = None,
        kubectl_subnets: Sequence[ec2.ISubnet] = (),
        kubectl_security_groups: Sequence[ec2.ISecurityGroup] = (),
        kubectl_role_arn: str | None = None,
        kubernetes_version: str = "1.35",
    ) -> None:
        super().__init__(scope, construct_id)
        if (cluster_arn is None) == (cluster is None):
            raise ValueError(
                "AdoptedEksCluster takes exactly one of cluster_arn (the ARN of an existing "
                "cluster) or cluster (an aws_eks_v2.ICluster); got "
                + ("both" if cluster is not None else "neither")
            )
        self.kubectl_access: eks.AccessEntry | None = None
        if cluster is not None and cluster.kubectl_provider is not None:
            if kubectl_subnets or kubectl_security_groups or kubectl_role_arn:
                raise ValueError(
                    f"cluster {cluster.cluster_name} already has a kubectl provider, which "
                    "applies the manifests; leave out kubectl_subnets, kubectl_security_groups "
                    "and kubectl_role_arn (they configure a new one)"
                )
            self.cluster: eks.ICluster = cluster
            self.kubectl_cluster: eks.ICluster = cluster
            self.cluster_name: str = cluster.cluster_name
            self.cluster_arn: str = cluster.cluster_arn
            return
        if cluster is not None:
            name = cluster.cluster_name
            self.cluster_arn = cluster.cluster_arn
            vpc = vpc or _vpc_of(cluster)
        else:
            assert cluster_arn is not None
            arn_name = cdk.Arn.split(cluster_arn, cdk.ArnFormat.SLASH_RESOURCE_NAME).resource_name
            if not arn_name:
                raise ValueError(f"{cluster_arn!r} is not an EKS cluster ARN")
            name = arn_name
            self.cluster_arn = cluster_arn
        if kubectl_subnets and vpc is None:
            raise ValueError(
                "a kubectl handler in kubectl_subnets needs the cluster's VPC: pass vpc="
            )
        self.cluster_name = name
        role = (
            iam.Role.from_role_arn(self, "KubectlRole", kubectl_role_arn, mutable=False)
            if kubectl_role_arn
            else None
        )
        # An imported cluster ignores kubectl_provider_options: build the provider
        # for a first handle, then import the cluster again with it.
        plain = eks.Cluster.from_cluster_attributes(self, "ClusterRef", cluster_name=name, vpc=vpc)
        provider = eks.KubectlProvider(
            self,
            "KubectlProvider",
            cluster=plain,
            kubectl_layer=kubectl_layer(self, "KubectlLayer", kubernetes_version),
            private_subnets=list(kubectl_subnets) or None,
            security_groups=list(kubectl_security_groups) or None,
            role=role,
        )
        self.cluster = eks.Cluster.from_cluster_attributes(
            self, "Cluster", cluster_name=name, vpc=vpc, kubectl_provider=provider
        )
        # (the same name as HyperPodEksCluster's: the cluster with a kubectl provider)
        self.kubectl_cluster = self.cluster
        acknowledge_kubectl_provider(self.cluster)
        if role is None and provider.role is not None:
            self.kubectl_access = eks.AccessEntry(
                self,
                "KubectlAccess",
                cluster=self.cluster,
                principal=provider.role.role_arn,
                access_policies=[_cluster_admin_policy()],
            )

    def add_manifest(self, construct_id: str, *objects: dict[str, Any]) -> eks.KubernetesManifest:
        """Apply Kubernetes ``objects`` (in order) once the kubectl handler is let in."""
        manifest = _manifest(self, construct_id, self.cluster, objects)
        if self.kubectl_access is not None:
            manifest.node.add_dependency(self.kubectl_access)
        return manifest

    def add_chart(self, construct_id: str, spec: ChartRelease) -> eks.HelmChart:
        """Install a local chart (an S3 asset) once the kubectl handler is let in.

        :raises ValueError: the cluster's own kubectl provider was imported without its role
            (the handler must be granted read access to the chart asset).
        """
        provider = self.cluster.kubectl_provider
        if provider is not None and provider.role is None:
            raise ValueError(
                f"the kubectl provider of cluster {self.cluster_name} has no role: the Helm "
                "handler must be let read the chart from the CDK asset bucket; import it with "
                "eks.KubectlProvider.from_kubectl_provider_attributes(..., role=<its handler role>)"
            )
        chart = _chart(self, construct_id, self.cluster, spec)
        if self.kubectl_access is not None:
            chart.node.add_dependency(self.kubectl_access)
        return chart


@dataclass(frozen=True)
class ChartRelease:
    """A Helm release of a local chart: the chart directory as an S3 asset, the release name,
    its namespace (created when ``create_namespace``) and its values."""

    chart_asset: s3_assets.Asset
    release: str
    namespace: str
    create_namespace: bool
    values: Mapping[str, Any]


def install_chart(
    scope: Construct, construct_id: str, cluster: eks.ICluster, spec: ChartRelease
) -> eks.HelmChart:
    """Install a local chart on ``cluster`` from ``scope`` (which may be a later stack than the
    cluster's), as the cluster constructs' ``add_chart`` does: ``wait`` off, a 5-minute Helm
    timeout, the kubectl handler's read grant on the CDK asset bucket acknowledged."""
    return _chart(scope, construct_id, cluster, spec)


def _chart(
    scope: Construct, construct_id: str, cluster: eks.ICluster, spec: ChartRelease
) -> eks.HelmChart:
    # wait off: the DaemonSets target nodes that do not exist before the HyperPod cluster;
    # not atomic: a failed install stays for `helm status` instead of being rolled back unseen
    chart = eks.HelmChart(
        scope,
        construct_id,
        cluster=cluster,
        chart_asset=spec.chart_asset,
        release=spec.release,
        namespace=spec.namespace,
        create_namespace=spec.create_namespace,
        values=dict(spec.values),
        wait=False,
        timeout=cdk.Duration.minutes(5),
    )
    provider = cluster.kubectl_provider
    # the grant lands on the handler's role: CDK's own (under the provider) or an imported one
    for grantee in (provider, provider.role if provider is not None else None):
        # (an imported role is a jsii IRole proxy, not a Python Construct: test for its node)
        if grantee is not None and hasattr(grantee, "node"):
            reason = (
                "aws_eks_v2.HelmChart lets the kubectl handler read the chart it installs from the "
                "CDK asset bucket (Bucket.grantRead: read-only actions on that bucket's objects)."
            )
            for finding in (
                "AwsSolutions-IAM5[Action::s3:GetBucket*]",
                "AwsSolutions-IAM5[Action::s3:GetObject*]",
                "AwsSolutions-IAM5[Action::s3:List*]",
                f"AwsSolutions-IAM5[Resource::{cdk_assets_objects(grantee)}]",
            ):
                acknowledge(grantee, finding, reason)
    return chart


def _vpc_of(cluster: eks.ICluster) -> ec2.IVpc | None:
    """The VPC of ``cluster``; ``None`` for a cluster imported without one (whose
    ``vpc`` raises instead of returning nothing)."""
    try:
        return cluster.vpc
    except Exception:  # jsii: '"vpc" is not defined for this imported cluster'
        return None


def _manifest(
    scope: Construct, construct_id: str, cluster: eks.ICluster, objects: Sequence[dict[str, Any]]
) -> eks.KubernetesManifest:
    # no overwrite: the create is `kubectl create`, which fails on an object that already
    # exists (another team's, on a shared cluster) instead of taking it over
    return eks.KubernetesManifest(
        scope, construct_id, cluster=cluster, manifest=list(objects), overwrite=False
    )


# The EKS access policy a task governance team's principals get, scoped to the team's namespace:
# create and watch workloads there (Kubernetes "edit"), nothing cluster-wide (EKS user guide,
# "Access policy permissions": AmazonEKSEditPolicy).
TEAM_ACCESS_POLICY = "AmazonEKSEditPolicy"


def access_entry_id(prefix: str, principal_arn: str) -> str:
    """The construct id of a principal's access entry, from what it is, not where it stands in a
    list: ``prefix``, the principal's name (the ARN's last part, letters and digits) and 8 hex
    digits of the ARN's SHA-256. Taking a principal off a list then deletes its entry alone; an
    id by position would move the next principal's entry to a new id, which CloudFormation
    creates before it deletes the old one, and EKS allows one access entry per principal."""
    name = re.sub(r"[^A-Za-z0-9]", "", re.split(r"[/:]", principal_arn)[-1])[:40]
    return f"{prefix}{name}{hashlib.sha256(principal_arn.encode()).hexdigest()[:8]}"


def team_access_policies(namespaces: Sequence[str]) -> list[eks.IAccessPolicy]:
    """The team policy scoped to ``namespaces`` (none when empty)."""
    if not namespaces:
        return []
    return [
        eks.AccessPolicy.from_access_policy_name(
            TEAM_ACCESS_POLICY,
            access_scope_type=eks.AccessScopeType.NAMESPACE,
            namespaces=list(namespaces),
        )
    ]


def _cluster_admin_policy() -> eks.IAccessPolicy:
    return eks.AccessPolicy.from_access_policy_name(
        CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
    )


def acknowledge_kubectl_provider(cluster: eks.ICluster) -> None:
    """cdk-nag findings on the kubectl handler CDK builds for ``cluster``, each with its reason.

    The handler and its custom-resource framework are CDK code: their runtime
    and policies are not ours to change.
    """
    provider = cluster.kubectl_provider
    if not isinstance(provider, Construct):
        return
    for policy in (
        "service-role/AWSLambdaBasicExecutionRole",
        "service-role/AWSLambdaVPCAccessExecutionRole",
    ):
        acknowledge(
            provider,
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]",
            "The kubectl handler and its custom-resource framework are Lambda functions in the VPC; "
            "the AWS managed Lambda execution policies grant only log writing and VPC interfaces.",
        )
    acknowledge(
        provider,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly]",
        "aws_eks_v2 gives the kubectl handler read-only ECR access so Helm can pull OCI charts; it "
        "cannot change anything in ECR.",
    )
    handler = provider.node.try_find_child("Handler")
    acknowledge(
        provider,
        'AwsSolutions-IAM4[Policy::{"Fn::If":["'
        + _ecr_public_condition_id(handler)
        + '",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},'
        '":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]',
        "aws_eks_v2 adds read-only ECR Public access to the kubectl handler in partitions that have "
        "ECR Public (for OCI charts); it cannot change anything.",
    )
    acknowledge(
        provider,
        "AwsSolutions-L1",
        "The kubectl handler's runtime is chosen by aws-cdk-lib (the latest Python it supports) and "
        "moves with the pinned aws-cdk-lib version.",
    )
    if isinstance(handler, Construct):
        cfn = handler.node.default_child
        if isinstance(cfn, cdk.CfnResource):
            acknowledge(
                provider,
                f"AwsSolutions-IAM5[Resource::<{cdk.Stack.of(cfn).get_logical_id(cfn)}.Arn>:*]",
                "The custom-resource framework invokes every version of the kubectl handler function "
                "and nothing else (CDK custom-resource provider pattern).",
            )
    framework = provider.node.try_find_child("Provider")
    on_event = framework.node.try_find_child("framework-onEvent") if framework else None
    for function in (handler, on_event):
        if function is not None:
            acknowledge_framework_function(function, in_vpc=True)


def _ecr_public_condition_id(handler: Construct | None) -> str:
    """The logical id of the condition under which the handler gets ECR Public access."""
    condition = handler.node.try_find_child("HasEcrPublic") if handler is not None else None
    if isinstance(condition, cdk.CfnCondition):
        return cdk.Stack.of(condition).get_logical_id(condition)
    return ""

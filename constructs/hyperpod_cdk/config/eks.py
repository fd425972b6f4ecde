"""The ``eks`` section: the EKS cluster that orchestrates HyperPod (created or adopted), what
the app installs on it, and their rules.

Sections of their own sit inside it: ``eks.addons.inference``
(:mod:`~hyperpod_cdk.config.inference`) and ``eks.task_governance``
(:mod:`~hyperpod_cdk.config.task_governance`); the chart's instance lists are checked in
:mod:`~hyperpod_cdk.config.chart_instance_types`.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Annotated, Literal, get_args

from pydantic import BeforeValidator, Discriminator, Field, Tag

from hyperpod_cdk.config.base import (
    WHOLE_NUMBER,
    Cidr,
    InstanceType,
    IssueSink,
    KubernetesKey,
    KubernetesValue,
    RoleArn,
    StrictModel,
    TaintEffect,
    decimal_version,
    matching,
)
from hyperpod_cdk.config.chart_instance_types import check_chart_instance_types
from hyperpod_cdk.config.inference import InferenceOption, InferenceSettings, inference_settings
from hyperpod_cdk.config.task_governance import TaskGovernance
from hyperpod_cdk.facts import chart
from hyperpod_cdk.facts.versions import SUPPORTED_KUBERNETES_VERSIONS

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# The Kubernetes versions the config accepts: those the add-on table pins versions for (a
# Literal built from the facts, so that the two cannot differ; mypy sees the str it is).
if TYPE_CHECKING:
    KubernetesVersion = str
else:
    KubernetesVersion = Literal[SUPPORTED_KUBERNETES_VERSIONS]
EksLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]

# The most of the address space eks.public_access_cidrs may open together: a /8 of IPv4 (16.7
# million addresses, wider than any one organisation's networks) and a /32 of IPv6.
PUBLIC_ENDPOINT_MAX_V4 = ipaddress.ip_network("10.0.0.0/8")
PUBLIC_ENDPOINT_MAX_V6 = ipaddress.ip_network("2001:db8::/32")


class EksDependencies(StrictModel):
    """The components HyperPod needs on the EKS cluster, each on by default.

    They are installed before the HyperPod cluster is created, tolerate the
    HyperPod node-health taint and are pinned to a version.
    """

    health_monitoring_agent: bool = Field(
        default=True,
        description="HyperPod health monitoring agent (aws-hyperpod); needed for automatic node "
        "recovery.",
    )
    deep_health_check: bool = Field(
        default=True, description="RBAC HyperPod's deep health checks use (aws-hyperpod)."
    )
    job_auto_restart: bool = Field(
        default=True, description="RBAC HyperPod's job auto-restart uses (aws-hyperpod)."
    )
    patching: bool = Field(
        default=True, description="RBAC HyperPod's AMI patching (node drain) uses (aws-hyperpod)."
    )
    training_operator: bool = Field(
        default=True, description="Kubeflow training operator (PyTorchJob and friends; kubeflow)."
    )
    mpi_operator: bool = Field(default=True, description="Kubeflow MPI operator (mpi-operator).")
    nvidia_device_plugin: bool = Field(
        default=True, description="NVIDIA device plugin (nvidia.com/gpu; kube-system)."
    )
    neuron_device_plugin: bool = Field(
        default=True, description="AWS Neuron device plugin (Trainium/Inferentia; kube-system)."
    )
    efa_device_plugin: bool = Field(
        default=True, description="EFA device plugin (vpc.amazonaws.com/efa; kube-system)."
    )
    scientist_rbac: bool = Field(
        default=True,
        description="AWS's data scientist roles: list pods and nodes cluster-wide (group "
        "hyperpod-scientist-user-cluster-role-cluster-level) and run PyTorchJobs in kubeflow "
        "(group hyperpod-scientist-user-namespace-level-role-kubeflow-level); an access entry "
        "naming a group gives them to an IAM principal.",
    )

    def enabled(self) -> list[str]:
        """The names of the components switched on, in declaration order."""
        return [name for name in type(self).model_fields if getattr(self, name)]


class Toleration(StrictModel):
    """A Kubernetes toleration added to the pods of the dependencies chart."""

    key: KubernetesKey | None = Field(
        default=None, description="The taint key; left out: every key (operator Exists)."
    )
    operator: Literal["Equal", "Exists"] = Field(
        default="Exists",
        description="Exists (any value of the key) or Equal (value below); default Exists.",
    )
    value: KubernetesValue | None = Field(
        default=None, description="With operator Equal: the taint value; left out: none."
    )
    effect: TaintEffect | None = Field(
        default=None, description="The taint effect; left out: every effect."
    )

    def as_kubernetes(self) -> dict[str, str]:
        """The toleration as Kubernetes writes it (camelCase, unset fields left out)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ExtraInstanceTypes(StrictModel):
    """Instance types appended to the chart's lists (a type AWS launched after the pinned chart)."""

    nvidia_gpu: list[InstanceType] = Field(
        default_factory=list,
        description="More NVIDIA GPU types for the NVIDIA device plugin and the health agent.",
    )
    neuron: list[InstanceType] = Field(
        default_factory=list,
        description="More Trainium/Inferentia types for the Neuron plugin and the health agent.",
    )
    efa: list[InstanceType] = Field(
        default_factory=list, description="More EFA-capable types for the EFA device plugin."
    )


DependencyKey = Literal[
    "health_monitoring_agent",
    "training_operator",
    "mpi_operator",
    "nvidia_device_plugin",
    "neuron_device_plugin",
    "efa_device_plugin",
]


class EksChartValues(StrictModel):
    """What the config may change in the releases of the dependencies chart."""

    extra_tolerations: list[Toleration] = Field(
        default_factory=list,
        description="Tolerations added to every pod of the chart (e.g. a custom taint of your "
        "groups).",
    )
    extra_instance_types: ExtraInstanceTypes = Field(
        default_factory=lambda: ExtraInstanceTypes(),
        description="Instance types appended to the chart's device lists.",
    )
    image_tags: dict[
        DependencyKey,
        Annotated[str, matching(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", "a container image tag")],
    ] = Field(
        default_factory=dict,
        description="A component's image tag instead of the pinned one (preflight checks the "
        "health agent's tag exists).",
    )


# A Kubernetes object name (RFC 1123 subdomain, as a StorageClass name must be).
K8S_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


class FsxCsiDriver(StrictModel):
    """``eks.addons.fsx_csi_driver`` as a mapping: the driver, with dynamic provisioning."""

    dynamic_provisioning: bool = Field(
        default=True,
        description="A StorageClass that creates a new PERSISTENT_2 file system per claim, in "
        "the HyperPod subnet and the nodes' security group, retained when the claim goes.",
    )
    storage_class: Annotated[
        str, matching(K8S_NAME_PATTERN, "a Kubernetes name like fsx-sc", max_length=253)
    ] = Field(default="fsx-sc", description="Name of that StorageClass (AWS's console: fsx-sc).")


# true/false, or the mapping: the value's type picks the branch (tags left out of key paths)
FsxCsiDriverOption = Annotated[
    Annotated[bool, Tag("<switch>")] | Annotated[FsxCsiDriver, Tag("<settings>")],
    Discriminator(
        lambda value: "<settings>" if isinstance(value, dict | FsxCsiDriver) else "<switch>"
    ),
]


class EksAddons(StrictModel):
    """Optional HyperPod add-ons, installed after the HyperPod cluster has nodes."""

    training_operator: bool = Field(
        default=False,
        description="HyperPod training operator add-on, with cert-manager and its pod identity.",
    )
    task_governance: bool = Field(
        default=False, description="HyperPod task governance add-on (Kueue based)."
    )
    observability: bool = Field(
        default=False,
        description="HyperPod observability add-on, with an Amazon Managed Prometheus workspace.",
    )
    fsx_csi_driver: FsxCsiDriverOption | None = Field(
        default=None,
        description="FSx for Lustre CSI driver plus a PersistentVolume and claim for the "
        "environment's file system; default: on when storage.fsx is enabled. "
        "{dynamic_provisioning: true}: also a StorageClass (storage_class, default fsx-sc) "
        "through which a PersistentVolumeClaim creates a new file system, with the driver's "
        "controller role limited to file systems tagged for this environment.",
    )
    inference: InferenceOption = Field(
        default=False,
        description="The HyperPod inference operator add-on with everything it needs: the "
        "Mountpoint for S3 CSI driver, metrics-server, cert-manager and FSx CSI driver add-ons, "
        "the cluster's IAM OIDC provider, the operator's, load balancer controller's and KEDA's "
        "roles, a TLS certificate bucket and the subnet tags for internal load balancers. A "
        "mapping sets gateway, gated_models, tls_bucket, s3_buckets, oidc_provider_arn, alb_controller "
        "and keda (install | existing; required on an adopted cluster).",
    )

    @property
    def inference_settings(self) -> InferenceSettings | None:
        """The ``inference`` settings; None when the switch is off."""
        return inference_settings(self.inference)

    @property
    def fsx_csi_dynamic(self) -> FsxCsiDriver | None:
        """The dynamic provisioning settings, when ``fsx_csi_driver`` asks for it."""
        value = self.fsx_csi_driver
        if isinstance(value, FsxCsiDriver) and value.dynamic_provisioning:
            return value
        return None


class EksConfig(StrictModel):
    """The EKS cluster that orchestrates HyperPod (created or adopted)."""

    cluster_arn: (
        Annotated[
            str,
            matching(
                r"^arn:aws[a-z-]*:eks:[a-z0-9-]+:[0-9]{12}:cluster/[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$",
                "an EKS cluster ARN like arn:aws:eks:us-west-2:111122223333:cluster/name",
            ),
        ]
        | None
    ) = Field(
        default=None,
        description="Adopt this EKS cluster (of this account and region) instead of creating one; "
        "then kubernetes_version and every eks.dependencies key are required. Left "
        "out: the app creates <name>-eks.",
    )
    kubectl_role_arn: RoleArn | None = Field(
        default=None,
        description="Adopted cluster: an existing IAM role of this account for the kubectl handler"
        " Lambda function (it must be able to run kubectl on the cluster); left out: "
        "the handler gets a role the app creates.",
    )
    kubernetes_version: Annotated[KubernetesVersion, BeforeValidator(decimal_version)] = Field(
        default="1.35",
        description="Kubernetes version of the cluster the app creates (a version HyperPod "
        "supports); "
        "required with cluster_arn: the adopted cluster's version (picks the kubectl and add-on versions).",
    )
    endpoint_access: Literal["private", "public_and_private", "public"] = Field(
        default="private",
        description="Who reaches the Kubernetes API endpoint of a created cluster: private (from "
        "the VPC only), public_and_private or public (from public_access_cidrs); "
        "default private.",
    )
    public_access_cidrs: list[Cidr] = Field(
        default_factory=list,
        description="The networks that may reach a public endpoint (needed with public or "
        "public_and_private; 0.0.0.0/0 is refused); default: none.",
    )
    admin_principal_arns: list[
        Annotated[
            str,
            matching(
                r"^arn:aws[a-z-]*:(iam::[0-9]{12}:(role|user)/.+|sts::[0-9]{12}:assumed-role/.+)$",
                "an IAM role or user ARN (or an STS assumed-role ARN)",
            ),
        ]
    ] = Field(
        default_factory=list,
        description="IAM roles or users given a cluster-admin access entry on a created cluster "
        "(of any account); default: none.",
    )
    logging: list[EksLogType] = Field(
        default_factory=lambda: list(get_args(EksLogType)),
        description="Control-plane log types a created cluster sends to CloudWatch Logs; default: "
        "all five.",
    )
    dependencies: EksDependencies = Field(
        default_factory=lambda: EksDependencies(),
        description="What HyperPod needs on the cluster, installed before the HyperPod cluster "
        "as Helm releases of the project's chart; on an adopted cluster (cluster_arn) every "
        "component must be given explicitly.",
    )
    image_registry: (
        Annotated[
            str,
            matching(
                r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$",
                "a registry host with an optional path, like "
                "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror (no scheme, no trailing /)",
                max_length=255,
            ),
        ]
        | None
    ) = Field(
        default=None,
        description="Pull every image of the dependencies chart from "
        "<image_registry>/<repository>:<tag> "
        "(an ECR pull-through cache or mirror; `python -m hyperpod_ops.chart --mirror-list REGION` "
        "lists what to copy). Needed in a closed network for the images of public registries.",
    )
    node_wait_minutes: Annotated[int, Field(ge=1, le=50), WHOLE_NUMBER] = Field(
        default=45,
        description="How long the add-ons that need nodes (CoreDNS, eks.addons) wait for the "
        "first Running node of a group without NoSchedule/NoExecute taints before their stack "
        "fails (1-50: CloudFormation gives a custom resource an hour).",
    )
    chart_values: EksChartValues = Field(
        default_factory=lambda: EksChartValues(),
        description="Overrides passed to the releases of the dependencies chart.",
    )
    addons: EksAddons = Field(
        default_factory=lambda: EksAddons(),
        description="Optional HyperPod add-ons, installed once the cluster has nodes.",
    )
    task_governance: TaskGovernance | None = Field(
        default=None,
        description="Task governance as code (needs addons.task_governance): the cluster "
        "policy and one compute quota per team, created once the add-on is active; see "
        "docs/task-governance.md.",
    )


# -- cross-key rules --------------------------------------------------------------------------


def check_eks(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Cross-key problems of ``eks`` (the cluster, its dependencies and add-ons) into ``out``."""
    _check_eks(cfg, out)
    _check_eks_dependencies(cfg, out)
    _check_eks_addons(cfg, out)


def _check_eks(cfg: EnvironmentConfig, out: IssueSink) -> None:
    if cfg.is_slurm:
        return
    eks = cfg.eks
    net = cfg.network
    adopted = eks is not None and eks.cluster_arn is not None
    if not adopted and net.vpc_id is None and len(set(net.eks_availability_zone_ids)) < 2:
        out.error(
            "network.eks_availability_zone_ids",
            "needs at least two distinct AZ IDs: the EKS control plane spans two AZs",
        )
    if not adopted and net.vpc_id is not None and len(net.eks_subnet_ids) < 2:
        out.error(
            "network.eks_subnet_ids", "needs at least two subnets in two AZs of the adopted VPC"
        )
    if eks is None:
        return
    if adopted and eks.cluster_arn is not None:
        if not eks.is_set("kubernetes_version"):
            out.error(
                "eks.kubernetes_version",
                'give the adopted cluster\'s version (e.g. "1.33"): it picks the kubectl layer '
                "and the add-on versions",
            )
        if eks.cluster_arn.split(":")[3] != cfg.region:
            out.error(
                "eks.cluster_arn",
                f"is not in {cfg.region}; HyperPod uses an EKS cluster in its own region",
            )
        for key in (
            "endpoint_access",
            "public_access_cidrs",
            "admin_principal_arns",
            "logging",
        ):
            if eks.is_set(key):
                out.error(
                    f"eks.{key}",
                    "applies only to an EKS cluster the app creates (eks.cluster_arn is set)",
                )
    elif eks.kubectl_role_arn is not None:
        out.error("eks.kubectl_role_arn", "applies only with eks.cluster_arn (an adopted cluster)")
    if eks.endpoint_access == "private" and eks.public_access_cidrs:
        out.error("eks.public_access_cidrs", "needs endpoint_access public or public_and_private")
    if eks.endpoint_access != "private" and not eks.public_access_cidrs and not adopted:
        out.error(
            "eks.public_access_cidrs",
            f"endpoint_access {eks.endpoint_access} needs the networks allowed to reach the public "
            "endpoint; an empty list opens the Kubernetes API to the internet",
        )
    for i, block in enumerate(eks.public_access_cidrs):
        if block.prefixlen == 0:
            out.error(
                f"eks.public_access_cidrs[{i}]",
                "0.0.0.0/0 opens the API endpoint to the internet; list the networks that need it",
            )
    # several wide blocks are the internet too (0.0.0.0/1 + 128.0.0.0/1; security review L1):
    # what the blocks cover together is measured, not each block's prefix
    if not any(block.prefixlen == 0 for block in eks.public_access_cidrs):
        for version, limit in ((4, PUBLIC_ENDPOINT_MAX_V4), (6, PUBLIC_ENDPOINT_MAX_V6)):
            blocks = [b for b in eks.public_access_cidrs if b.version == version]
            covered = sum(n.num_addresses for n in ipaddress.collapse_addresses(blocks))
            if covered > limit.num_addresses:
                out.error(
                    "eks.public_access_cidrs",
                    f"the IPv{version} blocks together cover {covered:,} addresses "
                    f"({covered / 2**limit.max_prefixlen:.1%} of the address space), more than a "
                    f"/{limit.prefixlen}; list the networks that need the API endpoint",
                )


def _check_eks_dependencies(cfg: EnvironmentConfig, out: IssueSink) -> None:
    if cfg.is_slurm:
        return
    # pure data, no CDK: safe to import during validation

    eks = cfg.eks_settings
    deps = eks.dependencies
    path = "eks.dependencies"
    cluster = cfg.cluster
    enabled = deps.enabled()
    if eks.cluster_arn is not None:
        _check_adopted_choices(cfg, out)
    if not eks.image_registry:
        for component, image in chart.unsupported_region_images(enabled, cfg.region).items():
            out.error(
                f"{path}.{component}",
                f"its image is not published in {cfg.region} (AWS publishes it in "
                f"{', '.join(sorted(chart.image_regions(image)))}); switch it off, or mirror it "
                "and set eks.image_registry",
            )
    if not deps.health_monitoring_agent:
        if cluster.node_recovery == "Automatic":
            out.error(
                f"{path}.health_monitoring_agent",
                "cluster.node_recovery: Automatic needs the health monitoring agent, which reports "
                "faulty nodes; switch it on or set cluster.node_recovery: None",
            )
        if cluster.auto_scaling:
            out.error(
                f"{path}.health_monitoring_agent",
                "cluster.auto_scaling (Karpenter) needs the health monitoring agent; switch it on",
            )
    if not deps.deep_health_check:
        for i, group in enumerate(cluster.instance_groups):
            if group.deep_health_checks:
                out.error(
                    f"cluster.instance_groups[{i}].deep_health_checks",
                    f"needs {path}.deep_health_check: true (the RBAC the checks run with)",
                )
    for component in eks.chart_values.image_tags:
        if component not in enabled:
            out.error(
                f"eks.chart_values.image_tags.{component}",
                f"{path}.{component} is off: nothing would use this tag",
            )
    if cfg.network.closed_network:
        _check_closed_network_images(cfg, enabled, out)
    check_chart_instance_types(cfg, out)


def _check_adopted_choices(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """On an adopted (shared) cluster the config says what to install, component by component."""
    eks = cfg.eks_settings
    deps = eks.dependencies
    unsaid = [key for key in type(deps).model_fields if not deps.is_set(key)]
    if unsaid:
        where = "eks.dependencies" if len(unsaid) > 1 else f"eks.dependencies.{unsaid[0]}"
        out.error(
            where,
            "eks.cluster_arn adopts a cluster that may already run some of these: say for each "
            f"whether the app installs it (true) or the cluster's owner has it (false): "
            f"{', '.join(unsaid)}",
        )
    addons = eks.addons
    if cfg.storage.fsx.enabled and not addons.is_set("fsx_csi_driver"):
        out.error(
            "eks.addons.fsx_csi_driver",
            "eks.cluster_arn adopts a cluster that may already have the FSx CSI driver add-on: "
            "say whether the app installs it (true) or the cluster has it (false)",
        )


def _check_closed_network_images(
    cfg: EnvironmentConfig, enabled: list[str], out: IssueSink
) -> None:
    """A closed network reaches private Amazon ECR registries (through endpoints) only."""

    registry = cfg.eks_settings.image_registry
    if registry:
        if not _is_private_ecr(registry):
            out.error(
                "eks.image_registry",
                "a closed network reaches only private Amazon ECR registries (through the "
                "ecr.api/ecr.dkr endpoints); use an ECR pull-through cache or mirror "
                "(<account>.dkr.ecr.<region>.amazonaws.com/<prefix>)",
            )
        return
    for component in enabled:
        try:
            images = chart.component_images(component, cfg.region)
        except KeyError:
            continue  # not published in the region: reported above
        public = [i for i in images if not _is_private_ecr(i)]
        if public:
            out.error(
                f"eks.dependencies.{component}",
                f"a closed network cannot pull {public[0]} (no NAT); mirror the chart's images "
                "into an Amazon ECR registry and set eks.image_registry, switch the component "
                "off, or give the network a NAT (closed_network: false)",
            )


def _is_private_ecr(image: str) -> bool:
    """True for an image (or registry) in a private Amazon ECR registry (reachable through
    endpoints)."""
    host = image.split("/", 1)[0]
    return ".dkr.ecr." in host and host.endswith(".amazonaws.com")


def _check_eks_addons(cfg: EnvironmentConfig, out: IssueSink) -> None:
    if cfg.is_slurm:
        return
    addons = cfg.eks_settings.addons
    # (with inference the driver is wanted for the operator's own volumes, without a file system)
    if (
        addons.fsx_csi_driver is True
        and not cfg.storage.fsx.enabled
        and addons.inference_settings is None
    ):
        out.error(
            "eks.addons.fsx_csi_driver",
            "needs a file system (storage.fsx.enabled: true): the driver mounts it into pods; "
            "or ask for {dynamic_provisioning: true}, where claims create their file systems",
        )
    needs_nodes = cfg.needs_eks_addons
    if needs_nodes and not cfg.cluster.system_pod_groups():
        what = (
            "CoreDNS and the add-ons in eks.addons"
            if cfg.eks_settings.cluster_arn is None
            else "the add-ons in eks.addons"
        )
        message = (
            f"{what} run on an instance group with a count above 0 and no NoSchedule or "
            "NoExecute taint, and every group here has count 0 or such a taint"
        )
        if cfg.eks_settings.cluster_arn is None:
            out.error(
                "cluster.instance_groups",
                f"{message}: add one (e.g. 2 x ml.m5.2xlarge) or untaint one",
            )
        else:
            out.warn(
                "cluster.instance_groups",
                f"{message}: they can start only on the adopted cluster's own nodes",
            )

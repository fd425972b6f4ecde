"""Preflight checks of ``eks.addons.inference``: what the app uses but does not create.

- ``inference oidc provider``: on an adopted cluster, the IAM OIDC provider the config names
  exists, is the cluster's (its issuer) and accepts the STS audience the roles' trust expects
  (``iam:GetOpenIDConnectProvider``, ``eks:DescribeCluster``).
- ``inference subnets``: the subnets the AWS Load Balancer Controller puts the endpoints'
  internal load balancers in carry ``kubernetes.io/role/internal-elb`` in at least two AZs
  (``ec2:DescribeSubnets``): the adopted cluster's subnets, or the adopted EKS subnets of a
  cluster the app creates. The app tags the subnets it creates itself.
- ``inference tls bucket``: an existing ``tls_bucket`` exists and this account may use it
  (``s3:GetBucketLocation``).
- ``inference alb controller`` / ``inference keda``: on an adopted cluster, the AWS Load
  Balancer Controller and KEDA operator it already runs (Deployments by image, and their CRDs,
  read through the Kubernetes API as the shared-cluster check does), against
  ``eks.addons.inference.alb_controller`` / ``keda``: ``install`` next to an existing one
  collides with it, ``existing`` with none leaves the endpoints without one.

Pure Python (no CDK import).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.inference import EXISTING, INSTALL, InferenceSettings
from hyperpod_ops.aws import ClientFactory, call_or_none, error_code
from hyperpod_ops.check import Check, failed, passed, skipped
from hyperpod_ops.k8s import (
    Kubernetes,
    KubernetesDenied,
    KubernetesUnreachable,
    MakeKubernetes,
    connect_https,
    eks_token,
)
from hyperpod_ops.shared_cluster import image_repository

OIDC_PROVIDER = "inference oidc provider"
SUBNETS = "inference subnets"
TLS_BUCKET = "inference tls bucket"
INFERENCE = "inference"

# AWS Load Balancer Controller, "Subnet auto-discovery": internal load balancers go to subnets
# tagged with this key (value 1 or empty); an ALB needs subnets in two AZs.
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
STS_AUDIENCE = "sts.amazonaws.com"
# where the add-on runs its own controllers (SageMaker developer guide, inference setup)
OPERATOR_NAMESPACE = "hyperpod-inference-system"
_DEPLOYMENTS = "/apis/apps/v1/deployments"
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class Controller:
    """A controller the add-on installs unless the cluster has one: its config key, its
    Deployment's image repository (matched on whole path segments, any registry) and its CRDs."""

    check: str
    key: str
    what: str
    image: str
    crds: tuple[str, ...]


# The AWS Load Balancer Controller's image is eks/aws-load-balancer-controller on ECR Public
# and amazon/aws-load-balancer-controller in the regional EKS registries (its Helm chart's
# values.yaml); its CRDs are in the elbv2.k8s.aws group. KEDA's operator image is
# ghcr.io/kedacore/keda (the metrics server is kedacore/keda-metrics-apiserver); its CRDs are
# in keda.sh (kedacore/charts keda/values.yaml and crds).
CONTROLLERS = (
    Controller(
        "inference alb controller",
        "alb_controller",
        "AWS Load Balancer Controller",
        "aws-load-balancer-controller",
        ("ingressclassparams.elbv2.k8s.aws", "targetgroupbindings.elbv2.k8s.aws"),
    ),
    Controller(
        "inference keda",
        "keda",
        "KEDA operator",
        "kedacore/keda",
        ("scaledobjects.keda.sh", "scaledjobs.keda.sh"),
    ),
)


def check_inference(
    config: EnvironmentConfig, clients: ClientFactory, connect: MakeKubernetes = connect_https
) -> list[Check]:
    """Every preflight check of the inference switch (one line each); a client is made only for
    a check that calls AWS; ``connect`` reaches an adopted cluster's Kubernetes API."""
    if config.is_slurm or config.eks is None:
        return [skipped(INFERENCE, "no eks section: no inference operator")]
    settings = config.eks.addons.inference_settings
    if settings is None:
        return [skipped(INFERENCE, "eks.addons.inference is off")]
    cluster_arn = config.eks.cluster_arn
    described = None
    if cluster_arn is not None:
        name = cluster_arn.rsplit("/", 1)[1]
        described = call_or_none(
            clients("eks").describe_cluster, ["ResourceNotFoundException"], name=name
        )
    return [
        _oidc_provider(config, clients, described),
        _subnets(config, clients, described),
        _tls_bucket(settings.tls_bucket, clients),
        *_controllers(config, settings, clients, described, connect),
    ]


def _controllers(
    config: EnvironmentConfig,
    settings: InferenceSettings,
    clients: ClientFactory,
    described: Any,
    connect: MakeKubernetes,
) -> list[Check]:
    assert config.eks is not None
    if config.eks.cluster_arn is None:
        return [
            skipped(c.check, f"the app creates the cluster: it runs only the add-on's {c.what}")
            for c in CONTROLLERS
        ]
    cluster = (described or {}).get("cluster") or {}
    name = config.eks.cluster_arn.rsplit("/", 1)[1]
    endpoint = str(cluster.get("endpoint") or "")
    ca_data = str((cluster.get("certificateAuthority") or {}).get("data") or "")
    if not endpoint or not ca_data:
        reason = f"{name} has no API endpoint yet" if cluster else f"{name} was not found"
        return [skipped(c.check, reason) for c in CONTROLLERS]
    try:
        api = connect(endpoint, ca_data, eks_token(clients("sts"), name))
        found = _running(api)
    except KubernetesUnreachable as exc:
        reason = (
            f"cannot reach the API endpoint of {name} from here ({exc}); run make preflight "
            "from inside the VPC to list the controllers the cluster runs"
        )
        return [skipped(c.check, reason) for c in CONTROLLERS]
    except KubernetesDenied as exc:
        reason = (
            f"the caller may not read {name}'s Deployments and CRDs ({exc}); it needs an access "
            "entry with read access (e.g. AmazonEKSAdminViewPolicy)"
        )
        return [skipped(c.check, reason) for c in CONTROLLERS]
    return [_controller(c, getattr(settings, c.key), found[c.key], name) for c in CONTROLLERS]


def _running(api: Kubernetes) -> dict[str, list[str]]:
    """Per controller key: what of it the cluster runs besides the add-on's own copy."""
    found: dict[str, list[str]] = {c.key: [] for c in CONTROLLERS}
    addon_runs: set[str] = set()
    for obj in api.items(_DEPLOYMENTS):
        meta = obj.get("metadata", {})
        containers = obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers")
        for container in containers or []:
            image = str(container.get("image", ""))
            repository = image_repository(image)
            for c in CONTROLLERS:
                if repository == c.image or repository.endswith("/" + c.image):
                    if meta.get("namespace") == OPERATOR_NAMESPACE:
                        addon_runs.add(c.key)  # the inference add-on's own, from an earlier deploy
                    else:
                        found[c.key].append(
                            f"Deployment {meta.get('namespace')}/{meta.get('name')} ({image})"
                        )
    for c in CONTROLLERS:
        if c.key in addon_runs:
            continue  # its CRDs are the add-on's
        for crd in c.crds:
            if api.get(f"{_CRDS}/{crd}") is not None:
                found[c.key].append(f"CRD {crd}")
    return found


def _controller(c: Controller, choice: str | None, found: list[str], cluster: str) -> Check:
    key = f"eks.addons.inference.{c.key}"
    listing = "; ".join(found)
    if choice == EXISTING:
        if found:
            return passed(
                c.check, f"{cluster} runs its own {c.what} ({listing}); the add-on's is off"
            )
        return failed(
            c.check,
            f"{key} is {EXISTING} but {cluster} runs no {c.what} (no Deployment of "
            f"{c.image}, none of {', '.join(c.crds)}): the inference endpoints would have none",
            f"install it on the cluster, or set {key}: {INSTALL}",
        )
    if found:
        said = f"{key} is {INSTALL}" if choice == INSTALL else f"{key} is not set"
        return failed(
            c.check,
            f"{cluster} already runs its own {c.what} ({listing}); {said}, and the add-on's own "
            "would collide with it (the add-on fails)",
            f"set {key}: {EXISTING}",
        )
    if choice is None:  # a config error already
        return failed(
            c.check,
            f"{key} is not set; {cluster} runs no {c.what}",
            f"set {key}: {INSTALL}",
        )
    return passed(c.check, f"{cluster} runs no {c.what} of its own; the add-on installs one")


def _oidc_provider(config: EnvironmentConfig, clients: ClientFactory, described: Any) -> Check:
    assert config.eks is not None
    settings = config.eks.addons.inference_settings
    assert settings is not None
    if config.eks.cluster_arn is None:
        return skipped(OIDC_PROVIDER, "the app creates the OIDC provider of the cluster it creates")
    arn = settings.oidc_provider_arn
    if arn is None:  # a config error already
        return failed(
            OIDC_PROVIDER,
            "eks.addons.inference.oidc_provider_arn is not set",
            "name the adopted cluster's IAM OIDC provider there",
        )
    provider = call_or_none(
        clients("iam").get_open_id_connect_provider, ["NoSuchEntity"], OpenIDConnectProviderArn=arn
    )
    cluster = config.eks.cluster_arn.rsplit("/", 1)[1]
    if provider is None:
        return failed(
            OIDC_PROVIDER,
            f"no IAM OIDC provider {arn} in this account",
            f"create the cluster's provider (eksctl utils associate-iam-oidc-provider --cluster "
            f"{cluster} --region {config.region} --approve) and name it in "
            "eks.addons.inference.oidc_provider_arn",
        )
    if STS_AUDIENCE not in provider.get("ClientIDList", []):
        return failed(
            OIDC_PROVIDER,
            f"{arn} does not list the audience {STS_AUDIENCE} (client ids: "
            f"{', '.join(provider.get('ClientIDList', [])) or 'none'})",
            f"aws iam add-client-id-to-open-id-connect-provider --open-id-connect-provider-arn "
            f"{arn} --client-id {STS_AUDIENCE}",
        )
    issuer = ((described or {}).get("cluster", {}).get("identity", {}).get("oidc", {}) or {}).get(
        "issuer"
    )
    expected = arn.split(":oidc-provider/", 1)[1]
    if issuer and issuer.removeprefix("https://") != expected:
        return failed(
            OIDC_PROVIDER,
            f"{arn} is not the provider of cluster {cluster}, whose issuer is {issuer}",
            "name the provider of the cluster's issuer in eks.addons.inference.oidc_provider_arn",
        )
    return passed(OIDC_PROVIDER, f"{arn} exists and accepts {STS_AUDIENCE}")


def _load_balancer_subnets(config: EnvironmentConfig, described: Any) -> list[str]:
    """The subnets the load balancer controller chooses from: the adopted cluster's, or the
    adopted EKS subnets of a cluster the app creates (none when the app creates them)."""
    assert config.eks is not None
    if config.eks.cluster_arn is not None:
        vpc_config = (described or {}).get("cluster", {}).get("resourcesVpcConfig", {})
        return [str(s) for s in vpc_config.get("subnetIds", [])]
    return list(config.network.eks_subnet_ids)


def _subnets(config: EnvironmentConfig, clients: ClientFactory, described: Any) -> Check:
    assert config.eks is not None
    if config.eks.cluster_arn is None and not config.network.eks_subnet_ids:
        return skipped(SUBNETS, f"the app creates the EKS subnets and tags them {INTERNAL_ELB_TAG}")
    subnet_ids = _load_balancer_subnets(config, described)
    if not subnet_ids:
        return failed(
            SUBNETS,
            "the adopted EKS cluster was not found or names no subnets",
            "check eks.cluster_arn (see the eks cluster check)",
        )
    subnets = clients("ec2").describe_subnets(SubnetIds=subnet_ids).get("Subnets", [])
    tagged_zones: set[str] = set()
    untagged: list[str] = []
    for subnet in subnets:
        tags = {t.get("Key"): t.get("Value") for t in subnet.get("Tags", [])}
        if tags.get(INTERNAL_ELB_TAG) in ("1", ""):
            tagged_zones.add(str(subnet.get("AvailabilityZone")))
        else:
            untagged.append(str(subnet["SubnetId"]))
    if len(tagged_zones) >= 2:
        return passed(
            SUBNETS,
            f"subnets tagged {INTERNAL_ELB_TAG} in {len(tagged_zones)} AZs "
            f"({', '.join(sorted(tagged_zones))})",
        )
    return failed(
        SUBNETS,
        f"internal load balancers need subnets tagged {INTERNAL_ELB_TAG} in two AZs; tagged AZs: "
        f"{', '.join(sorted(tagged_zones)) or 'none'}; untagged: {', '.join(untagged) or 'none'}",
        f"aws ec2 create-tags --resources {' '.join(untagged or subnet_ids)} --tags "
        f"Key={INTERNAL_ELB_TAG},Value=1",
    )


def _tls_bucket(bucket: str | None, clients: ClientFactory) -> Check:
    if bucket is None:
        return skipped(TLS_BUCKET, "the app creates the TLS bucket")
    try:
        answer = clients("s3").get_bucket_location(Bucket=bucket)
    except Exception as exc:
        code = error_code(exc)
        if code == "NoSuchBucket":
            return failed(
                TLS_BUCKET,
                f"bucket {bucket} does not exist",
                "create it, or leave out eks.addons.inference.tls_bucket and the app creates one",
            )
        if code in ("AccessDenied", "AllAccessDisabled"):
            return failed(
                TLS_BUCKET,
                f"bucket {bucket} exists but this account may not use it ({code})",
                "use a bucket of this account, or leave out eks.addons.inference.tls_bucket",
            )
        raise
    region = answer.get("LocationConstraint") or "us-east-1"
    return passed(TLS_BUCKET, f"bucket {bucket} exists (in {region})")

"""Preflight checks of eks.addons.inference: the adopted cluster's OIDC provider, the subnet tags
for internal load balancers, an existing TLS bucket (botocore Stubber)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from ops_testkit import FAKE_CA, REGION, StubbedAws, by_name, environment
from stack_testkit import DELETE

from hyperpod_ops.aws import READ_ONLY_ACTIONS
from hyperpod_ops.inference import (
    CONTROLLERS,
    INFERENCE,
    INTERNAL_ELB_TAG,
    OIDC_PROVIDER,
    SUBNETS,
    TLS_BUCKET,
    check_inference,
)
from hyperpod_ops.k8s import Kubernetes, KubernetesUnreachable, Response

KEY = "eks.addons.inference"
CLUSTER = "shared-platform"
ISSUER_ID = "EXAMPLED539D4633E53DE1B71EXAMPLE"
ISSUER = f"oidc.eks.{REGION}.amazonaws.com/id/{ISSUER_ID}"
PROVIDER = f"arn:aws:iam::111122223333:oidc-provider/{ISSUER}"
SUBNET_A, SUBNET_B = "subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"


@pytest.fixture
def s3() -> Iterator[Stubber]:
    # a botocore session of its own: boto3 adds its S3 transfer methods once per session
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
        botocore_session=botocore.session.get_session(),
    )
    client = session.client("s3")
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def factory(aws: StubbedAws, s3: Stubber | None = None) -> Any:
    def clients(service: str) -> Any:
        if service == "s3":
            assert s3 is not None, "no S3 call expected"
            return s3.client
        return aws(service)

    return clients


def adopted(**inference: Any) -> Any:
    return environment(
        "eks-existing-cluster",
        {
            "eks.addons.fsx_csi_driver": True,
            KEY: {
                "oidc_provider_arn": PROVIDER,
                "alb_controller": "install",
                "keda": "install",
                **inference,
            },
        },
    )


def cluster(aws: StubbedAws, *, issuer: str = ISSUER, subnets: tuple[str, ...] = (SUBNET_A, SUBNET_B), api: bool = False) -> None:  # fmt: skip
    """DescribeCluster of the adopted cluster; ``api``: with its endpoint and CA."""
    endpoint = {"endpoint": "https://example.eks.amazonaws.com", "certificateAuthority": {"data": FAKE_CA}}  # fmt: skip
    aws.stub("eks").add_response(
        "describe_cluster",
        {
            "cluster": {
                **(endpoint if api else {}),
                "name": CLUSTER,
                "identity": {"oidc": {"issuer": f"https://{issuer}"}},
                "resourcesVpcConfig": {
                    "subnetIds": list(subnets),
                    "vpcId": "vpc-0123456789abcdef0",
                },
            }
        },
        {"name": CLUSTER},
    )


def provider(aws: StubbedAws, client_ids: tuple[str, ...] = ("sts.amazonaws.com",)) -> None:
    aws.stub("iam").add_response(
        "get_open_id_connect_provider",
        {"Url": ISSUER, "ClientIDList": list(client_ids), "ThumbprintList": []},
        {"OpenIDConnectProviderArn": PROVIDER},
    )


def subnets(aws: StubbedAws, tagged: dict[str, str | None], ids: list[str] | None = None) -> None:
    """``tagged``: subnet id -> its AZ when tagged, None when not."""
    answer = []
    for index, (subnet_id, zone) in enumerate(tagged.items()):
        entry: dict[str, Any] = {
            "SubnetId": subnet_id,
            "AvailabilityZone": zone or f"{REGION}{'abc'[index]}",
            "Tags": [{"Key": INTERNAL_ELB_TAG, "Value": "1"}] if zone else [],
        }
        answer.append(entry)
    aws.stub("ec2").add_response(
        "describe_subnets", {"Subnets": answer}, {"SubnetIds": ids or list(tagged)}
    )


def test_a_created_cluster_needs_no_call(aws: StubbedAws) -> None:
    checks = by_name(check_inference(environment("eks-full"), factory(aws)))
    assert {name: c.outcome for name, c in checks.items()} == {
        OIDC_PROVIDER: "skip",
        SUBNETS: "skip",
        TLS_BUCKET: "skip",
        ALB: "skip",
        KEDA: "skip",
    }
    assert aws.called == set()


def test_inference_off_is_one_skip(aws: StubbedAws) -> None:
    (check,) = check_inference(environment("eks-minimal"), factory(aws))
    assert (check.name, check.outcome) == (INFERENCE, "skip")
    (check,) = check_inference(environment("default"), factory(aws))
    assert check.outcome == "skip"


def test_an_adopted_cluster_that_is_ready(aws: StubbedAws) -> None:
    cluster(aws)
    provider(aws)
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    checks = by_name(check_inference(adopted(), factory(aws)))
    assert checks[OIDC_PROVIDER].outcome == "pass"
    assert checks[SUBNETS].outcome == "pass"
    assert "2 AZs" in checks[SUBNETS].detail
    assert checks[TLS_BUCKET].outcome == "skip"
    aws.verify()
    assert aws.called <= set(READ_ONLY_ACTIONS)
    assert {
        "iam:GetOpenIDConnectProvider",
        "eks:DescribeCluster",
        "ec2:DescribeSubnets",
    } <= aws.called


def test_a_missing_provider_says_how_to_create_it(aws: StubbedAws) -> None:
    cluster(aws)
    aws.error(
        "iam",
        "get_open_id_connect_provider",
        "NoSuchEntity",
        {"OpenIDConnectProviderArn": PROVIDER},
    )
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    check = by_name(check_inference(adopted(), factory(aws)))[OIDC_PROVIDER]
    assert check.failed
    assert PROVIDER in check.detail
    assert "eksctl utils associate-iam-oidc-provider --cluster shared-platform" in (check.fix or "")


def test_a_provider_without_the_sts_audience(aws: StubbedAws) -> None:
    cluster(aws)
    provider(aws, client_ids=("other",))
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    check = by_name(check_inference(adopted(), factory(aws)))[OIDC_PROVIDER]
    assert check.failed
    assert "add-client-id-to-open-id-connect-provider" in (check.fix or "")


def test_the_provider_of_another_cluster(aws: StubbedAws) -> None:
    cluster(aws, issuer=f"oidc.eks.{REGION}.amazonaws.com/id/0THER")
    provider(aws)
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    check = by_name(check_inference(adopted(), factory(aws)))[OIDC_PROVIDER]
    assert check.failed
    assert "is not the provider of cluster shared-platform" in check.detail


def test_untagged_subnets_are_named_with_the_command(aws: StubbedAws) -> None:
    cluster(aws)
    provider(aws)
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: None})
    check = by_name(check_inference(adopted(), factory(aws)))[SUBNETS]
    assert check.failed
    assert "tagged AZs: us-west-2a" in check.detail
    assert f"untagged: {SUBNET_B}" in check.detail
    assert check.fix == (
        f"aws ec2 create-tags --resources {SUBNET_B} --tags Key={INTERNAL_ELB_TAG},Value=1"
    )


def test_a_created_cluster_in_adopted_eks_subnets_is_checked(aws: StubbedAws) -> None:
    # an adopted VPC with a cluster the app creates: the config's EKS subnets are checked
    config = environment(
        "eks-existing-cluster",
        {
            "eks.cluster_arn": DELETE,
            "network.eks_subnet_ids": [SUBNET_A, SUBNET_B],
            KEY: True,
        },
    )
    subnets(aws, {SUBNET_A: None, SUBNET_B: "us-west-2b"})
    checks = by_name(check_inference(config, factory(aws)))
    assert checks[OIDC_PROVIDER].outcome == "skip"  # the app creates it
    check = checks[SUBNETS]
    assert check.failed
    assert f"--resources {SUBNET_A} " in (check.fix or "")
    aws.verify()


def test_an_existing_tls_bucket(aws: StubbedAws, s3: Stubber) -> None:
    cluster(aws)
    provider(aws)
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    s3.add_response(
        "get_bucket_location", {"LocationConstraint": "us-west-2"}, {"Bucket": "hyperpod-tls-x"}
    )
    check = by_name(check_inference(adopted(tls_bucket="hyperpod-tls-x"), factory(aws, s3)))[
        TLS_BUCKET
    ]
    assert check.outcome == "pass"
    assert "hyperpod-tls-x exists (in us-west-2)" in check.detail


@pytest.mark.parametrize(
    ("code", "fragment"),
    [("NoSuchBucket", "does not exist"), ("AccessDenied", "may not use it (AccessDenied)")],
)
def test_a_tls_bucket_that_is_missing_or_foreign(aws: StubbedAws, s3: Stubber, code: str, fragment: str) -> None:  # fmt: skip
    cluster(aws)
    provider(aws)
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    s3.add_client_error("get_bucket_location", service_error_code=code, http_status_code=404,
                        expected_params={"Bucket": "hyperpod-tls-x"})  # fmt: skip
    check = by_name(check_inference(adopted(tls_bucket="hyperpod-tls-x"), factory(aws, s3)))[
        TLS_BUCKET
    ]
    assert check.failed
    assert fragment in check.detail
    assert "tls_bucket" in (check.fix or "")


# -- the controllers an adopted cluster already runs ----------------------------------------------

ALB, KEDA = (c.check for c in CONTROLLERS)
DEPLOYMENTS = "/apis/apps/v1/deployments"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"


class FakeApi:
    """An API server answering as the real one does for what the check reads: a list of every
    namespace's Deployments, a CRD by name (404 when absent)."""

    def __init__(self, deployments: list[dict[str, Any]] = (), crds: tuple[str, ...] = (),
                 down: bool = False) -> None:  # fmt: skip
        self.deployments, self.crds, self.down = list(deployments), set(crds), down

    def __call__(self, method: str, path: str, body: dict[str, Any] | None) -> Response:
        assert method == "GET" and body is None  # preflight only reads
        if self.down:
            raise KubernetesUnreachable("timed out")
        if path == DEPLOYMENTS:
            return Response(200, {"kind": "DeploymentList", "items": self.deployments})
        assert path.startswith(CRDS), path
        name = path.removeprefix(CRDS)
        if name in self.crds:
            return Response(200, {"kind": "CustomResourceDefinition", "metadata": {"name": name}})
        return Response(404, {"kind": "Status", "reason": "NotFound"})


def deployment(namespace: str, name: str, image: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }


ALB_IMAGE = "public.ecr.aws/eks/aws-load-balancer-controller:v2.13.0"
KEDA_IMAGE = "ghcr.io/kedacore/keda:2.17.0"


def controllers(aws: StubbedAws, config: Any, api: FakeApi) -> dict[str, Any]:
    cluster(aws, api=True)
    provider(aws)
    subnets(aws, {SUBNET_A: "us-west-2a", SUBNET_B: "us-west-2b"})
    checks = by_name(check_inference(config, factory(aws), connect=lambda *_: Kubernetes(api)))
    aws.verify()
    return checks


def test_an_existing_alb_controller_and_keda_are_listed_against_install(aws: StubbedAws) -> None:
    """A shared cluster's own controllers (AWS's troubleshooting page, "missing ALB Controller" /
    "missing KEDA operator": set alb/keda enabled: false when the cluster has them)."""
    api = FakeApi(
        [
            deployment("kube-system", "aws-load-balancer-controller", ALB_IMAGE),
            deployment("keda", "keda-operator", KEDA_IMAGE),
            deployment("keda", "keda-operator-metrics-apiserver", "ghcr.io/kedacore/keda-metrics-apiserver:2.17.0"),
        ],
        crds=("targetgroupbindings.elbv2.k8s.aws", "scaledobjects.keda.sh"),
    )  # fmt: skip
    checks = controllers(aws, adopted(), api)
    alb, keda = checks[ALB], checks[KEDA]
    assert alb.outcome == keda.outcome == "fail"
    assert f"Deployment kube-system/aws-load-balancer-controller ({ALB_IMAGE})" in alb.detail
    assert "CRD targetgroupbindings.elbv2.k8s.aws" in alb.detail
    assert alb.fix == f"set {KEY}.alb_controller: existing"
    assert f"Deployment keda/keda-operator ({KEDA_IMAGE})" in keda.detail
    assert "metrics-apiserver" not in keda.detail
    assert "CRD scaledobjects.keda.sh" in keda.detail
    assert keda.fix == f"set {KEY}.keda: existing"


def test_existing_matches_what_the_cluster_runs(aws: StubbedAws) -> None:
    api = FakeApi(
        [deployment("kube-system", "alb", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-load-balancer-controller:v2.8.1")]
    )  # fmt: skip
    checks = controllers(aws, adopted(alb_controller="existing", keda="existing"), api)
    assert checks[ALB].outcome == "pass"
    assert "the add-on's is off" in checks[ALB].detail
    # existing but nothing there: the endpoints would have no KEDA
    assert checks[KEDA].outcome == "fail"
    assert "runs no KEDA operator" in checks[KEDA].detail
    assert checks[KEDA].fix.endswith(f"set {KEY}.keda: install")


def test_the_addons_own_controllers_are_not_the_clusters(aws: StubbedAws) -> None:
    """A deploy done before: the add-on's controllers in hyperpod-inference-system, its CRDs."""
    api = FakeApi(
        [
            deployment("hyperpod-inference-system", "alb", ALB_IMAGE),
            deployment("hyperpod-inference-system", "keda-operator", KEDA_IMAGE),
        ],
        crds=("targetgroupbindings.elbv2.k8s.aws", "scaledobjects.keda.sh"),
    )
    checks = controllers(aws, adopted(), api)
    assert checks[ALB].outcome == checks[KEDA].outcome == "pass"


def test_an_unreachable_api_is_a_skip(aws: StubbedAws) -> None:
    checks = controllers(aws, adopted(), FakeApi(down=True))
    assert checks[ALB].outcome == checks[KEDA].outcome == "skip"
    assert "from inside the VPC" in checks[ALB].detail

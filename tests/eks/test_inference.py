"""eks.addons.inference (HyperPodInference) in the eks-addons stack: the add-ons, their order and
minimum builds, the configuration values, the roles' trust, the S3 CSI policy, the TLS bucket,
the FSx driver without a file system, one cert-manager, the subnet tags."""

from __future__ import annotations

import json
from typing import Any

import pytest
from stack_testkit import DELETE, depends_on

from hyperpod_cdk.config.inference import MAX_ROLE_NAME, operator_role_name
from hyperpod_cdk.eks.inference import (
    INFERENCE,
    METRICS_SERVER,
    S3_CSI_DRIVER,
    SERVICE_ACCOUNTS,
    STS_AUDIENCE,
)
from hyperpod_cdk.facts import versions
from hyperpod_cdk.network.network import INTERNAL_ELB_TAG

KIND = "eks-addons"
KEY = "eks.addons.inference"
PROVIDER = (
    "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/"
    "EXAMPLED539D4633E53DE1B71EXAMPLE"
)


# -- template helpers -----------------------------------------------------------------------------


def render(value: Any) -> str:
    """A string or ``Fn::Join`` as text, each intrinsic as ``${...}`` (Ref name, GetAtt
    ``Id.Attr``, another stack's output name)."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(render(p) for p in parts)
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    if "Fn::GetStackOutput" in value:
        return "${" + value["Fn::GetStackOutput"]["OutputName"] + "}"
    raise AssertionError(f"cannot render {value}")


def addons(synth: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """The EKS add-ons of the eks-addons stack by add-on name: (logical id, resource)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for logical_id, resource in synth.resources(KIND, "AWS::EKS::Addon").items():
        name = resource["Properties"]["AddonName"]
        assert name not in found, f"two {name} add-ons"
        found[name] = (logical_id, resource)
    return found


def configuration(synth: Any) -> dict[str, Any]:
    _, addon = addons(synth)[INFERENCE]
    return json.loads(render(addon["Properties"]["ConfigurationValues"]))


def role(synth: Any, key: str) -> tuple[str, dict[str, Any]]:
    prefix = "Inference" + key.title().replace("_", "") + "Role"
    found = [
        (k, r)
        for k, r in synth.resources(KIND, "AWS::IAM::Role").items()
        if k.startswith(prefix) and k[len(prefix) :].isalnum() and len(k) == len(prefix) + 8
    ]
    assert len(found) == 1, (key, [k for k, _ in found])
    return found[0]


def trust(synth: Any, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The role's trust document (``${Issuer}`` and ``${ProviderArn}`` left as placeholders) and
    the values of the placeholders."""
    _, resource = role(synth, key)
    text, variables = resource["Properties"]["AssumeRolePolicyDocument"]["Fn::Sub"]
    return json.loads(text), variables


def web_identity(document: dict[str, Any]) -> dict[str, Any]:
    (statement,) = [
        s for s in document["Statement"] if s["Action"] == "sts:AssumeRoleWithWebIdentity"
    ]
    assert statement["Principal"] == {"Federated": "${ProviderArn}"}
    return statement["Condition"]


def services(document: dict[str, Any]) -> list[str]:
    return [s["Principal"]["Service"] for s in document["Statement"] if "Service" in s["Principal"]]


def policy_of(synth: Any, key: str) -> list[dict[str, Any]]:
    prefix = "Inference" + key.title().replace("_", "") + "Policy"
    (found,) = [
        r
        for k, r in synth.resources(KIND, "AWS::IAM::ManagedPolicy").items()
        if k.startswith(prefix) and len(k) == len(prefix) + 8
    ]
    return found["Properties"]["PolicyDocument"]["Statement"]


@pytest.fixture(scope="module")
def full(synthesized: Any) -> Any:
    return synthesized("eks-full")


# -- add-ons, order and versions ------------------------------------------------------------------


def test_the_addons_and_their_minimum_builds(full: Any) -> None:
    found = addons(full)
    for name in (S3_CSI_DRIVER, METRICS_SERVER, "cert-manager", "aws-fsx-csi-driver", INFERENCE):
        _, resource = found[name]
        build = resource["Properties"]["AddonVersion"]
        assert build == versions.addon_version(name, "1.35")
        minimum, _ = versions.MINIMUM_VERSIONS[name]
        assert versions.parse_addon_version(build) >= versions.parse_addon_version(minimum), name


def test_every_pin_is_at_or_above_its_minimum() -> None:
    assert versions.below_minimum() == []
    assert set(versions.MINIMUM_VERSIONS) <= set(versions.KNOWN_ADDONS)
    for _, source in versions.MINIMUM_VERSIONS.values():
        assert source.strip()


def test_a_pin_below_its_minimum_is_named() -> None:
    (problem,) = versions.below_minimum({"metrics-server": "v0.7.2-eksbuild.3"})
    assert "metrics-server v0.7.2-eksbuild.3 is below the minimum v0.7.2-eksbuild.4" in problem
    assert "sagemaker-hyperpod-model-deployment-setup" in problem


def test_the_inference_addon_waits_for_its_dependencies_and_task_governance(full: Any) -> None:
    found = addons(full)
    inference_id, inference = found[INFERENCE]
    waits = depends_on(inference)
    for name in (
        S3_CSI_DRIVER,
        METRICS_SERVER,
        "cert-manager",
        "aws-fsx-csi-driver",
        "amazon-sagemaker-hyperpod-taskgovernance",
    ):
        assert found[name][0] in waits, name
    # and for the nodes, like the other add-ons
    node_wait = [k for k in full.resources(KIND) if k.startswith("NodeWait")]
    assert set(node_wait) & set(waits)
    for name in (S3_CSI_DRIVER, METRICS_SERVER):
        assert set(node_wait) & set(depends_on(found[name][1])), name
        assert inference_id not in depends_on(found[name][1])


def test_the_names_match_the_preflight_copy() -> None:
    from hyperpod_ops import addons as preflight

    assert (preflight.S3_CSI_DRIVER, preflight.METRICS_SERVER, preflight.INFERENCE) == (
        S3_CSI_DRIVER,
        METRICS_SERVER,
        INFERENCE,
    )


# -- the configuration values ---------------------------------------------------------------------


def test_the_configuration_values(full: Any) -> None:
    values = configuration(full)
    operator_id, _ = role(full, "operator")
    alb_id, _ = role(full, "alb")
    keda_id, _ = role(full, "keda")
    gated_id, _ = role(full, "gated")
    assert values["executionRoleArn"] == "${" + operator_id + ".Arn}"
    assert values["tlsCertificateS3Bucket"].startswith("${InferenceTlsBucket")
    # the HyperPod cluster ARN through the stack's ready parameter
    assert values["hyperpodClusterArn"].startswith("${HyperPodReady")
    assert values["alb"] == {
        "enabled": True,
        "serviceAccount": {"create": True, "roleArn": "${" + alb_id + ".Arn}"},
    }
    assert values["keda"] == {
        "enabled": True,
        "auth": {"aws": {"irsa": {"enabled": True, "roleArn": "${" + keda_id + ".Arn}"}}},
    }
    assert values["jumpstartGatedModelDownloadRoleArn"] == "${" + gated_id + ".Arn}"
    assert values["inferenceOperator"] == {"enabled": True}
    assert values["inferenceGateway"] == {"enabled": False}


def test_the_gateway_gets_its_certificate_issuer_role(build_variant: Any) -> None:
    synth = build_variant({f"{KEY}.gateway": True}, base="eks-full", nag=False)
    gateway_id, _ = role(synth, "gateway")
    assert configuration(synth)["inferenceGateway"] == {
        "enabled": True,
        "serviceAccount": {"roleArn": "${" + gateway_id + ".Arn}"},
    }
    document, _ = trust(synth, "gateway")
    condition = web_identity(document)
    assert condition["StringEquals"]["${Issuer}:sub"] == (
        "system:serviceaccount:hyperpod-inference-system:inference-gateway-controller"
    )
    _, resource = role(synth, "gateway")
    arns = [render(a) for a in resource["Properties"]["ManagedPolicyArns"]]
    assert arns == [
        "arn:${AWS::Partition}:iam::aws:policy/AmazonSageMakerHyperPodInferenceGatewayAccess"
    ]


def test_without_gated_models_there_is_no_gated_role(build_variant: Any) -> None:
    synth = build_variant({KEY: True}, base="eks-full", nag=False)
    assert "jumpstartGatedModelDownloadRoleArn" not in configuration(synth)
    assert not [
        k for k in synth.resources(KIND, "AWS::IAM::Role") if k.startswith("InferenceGated")
    ]


# -- the roles' trust -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "subject", "sagemaker"),
    [
        ("operator", "system:serviceaccount:hyperpod-inference-system:hyperpod-inference-controller-manager", True),
        ("alb", "system:serviceaccount:hyperpod-inference-system:aws-load-balancer-controller", False),
        ("keda", "system:serviceaccount:hyperpod-inference-system:keda-operator", False),
        ("s3_csi", "system:serviceaccount:kube-system:s3-csi-driver-sa", False),
    ],
)  # fmt: skip
def test_each_role_trusts_exactly_its_service_account(
    full: Any, key: str, subject: str, sagemaker: bool
) -> None:
    document, variables = trust(full, key)
    condition = web_identity(document)
    assert condition == {"StringEquals": {"${Issuer}:aud": STS_AUDIENCE, "${Issuer}:sub": subject}}
    assert services(document) == (["sagemaker.amazonaws.com"] if sagemaker else [])
    # the provider the app creates for the cluster, and its issuer (no https://)
    (provider_id,) = full.resources(KIND, "AWS::IAM::OIDCProvider")
    assert variables["ProviderArn"] == {"Ref": provider_id}
    assert variables["Issuer"] == {
        "Fn::Select": [1, {"Fn::Split": [":oidc-provider/", {"Ref": provider_id}]}]
    }
    assert f"system:serviceaccount:{SERVICE_ACCOUNTS[key].namespace}:" in subject


def test_the_gated_role_trusts_the_model_accounts_of_the_named_namespaces(full: Any) -> None:
    document, _ = trust(full, "gated")
    condition = web_identity(document)
    assert condition["StringEquals"] == {"${Issuer}:aud": STS_AUDIENCE}
    assert condition["StringLike"] == {
        "${Issuer}:sub": [
            "system:serviceaccount:hyperpod-ns-research:hyperpod-inference-service-account*",
            "system:serviceaccount:hyperpod-ns-applied:hyperpod-inference-service-account*",
        ]
    }
    assert services(document) == ["sagemaker.amazonaws.com"]


def test_gated_models_true_trusts_every_namespace(build_variant: Any) -> None:
    synth = build_variant({f"{KEY}.gated_models": True}, base="eks-full", nag=False)
    condition = web_identity(trust(synth, "gated")[0])
    assert condition["StringLike"] == {
        "${Issuer}:sub": "system:serviceaccount:*:hyperpod-inference-service-account*"
    }


def test_the_oidc_provider_of_the_created_cluster(full: Any) -> None:
    (provider,) = full.resources(KIND, "AWS::IAM::OIDCProvider").values()
    assert provider["Properties"]["ClientIdList"] == [STS_AUDIENCE]
    url = full.resolve(provider["Properties"]["Url"])
    assert url == {"Fn::GetAtt": ["EksCluster", "OpenIdConnectIssuerUrl"]}


def test_the_managed_policies(full: Any) -> None:
    for key, policy in (
        ("operator", "AmazonSageMakerHyperPodInferenceAccess"),
        ("gated", "AmazonSageMakerHyperPodGatedModelAccess"),
    ):
        _, resource = role(full, key)
        arns = [render(a) for a in resource["Properties"]["ManagedPolicyArns"]]
        assert arns == [f"arn:${{AWS::Partition}}:iam::aws:policy/{policy}"], key


def test_the_operator_role_is_named_for_the_addon_and_its_managed_policy(full: Any) -> None:
    """AWS's chart, installed as the add-on, fails unless the execution role's name starts with
    SageMakerHyperPodInference (aws/sagemaker-hyperpod-cli@011ca927:helm_chart/HyperPodHelmChart/
    charts/inference-operator/templates/_validateRequiredValues.tpl), and the operator's managed
    policy passes only role/SageMakerHyperPodInference* (AWS managed policy reference,
    https://docs.aws.amazon.com/aws-managed-policy/latest/reference/
    AmazonSageMakerHyperPodInferenceAccess.html, v3 AllowPassRoleToSageMaker): so the name, and
    the path / although eks-full sets iam.role_path /hyperpod/ (the other roles keep it)."""
    _, resource = role(full, "operator")
    assert resource["Properties"]["RoleName"] == "SageMakerHyperPodInference-eks-full-us-west-2"
    assert resource["Properties"]["Path"] == "/"
    _, alb = role(full, "alb")
    assert alb["Properties"]["Path"] == "/hyperpod/"
    assert "RoleName" not in alb["Properties"]


def test_the_operator_role_name_fits_iam_and_stays_unique() -> None:
    """IAM role names: at most 64 characters (IAM user guide, IAM object quotas)."""
    longest = "e" * 31 + "x"
    names = {
        operator_role_name(env, region)
        for env in (longest, longest[:-1] + "y", "eks-full")
        for region in ("us-west-2", "ap-southeast-3")
    }
    assert len(names) == 6
    for name in names:
        assert name.startswith("SageMakerHyperPodInference-"), name
        assert len(name) <= MAX_ROLE_NAME, name


# -- the S3 CSI driver's policy -------------------------------------------------------------------


def test_the_s3_csi_policy_reaches_the_named_buckets_only(build_variant: Any) -> None:
    synth = build_variant(
        {f"{KEY}.s3_buckets": ["models-a", "models-b"]}, base="eks-full", nag=False
    )
    statements = {s["Sid"]: s for s in policy_of(synth, "s3_csi")}
    buckets = [render(r) for r in statements["MountpointListBuckets"]["Resource"]]
    objects = [render(r) for r in statements["MountpointObjects"]["Resource"]]
    (data_param,) = [
        k for k in synth.resources(KIND, "AWS::SSM::Parameter") if "DataBucketName" in k
    ]
    data = "arn:aws:s3:::${" + data_param + ".Value}"
    assert sorted(buckets) == sorted([data, "arn:aws:s3:::models-a", "arn:aws:s3:::models-b"])
    assert sorted(objects) == sorted(f"{b}/*" for b in buckets)
    assert statements["MountpointListBuckets"]["Action"] == "s3:ListBucket"
    assert sorted(statements["MountpointObjects"]["Action"]) == [
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
    ]
    text = json.dumps(statements)
    assert "s3:*" not in text and '"*"' not in text and "arn:aws:s3:::*" not in text
    # the data bucket's key, through S3 only
    key = statements["DataBucketKey"]
    assert key["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert "s3.us-west-2." in render(key["Condition"]["StringEquals"]["kms:ViaService"])
    # the parameter holds the storage stack's data bucket
    parameter = synth.resources(KIND)[data_param]
    assert synth.resolve(parameter["Properties"]["Value"]) == {"Ref": "DataBucket"}
    # and the driver add-on uses the role
    _, driver = addons(synth)[S3_CSI_DRIVER]
    s3_role, _ = role(synth, "s3_csi")
    assert driver["Properties"]["ServiceAccountRoleArn"] == {"Fn::GetAtt": [s3_role, "Arn"]}


# -- the TLS bucket -------------------------------------------------------------------------------


def test_the_tls_bucket(full: Any) -> None:
    buckets = full.resources(KIND, "AWS::S3::Bucket")
    (tls_id,) = [k for k in buckets if k.startswith("InferenceTlsBucket") and "AccessLogs" not in k]
    (logs_id,) = [k for k in buckets if k.startswith("InferenceTlsBucketAccessLogs")]
    tls = buckets[tls_id]
    props = tls["Properties"]
    assert props["BucketName"] == "hyperpod-tls-eks-full-111122223333-us-west-2"
    assert tls["DeletionPolicy"] == "Retain" and tls["UpdateReplacePolicy"] == "Retain"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}
    assert buckets[logs_id]["DeletionPolicy"] == "Retain"
    # TLS only
    (policy,) = [
        p
        for p in full.resources(KIND, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": tls_id}
    ]
    (deny,) = [
        s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"
    ]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_an_existing_tls_bucket_outside_the_prefix(build_variant: Any) -> None:
    synth = build_variant({f"{KEY}.tls_bucket": "my-certificates"}, base="eks-full")
    assert not [k for k in synth.resources(KIND, "AWS::S3::Bucket") if k.startswith("InferenceTls")]
    assert configuration(synth)["tlsCertificateS3Bucket"] == "my-certificates"
    statements = {s["Sid"]: s for s in policy_of(synth, "tls_bucket")}
    objects = "arn:aws:s3:::my-certificates/*"
    assert statements["TLSBucketGetObjects"]["Resource"] == objects
    assert statements["TLSBucketPutObjects"]["Action"] == ["s3:PutObject", "s3:PutObjectTagging"]
    assert statements["TLSBucketDeleteObjects"]["Condition"] == {
        "StringEquals": {"aws:ResourceAccount": "111122223333"}
    }


# -- the FSx CSI driver and cert-manager ----------------------------------------------------------


def _no_file_system() -> dict[str, Any]:
    return {"storage.fsx": {"enabled": False}, "eks.addons.fsx_csi_driver": DELETE}


def test_inference_turns_the_fsx_driver_on_without_a_file_system(build_variant: Any) -> None:
    synth = build_variant(_no_file_system(), base="eks-full")
    found = addons(synth)
    assert "aws-fsx-csi-driver" in found
    assert found["aws-fsx-csi-driver"][0] in depends_on(found[INFERENCE][1])
    # no static volume: there is no file system to point at
    manifests = json.dumps(synth.resources(KIND, "Custom::AWSCDK-EKS-KubernetesResource"))
    assert "PersistentVolume" not in manifests


def test_one_cert_manager_with_the_training_operator_and_without(
    full: Any, build_variant: Any
) -> None:
    # eks-full: the training operator's cert-manager serves both
    certs = [r for r in full.resources(KIND, "AWS::EKS::Addon").values()
             if r["Properties"]["AddonName"] == "cert-manager"]  # fmt: skip
    assert len(certs) == 1
    synth = build_variant({"eks.addons.training_operator": False}, base="eks-full", nag=False)
    found = addons(synth)  # asserts no duplicates
    cert_id, cert = found["cert-manager"]
    assert cert_id.startswith("InferenceCertManager")
    assert cert_id in depends_on(found[INFERENCE][1])
    assert json.loads(cert["Properties"]["ConfigurationValues"])["tolerations"] == [
        {"operator": "Exists"}
    ]


# -- subnets and the adopted cluster --------------------------------------------------------------


def test_the_eks_subnets_are_tagged_for_internal_load_balancers(full: Any) -> None:
    subnets = full.network_resources("AWS::EC2::Subnet")
    tagged = {
        k: {t["Key"]: t["Value"] for t in r["Properties"].get("Tags", [])}
        for k, r in subnets.items()
    }
    eks = [k for k in tagged if k.startswith("NetworkEks")]
    assert len(eks) == 2
    for logical_id, tags in tagged.items():
        assert (tags.get(INTERNAL_ELB_TAG) == "1") == (logical_id in eks), logical_id


def test_without_inference_no_subnet_tag(build_variant: Any) -> None:
    synth = build_variant({KEY: False}, base="eks-full", nag=False)
    text = json.dumps(synth.network_resources("AWS::EC2::Subnet"))
    assert INTERNAL_ELB_TAG not in text
    assert INFERENCE not in addons(synth)


def test_an_adopted_cluster_uses_its_named_provider(build_variant: Any) -> None:
    """Also: a controller the cluster already runs is switched off in the add-on, as AWS's
    troubleshooting page documents (https://docs.aws.amazon.com/sagemaker/latest/dg/
    sagemaker-hyperpod-model-deployment-ts.html, "missing ALB Controller", Option 2:
    alb: {enabled: false}), and gets no role; the one the add-on installs keeps its role."""
    synth = build_variant(
        {
            "eks.addons.fsx_csi_driver": True,
            KEY: {"oidc_provider_arn": PROVIDER, "alb_controller": "existing", "keda": "install"},
        },
        base="eks-existing-cluster",
    )
    values = configuration(synth)
    assert values["alb"] == {"enabled": False}
    keda_id, _ = role(synth, "keda")
    assert values["keda"]["enabled"] is True
    assert values["keda"]["auth"]["aws"]["irsa"]["roleArn"] == "${" + keda_id + ".Arn}"
    assert not [
        k for k in synth.resources(KIND, "AWS::IAM::Role") if k.startswith("InferenceAlbRole")
    ]
    assert not [
        k
        for k in synth.resources(KIND, "AWS::IAM::ManagedPolicy")
        if k.startswith("InferenceAlbPolicy")
    ]
    assert not synth.resources(KIND, "AWS::IAM::OIDCProvider")
    document, variables = trust(synth, "operator")
    assert variables == {
        "ProviderArn": PROVIDER,
        "Issuer": "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
    }
    assert web_identity(document)["StringEquals"]["${Issuer}:sub"].endswith(
        ":hyperpod-inference-controller-manager"
    )
    found = addons(synth)
    assert found[INFERENCE][1]["Properties"]["PreserveOnDelete"] is True
    assert found[INFERENCE][1]["Properties"]["ResolveConflicts"] == "NONE"

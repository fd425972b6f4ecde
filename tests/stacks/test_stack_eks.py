"""EKS orchestration: the EKS cluster, what HyperPod needs on it, the HyperPod EKS cluster, the
add-ons after it, and the order of all of these (issue 3).

cdk-nag's EKS rules do not look at ``aws_eks_v2`` clusters, so endpoint access and
control-plane logging are asserted here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from stack_testkit import EKS_CONFIGS, as_list, config_id, depends_on, shipped_params, tags

from hyperpod_cdk.facts import chart
from hyperpod_cdk.facts.chart import DEPENDENCY_KEYS
from hyperpod_cdk.facts.versions import MIN_VPC_CNI, addon_version, parse_addon_version
from stacks.layout import needs_eks_addons

ALL_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
HELM_CHART = "Custom::AWSCDK-EKS-HelmChart"
NODE_WAIT = "Custom::HyperPodNodeWait"
CREATED = shipped_params(lambda c: not c.is_slurm and c.eks_settings.cluster_arn is None)
ADOPTED = shipped_params(lambda c: not c.is_slurm and c.eks_settings.cluster_arn is not None)


def eks_cluster(synth) -> dict[str, Any]:
    _, resource = synth.one("eks", "AWS::EKS::Cluster")
    return resource["Properties"]


def hyperpod(synth) -> dict[str, Any]:
    return synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"]


def manifests(synth, kind: str = "eks-dependencies") -> dict[str, dict[str, Any]]:
    return synth.resources(kind, MANIFEST)


def releases(synth, kind: str = "eks-dependencies") -> dict[str, dict[str, Any]]:
    return synth.resources(kind, HELM_CHART)


def orchestrating_cluster_arn(synth) -> Any:
    """The HyperPod cluster's EKS cluster ARN, read through the eks-dependencies ready parameter."""
    return synth.resolve(hyperpod(synth)["Orchestrator"]["Eks"]["ClusterArn"])


def manifest_objects(resource: dict[str, Any]) -> list[dict[str, Any]]:
    """The Kubernetes objects of a manifest resource; CloudFormation values become "<token>"."""
    manifest = resource["Properties"]["Manifest"]
    if isinstance(manifest, dict):  # Fn::Join of literal JSON and tokens (file system id, ...)
        separator, parts = manifest["Fn::Join"]
        manifest = separator.join(p if isinstance(p, str) else "<token>" for p in parts)
    return json.loads(manifest)


def addons(synth, kind: str) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["AddonName"]: r for r in synth.resources(kind, "AWS::EKS::Addon").values()
    }


# -- the EKS cluster -------------------------------------------------------------------------


@pytest.mark.parametrize("path", CREATED)
def test_eks_cluster_uses_api_authentication(path: Path, synthesized) -> None:
    assert eks_cluster(synthesized(path))["AccessConfig"]["AuthenticationMode"] == "API"


@pytest.mark.parametrize("path", CREATED)
def test_eks_cluster_logs_what_the_config_says(path: Path, synthesized) -> None:
    synth = synthesized(path)
    enabled = eks_cluster(synth)["Logging"]["ClusterLogging"]["EnabledTypes"]
    assert [t["Type"] for t in enabled] == synth.config.eks_settings.logging


def test_eks_cluster_logs_all_five_types_by_default(synthesized) -> None:
    synth = synthesized("eks-minimal")
    assert not synth.config.eks_settings.is_set("logging") if synth.config.eks else True
    enabled = eks_cluster(synth)["Logging"]["ClusterLogging"]["EnabledTypes"]
    assert [t["Type"] for t in enabled] == ALL_LOG_TYPES


@pytest.mark.parametrize("path", CREATED)
def test_eks_control_plane_spans_two_azs_outside_the_hyperpod_subnet(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    subnet_ids = synth.resolve(eks_cluster(synth)["ResourcesVpcConfig"]["SubnetIds"])
    network = synth.template("network")["Resources"]
    subnets = [network[s["Ref"]]["Properties"] for s in subnet_ids]
    azs = {s["AvailabilityZoneId"] for s in subnets}
    assert len(subnets) >= 2 and len(azs) >= 2
    assert azs == set(synth.config.network.eks_availability_zone_ids)
    assert str(synth.config.network.compute_cidr) not in {s["CidrBlock"] for s in subnets}


@pytest.mark.parametrize("path", CREATED)
def test_eks_endpoint_is_private_by_default(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert synth.config.eks_settings.endpoint_access == "private"
    vpc = eks_cluster(synth)["ResourcesVpcConfig"]
    assert vpc["EndpointPrivateAccess"] is True
    assert vpc["EndpointPublicAccess"] is False
    assert "PublicAccessCidrs" not in vpc


@pytest.mark.parametrize(
    ("access", "cidrs", "private"),
    [("public_and_private", ["203.0.113.0/24"], True), ("public", ["198.51.100.0/24"], False)],
    ids=["public_and_private", "public"],
)
def test_eks_endpoint_follows_the_config(
    build_variant, access: str, cidrs: list[str], private: bool
) -> None:
    synth = build_variant(
        {"eks": {"endpoint_access": access, "public_access_cidrs": cidrs}}, base="eks-minimal"
    )
    vpc = eks_cluster(synth)["ResourcesVpcConfig"]
    assert vpc["EndpointPublicAccess"] is True
    assert vpc["EndpointPrivateAccess"] is private
    assert vpc["PublicAccessCidrs"] == cidrs


@pytest.mark.parametrize("path", CREATED)
def test_eks_secrets_are_encrypted_with_a_rotating_key(path: Path, synthesized) -> None:
    synth = synthesized(path)
    (config,) = eks_cluster(synth)["EncryptionConfig"]
    assert config["Resources"] == ["secrets"]
    key_id = config["Provider"]["KeyArn"]["Fn::GetAtt"][0]
    key = synth.template("eks")["Resources"][key_id]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize("path", CREATED)
def test_eks_version_and_name_come_from_the_config(path: Path, synthesized) -> None:
    synth = synthesized(path)
    props = eks_cluster(synth)
    assert props["Version"] == synth.config.eks_settings.kubernetes_version
    assert props["Name"] == f"{synth.config.name}-eks"
    assert "EksCluster" in synth.template("eks")["Resources"]  # stateful: pinned logical id


@pytest.mark.parametrize("path", CREATED)
def test_eks_cluster_has_no_compute_of_its_own(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert eks_cluster(synth)["ComputeConfig"] == {"Enabled": False}  # no Auto Mode
    assert synth.resources("eks", "AWS::EKS::Nodegroup") == {}


@pytest.mark.parametrize("path", CREATED)
def test_control_plane_shares_the_node_security_group(path: Path, synthesized) -> None:
    synth = synthesized(path)
    groups = synth.resolve(eks_cluster(synth)["ResourcesVpcConfig"]["SecurityGroupIds"])
    node_group = synth.resolve(synth.outputs("network")["NodeSecurityGroupId"]["Value"])
    assert groups == [node_group]


@pytest.mark.parametrize("path", CREATED)
def test_early_core_addons_are_pinned_and_coredns_waits_for_nodes(path: Path, synthesized) -> None:
    synth = synthesized(path)
    version = synth.config.eks_settings.kubernetes_version
    # beside the kubectl handler: the control plane's stack waits for neither
    assert addons(synth, "eks") == {}
    early = addons(synth, "eks-dependencies")
    assert sorted(early) == ["eks-pod-identity-agent", "kube-proxy", "vpc-cni"]
    for name, resource in early.items():
        assert resource["Properties"]["AddonVersion"] == addon_version(name, version)
        assert resource["Properties"]["ResolveConflicts"] == "OVERWRITE"
    cni = parse_addon_version(early["vpc-cni"]["Properties"]["AddonVersion"])
    assert cni[:3] >= MIN_VPC_CNI
    late = addons(synth, "eks-addons")
    assert late["coredns"]["Properties"]["AddonVersion"] == addon_version("coredns", version)


def test_admins_get_cluster_admin_access_entries(synthesized) -> None:
    synth = synthesized("eks-full")
    entries = synth.resources("eks", "AWS::EKS::AccessEntry").values()
    by_principal = {
        e["Properties"]["PrincipalArn"]: e["Properties"]
        for e in entries
        if isinstance(e["Properties"]["PrincipalArn"], str)
    }
    for arn in synth.config.eks_settings.admin_principal_arns:
        # an admin in a task governance team has that team's namespace policy too
        policy, *team_policies = by_principal[arn]["AccessPolicies"]
        assert all(p["AccessScope"]["Type"] == "namespace" for p in team_policies)
        assert policy["AccessScope"] == {"Type": "cluster"}
        assert json.dumps(policy["PolicyArn"]).endswith(
            'cluster-access-policy/AmazonEKSClusterAdminPolicy"]]}'
        )


@pytest.mark.parametrize("path", CREATED)
def test_no_access_entry_for_hyperpod_nodes(path: Path, synthesized) -> None:
    # HyperPod creates the entries of its nodes itself; a duplicate would fail its create
    synth = synthesized(path)
    execution_role = synth.outputs("nodes")["ExecutionRoleArn"]["Value"]
    for kind in ("eks", "eks-dependencies"):
        for entry in synth.resources(kind, "AWS::EKS::AccessEntry").values():
            assert synth.resolve(entry["Properties"]["PrincipalArn"]) != execution_role


@pytest.mark.parametrize("path", CREATED)
def test_kubectl_handler_runs_in_the_eks_subnets(path: Path, synthesized) -> None:
    synth = synthesized(path)
    control_plane = synth.resolve(eks_cluster(synth)["ResourcesVpcConfig"]["SubnetIds"])
    # the handler waits for the egress (NAT or endpoints); the control plane does not
    assert synth.resources("eks", "AWS::Lambda::Function") == {}
    functions = {
        k: f for k, f in synth.resources("eks-dependencies", "AWS::Lambda::Function").items()
        # the node wait's, in the HyperPod subnet (below); task governance's call only the
        # SageMaker API, outside the VPC (tests/stacks/test_stack_task_governance.py)
        if not k.startswith(("NodeWait", "TaskGovernanceHandler"))
    }  # fmt: skip
    assert functions
    for function in functions.values():
        assert synth.resolve(function["Properties"]["VpcConfig"]["SubnetIds"]) == control_plane
    assert "egress" in synth.dependencies("eks-dependencies")
    assert "egress" not in synth.dependencies("eks")


# -- an adopted EKS cluster ------------------------------------------------------------------


@pytest.mark.parametrize("path", ADOPTED)
def test_adopted_cluster_is_referenced_not_created(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert not synth.has("eks")  # no control plane to create
    assert synth.resources("eks-dependencies", "AWS::EKS::Cluster") == {}
    assert synth.resources("eks-dependencies", "AWS::EKS::Addon") == {}
    arn = synth.config.eks_settings.cluster_arn
    assert orchestrating_cluster_arn(synth) == arn
    assert synth.outputs("eks-dependencies")["EksClusterArn"]["Value"] == arn


@pytest.mark.parametrize("path", ADOPTED)
def test_adopted_cluster_gets_a_kubectl_handler_in_the_hyperpod_subnet(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    net = synth.config.network
    functions = synth.resources("eks-dependencies", "AWS::Lambda::Function").values()
    assert functions
    for function in functions:
        vpc = function["Properties"]["VpcConfig"]
        assert vpc["SubnetIds"] == [net.compute_subnet_id]
        assert set(net.security_group_ids) <= set(json.dumps(vpc["SecurityGroupIds"]).split('"'))
    (entry,) = synth.resources("eks-dependencies", "AWS::EKS::AccessEntry").values()
    name = synth.config.eks_settings.cluster_arn.rsplit("/", 1)[1]
    assert entry["Properties"]["ClusterName"] == name
    assert "Fn::GetAtt" in entry["Properties"]["PrincipalArn"]


def test_adopted_cluster_with_a_kubectl_role_gets_no_access_entry(build_variant) -> None:
    role = "arn:aws:iam::111122223333:role/kubectl-admin"
    synth = build_variant({"eks.kubectl_role_arn": role}, base="eks-existing-cluster")
    assert synth.resources("eks-dependencies", "AWS::EKS::AccessEntry") == {}
    handler = next(
        f
        for f in synth.resources("eks-dependencies", "AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "index.handler"
        and "kubectl" in json.dumps(f["Properties"].get("Layers", [])).lower()
        or f["Properties"]["Role"] == role
    )
    assert handler["Properties"]["Role"] == role


# -- HyperPod dependencies -------------------------------------------------------------------


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm))
def test_one_release_per_namespace_of_the_enabled_dependencies(path: Path, synthesized) -> None:
    synth = synthesized(path)
    enabled = synth.config.eks_settings.dependencies.enabled()
    found = {r["Properties"]["Release"]: r for r in releases(synth).values()}
    assert list(found) == [r.name for r in chart.releases_for(enabled)]
    for release in chart.RELEASES:
        if release.name in found:
            props = found[release.name]["Properties"]
            assert props["Namespace"] == release.namespace
            # --create-namespace for the project's namespaces, never for kube-system
            assert props.get("CreateNamespace", False) is release.create_namespace


def test_a_switched_off_dependency_is_not_installed(build_variant) -> None:
    synth = build_variant(
        {"eks.dependencies": {"mpi_operator": False, "neuron_device_plugin": False}},
        base="eks-minimal",
    )
    found = {r["Properties"]["Release"]: r for r in releases(synth).values()}
    assert "hyperpod-cdk-mpi-operator" not in found
    values = json.loads(found["hyperpod-cdk-device-plugins"]["Properties"]["Values"])
    assert values["neuronDevicePlugin"] == {"enabled": False}
    assert values["nvidiaDevicePlugin"] == {"enabled": True}


def test_the_scientist_roles_are_a_release_of_their_own_in_kubeflow(build_variant) -> None:
    on = {
        r["Properties"]["Release"]: r
        for r in releases(build_variant({}, base="eks-minimal")).values()
    }
    props = on["hyperpod-cdk-scientist-rbac"]["Properties"]
    assert props["Namespace"] == "kubeflow" and props["CreateNamespace"] is True
    assert json.loads(props["Values"])["scientistRbac"] == {"enabled": True}
    # the training operator's release in the same namespace does not render them
    values = json.loads(on["hyperpod-cdk-training-operator"]["Properties"]["Values"])
    assert values["scientistRbac"] == {"enabled": False}
    off = build_variant({"eks.dependencies": {"scientist_rbac": False}}, base="eks-minimal")
    assert "hyperpod-cdk-scientist-rbac" not in {
        r["Properties"]["Release"] for r in releases(off).values()
    }


def test_the_pod_admission_policy_holds_every_team_namespace(synthesized) -> None:
    """Security review H2/M2: the policy binds the scientist namespace and each task governance
    team's ``hyperpod-ns-<team>`` (the service makes those namespaces later; the binding selects
    them by name), so a team principal's Edit cannot run a privileged pod."""
    synth = synthesized("eks-full")
    found = {r["Properties"]["Release"]: r for r in releases(synth).values()}
    values = json.loads(found[chart.POLICY_RELEASE]["Properties"]["Values"])
    assert values["podPolicy"]["enabled"] is True
    assert set(values["podPolicy"]["namespaces"]) >= {
        "hyperpod-ns-research",
        "hyperpod-ns-applied",
    }


def test_every_dependency_off_installs_no_chart(build_variant) -> None:
    synth = build_variant(
        {
            "eks.dependencies": dict.fromkeys(DEPENDENCY_KEYS, False),
            "cluster.node_recovery": "None",
            "cluster.instance_groups[0].deep_health_checks": [],
        },
        base="eks-minimal",
    )
    assert releases(synth) == {}
    assert not synth.resources("eks-dependencies", "AWS::S3::Bucket")


def test_config_overrides_reach_the_release_values(build_variant) -> None:
    registry = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror"
    synth = build_variant(
        {
            "eks.image_registry": registry,
            "eks.chart_values": {
                "extra_tolerations": [{"key": "example.com/pool", "operator": "Exists"}],
                "extra_instance_types": {"efa": ["ml.p7.48xlarge"]},
                "image_tags": {"efa_device_plugin": "v0.5.14"},
            },
        },
        base="eks-minimal",
    )
    for resource in releases(synth).values():
        values = json.loads(resource["Properties"]["Values"])
        assert values["imageRegistry"] == registry
        assert values["extraTolerations"] == [{"key": "example.com/pool", "operator": "Exists"}]
        assert values["extraInstanceTypes"] == {"efa": ["ml.p7.48xlarge"]}
        assert values["images"] == {"efaDevicePlugin": {"tag": "v0.5.14"}}


@pytest.mark.parametrize("path", [pytest.param(p, id=config_id(p)) for p in EKS_CONFIGS])
def test_nothing_comes_from_github_at_deploy_time(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for kind in ("eks", "eks-dependencies", "cluster", "eks-addons"):
        if synth.has(kind):
            text = json.dumps(synth.template(kind)).lower()
            assert "github" not in text, kind
            assert "ghcr.io" not in text, kind


# -- the HyperPod cluster on EKS -------------------------------------------------------------


@pytest.mark.parametrize("path", CREATED)
def test_hyperpod_cluster_is_orchestrated_by_the_created_eks_cluster(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    assert orchestrating_cluster_arn(synth) == {"Fn::GetAtt": ["EksCluster", "Arn"]}
    assert "Slurm" not in hyperpod(synth)["Orchestrator"]


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm))
def test_hyperpod_cluster_waits_for_the_dependencies_and_addons_wait_for_it(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    assert "eks-dependencies" in synth.dependencies("cluster")
    assert "storage" not in synth.dependencies("cluster")
    assert "data-repositories" not in synth.dependencies("cluster")
    if synth.has("eks-addons"):
        assert "cluster" in synth.dependencies("eks-addons")


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm))
def test_groups_carry_kubernetes_labels_and_taints_and_no_slurm(path: Path, synthesized) -> None:
    synth = synthesized(path)
    groups = {g["InstanceGroupName"]: g for g in hyperpod(synth)["InstanceGroups"]}
    for group in synth.config.cluster.instance_groups:
        props = groups[group.name]
        assert "SlurmConfig" not in props
        kubernetes = props.get("KubernetesConfig", {})
        assert kubernetes.get("Labels", {}) == group.labels
        assert kubernetes.get("Taints", []) == [
            {"Effect": t.effect, "Key": t.key, **({"Value": t.value} if t.value else {})}
            for t in group.taints
        ]
        assert "InstanceStorageConfigs" not in props or all(
            "FsxLustreConfig" not in c for c in props["InstanceStorageConfigs"]
        )


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm))
def test_hyperpod_cluster_is_tagged_for_the_training_operator(path: Path, synthesized) -> None:
    synth = synthesized(path)
    resource = synth.template("cluster")["Resources"]["HyperPodCluster"]
    assert tags(resource)["SageMaker"] == "true"


def test_autoscaling_uses_karpenter_with_a_created_cluster_role(synthesized) -> None:
    synth = synthesized("eks-full")
    props = hyperpod(synth)
    assert props["AutoScaling"] == {"AutoScalerType": "Karpenter", "Mode": "Enable"}
    # the role's name, behind its literal path (issue 19: a new path must change this template)
    _, (prefix, name) = props["ClusterRole"]["Fn::Join"]
    assert prefix.endswith(":role/hyperpod/")
    role_id = synth.resolve(name)["Ref"]
    role = synth.template("nodes")["Resources"][role_id]["Properties"]
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "hyperpod.sagemaker.amazonaws.com"}
    assert props["TieredStorageConfig"] == {
        "Mode": "Enable",
        "InstanceMemoryAllocationPercentage": 20,
    }


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm))
def test_nodes_may_pull_images_and_use_pod_identity_on_their_cluster(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    (policy,) = [
        p["Properties"]
        for k, p in synth.resources("cluster", "AWS::IAM::ManagedPolicy").items()
        if k.startswith("EksNodePolicy")
    ]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert "ecr:BatchGetImage" in statements["PullImages"]["Action"]
    identity = statements["PodIdentity"]
    assert identity["Action"] == "eks-auth:AssumeRoleForPodIdentity"
    assert synth.resolve(identity["Resource"]) == synth.resolve(
        hyperpod(synth)["Orchestrator"]["Eks"]["ClusterArn"]
    )
    assert synth.resolve(as_list(policy["Roles"])[0]) is not None
    # the VPC CNI sets delete-on-termination on the interfaces it attaches: in this VPC only
    modify = statements["CniModifyInterfacesInVpc"]
    assert modify["Action"] == "ec2:ModifyNetworkInterfaceAttribute"
    vpc = synth.resolve(modify["Condition"]["ArnEquals"]["ec2:Vpc"])
    assert "vpc/" in str(vpc)
    # security review L10: attach, assign and unassign in this VPC only too
    interfaces = statements["CniInterfaces"]
    assert synth.resolve(interfaces["Condition"]["ArnEquals"]["ec2:Vpc"]) == vpc


# -- add-ons after the nodes -----------------------------------------------------------------


def test_optional_addons_are_pinned_and_installed_after_the_cluster(synthesized) -> None:
    synth = synthesized("eks-full")
    version = synth.config.eks_settings.kubernetes_version
    found = addons(synth, "eks-addons")
    for name in (
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-observability",
        "aws-fsx-csi-driver",
    ):
        assert found[name]["Properties"]["AddonVersion"] == addon_version(name, version)
    assert synth.resources("eks-addons", "AWS::APS::Workspace")
    associations = {
        (a["Properties"]["Namespace"], a["Properties"]["ServiceAccount"])
        for a in synth.resources("eks-addons", "AWS::EKS::PodIdentityAssociation").values()
    }
    assert ("aws-hyperpod", "hp-training-operator-controller-manager") in associations


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm and c.storage.fsx.enabled))
def test_pods_can_mount_the_file_system_through_the_csi_driver(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert "aws-fsx-csi-driver" in addons(synth, "eks-addons")
    (volume,) = manifests(synth, "eks-addons").values()
    objects = {o["kind"]: o for o in manifest_objects(volume)}
    pv, pvc = objects["PersistentVolume"], objects["PersistentVolumeClaim"]
    assert pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    # the volume handle is the environment's file system (a reference to the storage stack)
    parts = volume["Properties"]["Manifest"]["Fn::Join"][1]
    tokens = [synth.resolve(p) for p in parts if not isinstance(p, str)]
    assert {"Ref": "FileSystem"} in tokens
    assert pv["spec"]["csi"]["volumeHandle"] == "<token>"


def test_no_fsx_csi_driver_without_a_file_system(synthesized) -> None:
    synth = synthesized("eks-existing-cluster")
    assert not synth.config.storage.fsx.enabled
    assert not synth.has("eks-addons")


# -- network ---------------------------------------------------------------------------------


def test_closed_network_gets_the_eks_and_lambda_endpoints(build_variant) -> None:
    off = dict.fromkeys(("training_operator", "mpi_operator", "nvidia_device_plugin", "neuron_device_plugin"), False)  # fmt: skip
    synth = build_variant(
        {"network.closed_network": True, "eks.dependencies": off}, base="eks-minimal"
    )
    services = {
        json.dumps(r["Properties"]["ServiceName"])
        for r in synth.network_resources("AWS::EC2::VPCEndpoint").values()
    }
    # lambda: the kubectl handler's custom-resource framework invokes it through the Lambda API
    for service in ("eks", "eks-auth", "sts", "ecr.dkr", "lambda"):
        assert any(f".{service}" in s for s in services), service


def test_closed_network_with_a_registry_mirror_installs_every_dependency(build_variant) -> None:
    registry = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror"
    synth = build_variant(
        {"network.closed_network": True, "eks.image_registry": registry}, base="eks-minimal"
    )
    found = releases(synth)
    on = {
        key
        for r in found.values()
        for key, values_key in chart.COMPONENT_VALUES.items()
        if json.loads(r["Properties"]["Values"])[values_key]["enabled"]
    }
    assert on == set(DEPENDENCY_KEYS)
    assert all(
        json.loads(r["Properties"]["Values"])["imageRegistry"] == registry for r in found.values()
    )


@pytest.mark.parametrize("path", shipped_params(needs_eks_addons))
def test_node_addons_wait_for_a_parameter_that_reads_the_hyperpod_cluster(
    path: Path, synthesized
) -> None:
    """The add-ons that need nodes wait for the HyperPod cluster in their template (through a
    parameter holding its ARN), not only behind the stack barrier."""
    synth = synthesized(path)
    # (the inference switch adds a parameter of its own: the data bucket's name)
    ready = {
        k: p
        for k, p in synth.resources("eks-addons", "AWS::SSM::Parameter").items()
        if k.startswith("HyperPodReady")
    }
    (param_id, param), *others = ready.items()
    assert others == []
    assert synth.resolve(param["Properties"]["Value"]) == {
        "Fn::GetAtt": ["HyperPodCluster", "ClusterArn"]
    }
    waiting = {**addons(synth, "eks-addons"), **manifests(synth, "eks-addons")}
    assert waiting
    # through the node wait, which reads the parameter (a reference, so it comes after it)
    (wait_id, wait), *more = synth.resources("eks-addons", NODE_WAIT).items()
    assert more == []
    assert wait["Properties"]["ClusterArn"] == {"Fn::GetAtt": [param_id, "Value"]}
    for name, resource in waiting.items():
        assert wait_id in depends_on(resource), name


@pytest.mark.parametrize("path", shipped_params(needs_eks_addons))
def test_node_addons_wait_for_the_first_node_of_a_group_they_can_run_on(
    path: Path, synthesized
) -> None:
    """Under Continuous provisioning the cluster is InService before any node exists: the
    add-ons wait (boundedly) for a Running node of an untainted group with a count above 0."""
    synth = synthesized(path)
    (wait,) = synth.resources("eks-addons", NODE_WAIT).values()
    props = wait["Properties"]
    assert props["InstanceGroups"] == synth.config.cluster.system_pod_groups()
    assert props["MinNodes"] == 1
    assert props["TimeoutSeconds"] == synth.config.eks_settings.node_wait_minutes * 60
    # its handlers run in the HyperPod subnet (the sagemaker.api endpoint of a closed network)
    # and deploy with eks-dependencies, before the cluster: only the wait itself and its
    # ListClusterNodes policy (which names the cluster) come after it
    # (with observability.grafana the Grafana content handler is the one function here: it
    # reads this stack's Prometheus workspace, and nothing waits for this stack)
    functions = synth.resources("eks-addons", "AWS::Lambda::Function")
    assert [k for k in functions if not k.startswith("Grafana")] == []
    handlers = {
        k: f for k, f in synth.resources("eks-dependencies", "AWS::Lambda::Function").items()
        if k.startswith("NodeWait") and "VpcConfig" in f["Properties"]
    }  # fmt: skip
    assert len(handlers) == 2
    for function in handlers.values():
        assert len(function["Properties"]["VpcConfig"]["SubnetIds"]) == 1  # the HyperPod subnet
    (policy,) = [
        p for p in synth.resources("eks-addons", "AWS::IAM::ManagedPolicy").values()
        if "sagemaker:ListClusterNodes" in json.dumps(p)
    ]  # fmt: skip
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "sagemaker:ListClusterNodes"
    assert statement["Resource"] == props["ClusterArn"]


def test_tainted_and_empty_groups_are_not_waited_for(build_variant) -> None:
    synth = build_variant(
        {
            "cluster.instance_groups": [
                {"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2},
                {"name": "spare", "instance_type": "ml.m5.2xlarge", "count": 0},
                {"name": "sys", "instance_type": "ml.m5.2xlarge", "count": 1,
                 "taints": [{"key": "x", "effect": "NoExecute"}]},
            ],
            "eks.node_wait_minutes": 20,
        },
        base="eks-minimal",
    )  # fmt: skip
    (wait,) = synth.resources("eks-addons", NODE_WAIT).values()
    assert wait["Properties"]["InstanceGroups"] == ["gpu"]
    assert wait["Properties"]["TimeoutSeconds"] == 1200


# -- shared clusters -------------------------------------------------------------------------


def test_addons_on_an_adopted_cluster_never_overwrite_and_stay(build_variant) -> None:
    synth = build_variant(
        {"eks.addons": {"training_operator": True, "task_governance": True}},
        base="eks-existing-cluster",
    )
    found = addons(synth, "eks-addons")
    assert set(found) == {
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-taskgovernance",
    }
    for name, resource in found.items():
        assert resource["Properties"]["ResolveConflicts"] == "NONE", name
        assert resource["Properties"]["PreserveOnDelete"] is True, name


@pytest.mark.parametrize("path", CREATED)
def test_addons_on_a_created_cluster_own_their_objects(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for kind in ("eks-dependencies", "eks-addons"):
        for name, resource in addons(synth, kind).items():
            assert resource["Properties"]["ResolveConflicts"] == "OVERWRITE", name
            assert resource["Properties"]["PreserveOnDelete"] is False, name


def test_cert_manager_tolerates_every_taint_of_every_effect(synthesized) -> None:
    """HyperPod's nodes are the cluster's only nodes; their taints have any effect."""
    cert_manager = addons(synthesized("eks-full"), "eks-addons")["cert-manager"]
    values = json.loads(cert_manager["Properties"]["ConfigurationValues"])
    every = [{"operator": "Exists"}]
    assert values["tolerations"] == every
    assert values["webhook"]["tolerations"] == every
    assert values["cainjector"]["tolerations"] == every

"""HyperPodEksAddons: the optional HyperPod add-ons, their pod identities, the Prometheus workspace
and the FSx PersistentVolume, with what cdk-nag AwsSolutions says about them.

Each scenario is synthesized once per module (jsii start-up dominates); tests read the templates.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_eks_v2 as eks_v2
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from support.assembly import acknowledgments

from hyperpod_cdk.compliance.nag import MIN_REASON_LENGTH, register_compliance_packs
from hyperpod_cdk.config.eks import EksAddons
from hyperpod_cdk.eks.addons import HyperPodEksAddons
from hyperpod_cdk.facts.versions import addon_version
from hyperpod_cdk.storage.file_system import FileSystemHandle

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "111122223333"
REGION = "us-west-2"
KUBERNETES = "1.35"
FILE_SYSTEM = FileSystemHandle(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    mount_name="abcdefgh",
)
HYPERPOD_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdef123456"
ADDON_NAMES = {
    "cert-manager",
    "amazon-sagemaker-hyperpod-training-operator",
    "amazon-sagemaker-hyperpod-taskgovernance",
    "amazon-sagemaker-hyperpod-observability",
    "aws-fsx-csi-driver",
}


def project_context() -> dict[str, Any]:
    """The feature flags of cdk.json (partition literals included), as the app uses them."""
    context: dict[str, Any] = json.loads((PROJECT_ROOT / "cdk.json").read_text())["context"]
    return context


def imported_cluster(stack: cdk.Stack) -> eks_v2.ICluster:
    """An adopted cluster with an existing kubectl provider: the stack holds only the add-ons."""
    provider = eks_v2.KubectlProvider.from_kubectl_provider_attributes(
        stack,
        "KubectlProvider",
        service_token=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:kubectl",
        role=iam.Role.from_role_arn(stack, "KubectlRole", f"arn:aws:iam::{ACCOUNT}:role/kubectl"),
    )
    return eks_v2.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name="ml-research", kubectl_provider=provider
    )


@dataclass
class Built:
    addons: HyperPodEksAddons
    stack: cdk.Stack
    template: dict[str, Any]
    report: dict[str, Any]
    outdir: Path

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = self.template["Resources"]
        return found

    def assertions(self) -> Template:
        return Template.from_json(self.template)

    def logical_id(self, construct: Any) -> str:
        return self.stack.get_logical_id(construct.node.default_child or construct)

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == resource_type}

    def addon(self, name: str) -> tuple[str, dict[str, Any]]:
        cfn = self.addons.addons[name]
        logical_id = self.stack.get_logical_id(cfn)
        return logical_id, self.resources[logical_id]

    def acknowledgments(self) -> dict[str, tuple[str, str]]:
        """Acknowledged findings of the stack: finding id -> (construct path, reason)."""
        return {f: (p, r) for p, f, r in acknowledgments(self.outdir, "Addons")}

    def violations(self) -> list[tuple[str, list[str]]]:
        return [
            (v["ruleName"], [c["constructPath"] for c in v.get("violatingConstructs", [])])
            for plugin in self.report.get("pluginReports", [])
            for v in plugin.get("violations", [])
        ]


def synth(
    tmp_path_factory: pytest.TempPathFactory,
    build: Callable[[cdk.Stack], HyperPodEksAddons],
    *,
    context: dict[str, Any] | None = None,
) -> Built:
    """One App with AwsSolutions registered (as the app does), synthesized; a finding fails it."""
    outdir = tmp_path_factory.mktemp("cdk-eks-addons")
    app = cdk.App(outdir=str(outdir), context=context or {})
    register_compliance_packs(app, ["AwsSolutions"])
    stack = cdk.Stack(app, "Addons", env=cdk.Environment(account=ACCOUNT, region=REGION))
    addons = build(stack)
    try:
        assembly = app.synth()
    except Exception as exc:  # jsii: the validation (cdk-nag) failed
        report = outdir / "validation-report.json"
        raise AssertionError(
            f"synth failed: {exc}\n{report.read_text() if report.exists() else ''}"
        ) from None
    template = json.loads((outdir / assembly.get_stack_by_name("Addons").template_file).read_text())
    report_file = outdir / "validation-report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    return Built(addons, stack, template, report, outdir)


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Every add-on on, FSx from the file system handle, the project's feature flags."""

    def build(stack: cdk.Stack) -> HyperPodEksAddons:
        return HyperPodEksAddons(
            stack,
            "HyperPodAddons",
            cluster_name="ml-research",
            kubernetes_version=KUBERNETES,
            options=EksAddons(training_operator=True, task_governance=True, observability=True),
            cluster=imported_cluster(stack),
            file_system=FILE_SYSTEM,
            fsx_storage_capacity_gib=2400,
            fsx_namespace="training",
            create_fsx_namespace=True,
        )

    return synth(tmp_path_factory, build, context=project_context())


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Training operator and observability only, a HyperPod cluster ARN, no feature flags.

    Without partition literals cdk-nag writes ``<AWS::Partition>`` in finding ids: the
    acknowledgments must still match.
    """

    def build(stack: cdk.Stack) -> HyperPodEksAddons:
        return HyperPodEksAddons(
            stack,
            "HyperPodAddons",
            cluster_name="ml-research",
            kubernetes_version="1.30",
            options=EksAddons(training_operator=True, observability=True, fsx_csi_driver=False),
            file_system=FILE_SYSTEM,
            hyperpod_cluster_arn=HYPERPOD_ARN,
            role_path="/hyperpod/",
        )

    return synth(tmp_path_factory, build)


def cfn_json(value: Any) -> Any:
    """Parse a JSON string property, with ``Fn::Join`` parts of tokens shown as ``<Ref>``/``<Id.Attr>``."""
    if isinstance(value, str):
        return json.loads(value)
    separator, parts = value["Fn::Join"]
    assert separator == ""
    text = ""
    for part in parts:
        if isinstance(part, str):
            text += part
        elif "Ref" in part:
            text += f"<{part['Ref']}>"
        else:
            logical_id, attribute = part["Fn::GetAtt"]
            text += f"<{logical_id}.{attribute}>"
    return json.loads(text)


def depends_on(resource: dict[str, Any]) -> list[str]:
    found = resource.get("DependsOn", [])
    return found if isinstance(found, list) else [found]


def statements(policy: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from policy["Properties"]["PolicyDocument"]["Statement"]


# -- add-ons ---------------------------------------------------------------------------------


def test_every_option_creates_its_addons(full: Built) -> None:
    names = {r["Properties"]["AddonName"] for r in full.of_type("AWS::EKS::Addon").values()}
    assert names == ADDON_NAMES
    assert set(full.addons.addons) == ADDON_NAMES


@pytest.mark.parametrize("name", sorted(ADDON_NAMES))
def test_addon_is_pinned_and_overwrites_conflicts(full: Built, name: str) -> None:
    _, resource = full.addon(name)
    properties = resource["Properties"]
    assert properties["AddonVersion"] == addon_version(name, KUBERNETES)
    assert properties["ResolveConflicts"] == "OVERWRITE"
    assert properties["PreserveOnDelete"] is False
    assert properties["ClusterName"] == "ml-research"
    # pod identities are standalone associations (training operator v1.2.1 rejects inline ones)
    assert "PodIdentityAssociations" not in properties
    assert "ServiceAccountRoleArn" not in properties


def test_versions_follow_the_kubernetes_version(scoped: Built) -> None:
    for name in ("cert-manager", "amazon-sagemaker-hyperpod-training-operator"):
        _, resource = scoped.addon(name)
        assert resource["Properties"]["AddonVersion"] == addon_version(name, "1.30")


def test_cert_manager_comes_before_the_training_operator(full: Built) -> None:
    cert_manager, _ = full.addon("cert-manager")
    _, operator = full.addon("amazon-sagemaker-hyperpod-training-operator")
    association = full.stack.get_logical_id(
        full.addons.pod_identity_associations["amazon-sagemaker-hyperpod-training-operator"]
    )
    policy = full.logical_id(full.addons.training_operator_policy)
    assert {cert_manager, association, policy} <= set(depends_on(operator))


def test_cert_manager_tolerates_every_taint_of_hyperpod_nodes(full: Built) -> None:
    _, resource = full.addon("cert-manager")
    values = cfn_json(resource["Properties"]["ConfigurationValues"])
    toleration = [{"operator": "Exists"}]  # any key, any effect (AWS's setup does the same)
    assert values == {
        "tolerations": toleration,
        "webhook": {"tolerations": toleration},
        "cainjector": {"tolerations": toleration},
    }


# -- pod identities --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("addon", "namespace", "service_account"),
    [
        (
            "amazon-sagemaker-hyperpod-training-operator",
            "aws-hyperpod",
            "hp-training-operator-controller-manager",
        ),
        (
            "amazon-sagemaker-hyperpod-observability",
            "hyperpod-observability",
            "hyperpod-observability-operator-otel-collector",
        ),
    ],
)
def test_pod_identity_association(
    full: Built, addon: str, namespace: str, service_account: str
) -> None:
    association = full.resources[
        full.stack.get_logical_id(full.addons.pod_identity_associations[addon])
    ]
    role = full.logical_id(full.addons.roles[addon])
    assert association["Properties"] == {
        "ClusterName": "ml-research",
        "Namespace": namespace,
        "ServiceAccount": service_account,
        "RoleArn": {"Fn::GetAtt": [role, "Arn"]},
    }
    # the add-on starts only once its pods can get credentials
    _, resource = full.addon(addon)
    assert full.stack.get_logical_id(full.addons.pod_identity_associations[addon]) in depends_on(
        resource
    )


@pytest.mark.parametrize(
    "addon",
    ["amazon-sagemaker-hyperpod-training-operator", "amazon-sagemaker-hyperpod-observability"],
)
def test_role_is_assumable_only_by_pod_identity_of_this_cluster(full: Built, addon: str) -> None:
    role = full.resources[full.logical_id(full.addons.roles[addon])]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    conditions = statement["Condition"]["StringEquals"]
    assert conditions["aws:SourceAccount"] == ACCOUNT
    assert conditions["aws:SourceArn"] == f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/ml-research"
    assert "ManagedPolicyArns" not in role["Properties"]


def test_training_operator_may_only_describe_cluster_nodes(full: Built) -> None:
    policy = full.resources[full.logical_id(full.addons.training_operator_policy)]
    (statement,) = statements(policy)
    assert statement["Action"] == "sagemaker:DescribeClusterNode"
    assert statement["Resource"] == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/*"


def test_training_operator_is_scoped_to_the_given_hyperpod_cluster(scoped: Built) -> None:
    policy = scoped.resources[scoped.logical_id(scoped.addons.training_operator_policy)]
    (statement,) = statements(policy)
    assert statement["Resource"] == HYPERPOD_ARN


def test_roles_get_the_role_path(scoped: Built) -> None:
    for role in scoped.addons.roles.values():
        assert scoped.resources[scoped.logical_id(role)]["Properties"]["Path"] == "/hyperpod/"


# -- observability ---------------------------------------------------------------------------


def test_prometheus_workspace_logs_to_its_log_group(full: Built) -> None:
    assert full.addons.prometheus_workspace is not None
    assert full.addons.prometheus_log_group is not None
    workspace = full.resources[full.stack.get_logical_id(full.addons.prometheus_workspace)]
    log_group = full.logical_id(full.addons.prometheus_log_group)
    assert workspace["Properties"]["LoggingConfiguration"] == {
        "LogGroupArn": {"Fn::GetAtt": [log_group, "Arn"]}
    }
    assert workspace["Properties"]["Alias"] == "ml-research-hyperpod"
    assert full.resources[log_group]["Properties"]["RetentionInDays"] == 365


def test_observability_role_remote_writes_only_to_its_workspace(full: Built) -> None:
    assert full.addons.prometheus_workspace is not None
    workspace = full.stack.get_logical_id(full.addons.prometheus_workspace)
    policy = full.resources[full.logical_id(full.addons.observability_policy)]
    by_sid = {s["Sid"]: s for s in statements(policy)}
    assert by_sid["PrometheusRemoteWrite"]["Action"] == "aps:RemoteWrite"
    assert by_sid["PrometheusRemoteWrite"]["Resource"] == {"Fn::GetAtt": [workspace, "Arn"]}
    logs = by_sid["HyperPodClusterLogs"]
    assert all(action.startswith("logs:") for action in logs["Action"])
    groups = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/Clusters/*"
    assert logs["Resource"] == [groups, f"{groups}:log-stream:*"]
    assert set(by_sid) == {"PrometheusRemoteWrite", "HyperPodClusterLogs"}


def test_observability_addon_points_at_the_workspace(full: Built) -> None:
    assert full.addons.prometheus_workspace is not None
    workspace = full.stack.get_logical_id(full.addons.prometheus_workspace)
    _, resource = full.addon("amazon-sagemaker-hyperpod-observability")
    values = cfn_json(resource["Properties"]["ConfigurationValues"])
    assert values["ampWorkspace"] == {
        "prometheusEndpoint": (
            f"https://aps-workspaces.{REGION}.<AWS::URLSuffix>/workspaces/<{workspace}.WorkspaceId>"
        ),
        "arn": f"<{workspace}.Arn>",
    }
    metrics = values["metricsProvider"]
    assert metrics["trainingMetrics"] == {"level": "BASIC", "scrapeInterval": 30}
    # task governance is on in this scenario, so its metrics are collected
    assert metrics["taskGovernanceMetrics"]["level"] == "ADVANCED"


def test_task_governance_metrics_off_without_task_governance(scoped: Built) -> None:
    _, resource = scoped.addon("amazon-sagemaker-hyperpod-observability")
    values = cfn_json(resource["Properties"]["ConfigurationValues"])
    assert values["metricsProvider"]["taskGovernanceMetrics"]["level"] == "DISABLED"


# -- FSx -------------------------------------------------------------------------------------


def fsx_objects(built: Built) -> dict[str, dict[str, Any]]:
    (resource,) = built.of_type("Custom::AWSCDK-EKS-KubernetesResource").values()
    return {obj["kind"]: obj for obj in cfn_json(resource["Properties"]["Manifest"])}


def test_fsx_persistent_volume_is_static_and_retained(full: Built) -> None:
    volume = fsx_objects(full)["PersistentVolume"]
    assert volume["metadata"]["name"] == "hyperpod-fsx"
    spec = volume["spec"]
    assert spec["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": FILE_SYSTEM.file_system_id,
        "volumeAttributes": {"dnsname": FILE_SYSTEM.dns_name, "mountname": FILE_SYSTEM.mount_name},
    }
    assert spec["capacity"] == {"storage": "2400Gi"}
    assert spec["accessModes"] == ["ReadWriteMany"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["storageClassName"] == ""


def test_fsx_claim_is_bound_to_the_volume(full: Built) -> None:
    claim = fsx_objects(full)["PersistentVolumeClaim"]
    assert claim["metadata"]["name"] == "fsx-claim"
    assert claim["metadata"]["namespace"] == "training"
    assert claim["spec"]["volumeName"] == "hyperpod-fsx"
    assert claim["spec"]["storageClassName"] == ""
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim["spec"]["resources"] == {"requests": {"storage": "2400Gi"}}


def test_fsx_namespace_created_on_request(full: Built) -> None:
    assert fsx_objects(full)["Namespace"]["metadata"]["name"] == "training"


def test_fsx_volume_waits_for_the_csi_driver(full: Built) -> None:
    (resource,) = full.of_type("Custom::AWSCDK-EKS-KubernetesResource").values()
    driver, _ = full.addon("aws-fsx-csi-driver")
    assert driver in depends_on(resource)
    assert resource["Properties"]["ClusterName"] == "ml-research"
    assert full.addons.fsx_volume is not None


def test_fsx_driver_gets_no_aws_permissions(full: Built) -> None:
    # static provisioning makes no FSx API call: no role, no association for the driver
    assert "aws-fsx-csi-driver" not in full.addons.roles
    assert len(full.of_type("AWS::EKS::PodIdentityAssociation")) == 2
    assert len(full.of_type("AWS::IAM::Role")) == 2


# -- cdk-nag ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["full", "scoped"])
def test_aws_solutions_leaves_no_unacknowledged_finding(
    scenario: str, request: pytest.FixtureRequest
) -> None:
    built: Built = request.getfixturevalue(scenario)
    assert built.violations() == []


def test_acknowledgments_name_the_exact_finding_with_a_reason(full: Built) -> None:
    found = full.acknowledgments()
    groups = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/Clusters/*"
    assert set(found) == {
        f"AwsSolutions-IAM5[Resource::arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/*]",
        f"AwsSolutions-IAM5[Resource::{groups}]",
        f"AwsSolutions-IAM5[Resource::{groups}:log-stream:*]",
    }
    for finding, (path, reason) in found.items():
        # on the narrowest construct: the policy that holds the wildcard
        where = (finding, path)
        assert path.startswith("/Addons/HyperPodAddons/") and path.endswith("Policy"), where
        assert len(reason.strip()) >= MIN_REASON_LENGTH


def test_a_scoped_training_operator_needs_no_acknowledgment(scoped: Built) -> None:
    assert not any(":sagemaker:" in finding for finding in scoped.acknowledgments())


# -- options, defaults and errors (no synth) -------------------------------------------------


def new_stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S", env=cdk.Environment(account=ACCOUNT, region=REGION))


def test_nothing_is_created_when_every_option_is_off() -> None:
    stack = new_stack()
    addons = HyperPodEksAddons(
        stack,
        "Addons",
        cluster_name="ml-research",
        kubernetes_version=KUBERNETES,
        options=EksAddons(),
    )
    assert addons.node.children == []
    assert addons.addons == {}
    assert addons.prometheus_workspace is None
    assert addons.fsx_volume is None
    assert Template.from_stack(stack).to_json().get("Resources", {}) == {}


def test_fsx_driver_defaults_to_on_when_a_file_system_is_given() -> None:
    stack = new_stack()
    addons = HyperPodEksAddons(
        stack,
        "Addons",
        cluster_name="ml-research",
        kubernetes_version=KUBERNETES,
        options=EksAddons(),
        cluster=imported_cluster(stack),
        file_system=FILE_SYSTEM,
    )
    assert addons.fsx_csi_driver_enabled
    assert set(addons.addons) == {"aws-fsx-csi-driver"}
    template = Template.from_stack(stack)
    template.resource_count_is("Custom::AWSCDK-EKS-KubernetesResource", 1)
    # the default namespace exists, so it is not created (and never deleted with the claim)
    manifest = template.find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    (resource,) = manifest.values()
    kinds = [obj["kind"] for obj in cfn_json(resource["Properties"]["Manifest"])]
    assert kinds == ["PersistentVolume", "PersistentVolumeClaim"]
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-KubernetesResource",
        {"Manifest": Match.string_like_regexp('"namespace":"default"')},
    )


def test_fsx_driver_off_when_explicitly_disabled() -> None:
    addons = HyperPodEksAddons(
        new_stack(),
        "Addons",
        cluster_name="ml-research",
        kubernetes_version=KUBERNETES,
        options=EksAddons(fsx_csi_driver=False),
        file_system=FILE_SYSTEM,
    )
    assert not addons.fsx_csi_driver_enabled
    assert addons.addons == {}


def test_fsx_driver_without_a_cluster_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"eks\.addons\.fsx_csi_driver: .*need the EKS cluster"):
        HyperPodEksAddons(
            new_stack(),
            "Addons",
            cluster_name="ml-research",
            kubernetes_version=KUBERNETES,
            options=EksAddons(),
            file_system=FILE_SYSTEM,
        )


def test_fsx_driver_on_without_a_file_system_is_an_error() -> None:
    stack = new_stack()
    with pytest.raises(ValueError, match=r"fsx_csi_driver: true needs a file system"):
        HyperPodEksAddons(
            stack,
            "Addons",
            cluster_name="ml-research",
            kubernetes_version=KUBERNETES,
            options=EksAddons(fsx_csi_driver=True),
            cluster=imported_cluster(stack),
        )


def test_unsupported_kubernetes_version_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"Kubernetes '1\.29' is not supported"):
        HyperPodEksAddons(
            new_stack(),
            "Addons",
            cluster_name="ml-research",
            kubernetes_version="1.29",
            options=EksAddons(task_governance=True),
        )


def test_wait_for_holds_back_only_addons_and_manifests() -> None:
    stack = new_stack()
    hyperpod = cdk.CfnResource(stack, "HyperPodCluster", type="AWS::SageMaker::Cluster")
    addons = HyperPodEksAddons(
        stack,
        "Addons",
        cluster_name="ml-research",
        kubernetes_version=KUBERNETES,
        options=EksAddons(training_operator=True, observability=True),
        cluster=imported_cluster(stack),
        file_system=FILE_SYSTEM,
    )
    addons.wait_for(hyperpod)
    resources = Template.from_stack(stack).to_json()["Resources"]
    waiting = {k for k, r in resources.items() if "HyperPodCluster" in depends_on(r)}
    expected = {stack.get_logical_id(a) for a in addons.addons.values()}
    assert addons.fsx_volume is not None
    expected.add(stack.get_logical_id(addons.fsx_volume.node.default_child))  # type: ignore[arg-type]
    assert waiting == expected


def test_works_with_a_created_cluster(tmp_path: Path) -> None:
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    stack = new_stack()
    cluster = eks_v2.Cluster(
        stack,
        "Cluster",
        version=eks_v2.KubernetesVersion.V1_35,
        default_capacity_type=eks_v2.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
        kubectl_provider_options=eks_v2.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(stack, "Kubectl")
        ),
    )
    HyperPodEksAddons(
        stack,
        "Addons",
        cluster_name=cluster.cluster_name,
        kubernetes_version=KUBERNETES,
        options=EksAddons(training_operator=True),
        cluster=cluster,
        file_system=FILE_SYSTEM,
    )
    template = Template.from_stack(stack)
    cluster_ref = {"Ref": stack.get_logical_id(cluster.node.default_child)}  # type: ignore[arg-type]
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation", {"ClusterName": cluster_ref}
    )
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-KubernetesResource",
        {"ServiceToken": {"Fn::GetAtt": [Match.string_like_regexp("KubectlProvider"), "Arn"]}},
    )


@pytest.mark.parametrize("shared", [False, True])
def test_on_a_shared_cluster_nothing_is_overwritten_and_the_addons_stay(shared: bool) -> None:
    stack = new_stack()
    HyperPodEksAddons(
        stack,
        "Addons",
        cluster_name="ml-research",
        kubernetes_version=KUBERNETES,
        options=EksAddons(training_operator=True),
        cluster=imported_cluster(stack),
        file_system=FILE_SYSTEM,
        shared_cluster=shared,
    )
    template = Template.from_stack(stack)
    for addon in template.find_resources("AWS::EKS::Addon").values():
        assert addon["Properties"]["ResolveConflicts"] == ("NONE" if shared else "OVERWRITE")
        assert addon["Properties"]["PreserveOnDelete"] is shared
    (volume,) = template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values()
    # `kubectl create` (fails on another team's fsx-claim) instead of `kubectl apply`
    assert volume["Properties"].get("Overwrite", False) is (not shared)

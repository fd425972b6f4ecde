"""``HyperPodMetrics`` and its place in the stacks: the workspace (new or adopted), the alert
rules namespace, the alert manager that routes to the alerts topic, the Slurm extension custom
resource with its scoped handler role, remote write for the nodes on this workspace only, the
EKS add-on's configuration, and the shipped full configs synthesized with cfn-lint clean (cdk-nag
runs in every synth of the ``synthesized`` fixture: an unacknowledged finding fails it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import assertions
from aws_cdk import aws_iam as iam
from stack_testkit import DELETE

from hyperpod_cdk.config.observability import (
    EKS_CATEGORIES,
    EXTENSION_NAME,
    EXTENSION_VERSION,
    METRIC_KEYS,
    SLURM_EXTENSION_SETTINGS,
)
from hyperpod_cdk.facts.alert_rules import rule_file
from hyperpod_cdk.observability.metrics import (
    HANDLER_TIMEOUT_SECONDS,
    RESOURCE_TYPE,
    RULE_NAMESPACE,
    HyperPodMetrics,
    workspace_id_of,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
CLUSTER = "research"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdef123456"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:hyperpod-alerts"
ADOPTED = f"arn:aws:aps:{REGION}:{ACCOUNT}:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"
LEVELS = {"nodeMetrics": "BASIC", "acceleratedComputeMetrics": "ADVANCED"}
# the ids the EKS add-ons' workspace always had (tests/stacks snapshots, data safety)
EKS_WORKSPACE_ID = "AddonsPrometheusWorkspaceDEF592DB"
EKS_LOG_GROUP_ID = "AddonsPrometheusLogsD506ADD8"


def _stack() -> cdk.Stack:
    app = cdk.App()
    return cdk.Stack(app, "Metrics", env=cdk.Environment(account=ACCOUNT, region=REGION))


def _slurm(**kwargs: Any) -> tuple[HyperPodMetrics, dict[str, Any], iam.Role]:
    stack = _stack()
    node_role = iam.Role(
        stack, "NodeRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com")
    )
    options: dict[str, Any] = {
        "cluster_name": CLUSTER,
        "orchestrator": "slurm",
        "cluster_arn": CLUSTER_ARN,
        "levels": LEVELS,
        "alerts_topic_arn": TOPIC,
        "node_roles": [node_role],
        **kwargs,
    }
    metrics = HyperPodMetrics(stack, "Metrics", **options)
    template = assertions.Template.from_stack(stack).to_json()
    return metrics, template["Resources"], node_role


def _of_type(resources: dict[str, Any], type_name: str) -> dict[str, Any]:
    return {k: r for k, r in resources.items() if r["Type"] == type_name}


def _one(resources: dict[str, Any], type_name: str) -> tuple[str, dict[str, Any]]:
    found = _of_type(resources, type_name)
    assert len(found) == 1, sorted(found)
    return next(iter(found.items()))


def _alert_manager(definition: str) -> dict[str, Any]:
    outer = yaml.safe_load(definition)
    config: dict[str, Any] = yaml.safe_load(outer["alertmanager_config"])
    return config


# -- a new workspace -------------------------------------------------------------------------


def test_a_new_workspace_logs_to_its_log_group() -> None:
    _, resources, _ = _slurm()
    _, workspace = _one(resources, "AWS::APS::Workspace")
    groups = [k for k in _of_type(resources, "AWS::Logs::LogGroup") if "PrometheusLogs" in k]
    assert len(groups) == 1
    log_arn = workspace["Properties"]["LoggingConfiguration"]["LogGroupArn"]
    assert log_arn == {"Fn::GetAtt": [groups[0], "Arn"]}


def test_the_rule_groups_namespace_holds_the_rule_file_of_the_workspace() -> None:
    _, resources, _ = _slurm()
    workspace_id, _ = _one(resources, "AWS::APS::Workspace")
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    properties = namespace["Properties"]
    assert properties["Name"] == RULE_NAMESPACE
    assert properties["Data"] == rule_file("slurm", CLUSTER)
    assert properties["Workspace"] == {"Fn::GetAtt": [workspace_id, "Arn"]}


def test_the_alert_manager_routes_everything_to_the_alerts_topic() -> None:
    _, resources, _ = _slurm()
    _, workspace = _one(resources, "AWS::APS::Workspace")
    config = _alert_manager(workspace["Properties"]["AlertManagerDefinition"])
    assert config["route"]["receiver"] == "alerts-topic"
    (receiver,) = config["receivers"]
    (sns,) = receiver["sns_configs"]
    assert sns["topic_arn"] == TOPIC
    assert sns["sigv4"] == {"region": REGION}
    assert CLUSTER in sns["subject"]


def test_without_alert_rules_there_is_no_namespace() -> None:
    _, resources, _ = _slurm(alert_rules=False)
    assert not _of_type(resources, "AWS::APS::RuleGroupsNamespace")


def test_without_a_topic_there_is_no_alert_manager() -> None:
    _, resources, _ = _slurm(alerts_topic_arn=None)
    _, workspace = _one(resources, "AWS::APS::Workspace")
    assert "AlertManagerDefinition" not in workspace["Properties"]


# -- an adopted workspace --------------------------------------------------------------------


def test_an_adopted_workspace_gets_rule_groups_only() -> None:
    metrics, resources, _ = _slurm(workspace_arn=ADOPTED)
    assert metrics.adopted and metrics.workspace is None
    assert not _of_type(resources, "AWS::APS::Workspace")
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    assert namespace["Properties"]["Workspace"] == ADOPTED
    assert "AlertManagerDefinition" not in json.dumps(resources)
    assert "alertmanager_config" not in json.dumps(resources)


def test_an_adopted_workspace_remote_write_url_is_derived_from_its_arn() -> None:
    metrics, resources, _ = _slurm(workspace_arn=ADOPTED)
    _, extension = _one(resources, RESOURCE_TYPE)
    assert _configuration(extension)["prometheus"] == {
        "remoteWriteUrl": f"https://aps-workspaces.{REGION}.<Ref:AWS::URLSuffix>/workspaces/"
        f"{workspace_id_of(ADOPTED)}/api/v1/remote_write"
    }
    assert metrics.workspace_id == "ws-0123abcd-4567-89ef-0123-456789abcdef"


def test_a_workspace_and_an_adopted_arn_together_are_refused() -> None:
    stack = _stack()
    other = HyperPodMetrics(stack, "Other", cluster_name=CLUSTER, orchestrator="eks")
    assert other.workspace is not None
    with pytest.raises(ValueError, match="not both"):
        HyperPodMetrics(stack, "Both", cluster_name=CLUSTER, orchestrator="eks",
                        workspace=other.workspace, workspace_arn=ADOPTED)  # fmt: skip


def test_a_workspace_arn_of_another_service_is_refused() -> None:
    with pytest.raises(ValueError, match="not a workspace ARN"):
        workspace_id_of(TOPIC)


# -- the Slurm extension ---------------------------------------------------------------------


def test_the_extension_custom_resource_carries_cluster_version_levels_and_deadline() -> None:
    """The configuration is the one AWS documents for the Slurm extension
    (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-cluster-observability-slurm-extension-config.html,
    read 2026-11-27): ``prometheus.remoteWriteUrl`` = the workspace's remote write URL and
    ``metricsProvider.<key>.level``; no ``ampWorkspace``, no ``logging``."""
    _, resources, _ = _slurm()
    workspace_id, _ = _one(resources, "AWS::APS::Workspace")
    _, extension = _one(resources, RESOURCE_TYPE)
    properties = extension["Properties"]
    assert properties["ClusterArn"] == CLUSTER_ARN
    assert properties["ExtensionName"] == EXTENSION_NAME
    assert properties["ExtensionVersion"] == EXTENSION_VERSION
    assert properties["TimeoutSeconds"] == HANDLER_TIMEOUT_SECONDS == 55 * 60
    assert _configuration(extension) == {
        "prometheus": {
            "remoteWriteUrl": f"https://aps-workspaces.{REGION}.<Ref:AWS::URLSuffix>/workspaces/"
            f"<GetAtt:{workspace_id}.WorkspaceId>/api/v1/remote_write"
        },
        "metricsProvider": {k: {"level": v} for k, v in LEVELS.items()},
    }


def test_the_extension_configuration_is_one_json_string() -> None:
    """CloudFormation passes every scalar of a custom resource's properties as a string, so the
    configuration travels as one JSON string (facts_slurm_obs 1.6)."""
    _, resources, _ = _slurm()
    _, extension = _one(resources, RESOURCE_TYPE)
    raw = extension["Properties"]["ConfigurationValues"]
    assert set(raw) == {"Fn::Join"}  # a string made of the workspace's tokens, not a map
    assert '"ampWorkspace"' not in _joined(raw) and '"logging"' not in _joined(raw)


def test_logging_on_slurm_is_refused_the_extension_has_no_such_setting() -> None:
    with pytest.raises(ValueError, match="has no logging setting"):
        _slurm(logging=True)


@pytest.mark.parametrize(
    ("levels", "match"),
    [
        (
            {"networkMetrics": "BASIC"},
            "BASIC is not a level of the Slurm extension's networkMetrics",
        ),
        ({"nodeMetrics": "DISABLED"}, "use BASIC or ADVANCED"),
        ({"trainingMetrics": "BASIC"}, "not a metricsProvider category of the Slurm extension"),
    ],
)
def test_a_level_the_extension_does_not_document_is_refused(
    levels: dict[str, str], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        _slurm(levels=levels)


def test_the_rule_file_leaves_out_the_rules_the_levels_cannot_back() -> None:
    """acceleratedComputeMetrics BASIC collects no ECC / NVLink counters (AWS's Slurm sample's
    DCGM basic counters file): their rules are not deployed; with ADVANCED they are."""
    basic = {"nodeMetrics": "BASIC", "acceleratedComputeMetrics": "BASIC"}
    _, resources, _ = _slurm(levels=basic)
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    data = namespace["Properties"]["Data"]
    assert data == rule_file("slurm", CLUSTER, basic)
    assert "HyperPodGpuEccDoubleBitErrors" not in data
    assert "HyperPodGpuNvlinkErrors" not in data
    assert "HyperPodGpuXidError" in data
    _, resources, _ = _slurm()  # acceleratedComputeMetrics ADVANCED
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    assert "HyperPodGpuEccDoubleBitErrors" in namespace["Properties"]["Data"]


def test_the_extension_waits_for_the_rights_it_needs() -> None:
    _, resources, _ = _slurm()
    _, extension = _one(resources, RESOURCE_TYPE)
    policies = _of_type(resources, "AWS::IAM::ManagedPolicy")
    # remote write and image pull for the nodes, the handlers' extension rights
    assert len(policies) == 3
    for policy_id in policies:
        assert policy_id in extension["DependsOn"], policy_id


def test_the_provider_polls_every_30_seconds_for_an_hour() -> None:
    _, resources, _ = _slurm()
    _, machine = _one(resources, "AWS::StepFunctions::StateMachine")
    definition = json.dumps(machine["Properties"]["DefinitionString"])
    assert '\\"IntervalSeconds\\":30' in definition
    assert '\\"MaxAttempts\\":120' in definition  # 60 minutes / 30 seconds


def test_the_handlers_run_the_extension_handler_code() -> None:
    _, resources, _ = _slurm()
    handlers = {
        r["Properties"]["Handler"]
        for r in _of_type(resources, "AWS::Lambda::Function").values()
        if r["Properties"].get("Handler", "").startswith("handler.")
    }
    assert handlers == {"handler.on_event", "handler.is_complete"}


def test_the_handler_role_manages_extensions_of_this_cluster_only() -> None:
    _, resources, _ = _slurm()
    """The resource types of the *ClusterExtension actions are in no source (cfn-lint 1.58
    Policies.json lacks them, facts_slurm_obs 1.9): every action, Create included, is allowed on
    this cluster and on the extensions of this account and region, nothing wider."""
    (policy,) = [
        r
        for k, r in _of_type(resources, "AWS::IAM::ManagedPolicy").items()
        if k.startswith("MetricsExtensionPolicy")
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (cluster,) = statements
    assert cluster["Sid"] == "ManageTheClusterExtension"
    assert cluster["Resource"][0] == CLUSTER_ARN
    assert _joined(cluster["Resource"][1]) == (
        f"arn:<Ref:AWS::Partition>:sagemaker:{REGION}:{ACCOUNT}:extension/*"
    )
    assert sorted(cluster["Action"]) == [
        "sagemaker:CreateClusterExtension",
        "sagemaker:DeleteClusterExtension",
        "sagemaker:DescribeClusterExtension",
        "sagemaker:UpdateClusterExtension",
    ]
    for statement in statements:
        assert statement["Resource"] != "*"
        assert all(a.startswith("sagemaker:") and "ClusterExtension" in a
                   for a in statement["Action"])  # fmt: skip


def test_cfn_lints_policy_data_still_has_no_resource_types_for_the_extension_actions() -> None:
    """Why both resources are on every action: cfn-lint's Policies.json (cfn-lint 1.58.0,
    cfnlint/data/AdditionalSpecs/Policies.json, service ``sagemaker``) names no *ClusterExtension
    action. When it does, narrow ManageTheClusterExtension to the resource types it lists."""
    import cfnlint

    from hyperpod_cdk.observability.metrics import EXTENSION_ACTIONS

    data = json.loads(
        (Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json").read_text()
    )
    actions = data["sagemaker"]["Actions"]
    assert "createcluster" in actions  # the service's table is there
    listed = {a: actions[a.split(":")[1].lower()] for a in EXTENSION_ACTIONS
              if a.split(":")[1].lower() in actions}  # fmt: skip
    assert listed == {}, f"cfn-lint now lists resource types: {listed}; narrow the statement"


def test_the_nodes_remote_write_to_this_workspace_only() -> None:
    _, resources, _ = _slurm()
    workspace_id, _ = _one(resources, "AWS::APS::Workspace")
    role_id = next(k for k in _of_type(resources, "AWS::IAM::Role") if k.startswith("NodeRole"))
    (policy,) = [
        r for k, r in _of_type(resources, "AWS::IAM::ManagedPolicy").items() if "RemoteWrite" in k
    ]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "aps:RemoteWrite"
    assert statement["Resource"] == {"Fn::GetAtt": [workspace_id, "Arn"]}
    assert policy["Properties"]["Roles"] == [{"Ref": role_id}]


def test_the_nodes_may_pull_hyperpods_exporter_images_of_the_region() -> None:
    """AWS's Slurm observability sample needs ECR pull for the extension's exporter images
    (awslabs/awsome-distributed-ai Extensions/observability/README.md §3b; facts_slurm_obs 1.13):
    pull on hyperpod/* of HyperPod's registry of the region (602401143452 in us-west-2,
    facts/__init__.py HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS), the login token, nothing else."""
    _, resources, _ = _slurm()
    role_id = next(k for k in _of_type(resources, "AWS::IAM::Role") if k.startswith("NodeRole"))
    (policy,) = [
        r for k, r in _of_type(resources, "AWS::IAM::ManagedPolicy").items() if "ImagePull" in k
    ]
    pull, login = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(pull["Action"]) == ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    assert _joined(pull["Resource"]) == (
        f"arn:<Ref:AWS::Partition>:ecr:{REGION}:602401143452:repository/hyperpod/*"
    )
    assert (login["Action"], login["Resource"]) == ("ecr:GetAuthorizationToken", "*")
    assert policy["Properties"]["Roles"] == [{"Ref": role_id}]
    other, _, _ = _slurm(exporter_registry_account="444455556666")
    assert other.image_pull_policy is not None


def test_an_adopted_workspace_is_the_only_one_the_nodes_write_to() -> None:
    _, resources, _ = _slurm(workspace_arn=ADOPTED)
    (policy,) = [
        r for k, r in _of_type(resources, "AWS::IAM::ManagedPolicy").items() if "RemoteWrite" in k
    ]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == ADOPTED


def test_slurm_needs_the_cluster_arn() -> None:
    with pytest.raises(ValueError, match="cluster_arn"):
        HyperPodMetrics(_stack(), "Metrics", cluster_name=CLUSTER, orchestrator="slurm")


def test_eks_metrics_make_no_extension_and_no_remote_write_policy() -> None:
    stack = _stack()
    HyperPodMetrics(stack, "Metrics", cluster_name=CLUSTER, orchestrator="eks")
    resources = assertions.Template.from_stack(stack).to_json()["Resources"]
    assert not _of_type(resources, RESOURCE_TYPE)
    assert not _of_type(resources, "AWS::IAM::ManagedPolicy")
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    assert namespace["Properties"]["Data"] == rule_file("eks", CLUSTER)


# -- in the stacks ---------------------------------------------------------------------------


def test_full_slurm_has_metrics_after_the_cluster(synthesized: Any) -> None:
    synth = synthesized("full")
    resources = synth.resources("metrics")
    _, extension = _one(resources, RESOURCE_TYPE)
    # the cluster's ARN, read through the metrics stack's ClusterReady parameter
    assert synth.resolve(
        extension["Properties"]["ClusterArn"], _stack=synth.stack_name("metrics")
    ) == {"Fn::GetAtt": ["HyperPodCluster", "ClusterArn"]}
    values = _configuration(extension)
    assert set(values) == {"prometheus", "metricsProvider"}
    # every category of the extension, each at its configured level or the documented default
    assert values["metricsProvider"] == {
        "nodeMetrics": {"level": "BASIC"},
        "acceleratedComputeMetrics": {"level": "ADVANCED"},
        "networkMetrics": {"level": "ENABLED"},
        "jobMetrics": {"level": "ENABLED"},
        "clusterMetrics": {"level": "ENABLED"},
        "ncclMetrics": {"level": "ENABLED"},
    }
    assert set(values["metricsProvider"]) == {s.key for s in SLURM_EXTENSION_SETTINGS.values()}
    assert values["prometheus"]["remoteWriteUrl"].endswith("/api/v1/remote_write")
    _, workspace = _one(resources, "AWS::APS::Workspace")
    definition = json.dumps(workspace["Properties"]["AlertManagerDefinition"])
    # the alerts topic lives in the cluster stack, deployed before this one
    assert synth.stack_name("cluster") in definition
    outputs = synth.outputs("metrics")
    for name in ("PrometheusWorkspaceArn", "PrometheusEndpoint", "GrafanaUrl"):
        assert name in outputs, name


def test_full_slurm_nodes_remote_write_to_this_workspace_only(synthesized: Any) -> None:
    synth = synthesized("full")
    resources = synth.resources("metrics")
    workspace_id, _ = _one(resources, "AWS::APS::Workspace")
    statements = [
        s
        for r in _of_type(resources, "AWS::IAM::ManagedPolicy").values()
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if "aps:RemoteWrite" in json.dumps(s["Action"])
    ]
    assert statements == [
        {
            "Sid": "PrometheusRemoteWrite",
            "Effect": "Allow",
            "Action": "aps:RemoteWrite",
            "Resource": {"Fn::GetAtt": [workspace_id, "Arn"]},
        }
    ]
    for kind in synth.templates:
        if kind != synth.stack_name("metrics"):
            assert "aps:RemoteWrite" not in json.dumps(synth.templates[kind]), kind


def test_eks_full_addon_configuration_carries_every_level_and_logging(synthesized: Any) -> None:
    synth = synthesized("eks-full")
    addons = synth.resources("eks-addons", "AWS::EKS::Addon")
    (addon,) = [
        a for a in addons.values()
        if a["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-observability"
    ]  # fmt: skip
    values = json.loads(_joined(addon["Properties"]["ConfigurationValues"]))
    metrics = values["metricsProvider"]
    assert set(metrics) == {METRIC_KEYS[c] for c in EKS_CATEGORIES}  # no jobMetrics, ncclMetrics
    assert metrics["rayMetrics"] == {"level": "DISABLED", "scrapeInterval": 30}
    assert metrics["trainingMetrics"]["level"] == "ADVANCED"
    assert metrics["networkMetrics"]["level"] == "BASIC"
    assert values["logging"] == {"enabled": True}


def test_eks_full_keeps_the_workspace_and_adds_rules_and_routing(synthesized: Any) -> None:
    synth = synthesized("eks-full")
    resources = synth.resources("eks-addons")
    workspace_id, workspace = _one(resources, "AWS::APS::Workspace")
    assert workspace_id == EKS_WORKSPACE_ID
    assert EKS_LOG_GROUP_ID in resources
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    assert namespace["Properties"]["Workspace"] == {"Fn::GetAtt": [EKS_WORKSPACE_ID, "Arn"]}
    assert namespace["Properties"]["Data"] == rule_file("eks", synth.config.cluster_name)
    definition = json.dumps(workspace["Properties"]["AlertManagerDefinition"])
    # the topic lives in the cluster stack, deployed before this one
    assert synth.stack_name("cluster") in definition
    assert "cluster" in synth.dependencies("eks-addons")
    for name in ("PrometheusWorkspaceArn", "PrometheusEndpoint", "GrafanaUrl"):
        assert name in synth.outputs("eks-addons"), name


def test_an_eks_adopted_workspace_gets_rules_only(build_variant: Any) -> None:
    changes = {"observability.prometheus_workspace_arn": ADOPTED}  # eks-full's account
    synth = build_variant(changes, base="eks-full")  # cdk-nag clean too
    resources = synth.resources("eks-addons")
    assert not _of_type(resources, "AWS::APS::Workspace")
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    assert namespace["Properties"]["Workspace"] == ADOPTED
    assert "alertmanager_config" not in json.dumps(synth.templates)
    remote = [
        s
        for r in _of_type(resources, "AWS::IAM::ManagedPolicy").values()
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "PrometheusRemoteWrite"
    ]
    assert [s["Resource"] for s in remote] == [ADOPTED]


def test_a_slurm_adopted_workspace_gets_rules_and_remote_write_only(build_variant: Any) -> None:
    changes = {"observability.prometheus_workspace_arn": ADOPTED}  # full's account
    synth = build_variant(changes, base="full")  # cdk-nag clean too
    resources = synth.resources("metrics")
    assert not _of_type(resources, "AWS::APS::Workspace")
    _, namespace = _one(resources, "AWS::APS::RuleGroupsNamespace")
    assert namespace["Properties"]["Workspace"] == ADOPTED
    assert "alertmanager_config" not in json.dumps(synth.templates)
    _, extension = _one(resources, RESOURCE_TYPE)
    remote_write = _configuration(extension)["prometheus"]["remoteWriteUrl"]
    assert f"/workspaces/{workspace_id_of(ADOPTED)}/api/v1/remote_write" in remote_write
    (policy,) = [
        r for k, r in _of_type(resources, "AWS::IAM::ManagedPolicy").items() if "RemoteWrite" in k
    ]
    assert policy["Properties"]["PolicyDocument"]["Statement"][0]["Resource"] == ADOPTED


def test_the_shorthand_alone_still_makes_the_workspace_with_rules(build_variant: Any) -> None:
    synth = build_variant({"observability": DELETE}, base="eks-full", nag=False)
    resources = synth.resources("eks-addons")
    workspace_id, _ = _one(resources, "AWS::APS::Workspace")
    assert workspace_id == EKS_WORKSPACE_ID
    assert _of_type(resources, "AWS::APS::RuleGroupsNamespace")
    assert not _of_type(resources, "AWS::Grafana::Workspace")


@pytest.mark.parametrize(("config", "kind"), [("full", "metrics"), ("eks-full", "eks-addons")])
def test_the_metrics_stacks_have_no_cfn_lint_error(
    synthesized: Any, config: str, kind: str
) -> None:
    tests = Path(__file__).resolve().parents[1]
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    from support.cfn_lint_schemas import lint_errors

    synth = synthesized(config)
    assert lint_errors(synth.template(kind), synth.config.region) == []


def _configuration(extension: dict[str, Any]) -> dict[str, Any]:
    """The extension's ConfigurationValues (one JSON string, tokens written as by _joined)."""
    values: dict[str, Any] = json.loads(_joined(extension["Properties"]["ConfigurationValues"]))
    return values


def _joined(value: Any) -> str:
    """A Fn::Join as text, references written ``<Ref:Id>`` / ``<GetAtt:Id.Attr>``."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_joined(p) for p in parts)
    if "Ref" in value:
        return f"<Ref:{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return "<GetAtt:{}.{}>".format(*value["Fn::GetAtt"])
    return json.dumps(value)

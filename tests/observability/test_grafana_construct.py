"""HyperPodGrafana: the workspace, its role (one Prometheus workspace), the handler's IAM (one
Grafana workspace), the content custom resource and its dashboard digests, the handler in the
VPC of a closed network, and compliance (every cdk-nag pack registered: an unacknowledged
finding fails the synth).

One App holds three constructs (jsii start-up dominates): Slurm outside any VPC with a role path
and a permissions boundary, EKS in a closed network, and Slurm with an open network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template

from hyperpod_cdk import facts
from hyperpod_cdk.compliance.nag import PACKS, register_compliance_packs
from hyperpod_cdk.config.network import NetworkConfig
from hyperpod_cdk.log_encryption import EncryptLogGroups
from hyperpod_cdk.network.network import HyperPodNetwork
from hyperpod_cdk.observability.grafana import (
    DASHBOARD_DIR,
    DATA_SOURCE_UID,
    PROMETHEUS_QUERY_ACTIONS,
    RESOURCE_TYPE,
    SERVICE_ACCOUNT_ACTIONS,
    TOKEN_SECONDS,
    HyperPodGrafana,
    dashboard_entries,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "111122223333"
REGION = "us-west-2"
AMP_ARN = f"arn:aws:aps:{REGION}:{ACCOUNT}:workspace/ws-11111111-2222-3333-4444-555555555555"
AMP_URL = f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/ws-1111/"


@dataclass
class Built:
    stack: cdk.Stack
    slurm: HyperPodGrafana
    eks_closed: HyperPodGrafana
    slurm_open: HyperPodGrafana
    template: dict[str, Any]

    def logical_id(self, construct: Any) -> str:
        return self.stack.get_logical_id(construct.node.default_child or construct)

    def resource(self, construct: Any) -> dict[str, Any]:
        return dict(self.template["Resources"][self.logical_id(construct)])


def synth(tmp: Path) -> Built:
    context = json.loads((PROJECT_ROOT / "cdk.json").read_text())["context"]
    app = cdk.App(outdir=str(tmp), context=context)
    register_compliance_packs(app, list(PACKS))
    stack = cdk.Stack(app, "Grafana", env=cdk.Environment(account=ACCOUNT, region=REGION))
    logs_key = kms.Key.from_key_arn(
        stack, "LogsKey", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"
    )
    cdk.Aspects.of(stack).add(EncryptLogGroups(logs_key))
    boundary = iam.ManagedPolicy.from_managed_policy_arn(
        stack, "Boundary", f"arn:aws:iam::{ACCOUNT}:policy/ml-boundary"
    )
    slurm = HyperPodGrafana(
        stack,
        "Slurm",
        name="ml-prod",
        orchestrator="slurm",
        prometheus_workspace_arn=AMP_ARN,
        prometheus_endpoint=AMP_URL,
        role_path="/ml-platform/",
        permissions_boundary=boundary,
    )
    closed = HyperPodNetwork(
        stack,
        "ClosedNetwork",
        network=NetworkConfig(availability_zone_id="usw2-az2", closed_network=True, nat_gateways=0),
    )
    eks_closed = HyperPodGrafana(
        stack,
        "EksClosed",
        name="ml-eks",
        orchestrator="eks",
        prometheus_workspace_arn=AMP_ARN,
        prometheus_endpoint=AMP_URL,
        network=closed,
    )
    open_network = HyperPodNetwork(
        stack, "OpenNetwork", network=NetworkConfig(availability_zone_id="usw2-az2")
    )
    slurm_open = HyperPodGrafana(
        stack,
        "SlurmOpen",
        name="ml-open",
        orchestrator="slurm",
        prometheus_workspace_arn=AMP_ARN,
        prometheus_endpoint=AMP_URL,
        network=open_network,
    )
    try:
        assembly = app.synth()
    except Exception as exc:  # jsii: the validation (cdk-nag) failed
        report = tmp / "validation-report.json"
        raise AssertionError(
            f"synth failed: {exc}\n{report.read_text() if report.exists() else ''}"
        ) from None
    template = json.loads((tmp / assembly.get_stack_by_name("Grafana").template_file).read_text())
    return Built(stack, slurm, eks_closed, slurm_open, template)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return synth(tmp_path_factory.mktemp("cdk-grafana"))


def test_workspace_properties(built: Built) -> None:
    template = Template.from_json(built.template)
    template.resource_count_is("AWS::Grafana::Workspace", 3)
    workspace = built.resource(built.slurm.workspace)["Properties"]
    assert workspace["Name"] == "ml-prod"
    assert workspace["AccountAccessType"] == "CURRENT_ACCOUNT"
    assert workspace["AuthenticationProviders"] == ["AWS_SSO"]
    assert workspace["PermissionType"] == "CUSTOMER_MANAGED"
    assert workspace["DataSources"] == ["PROMETHEUS"]
    assert workspace["GrafanaVersion"] == facts.GRAFANA_VERSION == "10.4"
    assert workspace["PluginAdminEnabled"] is False
    assert workspace["RoleArn"] == {"Fn::GetAtt": [built.logical_id(built.slurm.role), "Arn"]}
    # the workspace is created once its role may query (the service checks the role)
    depends = built.resource(built.slurm.workspace).get("DependsOn", [])
    assert any(d.startswith("SlurmPrometheusQuery") for d in depends), depends


def test_url_is_the_workspace_endpoint(built: Built) -> None:
    resolved = built.stack.resolve(built.slurm.url)
    assert resolved == {
        "Fn::Join": [
            "",
            ["https://", {"Fn::GetAtt": [built.logical_id(built.slurm.workspace), "Endpoint"]}],
        ]
    }


def test_workspace_role_trusts_grafana_of_this_account_and_queries_one_workspace(
    built: Built,
) -> None:
    role = built.resource(built.slurm.role)["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "grafana.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    assert trust["Condition"]["ArnLike"] == {
        "aws:SourceArn": f"arn:aws:grafana:{REGION}:{ACCOUNT}:/workspaces/*"
    }
    assert role["Path"] == "/ml-platform/"
    assert role["PermissionsBoundary"] == f"arn:aws:iam::{ACCOUNT}:policy/ml-boundary"
    policies = [
        r
        for k, r in built.template["Resources"].items()
        if k.startswith("SlurmPrometheusQuery") and r["Type"] == "AWS::IAM::ManagedPolicy"
    ]
    (policy,) = policies
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(statement["Action"]) == sorted(PROMETHEUS_QUERY_ACTIONS)
    assert statement["Resource"] == AMP_ARN
    assert policy["Properties"]["Roles"] == [{"Ref": built.logical_id(built.slurm.role)}]


def test_handler_may_touch_only_its_workspace(built: Built) -> None:
    workspace_id = built.logical_id(built.slurm.workspace)
    policies = [
        r
        for k, r in built.template["Resources"].items()
        if k.startswith("SlurmHandlerPolicy") and r["Type"] == "AWS::IAM::ManagedPolicy"
    ]
    (policy,) = policies
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(statement["Action"]) == sorted(SERVICE_ACCOUNT_ACTIONS)
    assert statement["Resource"] == {
        "Fn::Join": [
            "",
            [
                f"arn:aws:grafana:{REGION}:{ACCOUNT}:/workspaces/",
                {"Fn::GetAtt": [workspace_id, "Id"]},
            ],
        ]
    }
    # no other statement anywhere grants a grafana action
    for logical_id, resource in built.template["Resources"].items():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            for other in resource["Properties"]["PolicyDocument"]["Statement"]:
                actions = (
                    other["Action"] if isinstance(other["Action"], list) else [other["Action"]]
                )
                if any(a.startswith("grafana:") for a in actions):
                    assert logical_id.split("HandlerPolicy")[0] in (
                        "Slurm",
                        "EksClosed",
                        "SlurmOpen",
                    )


def test_content_resource_properties(built: Built) -> None:
    content = built.resource(built.slurm.content)
    assert content["Type"] == RESOURCE_TYPE
    props = content["Properties"]
    workspace_id = built.logical_id(built.slurm.workspace)
    assert props["WorkspaceId"] == {"Fn::GetAtt": [workspace_id, "Id"]}
    assert props["WorkspaceEndpoint"] == {"Fn::GetAtt": [workspace_id, "Endpoint"]}
    assert props["Region"] == REGION
    assert props["PrometheusEndpoint"] == AMP_URL
    assert props["DataSourceUid"] == DATA_SOURCE_UID
    assert props["TokenSecondsToLive"] == TOKEN_SECONDS == 900
    assert props["Dashboards"] == dashboard_entries("slurm")
    assert [d["File"] for d in props["Dashboards"]] == [
        "slurm-cluster.json",
        "slurm-nodes-gpus.json",
        "slurm-efa.json",
        "slurm-fsx.json",
        "slurm-jobs.json",
    ]
    eks = built.resource(built.eks_closed.content)["Properties"]
    assert [d["File"] for d in eks["Dashboards"]] == [
        f"eks-{t}.json" for t in ("cluster", "nodes-gpus", "efa", "fsx", "jobs")
    ]
    # it runs once the handler may use the workspace's service accounts
    assert any(d.startswith("SlurmHandlerPolicy") for d in content["DependsOn"])


def test_a_changed_dashboard_changes_the_content_resource(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Day 2: editing one dashboard changes its digest in the resource of the construct that
    holds it (an update of that stack only), and nothing of the other orchestrator."""
    copy = tmp_path / "dashboards"
    copy.mkdir()
    for path in DASHBOARD_DIR.glob("*.json"):
        (copy / path.name).write_bytes(path.read_bytes())
    before_slurm, before_eks = dashboard_entries("slurm"), dashboard_entries("eks")
    edited = json.loads((copy / "slurm-jobs.json").read_text())
    edited["title"] += " (edited)"
    (copy / "slurm-jobs.json").write_text(json.dumps(edited))
    import hyperpod_cdk.observability.grafana as module

    monkeypatch.setattr(module, "DASHBOARD_DIR", copy)
    after_slurm, after_eks = dashboard_entries("slurm"), dashboard_entries("eks")
    assert after_eks == before_eks
    changed = [a["File"] for a, b in zip(after_slurm, before_slurm, strict=True) if a != b]
    assert changed == ["slurm-jobs.json"]


def test_handler_runs_in_the_compute_subnet_of_a_closed_network(built: Built) -> None:
    function = built.resource(built.eks_closed.handler)["Properties"]
    vpc = function["VpcConfig"]
    network = built.stack.node.find_child("ClosedNetwork")
    assert isinstance(network, HyperPodNetwork)
    assert vpc["SubnetIds"] == [built.stack.resolve(network.compute_subnet.subnet_id)]
    (group,) = vpc["SecurityGroupIds"]
    group_id = group["Fn::GetAtt"][0]
    egress = built.template["Resources"][group_id]["Properties"]["SecurityGroupEgress"]
    assert egress == [
        {
            "CidrIp": "0.0.0.0/0",
            "Description": "Grafana API and workspace endpoints",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    role = built.resource(built.eks_closed.handler.role)["Properties"]
    managed = json.dumps(role["ManagedPolicyArns"])
    assert "AWSLambdaVPCAccessExecutionRole" in managed


@pytest.mark.parametrize("which", ["slurm", "slurm_open"])
def test_handler_outside_the_vpc_otherwise(built: Built, which: str) -> None:
    construct = getattr(built, which)
    function = built.resource(construct.handler)["Properties"]
    assert "VpcConfig" not in function
    assert function["Handler"] == "grafana_handler.handler.on_event"
    assert function["Runtime"] == "python3.14"


def test_the_asset_holds_the_handler_and_the_dashboards(built: Built) -> None:
    function = built.resource(built.slurm.handler)
    key = function["Properties"]["Code"]["S3Key"]
    outdir = Path(built.stack.node.root.outdir)  # type: ignore[attr-defined]
    asset = f"asset.{key.removesuffix('.zip')}"
    files = sorted(
        str(p.relative_to(outdir / asset)) for p in (outdir / asset).rglob("*") if p.is_file()
    )
    assert "grafana_handler/handler.py" in files
    assert {f"dashboards/{p.name}" for p in DASHBOARD_DIR.glob("*.json")} <= set(files)
    assert not [f for f in files if f.endswith(("alert_rules.py", "grafana.py", ".pyc"))], files


def test_unknown_orchestrator_is_refused() -> None:
    stack = cdk.Stack(cdk.App(), "Bad", env=cdk.Environment(account=ACCOUNT, region=REGION))
    with pytest.raises(ValueError, match="orchestrator: 'k8s' is neither 'slurm' nor 'eks'"):
        HyperPodGrafana(
            stack,
            "G",
            name="x",
            orchestrator="k8s",
            prometheus_workspace_arn=AMP_ARN,
            prometheus_endpoint=AMP_URL,
        )

"""HyperPodNodeWait: the handler against a stubbed SageMaker API, and the construct's template,
IAM, VPC placement, timeouts and compliance (cdk-nag packs, checkov).

The handler is loaded from its asset directory by path, as Lambda runs it; botocore's Stubber
checks every ListClusterNodes request and answer against the API's shapes. The construct tests
share one synthesized App (jsii start-up dominates).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import botocore.session
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from botocore.stub import Stubber
from support.assembly import acknowledgments
from support.cfn_events import (
    CREATE_FAILED_MARKER,
    ProviderFramework,
    cfn_event,
    one_line,
    poll_event,
)
from support.modules import load_module

from hyperpod_cdk.compliance.checkov_skips import skipped_checks
from hyperpod_cdk.compliance.nag import MIN_REASON_LENGTH, PACKS, register_compliance_packs
from hyperpod_cdk.eks.node_wait import HANDLER_DIR, RESOURCE_TYPE, HyperPodNodeWait
from hyperpod_cdk.log_encryption import EncryptLogGroups

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "111122223333"
REGION = "us-west-2"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdef123456"
TIMEOUT = 45 * 60

# -- the handler -----------------------------------------------------------------------------


handler = load_module("hyperpod_node_wait_handler", HANDLER_DIR / "index.py")
_BOTOCORE = botocore.session.get_session()  # caches SageMaker's (large) service model


@pytest.fixture
def sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """The Stubber of the SageMaker client the handler gets; every queued answer must be used."""
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
        botocore_session=_BOTOCORE,
    )
    client = session.client("sagemaker")

    def client_of(region: str) -> Any:
        assert region == REGION  # the cluster's region, read from its ARN
        return client

    monkeypatch.setattr(handler, "sagemaker_client", client_of)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def node(group: str, status: str, number: int = 0, message: str = "") -> dict[str, Any]:
    """One ``ClusterNodeSummary``."""
    return {
        "InstanceGroupName": group,
        "InstanceId": f"i-0{number:016x}",
        "InstanceType": "ml.p5.48xlarge",
        "LaunchTime": "2026-11-02T09:00:00Z",
        "InstanceStatus": {"Status": status, "Message": message},
    }


def expect_page(
    stubber: Stubber,
    nodes: list[dict[str, Any]],
    *,
    token: str | None = None,
    next_token: str | None = None,
) -> None:
    """Queue one ListClusterNodes answer, for a request with ``token`` (the ARN as ClusterName)."""
    request: dict[str, Any] = {"ClusterName": CLUSTER_ARN, "MaxResults": 100}
    if token is not None:
        request["NextToken"] = token
    answer: dict[str, Any] = {"ClusterNodeSummaries": nodes}
    if next_token is not None:
        answer["NextToken"] = next_token
    stubber.add_response("list_cluster_nodes", answer, request)


def properties(
    groups: tuple[str, ...] = ("gpu", "cpu"), min_nodes: int = 1, timeout: int = TIMEOUT
) -> dict[str, Any]:
    """The custom resource's properties as the construct writes them in the template."""
    return {
        "ClusterArn": CLUSTER_ARN,
        "InstanceGroups": list(groups),
        "MinNodes": min_nodes,
        "TimeoutSeconds": timeout,
    }


def request(
    request_type: str = "Create",
    *,
    groups: tuple[str, ...] = ("gpu", "cpu"),
    min_nodes: int = 1,
    timeout: int = TIMEOUT,
    physical: str | None = None,
) -> dict[str, Any]:
    """The request CloudFormation sends (tests/support/cfn_events.py: numbers as strings)."""
    props = properties(groups, min_nodes, timeout)
    if request_type != "Create" and physical is None:
        physical = handler.physical_id(CLUSTER_ARN, list(groups))
    return cfn_event(
        request_type,
        props,
        old_properties=props if request_type == "Update" else None,
        physical_resource_id=physical,
        resource_type=RESOURCE_TYPE,
    )


def event(
    request_type: str = "Create",
    *,
    groups: tuple[str, ...] = ("gpu", "cpu"),
    min_nodes: int = 1,
    deadline: float | None = None,
) -> dict[str, Any]:
    """An isComplete input as the framework builds it: the CloudFormation request merged with
    on_event's answer. Numbers arrive as strings, as CloudFormation passes them."""
    sent = request(request_type, groups=groups, min_nodes=min_nodes)
    return poll_event(
        sent,
        {
            "PhysicalResourceId": handler.physical_id(CLUSTER_ARN, list(groups)),
            "Data": {"Deadline": time.time() + TIMEOUT if deadline is None else deadline},
        },
    )


@pytest.fixture
def framework() -> ProviderFramework:
    return ProviderFramework(handler.on_event, handler.is_complete)


def test_the_properties_arrive_as_strings() -> None:
    sent = event()["ResourceProperties"]
    assert sent["MinNodes"] == "1" and sent["TimeoutSeconds"] == str(TIMEOUT)
    assert sent["InstanceGroups"] == ["gpu", "cpu"]


def test_through_the_framework_pending_then_running(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_page(sagemaker, [node("gpu", "Pending", 1)])
    expect_page(sagemaker, [node("gpu", "Running", 1)])
    answer = framework.send(request())
    assert answer.ok and answer.polls == 2
    assert answer.PhysicalResourceId == f"{CLUSTER_ARN}/nodes:cpu,gpu"
    assert "Deadline" in answer.Data


def test_through_the_framework_the_deadline_fails_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_page(sagemaker, [node("gpu", "Failure", 1, "capacity\n  none")])
    answer = framework.send(request(timeout=0))
    assert not answer.ok and answer.PhysicalResourceId == f"{CLUSTER_ARN}/nodes:cpu,gpu"
    assert one_line(answer.error or "")
    assert "has no Running node" in (answer.error or "")


def test_through_the_framework_an_aws_error_fails_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_client_error(
        "list_cluster_nodes",
        service_error_code="AccessDeniedException",
        service_message="not authorized\nto list",
        http_status_code=400,
    )
    answer = framework.send(request())
    assert not answer.ok and one_line(answer.error or "")
    assert f"ListClusterNodes of {CLUSTER_ARN} failed" in (answer.error or "")


def test_the_same_create_delivered_twice_answers_the_same(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_page(sagemaker, [node("gpu", "Running", 1)])
    expect_page(sagemaker, [node("gpu", "Running", 1)])
    sent = request()
    first, second = framework.send(sent), framework.send(sent)
    assert first.ok and second.ok and first.PhysicalResourceId == second.PhysicalResourceId


def test_new_groups_replace_the_wait_and_the_old_delete_calls_nothing(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_page(sagemaker, [node("gpu", "Running", 1)])
    old_physical = handler.physical_id(CLUSTER_ARN, ["gpu", "cpu"])
    sent = cfn_event(
        "Update",
        properties(("gpu",)),
        old_properties=properties(),
        physical_resource_id=old_physical,
    )
    answer = framework.send(sent)
    assert answer.ok and answer.PhysicalResourceId == f"{CLUSTER_ARN}/nodes:gpu"
    # CloudFormation then deletes the old one; nothing is queued, so any call would fail
    assert framework.send(request("Delete", physical=old_physical)).ok


def test_delete_after_a_failed_create_calls_nothing(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    for physical in (CREATE_FAILED_MARKER, "NodeWait"):
        answer = framework.send(request("Delete", physical=physical))
        assert answer.ok and answer.PhysicalResourceId == physical


def test_on_event_create_and_update_set_the_deadline() -> None:
    for request_type in ("Create", "Update"):
        request = event(request_type)
        del request["Data"]
        before = time.time()
        answer = handler.on_event(request, None)
        assert set(answer) == {"PhysicalResourceId", "Data"}
        assert before + TIMEOUT - 1 <= answer["Data"]["Deadline"] <= time.time() + TIMEOUT
        assert answer["PhysicalResourceId"] == f"{CLUSTER_ARN}/nodes:cpu,gpu"


def test_physical_id_is_stable_for_the_cluster_and_the_set_of_groups() -> None:
    assert handler.physical_id(CLUSTER_ARN, ["gpu", "cpu"]) == handler.physical_id(
        CLUSTER_ARN, ["cpu", "gpu", "cpu"]
    )
    assert handler.physical_id(CLUSTER_ARN, ["gpu"]) != handler.physical_id(CLUSTER_ARN, ["cpu"])
    other = CLUSTER_ARN.replace("abcdef123456", "123456abcdef")
    assert handler.physical_id(other, ["gpu"]) != handler.physical_id(CLUSTER_ARN, ["gpu"])
    # a physical id has at most 1 KiB: many long group names are hashed
    many = [f"group-{i:02d}-" + "x" * 50 for i in range(20)]
    long_id = handler.physical_id(CLUSTER_ARN, many)
    assert long_id.startswith(CLUSTER_ARN) and len(long_id) <= handler.MAX_READABLE_ID
    assert long_id == handler.physical_id(CLUSTER_ARN, list(reversed(many)))


def test_on_event_delete_keeps_the_physical_id() -> None:
    request = event("Delete")
    assert handler.on_event(request, None) == {"PhysicalResourceId": request["PhysicalResourceId"]}


def test_not_complete_while_no_node_runs(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("gpu", "Pending", 1), node("cpu", "DeepHealthCheckInProgress", 2)])
    # no Data: the framework rejects Data with IsComplete false
    assert handler.is_complete(event(), None) == {"IsComplete": False}


def test_a_running_node_of_another_group_does_not_count(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("login", "Running", 1), node("gpu", "Pending", 2)])
    assert handler.is_complete(event(), None) == {"IsComplete": False}


def test_complete_once_a_node_of_a_wanted_group_runs(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("gpu", "Pending", 1), node("cpu", "Running", 2)])
    assert handler.is_complete(event(), None) == {"IsComplete": True}


def test_pages_are_followed_and_counted_together(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("gpu", "Running", 1)], next_token="page-2")
    expect_page(sagemaker, [node("gpu", "Running", 2)], token="page-2")
    assert handler.is_complete(event(min_nodes=2), None) == {"IsComplete": True}


def test_min_nodes_counts_over_all_wanted_groups(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("gpu", "Running", 1), node("cpu", "Pending", 2)])
    assert handler.is_complete(event(min_nodes=2), None) == {"IsComplete": False}


def test_past_the_deadline_it_fails_with_one_readable_line(sagemaker: Stubber) -> None:
    expect_page(
        sagemaker,
        [
            node("gpu", "Pending", 1),
            node(
                "gpu",
                "Failure",
                2,
                "InsufficientInstanceCapacity:\n  no ml.p5.48xlarge in usw2-az2",
            ),
            node("gpu", "Pending", 3),
            node("login", "Running", 4),
        ],
    )
    with pytest.raises(handler.NodeWaitTimeout) as raised:
        handler.is_complete(event(deadline=time.time() - 1), None)
    message = str(raised.value)
    assert "\n" not in message and len(message) <= handler.MAX_MESSAGE
    for part in (
        f"HyperPod cluster {CLUSTER_ARN} has no Running node",
        "instance group(s) gpu, cpu",
        "after waiting 45 min",
        "gpu: 0 Running, 2 Pending, 1 Failure",
        "cpu: 0 Running (no nodes)",
        "InsufficientInstanceCapacity: no ml.p5.48xlarge in usw2-az2",
        "`make status CONFIG=",
        "created on the next deploy once a node is Running",
        "count (or min_count) above 0",
    ):
        assert part in message, (part, message)
    assert "login" not in message


def test_past_the_deadline_a_running_node_still_completes(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("gpu", "Running", 1)])
    assert handler.is_complete(event(deadline=time.time() - 1), None) == {"IsComplete": True}


def test_min_nodes_in_the_failure_message(sagemaker: Stubber) -> None:
    expect_page(sagemaker, [node("gpu", "Running", 1)])
    with pytest.raises(handler.NodeWaitTimeout, match="has fewer than 3 Running nodes"):
        handler.is_complete(event(min_nodes=3, deadline=time.time() - 1), None)


def test_a_long_message_keeps_its_advice() -> None:
    groups = [f"group-{i:02d}-" + "x" * 50 for i in range(20)]
    nodes = handler.Nodes({g: Counter({"Pending": 3, "Failure": 1}) for g in groups})
    message = handler.timeout_message(CLUSTER_ARN, groups, 1, TIMEOUT, nodes)
    assert len(message) <= handler.MAX_MESSAGE
    assert message.endswith("above 0 in cluster.instance_groups.")


def test_delete_is_complete_without_asking_aws(sagemaker: Stubber) -> None:
    # nothing queued: any call would fail the Stubber
    assert handler.is_complete(event("Delete"), None) == {"IsComplete": True}


def test_throttling_is_not_yet(sagemaker: Stubber) -> None:
    sagemaker.add_client_error(
        "list_cluster_nodes", service_error_code="ThrottlingException", http_status_code=400
    )
    assert handler.is_complete(event(), None) == {"IsComplete": False}


def test_throttling_past_the_deadline_still_fails_clearly(sagemaker: Stubber) -> None:
    sagemaker.add_client_error(
        "list_cluster_nodes", service_error_code="ThrottlingException", http_status_code=400
    )
    with pytest.raises(handler.NodeWaitTimeout, match="ListClusterNodes was throttled"):
        handler.is_complete(event(deadline=time.time() - 1), None)


def test_other_aws_errors_fail_at_once(sagemaker: Stubber) -> None:
    sagemaker.add_client_error(
        "list_cluster_nodes", service_error_code="AccessDeniedException", http_status_code=400
    )
    with pytest.raises(RuntimeError, match=f"ListClusterNodes of {CLUSTER_ARN} failed"):
        handler.is_complete(event(), None)


# -- the construct ---------------------------------------------------------------------------


def project_context() -> dict[str, Any]:
    """The feature flags of cdk.json (CDK-managed Lambda log groups among them)."""
    context: dict[str, Any] = json.loads((PROJECT_ROOT / "cdk.json").read_text())["context"]
    return context


@dataclass
class Built:
    stack: cdk.Stack
    in_vpc: HyperPodNodeWait  # subnets and security groups given
    outside: HyperPodNodeWait  # no VPC, a token ARN, role path and permissions boundary
    default_group: HyperPodNodeWait  # a VPC without subnets or security groups
    addon: cdk.CfnResource  # stands for an EKS add-on that waits for the nodes
    template: dict[str, Any]
    outdir: Path

    def logical_id(self, construct: Any) -> str:
        return self.stack.get_logical_id(construct.node.default_child or construct)

    def resources(self, resource_type: str, under: HyperPodNodeWait) -> dict[str, dict[str, Any]]:
        """The resources of one type that ``under`` made (logical ids start with its path)."""
        prefix = under.node.id
        return {
            k: r
            for k, r in self.template["Resources"].items()
            if r["Type"] == resource_type and k.startswith(prefix)
        }

    def acknowledgments(self) -> dict[tuple[str, str], str]:
        """(construct path, finding id) -> reason, read from the assembly."""
        return {(p, f): r for p, f, r in acknowledgments(self.outdir, "NodeWait")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Three waits in one stack, every compliance pack registered, log groups encrypted as the
    app's stacks do it (EncryptLogGroups); an unacknowledged finding fails the synth."""
    outdir = tmp_path_factory.mktemp("cdk-node-wait")
    app = cdk.App(outdir=str(outdir), context=project_context())
    register_compliance_packs(app, list(PACKS))
    stack = cdk.Stack(app, "NodeWait", env=cdk.Environment(account=ACCOUNT, region=REGION))
    logs_key = kms.Key.from_key_arn(
        stack, "LogsKey", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"
    )
    cdk.Aspects.of(stack).add(EncryptLogGroups(logs_key))
    subnet = ec2.Subnet.from_subnet_attributes(
        stack,
        "HyperPodSubnet",
        subnet_id="subnet-0123456789abcdef0",
        availability_zone=f"{REGION}a",
        route_table_id="rtb-0123456789abcdef0",
    )
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=[f"{REGION}a"],
        private_subnet_ids=["subnet-0123456789abcdef0"],
        private_subnet_route_table_ids=["rtb-0123456789abcdef0"],
    )
    node_group = ec2.SecurityGroup.from_security_group_id(
        stack, "NodeSecurityGroup", "sg-0123456789abcdef0"
    )
    in_vpc = HyperPodNodeWait(
        stack,
        "InVpc",
        cluster_arn=CLUSTER_ARN,
        instance_groups=["gpu", "cpu"],
        vpc=vpc,
        subnets=[subnet],
        security_groups=[node_group],
    )
    boundary = iam.ManagedPolicy.from_managed_policy_arn(
        stack, "Boundary", f"arn:aws:iam::{ACCOUNT}:policy/ml-boundary"
    )
    outside = HyperPodNodeWait(
        stack,
        "Outside",
        cluster_arn=cdk.Fn.import_value("HyperPodClusterArn"),
        instance_groups=["system"],
        min_nodes=2,
        timeout=cdk.Duration.minutes(20),
        role_path="/ml-platform/",
        permissions_boundary=boundary,
    )
    default_group = HyperPodNodeWait(
        stack, "DefaultGroup", cluster_arn=CLUSTER_ARN, instance_groups=["gpu"], vpc=vpc
    )
    addon = cdk.CfnWaitConditionHandle(stack, "Addon")
    addon.node.add_dependency(in_vpc.resource)
    try:
        assembly = app.synth()
    except Exception as exc:  # jsii: the validation (cdk-nag) failed
        report = outdir / "validation-report.json"
        raise AssertionError(
            f"synth failed: {exc}\n{report.read_text() if report.exists() else ''}"
        ) from None
    template = json.loads(
        (outdir / assembly.get_stack_by_name("NodeWait").template_file).read_text()
    )
    return Built(stack, in_vpc, outside, default_group, addon, template, outdir)


def test_the_custom_resource_and_its_properties(built: Built) -> None:
    template = Template.from_json(built.template)
    template.resource_count_is(RESOURCE_TYPE, 3)
    template.has_resource_properties(
        RESOURCE_TYPE,
        {
            "ServiceToken": {"Fn::GetAtt": [Match.string_like_regexp("^InVpcProvider"), "Arn"]},
            "ClusterArn": CLUSTER_ARN,
            "InstanceGroups": ["gpu", "cpu"],
            "MinNodes": 1,
            "TimeoutSeconds": TIMEOUT,
        },
    )
    template.has_resource_properties(
        RESOURCE_TYPE,
        {
            "ClusterArn": {"Fn::ImportValue": "HyperPodClusterArn"},
            "InstanceGroups": ["system"],
            "MinNodes": 2,
            "TimeoutSeconds": 20 * 60,
        },
    )
    # what callers depend on: the custom resource itself
    addon = built.template["Resources"][built.logical_id(built.addon)]
    assert addon["DependsOn"] == [built.logical_id(built.in_vpc.resource)]
    assert built.template["Resources"][addon["DependsOn"][0]]["Type"] == RESOURCE_TYPE


@pytest.mark.parametrize("which", ["in_vpc", "outside"])
def test_list_cluster_nodes_on_exactly_the_cluster(built: Built, which: str) -> None:
    wait: HyperPodNodeWait = getattr(built, which)
    arn = CLUSTER_ARN if which == "in_vpc" else {"Fn::ImportValue": "HyperPodClusterArn"}
    policy = built.template["Resources"][built.logical_id(wait.policy)]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Sid": "ListHyperPodNodes",
            "Effect": "Allow",
            "Action": "sagemaker:ListClusterNodes",
            "Resource": arn,
        }
    ]
    # attached to the is_complete handler's role only
    assert wait.is_complete_function.role is not None
    assert policy["Properties"]["Roles"] == [
        {"Ref": built.logical_id(wait.is_complete_function.role)}
    ]
    # and no other policy grants any SageMaker action
    for logical_id, resource in built.template["Resources"].items():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role"):
            text = json.dumps(resource["Properties"])
            if "sagemaker:" in text:
                assert resource["Type"] == "AWS::IAM::ManagedPolicy", logical_id


def test_handlers_run_in_the_given_subnets_and_groups(built: Built) -> None:
    for function in (built.in_vpc.on_event_function, built.in_vpc.is_complete_function):
        properties = built.template["Resources"][built.logical_id(function)]["Properties"]
        assert properties["VpcConfig"] == {
            "SubnetIds": ["subnet-0123456789abcdef0"],
            "SecurityGroupIds": ["sg-0123456789abcdef0"],
        }
        assert properties["Runtime"] == "python3.14"
        assert "Environment" not in properties  # nothing to encrypt (CKV_AWS_173 passes)
    handlers = {
        built.template["Resources"][built.logical_id(f)]["Properties"]["Handler"]
        for f in (built.in_vpc.on_event_function, built.in_vpc.is_complete_function)
    }
    assert handlers == {"index.on_event", "index.is_complete"}


def test_framework_functions_run_outside_the_vpc(built: Built) -> None:
    functions = built.resources("AWS::Lambda::Function", built.in_vpc)
    framework = {k: r for k, r in functions.items() if "Providerframework" in k}
    assert len(framework) == 3  # onEvent, isComplete, onTimeout
    for logical_id, resource in framework.items():
        assert "VpcConfig" not in resource["Properties"], logical_id


def test_without_a_vpc_the_handlers_run_outside_any(built: Built) -> None:
    for function in (built.outside.on_event_function, built.outside.is_complete_function):
        properties = built.template["Resources"][built.logical_id(function)]["Properties"]
        assert "VpcConfig" not in properties


def test_a_vpc_without_groups_gets_an_https_only_group(built: Built) -> None:
    groups = built.resources("AWS::EC2::SecurityGroup", built.default_group)
    ((group_id, group),) = groups.items()
    assert group["Properties"]["SecurityGroupEgress"] == [
        {
            "CidrIp": "0.0.0.0/0",
            "Description": "SageMaker API",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    assert "SecurityGroupIngress" not in group["Properties"]
    function = built.default_group.is_complete_function
    vpc_config = built.template["Resources"][built.logical_id(function)]["Properties"]["VpcConfig"]
    assert vpc_config["SecurityGroupIds"] == [{"Fn::GetAtt": [group_id, "GroupId"]}]
    assert vpc_config["SubnetIds"] == ["subnet-0123456789abcdef0"]  # the VPC's private subnets


def _waiter(built: Built, wait: HyperPodNodeWait) -> tuple[int, int]:
    """(IntervalSeconds, MaxAttempts) of the framework's waiter state machine."""
    ((_, machine),) = built.resources("AWS::StepFunctions::StateMachine", wait).items()
    definition = machine["Properties"]["DefinitionString"]
    # the function ARNs are tokens inside JSON strings: any text stands in for them
    text = "".join(p if isinstance(p, str) else "ARN" for p in definition["Fn::Join"][1])
    (retry,) = json.loads(text)["States"]["framework-isComplete-task"]["Retry"]
    return retry["IntervalSeconds"], retry["MaxAttempts"]


@pytest.mark.parametrize(("which", "timeout"), [("in_vpc", TIMEOUT), ("outside", 20 * 60)])
def test_the_framework_gives_up_after_the_handler(built: Built, which: str, timeout: int) -> None:
    interval, attempts = _waiter(built, getattr(built, which))
    assert interval == 30
    total = interval * attempts
    # the handler's own message comes first, and everything ends within CloudFormation's hour
    assert timeout + 60 <= total <= 3600


def test_role_path_and_boundary_reach_every_role_of_the_wait(built: Built) -> None:
    roles = built.resources("AWS::IAM::Role", built.outside)
    assert len(roles) == 6  # two handlers, three framework functions, the waiter
    boundary = f"arn:aws:iam::{ACCOUNT}:policy/ml-boundary"
    for logical_id, role in roles.items():
        assert role["Properties"].get("Path") == "/ml-platform/", logical_id
        assert role["Properties"].get("PermissionsBoundary") == boundary, logical_id
    for logical_id, role in built.resources("AWS::IAM::Role", built.in_vpc).items():
        assert "PermissionsBoundary" not in role["Properties"], logical_id


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"instance_groups": []}, id="no-groups"),
        pytest.param({"cluster_arn": "ml-cluster"}, id="a-name-not-an-arn"),
        pytest.param({"min_nodes": 0}, id="no-nodes"),
        pytest.param({"timeout": cdk.Duration.minutes(55)}, id="over-the-hour"),
        pytest.param({"timeout": cdk.Duration.seconds(30)}, id="too-short"),
        pytest.param({"subnets": ["subnet"]}, id="subnets-without-vpc"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, Any]) -> None:
    stack = cdk.Stack(cdk.App())
    arguments: dict[str, Any] = {"cluster_arn": CLUSTER_ARN, "instance_groups": ["gpu"], **kwargs}
    if arguments.get("subnets"):
        arguments["subnets"] = [
            ec2.Subnet.from_subnet_id(stack, "Subnet", "subnet-0123456789abcdef0")
        ]
    with pytest.raises(ValueError):
        HyperPodNodeWait(stack, "Wait", **arguments)


def test_the_handler_asset_holds_only_the_handler(built: Built) -> None:
    # the handler files, no bytecode: the same tree gives the same asset hash everywhere
    keys = {
        built.template["Resources"][built.logical_id(f)]["Properties"]["Code"]["S3Key"]
        for f in (built.in_vpc.on_event_function, built.in_vpc.is_complete_function)
    }
    (key,) = keys  # one asset for both handlers
    asset = built.outdir / f"asset.{key.removesuffix('.zip')}"
    assert sorted(p.name for p in asset.iterdir()) == ["index.py"]


# -- compliance ------------------------------------------------------------------------------


def test_every_pack_passes(built: Built) -> None:
    # the fixture's synth would have failed on any unacknowledged finding
    report = built.outdir / "validation-report.json"
    if report.exists():
        for plugin in json.loads(report.read_text())["pluginReports"]:
            assert plugin.get("violations", []) == [], plugin["pluginName"]


def test_acknowledgments_are_named_and_reasoned(built: Built) -> None:
    found = built.acknowledgments()
    assert found
    for (path, finding), reason in found.items():
        assert len(reason) >= MIN_REASON_LENGTH, (path, finding)
    findings = {finding for _, finding in found}
    # exact finding ids, no blanket acknowledgment of a rule
    assert "AwsSolutions-IAM5" not in findings and "AwsSolutions-IAM4" not in findings
    assert "AwsSolutions-L1" not in findings  # the runtimes are the newest: L1 does not fire
    handler_arn = f"<{built.logical_id(built.in_vpc.is_complete_function)}.Arn>:*"
    assert f"AwsSolutions-IAM5[Resource::{handler_arn}]" in findings
    for pack in ("NIST.800.53.R5", "HIPAA.Security", "PCI.DSS.321"):
        assert f"{pack}-LambdaInsideVPC" in findings
    # in the VPC the handlers need no LambdaInsideVPC acknowledgment; outside it they do
    in_vpc_handler = built.in_vpc.is_complete_function.node.path
    outside_handler = built.outside.is_complete_function.node.path
    inside = {f for (p, f) in found if p.lstrip("/") == in_vpc_handler}
    outside = {f for (p, f) in found if p.lstrip("/") == outside_handler}
    assert "NIST.800.53.R5-LambdaInsideVPC" not in inside
    assert "NIST.800.53.R5-LambdaInsideVPC" in outside


def test_checkov_skips_only_what_fails(built: Built) -> None:
    def skips(function: Any) -> set[str]:
        return set(skipped_checks(function.node.default_child))

    assert skips(built.in_vpc.is_complete_function) == {"CKV_AWS_115", "CKV_AWS_116"}
    assert skips(built.outside.is_complete_function) == {
        "CKV_AWS_115",
        "CKV_AWS_116",
        "CKV_AWS_117",
    }
    framework = built.in_vpc.provider.node.find_child("framework-onEvent")
    assert skips(framework) == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"}


def test_checkov_finds_no_failed_check(built: Built) -> None:
    if str(PROJECT_ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
    import run_checkov

    report = run_checkov.run(built.outdir)
    assert report.parsing_errors == []
    assert [str(f) for f in report.failed] == []
    assert report.skipped  # the skips in the metadata were read


def test_provider_scope_puts_the_handlers_in_an_earlier_stack() -> None:
    """Only the wait and its ListClusterNodes policy (which names the cluster) stay with the
    resource: the handlers and the framework deploy before the cluster exists."""
    app = cdk.App(context=project_context())
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    early = cdk.Stack(app, "Early", env=env)
    late = cdk.Stack(app, "Late", env=env)
    wait = HyperPodNodeWait(
        late, "NodeWait", cluster_arn=CLUSTER_ARN, instance_groups=["gpu"], provider_scope=early
    )
    assert cdk.Stack.of(wait.is_complete_function) is early
    assert cdk.Stack.of(wait.provider) is early
    early_template = Template.from_stack(early)
    late_template = Template.from_stack(late)
    early_template.resource_count_is("AWS::Lambda::Function", 5)  # 2 handlers + 3 framework
    late_template.resource_count_is("AWS::Lambda::Function", 0)
    late_template.resource_count_is(RESOURCE_TYPE, 1)
    late_template.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {"PolicyDocument": {"Statement": [Match.object_like({"Action": "sagemaker:ListClusterNodes",
                                                            "Resource": CLUSTER_ARN})]}},
    )  # fmt: skip
    (resource,) = late_template.find_resources(RESOURCE_TYPE).values()
    (policy_id,) = late_template.find_resources("AWS::IAM::ManagedPolicy")
    assert policy_id in resource["DependsOn"]

"""``make verify``'s AWS-side checks: cluster, health, data repository links, FSx facts, leftovers.

AWS answers come from botocore's Stubber (every request is checked against its expected
parameters and the API's shapes); the file system is a dict-backed fake whose auto-imported files
arrive after a delay on a fake clock.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from ops_testkit import NOW, StubbedAws, cluster_absent, cluster_present, environment

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.verify import aws_checks
from hyperpod_ops.verify.aws_checks import (
    FsxFacts,
    check_cluster,
    check_dra,
    check_health,
    fsx_facts,
    leftovers,
    load_cluster,
    scratch_path,
)
from hyperpod_ops.verify.model import RUN_LABEL, Node, Options, Result, VerifyRun

RUN_ID = "hpv-0123456789ab"
CLUSTER = "ml-research"
CLUSTER_ID = "abc123def456"
FS_ID = "fs-0123456789abcdef0"
BUCKET = "ml-research-data-111122223333"
GPU_1 = "i-0123456789abcdef0"
GPU_2 = "i-0123456789abcdef1"
CONTROLLER = "i-0aaaaaaaaaaaaaaa0"
LOGIN = "i-0bbbbbbbbbbbbbbb0"
GONE = "i-0ccccccccccccccc0"


# -- stubbed AWS with S3 ------------------------------------------------------------------------

# boto3 adds S3's transfer methods to the client class once per boto3 session on its botocore
# session: StubbedAws makes a boto3 session per test on one shared botocore session, so a second
# S3 client fails. S3 clients come from this one session instead.
_S3_SESSION = boto3.session.Session(
    aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-west-2"
)


class _Aws(StubbedAws):
    def __call__(self, service: str) -> Any:
        if service == "s3" and service not in self.clients:
            client = _S3_SESSION.client("s3")
            stubber = Stubber(client)
            stubber.activate()
            self.clients[service] = client
            self.stubbers[service] = stubber
        return super().__call__(service)


@pytest.fixture
def aws() -> Iterator[StubbedAws]:
    """The conftest's stubbed clients, S3 included; fails if a queued answer was not used."""
    stubbed = _Aws()
    yield stubbed
    stubbed.verify()


# -- fakes -------------------------------------------------------------------------------------


class Clock:
    """A clock that moves only when something sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeFsx:
    """The file system's files by file system path; ``arrive`` makes a file appear at a clock
    time, as an auto import does some seconds after the S3 put."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.files: dict[str, bytes] = {}
        self.arrivals: list[tuple[float, str, bytes]] = []
        self.removed: list[str] = []

    def arrive(self, path: str, data: bytes, at: float) -> None:
        self.arrivals.append((at, path, data))

    def read(self, path: str, timeout: float) -> bytes | None:
        assert timeout > 0
        for at, arriving, data in list(self.arrivals):
            if at <= self.clock():
                self.files[arriving] = data
                self.arrivals.remove((at, arriving, data))
        return self.files.get(path)

    def write(self, path: str, data: bytes, timeout: float) -> None:
        self.files[path] = data

    def remove(self, path: str, timeout: float) -> None:
        self.removed.append(path)
        for name in [n for n in self.files if n == path or n.startswith(path + "/")]:
            del self.files[name]


class FakeKubernetes:
    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes

    def items(self, path: str) -> list[dict[str, Any]]:
        assert path == "/api/v1/nodes"
        return self.nodes


def _payload(kind: str, run_id: str) -> bytes:
    return f"{kind} {run_id}\n".encode()


@pytest.fixture(autouse=True)
def _fixed_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aws_checks, "_payload", _payload)


# -- AWS answers --------------------------------------------------------------------------------


def _group(name: str, instance_type: str, current: int, target: int, node_type: str,
           **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "CurrentCount": current,
        "TargetCount": target,
        "Status": "InService" if current >= target else "Updating",
        "SlurmConfig": {"NodeType": node_type},
        **extra,
    }


GROUPS = [
    _group("controller", "ml.m5.2xlarge", 1, 1, "Controller"),
    _group("login", "ml.m5.4xlarge", 1, 1, "Login"),
    _group(
        "gpu",
        "ml.p5.48xlarge",
        2,
        2,
        "Compute",
        OnStartDeepHealthChecks=["InstanceStress", "InstanceConnectivity"],
    ),
]


def _summary(group: str, instance_id: str, instance_type: str, state: str = "Running",
             launched: dt.datetime = NOW) -> dict[str, Any]:  # fmt: skip
    return {
        "InstanceGroupName": group,
        "InstanceId": instance_id,
        "InstanceType": instance_type,
        "LaunchTime": launched,
        "InstanceStatus": {"Status": state},
    }


SUMMARIES = [
    _summary("controller", CONTROLLER, "ml.m5.2xlarge"),
    _summary("login", LOGIN, "ml.m5.4xlarge"),
    _summary("gpu", GPU_1, "ml.p5.48xlarge"),
    _summary("gpu", GPU_2, "ml.p5.48xlarge"),
]


def _deployed(aws: StubbedAws, groups: list[dict[str, Any]], summaries: list[dict[str, Any]],
              **extra: Any) -> None:  # fmt: skip
    cluster_present(aws, CLUSTER, groups=groups, cluster_id=CLUSTER_ID, **extra)
    aws.stub("sagemaker").add_response(
        "list_cluster_nodes", {"ClusterNodeSummaries": summaries}, {"ClusterName": CLUSTER}
    )


def _oldest(aws: StubbedAws, launched: dt.datetime = NOW) -> None:
    aws.stub("sagemaker").add_response(
        "list_cluster_nodes",
        {
            "ClusterNodeSummaries": [
                _summary("controller", CONTROLLER, "ml.m5.2xlarge", launched=launched)
            ]
        },
        {
            "ClusterName": CLUSTER,
            "SortBy": "CREATION_TIME",
            "SortOrder": "Ascending",
            "MaxResults": 1,
        },
    )


def _event(instance_id: str, level: str, description: str) -> dict[str, Any]:
    return {
        "EventId": f"event-{instance_id}-{level}",
        "ClusterArn": f"arn:aws:sagemaker:us-west-2:111122223333:cluster/{CLUSTER_ID}",
        "ClusterName": CLUSTER,
        "InstanceGroupName": "gpu",
        "InstanceId": instance_id,
        "ResourceType": "Instance",
        "EventTime": NOW + dt.timedelta(hours=1),
        "Description": description,
        "EventLevel": level,
    }


def _events(aws: StubbedAws, events: list[dict[str, Any]]) -> None:
    aws.stub("sagemaker").add_response(
        "list_cluster_events",
        {"Events": events},
        {
            "ClusterName": CLUSTER,
            "ResourceType": "Instance",
            "SortBy": "EventTime",
            "SortOrder": "Descending",
            "MaxResults": 100,
            "EventTimeAfter": NOW,
        },
    )


def _agent_logs(aws: StubbedAws, events: list[dict[str, Any]] | None = None) -> None:
    aws.stub("logs").add_response(
        "filter_log_events",
        {"events": events or []},
        {
            "logGroupName": f"/aws/sagemaker/Clusters/{CLUSTER}/{CLUSTER_ID}",
            "logStreamNamePrefix": "SagemakerHealthMonitoringAgent",
            "filterPattern": aws_checks.AGENT_FILTER,
            "limit": aws_checks.AGENT_EVENTS,
            "startTime": int(NOW.timestamp() * 1000),
        },
    )


def _storage_stack(aws: StubbedAws) -> None:
    aws.stub("cloudformation").add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": f"{CLUSTER}-storage",
                    "CreationTime": NOW,
                    "StackStatus": "UPDATE_COMPLETE",
                    "Outputs": [
                        {"OutputKey": "FileSystemDnsName", "OutputValue": "x"},
                        {"OutputKey": "FileSystemId", "OutputValue": FS_ID},
                    ],
                }
            ]
        },
        {"StackName": f"{CLUSTER}-storage"},
    )


def _file_system(aws: StubbedAws, fs_id: str = FS_ID) -> None:
    aws.stub("fsx").add_response(
        "describe_file_systems",
        {
            "FileSystems": [
                {
                    "FileSystemId": fs_id,
                    "FileSystemType": "LUSTRE",
                    "Lifecycle": "AVAILABLE",
                    "StorageCapacity": 2400,
                    "DNSName": f"{fs_id}.fsx.us-west-2.amazonaws.com",
                    "LustreConfiguration": {
                        "MountName": "abcdefgh",
                        "DeploymentType": "PERSISTENT_2",
                        "PerUnitStorageThroughput": 250,
                    },
                }
            ]
        },
        {"FileSystemIds": [fs_id]},
    )


def _association(path: str = "/datasets", prefix: str = "datasets/", auto_import: list[str] | None = None,
                 auto_export: list[str] | None = None, fs_id: str = FS_ID) -> dict[str, Any]:  # fmt: skip
    return {
        "AssociationId": "dra-0123456789abcdef0",
        "FileSystemId": fs_id,
        "Lifecycle": "AVAILABLE",
        "FileSystemPath": path,
        "DataRepositoryPath": f"s3://{BUCKET}/{prefix}",
        "S3": {
            "AutoImportPolicy": {"Events": auto_import or []},
            "AutoExportPolicy": {"Events": auto_export or []},
        },
    }


def _associations(aws: StubbedAws, associations: list[dict[str, Any]], fs_id: str = FS_ID) -> None:
    aws.stub("fsx").add_response(
        "describe_data_repository_associations",
        {"Associations": associations},
        {"Filters": [{"Name": "file-system-id", "Values": [fs_id]}]},
    )


def _created_fsx(aws: StubbedAws, associations: list[dict[str, Any]]) -> None:
    """The storage stack's file system and its associations, as fsx_facts reads them."""
    _storage_stack(aws)
    _file_system(aws)
    _associations(aws, associations)


def _key(name: str = "") -> str:
    return f"datasets/.hyperpod-verify/{RUN_ID}/{name}"


def _put(aws: StubbedAws, name: str) -> None:
    aws.stub("s3").add_response(
        "put_object",
        {"ETag": '"etag"'},
        {"Bucket": BUCKET, "Key": _key(name), "Body": _payload(name.split(".")[0], RUN_ID)},
    )


def _head(aws: StubbedAws, name: str, missing: int = 0) -> None:
    params = {"Bucket": BUCKET, "Key": _key(name)}
    for _ in range(missing):
        aws.error("s3", "head_object", "404", params, message="Not Found", status=404)
    aws.stub("s3").add_response("head_object", {"ContentLength": 10}, params)


def _get(aws: StubbedAws, name: str, data: bytes) -> None:
    aws.stub("s3").add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(data), len(data))},
        {"Bucket": BUCKET, "Key": _key(name)},
    )


def _task(aws: StubbedAws, task_id: str, kind: str, path: str, lifecycles: list[str]) -> None:
    task = {
        "TaskId": task_id,
        "Type": kind,
        "CreationTime": NOW,
        "FileSystemId": FS_ID,
        "Paths": [path],
    }
    aws.stub("fsx").add_response(
        "create_data_repository_task",
        {"DataRepositoryTask": {**task, "Lifecycle": "PENDING"}},
        {
            "Type": kind,
            "Paths": [path],
            "FileSystemId": FS_ID,
            "Report": {"Enabled": False},
            "Tags": [{"Key": RUN_LABEL, "Value": RUN_ID}],
        },
    )
    for lifecycle in lifecycles:
        aws.stub("fsx").add_response(
            "describe_data_repository_tasks",
            {"DataRepositoryTasks": [{**task, "Lifecycle": lifecycle}]},
            {"TaskIds": [task_id]},
        )


# -- runs ----------------------------------------------------------------------------------------


def _run(aws: StubbedAws, config: EnvironmentConfig | None = None, *, clock: Clock | None = None,
         **kwargs: Any) -> VerifyRun:  # fmt: skip
    clock = clock or Clock()
    return VerifyRun(
        config=config or environment(),
        clients=aws,
        run_id=RUN_ID,
        clock=clock,
        sleep=clock.sleep,
        **kwargs,
    )


def _loaded(aws: StubbedAws, config: EnvironmentConfig | None = None, **kwargs: Any) -> VerifyRun:
    """A run whose cluster was read (no AWS call)."""
    run = _run(aws, config, **kwargs)
    run.cluster = {
        "ClusterArn": f"arn:aws:sagemaker:us-west-2:111122223333:cluster/{CLUSTER_ID}",
        "ClusterName": CLUSTER,
        "ClusterStatus": "InService",
        "InstanceGroups": GROUPS,
        "NodeProvisioningMode": "Continuous",
    }
    run.nodes = [
        Node("controller", CONTROLLER, "ml.m5.2xlarge", "Running"),
        Node("login", LOGIN, "ml.m5.4xlarge", "Running"),
        Node("gpu", GPU_1, "ml.p5.48xlarge", "Running"),
        Node("gpu", GPU_2, "ml.p5.48xlarge", "Running"),
    ]
    return run


def _by_subject(results: list[Result]) -> dict[str | None, Result]:
    return {r.subject: r for r in results}


# -- cluster -------------------------------------------------------------------------------------


def test_in_service_with_every_group_at_its_count_passes(aws: StubbedAws) -> None:
    _deployed(aws, GROUPS, SUMMARIES, NodeProvisioningMode="Continuous")
    run = _run(aws)

    assert load_cluster(run) is None
    results = check_cluster(run)

    assert [r.outcome for r in results] == ["pass"] * 4
    assert [r.subject for r in results] == [None, "controller", "login", "gpu"]
    assert _by_subject(results)["gpu"].figures == {"current": 2, "target": 2}
    assert [(n.label, n.instance_type) for n in run.nodes][2] == (f"gpu/{GPU_1}", "ml.p5.48xlarge")


def test_a_flexible_group_node_takes_its_type_from_the_summary_or_the_group(
    aws: StubbedAws,
) -> None:
    flexible = {
        **_group("gpu", "", 1, 1, "Compute"),
        "InstanceRequirements": {"CurrentInstanceTypes": ["ml.p5.48xlarge", "ml.p5en.48xlarge"]},
    }
    del flexible["InstanceType"]
    summary = _summary("gpu", GPU_1, "ml.p5en.48xlarge")
    _deployed(aws, [flexible], [summary])
    run = _run(aws)

    assert load_cluster(run) is None
    assert run.nodes == [Node("gpu", GPU_1, "ml.p5en.48xlarge", "Running")]


def test_a_group_short_of_its_target_fails_naming_it(aws: StubbedAws) -> None:
    run = _loaded(aws)
    run.cluster["InstanceGroups"] = [
        *GROUPS[:2],
        _group("gpu", "ml.p5.48xlarge", 1, 2, "Compute", MinCount=1),
    ]
    run.nodes = run.nodes[:3]

    gpu = _by_subject(check_cluster(run))["gpu"]

    assert gpu.outcome == "fail"
    assert gpu.detail == "1 of 2 ml.p5.48xlarge nodes are up (group Updating)"
    assert "list-cluster-events" in str(gpu.fix)
    assert gpu.figures == {"current": 1, "target": 2}


def test_a_target_that_differs_from_the_config_fails(aws: StubbedAws) -> None:
    run = _loaded(aws, environment(changes={"cluster.instance_groups[2].count": 4}))

    gpu = _by_subject(check_cluster(run))["gpu"]

    assert gpu.outcome == "fail"
    assert gpu.detail == "target 2 nodes, but the config asks for 4"


def test_a_failed_node_fails_with_its_message_and_where_to_look(aws: StubbedAws) -> None:
    run = _loaded(aws)
    run.nodes[3].status = "Failure"
    aws.stub("sagemaker").add_response(
        "describe_cluster_node",
        {
            "NodeDetails": {
                "InstanceGroupName": "gpu",
                "InstanceId": GPU_2,
                "InstanceStatus": {
                    "Status": "Failure",
                    "Message": "Lifecycle script\nfailed: exit 1",
                },
            }
        },
        {"ClusterName": CLUSTER, "NodeId": GPU_2},
    )

    node = _by_subject(check_cluster(run))[f"gpu/{GPU_2}"]

    assert node.outcome == "fail"
    assert node.detail == "ml.p5.48xlarge node failed: Lifecycle script failed: exit 1"
    assert f"/aws/sagemaker/Clusters/{CLUSTER}/{CLUSTER_ID}" in str(node.fix)
    assert "make status" in str(node.fix)


def test_a_node_still_in_deep_health_checks_fails(aws: StubbedAws) -> None:
    run = _loaded(aws)
    run.nodes[2].status = "DeepHealthCheckInProgress"
    aws.stub("sagemaker").add_response(
        "describe_cluster_node",
        {
            "NodeDetails": {
                "InstanceId": GPU_1,
                "InstanceStatus": {"Status": "DeepHealthCheckInProgress"},
            }
        },
        {"ClusterName": CLUSTER, "NodeId": GPU_1},
    )

    node = _by_subject(check_cluster(run))[f"gpu/{GPU_1}"]

    assert node.detail == "ml.p5.48xlarge node is still in deep health checks"
    assert "wait until the node is Running" in str(node.fix)


def test_a_cluster_not_in_service_fails_with_its_failure_message(aws: StubbedAws) -> None:
    run = _loaded(aws)
    run.cluster.update(ClusterStatus="Failed", FailureMessage="capacity\nerror")

    cluster = check_cluster(run)[0]

    assert (cluster.outcome, cluster.detail) == (
        "fail",
        f"cluster {CLUSTER} is Failed: capacity error",
    )
    assert "aws logs tail" in str(cluster.fix)


def test_a_cluster_not_deployed_gives_the_reason(aws: StubbedAws) -> None:
    cluster_absent(aws, CLUSTER)

    reason = load_cluster(_run(aws))

    assert (
        reason
        == f"HyperPod cluster {CLUSTER} is not deployed in us-west-2 (make deploy CONFIG=<this file>)"
    )


def test_a_cluster_the_caller_cannot_read_gives_the_permission(aws: StubbedAws) -> None:
    aws.error("sagemaker", "describe_cluster", "AccessDeniedException", {"ClusterName": CLUSTER})

    reason = load_cluster(_run(aws))

    assert reason is not None
    assert "sagemaker:DescribeCluster returned AccessDeniedException" in reason


# -- health --------------------------------------------------------------------------------------


def test_an_error_event_of_a_current_node_fails_and_a_replaced_instance_is_ignored(
    aws: StubbedAws,
) -> None:
    _oldest(aws)
    _events(
        aws,
        [
            _event(GONE, "Error", "Instance failed health checks and was replaced"),
            _event(GPU_1, "Error", "Node reboot: GPU fell off the bus"),
            _event(GPU_2, "Info", "Instance is running"),
        ],
    )
    _agent_logs(aws)

    results = _by_subject(check_health(_loaded(aws)))

    events = results["events"]
    assert events.outcome == "fail"
    assert events.detail == (
        f"1 Error/Warn events for 1 current nodes, newest: gpu/{GPU_1} Error: Node reboot: GPU "
        "fell off the bus"
    )
    assert results["deep health checks"].outcome == "pass"
    assert results["health agent"].outcome == "pass"


def test_events_of_replaced_instances_only_pass(aws: StubbedAws) -> None:
    _oldest(aws)
    _events(aws, [_event(GONE, "Error", "Instance failed")])
    _agent_logs(aws)

    events = _by_subject(check_health(_loaded(aws)))["events"]

    assert (events.outcome, events.detail) == (
        "pass",
        "no Error or Warn event for the current nodes",
    )


def test_a_deep_health_check_event_fails_the_deep_health_checks(aws: StubbedAws) -> None:
    _oldest(aws)
    _events(aws, [_event(GPU_2, "Error", "Deep health check InstanceStress failed: DCGM level 4")])
    _agent_logs(aws)

    results = _by_subject(check_health(_loaded(aws)))

    assert results["events"].outcome == "pass"
    assert results["deep health checks"].outcome == "fail"
    assert "DCGM level 4" in results["deep health checks"].detail


def test_without_continuous_provisioning_events_skip(aws: StubbedAws) -> None:
    run = _loaded(aws, environment(changes={"cluster.node_provisioning_mode": None}))
    del run.cluster["NodeProvisioningMode"]
    _oldest(aws)
    _agent_logs(aws)

    results = _by_subject(check_health(run))

    assert results["events"].outcome == "skip"
    assert "only under Continuous node provisioning" in results["events"].detail
    assert results["deep health checks"].detail == (
        "gpu: InstanceStress, InstanceConnectivity; no current node failed them (node status)"
    )


def test_health_agent_lines_of_current_nodes_fail_and_of_gone_nodes_do_not(
    aws: StubbedAws,
) -> None:
    _oldest(aws)
    _events(aws, [])
    _agent_logs(
        aws,
        [
            {
                "logStreamName": f"SagemakerHealthMonitoringAgent/gpu/{GONE}",
                "message": "ERROR Xid 79",
            },
            {
                "logStreamName": f"SagemakerHealthMonitoringAgent/gpu/{GPU_1}",
                "message": "ERROR NVLink down",
            },
        ],
    )

    agent = _by_subject(check_health(_loaded(aws)))["health agent"]

    assert agent.outcome == "fail"
    assert agent.detail.endswith("ERROR NVLink down")
    assert agent.figures == {"lines": 1}


def _kube_node(name: str, health: str, deep: str | None = None) -> dict[str, Any]:
    labels = {"sagemaker.amazonaws.com/node-health-status": health}
    if deep:
        labels["sagemaker.amazonaws.com/deep-health-check-status"] = deep
    return {"metadata": {"name": name, "labels": labels}}


def _eks_run(aws: StubbedAws, nodes: list[dict[str, Any]] | None) -> VerifyRun:
    changes = {
        "cluster.node_provisioning_mode": None,
        "cluster.instance_groups[0].deep_health_checks": ["InstanceStress"],
    }
    config = environment("eks-minimal", changes)
    run = _run(aws, config, kubernetes=None if nodes is None else FakeKubernetes(nodes))
    run.cluster = {
        "ClusterArn": f"arn:aws:sagemaker:us-west-2:111122223333:cluster/{CLUSTER_ID}",
        "ClusterName": "eks-minimal",
        "ClusterStatus": "InService",
        "InstanceGroups": [
            {
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.g5.8xlarge",
                "CurrentCount": 2,
                "TargetCount": 2,
            }
        ],
    }
    run.nodes = [Node("gpu", GPU_1, "ml.g5.8xlarge", "Running")]
    return run


def test_eks_nodes_not_schedulable_fail_the_health_agent_part(aws: StubbedAws) -> None:
    run = _eks_run(
        aws,
        [
            _kube_node("hyperpod-i-0123456789abcdef0", "Schedulable", "Passed"),
            _kube_node("hyperpod-i-0123456789abcdef1", "UnschedulablePendingReplacement", "Failed"),
            {"metadata": {"name": "system-node", "labels": {}}},
        ],
    )

    results = _by_subject(check_health(run))

    agent = results["health agent"]
    assert agent.outcome == "fail"
    assert agent.detail == (
        "1 of 2 HyperPod nodes are not Schedulable: hyperpod-i-0123456789abcdef1 "
        "sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReplacement"
    )
    deep = results["deep health checks"]
    assert deep.outcome == "fail"
    assert "deep-health-check-status=Failed" in deep.detail
    assert results["events"].outcome == "skip"


def test_eks_without_the_kubernetes_api_skips_the_labels(aws: StubbedAws) -> None:
    results = _by_subject(check_health(_eks_run(aws, None)))

    assert results["health agent"].outcome == "skip"
    assert "Kubernetes API" in results["health agent"].detail
    assert results["deep health checks"].detail.endswith("(node status)")


def test_the_deep_health_check_starts_only_when_asked(aws: StubbedAws) -> None:
    _oldest(aws)
    _events(aws, [])
    _agent_logs(aws)
    # not asked: no StartClusterHealthCheck (the Stubber would refuse an unexpected call)
    assert "on-demand deep health check" not in _by_subject(check_health(_loaded(aws)))

    _oldest(aws)
    _events(aws, [])
    _agent_logs(aws)
    aws.stub("sagemaker").add_response(
        "start_cluster_health_check",
        {"ClusterArn": f"arn:aws:sagemaker:us-west-2:111122223333:cluster/{CLUSTER_ID}"},
        {
            "ClusterName": CLUSTER,
            "DeepHealthCheckConfigurations": [
                {
                    "InstanceGroupName": "gpu",
                    "InstanceIds": [GPU_1, GPU_2],
                    "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
                }
            ],
        },
    )
    run = _loaded(aws, options=Options(deep_health_check=True))

    started = _by_subject(check_health(run))["on-demand deep health check"]

    assert started.outcome == "pass"
    assert started.detail.startswith(
        "started on gpu (2 nodes: InstanceStress, InstanceConnectivity)"
    )
    assert "make status" in started.detail
    assert started.figures == {"nodes": 2}


# -- data repository associations -----------------------------------------------------------------


def test_auto_import_and_auto_export_pass_and_register_the_cleanup(aws: StubbedAws) -> None:
    clock = Clock()
    fsx = FakeFsx(clock)
    _created_fsx(aws, [_association(auto_import=["NEW", "CHANGED"], auto_export=["NEW"])])
    _put(aws, "import.txt")
    fsx.arrive(f"/datasets/.hyperpod-verify/{RUN_ID}/import.txt", _payload("import", RUN_ID), at=12)
    _head(aws, "export.txt", missing=2)
    _get(aws, "export.txt", _payload("export", RUN_ID))
    run = _run(aws, clock=clock, fsx=fsx)

    (result,) = check_dra(run)

    assert result.outcome == "pass", result.detail
    assert result.subject == "/datasets"
    assert result.detail.startswith(
        "S3 -> FSx in 15 s (auto import), FSx -> S3 in 10 s (auto export)"
    )
    assert fsx.files[f"/datasets/.hyperpod-verify/{RUN_ID}/export.txt"] == _payload(
        "export", RUN_ID
    )
    assert [m.what for m in run.made] == [
        f"FSx folder /datasets/.hyperpod-verify/{RUN_ID}",
        f"S3 objects under s3://{BUCKET}/{_key()}",
    ]
    assert (
        run.made[0].by_hand
        == f"rm -rf /fsx/datasets/.hyperpod-verify/{RUN_ID} on a node that mounts the file system"
    )


def test_without_auto_import_or_export_data_repository_tasks_move_the_files(
    aws: StubbedAws,
) -> None:
    clock = Clock()
    fsx = FakeFsx(clock)
    _created_fsx(aws, [_association()])
    _put(aws, "import.txt")
    _task(
        aws,
        "task-0123456789abcdef0",
        "IMPORT_METADATA_FROM_REPOSITORY",
        f"s3://{BUCKET}/{_key()}",
        ["PENDING", "EXECUTING", "SUCCEEDED"],
    )
    fsx.arrive(f"/datasets/.hyperpod-verify/{RUN_ID}/import.txt", _payload("import", RUN_ID), at=9)
    _task(
        aws,
        "task-0123456789abcdef1",
        "EXPORT_TO_REPOSITORY",
        f"datasets/.hyperpod-verify/{RUN_ID}/export.txt",
        ["SUCCEEDED"],
    )
    _head(aws, "export.txt")
    _get(aws, "export.txt", _payload("export", RUN_ID))
    run = _run(aws, clock=clock, fsx=fsx)

    (result,) = check_dra(run)

    assert result.outcome == "pass", result.detail
    assert "(import task)" in result.detail and "(export task)" in result.detail
    assert [m.what for m in run.made][2:] == [
        "FSx data repository task task-0123456789abcdef0 (IMPORT_METADATA_FROM_REPOSITORY)",
        "FSx data repository task task-0123456789abcdef1 (EXPORT_TO_REPOSITORY)",
    ]
    # removing a task that has ended is fine
    aws.error(
        "fsx",
        "cancel_data_repository_task",
        "DataRepositoryTaskEnded",
        {"TaskId": "task-0123456789abcdef0"},
    )
    run.made[2].remove()


def test_an_import_that_never_appears_fails_at_the_deadline_and_is_still_removed(
    aws: StubbedAws,
) -> None:
    clock = Clock()
    fsx = FakeFsx(clock)
    _created_fsx(aws, [_association(auto_import=["NEW"])])
    _put(aws, "import.txt")
    run = _run(aws, clock=clock, fsx=fsx)

    (result,) = check_dra(run)

    assert result.outcome == "fail"
    assert result.detail == (
        f"s3://{BUCKET}/{_key('import.txt')} did not appear at "
        f"/datasets/.hyperpod-verify/{RUN_ID}/import.txt within 450 s (auto import)"
    )
    assert clock.now == 450
    s3_objects = run.made[1]
    aws.stub("s3").add_response(
        "list_objects_v2",
        {"Contents": [{"Key": _key("import.txt")}], "KeyCount": 1},
        {"Bucket": BUCKET, "Prefix": _key()},
    )
    aws.stub("s3").add_response("delete_object", {}, {"Bucket": BUCKET, "Key": _key("import.txt")})
    s3_objects.remove()
    run.made[0].remove()
    assert fsx.removed == [f"/datasets/.hyperpod-verify/{RUN_ID}"]


def test_a_bucket_the_caller_cannot_write_fails_with_the_iam_fix(aws: StubbedAws) -> None:
    _created_fsx(aws, [_association(auto_import=["NEW"])])
    aws.error(
        "s3",
        "put_object",
        "AccessDenied",
        {"Bucket": BUCKET, "Key": _key("import.txt"), "Body": _payload("import", RUN_ID)},
        status=403,
    )
    run = _run(aws, fsx=FakeFsx(Clock()))

    (result,) = check_dra(run)

    assert result.outcome == "fail"
    assert result.detail.startswith("s3:PutObject returned AccessDenied")
    assert (
        f"s3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket on s3://{BUCKET}/datasets/.hyperpod-verify/*"
        in str(result.fix)
    )
    assert [m.what for m in run.made] == [f"FSx folder /datasets/.hyperpod-verify/{RUN_ID}"]


def test_dra_skips_without_file_access(aws: StubbedAws) -> None:
    _created_fsx(aws, [_association()])

    (result,) = check_dra(_run(aws))

    assert result.outcome == "skip"
    assert "no access to the file system's files" in result.detail


def test_dra_skips_without_fsx(aws: StubbedAws) -> None:
    (result,) = check_dra(_run(aws, environment(changes={"storage.fsx": {"enabled": False}})))

    assert (result.outcome, result.detail) == ("skip", "storage.fsx is off: no file system")


# -- FSx facts and scratch path -------------------------------------------------------------------


def test_fsx_facts_of_a_created_file_system_come_from_the_storage_stack(aws: StubbedAws) -> None:
    _created_fsx(aws, [_association()])

    facts = fsx_facts(_run(aws))

    assert facts == FsxFacts(
        file_system_id=FS_ID,
        dns_name=f"{FS_ID}.fsx.us-west-2.amazonaws.com",
        mount_name="abcdefgh",
        mount_path="/fsx",
        capacity_gib=2400,
        throughput_per_tib=250,
        dra_paths=("/datasets",),
    )


def test_fsx_facts_of_an_adopted_file_system_read_no_stack(aws: StubbedAws) -> None:
    adopted = "fs-0a1b2c3d4e5f67890"
    config = environment("existing-vpc-fsx")
    _file_system(aws, adopted)
    _associations(aws, [_association("/shared", "", fs_id=adopted)], adopted)

    facts = fsx_facts(_run(aws, config))

    assert facts is not None
    assert (facts.file_system_id, facts.dra_paths) == (adopted, ("/shared",))


def test_fsx_facts_of_a_stack_not_deployed_say_so(aws: StubbedAws) -> None:
    aws.error(
        "cloudformation", "describe_stacks", "ValidationError", {"StackName": f"{CLUSTER}-storage"}
    )

    with pytest.raises(aws_checks.FsxUnknown, match="stack ml-research-storage is not deployed"):
        fsx_facts(_run(aws))


def test_fsx_facts_are_none_without_fsx(aws: StubbedAws) -> None:
    assert fsx_facts(_run(aws, environment(changes={"storage.fsx": {"enabled": False}}))) is None


def _facts(*dra_paths: str) -> FsxFacts:
    return FsxFacts(FS_ID, "dns", "mount", "/fsx", 1200, 250, dra_paths)


def test_scratch_path_is_outside_every_dra_or_none() -> None:
    assert scratch_path(_facts("/datasets"), RUN_ID) == f"/.hyperpod-verify/{RUN_ID}"
    assert scratch_path(_facts(), RUN_ID) == f"/.hyperpod-verify/{RUN_ID}"
    assert scratch_path(_facts("/"), RUN_ID) is None
    assert scratch_path(_facts("/.hyperpod-verify"), RUN_ID) is None
    assert scratch_path(_facts("/.hyperpod-verify-other"), RUN_ID) == f"/.hyperpod-verify/{RUN_ID}"


# -- leftovers -----------------------------------------------------------------------------------


def test_leftovers_find_objects_tasks_and_folders_by_run_id(aws: StubbedAws) -> None:
    _created_fsx(aws, [_association()])
    aws.stub("s3").add_response(
        "list_objects_v2",
        {"Contents": [{"Key": _key()}, {"Key": _key("export.txt")}], "KeyCount": 2},
        {"Bucket": BUCKET, "Prefix": _key()},
    )
    task = {"Type": "EXPORT_TO_REPOSITORY", "Lifecycle": "EXECUTING", "CreationTime": NOW}
    aws.stub("fsx").add_response(
        "describe_data_repository_tasks",
        {
            "DataRepositoryTasks": [
                {
                    **task,
                    "TaskId": "task-0123456789abcdef0",
                    "Tags": [{"Key": RUN_LABEL, "Value": RUN_ID}],
                },
                {
                    **task,
                    "TaskId": "task-0123456789abcdef1",
                    "Tags": [{"Key": RUN_LABEL, "Value": "hpv-other"}],
                },
            ]
        },
        {
            "Filters": [
                {"Name": "file-system-id", "Values": [FS_ID]},
                {"Name": "task-lifecycle", "Values": ["PENDING", "EXECUTING"]},
            ]
        },
    )
    fsx = FakeFsx(Clock())

    found = leftovers(_run(aws, fsx=fsx))

    assert [f.what for f in found] == [
        f"S3 object s3://{BUCKET}/{_key()}",
        f"S3 object s3://{BUCKET}/{_key('export.txt')}",
        "FSx data repository task task-0123456789abcdef0 (EXPORT_TO_REPOSITORY)",
        f"FSx folder /.hyperpod-verify/{RUN_ID}",
        f"FSx folder /datasets/.hyperpod-verify/{RUN_ID}",
    ]
    aws.stub("fsx").add_response(
        "cancel_data_repository_task",
        {"Lifecycle": "CANCELING", "TaskId": "task-0123456789abcdef0"},
        {"TaskId": "task-0123456789abcdef0"},
    )
    aws.stub("s3").add_response("delete_object", {}, {"Bucket": BUCKET, "Key": _key("export.txt")})
    found[2].remove()
    found[1].remove()
    assert found[1].by_hand == f"aws s3 rm s3://{BUCKET}/{_key('export.txt')} --region us-west-2"


def test_checks_table() -> None:
    assert set(aws_checks.CHECKS) == {"cluster", "health", "dra"}


def test_the_deep_health_check_of_an_unconfigured_gpu_group_runs_both_instance_checks(
    aws: StubbedAws,
) -> None:
    config = environment(changes={"cluster.instance_groups[2].deep_health_checks": []})
    run = _loaded(aws, config, options=Options(deep_health_check=True))
    run.cluster["InstanceGroups"] = [
        {k: v for k, v in g.items() if k != "OnStartDeepHealthChecks"} for g in GROUPS
    ]
    _oldest(aws)
    _events(aws, [])
    _agent_logs(aws)
    aws.stub("sagemaker").add_response(
        "start_cluster_health_check",
        {"ClusterArn": f"arn:aws:sagemaker:us-west-2:111122223333:cluster/{CLUSTER_ID}"},
        {
            "ClusterName": CLUSTER,
            "DeepHealthCheckConfigurations": [
                {
                    "InstanceGroupName": "gpu",
                    "InstanceIds": [GPU_1, GPU_2],
                    "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
                }
            ],
        },
    )

    results = _by_subject(check_health(run))

    assert results["deep health checks"].outcome == "skip"
    assert results["on-demand deep health check"].outcome == "pass"


def test_a_missing_log_group_skips_the_health_agent(aws: StubbedAws) -> None:
    _oldest(aws)
    _events(aws, [])
    aws.error(
        "logs",
        "filter_log_events",
        "ResourceNotFoundException",
        {
            "logGroupName": f"/aws/sagemaker/Clusters/{CLUSTER}/{CLUSTER_ID}",
            "logStreamNamePrefix": "SagemakerHealthMonitoringAgent",
            "filterPattern": aws_checks.AGENT_FILTER,
            "limit": aws_checks.AGENT_EVENTS,
            "startTime": int(NOW.timestamp() * 1000),
        },
    )

    agent = _by_subject(check_health(_loaded(aws)))["health agent"]

    assert agent.outcome == "skip"
    assert "does not exist yet" in agent.detail


def test_a_dra_of_the_config_that_is_not_deployed_fails(aws: StubbedAws) -> None:
    _created_fsx(aws, [])

    (result,) = check_dra(_run(aws, fsx=FakeFsx(Clock())))

    assert (result.outcome, result.subject) == ("fail", "/datasets")
    assert result.detail == "in the config but not deployed"


def test_a_failed_import_task_fails_with_its_reason(aws: StubbedAws) -> None:
    clock = Clock()
    _created_fsx(aws, [_association()])
    _put(aws, "import.txt")
    task_id = "task-0123456789abcdef0"
    aws.stub("fsx").add_response(
        "create_data_repository_task",
        {
            "DataRepositoryTask": {
                "TaskId": task_id,
                "Lifecycle": "PENDING",
                "Type": "IMPORT_METADATA_FROM_REPOSITORY",
                "CreationTime": NOW,
            }
        },
        {
            "Type": "IMPORT_METADATA_FROM_REPOSITORY",
            "Paths": [f"s3://{BUCKET}/{_key()}"],
            "FileSystemId": FS_ID,
            "Report": {"Enabled": False},
            "Tags": [{"Key": RUN_LABEL, "Value": RUN_ID}],
        },
    )
    aws.stub("fsx").add_response(
        "describe_data_repository_tasks",
        {
            "DataRepositoryTasks": [
                {
                    "TaskId": task_id,
                    "Lifecycle": "FAILED",
                    "Type": "IMPORT_METADATA_FROM_REPOSITORY",
                    "CreationTime": NOW,
                    "FailureDetails": {"Message": "Access denied to the S3 bucket"},
                }
            ]
        },
        {"TaskIds": [task_id]},
    )

    (result,) = check_dra(_run(aws, clock=clock, fsx=FakeFsx(clock)))

    assert result.outcome == "fail"
    assert result.detail == (
        f"IMPORT_METADATA_FROM_REPOSITORY task {task_id} for s3://{BUCKET}/{_key()} is FAILED: "
        "Access denied to the S3 bucket"
    )


def test_leftovers_of_a_file_system_that_cannot_be_read_fail_when_removed(
    aws: StubbedAws,
) -> None:
    aws.error(
        "cloudformation", "describe_stacks", "ValidationError", {"StackName": f"{CLUSTER}-storage"}
    )

    (item,) = leftovers(_run(aws))

    with pytest.raises(aws_checks.FsxUnknown, match="not deployed"):
        item.remove()
    assert RUN_ID in item.by_hand

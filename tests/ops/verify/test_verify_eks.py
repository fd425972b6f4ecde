"""The EKS checks of ``make verify`` against a fake Kubernetes API server (fake_kube.py).

The cluster: a ``gpu`` group of ml.p5.48xlarge nodes (8 GPUs, 32 EFA devices each) and a
``system`` group of ml.m5.2xlarge (not in the gates table: EC2 DescribeInstanceTypes describes it,
no GPU, no EFA) with a custom taint. What the test
pods print is what the probe script, nccl-tests, dd and /proc/mounts print on a node; the clock
is fake (``run.sleep`` advances it), so deadlines are reached without waiting.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ec2_answers import G6E_48XLARGE, M5_2XLARGE, described, unknown
from fake_kube import FakeKube, JobScript, PodScript
from ops_testkit import StubbedAws, environment

from hyperpod_ops.k8s import Kubernetes
from hyperpod_ops.verify import aws_checks, eks
from hyperpod_ops.verify.model import RUN_LABEL, Node, Options, Result, VerifyRun

RUN_ID = "hpv-0123456789ab"
GPU_IDS = ["i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2", "i-0aaaaaaaaaaaaaaa3"]
SYSTEM_ID = "i-0bbbbbbbbbbbbbbb1"
P5 = "ml.p5.48xlarge"
P5_DEVICES = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
DNS = "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"
MOUNT_NAME = "abcdefgh"
FSX = aws_checks.FsxFacts(
    file_system_id="fs-0123456789abcdef0",
    dns_name=DNS,
    mount_name=MOUNT_NAME,
    mount_path="/fsx",
    capacity_gib=1200,
    throughput_per_tib=250,
    dra_paths=(),
)


class Clock:
    """A monotonic clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def config(**changes: Any) -> Any:
    groups = [
        {"name": "gpu", "instance_type": P5, "count": len(GPU_IDS)},
        {"name": "system", "instance_type": "ml.m5.2xlarge", "count": 1,
         "taints": [{"key": "example.com/system", "value": "true", "effect": "NoSchedule"}]},
    ]  # fmt: skip
    return environment("eks-minimal", {"cluster.instance_groups": groups, **changes})


def cluster(gpu_ids: list[str] = GPU_IDS) -> FakeKube:
    """Healthy nodes of both groups, a probe, NCCL run and FSx client that all do well."""
    api = FakeKube()
    for instance_id in gpu_ids:
        api.add_node(instance_id, "gpu", P5, allocatable=P5_DEVICES)
    api.add_node(SYSTEM_ID, "system", "ml.m5.2xlarge")
    api.on_pod = healthy_pod
    api.on_mpijob = lambda job: JobScript(launcher_log=nccl_log())
    return api


def make_run(
    api: FakeKube, aws: StubbedAws, cfg: Any = None, *, m5: bool = True, **options: Any
) -> VerifyRun:
    """The run; ``m5``: queue EC2's one answer for the system group's ml.m5.2xlarge (off for a
    test whose checks never need its facts)."""
    if m5:
        described(aws, "ml.m5.2xlarge", M5_2XLARGE)
    clock = Clock()
    nodes = [Node("gpu", i, P5, "Running") for i in GPU_IDS]
    nodes.append(Node("system", SYSTEM_ID, "ml.m5.2xlarge", "Running"))
    return VerifyRun(
        config=cfg or config(),
        clients=aws,
        run_id=RUN_ID,
        options=Options(**options),
        cluster={"ClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123def456"},
        nodes=nodes,
        kubernetes=Kubernetes(api),
        clock=clock,
        sleep=clock.sleep,
    )


@pytest.fixture(autouse=True)
def file_system(monkeypatch: pytest.MonkeyPatch) -> None:
    """aws_checks reads the file system from FSx (tested in its own module): here it is known."""
    monkeypatch.setattr(aws_checks, "fsx_facts", lambda run: FSX)


# -- what the nodes print ----------------------------------------------------------------------


def probe_log(*, gpus: int = 8, efa: int = 32, memlock: str = "unlimited", provider: str = "efa") -> str:  # fmt: skip
    entries = "".join(
        f"provider: {provider}\n    fabric: efa\n    domain: rdmap{i}s0-rdm\n    version: 122.0\n"
        "    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n"
        for i in range(efa)
    )
    return (
        f"verify:memlock={memlock}\nverify:gpus={gpus}\nverify:uverbs={efa}\n"
        f"verify:fi_info-begin\n{entries}verify:fi_info-end\n"
    )


NCCL_HEADER = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid     42 on hpv-0123456789ab-nccl-gpu-2-worker-0 device  0 [0x53] NVIDIA H100 80GB HBM3
#  Rank 15 Group  0 Pid     42 on hpv-0123456789ab-nccl-gpu-2-worker-1 device  7 [0xcb] NVIDIA H100 80GB HBM3
"""
NCCL_TABLE = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    70.12    0.00    0.00      0    69.90    0.00    0.00      0
  8589934592    2147483648     float     sum      -1  33012.4  260.21  487.89      0  33001.2  260.29  488.04      0
 17179869184    4294967296     float     sum      -1  65893.1  260.72  488.85      0  65870.0  260.81  489.02      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 244.4
"""


def nccl_log(network: str = "efa") -> str:
    lines = NCCL_HEADER
    if network == "efa":
        lines += "hpv-0123456789ab-nccl-gpu-2-worker-0:42:99 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 32 nics)\n"  # noqa: E501
        lines += (
            "hpv-0123456789ab-nccl-gpu-2-worker-0:42:99 [0] NCCL INFO Using network Libfabric\n"
        )
    else:
        lines += "hpv-0123456789ab-nccl-gpu-2-worker-0:42:99 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.12<0>\n"  # noqa: E501
        lines += "hpv-0123456789ab-nccl-gpu-2-worker-0:42:99 [0] NCCL INFO Using network Socket\n"
    return lines + NCCL_TABLE


def mounts(dns: str = DNS, mount_name: str = MOUNT_NAME) -> str:
    return (
        "overlay / overlay rw,relatime,lowerdir=/var/lib/containerd/a 0 0\n"
        f"10.1.12.34@tcp:/{mount_name} /fsx lustre rw,relatime,flock,lazystatfs 0 0\n"
    ).replace("10.1.12.34", dns)


def fsx_log(*, dns: str = DNS, write_seconds: float = 7.3, read_seconds: float = 5.2) -> str:
    """dd's summary: 2 GiB in the given seconds (7.3 s is 294 MB/s)."""
    return (
        f"verify:mounts-begin\n{mounts(dns)}verify:mounts-end\nverify:tool=dd\n"
        "verify:write-begin\n2048+0 records in\n2048+0 records out\n"
        f"2147483648 bytes (2.1 GB, 2.0 GiB) copied, {write_seconds} s, "
        f"{2147.483648 / write_seconds:.0f} MB/s\nverify:write-end\n"
        "verify:read-begin\n2048+0 records in\n2048+0 records out\n"
        f"2147483648 bytes (2.1 GB, 2.0 GiB) copied, {read_seconds} s, "
        f"{2147.483648 / read_seconds:.0f} MB/s\nverify:read-end\n"
    )


def healthy_pod(pod: dict[str, Any]) -> PodScript:
    name = pod["metadata"]["name"]
    if "-probe-" in name:
        return PodScript(log=probe_log())
    if "-fsx-" in name:
        return PodScript(log=fsx_log())
    return PodScript()


def by_subject(results: list[Result]) -> dict[str | None, Result]:
    return {r.subject: r for r in results}


# -- nodes -------------------------------------------------------------------------------------


def test_healthy_nodes_pass_with_their_devices(aws: StubbedAws) -> None:
    results = by_subject(eks.CHECKS["nodes"](make_run(cluster(), aws)))
    assert results["gpu"].outcome == "pass"
    assert results["gpu"].detail == (
        "3 of 3 Running nodes Ready and Schedulable, each with 8 nvidia.com/gpu, "
        "32 vpc.amazonaws.com/efa (from the gates table)"
    )
    assert results["gpu"].figures == {"ready": 3, "running": 3}
    # m5.2xlarge: EC2 describes it without GPUs or EFA, so there are no devices to count
    assert results["system"].outcome == "pass"
    assert results["system"].detail == "1 of 1 Running nodes Ready and Schedulable"


def test_a_not_ready_node_fails_by_name(aws: StubbedAws) -> None:
    api = cluster()
    api.add_node(GPU_IDS[1], "gpu", P5, ready=False, allocatable=P5_DEVICES)
    results = eks.CHECKS["nodes"](make_run(api, aws))
    (failure,) = [r for r in results if r.failed]
    assert failure.subject == f"gpu/{GPU_IDS[1]}"
    assert failure.detail == f"node hyperpod-{GPU_IDS[1]} is not Ready"
    assert f"kubectl describe node hyperpod-{GPU_IDS[1]}" in (failure.fix or "")
    assert "UnschedulablePendingReplacement" in (failure.fix or "")


def test_a_node_with_the_unhealthy_taint_fails_and_gets_no_test_pod(aws: StubbedAws) -> None:
    api = cluster()
    taint = {"key": eks.HEALTH_KEY, "value": "Unschedulable", "effect": "NoSchedule"}
    api.add_node(GPU_IDS[0], "gpu", P5, taints=[taint], allocatable=P5_DEVICES)
    run = make_run(api, aws)
    (failure,) = [r for r in eks.CHECKS["nodes"](run) if r.failed]
    assert failure.detail == (
        f"node hyperpod-{GPU_IDS[0]} has the taint {eks.HEALTH_KEY}=Unschedulable:NoSchedule"
    )
    efa = by_subject(eks.CHECKS["efa"](run))["gpu"]
    assert efa.outcome == "pass" and efa.figures["nodes"] == 2
    assert "(1 busy or unhealthy node not tested)" in efa.detail
    hosts = [pinned_host(p) for p in api.created("pods")]
    assert f"hyperpod-{GPU_IDS[0]}" not in hosts and len(hosts) == 2


def test_a_node_labelled_for_replacement_fails(aws: StubbedAws) -> None:
    api = cluster()
    labels = {eks.HEALTH_KEY: "UnschedulablePendingReplacement"}
    api.add_node(GPU_IDS[2], "gpu", P5, labels=labels, allocatable=P5_DEVICES)
    (failure,) = [r for r in eks.CHECKS["nodes"](make_run(api, aws)) if r.failed]
    assert "label sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReplacement" in failure.detail  # fmt: skip


def test_fewer_gpus_allocatable_than_the_type_has_fails(aws: StubbedAws) -> None:
    api = cluster()
    api.add_node(GPU_IDS[2], "gpu", P5, allocatable={**P5_DEVICES, "nvidia.com/gpu": "7"})
    (failure,) = [r for r in eks.CHECKS["nodes"](make_run(api, aws)) if r.failed]
    assert failure.detail == (
        f"node hyperpod-{GPU_IDS[2]} has 7 nvidia.com/gpu allocatable, ml.p5.48xlarge has 8 "
        "(devices from the gates table)"
    )
    assert "eks.dependencies.nvidia_device_plugin" in (failure.fix or "")
    assert failure.figures == {"allocatable": 7, "expected": 8}


def test_a_type_off_the_charts_efa_list_is_named_with_the_key_that_adds_it(aws: StubbedAws) -> None:  # fmt: skip
    """ml.g7's EFA support is unconfirmed before the deploy (facts/__init__.py
    EFA_UNCONFIRMED_TYPES): when EC2 says the type has EFA but no plugin runs there, the fix is
    the chart list's config key, not the plugin switch. (The EC2 answer is this test's input.)"""
    g7 = {**G6E_48XLARGE, "InstanceType": "g7.48xlarge"}
    described(aws, "ml.g7.48xlarge", g7)
    api = FakeKube()
    api.add_node(GPU_IDS[0], "g7", "ml.g7.48xlarge", allocatable={"nvidia.com/gpu": "8"})
    cfg = environment("eks-minimal", {"cluster.instance_groups": [{"name": "g7", "instance_type": "ml.g7.48xlarge", "count": 1}]})  # fmt: skip
    clock = Clock()
    run = VerifyRun(config=cfg, clients=aws, run_id=RUN_ID, options=Options(),
                    cluster={"ClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123def456"},
                    nodes=[Node("g7", GPU_IDS[0], "ml.g7.48xlarge", "Running")],
                    kubernetes=Kubernetes(api), clock=clock, sleep=clock.sleep)  # fmt: skip
    (failure,) = [r for r in eks.CHECKS["nodes"](run) if r.failed]
    assert "0 vpc.amazonaws.com/efa allocatable, ml.g7.48xlarge has 4" in failure.detail
    assert failure.fix == (
        "add ml.g7.48xlarge to eks.chart_values.extra_instance_types.efa: the dependency "
        "chart's list lacks it, so its device plugin does not run there"
    )


def test_a_running_instance_that_never_joined_fails(aws: StubbedAws) -> None:
    api = cluster(gpu_ids=GPU_IDS[:2])
    (failure,) = [r for r in eks.CHECKS["nodes"](make_run(api, aws)) if r.failed]
    assert failure.detail == f"{GPU_IDS[2]} is Running in HyperPod but is not a Kubernetes node"
    assert "/aws/sagemaker/Clusters/eks-minimal/abc123def456" in (failure.fix or "")


def test_a_caller_without_access_is_a_failed_line(aws: StubbedAws) -> None:
    api = cluster()
    api.denied.append("/api/v1/nodes")
    (result,) = eks.CHECKS["nodes"](make_run(api, aws, m5=False))
    assert result.failed and "refused the caller" in result.detail
    assert "access entry" in (result.fix or "")


# -- efa and containers ------------------------------------------------------------------------


def pinned_host(pod: dict[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]  # fmt: skip
    (expression,) = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert expression["key"] == "kubernetes.io/hostname" and expression["operator"] == "In"
    return str(expression["values"][0])


def test_one_probe_pod_per_idle_gpu_node_serves_efa_and_containers(aws: StubbedAws) -> None:
    api = cluster()
    run = make_run(api, aws)
    efa = by_subject(eks.CHECKS["efa"](run))
    containers = by_subject(eks.CHECKS["containers"](run))
    assert efa["gpu"].outcome == "pass" and efa["gpu"].figures == {"nodes": 3, "efa_devices": 32}
    assert efa["gpu"].detail == "3 idle nodes: 32 efa devices each (EFA interfaces from the gates table)"  # fmt: skip
    assert containers["gpu"].outcome == "pass"
    assert containers["gpu"].figures == {"nodes": 3, "gpus": 8, "efa_devices": 32}
    assert efa["system"].outcome == containers["system"].outcome == "skip"
    assert efa["system"].detail == (
        "ml.m5.2xlarge has no NVIDIA GPUs (GPUs from DescribeInstanceTypes; the test image is CUDA)"
    )
    pods = api.created("pods")
    assert len(pods) == 3  # shared by both checks
    assert sorted(map(pinned_host, pods)) == [f"hyperpod-{i}" for i in GPU_IDS]
    for pod in pods:
        spec = pod["spec"]
        assert pod["metadata"]["labels"] == {RUN_LABEL: RUN_ID}
        assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] >= 60
        assert spec["tolerations"] == []  # never HyperPod's health taint
        (container,) = spec["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}  # fmt: skip
        assert container["resources"]["requests"] == container["resources"]["limits"]
        assert container["image"].startswith("public.ecr.aws/hpc-cloud/nccl-tests@sha256:")
        assert "fi_info -p efa -t FI_EP_RDM" in container["command"][-1]
    namespace = api.created("namespaces")[0]["metadata"]
    assert namespace == {"name": RUN_ID, "labels": {RUN_LABEL: RUN_ID}}
    assert [m.by_hand for m in run.made] == [f"kubectl delete namespace {RUN_ID}"]


def test_efa_fails_on_a_limited_memlock_or_a_missing_device(aws: StubbedAws) -> None:
    api = cluster()
    logs = {GPU_IDS[0]: probe_log(memlock="65536"), GPU_IDS[1]: probe_log(efa=31, gpus=7)}
    api.on_pod = lambda pod: PodScript(log=logs.get(pinned_host(pod).removeprefix("hyperpod-"), probe_log()))  # fmt: skip
    run = make_run(api, aws)
    efa = by_subject(eks.CHECKS["efa"](run))
    assert efa[f"gpu/{GPU_IDS[0]}"].detail == (
        f"locked memory (ulimit -l) in a pod on hyperpod-{GPU_IDS[0]} is 65536, must be unlimited"
    )
    assert efa[f"gpu/{GPU_IDS[1]}"].detail == (
        f"fi_info lists 31 EFA devices on hyperpod-{GPU_IDS[1]}, ml.p5.48xlarge has 32 "
        "(EFA interfaces from the gates table)"
    )
    assert "gpu" not in efa  # no pass next to the failures
    containers = by_subject(eks.CHECKS["containers"](run))
    assert containers[f"gpu/{GPU_IDS[1]}"].detail == (
        f"a pod on hyperpod-{GPU_IDS[1]} sees 7 GPUs (nvidia-smi -L), ml.p5.48xlarge has 8"
    )


def test_a_probe_that_cannot_pull_its_image_fails_naming_the_registry_key(aws: StubbedAws) -> None:
    api = cluster()
    api.on_pod = lambda pod: PodScript(phase="Pending", waiting="ImagePullBackOff")
    run = make_run(api, aws)
    results = eks.CHECKS["containers"](run)
    failure = by_subject(results)[f"gpu/{GPU_IDS[0]}"]
    assert (
        failure.failed and "(Pending: ImagePullBackOff: Back-off pulling image)" in failure.detail
    )
    assert "eks.image_registry" in (failure.fix or "")
    assert run.clock() >= 1000 + 900  # waited the budget, in fake time
    pod_deletes = [p for p in api.deleted() if "/pods/" in p]
    assert len(pod_deletes) == 3  # still-pending pods are deleted at the deadline


def test_a_probe_stopped_by_its_own_deadline_fails_without_figures(aws: StubbedAws) -> None:
    api = cluster()
    api.on_pod = lambda pod: PodScript(phase="Failed", started=False)
    failure = by_subject(eks.CHECKS["efa"](make_run(api, aws)))[f"gpu/{GPU_IDS[0]}"]
    assert failure.detail == (
        f"pod {RUN_ID}-probe-{GPU_IDS[0]} ended without its figures (Failed: DeadlineExceeded)"
    )
    assert f"kubectl -n {RUN_ID} logs" in (failure.fix or "")


def test_a_busy_node_is_left_alone(aws: StubbedAws) -> None:
    api = cluster()
    api.add("/api/v1/namespaces/team-a/pods/train-0", {
        "metadata": {"name": "train-0", "namespace": "team-a"},
        "spec": {"nodeName": f"hyperpod-{GPU_IDS[0]}",
                 "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Running"},
    })  # fmt: skip
    run = make_run(api, aws)
    eks.CHECKS["efa"](run)
    assert f"hyperpod-{GPU_IDS[0]}" not in [pinned_host(p) for p in api.created("pods")]


TEAM_NS = "hyperpod-ns-research"
GOVERNED = {
    "eks.addons.task_governance": True,
    "eks.task_governance": {
        "policy": {"priority_classes": [{"name": "training", "weight": 80},
                                        {"name": "experimentation", "weight": 50}]},
        "teams": [{"name": "research", "quota": [{"instance_type": P5, "count": 2}]},
                  {"name": "applied", "quota": [{"instance_type": P5, "count": 1}]}],
    },
}  # fmt: skip


def governed_cluster() -> FakeKube:
    """A task-governance cluster: HyperPod made the teams' namespaces with their quotas."""
    api = cluster()
    for team in ("research", "applied"):
        name = f"hyperpod-ns-{team}"
        api.add(f"/api/v1/namespaces/{name}", {"metadata": {"name": name}})
    return api


def test_task_governance_without_a_team_skips_the_pod_checks(aws: StubbedAws) -> None:
    api = governed_cluster()
    run = make_run(api, aws, config(**GOVERNED), m5=False)
    for check in ("efa", "containers", "nccl", "fsx"):
        (result,) = eks.CHECKS[check](run)
        assert (
            result.outcome == "skip" and "--team NAME (one of: research, applied)" in result.detail
        ), check
        assert "eks.addons.task_governance" in result.detail
    assert api.created("pods") == [] and api.created("namespaces") == []


def test_task_governance_runs_in_the_teams_namespace_through_its_local_queue(aws: StubbedAws) -> None:  # fmt: skip
    """A LocalQueue is namespaced, and HyperPod makes hyperpod-ns-<team>-localqueue only in
    hyperpod-ns-<team> (SageMaker developer guide, sagemaker-hyperpod-eks-operate-console-ui-
    governance-cli; https://kueue.sigs.k8s.io/docs/concepts/local_queue/): the pods and the
    MPIJob go there, at the policy's lowest class (experimentation -> experimentation-priority),
    and each is removed on its own; the team's namespace stays."""
    api = governed_cluster()
    run = make_run(api, aws, config(**GOVERNED), team="research")
    eks.CHECKS["efa"](run)
    eks.CHECKS["nccl"](run)
    kueue = {"kueue.x-k8s.io/queue-name": "hyperpod-ns-research-localqueue",
             "kueue.x-k8s.io/priority-class": "experimentation-priority"}  # fmt: skip
    posted = [(p, b) for m, p, b in api.calls if m == "POST"]
    assert posted and all(f"/namespaces/{TEAM_NS}/" in path for path, _ in posted), posted
    assert {path.rsplit("/", 1)[1] for path, _ in posted} == {"pods", "mpijobs"}
    for _, body in posted:
        assert body["metadata"]["labels"] == {RUN_LABEL: RUN_ID, **kueue}
    made = [m.by_hand for m in run.made]
    assert f"kubectl delete mpijob {RUN_ID}-nccl-gpu-2 --namespace {TEAM_NS}" in made
    assert sum(f"kubectl delete pod {RUN_ID}-" in m for m in made) == len(api.created("pods"))
    assert not [m for m in made if "delete namespace" in m]
    for item in run.made:
        item.remove()
    assert f"/api/v1/namespaces/{TEAM_NS}" in api.objects
    # (the operator's launcher pod goes with its MPIJob through the garbage collector, which
    # the fake API does not run)
    assert [p for p in api.objects if RUN_ID in p and not p.endswith("-launcher-x7k2p")] == []


def test_a_team_pod_kueue_holds_names_the_team_namespace_and_its_workloads(aws: StubbedAws) -> None:  # fmt: skip
    api = governed_cluster()
    api.on_pod = lambda pod: PodScript(phase="Pending")
    results = eks.CHECKS["efa"](make_run(api, aws, config(**GOVERNED), team="research"))
    failures = [r for r in results if r.outcome == "fail"]
    assert failures
    for result in failures:
        assert f"kubectl -n {TEAM_NS} describe pod {RUN_ID}-" in (result.fix or "")
        assert f"kubectl -n {TEAM_NS} get workloads" in (result.fix or "")


def test_a_priority_class_of_the_policy_is_named_as_kueue_knows_it(aws: StubbedAws) -> None:
    api = governed_cluster()
    run = make_run(api, aws, config(**GOVERNED), team="applied", priority_class="training")
    eks.CHECKS["efa"](run)
    for body in api.created("pods"):
        assert body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "training-priority"
        assert (
            body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
            == "hyperpod-ns-applied-localqueue"
        )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"team": "ops"}, "--team ops is not a team of eks.task_governance.teams (one of: research, applied)"),
        ({"team": "research", "priority_class": "urgent"}, "--priority-class urgent is not a class of the cluster policy"),
    ],
)  # fmt: skip
def test_a_team_or_class_the_config_lacks_is_a_skip(aws: StubbedAws, options: dict[str, str], fragment: str) -> None:  # fmt: skip
    api = governed_cluster()
    (result,) = eks.CHECKS["efa"](make_run(api, aws, config(**GOVERNED), m5=False, **options))
    assert result.outcome == "skip" and fragment in result.detail
    assert api.created("pods") == []


def test_a_team_namespace_hyperpod_has_not_made_is_a_skip(aws: StubbedAws) -> None:
    api = cluster()  # no team namespaces yet
    (result,) = eks.CHECKS["efa"](make_run(api, aws, config(**GOVERNED), m5=False, team="research"))
    assert result.outcome == "skip" and f"namespace {TEAM_NS} does not exist" in result.detail


def test_cleanup_finds_a_crashed_runs_objects_in_the_team_namespaces(aws: StubbedAws) -> None:
    api = governed_cluster()
    ours = {"labels": {RUN_LABEL: RUN_ID}}
    api.add(f"/api/v1/namespaces/{TEAM_NS}/pods/{RUN_ID}-probe", {"metadata": {"name": f"{RUN_ID}-probe", **ours}})  # fmt: skip
    api.add(f"/apis/kubeflow.org/v2beta1/namespaces/hyperpod-ns-applied/mpijobs/{RUN_ID}-nccl", {"metadata": {"name": f"{RUN_ID}-nccl", **ours}})  # fmt: skip
    api.add(f"/api/v1/namespaces/{TEAM_NS}/pods/train-0", {"metadata": {"name": "train-0"}})
    # without --team: every team of the config is searched
    found = eks.leftovers(make_run(api, aws, config(**GOVERNED), m5=False))
    assert sorted(f.by_hand for f in found) == [
        f"kubectl delete mpijob {RUN_ID}-nccl --namespace hyperpod-ns-applied",
        f"kubectl delete pod {RUN_ID}-probe --namespace {TEAM_NS}",
    ]
    for item in found:
        item.remove()
    assert f"/api/v1/namespaces/{TEAM_NS}/pods/train-0" in api.objects
    assert not [p for p in api.objects if RUN_ID in p]


# -- nccl ------------------------------------------------------------------------------------

# The MPIJob fields of the operator the chart installs, mpi-operator v0.5.0 (kubeflow/mpi-operator
# @7c625160 (tag v0.5.0): deploy/v2beta1/mpi-operator.yaml, the v2beta1 CRD; the
# launcherCreationPolicy enum from pkg/apis/kubeflow/v2beta1/types.go). The API server prunes or
# (strict field validation) refuses any other field. Checked 2026-11-27 also against that CRD's
# whole schema, pod templates included, with unknown fields refused: no error.
MPIJOB_SPEC_FIELDS = {"launcherCreationPolicy", "mpiImplementation", "mpiReplicaSpecs",
                      "runLauncherAsWorker", "runPolicy", "slotsPerWorker", "sshAuthMountPath"}  # fmt: skip
RUN_POLICY_FIELDS = {"activeDeadlineSeconds", "backoffLimit", "cleanPodPolicy", "schedulingPolicy",
                     "suspend", "ttlSecondsAfterFinished"}  # fmt: skip
REPLICA_SPEC_FIELDS = {"replicas", "restartPolicy", "template"}
LAUNCHER_CREATION_POLICIES = {"AtStartup", "WaitForWorkersReady"}
CLEAN_POD_POLICIES = {"All", "Running", "None"}


def test_the_mpijob_uses_only_fields_the_installed_operator_knows(aws: StubbedAws) -> None:
    api = cluster()
    eks.CHECKS["nccl"](make_run(api, aws))
    (job,) = api.created("mpijobs")
    spec = job["spec"]
    assert set(spec) <= MPIJOB_SPEC_FIELDS
    assert set(spec["runPolicy"]) <= RUN_POLICY_FIELDS
    assert spec["launcherCreationPolicy"] in LAUNCHER_CREATION_POLICIES
    assert spec["runPolicy"]["cleanPodPolicy"] in CLEAN_POD_POLICIES
    assert set(spec["mpiReplicaSpecs"]) == {"Launcher", "Worker"}
    for replica in spec["mpiReplicaSpecs"].values():
        assert set(replica) <= REPLICA_SPEC_FIELDS
        assert set(replica["template"]) <= {"metadata", "spec"}


def test_nccl_runs_an_mpijob_on_two_idle_nodes_and_passes_with_figures(aws: StubbedAws) -> None:
    api = cluster()
    results = by_subject(eks.CHECKS["nccl"](make_run(api, aws)))
    gpu = results["gpu"]
    assert gpu.outcome == "pass", gpu
    assert gpu.figures["busbw_gbps"] == 489.02 and gpu.figures["transport"] == "efa"
    assert gpu.figures["gate_gbps"] == pytest.approx(389.68, abs=0.01)
    assert gpu.detail.endswith(f"(2 nodes: hyperpod-{GPU_IDS[0]} and hyperpod-{GPU_IDS[1]})")
    assert results["system"].outcome == "skip"
    (job,) = api.created("mpijobs")
    assert job["apiVersion"] == "kubeflow.org/v2beta1" and job["kind"] == "MPIJob"
    spec = job["spec"]
    assert 60 <= spec["runPolicy"]["activeDeadlineSeconds"] <= 1800
    assert spec["slotsPerWorker"] == 8
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    pod = worker["template"]
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["tolerations"] == []
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]  # fmt: skip
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [f"hyperpod-{i}" for i in GPU_IDS[:2]]  # fmt: skip
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}  # fmt: skip
    command = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert command[-9:] == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]  # fmt: skip
    assert "-np" in command and command[command.index("-np") + 1] == "16"
    assert "NCCL_DEBUG=INFO" in command and "FI_PROVIDER=efa" in command


def test_nccl_is_skipped_without_the_mpi_operator(aws: StubbedAws) -> None:
    cfg = config(**{"eks.dependencies.mpi_operator": False})
    api = cluster()
    (result,) = eks.CHECKS["nccl"](make_run(api, aws, cfg, m5=False))
    assert result.outcome == "skip" and "eks.dependencies.mpi_operator" in result.detail
    assert api.calls == []


def test_nccl_over_sockets_fails(aws: StubbedAws) -> None:
    api = cluster()
    api.on_mpijob = lambda job: JobScript(launcher_log=nccl_log(network="socket"))
    gpu = by_subject(eks.CHECKS["nccl"](make_run(api, aws)))["gpu"]
    assert gpu.failed and "transport socket, not EFA" in gpu.detail
    assert gpu.figures["transport"] == "socket"


def test_an_mpijob_that_never_finishes_is_deleted_at_the_deadline(aws: StubbedAws) -> None:
    api = cluster()
    api.on_mpijob = lambda job: JobScript(conditions=["Created", "Running"], launcher_log="")
    run = make_run(api, aws)
    gpu = by_subject(eks.CHECKS["nccl"](run))["gpu"]
    assert gpu.failed
    assert gpu.detail.startswith(f"the MPIJob on hyperpod-{GPU_IDS[0]} and hyperpod-{GPU_IDS[1]} did not finish within")  # fmt: skip
    assert "(Running); it was deleted" in gpu.detail
    job_path = f"/apis/kubeflow.org/v2beta1/namespaces/{RUN_ID}/mpijobs/{RUN_ID}-nccl-gpu-2"
    assert job_path in api.deleted() and job_path not in api.objects
    assert 1000 + 1800 <= run.clock() < 1000 + 1800 + eks.POLL_SECONDS + 1


def test_nccl_needs_two_idle_nodes(aws: StubbedAws) -> None:
    api = cluster(gpu_ids=GPU_IDS[:1])
    run = make_run(api, aws)
    run.nodes = [n for n in run.nodes if n.instance_id not in GPU_IDS[1:]]
    gpu = by_subject(eks.CHECKS["nccl"](run))["gpu"]
    assert gpu.outcome == "skip" and gpu.detail == "1 idle node(s) of 1: NCCL needs 2"


def test_nccl_on_all_nodes_is_reported_not_gated(aws: StubbedAws) -> None:
    api = cluster()
    api.on_mpijob = lambda job: JobScript(launcher_log=nccl_log(network="socket" if job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3 else "efa"))  # fmt: skip
    results = by_subject(eks.CHECKS["nccl"](make_run(api, aws, nccl_all_nodes=True)))
    assert results["gpu"].outcome == "pass"
    reported = results["gpu all 3 nodes"]
    assert reported.outcome == "pass" and reported.detail.startswith("reported, not gated:")


# -- an instance type without a row in the gates table ----------------------------------------


def test_a_type_without_a_row_gets_its_devices_and_gate_from_ec2(aws: StubbedAws) -> None:
    g6e = "ml.g6e.48xlarge"
    described(aws, g6e, G6E_48XLARGE)  # one answer for nodes, efa, containers and nccl
    api = FakeKube()
    for instance_id in GPU_IDS:
        api.add_node(instance_id, "gpu", g6e, allocatable={"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"})  # fmt: skip
    api.add_node(SYSTEM_ID, "system", "ml.m5.2xlarge")
    api.on_pod = lambda pod: PodScript(log=probe_log(efa=4)) if "-probe-" in pod["metadata"]["name"] else healthy_pod(pod)  # fmt: skip
    api.on_mpijob = lambda job: JobScript(launcher_log=nccl_log())
    run = make_run(api, aws)
    run.nodes = [Node("gpu", i, g6e, "Running") if n.group == "gpu" else n for i, n in zip([*GPU_IDS, SYSTEM_ID], run.nodes, strict=True)]  # fmt: skip
    nodes = by_subject(eks.CHECKS["nodes"](run))["gpu"]
    efa = by_subject(eks.CHECKS["efa"](run))["gpu"]
    nccl = by_subject(eks.CHECKS["nccl"](run))["gpu"]
    assert nodes.detail.endswith(
        "each with 8 nvidia.com/gpu, 4 vpc.amazonaws.com/efa (from DescribeInstanceTypes)"
    )
    assert efa.outcome == "pass" and efa.figures == {"nodes": 3, "efa_devices": 4}
    assert efa.detail == "3 idle nodes: 4 efa devices each (EFA interfaces from DescribeInstanceTypes)"  # fmt: skip
    assert nccl.outcome == "pass", nccl
    assert nccl.figures["gate_gbps"] == 40.0  # provisional: 0.8 x 400 Gbit/s / 8
    (job,) = api.created("mpijobs")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}


def test_a_type_ec2_does_not_know_skips_with_the_reason(aws: StubbedAws) -> None:
    unknown(aws, "ml.m5.2xlarge")
    results = by_subject(eks.CHECKS["efa"](make_run(cluster(), aws, m5=False)))
    assert results["gpu"].outcome == "pass"  # a table type: no EC2 call
    assert results["system"].outcome == "skip"
    assert results["system"].detail.startswith(
        "ml.m5.2xlarge is not in the gates table and EC2 does not know m5.2xlarge"
    )


# -- fsx ---------------------------------------------------------------------------------------


def test_fsx_mounts_and_sums_the_clients_throughput(aws: StubbedAws) -> None:
    api = cluster()
    run = make_run(api, aws, m5=False)
    results = by_subject(eks.CHECKS["fsx"](run))
    assert results["mount"].outcome == "pass"
    assert results["mount"].detail == f"{DNS}@tcp:/{MOUNT_NAME} mounted in pods on 4 nodes"
    throughput = results["throughput"]
    assert throughput.outcome == "pass", throughput
    assert throughput.figures["write_mbps"] == pytest.approx(4 * 2147.483648 / 7.3, abs=0.1)
    assert throughput.figures["read_mbps"] == pytest.approx(4 * 2147.483648 / 5.2, abs=0.1)
    assert throughput.figures["clients"] == 4
    volume = api.created("persistentvolumes")[0]
    assert volume["metadata"]["labels"] == {RUN_LABEL: RUN_ID}
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"  # never delete the FS
    assert volume["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123456789abcdef0",
        "volumeAttributes": {"dnsname": DNS, "mountname": MOUNT_NAME},
    }
    (claim,) = api.created("persistentvolumeclaims")
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    pods = api.created("pods")
    assert {p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] for p in pods} == {claim["metadata"]["name"]}  # fmt: skip
    assert all("/fsx/.hyperpod-verify/hpv-0123456789ab" in p["spec"]["containers"][0]["command"][-1] for p in pods)  # fmt: skip
    system = next(p for p in pods if pinned_host(p) == f"hyperpod-{SYSTEM_ID}")
    assert system["spec"]["tolerations"] == [{"key": "example.com/system", "effect": "NoSchedule", "operator": "Equal", "value": "true"}]  # fmt: skip
    assert [m.by_hand for m in run.made] == [
        f"kubectl delete namespace {RUN_ID}",
        f"kubectl delete persistentvolume {RUN_ID}-fsx",
    ]


def test_fsx_mounted_with_another_dns_name_fails(aws: StubbedAws) -> None:
    api = cluster()
    other = "fs-0fffffffffffffff0.fsx.us-west-2.amazonaws.com"
    api.on_pod = lambda pod: PodScript(log=fsx_log(dns=other))
    results = eks.CHECKS["fsx"](make_run(api, aws, m5=False))
    assert results and all(r.failed for r in results)
    assert results[0].detail == (
        f"the pod on hyperpod-{GPU_IDS[0]} mounted {other}@tcp:/{MOUNT_NAME}, "
        f"the environment's file system is {DNS}@tcp:/{MOUNT_NAME}"
    )


def test_fsx_slow_clients_fail_the_gate(aws: StubbedAws) -> None:
    api = cluster()
    api.on_pod = lambda pod: PodScript(log=fsx_log(write_seconds=60))  # 35.8 MB/s each
    throughput = by_subject(eks.CHECKS["fsx"](make_run(api, aws, m5=False)))["throughput"]
    assert throughput.failed and "write 143.2 MB/s is under the gate" in throughput.detail


def test_fsx_throughput_skips_under_a_data_repository_path(aws: StubbedAws, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(aws_checks, "scratch_path", lambda facts, run_id: None)
    api = cluster()
    api.on_pod = lambda pod: PodScript(log=f"verify:mounts-begin\n{mounts()}verify:mounts-end\n")
    results = by_subject(eks.CHECKS["fsx"](make_run(api, aws, m5=False)))
    assert results["mount"].outcome == "pass"
    assert results["throughput"].outcome == "skip"
    assert "exported to S3" in results["throughput"].detail


def test_fsx_without_the_csi_driver_is_skipped(aws: StubbedAws) -> None:
    cfg = config(**{"eks.addons.fsx_csi_driver": False})
    (result,) = eks.CHECKS["fsx"](make_run(cluster(), aws, cfg, m5=False))
    assert result.outcome == "skip" and "eks.addons.fsx_csi_driver" in result.detail


# -- leftovers and file access -------------------------------------------------------------


def test_leftovers_finds_the_runs_namespaces_and_volumes(aws: StubbedAws) -> None:
    api = cluster()
    ours = {"labels": {RUN_LABEL: RUN_ID}}
    api.add(f"/api/v1/namespaces/{RUN_ID}", {"metadata": {"name": RUN_ID, **ours}})
    api.add(f"/api/v1/namespaces/{RUN_ID}/pods/p", {"metadata": {"name": "p", **ours}})
    api.add(f"/api/v1/persistentvolumes/{RUN_ID}-fsx", {"metadata": {"name": f"{RUN_ID}-fsx", **ours}})  # fmt: skip
    other = {"labels": {RUN_LABEL: "hpv-ffffffffffff"}}
    api.add("/api/v1/namespaces/hpv-ffffffffffff", {"metadata": {"name": "hpv-ffffffffffff", **other}})  # fmt: skip
    api.add("/api/v1/namespaces/kube-system", {"metadata": {"name": "kube-system"}})
    found = eks.leftovers(make_run(api, aws, m5=False))
    assert [f.by_hand for f in found] == [
        f"kubectl delete persistentvolume {RUN_ID}-fsx",
        f"kubectl delete namespace {RUN_ID}",
    ]
    for item in found:
        item.remove()
        item.remove()  # gone already is fine
    assert sorted(api.objects) == sorted([
        "/api/v1/namespaces/hpv-ffffffffffff",
        "/api/v1/namespaces/kube-system",
        *[p for p in api.objects if p.startswith("/api/v1/nodes/")],
    ])  # fmt: skip


class FileSystem:
    """Files the PodFsx pods read and write, by file system path."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def __call__(self, pod: dict[str, Any]) -> PodScript:
        (container,) = pod["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        path, script = env["VERIFY_PATH"], container["command"][-1]
        assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == f"{RUN_ID}-fsx"
        if "VERIFY_DATA" in env:
            self.files[path] = base64.b64decode(env["VERIFY_DATA"])
            return PodScript(log="verify:done=yes\n")
        if "rm -rf" in script:
            self.files = {p: d for p, d in self.files.items() if p != path and not p.startswith(path + "/")}  # fmt: skip
            return PodScript(log="verify:done=yes\n")
        if path not in self.files:
            return PodScript(log="verify:found=no\n")
        data = base64.b64encode(self.files[path]).decode()
        return PodScript(log=f"verify:found=yes\nverify:data={data}\n")


def test_pod_file_access_writes_reads_and_removes(aws: StubbedAws) -> None:
    api = cluster()
    files = FileSystem()
    api.on_pod = files
    access = eks.PodFsx(make_run(api, aws, m5=False))
    access.write("/datasets/hpv/check.txt", b"hello\x00world", timeout=120)
    assert files.files == {"/datasets/hpv/check.txt": b"hello\x00world"}
    assert access.read("/datasets/hpv/check.txt", timeout=120) == b"hello\x00world"
    access.remove("/datasets/hpv", timeout=120)
    assert access.read("/datasets/hpv/check.txt", timeout=120) is None
    for pod in api.created("pods"):
        spec = pod["spec"]
        assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] >= 60
        assert "resources" not in spec or spec["containers"][0]["resources"]["limits"] == {}
    with pytest.raises(ValueError, match="not a file system path"):
        access.read("datasets/../etc", timeout=10)
    with pytest.raises(ValueError, match="bytes is over"):
        access.write("/a", b"x" * (eks.PODFSX_MAX_BYTES + 1), timeout=10)


def test_pod_file_access_fails_when_its_pod_does_not_finish(aws: StubbedAws) -> None:
    api = cluster()
    api.on_pod = lambda pod: PodScript(phase="Running")
    with pytest.raises(RuntimeError, match="did not finish: Running"):
        eks.PodFsx(make_run(api, aws, m5=False)).write("/a.txt", b"x", timeout=30)


def test_every_script_a_pod_runs_passes_shellcheck(aws: StubbedAws, tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(sys.executable).parent))  # fmt: skip
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    api = cluster()
    api.on_pod = FileSystem()
    access = eks.PodFsx(make_run(api, aws, m5=False))
    access.write("/a/b.txt", b"x", timeout=60)
    access.read("/a/b.txt", timeout=60)
    access.remove("/a", timeout=60)
    scripts = [
        eks.PROBE_SCRIPT,
        eks._fsx_script(None, 1),
        eks._fsx_script("/.hyperpod-verify/hpv-0123456789ab", 4),
        *[pod["spec"]["containers"][0]["command"][-1] for pod in api.created("pods")],
    ]
    for number, script in enumerate(scripts):
        path = tmp_path / f"script-{number}.sh"
        path.write_text("#!/bin/bash\n" + script)
        checked = subprocess.run([shellcheck, str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout

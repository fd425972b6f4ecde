"""The EKS side of ``make verify``: nodes, EFA, containers, NCCL and FSx through the Kubernetes API.

Every check reads or runs through ``run.kubernetes`` (a connected
:class:`~hyperpod_ops.k8s.Kubernetes`). What runs on the nodes is short-lived: pods with
``restartPolicy: Never`` and ``activeDeadlineSeconds``, an MPIJob with
``runPolicy.activeDeadlineSeconds``, all in one namespace per run named after the run id and
labelled :data:`~hyperpod_ops.verify.model.RUN_LABEL`, plus a PersistentVolume for the file
system (cluster-scoped, labelled the same, reclaim policy ``Retain`` so that deleting it never
deletes the file system). The namespace and the volume are registered with
:meth:`VerifyRun.created`; deleting the namespace removes everything in it, so the objects inside
are not registered one by one. On a task-governance cluster the run uses the namespace of
``--team`` instead (``hyperpod-ns-<team>``, which HyperPod makes with the team's quota; a Kueue
LocalQueue is namespaced, and the team's, ``hyperpod-ns-<team>-localqueue``, is only there), so
each pod, MPIJob and claim is registered and labelled with the run id one by one, and the team's
namespace is never deleted.

Work is never disturbed: only whole idle nodes (no pod on them requests GPUs, Neuron devices or
EFA devices) run a test, each test pod takes all of its node's GPUs and EFA devices, and no pod
tolerates HyperPod's health taint (only the taints the config gives the group). On a
task-governance cluster every workload carries the Kueue labels of the team's LocalQueue and of
``--priority-class`` (default: the policy's lowest class, so a test never preempts work); without
``--team`` there the pod checks are SKIP (their pods would wait in Kueue until the budget ran
out).

Design choices:

- ``efa`` and ``containers`` share one probe pod per idle NVIDIA GPU node: whichever check runs
  first starts the pods and keeps their output for the run (keyed by run id); the other reads it.
  The probe waits up to the larger of the two budgets, since its first minutes are the image pull.
- The file system is mounted through a PersistentVolume and claim the run makes in its own
  namespace, not the static ``fsx-claim`` of ``eks.addons``: a claim is namespaced, so the static
  one cannot be used from the run's namespace.
- The FSx clients start their I/O together: each pod marks itself ready in the run's scratch
  folder on the file system and waits (bounded) for the others, so the summed throughput is a
  concurrent figure. With fewer than 2 idle nodes, one client is measured. The FSx pods and the
  :class:`PodFsx` pods request no devices; a CPU node counts as idle like a GPU node (no pod on
  it requests accelerators).
"""

from __future__ import annotations

import base64
import contextlib
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hyperpod_cdk.config.task_governance import TaskGovernance, local_queue_of, namespace_of
from hyperpod_ops.aws import one_line
from hyperpod_ops.k8s import (
    Kubernetes,
    KubernetesConflict,
    KubernetesDenied,
    KubernetesUnreachable,
    label_selector,
)
from hyperpod_ops.verify import aws_checks, gates, instance_types, parsers
from hyperpod_ops.verify.model import (
    BUDGET_SECONDS,
    RUN_LABEL,
    Check,
    Created,
    Node,
    Result,
    VerifyRun,
    failed,
    passed,
    skipped,
)

# Labels and taints HyperPod puts on its Kubernetes nodes: the health status from
# aws/sagemaker-hyperpod-cli @ 728fc43
# (src/sagemaker/hyperpod/cli/constants/command_constants.py); the instance group label from the
# nodeSelectors of public HyperPod EKS manifests (read 2026-11-25; not in that file). HyperPod
# names a node ``hyperpod-<instance id>``; the checks match nodes by that instance id.
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
HEALTH_KEY = "sagemaker.amazonaws.com/node-health-status"
HEALTHY = "Schedulable"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Extended resources of the device plugins the dependencies chart installs.
GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neuron"
EFA = "vpc.amazonaws.com/efa"
ACCELERATOR_RESOURCES = (GPU, NEURON, EFA)
# Kueue's labels of a workload's LocalQueue and WorkloadPriorityClass (Kueue docs; the hyp CLI's
# KUEUE_QUEUE_NAME_LABEL_KEY / KUEUE_WORKLOAD_PRIORITY_CLASS_LABEL_KEY, same file as above).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# HyperPod names the Kueue WorkloadPriorityClass of each policy class <name>-priority (SageMaker
# developer guide, sagemaker-hyperpod-eks-operate-console-ui-governance-cli, "training-priority")
PRIORITY_SUFFIX = "-priority"
# The MPI operator's API and the labels it puts on a job's pods (kubeflow/mpi-operator v2).
MPIJOB_API = "/apis/kubeflow.org/v2beta1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
# The FSx for Lustre CSI driver (static provisioning: volume handle = file system id).
FSX_CSI_DRIVER = "fsx.csi.aws.com"

CONTAINER = "verify"
POLL_SECONDS = 10
MIN_POD_SECONDS = 60
FSX_MOUNT = "/fsx"  # where the verify pods mount the file system's root
FSX_CLIENTS = 4
DD_MIB = 2048  # per client, direct I/O
BARRIER_SECONDS = 300
# a write's data travels base64 in one environment variable: Linux caps one at 128 KiB
# (MAX_ARG_STRLEN, 32 pages), and base64 grows data by 4/3
PODFSX_MAX_BYTES = 64 * 1024
ALL_REDUCE = gates.ALL_REDUCE_PERF
LAUNCHER_RETRIES = 3
NCCL_ARGS = "-b 8 -e 16G -f 2 -g 1"
EFA_BIN = "/opt/amazon/efa/bin"
MARK = "verify:"


# -- the cluster as Kubernetes sees it ---------------------------------------------------------


@dataclass(frozen=True)
class KubeNode:
    """A HyperPod node (from ListClusterNodes) and its Kubernetes node object."""

    node: Node
    name: str
    hostname: str
    ready: bool
    health: str | None  # what makes it unhealthy (the taint or label), None when healthy
    allocatable: Mapping[str, str]


def _instance_id(name: str) -> str | None:
    found = re.search(r"i-[0-9a-f]{8,17}", name)
    return found[0] if found else None


def _kube_nodes(run: VerifyRun) -> dict[str, KubeNode]:
    """The Kubernetes node of each HyperPod node, by instance id (absent: not registered)."""
    hyperpod = {n.instance_id: n for n in run.nodes}
    found: dict[str, KubeNode] = {}
    for item in _client(run).items("/api/v1/nodes"):
        metadata = item.get("metadata", {})
        name = str(metadata.get("name", ""))
        instance_id = _instance_id(name) or _instance_id(
            str(item.get("spec", {}).get("providerID", ""))
        )
        if instance_id not in hyperpod:
            continue
        labels = metadata.get("labels") or {}
        found[instance_id] = KubeNode(
            node=hyperpod[instance_id],
            name=name,
            hostname=str(labels.get(HOSTNAME_LABEL, name)),
            ready=_ready(item),
            health=_unhealthy(item),
            allocatable=dict(item.get("status", {}).get("allocatable") or {}),
        )
    return found


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _unhealthy(node: Mapping[str, Any]) -> str | None:
    """The health taint or label when it says anything but Schedulable."""
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("key") == HEALTH_KEY and taint.get("value") != HEALTHY:
            return f"taint {HEALTH_KEY}={taint.get('value')}:{taint.get('effect')}"
    value = (node.get("metadata", {}).get("labels") or {}).get(HEALTH_KEY)
    if value not in (None, HEALTHY):
        return f"label {HEALTH_KEY}={value}"
    return None


def _count(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _busy_hosts(run: VerifyRun) -> set[str]:
    """Names of nodes running a pod that requests GPUs, Neuron or EFA devices (not idle)."""
    busy: set[str] = set()
    path = "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"
    for pod in _client(run).items(path):
        status, spec = pod.get("status", {}), pod.get("spec", {})
        if status.get("phase") in ("Succeeded", "Failed") or not spec.get("nodeName"):
            continue
        containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        for container in containers:
            resources = container.get("resources") or {}
            wanted = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
            if any(_count(wanted.get(r, 0)) > 0 for r in ACCELERATOR_RESOURCES):
                busy.add(str(spec["nodeName"]))
    return busy


def _idle(run: VerifyRun, kube: Mapping[str, KubeNode]) -> dict[str, list[KubeNode]]:
    """Per group (config order), its Running nodes that are Ready, healthy and idle."""
    busy = _busy_hosts(run)
    result: dict[str, list[KubeNode]] = {}
    for group in _groups(run):
        result[group] = [
            k
            for n in run.group_nodes(group)
            if (k := kube.get(n.instance_id)) and k.ready and not k.health and k.name not in busy
        ]
    return result


def _groups(run: VerifyRun) -> list[str]:
    """Groups with nodes, in the config's order, then any others ListClusterNodes names."""
    named = [g.name for g in run.config.cluster.instance_groups]
    others = sorted({n.group for n in run.nodes} - set(named))
    return [g for g in named if any(n.group == g for n in run.nodes)] + others


def _client(run: VerifyRun) -> Kubernetes:
    if not isinstance(run.kubernetes, Kubernetes):
        raise KubernetesUnreachable("no Kubernetes client (the EKS endpoint was not connected)")
    return run.kubernetes


def _guarded(check: str, body: Callable[[VerifyRun], list[Result]]) -> Check:
    """``body`` with an unreachable or refusing API as its failed result."""

    def run_check(run: VerifyRun) -> list[Result]:
        try:
            return body(run)
        except KubernetesDenied as exc:
            return [
                failed(
                    check,
                    f"the Kubernetes API refused the caller: {exc}",
                    "give the caller an EKS access entry that may read nodes and pods and manage "
                    "namespaces, pods, persistent volumes and MPIJobs (e.g. AmazonEKSClusterAdminPolicy)",
                )
            ]
        except (KubernetesUnreachable, KubernetesConflict) as exc:
            return [
                failed(
                    check,
                    f"the Kubernetes API failed: {exc}",
                    "check the EKS endpoint (from outside the VPC: an SSM port-forward through a "
                    "node) and run make verify again",
                )
            ]

    run_check.__name__ = f"check_{check}"
    run_check.__doc__ = body.__doc__
    return run_check


# -- nodes -------------------------------------------------------------------------------------


def _nodes(run: VerifyRun) -> list[Result]:
    """Every Running HyperPod node is a Ready Kubernetes node without HyperPod's unhealthy taint,
    with the GPUs (or Neuron devices) and EFA devices of its instance type allocatable."""
    if not run.nodes:
        return [skipped("nodes", "ListClusterNodes returned no nodes")]
    kube = _kube_nodes(run)
    results: list[Result] = []
    for group in _groups(run):
        running = run.group_nodes(group)
        if not running:
            results.append(skipped("nodes", "no Running node in the group", group))
            continue
        problems = [r for n in running if (r := _node_problem(run, n, kube.get(n.instance_id)))]
        results += problems
        if not problems:
            results.append(_nodes_passed(run, group, running))
    return results


def _node_problem(run: VerifyRun, node: Node, kube: KubeNode | None) -> Result | None:
    subject = node.label
    if kube is None:
        return failed(
            "nodes",
            f"{node.instance_id} is Running in HyperPod but is not a Kubernetes node",
            "the node did not join the EKS cluster: read its log group "
            f"/aws/sagemaker/Clusters/{run.config.cluster_name}/{run.cluster_id} and check the "
            "cluster's access entry for the group's execution role",
            subject,
        )
    if not kube.ready:
        return failed(
            "nodes",
            f"node {kube.name} is not Ready",
            f"kubectl describe node {kube.name}; if it stays NotReady, mark it for replacement: "
            f"kubectl label node {kube.name} {HEALTH_KEY}=UnschedulablePendingReplacement --overwrite",
            subject,
        )
    if kube.health:
        return failed(
            "nodes",
            f"node {kube.name} has the {kube.health}",
            "HyperPod is checking, rebooting or replacing it: wait until it is Schedulable "
            f"(kubectl get node {kube.name} -L {HEALTH_KEY}) and run make verify again",
            subject,
        )
    facts = instance_types.lookup(run, node.instance_type).facts
    for resource, wanted, plugin in _device_resources(facts):
        have = _count(kube.allocatable.get(resource, 0))
        if have < wanted and facts is not None:
            off_list = _off_chart_list(run, node.instance_type, plugin)
            return failed(
                "nodes",
                f"node {kube.name} has {have} {resource} allocatable, {node.instance_type} has "
                f"{wanted} ({instance_types.source_note(facts, 'devices')})",
                f"add {node.instance_type} to {off_list}: the dependency chart's list lacks it, "
                "so its device plugin does not run there"
                if off_list
                else f"check the device plugin pod on the node (kubectl -n kube-system get pods "
                f"-o wide --field-selector spec.nodeName={kube.name}) and "
                f"eks.dependencies.{plugin}",
                subject,
                allocatable=have,
                expected=wanted,
            )
    return None


# a device plugin's instance-type list in the dependency chart, and the config key that extends it
_CHART_LISTS = {
    "nvidia_device_plugin": ("nvidiaGpu", "nvidia_gpu"),
    "neuron_device_plugin": ("neuron", "neuron"),
    "efa_device_plugin": ("efa", "efa"),
}


def _off_chart_list(run: VerifyRun, instance_type: str, plugin: str) -> str | None:
    """The ``eks.chart_values.extra_instance_types`` key to add ``instance_type`` to when the
    chart's list for ``plugin`` lacks it (a type such as ml.g7 whose EFA no source confirmed
    before the deploy); None when it is on the list."""
    from hyperpod_cdk.facts import chart  # pure data (values.yaml)

    kind, key = _CHART_LISTS[plugin]
    extra = getattr(run.config.eks_settings.chart_values.extra_instance_types, key)
    if instance_type in chart.instance_types(kind) or instance_type in extra:
        return None
    return f"eks.chart_values.extra_instance_types.{key}"


def _device_resources(facts: gates.InstanceFacts | None) -> list[tuple[str, int, str]]:
    """(resource, count, dependency key) the instance type must advertise."""
    if facts is None:
        return []
    wanted: list[tuple[str, int, str]] = []
    if facts.accelerator == "nvidia" and facts.accelerators:
        wanted.append((GPU, facts.accelerators, "nvidia_device_plugin"))
    if facts.accelerator == "neuron" and facts.accelerators:
        wanted.append((NEURON, facts.accelerators, "neuron_device_plugin"))
    if facts.efa_interfaces:
        wanted.append((EFA, facts.efa_interfaces, "efa_device_plugin"))
    return wanted


def _nodes_passed(run: VerifyRun, group: str, running: list[Node]) -> Result:
    types = sorted({n.instance_type for n in running})
    devices: list[str] = []
    sources: set[str] = set()
    unknown: list[str] = []
    for instance_type in types:
        found = instance_types.lookup(run, instance_type)
        if found.facts is None:
            unknown.append(found.reason)
            continue
        wanted = _device_resources(found.facts)
        devices += [f"{count} {resource}" for resource, count, _ in wanted]
        if wanted:
            sources.add(found.facts.source)
    detail = f"{len(running)} of {len(running)} Running nodes Ready and Schedulable"
    if devices:
        detail += f", each with {', '.join(devices)} (from {' and '.join(sorted(sources))})"
    if unknown:
        detail += f" (devices not checked: {'; '.join(unknown)})"
    return passed("nodes", detail, group, ready=len(running), running=len(running))


# -- pods: the namespace, the queue, running and reading them --------------------------------


def _governed(run: VerifyRun) -> bool:
    return bool(run.config.eks_settings.addons.task_governance)


def _team_namespace(run: VerifyRun) -> str | None:
    """``hyperpod-ns-<team>`` of ``--team`` on a task-governance cluster; None otherwise."""
    if _governed(run) and run.options.team:
        return namespace_of(run.options.team)
    return None


def _priority_classes(run: VerifyRun) -> list[tuple[str, int]]:
    """(name, weight) of the cluster policy's classes (the config's, or AWS's five)."""
    governance = run.config.eks_settings.task_governance or TaskGovernance()
    return [(p.name, p.weight) for p in governance.policy.priority_classes]


def _priority_class(run: VerifyRun) -> str | None:
    """The class the test workloads run at: ``--priority-class`` (``training`` or
    ``training-priority``), else the policy's lowest, so a test never preempts a team's work."""
    if run.options.priority_class:
        return run.options.priority_class.removesuffix(PRIORITY_SUFFIX)
    classes = _priority_classes(run)
    return min(classes, key=lambda c: c[1])[0] if classes else None


def _pods_blocked(run: VerifyRun) -> str | None:
    """Why no test pod may start on this cluster (task governance without a usable ``--team``)."""
    if not _governed(run):
        return None
    governance = run.config.eks_settings.task_governance
    teams = [t.name for t in governance.teams] if governance else []
    known = f" (one of: {', '.join(teams)})" if teams else ""
    team = run.options.team
    if not team:
        return (
            "task governance is on (eks.addons.task_governance): test pods would wait in Kueue "
            f"without a LocalQueue; give the team they run as with --team NAME{known}"
        )
    if teams and team not in teams:
        return f"--team {team} is not a team of eks.task_governance.teams{known}"
    classes = [name for name, _ in _priority_classes(run)]
    wanted = _priority_class(run)
    if wanted is not None and wanted not in classes:
        return (
            f"--priority-class {run.options.priority_class} is not a class of the cluster "
            f"policy (eks.task_governance.policy.priority_classes: {', '.join(classes)})"
        )
    namespace = namespace_of(team)
    if _client(run).get(f"/api/v1/namespaces/{namespace}") is None:
        return (
            f"namespace {namespace} does not exist: HyperPod makes it with team {team}'s compute "
            "quota (eks.task_governance.teams); deploy the quota first"
        )
    return None


def _queue_labels(run: VerifyRun) -> dict[str, str]:
    """The team's LocalQueue and the priority class (``<class>-priority``, as HyperPod names
    the Kueue WorkloadPriorityClass of each policy class)."""
    labels: dict[str, str] = {}
    if _team_namespace(run) is not None and run.options.team:
        labels[QUEUE_LABEL] = local_queue_of(run.options.team)
        priority = _priority_class(run)
        if priority:
            labels[PRIORITY_LABEL] = f"{priority}{PRIORITY_SUFFIX}"
    return labels


def _namespace_of_run(run: VerifyRun) -> str:
    """Where the run's pods are: the team's namespace, else ``<run id>``."""
    return _team_namespace(run) or run.run_id


def _admission_hint(run: VerifyRun) -> str:
    """On a team run: where Kueue says why a workload waits (quota, priority)."""
    namespace = _team_namespace(run)
    if namespace is None:
        return ""
    return (
        f"; or Kueue has not admitted it: kubectl -n {namespace} get workloads (the team's "
        "quota may be in use, or --priority-class too low to borrow)"
    )


def _made_in(run: VerifyRun, client: Kubernetes, path: str, kind: str) -> None:
    """Register an object made in the team's namespace (the run's own is deleted whole)."""
    if _team_namespace(run) is not None:
        run.created(*_object_removal(client, path, kind))


def _object_removal(
    client: Kubernetes, path: str, kind: str
) -> tuple[str, Callable[[], None], str]:
    namespace, name = path.split("/namespaces/", 1)[1].split("/")[0], path.rsplit("/", 1)[1]
    return (
        f"Kubernetes {kind} {namespace}/{name}",
        lambda: client.delete(path, {"propagationPolicy": "Background"}),
        f"kubectl delete {kind.lower()} {name} --namespace {namespace}",
    )


def _ensure_namespace(run: VerifyRun) -> str:
    """The run's namespace: the team's (``--team``, made by HyperPod, never deleted here), or
    ``<run id>`` (labelled with it), made and registered once."""
    team_namespace = _team_namespace(run)
    if team_namespace is not None:
        return team_namespace
    client, name = _client(run), run.run_id
    if client.get(f"/api/v1/namespaces/{name}") is not None:
        return name
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {RUN_LABEL: name}},
    }
    try:
        client.post("/api/v1/namespaces", body)
    except KubernetesConflict:  # made meanwhile by this run
        return name
    run.created(*_namespace_removal(client, name))
    return name


def _namespace_removal(client: Kubernetes, name: str) -> tuple[str, Callable[[], None], str]:
    return (
        f"Kubernetes namespace {name} (and every object in it)",
        lambda: client.delete(f"/api/v1/namespaces/{name}", {"propagationPolicy": "Background"}),
        f"kubectl delete namespace {name}",
    )


def _volume_removal(client: Kubernetes, name: str) -> tuple[str, Callable[[], None], str]:
    return (
        f"Kubernetes PersistentVolume {name} (reclaim policy Retain: the file system stays)",
        lambda: client.delete(f"/api/v1/persistentvolumes/{name}"),
        f"kubectl delete persistentvolume {name}",
    )


def _tolerations(run: VerifyRun, groups: Iterable[str]) -> list[dict[str, Any]]:
    """The taints the config gives these groups (never HyperPod's health taint)."""
    wanted = set(groups)
    tolerations: list[dict[str, Any]] = []
    for group in run.config.cluster.instance_groups:
        if group.name not in wanted:
            continue
        for taint in group.taints:
            if taint.key == HEALTH_KEY:
                continue
            toleration: dict[str, Any] = {"key": taint.key, "effect": taint.effect}
            if taint.value is None:
                toleration["operator"] = "Exists"
            else:
                toleration.update(operator="Equal", value=taint.value)
            if toleration not in tolerations:
                tolerations.append(toleration)
    return tolerations


def _pinned(hostnames: list[str]) -> dict[str, Any]:
    """A node affinity to exactly these nodes (the scheduler still honours their taints)."""
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": hostnames}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def _on_hyperpod() -> dict[str, Any]:
    """A node affinity to any HyperPod node."""
    term = {"matchExpressions": [{"key": GROUP_LABEL, "operator": "Exists"}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def _image(run: VerifyRun) -> str:
    return gates.test_image(run.config.eks_settings.image_registry)


def _seconds_left(run: VerifyRun, deadline: float) -> int:
    return max(MIN_POD_SECONDS, int(deadline - run.clock()))


@dataclass(frozen=True)
class PodSpec:
    """What a test pod runs and where."""

    name: str
    script: str
    hostnames: list[str] | None  # None: any HyperPod node
    groups: list[str]
    devices: Mapping[str, int] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    claim: str | None = None


def _pod_body(run: VerifyRun, spec: PodSpec, seconds: int) -> dict[str, Any]:
    resources = {key: str(count) for key, count in spec.devices.items() if count}
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": _image(run),
        "command": ["/bin/bash", "-c", spec.script],
        "env": [{"name": k, "value": v} for k, v in spec.env.items()],
        "resources": {"requests": resources, "limits": resources},
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": seconds,
        "terminationGracePeriodSeconds": 5,
        "affinity": _pinned(spec.hostnames) if spec.hostnames else _on_hyperpod(),
        "tolerations": _tolerations(run, spec.groups),
        "containers": [container],
    }
    if spec.claim:
        container["volumeMounts"] = [{"name": "fsx", "mountPath": FSX_MOUNT}]
        pod_spec["volumes"] = [{"name": "fsx", "persistentVolumeClaim": {"claimName": spec.claim}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": spec.name, "labels": {RUN_LABEL: run.run_id, **_queue_labels(run)}},
        "spec": pod_spec,
    }


@dataclass(frozen=True)
class PodRun:
    """How a test pod ended: its phase (Succeeded, Failed, or where it was at the deadline), why,
    and its log."""

    name: str
    phase: str
    reason: str
    log: str | None

    @property
    def finished(self) -> bool:
        """True when the pod ran to its end (whatever its exit status)."""
        return self.phase in ("Succeeded", "Failed")


def _run_pods(run: VerifyRun, specs: list[PodSpec], deadline: float) -> dict[str, PodRun]:
    """Start the pods, wait for them until ``deadline``, read their logs; a pod still running at
    the deadline is deleted."""
    client, namespace = _client(run), _ensure_namespace(run)
    base = f"/api/v1/namespaces/{namespace}/pods"
    seconds = _seconds_left(run, deadline)
    for spec in specs:
        with contextlib.suppress(KubernetesConflict):  # started already by this run
            if client.post(base, _pod_body(run, spec, seconds)) is not None:
                _made_in(run, client, f"{base}/{spec.name}", "Pod")
    waiting = {spec.name for spec in specs}
    states: dict[str, dict[str, Any]] = {}
    while True:
        for name in sorted(waiting):
            pod = client.get(f"{base}/{name}") or {}
            states[name] = pod
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                waiting.discard(name)
        if not waiting or run.clock() >= deadline:
            break
        run.sleep(POLL_SECONDS)
    runs: dict[str, PodRun] = {}
    for spec in specs:
        pod = states.get(spec.name, {})
        phase = str(pod.get("status", {}).get("phase", "absent"))
        log = _log(client, f"{base}/{spec.name}") if phase != "Pending" and pod else None
        if spec.name in waiting:
            client.delete(f"{base}/{spec.name}", {"gracePeriodSeconds": 0})
        runs[spec.name] = PodRun(spec.name, phase, _pod_reason(pod), log)
    return runs


def _log(client: Kubernetes, pod_path: str, container: str = CONTAINER) -> str | None:
    """A container's log; None when there is none (one that never started answers 400)."""
    try:
        return client.text(f"{pod_path}/log?container={container}")
    except KubernetesUnreachable:
        return None


def _pod_reason(pod: Mapping[str, Any]) -> str:
    """Why a pod is where it is: a waiting or terminated container's reason, or the scheduler's."""
    status = pod.get("status", {})
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            if state.get(key):
                detail = state[key]
                reason = str(detail.get("reason", key))
                if key == "terminated":
                    reason += f" (exit {detail.get('exitCode')})"
                return one_line(f"{reason}: {detail.get('message', '')}".rstrip(": "))
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return one_line(f"{condition.get('reason')}: {condition.get('message', '')}")
    return str(status.get("reason") or status.get("message") or "")


def _pod_failure(check: str, run: VerifyRun, pod: PodRun, subject: str, seconds: int) -> Result:
    """The failed result of a pod that did not run to its end."""
    if "ImagePull" in pod.reason or "ErrImage" in pod.reason:
        fix = (
            f"the node cannot pull {_image(run)}: set eks.image_registry to a registry that "
            "holds it (an ECR pull-through cache or a mirror)"
        )
    elif pod.phase == "Pending":
        fix = (
            f"kubectl -n {_namespace_of_run(run)} describe pod {pod.name}: the node's GPUs or "
            "EFA devices may be taken, or a taint the config does not name keeps the pod off"
            + _admission_hint(run)
        )
    else:
        fix = f"kubectl -n {_namespace_of_run(run)} logs {pod.name} (before the run's clean-up)"
    state = f"{pod.phase}: {pod.reason}" if pod.reason else pod.phase
    if pod.finished:  # without its figures: a crash, or its own deadline while starting
        detail = f"pod {pod.name} ended without its figures ({state})"
    else:
        detail = f"pod {pod.name} did not finish within {seconds} s ({state})"
    return failed(check, detail, fix, subject)


def _marks(log: str | None) -> dict[str, str]:
    """The ``verify:key=value`` lines of a log."""
    marks: dict[str, str] = {}
    for line in (log or "").splitlines():
        if line.startswith(MARK) and "=" in line:
            key, _, value = line[len(MARK) :].partition("=")
            marks[key.strip()] = value.strip()
    return marks


def _section(log: str | None, name: str) -> str:
    """The lines between ``verify:<name>-begin`` and ``verify:<name>-end``."""
    found = re.search(
        rf"^{MARK}{name}-begin\n(.*?)^{MARK}{name}-end", log or "", re.MULTILINE | re.DOTALL
    )
    return found[1] if found else ""


# -- efa and containers: one probe pod per idle NVIDIA GPU node ------------------------------

PROBE_SCRIPT = f"""\
export PATH={EFA_BIN}:$PATH
shopt -s nullglob
uverbs=(/dev/infiniband/uverbs*)
echo "{MARK}memlock=$(ulimit -l)"
echo "{MARK}gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
echo "{MARK}uverbs=${{#uverbs[@]}}"
echo "{MARK}fi_info-begin"
fi_info -p efa -t FI_EP_RDM 2>&1
echo "{MARK}fi_info-end"
"""


@dataclass(frozen=True)
class Probe:
    """What a probe pod saw on one node."""

    kube: KubeNode
    facts: gates.InstanceFacts
    pod: PodRun

    @property
    def marks(self) -> dict[str, str]:
        """Its ``verify:`` figures."""
        return _marks(self.pod.log)

    @property
    def efa_devices(self) -> int:
        """EFA devices fi_info lists for the efa provider (one RDM domain per device)."""
        section = _section(self.pod.log, "fi_info")
        return len(set(re.findall(r"^\s*domain:\s*(\S+)", section, re.MULTILINE)))

    @property
    def providers(self) -> set[str]:
        """The providers fi_info named."""
        section = _section(self.pod.log, "fi_info")
        return set(re.findall(r"^\s*provider:\s*(\S+)", section, re.MULTILINE))


@dataclass
class ProbeRound:
    """The probes of one run, per group, with the reason a group was not probed."""

    probes: dict[str, list[Probe]] = field(default_factory=dict)
    skips: dict[str, str] = field(default_factory=dict)
    seconds: int = 0


# where the run keeps its probes (VerifyRun.shared)
_PROBES = "eks.probes"


def _probe_round(run: VerifyRun) -> ProbeRound:
    """The run's probes: started by whichever of efa and containers comes first."""
    kept: ProbeRound | None = run.shared.get(_PROBES)
    if kept is not None:
        return kept
    found = ProbeRound()
    kube = _kube_nodes(run)
    idle = _idle(run, kube)
    targets: list[tuple[str, KubeNode, gates.InstanceFacts]] = []
    for group in _groups(run):
        running = run.group_nodes(group)
        if not running:
            found.skips[group] = "no Running node in the group"
            continue
        known = instance_types.lookup(run, running[0].instance_type)
        facts = known.facts
        if facts is None:
            found.skips[group] = known.reason
        elif facts.accelerator != "nvidia":
            found.skips[group] = (
                f"{facts.instance_type} has no NVIDIA GPUs "
                f"({instance_types.source_note(facts, 'GPUs')}; the test image is CUDA)"
            )
        elif not idle[group]:
            found.skips[group] = f"none of its {len(running)} nodes is idle, Ready and Schedulable"
        else:
            targets += [(group, k, facts) for k in idle[group]]
    budget = max(BUDGET_SECONDS["efa"], BUDGET_SECONDS["containers"])
    deadline = run.clock() + budget
    specs = [
        PodSpec(
            name=f"{run.run_id}-probe-{k.node.instance_id}",
            script=PROBE_SCRIPT,
            hostnames=[k.hostname],
            groups=[group],
            devices={GPU: facts.accelerators, EFA: facts.efa_interfaces},
        )
        for group, k, facts in targets
    ]
    pods = _run_pods(run, specs, deadline) if specs else {}
    found.seconds = budget
    for (group, k, facts), spec in zip(targets, specs, strict=True):
        found.probes.setdefault(group, []).append(Probe(k, facts, pods[spec.name]))
    run.shared[_PROBES] = found
    return found


def _probe_results(
    check: str,
    run: VerifyRun,
    judge: Callable[[Probe], Result | None],
    figures: Callable[[list[Probe]], dict[str, int]],
    expected: str,
    not_applicable: Callable[[gates.InstanceFacts], str | None] = lambda facts: None,
) -> list[Result]:
    """One result per probed node that failed ``judge``, else one pass per group that names
    where the ``expected`` counts come from (``EFA interfaces from the gates table``)."""
    blocked = _pods_blocked(run)
    if blocked:
        return [skipped(check, blocked)]
    found = _probe_round(run)
    results: list[Result] = []
    for group in _groups(run):
        probes = found.probes.get(group, [])
        reason = found.skips.get(group) or (not_applicable(probes[0].facts) if probes else None)
        if reason:
            results.append(skipped(check, reason, group))
            continue
        problems: list[Result] = []
        for probe in probes:
            if not probe.pod.finished or (probe.pod.phase == "Failed" and not probe.marks):
                subject = probe.kube.node.label
                problems.append(_pod_failure(check, run, probe.pod, subject, found.seconds))
            elif (problem := judge(probe)) is not None:
                problems.append(problem)
        results += problems or [_probe_passed(check, run, group, probes, figures(probes), expected)]
    return results


def _probe_passed(
    check: str,
    run: VerifyRun,
    group: str,
    probes: list[Probe],
    figures: dict[str, int],
    expected: str,
) -> Result:
    tested = len(probes)
    untested = len(run.group_nodes(group)) - tested
    shown = ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in figures.items())
    detail = f"{tested} idle node{'s' if tested != 1 else ''}: {shown} each"
    if probes:
        detail += f" ({instance_types.source_note(probes[0].facts, expected)})"
    if untested:
        detail += f" ({untested} busy or unhealthy node{'s' if untested != 1 else ''} not tested)"
    return passed(check, detail, group, nodes=tested, **figures)


def _judge_efa(probe: Probe) -> Result | None:
    subject, facts = probe.kube.node.label, probe.facts
    memlock = probe.marks.get("memlock", "")
    if "efa" not in probe.providers:
        return failed(
            "efa",
            f"fi_info found no efa provider on {probe.kube.name} (saw: {', '.join(sorted(probe.providers)) or 'nothing'})",
            "check the EFA device plugin (eks.dependencies.efa_device_plugin) and that the group "
            "has network_interface: efa",
            subject,
        )
    if probe.efa_devices != facts.efa_interfaces:
        return failed(
            "efa",
            f"fi_info lists {probe.efa_devices} EFA devices on {probe.kube.name}, "
            f"{facts.instance_type} has {facts.efa_interfaces} "
            f"({instance_types.source_note(facts)})",
            "check the EFA device plugin (eks.dependencies.efa_device_plugin) on the node and its "
            f"allocatable {EFA}",
            subject,
            efa_devices=probe.efa_devices,
            expected=facts.efa_interfaces,
        )
    if memlock != "unlimited":
        return failed(
            "efa",
            f"locked memory (ulimit -l) in a pod on {probe.kube.name} is {memlock or 'unknown'}, "
            "must be unlimited",
            "containerd on the node must give containers an unlimited memlock (LimitMEMLOCK="
            "infinity, as the HyperPod AMI sets it): check a custom AMI or lifecycle script",
            subject,
        )
    return None


def _efa_figures(probes: list[Probe]) -> dict[str, int]:
    return {"efa_devices": probes[0].efa_devices} if probes else {}


def _efa(run: VerifyRun) -> list[Result]:
    """EFA on each idle NVIDIA GPU node, seen from a pod holding all its GPUs and EFA devices:
    the efa provider, as many devices as the instance type has, memlock unlimited."""
    return _probe_results("efa", run, _judge_efa, _efa_figures, "EFA interfaces", _without_efa)


def _without_efa(facts: gates.InstanceFacts) -> str | None:
    if facts.efa_interfaces:
        return None
    return f"{facts.instance_type} has no EFA ({instance_types.source_note(facts)})"


def _judge_containers(probe: Probe) -> Result | None:
    subject, facts = probe.kube.node.label, probe.facts
    gpus, uverbs = _count(probe.marks.get("gpus", 0)), _count(probe.marks.get("uverbs", 0))
    if gpus != facts.accelerators:
        return failed(
            "containers",
            f"a pod on {probe.kube.name} sees {gpus} GPUs (nvidia-smi -L), {facts.instance_type} has {facts.accelerators}",
            "check the NVIDIA device plugin (eks.dependencies.nvidia_device_plugin) and the node's "
            f"driver: kubectl describe node {probe.kube.name}",
            subject,
            gpus=gpus,
            expected=facts.accelerators,
        )
    if uverbs != facts.efa_interfaces:
        return failed(
            "containers",
            f"a pod on {probe.kube.name} sees {uverbs} EFA devices (/dev/infiniband/uverbs*), "
            f"{facts.instance_type} has {facts.efa_interfaces} "
            f"({instance_types.source_note(facts)})",
            "check the EFA device plugin (eks.dependencies.efa_device_plugin) on the node",
            subject,
            efa_devices=uverbs,
            expected=facts.efa_interfaces,
        )
    return None


def _containers_figures(probes: list[Probe]) -> dict[str, int]:
    if not probes:
        return {}
    return {"gpus": probes[0].facts.accelerators, "efa_devices": probes[0].facts.efa_interfaces}


def _containers(run: VerifyRun) -> list[Result]:
    """A pod on each idle NVIDIA GPU node sees all the node's GPUs and EFA devices."""
    return _probe_results(
        "containers", run, _judge_containers, _containers_figures, "GPUs and EFA interfaces"
    )


# -- nccl: an MPIJob on 2 idle nodes of each NVIDIA EFA group --------------------------------


def _mpijob(
    run: VerifyRun, name: str, hosts: list[KubeNode], facts: gates.InstanceFacts, seconds: int
) -> dict[str, Any]:
    """The MPIJob of one all_reduce_perf run: a worker per host holding all its GPUs and EFA
    devices, a launcher running mpirun."""
    gpus, efa = facts.accelerators, facts.efa_interfaces
    devices = {GPU: str(gpus), EFA: str(efa)}
    labels = {RUN_LABEL: run.run_id}
    groups = sorted({k.node.group for k in hosts})
    mpirun = [
        "mpirun", "--allow-run-as-root", "-np", str(gpus * len(hosts)), "--bind-to", "none",
        "-x", "NCCL_DEBUG=INFO", "-x", "FI_PROVIDER=efa", "-x", "FI_EFA_USE_DEVICE_RDMA=1",
        "-x", "PATH", "-x", "LD_LIBRARY_PATH", "--mca", "pml", "^ucx",
        "--mca", "btl_tcp_if_exclude", "lo,docker0", ALL_REDUCE, *NCCL_ARGS.split(),
    ]  # fmt: skip
    worker = {
        "metadata": {"labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "affinity": _pinned([k.hostname for k in hosts]),
            "tolerations": _tolerations(run, groups),
            "containers": [
                {
                    "name": "worker",
                    "image": _image(run),
                    "command": ["/usr/sbin/sshd", "-De"],
                    "resources": {"requests": devices, "limits": devices},
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
        },
    }
    launcher = {
        "metadata": {"labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "affinity": _on_hyperpod(),
            "tolerations": _tolerations(run, groups),
            "containers": [{"name": "launcher", "image": _image(run), "command": mpirun}],
        },
    }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "labels": {**labels, **_queue_labels(run)}},
        "spec": {
            "slotsPerWorker": gpus,
            # WaitForWorkersReady where the operator supports it; where it does not, a launcher
            # that starts before its workers fails and the launcher Job starts another
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {
                "activeDeadlineSeconds": seconds,
                "backoffLimit": LAUNCHER_RETRIES,
                "cleanPodPolicy": "Running",
            },
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": launcher},
                "Worker": {"replicas": len(hosts), "restartPolicy": "Never", "template": worker},
            },
        },
    }


@dataclass(frozen=True)
class JobRun:
    """How an MPIJob ended: finished (Succeeded or Failed condition), its launcher's log."""

    finished: bool
    state: str
    log: str | None


def _run_mpijob(run: VerifyRun, body: dict[str, Any], deadline: float) -> JobRun | None:
    """Start the MPIJob and wait for it until ``deadline`` (then delete it); None when the
    cluster has no MPIJob resource."""
    client, namespace = _client(run), _ensure_namespace(run)
    name = body["metadata"]["name"]
    base = f"{MPIJOB_API}/namespaces/{namespace}/mpijobs"
    if client.post(base, body) is None:
        return None
    _made_in(run, client, f"{base}/{name}", "MPIJob")
    state = "Created"
    while True:
        job = client.get(f"{base}/{name}") or {}
        conditions = {
            c.get("type"): c
            for c in job.get("status", {}).get("conditions") or []
            if c.get("status") == "True"
        }
        done = next((t for t in ("Succeeded", "Failed") if t in conditions), None)
        if done:
            state = done + (f" ({conditions[done].get('message')})" if done == "Failed" else "")
            break
        state = next(iter(reversed(conditions)), state)
        if run.clock() >= deadline:
            client.delete(f"{base}/{name}", {"propagationPolicy": "Foreground"})
            return JobRun(False, state, _launcher_log(client, namespace, name))
        run.sleep(POLL_SECONDS)
    return JobRun(True, state, _launcher_log(client, namespace, name))


def _launcher_log(client: Kubernetes, namespace: str, job: str) -> str | None:
    selector = label_selector({JOB_NAME_LABEL: job, JOB_ROLE_LABEL: "launcher"})
    pods = client.items(f"/api/v1/namespaces/{namespace}/pods", selector)
    if not pods:
        return None
    newest = max(pods, key=lambda p: str(p.get("metadata", {}).get("creationTimestamp", "")))
    name = newest["metadata"]["name"]
    return _log(client, f"/api/v1/namespaces/{namespace}/pods/{name}", "launcher")


def _nccl(run: VerifyRun) -> list[Result]:
    """all_reduce_perf over EFA on 2 idle nodes of each NVIDIA EFA group (an MPIJob), gated on
    the instance type's bus bandwidth; with nccl_all_nodes also on every idle node, reported."""
    if not run.config.eks_settings.dependencies.mpi_operator:
        return [
            skipped(
                "nccl",
                "the MPI operator is off (eks.dependencies.mpi_operator): the NCCL test runs as an MPIJob",
            )
        ]
    blocked = _pods_blocked(run)
    if blocked:
        return [skipped("nccl", blocked)]
    deadline = run.deadline("nccl")
    idle = _idle(run, _kube_nodes(run))
    results: list[Result] = []
    for group in _groups(run):
        running, hosts = run.group_nodes(group), idle.get(group, [])
        instance_type = running[0].instance_type if running else ""
        known = instance_types.lookup(run, instance_type) if running else None
        facts = known.facts if known else None
        gate = gates.nccl_gate(instance_type, facts) if facts else None
        reason = _nccl_not_applicable(running, hosts, known, gate)
        if reason or facts is None or gate is None:
            results.append(skipped("nccl", reason or "no gate", group))
            continue
        results.append(_nccl_gated(run, group, hosts[:2], facts, gate, deadline))
        if run.options.nccl_all_nodes and len(hosts) > 2:
            results.append(_nccl_reported(run, group, hosts, facts, gate, deadline))
    return results


def _nccl_not_applicable(
    running: list[Node],
    hosts: list[KubeNode],
    known: instance_types.Lookup | None,
    gate: gates.NcclGate | None,
) -> str | None:
    """Why a group gets no NCCL test (None: it does)."""
    if not running or known is None:
        return "no Running node in the group"
    instance_type, facts = running[0].instance_type, known.facts
    if facts is None:
        return known.reason
    if facts.accelerator != "nvidia" or not facts.efa_interfaces or gate is None:
        return (
            f"NCCL over EFA does not apply to {instance_type} "
            f"({instance_types.source_note(facts, 'its GPUs and EFA interfaces')})"
        )
    if len(hosts) < 2:
        return f"{len(hosts)} idle node(s) of {len(running)}: NCCL needs 2"
    return None


def _nccl_job(
    run: VerifyRun,
    group: str,
    hosts: list[KubeNode],
    facts: gates.InstanceFacts,
    deadline: float,
    tag: str,
) -> tuple[JobRun | None, int]:
    seconds = _seconds_left(run, deadline)
    name = f"{run.run_id}-nccl-{group.lower()}-{tag}"[:63].rstrip("-")
    return _run_mpijob(run, _mpijob(run, name, hosts, facts, seconds), deadline), seconds


def _nccl_gated(
    run: VerifyRun,
    group: str,
    hosts: list[KubeNode],
    facts: gates.InstanceFacts,
    gate: gates.NcclGate,
    deadline: float,
) -> Result:
    job, seconds = _nccl_job(run, group, hosts, facts, deadline, "2")
    names = " and ".join(k.name for k in hosts)
    if job is None:
        return failed(
            "nccl",
            "the cluster has no MPIJob resource (kubeflow.org/v2beta1)",
            "install the MPI operator: eks.dependencies.mpi_operator: true, then deploy",
            group,
        )
    if not job.finished:
        return failed(
            "nccl",
            f"the MPIJob on {names} did not finish within {seconds} s ({job.state}); it was deleted",
            f"kubectl -n {_namespace_of_run(run)} get pods -o wide during a run: an image pull "
            "or a worker that cannot start (EFA devices taken) holds it" + _admission_hint(run),
            group,
        )
    if not job.log:
        return failed(
            "nccl",
            f"the MPIJob on {names} ended {job.state} without a launcher log",
            f"kubectl -n {_namespace_of_run(run)} describe mpijob during a run",
            group,
        )
    decision = gates.decide_nccl(gate, parsers.parse_nccl(job.log))
    if job.state.startswith("Failed") and decision.outcome == "pass":
        return failed(
            "nccl",
            f"the MPIJob on {names} ended {job.state} after: {decision.detail}",
            f"read the launcher's log: kubectl -n {_namespace_of_run(run)} logs -l "
            f"{JOB_ROLE_LABEL}=launcher",
            group,
            **decision.figures,
        )
    detail = f"{decision.detail} (2 nodes: {names})"
    return Result(
        "nccl",
        decision.outcome,
        one_line(detail),
        group,
        decision.fix and one_line(decision.fix),
        decision.figures,
    )


def _nccl_reported(
    run: VerifyRun,
    group: str,
    hosts: list[KubeNode],
    facts: gates.InstanceFacts,
    gate: gates.NcclGate,
    deadline: float,
) -> Result:
    job, seconds = _nccl_job(run, group, hosts, facts, deadline, "all")
    subject = f"{group} all {len(hosts)} nodes"
    if job is None or not job.finished or not job.log:
        state = "no MPIJob resource" if job is None else job.state
        return skipped(
            "nccl",
            f"reported, not gated: the run on {len(hosts)} nodes gave no figure ({state})",
            subject,
        )
    decision = gates.decide_nccl(gate, parsers.parse_nccl(job.log))
    return passed("nccl", f"reported, not gated: {decision.detail}", subject, **decision.figures)


# -- fsx: mounts and throughput from pods on a few idle nodes ------------------------------


def _claim(run: VerifyRun, facts: aws_checks.FsxFacts) -> str:
    """A PersistentVolume (Retain) of the file system and its claim in the run's namespace, made
    and registered once; the claim's name."""
    client, namespace = _client(run), _ensure_namespace(run)
    name = f"{run.run_id}-fsx"
    labels = {RUN_LABEL: run.run_id}
    size = f"{facts.capacity_gib}Gi"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "capacity": {"storage": size},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "mountOptions": ["flock"],
            # Delete would make the driver delete the file system when the volume goes
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": name},
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": facts.file_system_id,
                "volumeAttributes": {"dnsname": facts.dns_name, "mountname": facts.mount_name},
            },
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": size}},
        },
    }
    if client.get(f"/api/v1/persistentvolumes/{name}") is None:
        with contextlib.suppress(KubernetesConflict):  # made meanwhile by this run
            client.post("/api/v1/persistentvolumes", volume)
            run.created(*_volume_removal(client, name))
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    if client.get(f"{path}/{name}") is None:
        with contextlib.suppress(KubernetesConflict):
            if client.post(path, claim) is not None:
                _made_in(run, client, f"{path}/{name}", "PersistentVolumeClaim")
    return name


FSX_MOUNTS_SCRIPT = f"""\
echo '{MARK}mounts-begin'
grep -w lustre /proc/mounts
echo '{MARK}mounts-end'
"""
# each client marks itself ready in the scratch folder and waits (bounded) for the others, so
# the clients write and read together; fio when the image has it, else direct-I/O dd
FSX_IO_SCRIPT = """\
shopt -s nullglob
dir={folder}; me=$(hostname); mkdir -p "$dir/ready" || exit 3
touch "$dir/ready/$me"
for _ in $(seq {barrier}); do
  ready=("$dir"/ready/*)
  [ "${{#ready[@]}}" -ge {clients} ] && break; sleep 1
done
f="$dir/$me.data"
if command -v fio >/dev/null; then
  echo '{mark}tool=fio'
  io=(--name=verify "--filename=$f" --bs=1M --direct=1 --ioengine=libaio --iodepth=16
      --size={mib}M --output-format=json)
  echo '{mark}write-begin'; fio "${{io[@]}}" --rw=write; echo '{mark}write-end'
  echo '{mark}read-begin'; fio "${{io[@]}}" --rw=read; echo '{mark}read-end'
else
  echo '{mark}tool=dd'
  echo '{mark}write-begin'
  dd if=/dev/zero of="$f" bs=1M count={mib} oflag=direct 2>&1
  echo '{mark}write-end'
  echo '{mark}read-begin'
  dd if="$f" of=/dev/null bs=1M iflag=direct 2>&1
  echo '{mark}read-end'
fi
rm -f "$f" "$dir/ready/$me"
rmdir "$dir/ready" "$dir" 2>/dev/null; true
"""


def _fsx_script(scratch: str | None, clients: int) -> str:
    """Print the Lustre mounts; with a scratch folder (a file system path), also measure."""
    if scratch is None:
        return FSX_MOUNTS_SCRIPT
    folder = shlex.quote(FSX_MOUNT + scratch)
    io = FSX_IO_SCRIPT.format(
        folder=folder, barrier=BARRIER_SECONDS, clients=clients, mark=MARK, mib=DD_MIB
    )
    return FSX_MOUNTS_SCRIPT + io


def _throughput(log: str | None, phase: str) -> float | None:
    text = _section(log, phase)
    if _marks(log).get("tool") == "fio":
        run = parsers.parse_fio(text)
        return run.write_mbps if phase == "write" else run.read_mbps
    return parsers.parse_dd(text)


def _fsx(run: VerifyRun) -> list[Result]:
    """The file system mounted in pods on 2 to 4 idle nodes with its DNS name and mount name, and
    their summed write and read throughput against the file system's baseline."""
    try:
        facts = aws_checks.fsx_facts(run)
    except aws_checks.FsxUnknown as exc:
        return [
            failed(
                "fsx",
                f"the file system could not be read: {exc}",
                "check storage.fsx and the caller's fsx:Describe* permissions",
            )
        ]
    if facts is None:
        return [skipped("fsx", "no FSx for Lustre file system (storage.fsx)")]
    if not run.config.fsx_csi_driver_enabled:
        return [
            skipped(
                "fsx",
                "the FSx CSI driver is off (eks.addons.fsx_csi_driver): pods cannot mount the file system",
            )
        ]
    blocked = _pods_blocked(run)
    if blocked:
        return [skipped("fsx", blocked)]
    idle = _idle(run, _kube_nodes(run))
    hosts = [k for group in _groups(run) for k in idle.get(group, [])][:FSX_CLIENTS]
    if not hosts:
        return [skipped("fsx", "no HyperPod node is idle, Ready and Schedulable")]
    scratch = aws_checks.scratch_path(facts, run.run_id)
    claim = _claim(run, facts)
    script = _fsx_script(scratch, len(hosts))
    specs = [
        PodSpec(
            f"{run.run_id}-fsx-{k.node.instance_id}",
            script,
            [k.hostname],
            [k.node.group],
            claim=claim,
        )
        for k in hosts
    ]
    deadline = run.deadline("fsx")
    pods = _run_pods(run, specs, deadline)
    results: list[Result] = []
    writes: list[float] = []
    reads: list[float] = []
    for kube, spec in zip(hosts, specs, strict=True):
        pod = pods[spec.name]
        if not pod.finished:
            results.append(_pod_failure("fsx", run, pod, kube.node.label, BUDGET_SECONDS["fsx"]))
            continue
        mount = _mount_problem(facts, kube, pod)
        if mount:
            results.append(mount)
            continue
        if scratch is not None:
            write, read = _throughput(pod.log, "write"), _throughput(pod.log, "read")
            if write is not None:
                writes.append(write)
            if read is not None:
                reads.append(read)
    if results:
        return results
    where = f"{len(hosts)} node{'s' if len(hosts) != 1 else ''}"
    results.append(
        passed(
            "fsx",
            f"{facts.dns_name}@tcp:/{facts.mount_name} mounted in pods on {where}",
            "mount",
            clients=len(hosts),
        )
    )
    if scratch is None:
        results.append(
            skipped(
                "fsx",
                "throughput not measured: test files would be exported to S3 by a data repository association",
                "throughput",
            )
        )
        return results
    decision = gates.decide_fsx(
        facts.capacity_gib,
        facts.throughput_per_tib,
        sum(writes) if len(writes) == len(hosts) else None,
        sum(reads) if len(reads) == len(hosts) else None,
    )
    tool = "fio" if _marks(pods[specs[0].name].log).get("tool") == "fio" else "dd direct I/O"
    detail = f"{decision.detail} ({where}, {tool})"
    results.append(
        Result(
            "fsx",
            decision.outcome,
            one_line(detail),
            "throughput",
            decision.fix and one_line(decision.fix),
            {**decision.figures, "clients": len(hosts)},
        )
    )
    return results


def _mount_problem(facts: aws_checks.FsxFacts, kube: KubeNode, pod: PodRun) -> Result | None:
    mounts = parsers.parse_lustre_mounts(_section(pod.log, "mounts"))
    ours = [m for m in mounts if m.path.rstrip("/") == FSX_MOUNT]
    if not ours:
        return failed(
            "fsx",
            f"no Lustre mount at {FSX_MOUNT} in the pod on {kube.name} ({pod.phase})",
            "check the FSx CSI node pod on the node (kubectl -n kube-system get pods -o wide "
            f"--field-selector spec.nodeName={kube.name}) and the FSx security group",
            kube.node.label,
        )
    mount = ours[0]
    if mount.dns_name != facts.dns_name or mount.mount_name != facts.mount_name:
        return failed(
            "fsx",
            f"the pod on {kube.name} mounted {mount.dns_name}@tcp:/{mount.mount_name}, "
            f"the environment's file system is {facts.dns_name}@tcp:/{facts.mount_name}",
            f"another file system answers for {facts.file_system_id}: check the FSx CSI driver's "
            "volumes and the environment's storage.fsx",
            kube.node.label,
        )
    return None


CHECKS: dict[str, Check] = {
    "nodes": _guarded("nodes", _nodes),
    "efa": _guarded("efa", _efa),
    "containers": _guarded("containers", _containers),
    "nccl": _guarded("nccl", _nccl),
    "fsx": _guarded("fsx", _fsx),
}


# -- leftovers and file access -------------------------------------------------------------


# what a run makes in a team's namespace, by API list path and kind
_TEAM_OBJECTS = (
    (MPIJOB_API, "mpijobs", "MPIJob"),
    ("/api/v1", "pods", "Pod"),
    ("/api/v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
)


def leftovers(run: VerifyRun) -> list[Created]:
    """What is labelled with ``run.run_id`` (``--cleanup``): the run's namespace and
    PersistentVolume, and the MPIJobs, pods and claims it made in a team's namespace (the
    ``--team`` one, else every team of ``eks.task_governance``)."""
    client = _client(run)
    selector = label_selector({RUN_LABEL: run.run_id})
    found: list[Created] = []
    for item in client.items("/api/v1/persistentvolumes", selector):
        found.append(Created(*_volume_removal(client, item["metadata"]["name"])))
    for item in client.items("/api/v1/namespaces", selector):
        found.append(Created(*_namespace_removal(client, item["metadata"]["name"])))
    for namespace in _team_namespaces(run):
        for api, plural, kind in _TEAM_OBJECTS:
            base = f"{api}/namespaces/{namespace}/{plural}"
            for item in client.items(base, selector):
                found.append(
                    Created(*_object_removal(client, f"{base}/{item['metadata']['name']}", kind))
                )
    return found


def _team_namespaces(run: VerifyRun) -> list[str]:
    if not _governed(run):
        return []
    if run.options.team:
        return [namespace_of(run.options.team)]
    governance = run.config.eks_settings.task_governance
    return [namespace_of(t.name) for t in governance.teams] if governance else []


class PodFsx:
    """File access on the environment's FSx for Lustre file system through short-lived pods that
    mount it (:class:`~hyperpod_ops.verify.model.FsxAccess`). Paths are file system paths; a
    read comes back base64 through the pod's log, a write goes in through the pod's environment,
    both at most :data:`PODFSX_MAX_BYTES`."""

    def __init__(self, run: VerifyRun) -> None:
        self._run = run
        self._count = 0

    def read(self, path: str, timeout: float) -> bytes | None:
        """The file's bytes, None when it does not exist."""
        script = (
            f'p="{FSX_MOUNT}$VERIFY_PATH"\n'
            f'if [ ! -f "$p" ]; then echo "{MARK}found=no"; exit 0; fi\n'
            f'if [ "$(stat -c %s "$p")" -gt {PODFSX_MAX_BYTES} ]; then\n'
            f'  echo "{MARK}found=too-big"; exit 0\nfi\n'
            f'echo "{MARK}found=yes"; echo "{MARK}data=$(base64 -w0 "$p")"\n'
        )
        marks = self._run_pod("read", path, script, {}, timeout)
        if marks.get("found") == "no":
            return None
        if marks.get("found") == "too-big":
            raise RuntimeError(f"{path} on the file system is over {PODFSX_MAX_BYTES} bytes")
        if marks.get("found") != "yes":
            raise RuntimeError(f"could not read {path} on the file system")
        return base64.b64decode(marks.get("data", ""))

    def write(self, path: str, data: bytes, timeout: float) -> None:
        """Write the file (parent folders made); raises on failure."""
        if len(data) > PODFSX_MAX_BYTES:
            raise ValueError(f"{len(data)} bytes is over the {PODFSX_MAX_BYTES} a pod carries")
        script = (
            f'p="{FSX_MOUNT}$VERIFY_PATH"\n'
            'mkdir -p "$(dirname "$p")" && printf %s "$VERIFY_DATA" | base64 -d > "$p" '
            f'&& echo "{MARK}done=yes"\n'
        )
        env = {"VERIFY_DATA": base64.b64encode(data).decode()}
        if self._run_pod("write", path, script, env, timeout).get("done") != "yes":
            raise RuntimeError(f"could not write {path} on the file system")

    def remove(self, path: str, timeout: float) -> None:
        """Remove the file or folder, recursively (gone already is fine); raises on failure."""
        script = f'rm -rf "{FSX_MOUNT}$VERIFY_PATH" && echo "{MARK}done=yes"\n'
        if self._run_pod("remove", path, script, {}, timeout).get("done") != "yes":
            raise RuntimeError(f"could not remove {path} on the file system")

    def _run_pod(
        self, verb: str, path: str, script: str, env: Mapping[str, str], timeout: float
    ) -> dict[str, str]:
        run = self._run
        normal = posixpath.normpath(path)
        if not path.startswith("/") or normal == "/" or ".." in path.split("/"):
            raise ValueError(f"{path!r} is not a file system path below / (like /datasets/a)")
        blocked = _pods_blocked(run)
        if blocked:
            raise RuntimeError(blocked)
        facts = aws_checks.fsx_facts(run)
        if facts is None:
            raise RuntimeError("the environment has no FSx for Lustre file system (storage.fsx)")
        self._count += 1
        spec = PodSpec(
            name=f"{run.run_id}-file-{verb}-{self._count}",
            script=script,
            hostnames=None,
            groups=[g.name for g in run.config.cluster.instance_groups],
            env={"VERIFY_PATH": normal, **env},
            claim=_claim(run, facts),
        )
        pod = _run_pods(run, [spec], run.clock() + timeout)[spec.name]
        if not pod.finished:
            raise RuntimeError(
                f"the pod that would {verb} {path} did not finish: {pod.phase} {pod.reason}".strip()
            )
        return _marks(pod.log)

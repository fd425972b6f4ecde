"""A fake Kubernetes API server for the EKS checks of ``make verify``: a transport
(:data:`hyperpod_ops.k8s.Transport`) that keeps objects by path and answers the way the API
server does on what the checks use:

- GET of an object (200, or 404 ``NotFound``), of a list (``{"kind": "List", "items": [...]}``;
  a cluster-wide list of a namespaced resource, such as ``/api/v1/pods``, spans every namespace),
  with an equality ``labelSelector`` (``fieldSelector`` is ignored: the checks filter phases
  themselves, as they must when a server answers more than asked);
- POST to a list: 201 with the stored object, 409 ``AlreadyExists`` for a taken name, 404 when
  the namespace or the API group (a custom resource not installed) does not exist;
- DELETE: 200, 404 when gone; deleting a namespace deletes everything in it;
- PATCH: a JSON merge patch;
- 403 ``Forbidden`` for paths the test denies;
- a pod's log as text (``text/plain``), 400 while the pod is Pending.

A test scripts what a created pod or MPIJob "does" with :attr:`FakeKube.on_pod` and
:attr:`FakeKube.on_mpijob`: the phase or conditions it reaches, its log, the node it lands on.
"""

from __future__ import annotations

import copy
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hyperpod_ops.k8s import Response

_PREFIX = r"(/api/v1|/apis/[^/]+/[^/]+)"
_LOG = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")
_LIST = re.compile(rf"^{_PREFIX}(?:/namespaces/([^/]+))?/([a-z]+)$")
_OBJECT = re.compile(rf"^{_PREFIX}(?:/namespaces/([^/]+))?/([a-z]+)/([^/]+)$")
CLUSTER_SCOPED = {"namespaces", "nodes", "persistentvolumes"}


@dataclass
class PodScript:
    """What a pod does once created: the phase it is in when next read, its log, the reason
    a waiting container gives (``ImagePullBackOff``), the node it runs on (default: the first
    hostname of its node affinity)."""

    phase: str = "Succeeded"
    log: str = ""
    waiting: str | None = None
    node: str | None = None
    started: bool = True  # False: its container never started (its log answers 400)


@dataclass
class JobScript:
    """What an MPIJob does: its True conditions (last one current) and its launcher's log."""

    conditions: list[str] = field(default_factory=lambda: ["Created", "Running", "Succeeded"])
    launcher_log: str = ""


def _status(code: int, reason: str, message: str) -> Response:
    return Response(code, {"kind": "Status", "status": "Failure", "reason": reason, "message": message, "code": code})  # fmt: skip


def matches(selector: str, labels: dict[str, str]) -> bool:
    """An equality label selector (``k=v,k2=v2``)."""
    for requirement in filter(None, selector.split(",")):
        key, _, value = requirement.partition("=")
        if labels.get(key) != value:
            return False
    return True


class FakeKube:
    """The API server; call it as a transport: ``(method, path, body) -> Response``."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.logs: dict[str, str] = {}
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []
        self.apis: set[str] = {"/api/v1", "/apis/kubeflow.org/v2beta1"}
        self.denied: list[str] = []  # path prefixes answering 403
        self.on_pod: Callable[[dict[str, Any]], PodScript] = lambda pod: PodScript()
        self.on_mpijob: Callable[[dict[str, Any]], JobScript] = lambda job: JobScript()
        self._serial = 0

    # -- what a test sets up -------------------------------------------------------------------

    def add(self, path: str, obj: dict[str, Any]) -> None:
        """Store ``obj`` at ``path`` as if it had been created earlier."""
        self.objects[path] = copy.deepcopy(obj)

    def add_node(
        self,
        instance_id: str,
        group: str,
        instance_type: str,
        *,
        ready: bool = True,
        taints: list[dict[str, str]] | None = None,
        labels: dict[str, str] | None = None,
        allocatable: dict[str, str] | None = None,
    ) -> str:
        """A HyperPod node as HyperPod registers it (``hyperpod-<instance id>``); its name."""
        name = f"hyperpod-{instance_id}"
        self.add(
            f"/api/v1/nodes/{name}",
            {
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "node.kubernetes.io/instance-type": instance_type,
                        "sagemaker.amazonaws.com/instance-group-name": group,
                        "sagemaker.amazonaws.com/node-health-status": "Schedulable",
                        **(labels or {}),
                    },
                },
                "spec": {"taints": taints or []},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                    "allocatable": {"cpu": "191450m", "pods": "100", **(allocatable or {})},
                },
            },
        )
        return name

    def created(self, plural: str) -> list[dict[str, Any]]:
        """The bodies POSTed to lists of ``plural`` (``pods``, ``mpijobs``...), in order."""
        return [b for m, p, b in self.calls if m == "POST" and b is not None and p.endswith(f"/{plural}")]  # fmt: skip

    def deleted(self) -> list[str]:
        """The paths DELETEd, in order."""
        return [p for m, p, _ in self.calls if m == "DELETE"]

    # -- the API -----------------------------------------------------------------------------

    def __call__(self, method: str, path: str, body: dict[str, Any] | None) -> Response:
        self.calls.append((method, path, copy.deepcopy(body)))
        base, _, query = path.partition("?")
        params = {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}
        if any(base.startswith(prefix) for prefix in self.denied):
            return _status(403, "Forbidden", f"{base} is forbidden: User cannot {method.lower()}")
        api = re.match(_PREFIX, base)
        if api is None or api[1] not in self.apis:
            return _status(404, "NotFound", "the server could not find the requested resource")
        if _LOG.match(base) and method == "GET":
            return self._log(base.rsplit("/", 1)[0], params)
        if listing := _LIST.match(base):
            if method == "GET":
                return self._list(listing, params.get("labelSelector", ""))
            if method == "POST" and body is not None:
                return self._create(base, listing, body)
        elif _OBJECT.match(base):
            if method == "GET":
                found = self.objects.get(base)
                return Response(200, copy.deepcopy(found)) if found else self._missing(base)
            if method == "DELETE":
                return self._delete(base)
            if method == "PATCH" and body is not None:
                return self._patch(base, body)
        return _status(405, "MethodNotAllowed", f"{method} {base}")

    def _missing(self, path: str) -> Response:
        plural, name = path.rsplit("/", 2)[-2:]
        return _status(404, "NotFound", f'{plural} "{name}" not found')

    def _list(self, match: re.Match[str], selector: str) -> Response:
        prefix, namespace, plural = match.groups()
        items = []
        for path, obj in self.objects.items():
            found = _OBJECT.match(path)
            if not found or found[1] != prefix or found[3] != plural:
                continue
            if namespace is not None and found[2] != namespace:
                continue
            if namespace is None and plural not in CLUSTER_SCOPED and found[2] is None:
                continue
            if matches(selector, obj.get("metadata", {}).get("labels") or {}):
                items.append(copy.deepcopy(obj))
        return Response(200, {"kind": "List", "items": items})

    def _create(self, base: str, match: re.Match[str], body: dict[str, Any]) -> Response:
        _, namespace, plural = match.groups()
        if namespace is not None and f"/api/v1/namespaces/{namespace}" not in self.objects:
            return _status(404, "NotFound", f'namespaces "{namespace}" not found')
        name = body.get("metadata", {}).get("name", "")
        path = f"{base}/{name}"
        if path in self.objects:
            return _status(409, "AlreadyExists", f'{plural} "{name}" already exists')
        self._serial += 1
        obj = copy.deepcopy(body)
        metadata = obj.setdefault("metadata", {})
        metadata.update(uid=f"uid-{self._serial}", creationTimestamp=f"2026-11-25T10:{self._serial:02d}:00Z")  # fmt: skip
        if namespace is not None:
            metadata["namespace"] = namespace
        self.objects[path] = obj
        if plural == "pods":
            self._start_pod(path, obj)
        elif plural == "mpijobs":
            self._start_job(base, obj)
        return Response(201, copy.deepcopy(obj))

    def _start_pod(self, path: str, pod: dict[str, Any]) -> None:
        script = self.on_pod(copy.deepcopy(pod))
        status: dict[str, Any] = {"phase": script.phase}
        if script.waiting:
            status["containerStatuses"] = [{"name": "verify", "state": {"waiting": {"reason": script.waiting, "message": "Back-off pulling image"}}}]  # fmt: skip
        if script.phase != "Pending":
            pod["spec"]["nodeName"] = script.node or _first_host(pod)
        if script.phase == "Failed" and not script.started:
            status["reason"] = "DeadlineExceeded"
        pod["status"] = status
        if script.started:
            self.logs[path] = script.log

    def _start_job(self, base: str, job: dict[str, Any]) -> None:
        script = self.on_mpijob(copy.deepcopy(job))
        job["status"] = {"conditions": [{"type": c, "status": "True"} for c in script.conditions]}
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        finished = {"Succeeded", "Failed"} & set(script.conditions)
        launcher = f"{name}-launcher-x7k2p"
        path = f"/api/v1/namespaces/{namespace}/pods/{launcher}"
        self.objects[path] = {
            "metadata": {
                "name": launcher,
                "namespace": namespace,
                "creationTimestamp": "2026-11-25T11:00:00Z",
                "labels": {
                    "training.kubeflow.org/job-name": name,
                    "training.kubeflow.org/job-role": "launcher",
                },
            },
            "spec": {"containers": [{"name": "launcher"}]},
            "status": {
                "phase": "Succeeded"
                if "Succeeded" in finished
                else "Failed"
                if finished
                else "Running"
            },  # fmt: skip
        }
        self.logs[path] = script.launcher_log

    def _log(self, pod_path: str, params: dict[str, str]) -> Response:
        pod = self.objects.get(pod_path)
        if pod is None:
            return self._missing(pod_path)
        names = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        if params.get("container") not in names:
            return _status(400, "BadRequest", f"container {params.get('container')} is not valid")
        if pod.get("status", {}).get("phase") == "Pending" or pod_path not in self.logs:
            return _status(400, "BadRequest", "container is waiting to start: ContainerCreating")
        return Response(200, {}, self.logs.get(pod_path, ""))

    def _delete(self, path: str) -> Response:
        found = self.objects.pop(path, None)
        if found is None:
            return self._missing(path)
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            namespace = path.rsplit("/", 1)[1]
            inside = [p for p in self.objects if f"/namespaces/{namespace}/" in p]
            for gone in inside:
                del self.objects[gone]
        return Response(200, found)

    def _patch(self, path: str, body: dict[str, Any]) -> Response:
        found = self.objects.get(path)
        if found is None:
            return self._missing(path)
        _merge(found, body)
        return Response(200, copy.deepcopy(found))


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _first_host(pod: dict[str, Any]) -> str | None:
    terms = (
        pod.get("spec", {})
        .get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    )
    for term in terms:
        for expression in term.get("matchExpressions", []):
            if expression.get("key") == "kubernetes.io/hostname" and expression.get("values"):
                return str(expression["values"][0])
    return "hyperpod-i-0anywhere00000000"

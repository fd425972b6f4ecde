#!/usr/bin/env python3
"""Estimate how long the first deploy of a synthesized cloud assembly takes, and what it waits for.

    python scripts/critical_path.py cdk.out [--concurrency 4] [--stack-overhead 0]

Pure Python on the assembly's JSON (``manifest.json`` and the templates): no CDK, no AWS.

Two schedules of the same resources, with the same creation times (``CREATION_MINUTES``):

- **estimate**: what ``cdk deploy --all --concurrency N`` and CloudFormation do. A stack starts
  only when every stack it depends on (``manifest.json``) is complete, and while fewer than N
  stacks are deploying; inside a stack, a resource starts as soon as the resources it depends on
  are complete. A stack is complete when all its resources are: that is the *stack barrier*.
- **ideal**: the same resources with no stack barriers: each resource starts as soon as the
  resources it really depends on are complete, wherever they live (one big template, unlimited
  concurrency).

Resource dependencies come from each template: ``DependsOn``, ``Ref``, ``Fn::GetAtt`` and
``Fn::Sub`` references, and cross-stack references, which are followed to the resources the
producing stack's output reads: ``Fn::ImportValue`` (through the matching ``Export``) and
``Fn::GetStackOutput`` (the weak references this app uses,
``@aws-cdk/core:defaultCrossStackReferences: weak``).

One constraint is the same in both schedules, because it is FSx's and not the stacks': FSx
creates the data repository associations of a file system one at a time, so the DRAs of one file
system never overlap (``serialization_key``).

The deploy time is when the last resource is complete (the makespan). The critical path is the
chain of waits that ends there, walked back from the last resource: each step names what it
waited for (a resource, a stack barrier, a free ``--concurrency`` slot, or a DRA of the same file
system).

Containment (SPEC section 5) is a barrier chosen on purpose: a stack that holds what may fail on
its own (the Slurm metrics stack) starts only once the cluster stack is complete, so that its
failure rolls back only itself. Such a stack says so in its template (``Metadata`` key
``hyperpod-cdk:contained``, with the reason): the ideal keeps its stack dependencies too, so the
comparison measures only the waits nobody chose.

A need that the templates do not show is invisible to the ideal: a cross-stack
``add_dependency``/``add_stack_dependency`` becomes a stack dependency only (CloudFormation has
no cross-stack ``DependsOn``). The estimate honours it through the barrier; the ideal cannot. To
make such a need count in the ideal, let the waiting resource read something of what it waits
for (an output that refers to it), so that it is a reference in the template.

Not modelled: asset publishing and the CLI's change-set round trips (``--stack-overhead`` adds
minutes per stack for the latter), rollbacks, service quotas, and creation times that depend on
sizes (bigger FSx, more HyperPod instances).
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# -- creation times --------------------------------------------------------------------------

# Typical CloudFormation creation times, in minutes: CREATE_IN_PROGRESS to CREATE_COMPLETE of a
# resource in a first deploy, as stack events show it. They are round, typical figures, not
# guarantees: what matters for the comparison is the long poles, and that estimate and ideal
# use the same table. The long poles and their sources:
#
# - FSx for Lustre (PERSISTENT_2, 1.2-2.4 TiB): 10-15 min. AWS workshops say "about 10 min" for a
#   small file system; with a KMS key, metadata configuration and bigger sizes 15 is typical.
#   Issue 7 uses ~15.
# - FSx data repository association: a few minutes each, and FSx works on one at a time per
#   file system (issue 7, SPEC section 5). Terraform's aws_fsx_data_repository_association has a
#   10-minute create timeout that users raise to 30 (aws-samples/
#   amazon-eks-machine-learning-with-terraform-and-kubeflow#112): 5 is a middle figure.
# - EKS control plane: the AWS::EKS::Cluster reference says creation "typically takes between 10
#   and 15 minutes"; 10 with the KMS envelope encryption and logging already in place.
# - HyperPod (AWS::SageMaker::Cluster): CloudFormation waits for the cluster to be InService,
#   i.e. instances launched, health checks run and lifecycle scripts done: ~20 min for a small
#   cluster (issue 7). More instances or deep health checks take longer; the same in both
#   schedules.
# - RDS for MySQL instance: 10-15 min single-AZ (Multi-AZ adds the standby: see
#   ``creation_minutes``); an Aurora cluster without instances a few minutes.
# - NAT gateway: pending -> available in 1-2 min; an interface VPC endpoint about the same
#   (its network interfaces); a gateway endpoint is a route-table entry.
# - Custom resources run a Lambda function: a cold start plus the API calls, ~1 min (the
#   kubectl handler of aws-eks-v2 downloads its layer on a cold start; a BucketDeployment copies
#   the assets). A Lambda function in a VPC waits for its Hyperplane network interfaces, ~2 min.
# - IAM: a role or policy is created in seconds, but CloudFormation waits for it to propagate
#   (~15-20 s); an instance profile is known to take ~2 min.
# - KMS key: created in seconds; CloudFormation waits ~1 min before reporting it complete.
# - Everything else (VPC, subnets, routes, security groups, buckets, log groups, parameters):
#   seconds; ``DEFAULT_MINUTES``.
CREATION_MINUTES: dict[str, float] = {
    "AWS::FSx::FileSystem": 15.0,
    "AWS::FSx::DataRepositoryAssociation": 5.0,
    "AWS::EKS::Cluster": 10.0,
    "AWS::SageMaker::Cluster": 20.0,
    "AWS::RDS::DBInstance": 12.0,
    "AWS::RDS::DBCluster": 5.0,
    "AWS::EC2::NatGateway": 2.0,
    # EKS add-ons: ACTIVE in 1-2 min (the ones that need nodes are deployed once nodes exist)
    "AWS::EKS::Addon": 2.0,
    "AWS::EKS::Nodegroup": 8.0,
    "AWS::EKS::AccessEntry": 0.25,
    "AWS::EKS::PodIdentityAssociation": 0.25,
    # Amazon Managed Service for Prometheus workspace: CREATING -> ACTIVE in about a minute
    "AWS::APS::Workspace": 1.0,
    "AWS::KMS::Key": 1.0,
    "AWS::IAM::Role": 0.3,
    "AWS::IAM::Policy": 0.3,
    "AWS::IAM::ManagedPolicy": 0.3,
    "AWS::IAM::InstanceProfile": 2.0,
    "AWS::Lambda::Function": 0.5,
    "AWS::Lambda::LayerVersion": 0.3,
    "AWS::CloudFormation::CustomResource": 1.0,
    "AWS::CDK::Metadata": 0.0,
    "AWS::SecretsManager::Secret": 0.25,
    "AWS::EC2::VPCEndpoint": 0.25,  # a gateway endpoint; interface: INTERFACE_ENDPOINT_MINUTES
}
CUSTOM_RESOURCE_MINUTES = 1.0  # any Custom::* type
INTERFACE_ENDPOINT_MINUTES = 2.0
VPC_LAMBDA_MINUTES = 2.0
MULTI_AZ_DB_INSTANCE_MINUTES = 18.0
DEFAULT_MINUTES = 0.25

DRA_TYPE = "AWS::FSx::DataRepositoryAssociation"
HYPERPOD_TYPE = "AWS::SageMaker::Cluster"


def creation_minutes(resource_type: str, properties: Mapping[str, Any] | None = None) -> float:
    """Typical creation time of one resource, from its type (and a few of its properties)."""
    props = properties or {}
    if resource_type == "AWS::EC2::VPCEndpoint" and props.get("VpcEndpointType") in (
        "Interface",
        "GatewayLoadBalancer",
    ):
        return INTERFACE_ENDPOINT_MINUTES
    if resource_type == "AWS::Lambda::Function" and props.get("VpcConfig"):
        return VPC_LAMBDA_MINUTES
    if resource_type == "AWS::RDS::DBInstance" and props.get("MultiAZ") is True:
        return MULTI_AZ_DB_INSTANCE_MINUTES
    if resource_type.startswith("Custom::"):
        return CUSTOM_RESOURCE_MINUTES
    return CREATION_MINUTES.get(resource_type, DEFAULT_MINUTES)


# -- the assembly as a graph -----------------------------------------------------------------

Node = tuple[str, str]  # (stack name, logical id)


@dataclass(frozen=True)
class Resource:
    """One resource of the assembly, with what it waits for."""

    stack: str
    logical_id: str
    type: str
    minutes: float
    depends_on: frozenset[Node]
    # resources with the same key are created one at a time (the DRAs of one file system)
    serialization_key: str | None = None

    @property
    def node(self) -> Node:
        return (self.stack, self.logical_id)


# a template-level Metadata key: the stack waits for its dependencies on purpose (containment)
CONTAINED_METADATA = "hyperpod-cdk:contained"


@dataclass(frozen=True)
class Stack:
    name: str
    dependencies: tuple[str, ...]
    resources: tuple[Resource, ...]
    # its barrier is by design: the ideal keeps it too (CONTAINED_METADATA)
    contained: bool = False


@dataclass
class Assembly:
    """The stacks of a cloud assembly, in manifest order, and what could not be resolved."""

    stacks: dict[str, Stack]
    unresolved: list[str] = field(default_factory=list)

    def resources(self) -> Iterator[Resource]:
        for stack in self.stacks.values():
            yield from stack.resources

    def resource(self, node: Node) -> Resource:
        return next(r for r in self.stacks[node[0]].resources if r.logical_id == node[1])


_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class _Resolver:
    """Finds the resources a template value references, across stacks."""

    def __init__(self, templates: Mapping[str, Mapping[str, Any]]) -> None:
        self.templates = templates
        self.unresolved: list[str] = []
        self.exports: dict[str, tuple[str, str]] = {}
        for stack, template in templates.items():
            for output_id, output in (template.get("Outputs") or {}).items():
                name = (output.get("Export") or {}).get("Name")
                literal = _literal(name, stack)
                if literal is not None:
                    self.exports[literal] = (stack, output_id)

    def references(self, stack: str, value: Any, _seen: frozenset[str] = frozenset()) -> set[Node]:
        """The resources (stack, logical id) that ``value``, in ``stack``'s template, reads."""
        resources = self.templates[stack].get("Resources") or {}
        found: set[Node] = set()
        if isinstance(value, list):
            for item in value:
                found |= self.references(stack, item, _seen)
            return found
        if not isinstance(value, dict):
            return found
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                if arg in resources:
                    found.add((stack, arg))
            elif key == "Fn::GetAtt":
                target = arg[0] if isinstance(arg, list) else str(arg).split(".", 1)[0]
                if isinstance(target, str) and target in resources:
                    found.add((stack, target))
                elif isinstance(arg, list):  # an attribute name given by an intrinsic
                    found |= self.references(stack, arg[1:], _seen)
            elif key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                for name in _SUB_VARIABLE.findall(text):
                    target = name.split(".", 1)[0]
                    if target not in variables and target in resources:
                        found.add((stack, target))
                found |= self.references(stack, variables, _seen)
            elif key == "Fn::ImportValue":
                name = _literal(arg, stack)
                if name is not None and name in self.exports:
                    found |= self._output(*self.exports[name], _seen)
                else:
                    self.unresolved.append(f"{stack}: Fn::ImportValue {json.dumps(arg)}")
            elif key == "Fn::GetStackOutput" and isinstance(arg, dict):
                producer = _literal(arg.get("StackName"), stack)
                output = _literal(arg.get("OutputName"), stack)
                if producer is not None and producer in self.templates and output is not None:
                    found |= self._output(producer, output, _seen)
                else:
                    self.unresolved.append(f"{stack}: Fn::GetStackOutput {json.dumps(arg)}")
            else:
                found |= self.references(stack, arg, _seen)
        return found

    def _output(self, stack: str, output_id: str, seen: frozenset[str]) -> set[Node]:
        key = f"{stack}/{output_id}"
        output = (self.templates[stack].get("Outputs") or {}).get(output_id)
        if output is None or key in seen:
            self.unresolved.append(
                f"output {key} not found" if output is None else f"loop at {key}"
            )
            return set()
        return self.references(stack, output.get("Value"), seen | {key})


def _literal(value: Any, stack: str) -> str | None:
    """The string a simple intrinsic evaluates to (literal, Fn::Join, Fn::Sub of the stack name)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref" and arg == "AWS::StackName":
            return stack
        if key == "Fn::Join" and isinstance(arg, list) and len(arg) == 2:
            parts = [_literal(part, stack) for part in arg[1]]
            return None if None in parts else str(arg[0]).join(p for p in parts if p is not None)
        if key == "Fn::Sub" and isinstance(arg, str):
            text = arg.replace("${AWS::StackName}", stack)
            return None if _SUB_VARIABLE.search(text) else text
    return None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def from_templates(
    templates: Mapping[str, Mapping[str, Any]],
    dependencies: Mapping[str, Iterable[str]] | None = None,
) -> Assembly:
    """An :class:`Assembly` from templates (by stack name, in deploy order) and stack dependencies.

    A resource may carry ``"Minutes"`` next to ``"Type"`` to override its creation time (tests).
    """
    resolver = _Resolver(templates)
    stacks: dict[str, Stack] = {}
    for name, template in templates.items():
        resources = template.get("Resources") or {}
        built = []
        for logical_id, definition in resources.items():
            depends = {(name, d) for d in _as_list(definition.get("DependsOn", [])) if d}
            body = {k: v for k, v in definition.items() if k != "DependsOn"}
            depends |= resolver.references(name, body)
            depends.discard((name, logical_id))
            resource_type = str(definition.get("Type", ""))
            properties = definition.get("Properties") or {}
            minutes = definition.get("Minutes")
            built.append(
                Resource(
                    stack=name,
                    logical_id=logical_id,
                    type=resource_type,
                    minutes=float(minutes)
                    if minutes is not None
                    else creation_minutes(resource_type, properties),
                    depends_on=frozenset(depends),
                    serialization_key=_serialization_key(resolver, name, resource_type, properties),
                )
            )
        stacks[name] = Stack(
            name=name,
            dependencies=tuple(d for d in (dependencies or {}).get(name, ()) if d in templates),
            resources=tuple(built),
            contained=bool((template.get("Metadata") or {}).get(CONTAINED_METADATA)),
        )
    return Assembly(stacks, unresolved=resolver.unresolved)


def _serialization_key(
    resolver: _Resolver, stack: str, resource_type: str, properties: Mapping[str, Any]
) -> str | None:
    """DRAs of one file system share a key: the file system resource, else its literal id."""
    if resource_type != DRA_TYPE:
        return None
    value = properties.get("FileSystemId")
    targets = sorted(resolver.references(stack, value))
    if len(targets) == 1:
        return "file-system:" + "/".join(targets[0])
    return "file-system:" + json.dumps(value, sort_keys=True)


def load_assembly(outdir: str | Path) -> Assembly:
    """The stacks of a synthesized cloud assembly directory (``cdk.out``), in manifest order."""
    outdir = Path(outdir)
    manifest = json.loads((outdir / "manifest.json").read_text(encoding="utf-8"))
    artifacts = manifest.get("artifacts", {})
    stacks = {
        artifact_id: artifact
        for artifact_id, artifact in artifacts.items()
        if artifact.get("type") == "aws:cloudformation:stack"
    }
    names = {
        artifact_id: (a.get("properties") or {}).get("stackName")
        or a.get("displayName")
        or artifact_id
        for artifact_id, a in stacks.items()
    }
    templates: dict[str, dict[str, Any]] = {}
    dependencies: dict[str, list[str]] = {}
    for artifact_id, artifact in stacks.items():
        name = names[artifact_id]
        template_file = artifact["properties"]["templateFile"]
        templates[name] = json.loads((outdir / template_file).read_text(encoding="utf-8"))
        dependencies[name] = [names[d] for d in artifact.get("dependencies", []) if d in names]
    return from_templates(templates, dependencies)


# -- the schedules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of a critical path: a resource created, or a stack that waited to start."""

    kind: str  # "resource" | "stack"
    stack: str
    logical_id: str  # "" for a stack step
    type: str
    start: float
    end: float
    waited_for: str  # why it could not start earlier

    def label(self) -> str:
        if self.kind == "stack":
            return f"{self.stack} (stack starts)"
        return f"{self.stack}/{self.logical_id} ({self.type})"


@dataclass
class Schedule:
    """Start and end of every resource (and stack) in one schedule, and its critical path."""

    mode: str  # "estimate" | "ideal"
    start: dict[Node, float]
    end: dict[Node, float]
    stack_start: dict[str, float]
    stack_end: dict[str, float]
    path: list[Step]

    @property
    def minutes(self) -> float:
        return max(self.end.values(), default=0.0)


# What delayed a start: ("resource", node) | ("stack-start", name) | ("stack-done", name) | None
_Cause = tuple[str, Any] | None


def schedule(
    assembly: Assembly,
    *,
    barriers: bool = True,
    concurrency: int | None = 4,
    stack_overhead: float = 0.0,
) -> Schedule:
    """Simulate a first deploy of every stack (see the module docstring).

    ``barriers=False`` is the ideal: every stack "starts" at 0 with no limit and no overhead, so
    only resource dependencies (and the DRA serialization) order the resources, except that a
    contained stack still starts only once the stacks it depends on are complete.
    """

    def barrier(name: str) -> bool:
        return barriers or assembly.stacks[name].contained

    if not barriers:
        concurrency, stack_overhead = None, 0.0
    if concurrency is not None and concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    stacks = assembly.stacks
    order = {name: index for index, name in enumerate(stacks)}
    resources = {r.node: r for r in assembly.resources()}
    position = {node: index for index, node in enumerate(resources)}
    for node, resource in resources.items():
        missing = [d for d in resource.depends_on if d not in resources]
        if missing:
            raise ValueError(f"{node}: depends on unknown resources {missing}")

    start: dict[Node, float] = {}
    end: dict[Node, float] = {}
    cause: dict[Node, _Cause] = {}
    stack_start: dict[str, float] = {}
    stack_end: dict[str, float] = {}
    stack_ready: dict[str, float] = {}  # when its dependencies were done
    stack_cause: dict[str, _Cause] = {}
    done_cause: dict[str, _Cause] = {}
    locks: dict[str, Node] = {}  # serialization key -> the resource holding it
    released: dict[str, tuple[float, Node]] = {}  # key -> (time, last holder)
    events: list[tuple[float, int, str, Any]] = []  # (time, seq, kind, payload)
    seq = 0
    now = 0.0
    last_stack_done: tuple[float, str] | None = None

    def push(time: float, kind: str, payload: Any) -> None:
        nonlocal seq
        heapq.heappush(events, (time, seq, kind, payload))
        seq += 1

    def deps_done(name: str) -> bool:
        return all(d in stack_end for d in stacks[name].dependencies)

    def start_stacks() -> None:
        waiting = [n for n in stacks if n not in stack_start and (not barrier(n) or deps_done(n))]
        for name in waiting:
            if name not in stack_ready:
                stack_ready[name] = now
                deps = stacks[name].dependencies if barrier(name) else ()
                latest = max(deps, key=lambda d: (stack_end[d], -order[d]), default=None)
                stack_cause[name] = ("stack-done", latest) if latest else None
        waiting.sort(key=lambda n: (stack_ready[n], order[n]))
        for name in waiting:
            running = sum(1 for s in stack_start if s not in stack_end)
            if concurrency is not None and running >= concurrency:
                break
            stack_start[name] = now
            if stack_ready[name] < now and last_stack_done is not None:
                stack_cause[name] = ("stack-done", last_stack_done[1])  # waited for a slot
            push(now + stack_overhead, "stack-open", name)

    opened: set[str] = set()

    def start_resources() -> None:
        ready = []
        for node, resource in resources.items():
            if node in start or resource.stack not in opened:
                continue
            if all(d in end for d in resource.depends_on):
                ready.append(node)
        # a resource waiting for a serialization key goes in the order it became ready
        ready.sort(key=lambda n: (_ready_time(n), position[n]))
        for node in ready:
            key = resources[node].serialization_key
            if key is not None and key in locks:
                continue
            start[node] = now
            cause[node] = _start_cause(node, key)
            if key is not None:
                locks[key] = node
            push(now + resources[node].minutes, "resource-done", node)

    def _ready_time(node: Node) -> float:
        resource = resources[node]
        opened_at = stack_start[resource.stack] + stack_overhead
        return max([opened_at, *(end[d] for d in resource.depends_on)])

    def _start_cause(node: Node, key: str | None) -> _Cause:
        resource = resources[node]
        opened_at = stack_start[resource.stack] + stack_overhead
        latest = max(resource.depends_on, key=lambda d: (end[d], -position[d]), default=None)
        candidates: list[tuple[float, int, _Cause]] = [
            (opened_at, 0, ("stack-start", resource.stack))
        ]
        if latest is not None:
            candidates.append((end[latest], 1, ("resource", latest)))
        if key is not None and key in released:
            candidates.append((released[key][0], 2, ("resource", released[key][1])))
        _, _, chosen = max(candidates, key=lambda c: (c[0], c[1]))
        if chosen == ("stack-start", resource.stack) and not barrier(resource.stack):
            return None
        return chosen

    def finish_stacks() -> None:
        nonlocal last_stack_done
        for name in stacks:
            if name in stack_end or name not in opened:
                continue
            members = stacks[name].resources
            if all(r.node in end for r in members):
                stack_end[name] = now
                last = max(members, key=lambda r: (end[r.node], -position[r.node]), default=None)
                done_cause[name] = ("resource", last.node) if last else ("stack-start", name)
                last_stack_done = (now, name)

    while True:
        start_stacks()
        start_resources()
        if not events:
            break
        now = events[0][0]
        batch = []
        while events and events[0][0] == now:
            _, _, kind, payload = heapq.heappop(events)
            batch.append((kind, payload))
        for kind, payload in batch:
            if kind == "stack-open":
                opened.add(payload)
            else:
                end[payload] = now
                key = resources[payload].serialization_key
                if key is not None and locks.get(key) == payload:
                    del locks[key]
                    released[key] = (now, payload)
        finish_stacks()

    missing = [n for n in resources if n not in end]
    if missing or len(stack_end) != len(stacks):
        raise ValueError(f"the deploy cannot finish (a dependency cycle?): {missing[:5]}")

    path = _critical_path(
        resources, start, end, cause, stack_start, stack_cause, done_cause, barrier
    )
    return Schedule(
        mode="estimate" if barriers else "ideal",
        start=start,
        end=end,
        stack_start=stack_start,
        stack_end=stack_end,
        path=path,
    )


def _critical_path(
    resources: Mapping[Node, Resource],
    start: Mapping[Node, float],
    end: Mapping[Node, float],
    cause: Mapping[Node, _Cause],
    stack_start: Mapping[str, float],
    stack_cause: Mapping[str, _Cause],
    done_cause: Mapping[str, _Cause],
    barrier: Callable[[str], bool],
) -> list[Step]:
    if not end:
        return []
    position = {node: index for index, node in enumerate(resources)}
    last = max(end, key=lambda n: (end[n], -position[n]))
    steps: list[Step] = []
    current: _Cause = ("resource", last)
    seen: set[Any] = set()
    while current is not None and current not in seen:
        seen.add(current)
        kind, payload = current
        if kind == "resource":
            resource = resources[payload]
            nxt = cause[payload]
            steps.append(
                Step(
                    "resource",
                    resource.stack,
                    resource.logical_id,
                    resource.type,
                    start[payload],
                    end[payload],
                    _describe(nxt, resources, resource),
                )
            )
            current = nxt
        elif kind == "stack-start":
            nxt = stack_cause.get(payload)
            if barrier(payload):
                steps.append(
                    Step("stack", payload, "", "", stack_start[payload], stack_start[payload],
                         _describe(nxt, resources, None))
                )  # fmt: skip
            current = nxt
        else:  # "stack-done": the stack's last resource
            current = done_cause[payload]
    steps.reverse()
    return steps


def _describe(cause: _Cause, resources: Mapping[Node, Resource], resource: Resource | None) -> str:
    if cause is None:
        return "nothing"
    kind, payload = cause
    if kind == "resource":
        other = resources[payload]
        same_key = (
            resource is not None
            and resource.serialization_key is not None
            and other.serialization_key == resource.serialization_key
            and payload not in resource.depends_on
        )
        what = "the previous DRA of the file system" if same_key else "dependency"
        return f"{what} {other.stack}/{other.logical_id}"
    if kind == "stack-start":
        return f"stack {payload} to start"
    return f"stack {payload} to complete"


# -- what the issue asks -----------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """Estimate and ideal of one assembly, and what waits for what."""

    estimate: Schedule
    ideal: Schedule
    dras_before_cluster: tuple[Node, ...]  # DRAs the HyperPod cluster waits for (estimate)
    unresolved: tuple[str, ...]

    @property
    def over_ideal(self) -> float:
        """How much longer than the ideal the estimate is, as a fraction (0.05 = 5%)."""
        if self.ideal.minutes == 0:
            return 0.0
        return self.estimate.minutes / self.ideal.minutes - 1.0


def waits_for(assembly: Assembly, node: Node, *, barriers: bool = True) -> set[Node]:
    """Every resource that must be complete before ``node`` starts.

    With ``barriers``, a resource also waits for every resource of every stack its stack depends
    on (transitively), as CloudFormation stack dependencies make it.
    """
    resources = {r.node: r for r in assembly.resources()}
    found: set[Node] = set()
    todo = [node]
    while todo:
        current = todo.pop()
        before = set(resources[current].depends_on)
        if barriers:
            for dependency in assembly.stacks[current[0]].dependencies:
                before |= {r.node for r in assembly.stacks[dependency].resources}
        for item in before - found:
            found.add(item)
            todo.append(item)
    return found


def analyse(
    assembly: Assembly, *, concurrency: int | None = 4, stack_overhead: float = 0.0
) -> Report:
    """Estimate and ideal of one assembly, and the DRAs on the HyperPod cluster's path."""
    estimate = schedule(assembly, concurrency=concurrency, stack_overhead=stack_overhead)
    ideal = schedule(assembly, barriers=False)
    clusters = [r.node for r in assembly.resources() if r.type == HYPERPOD_TYPE]
    before: set[Node] = set()
    for cluster in clusters:
        before |= waits_for(assembly, cluster)
    dras = tuple(sorted(n for n in before if assembly.resource(n).type == DRA_TYPE))
    return Report(estimate, ideal, dras, tuple(assembly.unresolved))


# -- command line ----------------------------------------------------------------------------


def format_path(steps: Iterable[Step], *, indent: str = "  ") -> str:
    """The critical path as a table: start, end, duration, step, and what it waited for."""
    lines = [f"{indent}{'start':>6} {'end':>6} {'min':>5}  step (waited for)"]
    for step in steps:
        lines.append(
            f"{indent}{step.start:6.2f} {step.end:6.2f} {step.end - step.start:5.2f}  "
            f"{step.label()}  <- {step.waited_for}"
        )
    return "\n".join(lines)


def summarize_path(steps: Iterable[Step]) -> str:
    """The critical path on one line: each stack with the resource types it waited on, in order.

    ``env-network: EC2::VPC 0.25, EC2::NatGateway 2 > env-storage: FSx::FileSystem 15 > ...``
    """
    parts: list[tuple[str, list[str]]] = []
    for step in steps:
        if not parts or parts[-1][0] != step.stack:
            parts.append((step.stack, []))
        if step.kind == "resource":
            minutes = round(step.end - step.start, 2)
            parts[-1][1].append(f"{step.type.removeprefix('AWS::')} {minutes:g}")
    return " > ".join(f"{stack}: {', '.join(items) or '-'}" for stack, items in parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("outdir", type=Path, help="a synthesized cloud assembly (cdk.out)")
    parser.add_argument("--concurrency", type=int, default=4, help="cdk deploy --concurrency")
    parser.add_argument(
        "--stack-overhead",
        type=float,
        default=0.0,
        help="minutes per stack before its first resource starts (change set); default 0",
    )
    args = parser.parse_args(argv)
    report = analyse(
        load_assembly(args.outdir),
        concurrency=args.concurrency,
        stack_overhead=args.stack_overhead,
    )
    print(
        f"estimate {report.estimate.minutes:.1f} min, ideal {report.ideal.minutes:.1f} min, "
        f"{report.over_ideal:+.1%} over the ideal"
    )
    print(f"path (estimate): {summarize_path(report.estimate.path)}")
    print(f"path (ideal): {summarize_path(report.ideal.path)}")
    print("critical path (estimate):")
    print(format_path(report.estimate.path))
    print("critical path (ideal):")
    print(format_path(report.ideal.path))
    dras = ", ".join("/".join(n) for n in report.dras_before_cluster) or "none"
    print(f"DRAs the HyperPod cluster waits for: {dras}")
    for item in report.unresolved:
        print(f"warning: unresolved reference: {item}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

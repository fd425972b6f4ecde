"""Which template changes make CloudFormation replace or delete a resource, read from the resource
schemas that cfn-lint ships (``cfnlint/data/schemas``), and a comparison of two synthesized
environments built on them (the update notes and the data-safety tests).

CloudFormation replaces a resource when a property listed in its schema's
``createOnlyProperties`` changes, and deletes it when its logical id leaves the stack (a renamed
construct, a resource moved to another stack). A create-only value that is a reference also
changes when the resource it points to is replaced (its id changes), so references are followed:
``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::ImportValue`` and the app's weak cross-stack
references ``Fn::GetStackOutput`` (to the producing stack's output, then on from its value).

Templates are plain dicts keyed by stack name, so the comparison runs on hand-made templates too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from hyperpod_cdk.facts.cloudformation import SUPPLEMENTARY_CREATE_ONLY as SUPPLEMENTARY_CREATE_ONLY

# A template per stack name.
Templates = Mapping[str, Mapping[str, Any]]

# Resources whose loss loses data or the environment itself, and why each is on the list.
STATEFUL_TYPES: dict[str, str] = {
    "AWS::FSx::FileSystem": "the shared file system: its data",
    "AWS::FSx::DataRepositoryAssociation": "the S3 link of a file system path; re-creating one "
    "re-imports the metadata and drops what was not exported yet",
    "AWS::S3::Bucket": "objects (data sets, checkpoints, access logs, lifecycle scripts)",
    "AWS::RDS::DBCluster": "the Slurm accounting database",
    "AWS::RDS::DBInstance": "the Slurm accounting database",
    "AWS::SecretsManager::Secret": "the accounting database credentials",
    "AWS::KMS::Key": "a key that encrypts data: without it the data cannot be read",
    "AWS::EKS::Cluster": "the Kubernetes control plane and everything deployed on it",
    "AWS::SageMaker::Cluster": "the HyperPod cluster: its nodes and their local state",
    "AWS::Logs::LogGroup": "logs kept for audit (flow logs, handler logs)",
    "AWS::APS::Workspace": "the Prometheus metrics history of the observability add-on",
    # security review L9: what people make in Grafana (dashboards, alerts, users) lives only there
    "AWS::Grafana::Workspace": "the Grafana workspace: dashboards, alerts and users made in it",
}

# Resources that hold no data but whose replacement or deletion loses work in progress, for the
# update notes (the data-safety tests hold only STATEFUL_TYPES).
DISRUPTIVE_TYPES: dict[str, str] = {
    "AWS::SageMaker::ComputeQuota": "the team's quota: its namespace's queue and the jobs queued "
    "there go with it, and the new team starts empty",
    "AWS::SageMaker::ClusterSchedulerConfig": "the cluster policy: until the new one is active, "
    "no priority classes or fair share apply",
}

_MISSING = object()


@cache
def resource_schema(resource_type: str, region: str = "us-west-2") -> dict[str, Any] | None:
    """The CloudFormation resource schema cfn-lint ships for a type, or None (custom resources)."""
    from cfnlint.schema import (  # type: ignore[import-untyped]  # no py.typed
        PROVIDER_SCHEMA_MANAGER,
        ResourceNotFoundError,
    )

    try:
        schema: dict[str, Any] = PROVIDER_SCHEMA_MANAGER.get_resource_schema(
            region, resource_type
        ).schema
    except ResourceNotFoundError:
        return None
    return schema


def create_only_pointers(resource_type: str, region: str = "us-west-2") -> tuple[str, ...]:
    """The JSON pointers (``/properties/SubnetIds``) whose change replaces a resource of a type."""
    schema = resource_schema(resource_type, region) or {}
    pointers = list(schema.get("createOnlyProperties", []))
    pointers += [p for p in SUPPLEMENTARY_CREATE_ONLY.get(resource_type, ()) if p not in pointers]
    return tuple(pointers)


def pointer_value(resource: Mapping[str, Any], pointer: str) -> Any:
    """The value of a schema pointer in a template resource, ``MISSING`` if it is not set.

    ``/properties/A/B`` reads ``Properties.A.B``; a ``*`` step maps over a list.
    """
    steps = pointer.split("/")[1:]
    if not steps or steps[0] != "properties":
        raise ValueError(f"not a property pointer: {pointer}")
    return _follow(resource.get("Properties", {}), steps[1:])


def _follow(node: Any, steps: list[str]) -> Any:
    if not steps:
        return node
    step, rest = steps[0], steps[1:]
    if step == "*":
        if not isinstance(node, list):
            return _MISSING
        return [_follow(item, rest) for item in node]
    if isinstance(node, dict) and step in node:
        return _follow(node[step], rest)
    return _MISSING


def is_missing(value: Any) -> bool:
    return value is _MISSING


# -- references ------------------------------------------------------------------------------

_SUB_NAME = re.compile(r"\$\{(?!!)([^}]+)\}")


@dataclass(frozen=True)
class Reference:
    """A reference inside a template value: to a resource or parameter of the same stack
    (``Ref``/``Fn::GetAtt``/``Fn::Sub``), an output of another stack (``Fn::GetStackOutput``) or
    an export (``Fn::ImportValue`` with a literal name)."""

    kind: str  # "local", "output" or "export"
    name: str  # logical id, export name or output name
    stack: str | None = None  # the producing stack of an output

    def __str__(self) -> str:
        if self.kind == "output":
            return f"output {self.stack}.{self.name}"
        if self.kind == "export":
            return f"export {self.name}"
        return self.name


def references(value: Any) -> Iterator[Reference]:
    """Every reference in a template value (nested ones included)."""
    if isinstance(value, list):
        for item in value:
            yield from references(item)
        return
    if not isinstance(value, dict):
        return
    if len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref" and isinstance(arg, str):
            if not arg.startswith("AWS::"):
                yield Reference("local", arg)
            return
        if key == "Fn::GetAtt":
            target = arg[0] if isinstance(arg, list) else str(arg).split(".")[0]
            yield Reference("local", str(target))
            return
        if key == "Fn::GetStackOutput" and isinstance(arg, dict):
            yield Reference("output", str(arg["OutputName"]), str(arg["StackName"]))
            return
        if key == "Fn::ImportValue" and isinstance(arg, str):
            yield Reference("export", arg)
            return
        if key == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            for name in _SUB_NAME.findall(text):
                target = name.split(".")[0]
                if target not in variables and not target.startswith("AWS::"):
                    yield Reference("local", target)
            yield from references(variables)
            return
    for item in value.values():
        yield from references(item)


def _exports(templates: Templates) -> dict[str, tuple[str, Any]]:
    """Literal export name -> (producing stack, output value)."""
    found = {}
    for stack, template in templates.items():
        for output in template.get("Outputs", {}).values():
            name = output.get("Export", {}).get("Name")
            if isinstance(name, str):
                found[name] = (stack, output.get("Value"))
    return found


# -- comparison ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """A stateful resource of the first environment that the second one replaces or deletes."""

    stack: str
    logical_id: str
    resource_type: str
    problem: str

    def __str__(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.resource_type}): {self.problem}"


def _short(value: Any, limit: int = 300) -> str:
    text = "(not set)" if value is _MISSING else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Comparison:
    def __init__(self, before: Templates, after: Templates, region: str) -> None:
        self.before, self.after, self.region = before, after, region
        self._exports_before = _exports(before)
        self._exports_after = _exports(after)
        self._replaced: dict[tuple[str, str], str | None] = {}

    def replaced(self, stack: str, logical_id: str) -> str | None:
        """Why deploying ``after`` over ``before`` replaces or deletes a resource, or None."""
        key = (stack, logical_id)
        if key not in self._replaced:
            self._replaced[key] = None  # a reference cycle: judged by its other properties
            self._replaced[key] = self._why_replaced(stack, logical_id)
        return self._replaced[key]

    def _why_replaced(self, stack: str, logical_id: str) -> str | None:
        old = self.before[stack]["Resources"][logical_id]
        new = self.after.get(stack, {}).get("Resources", {}).get(logical_id)
        if new is None:
            moved = sorted(
                name
                for name, template in self.after.items()
                if template.get("Resources", {}).get(logical_id, {}).get("Type") == old["Type"]
            )
            where = f" (the id is now in {', '.join(moved)})" if moved else ""
            return f"removed from stack {stack}{where}"
        if new["Type"] != old["Type"]:
            return f"type changed from {old['Type']} to {new['Type']}"
        for pointer in create_only_pointers(old["Type"], self.region):
            was, now = pointer_value(old, pointer), pointer_value(new, pointer)
            if was != now:
                return f"create-only {pointer} changed: {_short(was)} -> {_short(now)}"
            if is_missing(was):
                continue
            for reference in references(was):
                why = self._reference_changed(stack, reference)
                if why:
                    return f"create-only {pointer} refers to {reference}, which {why}"
        return None

    def _reference_changed(self, stack: str, reference: Reference) -> str | None:
        """Why the value a reference resolves to changes, or None."""
        if reference.kind == "local":
            before, after = self.before[stack], self.after.get(stack, {})
            if reference.name in before.get("Parameters", {}):
                was = before["Parameters"][reference.name]
                now = after.get("Parameters", {}).get(reference.name, _MISSING)
                return None if was == now else f"changed: {_short(was)} -> {_short(now)}"
            if reference.name in before.get("Resources", {}):
                why = self.replaced(stack, reference.name)
                return f"is replaced ({why})" if why else None
            return None  # a condition or mapping name: compared as part of the value
        if reference.kind == "output":
            producer = str(reference.stack)
            was = self.before.get(producer, {}).get("Outputs", {}).get(reference.name)
            now = self.after.get(producer, {}).get("Outputs", {}).get(reference.name)
            if was is None:
                return None  # not produced by these templates (an adopted stack)
            return self._value_changed(producer, was.get("Value"), now)
        if reference.name not in self._exports_before:
            return None
        producer, value = self._exports_before[reference.name]
        if reference.name not in self._exports_after:
            return "is no longer exported"
        now_producer, now_value = self._exports_after[reference.name]
        if now_producer != producer:
            return f"is now exported by {now_producer}, not {producer}"
        return self._value_changed(producer, value, {"Value": now_value})

    def _value_changed(self, producer: str, was: Any, now: Mapping[str, Any] | None) -> str | None:
        if now is None:
            return "is removed"
        if now.get("Value") != was:
            return f"changed: {_short(was)} -> {_short(now.get('Value'))}"
        for inner in references(was):
            why = self._reference_changed(producer, inner)
            if why:
                return f"resolves through {inner} of {producer}, which {why}"
        return None


# how much of a resource a deletion policy keeps when CloudFormation deletes it: a change to a
# policy that keeps as much or more (Delete -> Retain) loses nothing; no policy keeps nothing
# (the default of most types; the RDS types' Snapshot default counts as nothing, to be safe)
_POLICY_KEEPS = {"Retain": 2, "RetainExceptOnCreate": 2, "Snapshot": 1, "Delete": 0}


def _keeps(policy: Any) -> int:
    return _POLICY_KEEPS.get(policy, 0) if isinstance(policy, str) else 0


def replacement_findings(
    before: Templates,
    after: Templates,
    *,
    types: Mapping[str, Any] | None = None,
    region: str = "us-west-2",
) -> list[Finding]:
    """Each stateful resource of ``before`` that deploying ``after`` would replace or delete.

    A resource is kept when ``after`` has it in the same stack, under the same logical id and
    type, with every create-only property unchanged (references included, followed to the
    resources and outputs they resolve to), and with the same DeletionPolicy and
    UpdateReplacePolicy.
    """
    stateful = STATEFUL_TYPES if types is None else types
    comparison = _Comparison(before, after, region)
    findings = []
    for stack, template in before.items():
        for logical_id, resource in template.get("Resources", {}).items():
            if resource["Type"] not in stateful:
                continue
            why = comparison.replaced(stack, logical_id)
            if why is None:
                new = after[stack]["Resources"][logical_id]
                why = "; ".join(
                    f"{policy} changed: {resource.get(policy)} -> {new.get(policy)}"
                    for policy in ("DeletionPolicy", "UpdateReplacePolicy")
                    if _keeps(new.get(policy)) < _keeps(resource.get(policy))
                )
            if why:
                findings.append(Finding(stack, logical_id, resource["Type"], why))
    return findings


# -- every change, for the update notes --------------------------------------------------------


@dataclass(frozen=True)
class ResourceChange:
    """What deploying ``after`` over ``before`` does to one resource of one stack.

    ``action`` is ``add``, ``update`` (in place), ``replace`` (CloudFormation creates the new
    resource, then deletes the old one) or ``delete``. A resource whose logical id changed is a
    ``replace`` from ``logical_id`` (the old id) to ``new_logical_id`` when the stack loses and
    gains exactly one resource of that type.
    """

    stack: str
    logical_id: str
    resource_type: str
    action: str
    why: str = ""
    new_logical_id: str | None = None

    @property
    def stateful(self) -> str | None:
        """What is lost with the old resource when it is replaced or deleted (STATEFUL_TYPES)."""
        if self.action in ("replace", "delete"):
            return STATEFUL_TYPES.get(self.resource_type)
        return None

    @property
    def disruption(self) -> str | None:
        """What work in progress is lost when it is replaced or deleted (DISRUPTIVE_TYPES)."""
        if self.action in ("replace", "delete"):
            return DISRUPTIVE_TYPES.get(self.resource_type)
        return None


def _comparable(resource: Mapping[str, Any]) -> dict[str, Any]:
    """A resource without its construct-path metadata (a refactor moves it, CloudFormation
    ignores it)."""
    return {key: value for key, value in resource.items() if key != "Metadata"}


def resource_changes(
    before: Templates, after: Templates, *, region: str = "us-west-2"
) -> list[ResourceChange]:
    """Every resource that deploying ``after`` over ``before`` adds, updates, replaces or deletes,
    stack by stack (in the order of ``after``, then stacks only ``before`` has), each stack's
    resources in logical-id order.

    A resource whose own text is unchanged is still a ``replace`` when a create-only property
    refers (``Ref``, ``Fn::GetAtt``, ``Fn::GetStackOutput``, ``Fn::ImportValue``, a parameter)
    to a resource that is replaced, in whatever stack that one lives, transitively."""
    comparison = _Comparison(before, after, region)
    changes: list[ResourceChange] = []
    stacks = [*after, *(name for name in before if name not in after)]
    for stack in stacks:
        old = before.get(stack, {}).get("Resources", {})
        new = after.get(stack, {}).get("Resources", {})
        gone = sorted(set(old) - set(new))
        added = sorted(set(new) - set(old))
        # one resource of a type lost and one gained: the same thing under a new id
        renamed: dict[str, str] = {}
        for type_name in sorted({old[i]["Type"] for i in gone}):
            lost = [i for i in gone if old[i]["Type"] == type_name]
            gained = [i for i in added if new[i]["Type"] == type_name]
            if len(lost) == 1 and len(gained) == 1:
                renamed[lost[0]] = gained[0]
        for logical_id in sorted(set(old) | set(new)):
            if logical_id in renamed.values():
                continue
            if logical_id in renamed:
                changes.append(
                    ResourceChange(
                        stack,
                        logical_id,
                        old[logical_id]["Type"],
                        "replace",
                        "its logical id changes: CloudFormation creates "
                        f"{renamed[logical_id]}, then deletes {logical_id}",
                        new_logical_id=renamed[logical_id],
                    )
                )
            elif logical_id not in new:
                changes.append(
                    ResourceChange(
                        stack,
                        logical_id,
                        old[logical_id]["Type"],
                        "delete",
                        "no longer in the stack",
                    )
                )
            elif logical_id not in old:
                changes.append(ResourceChange(stack, logical_id, new[logical_id]["Type"], "add"))
            else:
                # also a resource whose text is the same: a create-only reference to a resource
                # replaced elsewhere (another stack's output, an export) replaces it too
                why = comparison.replaced(stack, logical_id)
                resource_type = new[logical_id]["Type"]
                if why is not None:
                    changes.append(ResourceChange(stack, logical_id, resource_type, "replace", why))
                elif _comparable(old[logical_id]) != _comparable(new[logical_id]):
                    changes.append(
                        ResourceChange(
                            stack,
                            logical_id,
                            resource_type,
                            "update",
                            _update_reason(resource_type),
                        )
                    )
    return changes


def _update_reason(resource_type: str) -> str:
    if (
        resource_type.startswith("Custom::")
        or resource_type == "AWS::CloudFormation::CustomResource"
    ):
        return "a custom resource: its handler decides how the change is applied"
    return ""

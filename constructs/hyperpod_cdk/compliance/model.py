"""The synthesized app as the HyperPod rules see it: every template of the cloud assembly.

The rules judge the templates, not the L1 properties of the constructs: only the templates
hold property overrides (``add_property_override``) and the final shape of cross-stack
references. A reference is followed to the resource that produces the value:

- ``Fn::GetStackOutput`` (CDK's weak references) to the output of the named stack,
- ``Fn::ImportValue`` to the output that exports that name,
- ``Fn::GetAtt`` of an SSM parameter's ``Value`` to the value the parameter is created with
  (the app passes a value through a parameter to make its reader wait for what the parameter
  waits for),

both within one (nested) cloud assembly, i.e. one App or one pipeline Stage. A value that
comes from outside the app (a literal id or ARN, a parameter) stays what it is: the rules
treat it as not theirs to judge.

Values are rendered to text with placeholders for what is only known at deploy time:
``⟦<stack>.<LogicalId>⟧`` for the ``Ref`` of a resource, ``⟦<stack>.<LogicalId>.<Attr>⟧``
for a ``Fn::GetAtt``, ``⟦AWS::Partition⟧`` for a pseudo parameter (a placeholder never holds
a ``/``, so S3 URIs and paths can be split on it). Two texts are equal when they name the
same thing, and IAM wildcards can be matched against them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

PARTITION = "⟦AWS::Partition⟧"
STACK_ARTIFACT = "aws:cloudformation:stack"
# literal ARNs name their partition; rendered references use the placeholder: make them comparable
_LITERAL_PARTITION = re.compile(r"arn:aws(?:-[a-z]+)*:")
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")
# cross-stack references can chain (an output of an output); real chains are one or two long
_MAX_HOPS = 16
_SSM_PARAMETER = "AWS::SSM::Parameter"


def _single(value: Any) -> tuple[str, Any] | None:
    """``(name, argument)`` of an intrinsic function (a one-key mapping), else None."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((name, argument),) = value.items()
        if isinstance(name, str) and (name == "Ref" or name.startswith("Fn::")):
            return name, argument
    return None


def _get_att(argument: Any) -> tuple[str, str] | None:
    """``(logical id, attribute)`` of a ``Fn::GetAtt`` argument (list or dotted string)."""
    if (
        isinstance(argument, list)
        and len(argument) == 2
        and all(isinstance(a, str) for a in argument)
    ):
        return argument[0], argument[1]
    if isinstance(argument, str) and "." in argument:
        name, attribute = argument.split(".", 1)
        return name, attribute
    return None


@dataclass(frozen=True)
class Ref:
    """A value that refers to a resource of the app: its ``Ref`` (``attribute`` None) or an attribute."""

    resource: Resource
    attribute: str | None = None

    def to(self, resource: Resource, *attributes: str | None) -> bool:
        """True when this refers to ``resource`` (through one of ``attributes``, if given)."""
        return self.resource is resource and (not attributes or self.attribute in attributes)


@dataclass(frozen=True)
class Value:
    """A value of a template, with the stack it was read in (which gives references their meaning)."""

    stack: StackTemplate
    raw: Any

    @property
    def missing(self) -> bool:
        return self.raw is None

    def resolved(self) -> Value:
        """This value, cross-stack references followed to the producing stack's output."""
        stack, raw = self.stack, self.raw
        for _ in range(_MAX_HOPS):
            call = _single(raw)
            if call is None:
                break
            name, argument = call
            found: tuple[StackTemplate, Any] | None = None
            if name == "Fn::GetStackOutput" and isinstance(argument, Mapping):
                found = stack.assembly.output(argument.get("StackName"), argument.get("OutputName"))
            elif name == "Fn::ImportValue" and isinstance(argument, str):
                found = stack.assembly.exports.get(argument)
            elif name == "Fn::GetAtt" and (parts := _get_att(argument)) is not None:
                parameter = stack.resources.get(parts[0])
                if parameter and parameter.type == _SSM_PARAMETER and parts[1] == "Value":
                    found = (stack, parameter.prop("Value").raw)
            if found is None:
                break
            stack, raw = found
        return Value(stack, raw)

    def get(self, *keys: str | int) -> Value:
        """A property below this one (missing: a Value whose ``raw`` is None)."""
        value = self.resolved()
        for key in keys:
            raw = value.raw
            if isinstance(key, int) and isinstance(raw, list) and -len(raw) <= key < len(raw):
                value = Value(value.stack, raw[key]).resolved()
            elif isinstance(key, str) and isinstance(raw, Mapping) and _single(raw) is None:
                value = Value(value.stack, raw.get(key)).resolved()
            else:
                return Value(value.stack, None)
        return value

    def items(self) -> list[Value] | None:
        """The items of a list (an absent value: no items); None when it is not a literal list."""
        value = self.resolved()
        if value.raw is None:
            return []
        if isinstance(value.raw, list):
            return [Value(value.stack, item).resolved() for item in value.raw]
        return None

    def items_or_one(self) -> list[Value]:
        """A list's items, or this value alone (IAM's ``"Action": "s3:GetObject"`` form)."""
        items = self.items()
        return [self.resolved()] if items is None else items

    @property
    def literal(self) -> Any:
        """The value when it is a plain JSON value with no function in it, else None."""
        raw = self.resolved().raw
        return None if _contains_function(raw) else raw

    def target(self) -> Ref | str | None:
        """What this value is: a reference to a resource of the app, a literal string, or None
        (a parameter, a pseudo parameter, a function, a value from outside the app)."""
        value = self.resolved()
        raw = value.raw
        if isinstance(raw, str):
            return raw
        call = _single(raw)
        if call is None:
            return None
        name, argument = call
        if name == "Ref" and isinstance(argument, str):
            found = value.stack.resources.get(argument)
            return Ref(found) if found else None
        if name == "Fn::GetAtt":
            parts = _get_att(argument)
            found = value.stack.resources.get(parts[0]) if parts else None
            return Ref(found, parts[1]) if found and parts else None
        if name == "Fn::Join":
            return _role_arn(value.stack, argument)
        return None

    def refers_to(self, resource: Resource, *attributes: str | None) -> bool:
        target = self.target()
        return isinstance(target, Ref) and target.to(resource, *attributes)

    def text(self) -> str | None:
        """The value as text, deploy-time parts as placeholders; None when it cannot be rendered."""
        rendered = self._render()
        return None if rendered is None else _LITERAL_PARTITION.sub(f"arn:{PARTITION}:", rendered)

    def _render(self) -> str | None:
        value = self.resolved()
        raw, stack = value.raw, value.stack
        if isinstance(raw, bool):
            return "true" if raw else "false"
        if isinstance(raw, (str, int, float)):
            return str(raw)
        call = _single(raw)
        if call is None:
            return None
        name, argument = call
        if name == "Ref" and isinstance(argument, str):
            return stack.reference_text(argument, None)
        if name == "Fn::GetAtt":
            parts = _get_att(argument)
            return stack.reference_text(*parts) if parts else None
        if name == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
            separator, parts = argument
            if not isinstance(separator, str) or not isinstance(parts, list):
                return None
            texts = [Value(stack, part)._render() for part in parts]
            return None if any(t is None for t in texts) else separator.join(texts)  # type: ignore[arg-type]
        if name == "Fn::Sub":
            return _render_sub(stack, argument)
        return None


def _render_sub(stack: StackTemplate, argument: Any) -> str | None:
    template: Any = argument
    variables: Mapping[str, Any] = {}
    if isinstance(argument, list) and len(argument) == 2 and isinstance(argument[1], Mapping):
        template, variables = argument
    if not isinstance(template, str):
        return None
    failed = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal failed
        name = match.group(1)
        if name.startswith("!"):
            return "${" + name[1:] + "}"
        if name in variables:
            rendered = Value(stack, variables[name])._render()
        elif "." in name:
            rendered = stack.reference_text(*name.split(".", 1))
        else:
            rendered = stack.reference_text(name, None)
        if rendered is None:
            failed = True
            return ""
        return rendered

    result = _SUB_VARIABLE.sub(substitute, template)
    return None if failed else result


def _contains_function(raw: Any) -> bool:
    if _single(raw) is not None:
        return True
    if isinstance(raw, Mapping):
        return any(_contains_function(v) for v in raw.values())
    if isinstance(raw, list):
        return any(_contains_function(v) for v in raw)
    return False


@dataclass(eq=False)
class Resource:
    """One resource of a template. Compared by identity: one object per resource."""

    stack: StackTemplate
    logical_id: str
    body: Mapping[str, Any]

    def __repr__(self) -> str:
        return f"Resource({self.stack.name}/{self.logical_id}: {self.type})"

    @property
    def type(self) -> str:
        return str(self.body.get("Type", ""))

    @property
    def properties(self) -> Value:
        return Value(self.stack, self.body.get("Properties") or {})

    def prop(self, *keys: str | int) -> Value:
        """A property (``prop("VpcConfig", "Subnets")``); missing: a Value whose raw is None."""
        return self.properties.get(*keys)

    @property
    def deletion_policy(self) -> Any:
        return self.body.get("DeletionPolicy")

    @property
    def update_replace_policy(self) -> Any:
        return self.body.get("UpdateReplacePolicy")

    @property
    def assembly(self) -> Assembly:
        return self.stack.assembly

    @property
    def placeholder(self) -> str:
        return f"⟦{self.stack.name}.{self.logical_id}⟧"

    def reference_text(self, attribute: str | None) -> str:
        """How a ``Ref`` (``attribute`` None) or ``Fn::GetAtt`` of this resource renders."""
        if self.type == "AWS::S3::Bucket" and attribute in (None, "Arn"):
            named = self.prop("BucketName").literal
            name = named if isinstance(named, str) else self.placeholder
            return name if attribute is None else f"arn:{PARTITION}:s3:::{name}"
        if attribute is None:
            return self.placeholder
        return f"⟦{self.stack.name}.{self.logical_id}.{attribute}⟧"


@dataclass(eq=False)
class StackTemplate:
    """One stack of the assembly: its name, template and construct path."""

    assembly: Assembly
    name: str
    template_path: str
    construct_path: str
    template: Mapping[str, Any]
    resources: dict[str, Resource] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for logical_id, body in (self.template.get("Resources") or {}).items():
            if isinstance(body, Mapping):
                self.resources[logical_id] = Resource(self, logical_id, body)

    @property
    def outputs(self) -> Mapping[str, Any]:
        return self.template.get("Outputs") or {}

    def reference_text(self, name: str, attribute: str | None) -> str | None:
        """The text of ``Ref: name`` or ``Fn::GetAtt: [name, attribute]`` in this stack."""
        if name.startswith("AWS::"):
            return None if name == "AWS::NoValue" or attribute else f"⟦{name}⟧"
        resource = self.resources.get(name)
        return resource.reference_text(attribute) if resource else None


@dataclass(eq=False)
class Assembly:
    """The stacks of one cloud assembly directory (an App, or one Stage inside it)."""

    directory: str
    stacks: dict[str, StackTemplate] = field(default_factory=dict)

    def output(self, stack_name: Any, output_name: Any) -> tuple[StackTemplate, Any] | None:
        stack = self.stacks.get(stack_name) if isinstance(stack_name, str) else None
        output = stack.outputs.get(output_name) if stack and isinstance(output_name, str) else None
        return (stack, output.get("Value")) if stack and isinstance(output, Mapping) else None

    @cached_property
    def exports(self) -> dict[str, tuple[StackTemplate, Any]]:
        found = {}
        for stack in self.stacks.values():
            for output in stack.outputs.values():
                name = output.get("Export", {}).get("Name") if isinstance(output, Mapping) else None
                if isinstance(name, str):
                    found[name] = (stack, output.get("Value"))
        return found

    def resources(self, *types: str) -> Iterator[Resource]:
        """Every resource of the assembly (of these types), in template order."""
        for stack in self.stacks.values():
            for resource in stack.resources.values():
                if not types or resource.type in types:
                    yield resource


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


@dataclass
class AppModel:
    """Every template of a synthesized app, grouped by cloud assembly directory."""

    assemblies: dict[str, Assembly] = field(default_factory=dict)
    _by_path: dict[str, StackTemplate] = field(default_factory=dict, repr=False)

    @classmethod
    def from_template_paths(cls, paths: Iterable[str | os.PathLike[str]]) -> AppModel:
        """Read the templates and, from the ``manifest.json`` next to them, their stack names."""
        model = cls()
        files = sorted({_key(p) for p in paths})
        for directory in sorted({os.path.dirname(p) for p in files}):
            manifest = Path(directory, "manifest.json")
            artifacts = json.loads(manifest.read_text())["artifacts"] if manifest.exists() else {}
            templates = {
                artifact.get("properties", {}).get("templateFile"): (artifact_id, artifact)
                for artifact_id, artifact in artifacts.items()
                if artifact.get("type") == STACK_ARTIFACT
            }
            assembly = Assembly(directory)
            for path in (p for p in files if os.path.dirname(p) == directory):
                artifact_id, artifact = templates.get(os.path.basename(path), (None, {}))
                name = artifact.get("properties", {}).get("stackName") or artifact_id
                name = name or os.path.basename(path).removesuffix(".template.json")
                template = json.loads(Path(path).read_text())
                stack = StackTemplate(
                    assembly, name, path, artifact.get("displayName") or name, template
                )
                assembly.stacks[name] = stack
                model._by_path[path] = stack
            model.assemblies[directory] = assembly
        return model

    @classmethod
    def from_templates(
        cls, templates: Mapping[str, Mapping[str, Any]], directory: str = "<memory>"
    ) -> AppModel:
        """A model of templates given as dicts, by stack name (tests, tools)."""
        model = cls()
        assembly = Assembly(directory)
        for name, template in templates.items():
            path = f"{directory}/{name}.template.json"
            stack = StackTemplate(assembly, name, path, name, template)
            assembly.stacks[name] = stack
            model._by_path[path] = stack
        model.assemblies[directory] = assembly
        return model

    def stack(self, template_path: str | os.PathLike[str]) -> StackTemplate | None:
        """The stack whose template is at ``template_path``."""
        return self._by_path.get(_key(template_path)) or self._by_path.get(os.fspath(template_path))

    def resource(self, template_path: str | os.PathLike[str], logical_id: str) -> Resource | None:
        stack = self.stack(template_path)
        return stack.resources.get(logical_id) if stack else None


# a deploy-time placeholder of rendered text (a pseudo parameter, a reference)
_PLACEHOLDER = re.compile(r"⟦[^⟧]*⟧")
# "arn:<partition>:iam::<account>:role/<path>": what comes before a role's name in its ARN
_ROLE_ARN_HEAD = re.compile(r"^arn:[^:]+:iam::[^:]*:role/([\w+=,.@-]+/)*$")


def _role_arn(stack: StackTemplate, argument: Any) -> Ref | None:
    """A role's ARN assembled from its path and its name (``Fn::Join`` of the ARN up to the path
    and the role's ``Ref``), as the app writes it so that a new path changes the template of the
    consumer (a consumer reading the ARN through ``Fn::GetStackOutput`` "is not automatically
    updated" when the output changes: CloudFormation template reference, Fn::GetStackOutput):
    the role's ``Arn``."""
    if not (isinstance(argument, list) and len(argument) == 2 and argument[0] == ""):
        return None
    parts = argument[1]
    if not isinstance(parts, list) or len(parts) < 2:
        return None
    name = Value(stack, parts[-1]).target()
    head = Value(stack, {"Fn::Join": ["", parts[:-1]]}).text()
    if (
        isinstance(name, Ref)
        and name.attribute is None
        and name.resource.type == "AWS::IAM::Role"
        and head is not None
        and _ROLE_ARN_HEAD.match(_PLACEHOLDER.sub("x", head))
    ):
        return Ref(name.resource, "Arn")
    return None

"""The template comparison of the update notes (hyperpod_ops.template_changes), and what only the
data-safety tests need: the create-only values that hold an asset hash."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stack_testkit import strings

from hyperpod_ops.template_changes import (
    STATEFUL_TYPES,
    SUPPLEMENTARY_CREATE_ONLY,
    Finding,
    Reference,
    Templates,
    _exports,
    create_only_pointers,
    is_missing,
    pointer_value,
    references,
    replacement_findings,
    resource_schema,
)

__all__ = [
    "STATEFUL_TYPES",
    "SUPPLEMENTARY_CREATE_ONLY",
    "Finding",
    "Reference",
    "create_only_pointers",
    "pointer_value",
    "references",
    "replacement_findings",
    "resource_schema",
    "volatile_create_only_values",
]

# Values that change whenever an asset's content does (see stack_testkit's snapshot scrubbing).
VOLATILE = re.compile(
    r"[0-9a-f]{64}|lifecycle/[0-9a-f]{20}/|aws-cdk:cr-owned:[^:]*:[0-9a-f]{8}", re.IGNORECASE
)


def volatile_create_only_values(
    templates: Templates, *, types: Mapping[str, Any] | None = None, region: str = "us-west-2"
) -> list[str]:
    """Create-only values of stateful resources that hold an asset hash, directly or through the
    create-only values of what they reference: each would replace the resource whenever an
    asset changes."""
    stateful = STATEFUL_TYPES if types is None else types
    exports = _exports(templates)
    found: list[str] = []

    def visit(stack: str, value: Any, where: str, seen: set[tuple[str, str]]) -> None:
        for path, text in strings(value):
            if VOLATILE.search(text):
                found.append(f"{where}{path}: {text}")
        for reference in references(value):
            if reference.kind == "local":
                resource = templates[stack].get("Resources", {}).get(reference.name)
                if resource is not None and (stack, reference.name) not in seen:
                    seen.add((stack, reference.name))
                    for pointer in create_only_pointers(resource["Type"], region):
                        inner = pointer_value(resource, pointer)
                        if not is_missing(inner):
                            visit(stack, inner, f"{where} -> {reference.name}{pointer}", seen)
            elif reference.kind == "output":
                output = templates.get(str(reference.stack), {}).get("Outputs", {})
                if reference.name in output:
                    visit(
                        str(reference.stack),
                        output[reference.name].get("Value"),
                        f"{where} -> {reference}",
                        seen,
                    )
            elif reference.name in exports:
                producer, inner = exports[reference.name]
                visit(producer, inner, f"{where} -> {reference}", seen)

    for stack, template in templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            if resource["Type"] not in stateful:
                continue
            for pointer in create_only_pointers(resource["Type"], region):
                value = pointer_value(resource, pointer)
                if not is_missing(value):
                    visit(stack, value, f"{stack}/{logical_id}{pointer}", {(stack, logical_id)})
    return found

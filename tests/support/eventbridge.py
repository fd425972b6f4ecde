"""An EventBridge emulator for the tests: whether a rule's pattern matches an event, and the
text an input transformer delivers.

EventBridge's own ``TestEventPattern`` needs an account, so the tests of
``hyperpod_cdk.alerts`` run the product's patterns (``rule_patterns``, ``rollback_pattern``) and
input transformers (``input_transformer``) through :func:`matches` and :func:`render` against
sample events written from AWS's documented ones (tests/alerts/fixtures). The emulator's own
tests are tests/alerts/test_eventbridge_emulator.py: each operator with a match and a near miss.

Source of the semantics (read 2026-11-25): the EventBridge user guide, "Content filtering in
Amazon EventBridge event patterns" and "Comparison operators for use in event patterns"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns-content-based-filtering.html,
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html), and
"Amazon EventBridge input transformation"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html).
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final


class _Missing:
    """A field the event does not have (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether EventBridge would deliver ``event`` to a rule with ``pattern``.

    Written from the EventBridge user guide's content filtering rules, for the operators
    this project's patterns use and the common ones: exact values (strings, numbers, booleans,
    null; a list of them is an OR), nested objects, event arrays (any element may match; an
    array of objects matches a nested pattern when one element does), ``prefix`` and
    ``suffix`` (optionally ``{"equals-ignore-case": ...}``), ``equals-ignore-case``,
    ``wildcard``, ``anything-but`` (a value, a list, ``prefix``, ``suffix``,
    ``equals-ignore-case``, ``wildcard``), ``exists``, ``numeric`` ranges, ``cidr``, and
    ``$or``. Fields of the pattern are ANDed; a field the event lacks matches only
    ``{"exists": false}``.

    :raises ValueError: an operator this matcher does not know, or a malformed one (so a typo
        in a pattern fails its test instead of silently matching nothing).
    """
    return _match_object(pattern, event)


def _match_object(pattern: Mapping[str, Any], value: Any) -> bool:
    if isinstance(value, list):
        # an array of objects: EventBridge flattens it, so one element must match the whole
        # nested pattern
        return any(_match_object(pattern, item) for item in value if isinstance(item, dict))
    fields: Mapping[str, Any] = value if isinstance(value, dict) else {}
    for key, expected in pattern.items():
        if key == "$or":
            if not isinstance(expected, list) or not expected:
                raise ValueError(f"$or takes a non-empty list of patterns, not {expected!r}")
            if not any(_match_object(branch, fields) for branch in expected):
                return False
        elif isinstance(expected, dict):
            if not _match_object(expected, fields.get(key, {})):
                return False
        elif isinstance(expected, list):
            if not _match_leaf(expected, fields.get(key, MISSING)):
                return False
        else:
            raise ValueError(
                f"pattern field {key!r}: values go in a list ([{expected!r}]) or a nested object"
            )
    return True


def _match_leaf(matchers: list[Any], value: Any) -> bool:
    if not matchers:
        raise ValueError("an empty list matches nothing in EventBridge; it is a pattern error")
    if isinstance(value, dict):
        return False  # comparison operators apply to leaves only
    if isinstance(value, list):
        if not value:
            return any(_is_exists(m, expected=True) for m in matchers)
        return any(_match_value(m, item) for m in matchers for item in value)
    return any(_match_value(m, value) for m in matchers)


def _is_exists(matcher: Any, *, expected: bool) -> bool:
    return isinstance(matcher, dict) and matcher.get("exists") is expected


def _match_value(matcher: Any, value: Any) -> bool:
    if not isinstance(matcher, dict):
        return value is not MISSING and _equal(matcher, value)
    if len(matcher) != 1:
        raise ValueError(f"an operator object has exactly one key: {matcher!r}")
    ((operator, argument),) = matcher.items()
    if operator == "exists":
        if not isinstance(argument, bool):
            raise ValueError(f"exists takes true or false, not {argument!r}")
        return (value is not MISSING) is argument
    if value is MISSING:
        return False
    if operator == "anything-but":
        return not _anything_but_excludes(argument, value)
    if operator in ("prefix", "suffix"):
        return _affix(operator, argument, value)
    if operator == "equals-ignore-case":
        return isinstance(value, str) and value.casefold() == _text(argument, operator).casefold()
    if operator == "wildcard":
        return isinstance(value, str) and bool(
            _wildcard(_text(argument, operator)).fullmatch(value)
        )
    if operator == "numeric":
        return _numeric(argument, value)
    if operator == "cidr":
        return _cidr(argument, value)
    raise ValueError(f"unknown pattern operator {operator!r}")


def _equal(expected: Any, value: Any) -> bool:
    """Exact matching: a JSON number equals the same number (5 == 5.0), never a string or a
    boolean."""
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(expected, bool) and isinstance(value, bool) and expected is value
    if _is_number(expected) and _is_number(value):
        return float(expected) == float(value)
    return type(expected) is type(value) and expected == value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(argument: Any, operator: str) -> str:
    if not isinstance(argument, str):
        raise ValueError(f"{operator} takes a string, not {argument!r}")
    return argument


def _affix(operator: str, argument: Any, value: Any) -> bool:
    if not isinstance(value, str):
        return False
    fold = False
    if isinstance(argument, dict):
        if set(argument) != {"equals-ignore-case"}:
            raise ValueError(f"{operator} takes a string or {{equals-ignore-case: ...}}")
        argument, fold = argument["equals-ignore-case"], True
    text = _text(argument, operator)
    subject: str = value
    if fold:
        text, subject = text.casefold(), subject.casefold()
    return subject.startswith(text) if operator == "prefix" else subject.endswith(text)


def _anything_but_excludes(argument: Any, value: Any) -> bool:
    """Whether ``anything-but: argument`` excludes ``value``."""
    if isinstance(argument, list):
        if not argument:
            raise ValueError("anything-but takes a non-empty list")
        return any(_anything_but_excludes(item, value) for item in argument)
    if isinstance(argument, dict):
        if len(argument) != 1:
            raise ValueError(f"anything-but takes one operator: {argument!r}")
        ((operator, inner),) = argument.items()
        inner_values = inner if isinstance(inner, list) else [inner]
        if operator in ("prefix", "suffix"):
            return any(_affix(operator, item, value) for item in inner_values)
        if operator in ("equals-ignore-case", "wildcard"):
            return any(_match_value({operator: item}, value) for item in inner_values)
        raise ValueError(f"anything-but does not take {operator!r}")
    return _equal(argument, value)


_COMPARISONS: Final = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "=": lambda a, b: a == b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


def _numeric(argument: Any, value: Any) -> bool:
    if not isinstance(argument, list) or not argument or len(argument) % 2:
        raise ValueError(f"numeric takes [operator, number, ...] pairs, not {argument!r}")
    pairs = list(zip(argument[::2], argument[1::2], strict=True))
    for operator, bound in pairs:
        if operator not in _COMPARISONS or not _is_number(bound):
            raise ValueError(f"numeric: {operator!r} {bound!r} is not a comparison")
    if not _is_number(value) or not math.isfinite(float(value)):
        return False
    return all(_COMPARISONS[op](float(value), float(bound)) for op, bound in pairs)


def _cidr(argument: Any, value: Any) -> bool:
    network = ipaddress.ip_network(_text(argument, "cidr"), strict=False)
    if not isinstance(value, str):
        return False
    try:
        return ipaddress.ip_address(value) in network
    except ValueError:
        return False


def _wildcard(text: str) -> re.Pattern[str]:
    """``*`` is any run of characters; ``\\*`` a literal star and ``\\\\`` a backslash."""
    parts: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in "*\\":
            parts.append(re.escape(text[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "*" else re.escape(char))
        index += 1
    return re.compile("".join(parts), re.DOTALL)


# -- input transformation ---------------------------------------------------------------------


def render(paths: Mapping[str, str], template: str, event: Mapping[str, Any]) -> str:
    """What EventBridge delivers for ``event``: each ``<name>`` of ``template`` replaced by
    the value at ``paths[name]``, then the JSON string decoded into the text SNS sends.

    Written here for the tests (EventBridge's own rendering needs an account). Strings are
    inserted JSON-escaped inside the template's string, as EventBridge does for a quoted
    template.

    :raises KeyError: a placeholder without a path, or a path the event does not have (the
        tests use it to prove every path exists in the documented events).
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        found = _resolve(paths[name], event)
        text = found if isinstance(found, str) else json.dumps(found)
        return json.dumps(text, ensure_ascii=False)[1:-1]

    rendered = re.sub(r"<([A-Za-z0-9_.-]+)>", value, template)
    decoded = json.loads(rendered)
    if not isinstance(decoded, str):
        raise ValueError("the template must render to one JSON string")
    return decoded


def _resolve(path: str, event: Mapping[str, Any]) -> Any:
    """The value at a ``$.a.b.c`` path (the subset of JSONPath the input paths use)."""
    if not path.startswith("$."):
        raise KeyError(f"{path}: input paths start with $.")
    node: Any = event
    for part in path[2:].split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"{path}: the event has no {part!r}")
        node = node[part]
    return node

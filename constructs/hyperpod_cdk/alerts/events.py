"""HyperPod's EventBridge events: the rules' patterns, a matcher to test them, and the text a
person reads.

Pure Python (no CDK, no AWS call): the construct turns :func:`rule_patterns` into
``events.Rule(event_pattern=...)`` and :func:`input_transformer` into the SNS target's input;
the tests run the same patterns through :func:`matches` against sample events written from
AWS's documented ones, because EventBridge's own ``TestEventPattern`` needs an account.

Facts (each with its source, read 2026-11-25):

=========================================  ===============================================
Fact                                       Source
=========================================  ===============================================
``source: aws.sagemaker``; ``resources``   SageMaker developer guide, "Events that Amazon
holds the cluster ARN; detail-types        SageMaker AI sends to Amazon EventBridge"
``SageMaker HyperPod Cluster Event``,      (docs.aws.amazon.com/sagemaker/latest/dg/
``... Cluster Node Health Event``,         automating-sagemaker-with-eventbridge.html)
``... Cluster State Change``
Cluster event: ``detail.EventDetails``     same page, and "SageMaker HyperPod cluster
with ``ClusterName``, ``InstanceGroup      events reference" (docs.aws.amazon.com/sagemaker/
Name``, ``InstanceId``, ``ResourceType``,  latest/dg/sagemaker-hyperpod-cluster-events-
``EventLevel`` (Info | Warn | Error),      reference.html); only under Continuous
``Description``                            provisioning
Node health: ``detail.ClusterName``,       "Events that Amazon SageMaker AI sends to Amazon
``InstanceId``, ``HealthSummary{Health     EventBridge", section "SageMaker HyperPod cluster
Status, HealthStatusReason, RepairAction,  node health": sent when a node turns unhealthy
Recommendation}``; no instance group       and when it turns healthy again (sample status
                                           ``Unhealthy``)
State change: ``detail.ClusterStatus``,    same page, "SageMaker HyperPod cluster state
``FailureMessage``                         change"; statuses from the pinned botocore's
                                           ``ClusterStatus`` enum (Creating, Deleting,
                                           Failed, InService, RollingBack, SystemUpdating,
                                           Updating)
Pattern operators and their semantics      EventBridge user guide, "Content filtering in
                                           Amazon EventBridge event patterns" and
                                           "Comparison operators for use in event patterns"
                                           (docs.aws.amazon.com/eventbridge/latest/
                                           userguide/eb-event-patterns-content-based-
                                           filtering.html, eb-create-pattern-operators.html)
=========================================  ===============================================

Choices:

- Node health alerts on every status but ``Healthy`` (``anything-but``): AWS documents
  ``Unhealthy`` by example and the return to health, not the full list, so a status added
  later alerts rather than passing in silence.
- A cluster is failed in ``Failed`` and in ``RollingBack`` (an update that failed and is
  being undone; a rollback alarm or a failed AMI update ends there).
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

SOURCE: Final = "aws.sagemaker"

CLUSTER_EVENT: Final = "cluster_event"
NODE_HEALTH: Final = "node_health"
CLUSTER_STATE: Final = "cluster_state"

#: the rule kind -> EventBridge ``detail-type``
DETAIL_TYPES: Final[Mapping[str, str]] = {
    CLUSTER_EVENT: "SageMaker HyperPod Cluster Event",
    NODE_HEALTH: "SageMaker HyperPod Cluster Node Health Event",
    CLUSTER_STATE: "SageMaker HyperPod Cluster State Change",
}

#: cluster event levels that may alert (``Info`` is routine: every node start logs some)
ALERT_LEVELS: Final = ("Error", "Warn")
HEALTHY: Final = "Healthy"
FAILED_CLUSTER_STATUSES: Final = ("Failed", "RollingBack")

Pattern = dict[str, Any]


def rule_patterns(
    cluster_arn: str, *, event_levels: Sequence[str], node_health: bool
) -> dict[str, Pattern]:
    """The event pattern of each rule, keyed by kind (:data:`CLUSTER_EVENT`,
    :data:`NODE_HEALTH`, :data:`CLUSTER_STATE`).

    Every pattern matches ``source: aws.sagemaker`` and this cluster's ARN in ``resources``, so
    another cluster of the account never alerts here. ``event_levels`` empty leaves the cluster
    event rule out; ``node_health`` false leaves the node health rule out; the state change rule
    is always there (a failed cluster is never routine).

    :raises ValueError: a level other than Error or Warn (the config validates this first; the
        check keeps a caller of the library from alerting on every Info event).
    """
    unknown = sorted(set(event_levels) - set(ALERT_LEVELS))
    if unknown:
        raise ValueError(
            f"event_levels: {unknown} are not alert levels; use {list(ALERT_LEVELS)}"
            " (Info events are routine: every node start emits several)"
        )
    common: Pattern = {"source": [SOURCE], "resources": [cluster_arn]}
    patterns: dict[str, Pattern] = {}
    if event_levels:
        patterns[CLUSTER_EVENT] = {
            **common,
            "detail-type": [DETAIL_TYPES[CLUSTER_EVENT]],
            "detail": {"EventDetails": {"EventLevel": sorted(set(event_levels))}},
        }
    if node_health:
        patterns[NODE_HEALTH] = {
            **common,
            "detail-type": [DETAIL_TYPES[NODE_HEALTH]],
            "detail": {"HealthSummary": {"HealthStatus": [{"anything-but": [HEALTHY]}]}},
        }
    patterns[CLUSTER_STATE] = {
        **common,
        "detail-type": [DETAIL_TYPES[CLUSTER_STATE]],
        "detail": {"ClusterStatus": list(FAILED_CLUSTER_STATUSES)},
    }
    return patterns


def rollback_pattern(cluster_arn: str, group: str) -> Pattern:
    """The pattern of a group's ``rollback_alarms: auto`` rule: this cluster's Error events of
    ``group`` (Continuous provisioning only) or any node of the cluster turning unhealthy.

    A node health event names no instance group (only the instance), so an unhealthy node of
    another group also rolls the group's update back: the cautious side for an AMI rollout.
    """
    return {
        "source": [SOURCE],
        "resources": [cluster_arn],
        "$or": [
            {
                "detail-type": [DETAIL_TYPES[CLUSTER_EVENT]],
                "detail": {"EventDetails": {"InstanceGroupName": [group], "EventLevel": ["Error"]}},
            },
            {
                "detail-type": [DETAIL_TYPES[NODE_HEALTH]],
                "detail": {"HealthSummary": {"HealthStatus": [{"anything-but": [HEALTHY]}]}},
            },
        ],
    }


# -- the matcher -------------------------------------------------------------------------------


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


# -- what a person reads -----------------------------------------------------------------------

#: per kind: the placeholder -> JSON path of the event (EventBridge ``InputPathsMap``); every
#: path is present in AWS's documented events of that kind
_PATHS: Final[Mapping[str, Mapping[str, str]]] = {
    CLUSTER_EVENT: {
        "cluster": "$.detail.EventDetails.ClusterName",
        "group": "$.detail.EventDetails.InstanceGroupName",
        "instance": "$.detail.EventDetails.InstanceId",
        "level": "$.detail.EventDetails.EventLevel",
        "resource": "$.detail.EventDetails.ResourceType",
        "description": "$.detail.EventDetails.Description",
        "time": "$.time",
        "region": "$.region",
    },
    NODE_HEALTH: {
        "cluster": "$.detail.ClusterName",
        "instance": "$.detail.InstanceId",
        "status": "$.detail.HealthSummary.HealthStatus",
        "reason": "$.detail.HealthSummary.HealthStatusReason",
        "repair": "$.detail.HealthSummary.RepairAction",
        "recommendation": "$.detail.HealthSummary.Recommendation",
        "time": "$.time",
        "region": "$.region",
    },
    CLUSTER_STATE: {
        "cluster": "$.detail.ClusterName",
        "status": "$.detail.ClusterStatus",
        "failure": "$.detail.FailureMessage",
        "time": "$.time",
        "region": "$.region",
    },
}

_TEXT: Final[Mapping[str, str]] = {
    CLUSTER_EVENT: (
        "HyperPod cluster <cluster>: <level> event\n"
        "What happened: <description>\n"
        "Instance group: <group>\n"
        "Instance: <instance> (<resource>)\n"
        "When: <time> in <region>\n"
        "What to do: read the cluster's events (aws sagemaker list-cluster-events"
        " --cluster-name <cluster> --region <region>) and the node's log streams in"
        " CloudWatch Logs (/aws/sagemaker/Clusters/<cluster>/...)."
    ),
    NODE_HEALTH: (
        "HyperPod cluster <cluster>: node <instance> is <status>\n"
        "What happened: <reason>\n"
        "Repair action HyperPod takes: <repair>\n"
        "Recommendation: <recommendation>\n"
        "When: <time> in <region>\n"
        "Instance group: find it with aws sagemaker describe-cluster-node --cluster-name"
        " <cluster> --node-id <instance> --region <region>\n"
        "What to do: with automatic node recovery HyperPod repairs the node; with repair action"
        " None, reboot or replace it (aws sagemaker batch-reboot-cluster-nodes |"
        " batch-replace-cluster-nodes --cluster-name <cluster> --node-ids <instance>)."
    ),
    CLUSTER_STATE: (
        "HyperPod cluster <cluster> is <status>\n"
        "What happened: <failure>\n"
        "When: <time> in <region>\n"
        "What to do: aws sagemaker describe-cluster --cluster-name <cluster> --region <region>"
        " shows each instance group's status; the CloudFormation stack events show the change"
        " that failed."
    ),
}


def input_transformer(kind: str) -> tuple[dict[str, str], str]:
    """The SNS target's ``InputPathsMap`` and ``InputTemplate`` for a rule ``kind``.

    The template is one JSON string (EventBridge's form for a text target), so SNS delivers
    plain lines: which cluster, group and instance, what happened, and the repair action or
    what to do; never the raw event.

    :raises KeyError: an unknown kind.
    """
    return dict(_PATHS[kind]), json.dumps(_TEXT[kind], ensure_ascii=False)


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

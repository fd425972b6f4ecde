"""HyperPod's EventBridge events: the rules' patterns and the text a person reads.

Pure Python (no CDK, no AWS call): the construct turns :func:`rule_patterns` into
``events.Rule(event_pattern=...)`` and :func:`input_transformer` into the SNS target's input.
The tests run the same patterns and transformers against sample events written from AWS's
documented ones through an EventBridge emulator of the test suite (``tests/support/
eventbridge.py``), because EventBridge's own ``TestEventPattern`` needs an account.

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
=========================================  ===============================================

Choices:

- Node health alerts on every status but ``Healthy`` (``anything-but``): AWS documents
  ``Unhealthy`` by example and the return to health, not the full list, so a status added
  later alerts rather than passing in silence.
- A cluster is failed in ``Failed`` and in ``RollingBack`` (an update that failed and is
  being undone; a rollback alarm or a failed AMI update ends there).
"""

from __future__ import annotations

import json
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

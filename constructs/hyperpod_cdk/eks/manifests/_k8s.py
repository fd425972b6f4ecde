"""Small builders for the Kubernetes objects the components are made of.

Every object is plain data (``dict``), ready to be serialized to JSON or YAML
and applied with ``kubectl apply``. The builders keep the component modules
short and make the shared conventions (labels, tolerations, node affinity)
impossible to forget.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Manifest = dict[str, Any]

# Put on every object, so `kubectl get all -A -l app.kubernetes.io/part-of=hyperpod-dependencies`
# lists what this project installed.
COMMON_LABELS: Mapping[str, str] = {
    "app.kubernetes.io/part-of": "hyperpod-dependencies",
    "app.kubernetes.io/managed-by": "hyperpod-cdk",
}

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

# HyperPod taints a node it found unhealthy with this (HYPERPOD_FACTS.md, "EKS for HyperPod").
HEALTH_TAINT_TOLERATION: Mapping[str, str] = {
    "key": "sagemaker.amazonaws.com/node-health-status",
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}

# The usual "system add-ons only" taint; the AWS chart tolerates it on every operator and plugin.
CRITICAL_ADDONS_TOLERATION: Mapping[str, str] = {"key": "CriticalAddonsOnly", "operator": "Exists"}


# -- metadata ----------------------------------------------------------------------------------


def metadata(
    name: str, *, namespace: str | None = None, labels: Mapping[str, str] | None = None
) -> Manifest:
    """``metadata`` with the common labels, plus ``labels``."""
    meta: Manifest = {"name": name, "labels": {**COMMON_LABELS, **(labels or {})}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def namespace(name: str) -> Manifest:
    """A Namespace."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(name)}


def service_account(name: str, namespace: str) -> Manifest:
    """A ServiceAccount."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(name, namespace=namespace),
    }


# -- RBAC --------------------------------------------------------------------------------------


def rule(api_groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str]) -> Manifest:
    """One RBAC policy rule; ``""`` in ``api_groups`` is the core group."""
    return {"apiGroups": list(api_groups), "resources": list(resources), "verbs": list(verbs)}


def cluster_role(name: str, rules: Iterable[Manifest]) -> Manifest:
    """A ClusterRole."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name),
        "rules": list(rules),
    }


def service_account_subject(name: str, namespace: str) -> Manifest:
    """A RoleBinding subject for a ServiceAccount."""
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def user_subject(name: str) -> Manifest:
    """A RoleBinding subject for a Kubernetes user (an IAM principal mapped by an access entry)."""
    return {"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}


def cluster_role_binding(name: str, role: str, subjects: Iterable[Manifest]) -> Manifest:
    """A ClusterRoleBinding of the ClusterRole ``role`` to ``subjects``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": list(subjects),
    }


# -- scheduling --------------------------------------------------------------------------------


def device_taint_toleration(key: str) -> Manifest:
    """Tolerates the ``key:NoSchedule`` taint that keeps ordinary pods off accelerator nodes."""
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def tolerations(*device_taints: str, everything: bool = False) -> list[Manifest]:
    """The tolerations of a pod template.

    Always the HyperPod health taint and ``CriticalAddonsOnly``; then the
    NoSchedule taints named in ``device_taints``. ``everything`` adds
    tolerations of every NoSchedule and NoExecute taint (node agents that must
    keep running on a node whatever its state).
    """
    result: list[Manifest] = [dict(HEALTH_TAINT_TOLERATION), dict(CRITICAL_ADDONS_TOLERATION)]
    result.extend(device_taint_toleration(key) for key in device_taints)
    if everything:
        result.extend(
            {"operator": "Exists", "effect": effect} for effect in ("NoSchedule", "NoExecute")
        )
    return result


def instance_type_affinity(instance_types: Sequence[str]) -> Manifest:
    """A required node affinity on the node's instance type (``ml.``-prefixed on HyperPod nodes)."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": INSTANCE_TYPE_LABEL,
                                "operator": "In",
                                "values": list(instance_types),
                            }
                        ]
                    }
                ]
            }
        }
    }


# -- pods --------------------------------------------------------------------------------------


def field_env(name: str, field_path: str) -> Manifest:
    """An environment variable read from the pod's own fields (downward API)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def host_path_volume(name: str, path: str, *, type_: str | None = None) -> Manifest:
    """A hostPath volume."""
    host_path: Manifest = {"path": path}
    if type_ is not None:
        host_path["type"] = type_
    return {"name": name, "hostPath": host_path}


def volume_mount(name: str, mount_path: str, *, read_only: bool = False) -> Manifest:
    """A volume mount."""
    mount: Manifest = {"name": name, "mountPath": mount_path}
    if read_only:
        mount["readOnly"] = True
    return mount


def resources(cpu: str, memory: str, *, limit: bool = True) -> Manifest:
    """Requests of ``cpu`` and ``memory``; the same as limits unless ``limit`` is false."""
    amounts = {"cpu": cpu, "memory": memory}
    return {"requests": amounts, "limits": dict(amounts)} if limit else {"requests": amounts}


# A device plugin or node agent needs no extra privileges.
RESTRICTED_CONTAINER: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}


def pod_template(
    selector: Mapping[str, str], spec: Manifest, *, annotations: Mapping[str, str] | None = None
) -> Manifest:
    """A pod template labelled with ``selector`` (and the common labels)."""
    meta: Manifest = {"labels": {**COMMON_LABELS, **selector}}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"metadata": meta, "spec": spec}


def daemon_set(
    name: str, namespace: str, selector: Mapping[str, str], pod_spec: Manifest
) -> Manifest:
    """A DaemonSet with a rolling update strategy."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(name, namespace=namespace, labels=selector),
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": pod_template(selector, pod_spec),
        },
    }


def deployment(
    name: str,
    namespace: str,
    selector: Mapping[str, str],
    pod_spec: Manifest,
    *,
    replicas: int = 1,
    annotations: Mapping[str, str] | None = None,
) -> Manifest:
    """A Deployment."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(name, namespace=namespace, labels=selector),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector)},
            "template": pod_template(selector, pod_spec, annotations=annotations),
        },
    }


def service(
    name: str, namespace: str, selector: Mapping[str, str], ports: Iterable[Manifest]
) -> Manifest:
    """A ClusterIP Service."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, namespace=namespace, labels=selector),
        "spec": {"type": "ClusterIP", "selector": dict(selector), "ports": list(ports)},
    }


# -- custom resources --------------------------------------------------------------------------


def open_schema() -> Manifest:
    """A CRD version schema that accepts any object.

    The operators validate and default their objects themselves, so the CRDs carry an open
    schema: valid and structural, and not a copy of the upstream generated schemas.
    """
    return {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


AGE_COLUMN: Mapping[str, str] = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
}
STATE_COLUMN: Mapping[str, str] = {
    "name": "State",
    "type": "string",
    "jsonPath": ".status.conditions[-1:].type",
}


def custom_resource_definition(
    *,
    group: str,
    version: str,
    kind: str,
    plural: str,
    printer_columns: Sequence[Mapping[str, str]] = (AGE_COLUMN,),
    scale: Mapping[str, str] | None = None,
) -> Manifest:
    """A namespaced CRD with one served, stored version, an open schema and a status subresource."""
    subresources: Manifest = {"status": {}}
    if scale is not None:
        subresources["scale"] = dict(scale)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata(f"{plural}.{group}"),
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": open_schema(),
                    "subresources": subresources,
                    "additionalPrinterColumns": [dict(c) for c in printer_columns],
                }
            ],
        },
    }

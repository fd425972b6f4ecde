"""Permissions HyperPod itself uses on the cluster: deep health checks, job auto-restart, patching.

HyperPod reaches the cluster as the Kubernetes user ``hyperpod-service-linked-role``
(its service-linked role, mapped by the access entry HyperPod creates) and runs
its deep health check pods as a ServiceAccount in ``aws-hyperpod``. Subjects and
rules follow the AWS chart's sub-charts ``deep-health-check``,
``job-auto-restart`` and ``hyperpod-patching`` (aws/sagemaker-hyperpod-cli,
helm_chart/HyperPodHelmChart/charts).
"""

from __future__ import annotations

from hyperpod_cdk.eks.manifests import _k8s as k8s
from hyperpod_cdk.eks.manifests._component import Component, make_component
from hyperpod_cdk.eks.manifests.health_agent import HYPERPOD_NAMESPACE

# The Kubernetes user name of HyperPod's service-linked role (chart: job-auto-restart-rbac.yaml,
# hyperpod-patching/clusterrolebinding.yaml).
HYPERPOD_USER = "hyperpod-service-linked-role"

DEEP_HEALTH_CHECK_ACCOUNT = "deep-health-check-service-account"
DEEP_HEALTH_CHECK_ROLE = "deep-health-check-service-account-role"
JOB_AUTO_RESTART = "job-auto-restart"
PATCHING = "hyperpod-patching"


def deep_health_check() -> Component:
    """The ServiceAccount deep health check pods run as: it reads nodes and reads/patches pods."""
    return make_component(
        "deep_health_check",
        "HyperPod deep health check permissions",
        HYPERPOD_NAMESPACE,
        [
            k8s.service_account(DEEP_HEALTH_CHECK_ACCOUNT, HYPERPOD_NAMESPACE),
            k8s.cluster_role(
                DEEP_HEALTH_CHECK_ROLE,
                [
                    k8s.rule([""], ["nodes"], ["get", "list"]),
                    k8s.rule([""], ["pods"], ["get", "list", "patch"]),
                ],
            ),
            k8s.cluster_role_binding(
                f"{DEEP_HEALTH_CHECK_ROLE}-binding",
                DEEP_HEALTH_CHECK_ROLE,
                [k8s.service_account_subject(DEEP_HEALTH_CHECK_ACCOUNT, HYPERPOD_NAMESPACE)],
            ),
        ],
    )


def job_auto_restart() -> Component:
    """What HyperPod needs to restart a PyTorchJob whose node failed, and to fence that node."""
    return make_component(
        "job_auto_restart",
        "HyperPod job auto-restart permissions",
        HYPERPOD_NAMESPACE,
        [
            # the chart creates this account too; HyperPod binds the role to its own user
            k8s.service_account(JOB_AUTO_RESTART, HYPERPOD_NAMESPACE),
            k8s.cluster_role(
                JOB_AUTO_RESTART,
                [
                    k8s.rule(
                        [""],
                        ["nodes", "nodes/status", "pods", "pods/status"],
                        ["get", "list", "watch"],
                    ),
                    k8s.rule([""], ["pods"], ["delete", "deletecollection"]),
                    k8s.rule([""], ["nodes", "nodes/status"], ["patch"]),
                    k8s.rule(["", "events.k8s.io"], ["events"], ["create"]),
                    k8s.rule(
                        ["kubeflow.org"],
                        ["pytorchjobs", "pytorchjobs/status"],
                        ["get", "list", "watch", "delete", "patch", "update"],
                    ),
                    k8s.rule(
                        ["coordination.k8s.io"], ["leases"], ["get", "create", "update", "delete"]
                    ),
                ],
            ),
            k8s.cluster_role_binding(
                JOB_AUTO_RESTART, JOB_AUTO_RESTART, [k8s.user_subject(HYPERPOD_USER)]
            ),
        ],
    )


def patching() -> Component:
    """What HyperPod needs to drain a node (evict its pods, cordon it) before patching its AMI."""
    return make_component(
        "patching",
        "HyperPod patching permissions",
        HYPERPOD_NAMESPACE,
        [
            k8s.cluster_role(
                PATCHING,
                [
                    k8s.rule([""], ["pods"], ["list"]),
                    k8s.rule([""], ["pods/eviction"], ["create"]),
                    k8s.rule([""], ["nodes"], ["list", "get", "patch"]),
                ],
            ),
            k8s.cluster_role_binding(PATCHING, PATCHING, [k8s.user_subject(HYPERPOD_USER)]),
        ],
    )

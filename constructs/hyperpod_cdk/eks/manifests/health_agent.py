"""The HyperPod health monitoring agent: a node agent on every GPU and Trainium node.

It watches the accelerators, the kernel log and EFA, and marks a faulty node
(labels, the ``node-health-status`` taint, events) so HyperPod can reboot or
replace it; automatic node recovery needs it. Objects, RBAC rules and pod
settings follow the AWS chart's ``charts/health-monitoring-agent``
(aws/sagemaker-hyperpod-cli): one DaemonSet for NVIDIA nodes, one for Neuron
nodes (which runs with the NVIDIA runtime hooks switched off and its own log
monitor configuration).
"""

from __future__ import annotations

from hyperpod_cdk.eks.manifests import _k8s as k8s
from hyperpod_cdk.eks.manifests._component import Component, make_component
from hyperpod_cdk.eks.manifests.images import health_agent_image
from hyperpod_cdk.eks.manifests.instance_types import (
    HEALTH_AGENT_NEURON_INSTANCE_TYPES,
    NVIDIA_GPU_INSTANCE_TYPES,
)

# Fixed by HyperPod (HYPERPOD_FACTS.md): the agent, and the deep health check and job auto-restart
# identities, live here.
HYPERPOD_NAMESPACE = "aws-hyperpod"
AGENT = "health-monitoring-agent"

# The agent reads the node's events and health, patches the node's labels/taints/conditions and
# records events (chart: health-monitoring-agent.yaml, ClusterRole).
_RULES = (
    k8s.rule([""], ["nodes"], ["get"]),
    k8s.rule([""], ["nodes", "nodes/status"], ["patch"]),
    k8s.rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"]),
)

_HOST_VOLUMES = (
    k8s.host_path_volume("log", "/var/log/"),
    k8s.host_path_volume("kmsg", "/dev/kmsg"),
    # same time zone as the host, so log timestamps line up
    k8s.host_path_volume("localtime", "/etc/localtime"),
)
_MOUNTS = (
    k8s.volume_mount("log", "/var/log"),
    k8s.volume_mount("kmsg", "/dev/kmsg", read_only=True),
    k8s.volume_mount("localtime", "/etc/localtime", read_only=True),
)


def _agent_daemon_set(
    name: str,
    image: str,
    instance_types: tuple[str, ...],
    *,
    args: tuple[str, ...] = (),
    extra_env: tuple[k8s.Manifest, ...] = (),
) -> k8s.Manifest:
    container: k8s.Manifest = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            k8s.field_env("NODE_NAME", "spec.nodeName"),
            k8s.field_env("NODE_IP", "status.hostIP"),
            *extra_env,
        ],
        "resources": k8s.resources("500m", "512Mi"),
        "securityContext": {"runAsUser": 1000, "runAsGroup": 2000},
        "volumeMounts": list(_MOUNTS),
    }
    if args:
        container["args"] = list(args)
    pod_spec: k8s.Manifest = {
        "serviceAccountName": AGENT,
        "affinity": k8s.instance_type_affinity(instance_types),
        # the agent must keep running on a node it (or anyone) has tainted
        "tolerations": k8s.tolerations(everything=True),
        "containers": [container],
        "volumes": list(_HOST_VOLUMES),
    }
    return k8s.daemon_set(name, HYPERPOD_NAMESPACE, {"app": name}, pod_spec)


def health_monitoring_agent(region: str) -> Component:
    """The agent's ServiceAccount, ClusterRole and binding, and its two DaemonSets."""
    image = health_agent_image(region)
    return make_component(
        "health_monitoring_agent",
        "HyperPod health monitoring agent",
        HYPERPOD_NAMESPACE,
        [
            k8s.service_account(AGENT, HYPERPOD_NAMESPACE),
            k8s.cluster_role(AGENT, _RULES),
            k8s.cluster_role_binding(
                AGENT, AGENT, [k8s.service_account_subject(AGENT, HYPERPOD_NAMESPACE)]
            ),
            _agent_daemon_set(AGENT, image, NVIDIA_GPU_INSTANCE_TYPES),
            _agent_daemon_set(
                f"{AGENT}-non-nvidia",
                image,
                HEALTH_AGENT_NEURON_INSTANCE_TYPES,
                args=(
                    "--enable-k8s-exporter=false",
                    "--config.system-log-monitor=/config/system-message-monitor.json",
                ),
                # no NVIDIA devices or driver libraries in this container
                extra_env=(
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
                ),
            ),
        ],
    )

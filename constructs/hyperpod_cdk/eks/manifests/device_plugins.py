"""Device plugins that advertise accelerators and EFA to the kubelet, in ``kube-system``.

Each is a DaemonSet limited (by instance type) to the HyperPod nodes that have
the device, tolerating the device's own NoSchedule taint and the HyperPod
health taint, at ``system-node-critical`` priority. They register a socket in
the kubelet's device-plugin directory:

* NVIDIA: ``nvidia.com/gpu`` (NVIDIA/k8s-device-plugin static deployment; the
  AWS chart installs NVIDIA's chart 0.16.1 with the HyperPod affinity and
  tolerations).
* Neuron: ``aws.amazon.com/neuron`` and ``aws.amazon.com/neuroncore``; it reads
  and annotates nodes and pods, hence its RBAC (AWS chart
  ``charts/neuron-device-plugin``).
* EFA: ``vpc.amazonaws.com/efa`` (aws/eks-charts ``aws-efa-k8s-device-plugin``,
  which the AWS chart installs with HyperPod's instance list).
"""

from __future__ import annotations

from hyperpod_cdk.eks.manifests import _k8s as k8s
from hyperpod_cdk.eks.manifests._component import Component, make_component
from hyperpod_cdk.eks.manifests.images import (
    NEURON_DEVICE_PLUGIN_IMAGE,
    NVIDIA_DEVICE_PLUGIN_IMAGE,
    efa_device_plugin_image,
)
from hyperpod_cdk.eks.manifests.instance_types import (
    EFA_INSTANCE_TYPES,
    NEURON_INSTANCE_TYPES,
    NVIDIA_GPU_INSTANCE_TYPES,
)

SYSTEM_NAMESPACE = "kube-system"
KUBELET_DEVICE_PLUGINS = "/var/lib/kubelet/device-plugins"

NVIDIA_GPU_TAINT = "nvidia.com/gpu"
NEURON_TAINT = "aws.amazon.com/neuron"
EFA_TAINT = "vpc.amazonaws.com/efa"


def _plugin_pod_spec(
    instance_types: tuple[str, ...],
    taint: str,
    container: k8s.Manifest,
    volumes: list[k8s.Manifest],
    **extra: object,
) -> k8s.Manifest:
    return {
        "priorityClassName": "system-node-critical",
        "affinity": k8s.instance_type_affinity(instance_types),
        "tolerations": k8s.tolerations(taint),
        "containers": [container],
        "volumes": volumes,
        **extra,
    }


def nvidia_device_plugin() -> Component:
    """NVIDIA device plugin DaemonSet on the GPU instance types."""
    name = "nvidia-device-plugin-daemonset"
    container: k8s.Manifest = {
        "name": "nvidia-device-plugin-ctr",
        "image": NVIDIA_DEVICE_PLUGIN_IMAGE,
        # keep running (advertising nothing) rather than crash-loop where no GPU is found
        "env": [{"name": "FAIL_ON_INIT_ERROR", "value": "false"}],
        "securityContext": dict(k8s.RESTRICTED_CONTAINER),
        "volumeMounts": [k8s.volume_mount("device-plugin", KUBELET_DEVICE_PLUGINS)],
    }
    pod_spec = _plugin_pod_spec(
        NVIDIA_GPU_INSTANCE_TYPES,
        NVIDIA_GPU_TAINT,
        container,
        [k8s.host_path_volume("device-plugin", KUBELET_DEVICE_PLUGINS)],
    )
    return make_component(
        "nvidia_device_plugin",
        "NVIDIA device plugin",
        SYSTEM_NAMESPACE,
        [k8s.daemon_set(name, SYSTEM_NAMESPACE, {"name": "nvidia-device-plugin-ds"}, pod_spec)],
    )


NEURON_PLUGIN = "neuron-device-plugin"

# The plugin reads nodes and pods, annotates pods with the devices they got and patches the
# node's allocatable resources (chart: k8s-neuron-device-plugin-rbac.yaml).
_NEURON_RULES = (
    k8s.rule([""], ["nodes"], ["get", "list", "watch"]),
    k8s.rule([""], ["events"], ["create", "patch"]),
    k8s.rule([""], ["pods"], ["update", "patch", "get", "list", "watch"]),
    k8s.rule([""], ["nodes/status"], ["patch", "update"]),
)


def neuron_device_plugin() -> Component:
    """Neuron device plugin: identity and RBAC, and the DaemonSet on Trainium/Inferentia types."""
    container: k8s.Manifest = {
        "name": NEURON_PLUGIN,
        "image": NEURON_DEVICE_PLUGIN_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            # as in the Neuron and AWS manifests; the plugin falls back to in-cluster credentials
            {"name": "KUBECONFIG", "value": "/etc/kubernetes/kubelet.conf"},
            k8s.field_env("NODE_NAME", "spec.nodeName"),
        ],
        "securityContext": dict(k8s.RESTRICTED_CONTAINER),
        "volumeMounts": [
            k8s.volume_mount("device-plugin", KUBELET_DEVICE_PLUGINS),
            # the Neuron runtime's device map
            k8s.volume_mount("infa-map", "/run"),
        ],
    }
    pod_spec = _plugin_pod_spec(
        NEURON_INSTANCE_TYPES,
        NEURON_TAINT,
        container,
        [
            k8s.host_path_volume("device-plugin", KUBELET_DEVICE_PLUGINS),
            k8s.host_path_volume("infa-map", "/run"),
        ],
        serviceAccountName=NEURON_PLUGIN,
    )
    return make_component(
        "neuron_device_plugin",
        "AWS Neuron device plugin",
        SYSTEM_NAMESPACE,
        [
            k8s.service_account(NEURON_PLUGIN, SYSTEM_NAMESPACE),
            k8s.cluster_role(NEURON_PLUGIN, _NEURON_RULES),
            k8s.cluster_role_binding(
                NEURON_PLUGIN,
                NEURON_PLUGIN,
                [k8s.service_account_subject(NEURON_PLUGIN, SYSTEM_NAMESPACE)],
            ),
            k8s.daemon_set(
                f"{NEURON_PLUGIN}-daemonset",
                SYSTEM_NAMESPACE,
                {"name": "neuron-device-plugin-ds"},
                pod_spec,
            ),
        ],
    )


def efa_device_plugin(region: str) -> Component:
    """EFA device plugin DaemonSet on the EFA-capable types, image from the region's EKS registry."""
    name = "aws-efa-k8s-device-plugin"
    container: k8s.Manifest = {
        "name": name,
        "image": efa_device_plugin_image(region),
        "securityContext": {**k8s.RESTRICTED_CONTAINER, "runAsNonRoot": False},
        "resources": k8s.resources("10m", "20Mi", limit=False),
        "volumeMounts": [
            k8s.volume_mount("device-plugin", KUBELET_DEVICE_PLUGINS),
            k8s.volume_mount("infiniband-volume", "/dev/infiniband/"),
            # on Trainium nodes the plugin reads the Neuron topology
            k8s.volume_mount("neuron-tools", "/opt/aws/neuron/"),
        ],
    }
    pod_spec = _plugin_pod_spec(
        EFA_INSTANCE_TYPES,
        EFA_TAINT,
        container,
        [
            k8s.host_path_volume("device-plugin", KUBELET_DEVICE_PLUGINS),
            k8s.host_path_volume("infiniband-volume", "/dev/infiniband/"),
            k8s.host_path_volume("neuron-tools", "/opt/aws/neuron/", type_="DirectoryOrCreate"),
        ],
        hostNetwork=True,
        automountServiceAccountToken=False,
    )
    return make_component(
        "efa_device_plugin",
        "EFA device plugin",
        SYSTEM_NAMESPACE,
        [k8s.daemon_set(f"{name}-daemonset", SYSTEM_NAMESPACE, {"name": name}, pod_spec)],
    )

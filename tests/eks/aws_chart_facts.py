"""Facts of AWS's HyperPod dependencies chart, the table test_chart_parity.py holds ours to.

Source: aws/sagemaker-hyperpod-cli, helm_chart/HyperPodHelmChart at commit
011ca927123e02b35a399935bbb3ab1905fe33c7 (2026-06-22): values.yaml (NVIDIA and EFA plugin
values), charts/health-monitoring-agent, charts/deep-health-check, charts/job-auto-restart,
charts/hyperpod-patching, charts/training-operators, charts/mpi-operator and
charts/neuron-device-plugin. Later AWS changes are named where they are used. Where this project
deliberately differs, DIFFERENCES says why; a test fails on any other difference.
"""

from __future__ import annotations

SOURCE_COMMIT = "011ca927123e02b35a399935bbb3ab1905fe33c7"


def _sizes(family: str, *sizes: str) -> list[str]:
    return [f"ml.{family}.{size}" for size in sizes]


_G_SIZES = (
    "xlarge",
    "2xlarge",
    "4xlarge",
    "8xlarge",
    "12xlarge",
    "16xlarge",
    "24xlarge",
    "48xlarge",
)

# values.yaml nvidia-device-plugin.affinity; the same list as the agent's NVIDIA DaemonSet
NVIDIA_GPU_TYPES = sorted([
    *_sizes("g5", *_G_SIZES), *_sizes("g6", *_G_SIZES), *_sizes("g6e", *_G_SIZES),
    *_sizes("g7e", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"),
    *_sizes("gr6", "4xlarge", "8xlarge"), "ml.p4d.24xlarge", "ml.p4de.24xlarge",
    "ml.p5.4xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge", "ml.p6e-gb200.36xlarge",
])  # fmt: skip
HEALTH_AGENT_NVIDIA_TYPES = NVIDIA_GPU_TYPES
# DIFFERENCES["instance_types.nvidia"]
ADDED_NVIDIA_TYPES = [*_sizes("g4dn", *_G_SIZES[:6]), *_sizes("g7", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")]  # fmt: skip

# charts/health-monitoring-agent, DaemonSet health-monitoring-agent-non-nvidia
HEALTH_AGENT_NEURON_TYPES = sorted([
    *_sizes("inf2", "xlarge", "8xlarge", "24xlarge", "48xlarge"), "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge", "ml.trn2.3xlarge", "ml.trn2.48xlarge",
])  # fmt: skip

# charts/neuron-device-plugin (its ml.-prefixed entries; it also lists EC2 names HyperPod nodes
# never carry)
NEURON_TYPES = sorted([
    *_sizes("inf2", "xlarge", "8xlarge", "24xlarge", "48xlarge"), "ml.trn1.2xlarge",
    "ml.trn1.32xlarge", "ml.trn1n.32xlarge", "ml.trn2.48xlarge",
])  # fmt: skip

# values.yaml aws-efa-k8s-device-plugin.supportedInstanceLabels
EFA_TYPES = sorted([
    "ml.c5n.9xlarge", "ml.c5n.18xlarge",
    *_sizes("g5", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g6", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g6e", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g7e", "8xlarge", "12xlarge", "24xlarge", "48xlarge"), "ml.gr6.8xlarge",
    "ml.i3en.12xlarge", "ml.i3en.24xlarge", "ml.m7i.48xlarge", "ml.p4d.24xlarge",
    "ml.p4de.24xlarge", "ml.p5.4xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge",
    "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge", "ml.p6e-gb200.36xlarge",
    "ml.r7i.48xlarge", "ml.trn1.32xlarge", "ml.trn1n.32xlarge", "ml.trn2.3xlarge",
    "ml.trn2.48xlarge",
])  # fmt: skip

# DIFFERENCES["instance_types.efa"]
ADDED_EFA_TYPES = _sizes("g4dn", "8xlarge", "12xlarge", "16xlarge")

HEALTH = {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Equal",
          "value": "Unschedulable", "effect": "NoSchedule"}  # fmt: skip
CRITICAL = {"key": "CriticalAddonsOnly", "operator": "Exists"}

# Tolerations of each workload (by our object name; AWS's names are the same unless noted).
TOLERATIONS: dict[str, list[dict[str, str]]] = {
    "nvidia-device-plugin-daemonset": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, HEALTH,
    ],
    "aws-efa-k8s-device-plugin-daemonset": [
        CRITICAL, {"key": "aws.amazon.com/efa", "operator": "Exists", "effect": "NoSchedule"}, HEALTH,
    ],
    "neuron-device-plugin-daemonset": [
        CRITICAL, {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}, HEALTH,
    ],
    "health-monitoring-agent": [
        {"operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists", "effect": "NoExecute"},
    ],
    "health-monitoring-agent-non-nvidia": [
        {"operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists", "effect": "NoExecute"},
    ],
    "mpi-operator": [HEALTH],  # AWS: <release>-mpi-operator
    "training-operator": [],
}  # fmt: skip

# Images as AWS's chart deploys them: repository:tag (registries: public ones as named; the
# agent and the EFA plugin from the region's AWS-owned Amazon ECR registry).
IMAGES = {
    "health_monitoring_agent": "hyperpod-health-monitoring-agent:1.0.1892.0_1.0.424.0",
    "training_operator": "docker.io/kubeflow/training-operator:v1-855e096",
    "mpi_operator": "docker.io/mpioperator/mpi-operator:0.5",
    # NVIDIA's chart 0.16.1 (values.yaml dependency) runs this image
    "nvidia_device_plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.16.1",
    "neuron_device_plugin": "public.ecr.aws/neuron/neuron-device-plugin:2.19.16.0",
    # aws/eks-charts chart aws-efa-k8s-device-plugin 0.5.20 (values.yaml dependency) ships v0.5.13
    "efa_device_plugin": "eks/aws-efa-k8s-device-plugin:v0.5.13",
}

# charts/health-monitoring-agent/templates/_helpers.tpl, region -> registry account
HEALTH_AGENT_ACCOUNTS = {
    "us-east-1": "767398015722", "us-west-2": "905418368575", "us-east-2": "851725546812",
    "us-west-1": "011528288828", "eu-central-1": "211125453373", "eu-north-1": "654654141839",
    "eu-west-1": "533267293120", "eu-west-2": "011528288831", "eu-south-2": "626887787726",
    "ap-northeast-1": "533267052152", "ap-south-1": "011528288864",
    "ap-southeast-1": "905418428165", "ap-southeast-2": "851725636348",
    "ap-southeast-3": "971422672635", "ap-southeast-4": "084375568333",
    "ca-central-1": "843976229209", "sa-east-1": "025066253954",
}  # fmt: skip

_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
_TRAINING = ("mpijobs", "tfjobs", "mxjobs", "pytorchjobs", "xgboostjobs", "paddlejobs")

# ClusterRole rules, as (apiGroups, resources, verbs); "*" verbs are expanded to _VERBS.
RBAC: dict[str, list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {
    "health-monitoring-agent": [
        (("",), ("nodes",), ("get",)),
        (("",), ("nodes", "nodes/status"), ("patch",)),
        (("", "events.k8s.io"), ("events",), ("create", "patch", "update")),
    ],
    "deep-health-check-service-account-role": [
        (("",), ("nodes",), ("get", "list")),
        (("",), ("pods",), ("get", "list", "patch")),
    ],
    "job-auto-restart": [
        (("",), ("nodes", "nodes/status", "pods", "pods/status"), ("get", "list", "watch")),
        (("",), ("pods",), ("delete", "deletecollection")),
        (("",), ("nodes", "nodes/status"), ("patch",)),
        (("", "events.k8s.io"), ("events",), ("create",)),
        (("kubeflow.org",), ("pytorchjobs", "pytorchjobs/status"),
         ("get", "list", "watch", "delete", "patch", "update", "describe")),
        (("coordination.k8s.io",), ("leases",), ("get", "create", "update", "delete")),
    ],
    "hyperpod-patching": [
        (("",), ("pods",), ("list",)),
        (("",), ("pods/eviction",), ("create",)),
    ],
    "neuron-device-plugin": [
        (("",), ("nodes",), ("get", "list", "watch")),
        (("",), ("events",), ("create", "patch")),
        (("",), ("pods",), ("update", "patch", "get", "list", "watch")),
        (("",), ("nodes/status",), ("patch", "update")),
    ],
    "mpi-operator": [  # AWS: <release>-mpi-operator
        (("",), ("configmaps", "secrets", "services"), ("create", "list", "watch", "update")),
        (("",), ("pods",), ("create", "get", "list", "watch", "delete", "update", "patch")),
        (("",), ("pods/exec",), ("create",)),
        (("",), ("endpoints",), ("create", "get", "update")),
        (("",), ("events",), ("create", "patch")),
        (("batch",), ("jobs",), ("create", "list", "update", "watch")),
        (("apiextensions.k8s.io",), ("customresourcedefinitions",), ("create", "get")),
        (("kubeflow.org",), ("mpijobs", "mpijobs/finalizers", "mpijobs/status"), ("*",)),
        (("coordination.k8s.io",), ("leases",), ("*",)),
        (("scheduling.incubator.k8s.io", "scheduling.sigs.dev", "scheduling.volcano.sh"),
         ("queues", "podgroups"), ("*",)),
        (("scheduling.x-k8s.io",), ("podgroups",), ("*",)),
        (("scheduling.k8s.io",), ("priorityclasses",), ("get", "list", "watch")),
    ],
    "training-operator": [
        (("kubeflow.org",), (*_TRAINING, *(f"{p}/status" for p in _TRAINING),
                             *(f"{p}/finalizers" for p in _TRAINING)),
         ("create", "delete", "get", "list", "patch", "update", "watch")),
        (("",), ("pods", "services", "endpoints", "events"), ("*",)),
        (("apps", "extensions"), ("deployments",), ("*",)),
        (("",), ("pods/exec",), ("create",)),
        (("rbac.authorization.k8s.io",), ("roles", "rolebindings"), ("create", "list", "watch", "update")),
        (("",), ("configmaps", "secrets", "serviceaccounts"), ("create", "list", "watch", "update")),
        (("scheduling.volcano.sh",), ("podgroups",), ("*",)),
        (("autoscaling",), ("horizontalpodautoscalers",), ("*",)),
        (("scheduling.sigs.k8s.io",), ("podgroups",), ("*",)),
    ],
    "kubeflow-training-edit": [
        (("kubeflow.org",), _TRAINING, ("create", "delete", "get", "list", "patch", "update", "watch")),
        (("kubeflow.org",), tuple(f"{p}/status" for p in _TRAINING), ("get",)),
    ],
    "kubeflow-training-view": [
        (("kubeflow.org",), _TRAINING, ("get", "list", "watch")),
        (("kubeflow.org",), tuple(f"{p}/status" for p in _TRAINING), ("get",)),
    ],
    # charts/cluster-role-and-bindings (a ClusterRole)
    "hyperpod-scientist-user-cluster-role": [
        (("",), ("pods",), ("list",)),
        (("",), ("nodes",), ("list",)),
    ],
    # charts/namespaced-role-and-bindings (a Role in namespace kubeflow)
    "hyperpod-scientist-user-namespace-level-role": [
        (("",), ("pods",), ("create", "get")),
        (("",), ("nodes",), ("get", "list")),
        (("",), ("pods/log",), ("get", "list")),
        (("",), ("pods/exec",), ("get", "create")),
        (("kubeflow.org",), ("pytorchjobs", "pytorchjobs/status"),
         ("get", "list", "create", "delete", "update", "describe")),
        (("",), ("configmaps",), ("create", "update", "get", "delete", "list")),
        (("",), ("secrets",), ("create", "get", "list", "delete")),
    ],
}  # fmt: skip

# The subjects AWS's scientist roles are bound to (group names AWS's docs and the hyp CLI use):
# role -> (binding kind, binding name, namespace or None, group).
SCIENTIST_BINDINGS = {
    "hyperpod-scientist-user-cluster-role": (
        "ClusterRoleBinding", "hyperpod-scientist-user-cluster-role-binding", None,
        "hyperpod-scientist-user-cluster-role-cluster-level"),
    "hyperpod-scientist-user-namespace-level-role": (
        "RoleBinding", "hyperpod-scientist-user-namespace-level-role-binding", "kubeflow",
        "hyperpod-scientist-user-namespace-level-role-kubeflow-level"),
}  # fmt: skip

_MPI_V1 = "MPIJob v1 is served by the MPI operator (v2beta1), not the training operator"
_NO_DELETECOLLECTION = (
    "the operator deletes a replica's objects one by one; AWS's '*' also grants deletecollection"
)

# (role, apiGroup, resource, verb) that AWS's chart grants and this project does not, with why.
RBAC_NOT_GRANTED: dict[tuple[str, str, str, str], str] = {
    **{("hyperpod-scientist-user-namespace-level-role", "kubeflow.org", r, "describe"):
       "not a Kubernetes verb (RBAC ignores it)" for r in ("pytorchjobs", "pytorchjobs/status")},
    **{("hyperpod-scientist-user-namespace-level-role", "", "nodes", v): "nodes are "
       "cluster-scoped: a namespaced Role cannot grant them (the cluster-level role lists them)"
       for v in ("get", "list")},
    **{("job-auto-restart", "kubeflow.org", r, "describe"):
       "not a Kubernetes verb (RBAC ignores it)" for r in ("pytorchjobs", "pytorchjobs/status")},
    **{("training-operator", "kubeflow.org", f"mpijobs{s}", v): _MPI_V1
       for s in ("", "/status", "/finalizers")
       for v in ("create", "delete", "get", "list", "patch", "update", "watch")},
    **{("kubeflow-training-edit", "kubeflow.org", r, v): _MPI_V1 + " (kubeflow-mpijobs-edit)"
       for r, verbs in (("mpijobs", ("create", "delete", "get", "list", "patch", "update", "watch")),
                        ("mpijobs/status", ("get",)))
       for v in verbs},
    **{("kubeflow-training-view", "kubeflow.org", r, v): _MPI_V1 + " (kubeflow-mpijobs-view)"
       for r, verbs in (("mpijobs", ("get", "list", "watch")), ("mpijobs/status", ("get",)))
       for v in verbs},
    **{("training-operator", "", r, "deletecollection"): _NO_DELETECOLLECTION
       for r in ("pods", "services", "endpoints", "events")},
    **{("training-operator", g, "deployments", v): "v1.7.0 creates no Deployments for the kinds it "
       "serves here (an MPIJob v1 leftover)" for g in ("apps", "extensions") for v in _VERBS},
    ("training-operator", "", "pods/exec", "create"): _MPI_V1 + " (the launcher execs into workers)",
    **{("training-operator", "rbac.authorization.k8s.io", r, v): _MPI_V1 + " (launcher Role)"
       for r in ("roles", "rolebindings") for v in ("create", "list", "watch", "update")},
    **{("training-operator", "", r, v): _MPI_V1 + " (launcher account, SSH keys)"
       for r in ("secrets", "serviceaccounts") for v in ("create", "list", "watch", "update")},
    **{("training-operator", "scheduling.volcano.sh", "podgroups", "deletecollection"):
       _NO_DELETECOLLECTION, ("training-operator", "scheduling.sigs.k8s.io", "podgroups",
       "deletecollection"): _NO_DELETECOLLECTION,
       ("training-operator", "autoscaling", "horizontalpodautoscalers", "deletecollection"):
       _NO_DELETECOLLECTION},
}  # fmt: skip

# What this project deliberately does differently from the chart's facts above, and why.
DIFFERENCES = {
    "images.health_monitoring_agent": "1.0.2297.0_1.0.474.0, the tag of aws/sagemaker-hyperpod-cli "
    "PR #443 (2026-08-06: G7 and trn2.3xlarge support), newer than the source commit's",
    "images.mpi_operator": "0.5.0, the immutable release tag of the moving tag 0.5",
    "instance_types.neuron": "ml.trn2.3xlarge added: it has Neuron devices, and the agent and EFA "
    "lists of the same chart carry it",
    "instance_types.nvidia": "ml.g4dn.* and ml.g7.* added to the NVIDIA plugin's and the agent's "
    "list: HyperPod offers them (botocore ClusterInstanceType) and AWS adds them in PR #434/#435 "
    "(G4dn) and #447 (G7), open when read; PR #443 (merged) gives the agent G7 support",
    "instance_types.efa": "ml.g4dn.8xlarge, 12xlarge and 16xlarge added: the EFA sizes the EFA "
    "plugin's own chart lists (aws/eks-charts@050f81ee stable/aws-efa-k8s-device-plugin/"
    "values.yaml); AWS's PR #434 adds G4dn",
    "tolerations": "every pod also tolerates the health taint and CriticalAddonsOnly (the training "
    "operator in AWS's chart tolerates nothing, so it cannot run on tainted system nodes)",
}

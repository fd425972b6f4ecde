"""The Kubeflow training operator (v1.7.0) and MPI operator (v0.5), at the versions AWS pins.

Both are controllers with a Deployment, an identity and cluster-wide RBAC, and
the CRDs of the jobs they run. The CRDs use an open schema (the operators
default and validate their objects themselves), keep the status subresource
the controllers write through, and the printer columns ``kubectl get`` shows.

Neither version runs admission webhooks (the training operator gained them in
v1.8.0), so no serving certificate is needed. The training operator serves
every job kind except MPIJob: MPIJob belongs to the MPI operator (v2beta1), and
both controllers acting on the same objects would fight, so the training
operator is started with ``--enable-scheme`` for the other kinds only.
"""

from __future__ import annotations

from hyperpod_cdk.eks.manifests import _k8s as k8s
from hyperpod_cdk.eks.manifests._component import Component, make_component
from hyperpod_cdk.eks.manifests.images import MPI_OPERATOR_IMAGE, TRAINING_OPERATOR_IMAGE

KUBEFLOW_GROUP = "kubeflow.org"

# -- training operator -------------------------------------------------------------------------

TRAINING_NAMESPACE = "kubeflow"
TRAINING_OPERATOR = "training-operator"
_TRAINING_SELECTOR = {"control-plane": "kubeflow-training-operator"}

# (kind, plural, --enable-scheme value) of the job kinds v1.7.0 serves, MPIJob left out (above).
TRAINING_JOB_KINDS: tuple[tuple[str, str, str], ...] = (
    ("PyTorchJob", "pytorchjobs", "pytorchjob"),
    ("TFJob", "tfjobs", "tfjob"),
    ("MXJob", "mxjobs", "mxjob"),
    ("XGBoostJob", "xgboostjobs", "xgboostjob"),
    ("PaddleJob", "paddlejobs", "paddlejob"),
)

# Elastic PyTorchJobs are scaled by a HorizontalPodAutoscaler through this scale subresource
# (training-operator v1 PyTorchJob CRD: Worker replicas, the job's label selector in its status).
_PYTORCH_SCALE = {
    "specReplicasPath": ".spec.pytorchReplicaSpecs.Worker.replicas",
    "statusReplicasPath": ".status.replicaStatuses.Active",
    "labelSelectorPath": ".status.labelSelector",
}

_WRITE = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _training_rules() -> list[k8s.Manifest]:
    plurals = [plural for _, plural, _ in TRAINING_JOB_KINDS]
    return [
        k8s.rule([KUBEFLOW_GROUP], plurals, _WRITE),
        k8s.rule([KUBEFLOW_GROUP], [f"{p}/status" for p in plurals], ["get", "patch", "update"]),
        k8s.rule([KUBEFLOW_GROUP], [f"{p}/finalizers" for p in plurals], ["update"]),
        # the pods and headless services of each replica
        k8s.rule([""], ["pods"], _WRITE),
        k8s.rule([""], ["services"], ["create", "delete", "get", "list", "watch"]),
        k8s.rule([""], ["events"], ["create", "patch", "update"]),
        # elastic PyTorchJob autoscaling
        k8s.rule(
            ["autoscaling"],
            ["horizontalpodautoscalers"],
            ["create", "delete", "get", "list", "update", "watch"],
        ),
        # gang scheduling, when a job asks for it (Volcano or scheduler-plugins)
        k8s.rule(["scheduling.volcano.sh", "scheduling.x-k8s.io"], ["podgroups"], _WRITE),
    ]


def _training_deployment() -> k8s.Manifest:
    container: k8s.Manifest = {
        "name": TRAINING_OPERATOR,
        "image": TRAINING_OPERATOR_IMAGE,
        "command": ["/manager"],
        "args": [f"--enable-scheme={scheme}" for _, _, scheme in TRAINING_JOB_KINDS],
        "env": [
            k8s.field_env("MY_POD_NAMESPACE", "metadata.namespace"),
            k8s.field_env("MY_POD_NAME", "metadata.name"),
        ],
        # metrics on 8080, health probes on 8081 (v1.7.0 defaults)
        "ports": [{"name": "monitoring-port", "containerPort": 8080}],
        "livenessProbe": _probe("/healthz", initial_delay=15, period=20),
        "readinessProbe": _probe("/readyz", initial_delay=10, period=15),
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    pod_spec: k8s.Manifest = {
        "serviceAccountName": TRAINING_OPERATOR,
        "terminationGracePeriodSeconds": 10,
        "tolerations": k8s.tolerations(),
        "containers": [container],
    }
    return k8s.deployment(
        TRAINING_OPERATOR,
        TRAINING_NAMESPACE,
        _TRAINING_SELECTOR,
        pod_spec,
        annotations={"sidecar.istio.io/inject": "false"},
    )


def _probe(path: str, *, initial_delay: int, period: int) -> k8s.Manifest:
    return {
        "httpGet": {"path": path, "port": 8081},
        "initialDelaySeconds": initial_delay,
        "periodSeconds": period,
        "timeoutSeconds": 3,
    }


def training_operator() -> Component:
    """Kubeflow training operator v1.7.0: job CRDs, identity, RBAC, metrics Service, Deployment."""
    crds = [
        k8s.custom_resource_definition(
            group=KUBEFLOW_GROUP,
            version="v1",
            kind=kind,
            plural=plural,
            printer_columns=(k8s.STATE_COLUMN, k8s.AGE_COLUMN),
            scale=_PYTORCH_SCALE if kind == "PyTorchJob" else None,
        )
        for kind, plural, _ in TRAINING_JOB_KINDS
    ]
    return make_component(
        "training_operator",
        "Kubeflow training operator",
        TRAINING_NAMESPACE,
        [
            *crds,
            k8s.service_account(TRAINING_OPERATOR, TRAINING_NAMESPACE),
            k8s.cluster_role(TRAINING_OPERATOR, _training_rules()),
            k8s.cluster_role_binding(
                TRAINING_OPERATOR,
                TRAINING_OPERATOR,
                [k8s.service_account_subject(TRAINING_OPERATOR, TRAINING_NAMESPACE)],
            ),
            k8s.service(
                TRAINING_OPERATOR,
                TRAINING_NAMESPACE,
                _TRAINING_SELECTOR,
                [{"name": "monitoring-port", "port": 8080, "targetPort": 8080}],
            ),
            _training_deployment(),
        ],
    )


# -- MPI operator ------------------------------------------------------------------------------

MPI_NAMESPACE = "mpi-operator"
MPI_OPERATOR = "mpi-operator"
_MPI_SELECTOR = {"app": "mpi-operator"}

# What the v2 controller manages: launcher Job, worker pods, their Service, hostfile ConfigMap
# and SSH key Secret; leader election in its own namespace; optional gang scheduling.
# (AWS chart charts/mpi-operator/templates/rbac.yaml, as in the upstream v0.5 deployment.)
_MPI_RULES = (
    k8s.rule([""], ["configmaps", "secrets", "services"], ["create", "list", "watch", "update"]),
    k8s.rule([""], ["pods"], ["create", "get", "list", "watch", "delete", "update", "patch"]),
    k8s.rule([""], ["pods/exec"], ["create"]),
    k8s.rule([""], ["endpoints"], ["create", "get", "update"]),
    k8s.rule([""], ["events"], ["create", "patch"]),
    k8s.rule(["batch"], ["jobs"], ["create", "list", "update", "watch"]),
    k8s.rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], ["create", "get"]),
    k8s.rule([KUBEFLOW_GROUP], ["mpijobs", "mpijobs/finalizers", "mpijobs/status"], ["*"]),
    k8s.rule(["coordination.k8s.io"], ["leases"], ["*"]),
    k8s.rule(
        ["scheduling.incubator.k8s.io", "scheduling.sigs.dev", "scheduling.volcano.sh"],
        ["queues", "podgroups"],
        ["*"],
    ),
    k8s.rule(["scheduling.x-k8s.io"], ["podgroups"], ["*"]),
    k8s.rule(["scheduling.k8s.io"], ["priorityclasses"], ["get", "list", "watch"]),
)


def _mpi_deployment() -> k8s.Manifest:
    container: k8s.Manifest = {
        "name": MPI_OPERATOR,
        "image": MPI_OPERATOR_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "-alsologtostderr",
            # leader election lease lives here
            f"--lock-namespace={MPI_NAMESPACE}",
            "-stderrthreshold=INFO",
            "-v=4",
        ],
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    pod_spec: k8s.Manifest = {
        "serviceAccountName": MPI_OPERATOR,
        "tolerations": k8s.tolerations(),
        "containers": [container],
    }
    return k8s.deployment(
        MPI_OPERATOR,
        MPI_NAMESPACE,
        _MPI_SELECTOR,
        pod_spec,
        annotations={"sidecar.istio.io/inject": "false"},
    )


def mpi_operator() -> Component:
    """Kubeflow MPI operator v0.5: the MPIJob v2beta1 CRD, identity, RBAC and Deployment."""
    return make_component(
        "mpi_operator",
        "Kubeflow MPI operator",
        MPI_NAMESPACE,
        [
            k8s.custom_resource_definition(
                group=KUBEFLOW_GROUP, version="v2beta1", kind="MPIJob", plural="mpijobs"
            ),
            k8s.service_account(MPI_OPERATOR, MPI_NAMESPACE),
            k8s.cluster_role(MPI_OPERATOR, _MPI_RULES),
            k8s.cluster_role_binding(
                MPI_OPERATOR,
                MPI_OPERATOR,
                [k8s.service_account_subject(MPI_OPERATOR, MPI_NAMESPACE)],
            ),
            _mpi_deployment(),
        ],
    )

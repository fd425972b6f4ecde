"""Issue 34, H2 and M2: EKS tenants stay in their namespaces.

Security review H2: the scientist Role (pods, pods/exec) lived in ``kubeflow`` beside the training
operator's ServiceAccount, which may create pods in every namespace: a pod with
``serviceAccountName: training-operator`` was cluster-wide pod create. M2: team principals (EKS
Edit on ``hyperpod-ns-<team>``) could run privileged pods. The chart now puts the scientist Role
in a namespace of its own and ships a ValidatingAdmissionPolicy on every pod of the workload
namespaces; its CEL expressions are evaluated here by a real CEL engine (cel-python) on allowed
and refused pods, including the pods a privileged PyTorchJob's template would make.

Kubernetes: ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in 1.30),
https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/ ; the
kubernetes.io/metadata.name label on every namespace (GA in 1.22),
https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-metadata-name
"""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest
from chart_testkit import by_kind_name, helm, render, render_result

from hyperpod_cdk.facts import chart

HELM35 = "1.35"
REGION = "us-west-2"
TEAMS = ["hyperpod-ns-research", "hyperpod-ns-applied"]
POLICY = "hyperpod-cdk-workload-pods"
VERBS_THAT_MAKE_PODS = {"create", "*"}


def _render_all(workload_namespaces=TEAMS) -> list[dict[str, Any]]:
    objects = []
    for release in chart.releases_for(chart.DEPENDENCY_KEYS, workload_namespaces):
        values = chart.release_values(
            release,
            region=REGION,
            enabled=chart.DEPENDENCY_KEYS,
            workload_namespaces=workload_namespaces,
        )
        objects += render(helm(HELM35), values, release=release.name, namespace=release.namespace)
    return objects


@pytest.fixture(scope="module")
def everything() -> list[dict[str, Any]]:
    """Every object of every release, all components on, two teams."""
    return _render_all()


@pytest.fixture(scope="module")
def policy(everything) -> dict[str, Any]:
    return by_kind_name(everything)[("ValidatingAdmissionPolicy", POLICY)]


# -- the namespaces --------------------------------------------------------------------------


def _namespace_of(obj: dict[str, Any], release_namespace: dict[str, str]) -> str:
    return obj["metadata"].get("namespace") or release_namespace.get(obj["metadata"]["name"], "")


def test_no_role_that_makes_pods_shares_a_namespace_with_a_powerful_service_account(everything) -> None:  # fmt: skip
    """A pod may run as any ServiceAccount of its namespace: where people may create pods there
    must be no ServiceAccount bound to a ClusterRole (the training operator's in kubeflow)."""
    accounts = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in everything
        if o["kind"] == "ServiceAccount"
    }
    cluster_bound = {
        (s["namespace"], s["name"])
        for o in everything
        if o["kind"] == "ClusterRoleBinding"
        for s in o["subjects"]
        if s["kind"] == "ServiceAccount"
    }
    assert ("kubeflow", "training-operator") in cluster_bound  # the review's ServiceAccount
    for role in (o for o in everything if o["kind"] == "Role"):
        makes_pods = any(
            "pods" in rule["resources"] and VERBS_THAT_MAKE_PODS & set(rule["verbs"])
            for rule in role["rules"]
            if "" in rule["apiGroups"]
        )
        if makes_pods:
            namespace = role["metadata"]["namespace"]
            assert not {a for a in accounts if a[0] == namespace}, (role["metadata"], namespace)
            assert namespace == chart.SCIENTIST_NAMESPACE


def test_the_scientist_role_keeps_aws_group_name_in_its_own_namespace(everything) -> None:
    found = by_kind_name(everything)
    role = found[("Role", "hyperpod-scientist-user-namespace-level-role")]
    binding = found[("RoleBinding", "hyperpod-scientist-user-namespace-level-role-binding")]
    assert (
        role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "hyperpod-scientists"
    )
    assert binding["subjects"][0]["name"] == "hyperpod-scientist-user-namespace-level-role-kubeflow-level"  # fmt: skip
    namespace = found[("Namespace", "hyperpod-scientists")]
    assert namespace["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_the_scientist_namespace_cannot_be_kubeflow() -> None:
    (release,) = [r for r in chart.RELEASES if r.name == chart.POLICY_RELEASE]
    values = chart.release_values(release, region=REGION, enabled=["scientist_rbac"])
    values["scientistRbac"]["namespace"] = "kubeflow"
    result = render_result(helm(HELM35), values, release=release.name, namespace="kubeflow")
    assert result.returncode != 0
    assert "scientistRbac.namespace must not be the release namespace" in result.stderr


def test_the_binding_holds_the_scientist_and_team_namespaces_by_name(everything) -> None:
    binding = by_kind_name(everything)[("ValidatingAdmissionPolicyBinding", POLICY)]
    assert binding["spec"]["policyName"] == POLICY
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["matchResources"]["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "In",
                "values": ["hyperpod-scientists", *TEAMS],
            }
        ]
    }


def test_teams_without_the_scientist_roles_still_get_the_policy() -> None:
    enabled = [k for k in chart.DEPENDENCY_KEYS if k != "scientist_rbac"]
    releases = chart.releases_for(enabled, TEAMS)
    (release,) = [r for r in releases if r.name == chart.POLICY_RELEASE]
    values = chart.release_values(
        release, region=REGION, enabled=enabled, workload_namespaces=TEAMS
    )
    found = by_kind_name(render(helm(HELM35), values, release=release.name, namespace=release.namespace))  # fmt: skip
    assert ("Role", "hyperpod-scientist-user-namespace-level-role") not in found
    binding = found[("ValidatingAdmissionPolicyBinding", POLICY)]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == TEAMS  # fmt: skip
    assert chart.releases_for(enabled) == [r for r in releases if r.name != chart.POLICY_RELEASE]


def test_the_policy_covers_every_pod_whoever_creates_it(policy) -> None:
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule["resources"] == ["pods", "pods/ephemeralcontainers"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}
    # no matchConditions on the user: the training operator's and a ReplicaSet's pods count too
    assert "matchConditions" not in spec


# -- the CEL expressions, evaluated -----------------------------------------------------------


def _evaluate(policy: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    """The messages of the validations ``pod`` fails, as the API server would evaluate them."""
    env = celpy.Environment()
    activation: dict[str, Any] = {"object": celpy.json_to_cel(pod)}
    variables: dict[str, Any] = {}
    for variable in policy["spec"].get("variables", []):
        program = env.program(env.compile(variable["expression"]))
        variables[variable["name"]] = program.evaluate({**activation, "variables": celpy.json_to_cel(variables)})  # fmt: skip
    activation["variables"] = celpy.json_to_cel(variables)
    failed = []
    for validation in policy["spec"]["validations"]:
        result = env.program(env.compile(validation["expression"])).evaluate(activation)
        assert isinstance(result, celpy.celtypes.BoolType), (validation["expression"], result)
        if not result:
            failed.append(validation.get("message") or validation["messageExpression"])
    return failed


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x", "namespace": "hyperpod-scientists"},
        "spec": {"containers": [{"name": "x", "image": "bitnami/kubectl"}], **spec},
    }


def _privileged(container: dict[str, Any]) -> dict[str, Any]:
    return {**container, "securityContext": {"privileged": True}}


ALLOWED = {
    "plain": _pod(),
    "default service account": _pod(serviceAccountName="default"),
    "not privileged": _pod(
        containers=[{"name": "x", "securityContext": {"privileged": False, "runAsUser": 1000}}]
    ),  # fmt: skip
    "host flags false": _pod(hostNetwork=False, hostPID=False, hostIPC=False),
    "pvc and emptyDir": _pod(
        volumes=[
            {"name": "d", "emptyDir": {}},
            {"name": "f", "persistentVolumeClaim": {"claimName": "fsx"}},
        ]
    ),  # fmt: skip
}
REFUSED = {
    # the review's H2 pod
    "training-operator service account": (
        _pod(serviceAccountName="training-operator"),
        "ServiceAccounts",
    ),  # fmt: skip
    "privileged container": (_pod(containers=[_privileged({"name": "x"})]), "privileged"),
    "privileged init container": (_pod(initContainers=[_privileged({"name": "i"})]), "privileged"),
    "privileged ephemeral container": (
        _pod(ephemeralContainers=[_privileged({"name": "e"})]),
        "privileged",
    ),  # fmt: skip
    "host network": (_pod(hostNetwork=True), "host's network"),
    "host pid": (_pod(hostPID=True), "host's network"),
    "host ipc": (_pod(hostIPC=True), "host's network"),
    "hostPath /": (_pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}]), "hostPath"),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_the_policy_admits(policy, name: str) -> None:
    assert _evaluate(policy, ALLOWED[name]) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_policy_refuses(policy, name: str) -> None:
    pod, words = REFUSED[name]
    failed = _evaluate(policy, pod)
    assert len(failed) == 1 and words in failed[0], failed


PRIVILEGED_PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "escape", "namespace": "hyperpod-ns-research"},
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "template": {
                    "spec": {
                        "hostPID": True,
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": "pytorch/pytorch",
                                "securityContext": {"privileged": True},
                                "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                            }
                        ],
                        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
                    }
                },
            }
        }
    },
}


def test_the_pods_of_a_privileged_pytorchjob_are_refused(policy) -> None:
    """The training operator makes the pods from the template: the policy sees each pod."""
    template = PRIVILEGED_PYTORCHJOB["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "escape-master-0"},
           "spec": copy.deepcopy(template["spec"])}  # fmt: skip
    failed = _evaluate(policy, pod)
    assert len(failed) == 3  # host namespaces, privileged, hostPath
    pod["spec"] = {"containers": [{"name": "pytorch", "image": "pytorch/pytorch"}]}
    assert _evaluate(policy, pod) == []


def test_the_allowed_service_accounts_come_from_the_values() -> None:
    (release,) = [r for r in chart.RELEASES if r.name == chart.POLICY_RELEASE]
    values = chart.release_values(release, region=REGION, enabled=["scientist_rbac"])
    values["podPolicy"]["allowedServiceAccounts"] = ["default", "s3-reader"]
    found = by_kind_name(render(helm(HELM35), values, release=release.name, namespace=release.namespace))  # fmt: skip
    vap = found[("ValidatingAdmissionPolicy", POLICY)]
    assert _evaluate(vap, _pod(serviceAccountName="s3-reader")) == []
    assert _evaluate(vap, _pod(serviceAccountName="training-operator")) != []


def test_the_construct_passes_the_team_namespaces_to_the_policy_release() -> None:
    import aws_cdk as cdk

    from hyperpod_cdk.eks.dependencies import HyperPodDependencies

    class Target:
        def __init__(self) -> None:
            self.specs: dict[str, Any] = {}

        def add_chart(self, construct_id: str, spec: Any) -> Any:
            self.specs[spec.release] = spec
            return None

    target = Target()
    stack = cdk.Stack(cdk.App(), "Test")
    HyperPodDependencies(stack, "Deps", cluster=target, region=REGION,
                         enabled=["scientist_rbac"], workload_namespaces=TEAMS)  # fmt: skip
    values = target.specs[chart.POLICY_RELEASE].values
    assert values["podPolicy"] == {"enabled": True, "namespaces": TEAMS}

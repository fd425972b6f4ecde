"""Containment (issue 31, SPEC §5): a stack that holds a resource slow to make or holding data
holds nothing that can fail on its own, and optional metrics deploy after the cluster, in a stack
the cluster does not wait for, so that their failure rolls back only their own stack.

Every shipped config (config/default.yaml and config/examples/*.yaml, Slurm and EKS) is held to
the rule, through the session's synthesized fixtures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stack_testkit import SHIPPED_CONFIGS, config_id

from stacks.layout import STACK_KINDS

# What a failed deploy must never roll back: slow to create (20+ minutes for a HyperPod or EKS
# cluster) or holding data.
GUARDED_TYPES = {
    "AWS::SageMaker::Cluster",
    "AWS::EKS::Cluster",
    "AWS::FSx::FileSystem",
    "AWS::RDS::DBInstance",
    "AWS::RDS::DBCluster",
}
# the data bucket of the storage stack (its logical id is pinned: test_stack_data_safety)
DATA_BUCKET_ID = "DataBucket"

# The custom resources a guarded stack may hold, each with why its failure is acceptable there.
# Anything else (a custom resource runs a Lambda function that calls an API at deploy time, and
# can fail for reasons that have nothing to do with the guarded resource) goes in another stack.
ALLOWED_CUSTOM_RESOURCES: dict[str, str] = {
    "Custom::LogRetention": (
        "CDK's log retention function of the alerts' log bridge (Slurm): it sets the retention "
        "of the log group the health agent's events are copied to. The alerts must be beside "
        "the cluster (the rollback alarms exist before the cluster names them and use the "
        "alerts topic); the function only calls CloudWatch Logs PutRetentionPolicy in this "
        "account and region."
    ),
}

# Optional metrics: never in a guarded stack, and only in a stack after the cluster.
METRICS_TYPES = {
    "Custom::HyperPodClusterExtension",
    "Custom::HyperPodGrafanaContent",
    "AWS::Grafana::Workspace",
    "AWS::APS::Workspace",
    "AWS::APS::RuleGroupsNamespace",
}


def _is_custom(resource_type: str) -> bool:
    return resource_type.startswith("Custom::") or resource_type == (
        "AWS::CloudFormation::CustomResource"
    )


def _is_guarded(logical_id: str, resource: dict[str, Any]) -> bool:
    return resource["Type"] in GUARDED_TYPES or (
        logical_id == DATA_BUCKET_ID and resource["Type"] == "AWS::S3::Bucket"
    )


def _guarded_stacks(synth: Any) -> dict[str, dict[str, Any]]:
    return {
        name: template
        for name, template in synth.templates.items()
        if any(_is_guarded(k, r) for k, r in template.get("Resources", {}).items())
    }


def _kinds(synth: Any) -> list[str]:
    return [kind for kind in STACK_KINDS if synth.has(kind)]


def _needs(synth: Any, kind: str) -> set[str]:
    """Every stack kind ``kind`` waits for, directly or through others."""
    found: set[str] = set()
    todo = [kind]
    while todo:
        for dependency in synth.dependencies(todo.pop()):
            if dependency not in found:
                found.add(dependency)
                todo.append(dependency)
    return found


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_guarded_stacks_hold_only_allowed_custom_resources(path: Path, synthesized) -> None:
    synth = synthesized(path)
    guarded = _guarded_stacks(synth)
    assert synth.stack_name("cluster") in guarded and synth.stack_name("storage") in guarded
    found = {
        f"{stack}/{logical_id}": resource["Type"]
        for stack, template in guarded.items()
        for logical_id, resource in template.get("Resources", {}).items()
        if (_is_custom(resource["Type"]) and resource["Type"] not in ALLOWED_CUSTOM_RESOURCES)
        or resource["Type"] in METRICS_TYPES
        or "Grafana" in resource["Type"]
    }
    assert not found, f"beside a cluster, file system, database or data bucket: {found}"


def test_the_allow_list_has_a_reason_for_each_entry_and_no_metrics() -> None:
    assert all(len(reason) > 40 for reason in ALLOWED_CUSTOM_RESOURCES.values())
    assert not set(ALLOWED_CUSTOM_RESOURCES) & METRICS_TYPES


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_metrics_deploy_after_the_cluster_and_nothing_it_needs_waits_for_them(
    path: Path, synthesized
) -> None:
    """A stack with optional metrics waits for the cluster stack, and neither the cluster stack
    nor any stack it needs waits for it: a metrics failure cannot roll back the cluster."""
    synth = synthesized(path)
    cluster_needs = _needs(synth, "cluster") | {"cluster"}
    with_metrics = [
        kind
        for kind in _kinds(synth)
        if any(r["Type"] in METRICS_TYPES for r in synth.resources(kind).values())
    ]
    for kind in with_metrics:
        assert "cluster" in _needs(synth, kind), kind
        assert kind not in cluster_needs, kind
    # and no template of those stacks reads anything of a metrics stack
    for needed in cluster_needs:
        text = str(synth.template(needed))
        for kind in with_metrics:
            assert synth.stack_name(kind) not in text, (needed, kind)


def test_slurm_metrics_are_in_the_metrics_stack(synthesized) -> None:
    """config/examples/full.yaml (Slurm, observability with Grafana): the workspace, rules,
    extension, Grafana and its content are all in <name>-metrics, which waits for the cluster."""
    synth = synthesized("full")
    types = {r["Type"] for r in synth.resources("metrics").values()}
    assert types >= METRICS_TYPES
    assert synth.dependencies("metrics") >= {"cluster", "nodes"}
    assert all("metrics" not in synth.dependencies(k) for k in _kinds(synth))
    for name in ("PrometheusWorkspaceArn", "PrometheusEndpoint", "GrafanaUrl"):
        assert name in synth.outputs("metrics") and name not in synth.outputs("cluster"), name


def test_the_metrics_stack_says_it_waits_for_the_cluster_on_purpose(synthesized) -> None:
    """The first-deploy estimator (scripts/critical_path.py) keeps the barrier of a stack that
    says so in its template: the containment wait is chosen, not a wait to optimise away."""
    import sys

    from stack_testkit import PROJECT_ROOT

    sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
    import critical_path as cp

    synth = synthesized("full")
    assert synth.template("metrics")["Metadata"][cp.CONTAINED_METADATA]
    assembly = cp.load_assembly(synth.outdir)
    assert [s.name for s in assembly.stacks.values() if s.contained] == [
        synth.stack_name("metrics")
    ]


def test_no_metrics_stack_without_slurm_observability(synthesized) -> None:
    assert not synthesized("minimal").has("metrics")
    assert not synthesized("eks-full").has("metrics")  # eks-addons holds them


def test_the_metrics_stack_writes_the_cluster_identity_beside_the_cluster_arn(
    synthesized,
) -> None:
    """The extension reads the cluster's ARN (a weak reference, re-read only when the resource
    holding it changes) through a parameter whose description carries the digest of the
    cluster's create-only inputs: a replaced cluster changes this stack's template too."""
    from stacks.layout import cluster_identity

    synth = synthesized("full")
    parameters = synth.resources("metrics", "AWS::SSM::Parameter")
    (ready_id,) = [k for k in parameters if k.startswith("ClusterReady")]
    ready = parameters[ready_id]["Properties"]
    assert cluster_identity(synth.config) in ready["Description"]
    assert synth.resolve(ready["Value"]) == {"Fn::GetAtt": ["HyperPodCluster", "ClusterArn"]}
    (extension,) = synth.resources("metrics", "Custom::HyperPodClusterExtension").values()
    assert extension["Properties"]["ClusterArn"] == {"Fn::GetAtt": [ready_id, "Value"]}


def test_nodes_remote_write_by_a_policy_of_the_metrics_stack(synthesized) -> None:
    """The grant lives with the workspace (no cycle: the nodes stack never reads the metrics
    stack) and is attached to the nodes stack's execution role."""
    synth = synthesized("full")
    policies = synth.resources("metrics", "AWS::IAM::ManagedPolicy")
    (remote,) = [r for k, r in policies.items() if "RemoteWrite" in k]
    (role,) = remote["Properties"]["Roles"]
    roles = synth.resources("nodes", "AWS::IAM::Role")
    assert synth.resolve(role) in [{"Ref": k} for k in roles]
    assert "metrics" not in synth.dependencies("nodes")

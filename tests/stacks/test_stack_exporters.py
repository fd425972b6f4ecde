"""The exporters' images in the stacks (issue 20): the node execution role may pull exactly the
repositories the nodes pull from (HyperPod's regional ones, or those the config names), and
log in to ECR, only while an exporter that pulls an image is on; the uploaded settings name the
images literally."""

from __future__ import annotations

import json
from typing import Any

from stack_testkit import ref, uploaded_settings

ROLE_ID = "ExecutionRoleCDF74862"
HYPERPOD = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
REPOSITORY = "arn:aws:ecr:us-west-2:602401143452:repository/hyperpod/"
EXPORTERS = "cluster.node_setup.exporters"
BOTH = {f"{EXPORTERS}.node": True, f"{EXPORTERS}.dcgm": True}
NVCR = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"


def ecr_statements(synth) -> list[tuple[str, dict[str, Any]]]:
    """Every policy statement of the nodes stack that names an ECR action, with its policy's
    logical id."""
    found = []
    for logical_id, resource in synth.resources("nodes").items():
        document = (
            resource["Properties"].get("PolicyDocument") if resource.get("Properties") else None
        )
        for statement in (document or {}).get("Statement", []):
            if "ecr:" in json.dumps(statement.get("Action")):
                found.append((logical_id, statement))
    return found


def pull_policy(synth) -> dict[str, Any]:
    (logical_id,) = {logical_id for logical_id, _ in ecr_statements(synth)}
    return synth.resources("nodes")[logical_id]


def test_the_role_pulls_exactly_hyperpods_exporter_repositories(build_variant) -> None:
    synth = build_variant(BOTH, base="minimal")  # cdk-nag clean, or it raises
    policy = pull_policy(synth)
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Sid": "PullImages",
            "Effect": "Allow",
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": [f"{REPOSITORY}dcgm_exporter", f"{REPOSITORY}node_exporter"],
        },
        {
            "Sid": "RegistryLogin",
            "Effect": "Allow",
            "Action": "ecr:GetAuthorizationToken",
            "Resource": "*",
        },
    ]
    assert ref(ROLE_ID) in synth.resolve(policy["Properties"]["Roles"])


def test_the_login_wildcard_is_acknowledged_with_its_reason(build_variant) -> None:
    synth = build_variant(BOTH, base="minimal")
    found = [
        reason
        for path, finding, reason in synth.acknowledgments
        if path.endswith("/ExecutionRole/ImagePull")
        and finding.endswith("AwsSolutions-IAM5[Resource::*]")
    ]
    assert found == [
        "ecr:GetAuthorizationToken has no resource-level permissions (Service Authorization "
        "Reference, Amazon ECR): it only issues the registry login token; the images the nodes "
        "may pull are limited to the exporters' repositories (ecr:BatchGetImage, "
        "ecr:GetDownloadUrlForLayer)."
    ]


def test_without_an_exporter_that_pulls_the_role_has_no_ecr_statement(build_variant) -> None:
    assert ecr_statements(build_variant({}, base="minimal", nag=False)) == []
    # the EFA exporter ships with the scripts
    efa = build_variant({f"{EXPORTERS}.efa": True}, base="minimal", nag=False)
    assert ecr_statements(efa) == []
    # an image outside Amazon ECR needs no ECR permission
    public = build_variant(
        {f"{EXPORTERS}.dcgm": True, f"{EXPORTERS}.dcgm_image": NVCR}, base="minimal", nag=False
    )
    assert ecr_statements(public) == []


def test_a_configured_image_is_the_repository_granted(build_variant) -> None:
    mirror = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror/node-exporter:v1.9.1"
    synth = build_variant(
        {**BOTH, f"{EXPORTERS}.node_image": mirror, f"{EXPORTERS}.dcgm_image": NVCR},
        base="minimal",
        nag=False,
    )
    (pull, login) = pull_policy(synth)["Properties"]["PolicyDocument"]["Statement"]
    assert pull["Resource"] == "arn:aws:ecr:us-west-2:111122223333:repository/mirror/node-exporter"
    assert login["Action"] == "ecr:GetAuthorizationToken"


def test_a_configured_execution_role_gets_the_same_pull(build_variant) -> None:
    role_arn = "arn:aws:iam::111122223333:role/platform-hyperpod-nodes"
    synth = build_variant(
        {**BOTH, "cluster.execution_role_arn": role_arn}, base="minimal", nag=False
    )
    roles = json.dumps(synth.resolve(pull_policy(synth)["Properties"]["Roles"]))
    assert "platform-hyperpod-nodes" in roles
    assert ROLE_ID in roles


def test_the_uploaded_settings_name_the_images_literally(build_variant) -> None:
    synth = build_variant(BOTH, base="minimal", nag=False)
    settings = uploaded_settings(synth)
    exporters = json.loads(settings.read_text())["node_setup"]["exporters"]
    assert exporters["node_image"] == f"{HYPERPOD}/hyperpod/node_exporter:v1.9.1"
    assert exporters["dcgm_image"] == f"{HYPERPOD}/hyperpod/dcgm_exporter:4.1.1-4.0.4-ubi9"
    assert exporters["node_registry"] == exporters["dcgm_registry"] == HYPERPOD
    assert exporters["node_ecr_region"] == exporters["dcgm_ecr_region"] == "us-west-2"
    assert "${Token[" not in settings.read_text()

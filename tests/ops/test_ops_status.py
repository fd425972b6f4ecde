"""``make status``: the deployed cluster's state, failed nodes, logs and how to reach it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ops_testkit import (
    NOW,
    PROJECT_ROOT,
    REGION,
    StubbedAws,
    cluster_absent,
    cluster_present,
    described_cluster,
    environment,
    identity,
)

from hyperpod_ops import status
from hyperpod_ops.status import lifecycle_log_group, read_status, ssm_target

CLUSTER_ID = "abc123def456"


def _group(name: str, instance_type: str, current: int, target: int, node_type: str | None = None,
           **extra: Any) -> dict[str, Any]:  # fmt: skip
    group: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "CurrentCount": current,
        "TargetCount": target,
        "Status": "InService" if current == target else "Updating",
        **extra,
    }
    if node_type:
        group["SlurmConfig"] = {"NodeType": node_type}
    return group


def _node(group: str, instance_id: str, instance_type: str, node_status: str = "Running",
          message: str | None = None) -> dict[str, Any]:  # fmt: skip
    details: dict[str, Any] = {"Status": node_status}
    if message:
        details["Message"] = message
    return {
        "InstanceGroupName": group,
        "InstanceId": instance_id,
        "InstanceType": instance_type,
        "LaunchTime": NOW,
        "InstanceStatus": details,
    }


def _nodes(aws: StubbedAws, cluster: str, pages: list[list[dict[str, Any]]]) -> None:
    for index, page in enumerate(pages):
        response: dict[str, Any] = {"ClusterNodeSummaries": page}
        params: dict[str, Any] = {"ClusterName": cluster}
        if index + 1 < len(pages):
            response["NextToken"] = f"page-{index + 1}"
        if index:
            params["NextToken"] = f"page-{index}"
        aws.stub("sagemaker").add_response("list_cluster_nodes", response, params)


def _run(aws: StubbedAws, path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = status.main([str(path), "--project-root", str(PROJECT_ROOT)], aws.make_clients)
    out, err = capsys.readouterr()
    return code, out, err


SLURM_GROUPS = [
    _group("controller", "ml.m5.2xlarge", 1, 1, "Controller"),
    _group("login", "ml.m5.4xlarge", 1, 1, "Login"),
    _group("gpu", "ml.p5.48xlarge", 1, 2, "Compute", MinCount=1),
]


def _deployed_slurm(aws: StubbedAws) -> None:
    cluster_present(aws, "ml-research", groups=SLURM_GROUPS, status="Updating")
    _nodes(
        aws,
        "ml-research",
        [
            [_node("controller", "i-0aaa", "ml.m5.2xlarge"), _node("login", "i-0bbb", "ml.m5.4xlarge")],
            [
                _node("gpu", "i-0ccc", "ml.p5.48xlarge"),
                _node("gpu", "i-0ddd", "ml.p5.48xlarge", "Failure",
                      "Lifecycle scripts did not run successfully.\nSee CloudWatch."),
            ],
        ],
    )  # fmt: skip


def test_a_deployed_slurm_cluster(aws: StubbedAws, capsys: pytest.CaptureFixture[str]) -> None:
    _deployed_slurm(aws)
    code, out, err = _run(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("cluster ml-research: Updating (arn:aws:sagemaker:us-west-2:")
    assert "instance groups (current/target):" in lines
    gpu = next(line for line in lines if line.strip().startswith("gpu "))
    assert gpu.split()[1:] == ["ml.p5.48xlarge", "Updating", "1/2", "(min", "1)"]
    assert "nodes: 4 (1 Failure, 3 Running)" in lines
    assert (
        "  gpu i-0ddd (ml.p5.48xlarge): Lifecycle scripts did not run successfully. See CloudWatch."
        in lines
    )
    log_group = f"/aws/sagemaker/Clusters/ml-research/{CLUSTER_ID}"
    assert f"lifecycle script logs: {log_group}" in lines
    assert f"  aws logs tail {log_group} --region {REGION} --since 1h" in lines
    controller = lines.index("reach the controller (SSM):")
    assert lines[controller + 1] == (
        f"  aws ssm start-session --region {REGION} "
        f"--target sagemaker-cluster:{CLUSTER_ID}_controller-i-0aaa"
    )
    assert f"sagemaker-cluster:{CLUSTER_ID}_login-i-0bbb" in lines[lines.index("reach a login node (SSM):") + 1]  # fmt: skip


def test_every_page_of_nodes_is_read(aws: StubbedAws) -> None:
    _deployed_slurm(aws)
    state = read_status(environment("default"), aws("sagemaker"))
    assert state is not None
    assert [n["InstanceId"] for n in state.nodes] == ["i-0aaa", "i-0bbb", "i-0ccc", "i-0ddd"]
    assert [n["InstanceId"] for n in state.failed_nodes] == ["i-0ddd"]


def test_a_failed_cluster_shows_its_failure_message(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster_present(
        aws,
        "ml-research",
        status="Failed",
        groups=[_group("controller", "ml.m5.2xlarge", 0, 1, "Controller")],
        FailureMessage="We currently do not have sufficient capacity for the requested instance type(s).",
    )
    _nodes(aws, "ml-research", [[]])
    code, out, _ = _run(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert code == 0
    assert "  failure: We currently do not have sufficient capacity" in out
    assert "  no node in controller yet" in out
    assert "nodes: 0\n" in out


def test_controller_groups_come_from_the_config_without_slurm_config(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster_present(aws, "minimal", groups=[_group("controller", "ml.m5.2xlarge", 1, 1)])
    _nodes(aws, "minimal", [[_node("controller", "i-0aaa", "ml.m5.2xlarge", "Pending")]])
    code, out, _ = _run(aws, PROJECT_ROOT / "config/examples/minimal.yaml", capsys)
    assert code == 0
    assert f"sagemaker-cluster:{CLUSTER_ID}_controller-i-0aaa  # Pending" in out


def test_an_eks_cluster_shows_the_kubeconfig_command(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    eks_arn = f"arn:aws:eks:{REGION}:111122223333:cluster/shared-platform"
    flexible = {
        "InstanceGroupName": "gpu",
        "InstanceRequirements": {"CurrentInstanceTypes": ["ml.g6e.12xlarge", "ml.g5.12xlarge"]},
        "CurrentCount": 2,
        "TargetCount": 2,
        "Status": "InService",
    }
    cluster_present(
        aws, "eks-shared", groups=[flexible], Orchestrator={"Eks": {"ClusterArn": eks_arn}}
    )
    _nodes(aws, "eks-shared", [[_node("gpu", "i-0aaa", "ml.g5.12xlarge"), _node("gpu", "i-0bbb", "ml.g5.12xlarge")]])  # fmt: skip
    identity(aws)  # the config names its account: the command checks the caller's first
    code, out, _ = _run(aws, PROJECT_ROOT / "config/examples/eks-existing-cluster.yaml", capsys)
    assert code == 0
    assert "ml.g6e.12xlarge|ml.g5.12xlarge" in out
    assert f"  aws eks update-kubeconfig --region {REGION} --name shared-platform" in out
    assert "ssm start-session" not in out


def test_a_created_eks_cluster_is_named_after_the_environment(aws: StubbedAws) -> None:
    cluster_present(aws, "eks-minimal", groups=[_group("gpu", "ml.g5.8xlarge", 2, 2)])
    _nodes(aws, "eks-minimal", [[]])
    config = environment("eks-minimal")
    state = read_status(config, aws("sagemaker"))
    assert state is not None
    assert "--name eks-minimal-eks" in "\n".join(status.format_status(config, state))


def test_a_cluster_that_is_not_deployed(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster_absent(aws, "ml-research")
    code, out, err = _run(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert code == 1 and out == ""
    (line,) = err.splitlines()
    assert "HyperPod cluster ml-research is not deployed in us-west-2" in line


def test_access_denied_is_one_line_naming_the_api(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.error(
        "sagemaker", "describe_cluster", "AccessDeniedException", {"ClusterName": "ml-research"}
    )
    code, out, err = _run(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert code == 1 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("status: sagemaker:DescribeCluster returned AccessDeniedException")


def test_an_expired_token_exits_2(aws: StubbedAws, capsys: pytest.CaptureFixture[str]) -> None:
    aws.error("sagemaker", "describe_cluster", "ExpiredTokenException", status=403)
    code, out, err = _run(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("status: AWS rejected the credentials (ExpiredTokenException")


def test_names_of_log_group_and_ssm_target() -> None:
    assert lifecycle_log_group("c", "id1") == "/aws/sagemaker/Clusters/c/id1"
    assert ssm_target("id1", "controller", "i-0aaa") == "sagemaker-cluster:id1_controller-i-0aaa"
    assert described_cluster("c")["ClusterArn"].endswith(f"cluster/{CLUSTER_ID}")

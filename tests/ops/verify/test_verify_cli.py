"""make verify as a user runs it: the command line, the connections it makes, its exits.

The Slurm path runs end to end: stubbed SageMaker and SSM answers, the fake Session Manager
plugin (tests/ops/fixtures/ssm) executing each session's command here, and the fake Slurm tools
(fake_slurm/) answering the node scripts. The EKS path talks to a fake transport.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ops_testkit import PROJECT_ROOT, StubbedAws, cluster_arn

from hyperpod_ops.k8s import KubernetesUnreachable, Response
from hyperpod_ops.verify import aws_checks, cli, slurm
from hyperpod_ops.verify.model import Created, VerifyRun

sys.path.insert(0, str(PROJECT_ROOT / "tests" / "ops" / "fixtures" / "ssm"))
from fake_ssm import FakePlugin, install_plugin, session

FAKE_SLURM = Path(__file__).resolve().parent / "fake_slurm"
SCHEMA = json.loads((PROJECT_ROOT / "docs" / "verify-report.schema.json").read_text())
NAME = "ml-research"  # config/default.yaml
CLUSTER_ID = "abc123def456"
NODES = (
    ("controller", "i-0c00000000000001", "ml.m5.2xlarge"),
    ("login", "i-0a00000000000001", "ml.m5.4xlarge"),
    ("gpu", "i-0b00000000000001", "ml.p5.48xlarge"),
    ("gpu", "i-0b00000000000002", "ml.p5.48xlarge"),
)


def target(group: str, instance_id: str) -> str:
    return f"sagemaker-cluster:{CLUSTER_ID}_{group}-{instance_id}"


def deployed(aws: StubbedAws, nodes: tuple[tuple[str, str, str], ...] = NODES,
             status: str = "Running") -> None:  # fmt: skip
    """DescribeCluster and ListClusterNodes of config/default.yaml's cluster."""
    groups = sorted({g for g, _, _ in nodes})
    aws.stub("sagemaker").add_response(
        "describe_cluster",
        {
            "ClusterArn": cluster_arn(NAME, CLUSTER_ID),
            "ClusterName": NAME,
            "ClusterStatus": "InService",
            "InstanceGroups": [
                {"InstanceGroupName": g, "InstanceType": t, "CurrentCount": 1, "TargetCount": 1}
                for g, t in {g: t for g, _, t in nodes}.items()
            ],
        },
        {"ClusterName": NAME},
    )
    assert groups
    aws.stub("sagemaker").add_response(
        "list_cluster_nodes",
        {
            "ClusterNodeSummaries": [
                {
                    "InstanceGroupName": g,
                    "InstanceId": i,
                    "InstanceType": t,
                    "LaunchTime": "2026-11-20T10:00:00Z",
                    "InstanceStatus": {"Status": status},
                }
                for g, i, t in nodes
            ]
        },
        {"ClusterName": NAME},
    )


@pytest.fixture
def slurm_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePlugin]:
    """The fake plugin on PATH, the fake Slurm tools behind it, a healthy 2-node gpu partition."""
    plugin = install_plugin(tmp_path, monkeypatch)
    state = tmp_path / "slurm"
    (state / "node" / "controller").mkdir(parents=True)
    (state / "nodes").write_text("".join(f"ip-10-1-0-1{n}|gpu*|idle|gpu:8|none\n" for n in (1, 2)))
    monkeypatch.setenv("FAKE_SLURM", str(state))
    monkeypatch.setenv("PATH", f"{plugin.bin_dir}:{FAKE_SLURM / 'bin'}:/usr/bin:/bin")
    monkeypatch.setattr(aws_checks, "fsx_facts", lambda run: None)
    yield plugin


def main(aws: StubbedAws, *args: str, **kwargs: Any) -> int:
    return cli.main(["config/default.yaml", "--project-root", str(PROJECT_ROOT), *args],
                    make_clients=aws.make_clients, **kwargs)  # fmt: skip


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_a_slurm_run_end_to_end_through_ssm_sessions(
    aws: StubbedAws, slurm_node: FakePlugin, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(PROJECT_ROOT)
    deployed(aws)
    session(aws, target("controller", "i-0c00000000000001"), reason=cli.SESSION_REASON)
    session(aws, target("login", "i-0a00000000000001"), "alice-0000000000000002",
            reason=cli.SESSION_REASON)  # fmt: skip
    code = main(aws, "--checks", "nodes")
    out, err = capsys.readouterr()
    assert err == ""
    printed = lines(out)
    assert printed[0].startswith("verify ml-research (slurm, us-west-2): run hpv-")
    assert printed[0].endswith("checks nodes")
    assert "PASS  nodes gpu: " in out and "PASS  nodes controller: " in out
    assert "PASS  nodes login/i-0a00000000000001" in out
    assert printed[-1].endswith("passed, 0 failed, 0 skipped; cleanup: 0 removed, 0 left")
    assert code == 0
    # each session was the plugin's, on the node's HyperPod target
    targets = [call["request"]["Target"] for call in slurm_node.calls()]
    assert targets == [target("controller", "i-0c00000000000001"),
                       target("login", "i-0a00000000000001")]  # fmt: skip


def test_the_json_report_of_a_run_follows_the_schema(
    aws: StubbedAws, slurm_node: FakePlugin, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(aws)
    session(aws, target("controller", "i-0c00000000000001"), reason=cli.SESSION_REASON)
    session(aws, target("login", "i-0a00000000000001"), "alice-0000000000000002",
            reason=cli.SESSION_REASON)  # fmt: skip
    (slurm_node.bin_dir.parent / "slurm" / "ping_down").write_text("")
    code = main(aws, "--checks", "nodes,efa", "--json")
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert code == 1 and document["exit_code"] == 1
    outcomes = {(c["check"], c["subject"]): c["outcome"] for c in document["checks"]}
    assert outcomes[("nodes", "controller")] == "fail"
    assert outcomes[("efa", None)] == "skip"  # blocked by nodes
    assert document["summary"]["failed"] >= 1


def test_without_the_plugin_one_line_and_no_aws_call(
    aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(aws) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = lines(err)
    assert line.startswith("verify: the AWS Session Manager plugin (session-manager-plugin)")
    assert "Install the Session Manager plugin for the AWS CLI" in line
    assert aws.called == set()


def test_a_cluster_that_is_not_deployed_is_one_line(
    aws: StubbedAws, slurm_node: FakePlugin, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.error("sagemaker", "describe_cluster", "ResourceNotFound", {"ClusterName": NAME})
    assert main(aws) == 2
    out, err = capsys.readouterr()
    (line,) = lines(err)
    assert out == ""
    assert line == (
        f"verify: HyperPod cluster {NAME} is not deployed in us-west-2 "
        "(make deploy CONFIG=<this file>)"
    )
    assert slurm_node.calls() == []


def test_a_controller_that_is_not_running_is_one_line(
    aws: StubbedAws, slurm_node: FakePlugin, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(aws, status="Pending")
    assert main(aws) == 2
    (line,) = lines(capsys.readouterr().err)
    assert line.startswith("verify: the controller group controller has no running node")
    assert "controller/i-0c00000000000001 Pending" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--checks", "nccl,speed"], "--checks (CHECKS=): speed is not a check"),
        (["--checks", ","], "--checks (CHECKS=): empty is not a check"),
        (["--cleanup", "run-1"], "--cleanup: 'run-1' is not a run id"),
        (["--k8s-via", "localhost"], "--k8s-via: 'localhost' is not HOST:PORT"),
        (["--team", "Research_1"], "--team: 'Research_1' is not a team name"),
        (["--team", "a" * 41], "is not a team name"),
    ],
)
def test_bad_options_exit_2_naming_the_option(
    aws: StubbedAws, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(aws, *args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert aws.called == set()


def test_ctrl_c_removes_what_the_run_made_and_exits_130(
    aws: StubbedAws, slurm_node: FakePlugin, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    removed: list[str] = []

    def makes_then_interrupted(run: VerifyRun) -> list[Any]:
        run.created("job hpv-x-efa", lambda: removed.append("job"), "scancel --name hpv-x-efa")
        raise KeyboardInterrupt

    monkeypatch.setitem(slurm.CHECKS, "efa", makes_then_interrupted)
    deployed(aws)
    assert main(aws, "--checks", "efa") == 130
    out, err = capsys.readouterr()
    assert removed == ["job"]
    assert "interrupted; removing what the run made" in err
    assert lines(out)[-1].endswith("cleanup: 1 removed, 0 left")


def test_cleanup_removes_a_crashed_runs_leftovers_and_names_what_is_left(
    aws: StubbedAws, slurm_node: FakePlugin, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    run_id = "hpv-0123456789ab"
    seen: list[str] = []

    def refused() -> None:
        raise RuntimeError("permission denied")

    def slurm_left(run: VerifyRun) -> list[Created]:
        seen.append(run.run_id)
        return [Created("job hpv-0123456789ab-nccl", lambda: None, "scancel --name x")]

    def aws_left(run: VerifyRun) -> list[Created]:
        return [Created("S3 object s3://b/k", refused, "aws s3 rm s3://b/k")]

    monkeypatch.setattr(slurm, "leftovers", slurm_left)
    monkeypatch.setattr(aws_checks, "leftovers", aws_left)
    deployed(aws)
    assert main(aws, "--cleanup", run_id) == 1
    out = capsys.readouterr().out
    assert seen == [run_id]
    assert "FAIL  cleanup: could not remove S3 object s3://b/k (permission denied); by hand: aws s3 rm s3://b/k" in out  # fmt: skip
    assert "PASS  cleanup: removed job hpv-0123456789ab-nccl" in out
    assert slurm_node.calls() == []  # nothing ran on the nodes but the removals


# -- EKS -------------------------------------------------------------------------------------

EKS_NAME = "shared-platform"


def eks_deployed(aws: StubbedAws) -> None:
    """config/examples/eks-existing-cluster.yaml's HyperPod cluster and its EKS cluster (and the
    caller, of the config's account)."""
    from ops_testkit import environment, identity

    identity(aws)
    config = environment("eks-existing-cluster")
    aws.stub("sagemaker").add_response(
        "describe_cluster",
        {
            "ClusterArn": cluster_arn(config.cluster_name, CLUSTER_ID),
            "ClusterName": config.cluster_name,
            "ClusterStatus": "InService",
            "InstanceGroups": [],
            "Orchestrator": {"Eks": {"ClusterArn": str(config.eks_settings.cluster_arn)}},
        },
        {"ClusterName": config.cluster_name},
    )
    aws.stub("sagemaker").add_response(
        "list_cluster_nodes",
        {"ClusterNodeSummaries": [{
            "InstanceGroupName": "gpu", "InstanceId": "i-0b00000000000001",
            "InstanceType": "ml.p5.48xlarge", "LaunchTime": "2026-11-20T10:00:00Z",
            "InstanceStatus": {"Status": "Running"}}]},
        {"ClusterName": config.cluster_name},
    )  # fmt: skip
    name = str(config.eks_settings.cluster_arn).rsplit("/", 1)[-1]
    aws.stub("eks").add_response(
        "describe_cluster",
        {"cluster": {"name": name, "endpoint": "https://ABCD.gr7.us-west-2.eks.amazonaws.com",
                     "certificateAuthority": {"data": "Y2E="}, "status": "ACTIVE"}},
        {"name": name},
    )  # fmt: skip


def eks_main(aws: StubbedAws, transport: Any, *args: str) -> int:
    return cli.main(
        ["config/examples/eks-existing-cluster.yaml", "--project-root", str(PROJECT_ROOT), *args],
        make_clients=aws.make_clients,
        make_k8s_transport=transport,
    )


def test_an_unreachable_eks_endpoint_names_both_routes(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    eks_deployed(aws)
    made: list[tuple[str, str | None]] = []

    def unreachable(url: str, ca: str, token: str, server_name: str | None) -> Any:
        made.append((url, server_name))
        assert token.startswith("k8s-aws-v1.")

        def call(*_args: Any, **_kwargs: Any) -> Response:
            raise KubernetesUnreachable("timed out")

        return call

    assert eks_main(aws, unreachable) == 2
    out, err = capsys.readouterr()
    (line,) = lines(err)
    assert out == ""
    assert made == [("https://ABCD.gr7.us-west-2.eks.amazonaws.com", None)]
    assert "cannot reach the API endpoint of EKS cluster" in line and "timed out" in line
    assert "run make verify from inside the VPC, or forward a port through a HyperPod node" in line
    assert f"--target {target('gpu', 'i-0b00000000000001')}" in line
    assert "host=ABCD.gr7.us-west-2.eks.amazonaws.com,portNumber=443" in line
    assert "OPS_ARGS='--k8s-via 127.0.0.1:8443'" in line


def test_k8s_via_connects_to_the_forwarded_port_checking_the_endpoints_name(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    eks_deployed(aws)
    aws.stub("sts").add_response(
        "get_caller_identity",
        {"Account": "111122223333", "Arn": "arn:aws:sts::111122223333:assumed-role/Dev/bob", "UserId": "x"},
    )  # fmt: skip
    made: list[tuple[str, str | None]] = []

    def denied(url: str, ca: str, token: str, server_name: str | None) -> Any:
        made.append((url, server_name))
        return lambda *_a, **_k: Response(403, {"message": "nodes is forbidden"})

    assert eks_main(aws, denied, "--k8s-via", "127.0.0.1:8443") == 2
    (line,) = lines(capsys.readouterr().err)
    assert made == [("https://127.0.0.1:8443", "ABCD.gr7.us-west-2.eks.amazonaws.com")]
    assert line.startswith("verify: arn:aws:sts::111122223333:assumed-role/Dev/bob may not read")
    assert "needs an access entry" in line


def test_the_token_is_renewed_during_a_long_run(
    aws: StubbedAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ops_testkit import environment

    run = VerifyRun(environment("eks-existing-cluster"), aws)
    run.cluster = {
        "Orchestrator": {"Eks": {"ClusterArn": "arn:aws:eks:us-west-2:111122223333:cluster/c"}}
    }
    aws.stub("eks").add_response(
        "describe_cluster",
        {"cluster": {"name": "c", "endpoint": "https://e.example", "certificateAuthority": {"data": "Y2E="}}},
        {"name": "c"},
    )  # fmt: skip
    now = [0.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: now[0])
    tokens: list[str] = []

    def transport(url: str, ca: str, token: str, server_name: str | None) -> Any:
        tokens.append(token)
        return lambda *_a, **_k: Response(200, {"items": []})

    cli.connect_eks(run, None, transport)
    run.kubernetes.get("/api/v1/nodes")
    now[0] = cli.TOKEN_REFRESH_SECONDS + 1
    run.kubernetes.get("/api/v1/nodes")
    assert len(tokens) == 2


def test_team_and_priority_class_reach_the_run_options() -> None:
    from hyperpod_ops.verify import cli

    own, rest = cli._options(["--team", "research", "--priority-class", "training", "CONFIG=x"])
    assert (own.team, own.priority_class, rest) == ("research", "training", ["CONFIG=x"])

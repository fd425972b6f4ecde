"""``make sync-users``: the users steps of the deployed lifecycle prefix on every running node of a
Slurm cluster, over SSM sessions, refused when the config would deploy another prefix."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from ops_testkit import ACCOUNT, NOW, PROJECT_ROOT, REGION, StubbedAws, cluster_absent, cluster_arn
from stack_testkit import config_data, with_changes

from hyperpod_cdk.config import load_environment
from hyperpod_cdk.lifecycle.prefix import LIFECYCLE_ROOT, config_lifecycle_prefix
from hyperpod_ops import sync_users
from hyperpod_ops.ssm import RemoteResult
from hyperpod_ops.sync_users import ONLY_STEPS, SESSION_REASON, Node, run_nodes

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "ssm"))
from fake_ssm import HERE as FAKES
from fake_ssm import FakePlugin, install_plugin, session

USERS_FILE = "tests/ops/fixtures/sync-users.yaml"
CLUSTER = "ml-research"
CLUSTER_ID = "abc123def456"
BUCKET = f"sagemaker-ml-research-lifecycle-{ACCOUNT}-{REGION}"


@pytest.fixture(autouse=True)
def one_node_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's Stubber answers calls in the order they were queued: run the nodes in order
    (the bounded concurrency itself has a test of its own)."""
    monkeypatch.setattr(sync_users, "CONCURRENCY", 1)


def _config_file(tmp_path: Path, changes: dict[str, Any] | None = None, base: str = "default") -> Path:  # fmt: skip
    data = with_changes(config_data(base), {"cluster.node_setup.users_file": USERS_FILE, **(changes or {})})  # fmt: skip
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _local_prefix(path: Path) -> str:
    return config_lifecycle_prefix(load_environment(path, PROJECT_ROOT), PROJECT_ROOT)


def _deployed(aws: StubbedAws, uris: dict[str, str], name: str = CLUSTER) -> None:
    """DescribeCluster: each group (name -> the SourceS3Uri it boots from)."""
    groups = [
        {
            "InstanceGroupName": group,
            "CurrentCount": 1,
            "TargetCount": 1,
            "Status": "InService",
            "LifeCycleConfig": {"SourceS3Uri": uri, "OnInitComplete": "entrypoint.sh"},
        }
        for group, uri in uris.items()
    ]
    aws.stub("sagemaker").add_response(
        "describe_cluster",
        {
            "ClusterArn": cluster_arn(name, CLUSTER_ID),
            "ClusterName": name,
            "ClusterStatus": "InService",
            "InstanceGroups": groups,
        },
        {"ClusterName": name},
    )


def _nodes(aws: StubbedAws, pages: list[list[tuple[str, str, str]]], name: str = CLUSTER) -> None:
    """ListClusterNodes, page by page: (group, instance id, status)."""
    for index, page in enumerate(pages):
        response: dict[str, Any] = {
            "ClusterNodeSummaries": [
                {
                    "InstanceGroupName": group,
                    "InstanceId": instance,
                    "InstanceType": "ml.m5.2xlarge",
                    "LaunchTime": NOW,
                    "InstanceStatus": {"Status": state},
                }
                for group, instance, state in page
            ]
        }
        params: dict[str, Any] = {"ClusterName": name}
        if index + 1 < len(pages):
            response["NextToken"] = f"page-{index + 1}"
        if index:
            params["NextToken"] = f"page-{index}"
        aws.stub("sagemaker").add_response("list_cluster_nodes", response, params)


def _target(group: str, instance: str) -> str:
    return f"sagemaker-cluster:{CLUSTER_ID}_{group}-{instance}"


def _bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str, *,
            single_steps: bool = True) -> Path:  # fmt: skip
    """The fake S3 the nodes' ``aws s3 cp`` reads: the deployed prefix with an entry script."""
    s3 = tmp_path / "s3"
    folder = s3 / BUCKET / prefix
    folder.mkdir(parents=True)
    entry = (FAKES / "entrypoint.sh").read_text()
    if not single_steps:  # scripts from before HYPERPOD_ONLY_STEPS
        entry = entry.replace("HYPERPOD_ONLY_STEPS", "STEPS")
    (folder / "entrypoint.sh").write_text(entry)
    (folder / "users.json").write_text("{}")
    monkeypatch.setenv("FAKE_S3", str(s3))
    return s3


def _run(aws: StubbedAws, path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[str], list[str]]:  # fmt: skip
    code = sync_users.main(
        [str(path), "--project-root", str(PROJECT_ROOT), *extra], aws.make_clients
    )
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def _runs(s3: Path) -> list[list[str]]:
    """What the fake entry script recorded: [target, steps, directory] per run."""
    runs = s3 / "runs"
    return [line.split() for line in runs.read_text().splitlines()] if runs.exists() else []


@pytest.fixture
def deployed_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, Path, FakePlugin]:  # fmt: skip
    """A config with a users file, its prefix deployed (fake S3) and the fake plugin on PATH."""
    path = _config_file(tmp_path)
    prefix = _local_prefix(path)
    s3 = _bucket(tmp_path, monkeypatch, prefix)
    fake = install_plugin(tmp_path, monkeypatch)
    return path, f"s3://{BUCKET}/{prefix}", s3, fake


def test_every_running_node_runs_the_users_steps_of_the_deployed_prefix(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, uri, s3, fake = deployed_env
    _deployed(aws, {"controller": uri, "login": uri, "gpu": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Running"), ("login", "i-0bbb", "Running")],
                 [("gpu", "i-0ccc", "Pending"), ("gpu", "i-0ddd", "Running")]])  # fmt: skip
    for index, (group, instance) in enumerate([("controller", "i-0aaa"), ("login", "i-0bbb"), ("gpu", "i-0ddd")]):  # fmt: skip
        session(aws, _target(group, instance), f"alice-{index}", reason=SESSION_REASON)
    code, out, err = _run(aws, path, capsys)
    assert (code, err) == (0, [])
    assert out == [
        "gpu/i-0ccc: skipped (Pending)",
        "controller/i-0aaa: ok",
        "login/i-0bbb: ok",
        "gpu/i-0ddd: ok",
        f"sync_users of {CLUSTER} from {uri}: 3 ok, 0 failed, 1 not running (skipped)",
    ]
    runs = _runs(s3)
    assert [r[0] for r in runs] == [_target("controller", "i-0aaa"), _target("login", "i-0bbb"), _target("gpu", "i-0ddd")]  # fmt: skip
    assert {r[1] for r in runs} == {",".join(ONLY_STEPS)} == {"users,ssh_keys,slurm_users"}
    # a fresh temporary folder per node, removed afterwards
    folders = [Path(r[2]) for r in runs]
    assert len(set(folders)) == 3
    assert all(f.parent == fake.tmp and f.name.startswith("hyperpod-sync-") for f in folders)
    assert list(fake.tmp.iterdir()) == []
    # the deployed prefix, read in the config's region with the node's own credentials
    calls = (s3 / "calls").read_text().splitlines()
    assert calls[0].startswith(f"s3 cp --recursive --only-show-errors --region {REGION} {uri} ")


def test_a_failed_node_is_reported_with_its_last_lines(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin],
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    path, uri, _, _ = deployed_env
    monkeypatch.setenv("FAKE_FAILING", _target("login", "i-0bbb"))
    monkeypatch.setenv("FAKE_PLUGIN_MODES", json.dumps({_target("gpu", "i-0ccc"): "silent"}))
    _deployed(aws, {"controller": uri, "login": uri, "gpu": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Running"), ("login", "i-0bbb", "Running"), ("gpu", "i-0ccc", "Running")]])  # fmt: skip
    for group, instance in [("controller", "i-0aaa"), ("login", "i-0bbb"), ("gpu", "i-0ccc")]:
        session(aws, _target(group, instance), f"alice-{instance}", reason=SESSION_REASON)
    code, out, err = _run(aws, path, capsys)
    assert (code, err) == (1, [])
    assert out[0] == "controller/i-0aaa: ok"
    assert out[1] == (
        "login/i-0bbb: FAILED (exit 1: [lifecycle] step: users and groups | [lifecycle] FAILED in "
        "step 'users and groups': user alice exists with UID 1001, the users file says 2001)"
    )
    assert out[2] == "gpu/i-0ccc: FAILED (the session ended without a result)"
    assert out[3] == (
        f"sync_users of {CLUSTER} from {uri}: 1 ok, 2 failed; a node's whole output: "
        "/var/log/provision/hyperpod-lifecycle.log on that node"
    )


def test_scripts_that_cannot_run_single_steps_are_not_run(
    aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path = _config_file(tmp_path)
    prefix = _local_prefix(path)
    s3 = _bucket(tmp_path, monkeypatch, prefix, single_steps=False)
    install_plugin(tmp_path, monkeypatch)
    uri = f"s3://{BUCKET}/{prefix}"
    _deployed(aws, {"controller": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Running")]])
    session(aws, _target("controller", "i-0aaa"), reason=SESSION_REASON)
    code, out, _ = _run(aws, path, capsys)
    assert code == 1
    assert out[0].startswith("controller/i-0aaa: FAILED (exit 72: [sync-users] the deployed lifecycle scripts cannot run single steps")  # fmt: skip
    assert _runs(s3) == []  # the whole entry script never ran


def test_a_node_that_cannot_read_the_prefix_fails(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, uri, s3, _ = deployed_env
    shutil.rmtree(s3 / BUCKET)
    _deployed(aws, {"controller": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Running")]])
    session(aws, _target("controller", "i-0aaa"), reason=SESSION_REASON)
    code, out, _ = _run(aws, path, capsys)
    assert code == 1
    assert "FAILED (exit 71: " in out[0]
    assert "AccessDenied" in out[0] and f"cannot download {uri} with the node's execution role" in out[0]  # fmt: skip


def test_another_local_prefix_is_refused_naming_both(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, _, _, fake = deployed_env
    old = f"s3://{BUCKET}/{LIFECYCLE_ROOT}0123456789abcdef0123/"
    _deployed(aws, {"controller": old, "login": old})
    code, out, err = _run(aws, path, capsys)
    assert (code, out) == (2, [])
    (line,) = err
    assert line.startswith("sync_users: ")
    assert _local_prefix(path) in line and old in line
    assert "run make deploy first" in line
    assert fake.calls() == []


def test_a_changed_users_file_changes_the_prefix(tmp_path: Path) -> None:
    path = _config_file(tmp_path)
    before = _local_prefix(path)
    assert before.startswith(LIFECYCLE_ROOT) and len(before) == len(LIFECYCLE_ROOT) + 21
    project = tmp_path / "project"
    project.mkdir()
    (project / "lifecycle_assets").symlink_to(PROJECT_ROOT / "lifecycle_assets")
    users = yaml.safe_load((PROJECT_ROOT / USERS_FILE).read_text())
    users["users"].append({"name": "carol", "uid": 2003})
    (project / "tests/ops/fixtures").mkdir(parents=True)
    (project / USERS_FILE).write_text(yaml.safe_dump(users))
    after = config_lifecycle_prefix(load_environment(path, project), project)
    assert after != before


def test_groups_on_different_prefixes_are_refused(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, uri, _, _ = deployed_env
    old = f"s3://{BUCKET}/{LIFECYCLE_ROOT}0123456789abcdef0123/"
    _deployed(aws, {"controller": uri, "gpu": old})
    code, _, err = _run(aws, path, capsys)
    assert code == 2
    (line,) = err
    assert "boot from different prefixes" in line and uri in line and old in line


def test_an_eks_config_is_refused(aws: StubbedAws, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(aws, PROJECT_ROOT / "config/examples/eks-minimal.yaml", capsys)
    assert (code, out) == (2, [])
    (line,) = err
    assert line.startswith("sync_users: eks-minimal is an EKS environment")
    assert "Slurm clusters only" in line


def test_a_config_without_users_file_is_refused(aws: StubbedAws, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, out, err = _run(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert (code, out) == (2, [])
    (line,) = err
    assert "cluster.node_setup.users_file is not set" in line


def test_a_cluster_that_is_not_deployed(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path = deployed_env[0]
    cluster_absent(aws, CLUSTER)
    code, _, err = _run(aws, path, capsys)
    assert code == 2
    (line,) = err
    assert f"HyperPod cluster {CLUSTER} is not deployed in {REGION}" in line


def test_no_running_node(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, uri, _, fake = deployed_env
    _deployed(aws, {"controller": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Pending")]])
    code, _, err = _run(aws, path, capsys)
    assert code == 2
    (line,) = err
    assert "has no running node (controller/i-0aaa Pending)" in line
    assert fake.calls() == []


def test_a_missing_plugin_stops_before_any_aws_call(
    aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path = _config_file(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = _run(aws, path, capsys)
    assert (code, out) == (2, [])
    (line,) = err
    assert line.startswith("sync_users: the AWS Session Manager plugin (session-manager-plugin) is not on PATH")  # fmt: skip
    assert "Install the Session Manager plugin for the AWS CLI" in line
    assert aws.called == set()


def test_sessions_that_cannot_start_anywhere_mean_nothing_ran(
    aws: StubbedAws, deployed_env: tuple[Path, str, Path, FakePlugin], capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, uri, _, _ = deployed_env
    _deployed(aws, {"controller": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Running")]])
    aws.error("ssm", "start_session", "AccessDeniedException", message="not authorized to perform ssm:StartSession")  # fmt: skip
    code, out, _ = _run(aws, path, capsys)
    assert code == 2
    assert out[0] == (
        "controller/i-0aaa: FAILED (ssm:StartSession returned AccessDeniedException: "
        "not authorized to perform ssm:StartSession)"
    )


def test_a_dry_run_prints_the_targets_and_the_command(
    aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path = _config_file(tmp_path)
    uri = f"s3://{BUCKET}/{_local_prefix(path)}"
    monkeypatch.setenv("PATH", str(tmp_path))  # no plugin needed
    _deployed(aws, {"controller": uri, "gpu": uri})
    _nodes(aws, [[("controller", "i-0aaa", "Running"), ("gpu", "i-0ccc", "ShuttingDown")]])
    code, out, err = _run(aws, path, capsys, "--dry-run")
    assert (code, err) == (0, [])
    assert out[0] == f"sync_users of {CLUSTER} from {uri} (dry run: no session started)"
    text = "\n".join(out)
    assert f'--region {REGION} "$uri"' in text
    assert "HYPERPOD_ONLY_STEPS=users,ssh_keys,slurm_users bash ./entrypoint.sh" in text
    controller = next(line for line in out if line.startswith("controller/i-0aaa: "))
    assert controller.startswith(
        f"controller/i-0aaa: aws ssm start-session --target {_target('controller', 'i-0aaa')} "
        "--document-name AWS-StartNonInteractiveCommand --parameters 'command=bash -c "
    )
    assert "gpu/i-0ccc: skipped (ShuttingDown)" in out
    assert aws.called == {"sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"}


def test_the_nodes_run_at_most_concurrency_at_a_time() -> None:
    nodes = [Node("gpu", f"i-{n}", "Running") for n in range(6)]
    lock = threading.Lock()
    active: list[int] = [0, 0]  # now, most
    both = threading.Barrier(2, timeout=10)  # only passes when two nodes run at once

    def run_one(node: Node) -> RemoteResult:
        with lock:
            active[0] += 1
            active[1] = max(active)
        both.wait()
        with lock:
            active[0] -= 1
        return RemoteResult(node.label, 0, "")

    reported: list[str] = []
    results = run_nodes(nodes, run_one, lambda node, _: reported.append(node.label), concurrency=2)
    assert active[1] == 2
    assert sorted(reported) == sorted(n.label for n in nodes) == sorted(n.label for n, _ in results)


def test_an_error_of_one_node_stops_the_others_from_starting() -> None:
    nodes = [Node("gpu", f"i-{n}", "Running") for n in range(4)]
    started: list[str] = []

    def run_one(node: Node) -> RemoteResult:
        started.append(node.label)
        if node.instance_id == "i-0":
            raise RuntimeError("credentials expired")
        time.sleep(0.3)  # the next node may have started already; the ones after it may not
        return RemoteResult(node.label, 0, "")

    report: Callable[[Node, RemoteResult], None] = lambda *_: None  # noqa: E731
    with pytest.raises(RuntimeError, match="credentials expired"):
        run_nodes(nodes, run_one, report, concurrency=1)
    assert started[0] == "gpu/i-0"
    assert "gpu/i-2" not in started and "gpu/i-3" not in started


def test_the_local_prefix_is_the_one_the_synth_deploys(build_variant: Callable[..., Any]) -> None:
    synth = build_variant({"cluster.node_setup.users_file": USERS_FILE}, nag=False)
    local = config_lifecycle_prefix(synth.config, PROJECT_ROOT)
    _, cluster = synth.one("cluster", "AWS::SageMaker::Cluster")
    for group in cluster["Properties"]["InstanceGroups"]:
        uri = synth.resolve(group["LifeCycleConfig"]["SourceS3Uri"])
        # Fn::Join of the bucket name and the literal prefix
        assert json.dumps(uri).count(local) == 1, uri
        assert json.dumps(uri).endswith(f'/{local}"]]}}'), uri
    (upload,) = synth.resources("nodes", "Custom::CDKBucketDeployment").values()
    assert upload["Properties"]["DestinationBucketKeyPrefix"] == local

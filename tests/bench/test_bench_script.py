"""scripts/bench.py without running anything slow: what it measures and how it prints it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_testkit import bench, cp, res, template
from stack_testkit import SHIPPED_CONFIGS


def test_it_estimates_the_configs_the_test_suite_synthesizes() -> None:
    assert bench.shipped_configs() == SHIPPED_CONFIGS


def test_the_synth_commands_are_the_ones_a_user_runs() -> None:
    assert bench.CDK == bench.PROJECT_ROOT / "node_modules" / ".bin" / "cdk"
    assert bench.TEST_COMMAND[1:] == [
        "-m", "pytest", "-n", "auto", "--dist", "loadgroup", "-q", "-m", "not real_slurm", "tests"
    ]  # fmt: skip
    # what make test runs (less -rs and PYTEST_ARGS, which change no test): the real Slurm tier
    # (make test-real) is not in the figure
    makefile = (bench.PROJECT_ROOT / "Makefile").read_text()
    assert (
        '-m pytest -n auto --dist loadgroup -q -rs -m "not real_slurm" $(PYTEST_ARGS) tests'
        in makefile
    )
    assert (bench.PROJECT_ROOT / bench.DEFAULT_CONFIG).is_file()
    assert (bench.PROJECT_ROOT / bench.EKS_CONFIG).is_file()


def test_the_test_figure_is_wall_and_cpu_time_beside_the_counts() -> None:
    """Issue 36: make test under 5 minutes wall on the 2-core machine, printed with the CPU time
    and how many tests ran."""
    assert bench.TEST_TARGET_SECONDS == 300
    summary = "==== 4551 passed, 7 skipped, 2 warnings in 241.30s (0:04:01) ===="
    assert bench.suite_counts(summary) == {"passed": 4551, "skipped": 7, "warnings": 2}
    lines = bench.suite_lines(241.3, 520.4, summary, 0)
    assert lines[1].startswith("  241.3 s wall, 520.4 s CPU (")
    assert lines[1].endswith("cores): 4551 passed, 7 skipped, 2 warnings")
    assert lines[2] == "  target: under 300 s wall: ok"
    assert bench.suite_lines(301.0, 600.0, summary, 0)[2].endswith(": MISSED")
    failed = bench.suite_lines(200.0, 400.0, "1 failed, 4550 passed in 200.00s", 1)
    assert failed[1].endswith(": 1 failed, 4550 passed")
    assert failed[2].endswith(": MISSED (pytest exit 1)")


def test_the_empty_app_uses_the_project_python_and_feature_flags(tmp_path: Path) -> None:
    directory = bench.make_empty_app(tmp_path / "empty")
    app = (directory / "app.py").read_text()
    assert "cdk.App()" in app and 'cdk.Stack(app, "Empty")' in app
    cdk_json = json.loads((directory / "cdk.json").read_text())
    assert cdk_json["app"] == f"{bench.PYTHON} app.py"
    project = json.loads((bench.PROJECT_ROOT / "cdk.json").read_text())
    assert cdk_json["context"] == project["context"]
    assert "end_process" not in app


def test_the_fast_exit_empty_app_ends_through_app_py_s_own_end_process(tmp_path: Path) -> None:
    directory = bench.make_empty_app(tmp_path / "empty", fast_exit=True)
    app = (directory / "app.py").read_text()
    assert 'cdk.Stack(app, "Empty")' in app
    assert f"sys.path.insert(0, {str(bench.PROJECT_ROOT)!r})" in app
    assert "from app import end_process" in app and app.rstrip().endswith("end_process(0)")
    compile(app, "app.py", "exec")


def test_the_tool_environment_puts_the_pinned_tools_first() -> None:
    path = bench.tool_env()["PATH"].split(":")
    assert path[:2] == [
        str(bench.PROJECT_ROOT / "node_modules" / ".bin"),
        str(bench.PROJECT_ROOT / ".venv" / "bin"),
    ]


def synth_results(
    floor: list[float], default: list[float], fast_floor: list[float] | None = None
) -> list[bench.SynthTimes]:
    fast = [] if fast_floor is None else [bench.SynthTimes(bench.FAST_EXIT_FLOOR, fast_floor)]
    return [
        bench.SynthTimes(bench.FLOOR, floor),
        *fast,
        bench.SynthTimes(bench.DEFAULT_CONFIG, default),
        bench.SynthTimes(bench.EKS_CONFIG, error="exit 1: boom"),
    ]


def test_the_synth_table_gives_min_median_and_ratio_to_the_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench, "cdk_version", lambda: "2.x")
    lines = bench.synth_table(synth_results([2.0, 3.0, 2.5], [3.0, 4.0, 3.5]), runs=3, warmup=1)
    text = "\n".join(lines)
    assert "empty app (floor)" in text and "2.0s    2.5s" in text
    assert "1.40 (1.50)" in text  # median 3.5 / 2.5, min 3.0 / 2.0
    assert "config/examples/eks-full.yaml" in text and "failed: exit 1: boom" in text
    assert lines[-1] == "  target: default synth within 1.5x the floor: 1.40x, ok"
    lines = bench.synth_table(synth_results([2.0], [4.0]), runs=1, warmup=0)
    assert lines[-1].endswith("2.00x, MISSED")


def test_the_synth_table_also_compares_with_the_empty_app_ended_like_app_py(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench, "cdk_version", lambda: "2.x")
    results = synth_results([2.0, 2.2], [3.0, 3.0], fast_floor=[1.5, 1.5])
    lines = bench.synth_table(results, runs=2, warmup=1)
    fast_row = next(line for line in lines if bench.FAST_EXIT_FLOOR in line)
    assert "1.5s    1.5s" in fast_row and "(" not in fast_row  # a reference: no ratio of its own
    assert lines[-2] == "  target: default synth within 1.5x the floor: 1.43x, ok"
    assert lines[-1] == (
        "  against the empty app ended like app.py: 2.00x"
        " (the time the app adds beyond what any app can reach)"
    )


def test_the_deploy_table_gives_estimate_ideal_and_the_dra_verdict() -> None:
    assembly = cp.from_templates(
        {
            "env-network": template(
                {"Subnet": res(minutes=1), "Nat": res(minutes=3, depends_on="Subnet")},
                outputs={"Id": {"Value": {"Ref": "Subnet"}}},
            ),
            "env-cluster": template(
                {
                    "HyperPod": res(
                        cp.HYPERPOD_TYPE,
                        minutes=20,
                        Subnet={
                            "Fn::GetStackOutput": {"StackName": "env-network", "OutputName": "Id"}
                        },
                    )
                }
            ),
        },
        {"env-cluster": ["env-network"]},
    )
    report = cp.analyse(assembly)
    result = bench.DeployResult("config/x.yaml", report, stacks=2)
    lines = bench.deploy_table([result], concurrency=4, stack_overhead=0.0, paths="over")
    row = next(line for line in lines if line.startswith("  config/x.yaml"))
    assert row.split() == ["config/x.yaml", "2", "24.0", "m", "21.0", "m", "+14.3%", "MISSED", "no"]
    assert (
        "    env-network: S3::Bucket 1, S3::Bucket 3 > env-cluster: SageMaker::Cluster 20" in lines
    )
    assert any(line.startswith("Critical path of config/x.yaml in detail") for line in lines)
    quiet = bench.deploy_table([result], concurrency=4, stack_overhead=0.0, paths="none")
    assert not any("in detail" in line for line in quiet)

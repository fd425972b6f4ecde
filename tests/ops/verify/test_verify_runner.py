"""The order, dependencies and clean-up of make verify's runner, and its report (lines, JSON
held to docs/verify-report.schema.json, exit codes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from botocore.exceptions import ClientError
from ops_testkit import environment

from hyperpod_ops.verify import report
from hyperpod_ops.verify.model import (
    CHECK_ORDER,
    DEPENDS_ON,
    Options,
    Result,
    VerifyRun,
    failed,
    new_run_id,
    passed,
    skipped,
)
from hyperpod_ops.verify.runner import Removal, Timed, clean_up, run_checks

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[3] / "docs" / "verify-report.schema.json").read_text()
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_run(base: str = "default", checks: tuple[str, ...] = CHECK_ORDER) -> VerifyRun:
    clock = Clock()
    return VerifyRun(
        environment(base), lambda _service: None, options=Options(checks=checks), clock=clock
    )


def recording(outcomes: dict[str, Result], calls: list[str]) -> dict[str, Any]:
    def check_of(name: str) -> Any:
        def check(run: VerifyRun) -> list[Result]:
            calls.append(name)
            run.clock.now += 5  # type: ignore[attr-defined]
            return [outcomes.get(name, passed(name, f"{name} fine"))]

        return check

    return {name: check_of(name) for name in CHECK_ORDER}


def test_checks_run_in_dependency_order() -> None:
    for position, name in enumerate(CHECK_ORDER):
        assert all(CHECK_ORDER.index(d) < position for d in DEPENDS_ON[name]), name
    calls: list[str] = []
    timed = run_checks(make_run(), recording({}, calls), CHECK_ORDER)
    assert calls == list(CHECK_ORDER)
    assert [t.seconds for t in timed] == [5.0] * len(CHECK_ORDER)


def test_a_failed_check_skips_what_depends_on_it_transitively() -> None:
    calls: list[str] = []
    outcomes = {"efa": failed("efa", "2 of 32 EFA devices", "check the EFA driver", "gpu")}
    timed = run_checks(make_run(), recording(outcomes, calls), CHECK_ORDER)
    by_check = {t.result.check: t.result for t in timed}
    assert "nccl" not in calls and "containers" in calls and "fsx" in calls
    assert by_check["nccl"].outcome == "skip"
    assert by_check["nccl"].detail == "needs the efa check, which failed"
    calls.clear()
    outcomes = {"cluster": failed("cluster", "Creating", "wait")}
    timed = run_checks(make_run(), recording(outcomes, calls), CHECK_ORDER)
    assert calls == ["cluster"]
    details = {t.result.check: t.result.detail for t in timed}
    assert details["nodes"] == "needs the cluster check, which failed"
    assert details["nccl"] == "needs the efa check, which could not run"
    assert details["dra"] == "needs the cluster check, which failed"


def test_a_skipped_dependency_does_not_block_and_unselected_checks_do_not_run() -> None:
    calls: list[str] = []
    outcomes = {"efa": skipped("efa", "no group has EFA")}
    run_checks(make_run(), recording(outcomes, calls), CHECK_ORDER)
    assert "nccl" in calls
    calls.clear()
    run = make_run(checks=("nccl", "cluster"))
    timed = run_checks(run, recording({}, calls), CHECK_ORDER)
    assert calls == ["cluster", "nccl"]  # in the runner's order, not the option's
    assert [t.result.check for t in timed] == ["cluster", "nccl"]


def test_a_check_the_orchestrator_lacks_is_skipped_saying_so() -> None:
    calls: list[str] = []
    names = tuple(c for c in CHECK_ORDER if c != "accounting")
    timed = run_checks(make_run("eks-minimal"), recording({}, calls), names)
    (accounting,) = [t.result for t in timed if t.result.check == "accounting"]
    assert accounting.outcome == "skip" and accounting.detail == "not a check of EKS clusters"
    assert "accounting" not in calls


def test_an_unexpected_aws_error_is_the_checks_failure_not_a_traceback() -> None:
    def broken(_run: VerifyRun) -> list[Result]:
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}},
            "ListClusterEvents",
        )

    timed = run_checks(make_run(checks=("health",)), {"health": broken}, CHECK_ORDER)
    (result,) = [t.result for t in timed]
    assert result.failed and "ListClusterEvents" in result.detail and "not allowed" in result.detail
    assert "docs/operations.md" in (result.fix or "")


def test_a_bug_in_a_check_is_raised() -> None:
    def buggy(_run: VerifyRun) -> list[Result]:
        raise KeyError("oops")

    with pytest.raises(KeyError):
        run_checks(make_run(checks=("nodes",)), {"nodes": buggy}, CHECK_ORDER)


def test_results_are_kept_as_they_come_when_the_run_is_interrupted() -> None:
    def interrupted(_run: VerifyRun) -> list[Result]:
        raise KeyboardInterrupt

    kept: list[Timed] = []
    checks = {"cluster": lambda _r: [passed("cluster", "InService")], "health": interrupted}
    with pytest.raises(KeyboardInterrupt):
        run_checks(make_run(checks=("cluster", "health")), checks, CHECK_ORDER, timed=kept)
    assert [t.result.check for t in kept] == ["cluster"]


def test_clean_up_removes_newest_first_and_keeps_failures_with_the_command() -> None:
    run = make_run()
    removed: list[str] = []

    def gone(name: str) -> Any:
        return lambda: removed.append(name)

    def refuses() -> None:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DeleteObject")

    run.created("job hpv-1-efa", gone("job"), "scancel --name hpv-1-efa")
    run.created("S3 object s3://b/k", refuses, "aws s3 rm s3://b/k")
    run.created("namespace hpv-1", gone("ns"), "kubectl delete namespace hpv-1")
    removals = clean_up(run.made)
    assert removed == ["ns", "job"]
    assert [r.removed for r in removals] == [True, False, True]
    assert removals[1].by_hand == "aws s3 rm s3://b/k" and "DeleteObject" in (
        removals[1].error or ""
    )
    assert run.made == [] and clean_up(run.made) == []
    line = report.removal_line(removals[1])
    assert line is not None and line.startswith(
        "FAIL  cleanup: could not remove S3 object s3://b/k"
    )
    assert line.endswith("; by hand: aws s3 rm s3://b/k")


def test_ctrl_c_during_clean_up_lists_what_is_left() -> None:
    run = make_run()

    def interrupted() -> None:
        raise KeyboardInterrupt

    run.created("first", lambda: None, "rm first")
    run.created("second", interrupted, "rm second")
    removals = clean_up(run.made)
    assert [(r.what, r.removed, r.error) for r in removals] == [
        ("second", False, "interrupted"),
        ("first", False, "interrupted"),
    ]


def sample() -> tuple[list[Timed], list[Removal]]:
    timed = [
        Timed(passed("cluster", "InService, 3 groups at target"), 1.2),
        Timed(
            passed("nccl", "412.3 GB/s at 16 GiB", "gpu", busbw_gbps=412.3, gate_gbps=389.7), 301.0
        ),
        Timed(skipped("accounting", "no accounting database in the config"), 0.0),
    ]
    return timed, [Removal("job hpv-0123456789ab-nccl", True)]


def test_lines_exit_codes_and_summary() -> None:
    timed, removals = sample()
    assert report.result_line(timed[1].result) == "PASS  nccl gpu: 412.3 GB/s at 16 GiB"
    line = report.result_line(failed("fsx", "210 MB/s\nwrite", "look at the\n mount", "a/b"))
    assert line == "FAIL  fsx a/b: 210 MB/s write; fix: look at the mount"
    assert report.exit_code(timed, removals) == 0
    assert report.exit_code(timed, [Removal("x", False, "denied", "rm x")]) == 1
    assert report.exit_code([*timed, Timed(failed("efa", "x", "y"), 1)], removals) == 1
    assert report.summary_line("hpv-0123456789ab", timed, removals) == (
        "verify hpv-0123456789ab: 2 passed, 0 failed, 1 skipped; cleanup: 1 removed, 0 left"
    )
    left = report.summary_line("hpv-0123456789ab", timed, [Removal("x", False, "e", "rm x")])
    assert left.endswith(
        "0 removed, 1 left (make verify OPS_ARGS='--cleanup hpv-0123456789ab' retries)"
    )


def test_the_json_report_follows_its_schema_and_snapshot(snapshot) -> None:
    timed, removals = sample()
    document = report.document(
        run_id="hpv-0123456789ab",
        environment="dev",
        cluster="dev-cluster",
        orchestrator="slurm",
        region="us-west-2",
        timed=timed,
        removals=[*removals, Removal("s3://b/k", False, "AccessDenied", "aws s3 rm s3://b/k")],
        code=1,
    )
    jsonschema.validate(document, SCHEMA)
    assert json.loads(report.dumps(document)) == document
    assert document == snapshot


def test_the_schema_rejects_what_a_reader_would_trip_on() -> None:
    timed, removals = sample()
    document = report.document(run_id="hpv-0123456789ab", environment="e", cluster="c",
                               orchestrator="eks", region="r", timed=timed, removals=removals,
                               code=0)  # fmt: skip
    document["checks"][0]["outcome"] = "ok"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


def test_run_ids_are_short_unique_and_label_safe() -> None:
    ids = {new_run_id() for _ in range(50)}
    assert len(ids) == 50
    for run_id in ids:
        assert len(run_id) == 16 and run_id == run_id.lower() and run_id.startswith("hpv-")


def test_the_docs_list_the_permissions_table() -> None:
    from hyperpod_ops.verify.permissions import markdown_table

    docs = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    start, end = "<!-- verify-permissions:start -->\n", "<!-- verify-permissions:end -->"
    assert docs.split(start, 1)[1].split(end, 1)[0] == markdown_table() + "\n"

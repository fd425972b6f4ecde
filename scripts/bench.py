#!/usr/bin/env python3
"""``make bench``: synth, test-suite and first-deploy figures of this project, from one run.

    python scripts/bench.py [--runs 3] [--warmup 1] [--skip-tests] [--concurrency 4]
        [--stack-overhead 0] [--paths over|all|none] [--keep DIR]

Offline, with no AWS account or credentials. Prints plain tables:

1. **Synth**: ``cdk synth -c config=<file> --quiet -o <tmp>``, run with the pinned CLI from the
   project root as a user runs it, for config/default.yaml and config/examples/eks-full.yaml;
   and the same CLI and Python on an *empty app* (``cdk.App()`` with one empty Stack, created in
   a temporary directory, with the project's cdk.json context): the floor that starting the
   CLI, Python and the jsii runtime costs on this machine. The empty app exits the normal way;
   app.py ends a successful synth without waiting for the jsii runtime (``end_process``), which
   saves an empty app about 0.3 s too, so the same empty app ended by app.py's ``end_process``
   is timed as well, and the default config's ratio to it printed: the time the project's app
   adds beyond what any app can reach. The four are run round-robin
   (``--warmup`` rounds discarded, then ``--runs`` rounds), so load from other processes falls
   on all four alike. Reported: min and median of the runs, and each config's ratio to the
   floor, median to median (min to min in brackets). The target (issue 7) is the default
   config within 1.5x the floor. The median is the figure to quote; the min is the least noisy
   on a busy machine.
2. **Tests**: ``make test``'s pytest command,
   ``.venv/bin/python -m pytest -n auto --dist loadgroup -q -m "not real_slurm" tests`` (the
   real Slurm tier is ``make test-real``, apart): its wall time and CPU time (user + system of pytest, its xdist
   workers and the processes they waited for, from ``getrusage(RUSAGE_CHILDREN)``) beside the
   passed/skipped/failed counts; target (issue 36): under 5 minutes wall on the 2-core
   development machine. ``--skip-tests`` leaves it out.
3. **First deploy**: for every shipped config (config/default.yaml and config/examples/*.yaml,
   except pipeline files), the estimated deploy time of ``cdk deploy --all --concurrency N``
   next to the ideal with no stack barriers, how far over the ideal it is (target: 5%), and
   whether an FSx data repository association lies on the HyperPod cluster's path. See
   scripts/critical_path.py for the model and the creation times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import critical_path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CDK = PROJECT_ROOT / "node_modules" / ".bin" / "cdk"
PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"
DEFAULT_CONFIG = "config/default.yaml"
EKS_CONFIG = "config/examples/eks-full.yaml"
TEST_COMMAND = [
    str(PYTHON), "-m", "pytest", "-n", "auto", "--dist", "loadgroup", "-q", "-m", "not real_slurm",
    "tests",
]  # fmt: skip

SYNTH_TARGET = 1.5  # default synth within 1.5x the empty-app floor
TEST_TARGET_SECONDS = 300.0  # issue 36: under 5 minutes on 2 cores
DEPLOY_TARGET = 0.05  # estimate within 5% of the ideal

EMPTY_APP = """\
import aws_cdk as cdk

app = cdk.App()
cdk.Stack(app, "Empty")
app.synth()
"""
FLOOR = "empty app (floor)"
FAST_EXIT_FLOOR = "empty app, app.py's exit"
EMPTY_APPS = (FLOOR, FAST_EXIT_FLOOR)  # references: no ratio, no deploy estimate


def tool_env() -> dict[str, str]:
    """The environment scripts/env.sh makes: the pinned CLI and Node, then the project's venv."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(
        [
            str(PROJECT_ROOT / "node_modules" / ".bin"),
            str(PROJECT_ROOT / ".venv" / "bin"),
            env.get("PATH", ""),
        ]
    )
    env.pop("CDK_CONTEXT_JSON", None)
    return env


def shipped_configs() -> list[Path]:
    """config/default.yaml and config/examples/*.yaml, except pipeline files."""
    import yaml

    files = [
        PROJECT_ROOT / DEFAULT_CONFIG,
        *sorted((PROJECT_ROOT / "config/examples").glob("*.yaml")),
    ]
    return [
        f for f in files if "pipeline" not in (yaml.safe_load(f.read_text(encoding="utf-8")) or {})
    ]


# -- synth -----------------------------------------------------------------------------------


@dataclass
class SynthTimes:
    label: str
    seconds: list[float] = field(default_factory=list)
    outdir: Path | None = None  # the first successful run's assembly
    error: str | None = None

    @property
    def min(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def run_synth(cwd: Path, outdir: Path, config: str | None) -> tuple[float, str | None]:
    """One ``cdk synth --quiet -o outdir`` (with ``-c config=...``): wall seconds, error or None."""
    command = [str(CDK), "synth", "--quiet", "-o", str(outdir)]
    if config is not None:
        command[2:2] = ["-c", f"config={config}"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=tool_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return seconds, f"exit {done.returncode}: " + " | ".join(tail)
    return seconds, None


def make_empty_app(directory: Path, *, fast_exit: bool = False) -> Path:
    """The floor: an empty app run with the same Python, CLI and feature flags as the project
    (``fast_exit``: ended like app.py ends a successful synth)."""
    directory.mkdir(parents=True, exist_ok=True)
    source = EMPTY_APP
    if fast_exit:  # the same app, ended by app.py's own end_process
        source = (
            f"import sys\n\nsys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
            f"from app import end_process\n\n{EMPTY_APP}end_process(0)\n"
        )
    (directory / "app.py").write_text(source, encoding="utf-8")
    context = json.loads((PROJECT_ROOT / "cdk.json").read_text(encoding="utf-8")).get("context", {})
    cdk_json = {"app": f"{PYTHON} app.py", "context": context}
    (directory / "cdk.json").write_text(json.dumps(cdk_json, indent=2), encoding="utf-8")
    return directory


def measure_synth(workdir: Path, runs: int, warmup: int) -> list[SynthTimes]:
    subjects: list[tuple[SynthTimes, Path, str | None]] = [
        (SynthTimes(FLOOR), make_empty_app(workdir / "empty-app"), None),
        (
            SynthTimes(FAST_EXIT_FLOOR),
            make_empty_app(workdir / "empty-app-fast-exit", fast_exit=True),
            None,
        ),
        (SynthTimes(DEFAULT_CONFIG), PROJECT_ROOT, DEFAULT_CONFIG),
        (SynthTimes(EKS_CONFIG), PROJECT_ROOT, EKS_CONFIG),
    ]
    for round_ in range(warmup + runs):
        for index, (times, cwd, config) in enumerate(subjects):
            if times.error:
                continue
            outdir = workdir / f"synth-{index}-{round_}"
            seconds, error = run_synth(cwd, outdir, config)
            if error:
                times.error = error
                continue
            if times.outdir is None:
                times.outdir = outdir
            else:
                shutil.rmtree(outdir, ignore_errors=True)
            if round_ >= warmup:
                times.seconds.append(seconds)
        print(f"  synth round {round_ + 1}/{warmup + runs} done", file=sys.stderr)
    return [times for times, _, _ in subjects]


def synth_table(results: Sequence[SynthTimes], runs: int, warmup: int) -> list[str]:
    """The synth figures; ``results``: the floor first, then the configs (the default one first),
    with the fast-exit floor anywhere (optional)."""
    floor = results[0]
    fast_floor = next((t for t in results if t.label == FAST_EXIT_FLOOR), None)
    default = next(t for t in results if t.label not in EMPTY_APPS)
    lines = [
        f"Synth: cdk synth -c config=<file> --quiet -o <tmp> (pinned CLI {cdk_version()}), "
        f"{runs} timed run(s) each after {warmup} warm-up round(s), round-robin",
        f"  {'app':34} {'min':>7} {'median':>7}  {'x floor (min)':>15}  runs (s)",
    ]
    for times in results:
        if times.error or not times.seconds:
            lines.append(f"  {times.label:34} failed: {times.error}")
            continue
        ratio = ""
        if times.label not in EMPTY_APPS and floor.seconds:
            ratio = f"{times.median / floor.median:.2f} ({times.min / floor.min:.2f})"
        runs_text = " ".join(f"{s:.1f}" for s in times.seconds)
        lines.append(
            f"  {times.label:34} {times.min:6.1f}s {times.median:6.1f}s  {ratio:>15}  {runs_text}"
        )
    if floor.seconds and default.seconds and not (floor.error or default.error):
        factor = default.median / floor.median
        verdict = "ok" if factor <= SYNTH_TARGET else "MISSED"
        lines.append(
            f"  target: default synth within {SYNTH_TARGET}x the floor: {factor:.2f}x, {verdict}"
        )
        if fast_floor is not None and fast_floor.seconds and not fast_floor.error:
            lines.append(
                f"  against the empty app ended like app.py: {default.median / fast_floor.median:.2f}x"
                " (the time the app adds beyond what any app can reach)"
            )
    return lines


def cdk_version() -> str:
    done = subprocess.run(
        [str(CDK), "--version"], cwd=PROJECT_ROOT, env=tool_env(), capture_output=True, text=True
    )
    return done.stdout.strip().split(" ")[0] if done.returncode == 0 else "?"


# -- tests -----------------------------------------------------------------------------------


def suite_counts(summary: str) -> dict[str, int]:
    """``{"passed": 4550, "skipped": 7}`` from pytest's last line (``4550 passed, 7 skipped in
    240.1s``)."""
    counts = {}
    for part in summary.strip("= ").split(" in ")[0].split(","):
        number, _, outcome = part.strip().partition(" ")
        if number.isdigit():
            counts[outcome] = int(number)
    return counts


def suite_lines(wall: float, cpu: float, summary: str, returncode: int) -> list[str]:
    """What ``make bench`` prints of the test run: wall and CPU seconds beside the counts."""
    counts = suite_counts(summary)
    verdict = "ok" if wall < TEST_TARGET_SECONDS and returncode == 0 else "MISSED"
    if returncode != 0:
        verdict += f" (pytest exit {returncode})"
    tests = ", ".join(f"{n} {outcome}" for outcome, n in counts.items()) or summary.strip("= ")
    return [
        "Tests: " + " ".join([".venv/bin/python", *TEST_COMMAND[1:]]),
        f"  {wall:.1f} s wall, {cpu:.1f} s CPU ({os.cpu_count()} cores): {tests}",
        f"  target: under {TEST_TARGET_SECONDS:.0f} s wall: {verdict}",
    ]


def measure_tests() -> list[str]:
    """Wall time of the test command, and the CPU time (user + system) of it and every process
    it waited for (``RUSAGE_CHILDREN``: pytest, its xdist workers and what they ran)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        TEST_COMMAND, cwd=PROJECT_ROOT, env=tool_env(), capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = next(
        (line for line in reversed(done.stdout.splitlines()) if line.strip()), "(no output)"
    )
    return suite_lines(wall, cpu, summary, done.returncode)


# -- first deploy ----------------------------------------------------------------------------


@dataclass
class DeployResult:
    config: str
    report: critical_path.Report | None
    stacks: int = 0
    error: str | None = None


def measure_deploy(
    configs: Sequence[Path],
    assemblies: dict[str, Path],
    workdir: Path,
    concurrency: int,
    stack_overhead: float,
) -> list[DeployResult]:
    results = []
    for path in configs:
        name = str(path.relative_to(PROJECT_ROOT))
        outdir = assemblies.get(name)
        if outdir is None:
            outdir = workdir / f"assembly-{path.stem}"
            _, error = run_synth(PROJECT_ROOT, outdir, name)
            if error:
                results.append(DeployResult(name, None, error=error))
                continue
        assembly = critical_path.load_assembly(outdir)
        report = critical_path.analyse(
            assembly, concurrency=concurrency, stack_overhead=stack_overhead
        )
        results.append(DeployResult(name, report, stacks=len(assembly.stacks)))
    return results


def deploy_table(
    results: Sequence[DeployResult], concurrency: int, stack_overhead: float, paths: str
) -> list[str]:
    overhead = f", {stack_overhead:g} min per stack" if stack_overhead else ""
    lines = [
        f"First deploy, estimated: cdk deploy --all --concurrency {concurrency}{overhead}; "
        "creation times: scripts/critical_path.py",
        f"  {'config':42} {'stacks':>6} {'estimate':>9} {'ideal':>9} {'over':>7}  "
        f"{'target 5%':9}  DRA on HyperPod path",
    ]
    for result in results:
        if result.report is None:
            lines.append(f"  {result.config:42} failed: {result.error}")
            continue
        report = result.report
        verdict = "ok" if report.over_ideal <= DEPLOY_TARGET else "MISSED"
        dras = ", ".join("/".join(n) for n in report.dras_before_cluster) or "no"
        lines.append(
            f"  {result.config:42} {result.stacks:6d} {report.estimate.minutes:7.1f} m "
            f"{report.ideal.minutes:7.1f} m {report.over_ideal:+7.1%}  {verdict:9}  {dras}"
        )
    lines += ["", "Critical paths (estimate), stack by stack: resource type and minutes"]
    for result in results:
        if result.report is not None:
            lines.append(f"  {result.config}:")
            lines.append(f"    {critical_path.summarize_path(result.report.estimate.path)}")
    for result in results:
        if result.report is None or paths == "none":
            continue
        report = result.report
        if (
            paths == "over"
            and report.over_ideal <= DEPLOY_TARGET
            and not report.dras_before_cluster
        ):
            continue
        lines += [
            "",
            f"Critical path of {result.config} in detail: estimate {report.estimate.minutes:.1f} min",
            critical_path.format_path(report.estimate.path),
            f"  ideal {report.ideal.minutes:.1f} min:",
            critical_path.format_path(report.ideal.path),
        ]
        lines += [f"  warning: unresolved reference {item}" for item in report.unresolved]
    return lines


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3, help="timed synth runs per app (default 3)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test suite")
    parser.add_argument("--concurrency", type=int, default=4, help="cdk deploy --concurrency")
    parser.add_argument(
        "--stack-overhead",
        type=float,
        default=0.0,
        help="minutes per stack before its first resource starts (change set); default 0",
    )
    parser.add_argument(
        "--paths",
        choices=("over", "all", "none"),
        default="over",
        help="critical paths to print: of configs that miss a target (default), all, none",
    )
    parser.add_argument("--keep", type=Path, help="keep the assemblies in this directory")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    missing = [str(p.relative_to(PROJECT_ROOT)) for p in (CDK, PYTHON) if not p.exists()]
    if missing:
        print(f"bench: {', '.join(missing)} missing; run `make bootstrap` first", file=sys.stderr)
        return 2

    workdir = Path(tempfile.mkdtemp(prefix="hyperpod-bench-")) if args.keep is None else args.keep
    workdir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    out: list[str] = [
        f"bench on {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        "at start (timings are wall clock: other work on the machine shows in them)",
        "",
    ]
    try:
        synth = measure_synth(workdir, args.runs, args.warmup)
        out += synth_table(synth, args.runs, args.warmup)
        out.append("")
        if not args.skip_tests:
            print("  running the test suite", file=sys.stderr)
            out += measure_tests()
            out.append("")
        assemblies = {
            t.label: t.outdir for t in synth if t.outdir is not None and t.label not in EMPTY_APPS
        }
        deploy = measure_deploy(
            shipped_configs(), assemblies, workdir, args.concurrency, args.stack_overhead
        )
        out += deploy_table(deploy, args.concurrency, args.stack_overhead, args.paths)
        load = os.getloadavg()
        out += ["", f"load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"]
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(out))
    failed = any(t.error for t in synth) or any(r.error for r in deploy)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

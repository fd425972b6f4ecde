"""How ``make verify`` reports: one line per result, as preflight does, and with ``--json`` one
JSON document for machines, versioned (:data:`SCHEMA`; the JSON Schema is
``docs/verify-report.schema.json``, and a change that breaks a reader bumps the version).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hyperpod_ops.verify.model import Result
from hyperpod_ops.verify.runner import Removal, Timed

SCHEMA = "hyperpod-cdk/verify-report"
SCHEMA_VERSION = 1

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_UNUSABLE = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports it (128 + SIGINT)


def result_line(result: Result) -> str:
    """``PASS  nccl gpu: 412.3 GB/s ...; fix: ...`` on one line."""
    text = f"{result.name}: {result.detail}"
    if result.fix:
        text += f"; fix: {result.fix}"
    return f"{result.outcome.upper()}  " + " ".join(text.split())


def removal_line(removal: Removal) -> str | None:
    """The line of a removal that failed (the thing, why, and the command by hand); None when
    it was removed."""
    if removal.removed:
        return None
    by_hand = f"; by hand: {removal.by_hand}" if removal.by_hand else ""
    return f"FAIL  cleanup: could not remove {removal.what} ({removal.error}){by_hand}"


def counts(timed: Sequence[Timed]) -> dict[str, int]:
    """``{"passed": n, "failed": n, "skipped": n}``."""
    outcomes = [t.result.outcome for t in timed]
    return {
        "passed": outcomes.count("pass"),
        "failed": outcomes.count("fail"),
        "skipped": outcomes.count("skip"),
    }


def exit_code(timed: Sequence[Timed], removals: Sequence[Removal]) -> int:
    """0 every check passed or was skipped and everything made was removed; 1 otherwise."""
    if any(t.result.failed for t in timed) or not all(r.removed for r in removals):
        return EXIT_FAILED
    return EXIT_PASSED


def summary_line(run_id: str, timed: Sequence[Timed], removals: Sequence[Removal]) -> str:
    """``verify hpv-...: 7 passed, 1 failed, 2 skipped; cleanup: 5 removed, 0 left``."""
    c = counts(timed)
    left = sum(not r.removed for r in removals)
    line = f"verify {run_id}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
    line += f"; cleanup: {len(removals) - left} removed, {left} left"
    if left:
        line += f" (make verify OPS_ARGS='--cleanup {run_id}' retries)"
    return line


def document(
    *,
    run_id: str,
    environment: str,
    cluster: str,
    orchestrator: str,
    region: str,
    timed: Sequence[Timed],
    removals: Sequence[Removal],
    code: int,
) -> dict[str, Any]:
    """The ``--json`` report."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "run_id": run_id,
        "environment": environment,
        "cluster": cluster,
        "orchestrator": orchestrator,
        "region": region,
        "checks": [
            {
                "check": t.result.check,
                "subject": t.result.subject,
                "outcome": t.result.outcome,
                "detail": t.result.detail,
                "fix": t.result.fix,
                "figures": dict(t.result.figures),
                "seconds": round(t.seconds, 1),
            }
            for t in timed
        ],
        "cleanup": [
            {"what": r.what, "removed": r.removed, "error": r.error, "by_hand": r.by_hand}
            for r in removals
        ],
        "summary": counts(timed),
        "exit_code": code,
    }


def dumps(report: dict[str, Any]) -> str:
    """The report as printed: stable key order, two-space indent."""
    return json.dumps(report, indent=2, sort_keys=False)

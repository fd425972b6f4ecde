"""Runs the checks of ``make verify`` in order, each after the checks it depends on, and removes
what the run made, whatever happens (a failed check, an exception, Ctrl-C).

The runner decides what a check's caller would otherwise repeat: a check not selected is not run;
a check whose dependency failed is skipped with that reason; a check the orchestrator does not
have (accounting on EKS) is skipped saying so; an AWS error a check did not expect is that
check's failed line, not a traceback. Only unusable credentials and Ctrl-C stop the run (after the
clean-up).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hyperpod_ops.aws import describe_error, is_client_error, one_line, unavailable_reason
from hyperpod_ops.verify.model import (
    CHECK_ORDER,
    DEPENDS_ON,
    Check,
    Created,
    Result,
    VerifyRun,
    failed,
    skipped,
)

Report = Callable[[Result], None]


@dataclass(frozen=True)
class Timed:
    """A result and the seconds its check took (the whole check, shared by its subjects)."""

    result: Result
    seconds: float


@dataclass(frozen=True)
class Removal:
    """What became of one thing the run made."""

    what: str
    removed: bool
    error: str | None = None
    by_hand: str | None = None


def _blocked_by(name: str, outcomes: Mapping[str, list[Result]], blocked: set[str]) -> str | None:
    """The reason ``name`` cannot run: a dependency that failed, or could not run itself. A
    dependency that was not selected does not block (the user asked for this check alone)."""
    for dependency in DEPENDS_ON[name]:
        if dependency in blocked:
            return f"needs the {dependency} check, which could not run"
        if any(r.failed for r in outcomes.get(dependency, ())):
            return f"needs the {dependency} check, which failed"
    return None


def run_checks(
    run: VerifyRun,
    checks: Mapping[str, Check],
    orchestrator_checks: Sequence[str],
    report: Report = lambda _result: None,
    timed: list[Timed] | None = None,
) -> list[Timed]:
    """Run the selected checks of ``run.options.checks`` in :data:`CHECK_ORDER`.

    :param checks: every check this orchestrator has, by name.
    :param orchestrator_checks: the names this orchestrator has (the others are skipped saying so).
    :param report: called with each result as soon as it is known (the progress lines).
    :param timed: where the results go as they come (kept by the caller when the run is
        interrupted); a new list by default.
    """
    selected = [name for name in CHECK_ORDER if name in run.options.checks]
    outcomes: dict[str, list[Result]] = {}
    blocked: set[str] = set()
    timed = [] if timed is None else timed
    for name in selected:
        started = run.clock()
        reason = _blocked_by(name, outcomes, blocked)
        if reason:
            blocked.add(name)
            results = [skipped(name, reason)]
        else:
            results = _run_one(run, name, checks, orchestrator_checks)
        seconds = max(0.0, run.clock() - started)
        outcomes[name] = results
        for result in results:
            timed.append(Timed(result, seconds))
            report(result)
    return timed


def _run_one(
    run: VerifyRun,
    name: str,
    checks: Mapping[str, Check],
    orchestrator_checks: Sequence[str],
) -> list[Result]:
    kind = "Slurm" if run.config.is_slurm else "EKS"
    if name not in orchestrator_checks or name not in checks:
        return [skipped(name, f"not a check of {kind} clusters")]
    try:
        results = checks[name](run)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        return [
            failed(
                name,
                f"an AWS call failed: {describe_error(exc)}",
                "grant the caller the permission named (docs/operations.md, make verify), or "
                "retry if the service was busy",
            )
        ]
    return results or [skipped(name, "nothing to check in this environment")]


def clean_up(made: list[Created]) -> list[Removal]:
    """Remove what the run made, newest first; every failure is kept with its command by hand.

    Emptied as it goes, so a second call (Ctrl-C during the first) does not remove twice.
    """
    removals: list[Removal] = []
    while made:
        item = made.pop()
        try:
            item.remove()
        except KeyboardInterrupt:
            removals.append(Removal(item.what, False, "interrupted", item.by_hand))
            removals += [Removal(i.what, False, "interrupted", i.by_hand) for i in reversed(made)]
            made.clear()
            break
        except Exception as exc:
            if unavailable_reason(exc) is not None:
                error = "credentials stopped working"
            elif is_client_error(exc):
                error = describe_error(exc)
            else:
                error = one_line(str(exc) or type(exc).__name__)
            removals.append(Removal(item.what, False, error, item.by_hand))
        else:
            removals.append(Removal(item.what, True))
    return removals

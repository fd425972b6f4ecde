"""The result of one preflight check, and how it is printed (one line each)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One line of the preflight report.

    :param name: what was checked, e.g. ``quota ml.p5.48xlarge``.
    :param outcome: ``pass``, ``fail`` or ``skip`` (not applicable to this config).
    :param detail: why: what was found.
    :param fix: on a failure, how to fix it.
    """

    name: str
    outcome: Outcome
    detail: str
    fix: str | None = None

    @property
    def failed(self) -> bool:
        """True for a failed check."""
        return self.outcome == "fail"


def passed(name: str, detail: str) -> Check:
    """A passed check."""
    return Check(name, "pass", detail)


def failed(name: str, detail: str, fix: str) -> Check:
    """A failed check, with how to fix it."""
    return Check(name, "fail", detail, fix)


def skipped(name: str, detail: str) -> Check:
    """A check that does not apply to this config."""
    return Check(name, "skip", detail)


def format_check(check: Check) -> str:
    """``FAIL  name: detail; fix: ...`` on one line (newlines in AWS messages are folded)."""
    text = f"{check.name}: {check.detail}"
    if check.fix:
        text += f"; fix: {check.fix}"
    return f"{check.outcome.upper()}  " + " ".join(text.split())


def summary(checks: Sequence[Check]) -> str:
    """``12 passed, 1 failed, 3 skipped``."""
    counts = {outcome: sum(c.outcome == outcome for c in checks) for outcome in ("pass", "fail")}
    skipped_count = len(checks) - counts["pass"] - counts["fail"]
    return f"{counts['pass']} passed, {counts['fail']} failed, {skipped_count} skipped"

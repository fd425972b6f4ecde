#!/usr/bin/env python3
"""Print docs/iam-parity.md, the IAM parity tables of tests/stacks/iam_parity_tables.py rendered.

    python scripts/iam_parity.py           # print the Markdown page
    python scripts/iam_parity.py --write   # rewrite docs/iam-parity.md
    python scripts/iam_parity.py --check   # exit 1 when docs/iam-parity.md is out of date

The tables are test data (tests/stacks/test_stack_iam_parity.py holds the synthesized roles to
them), so they live in the test suite and this generator beside the other scripts; neither is
part of the construct library. Works with a bare ``python3``: the tables import nothing outside
the standard library until a row's ``when`` is called, which rendering never does.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "iam-parity.md"
REGENERATE = "python scripts/iam_parity.py --write"


def _tables() -> ModuleType:
    """tests/stacks/iam_parity_tables.py, loaded from its file (the tests are no package)."""
    path = ROOT / "tests" / "stacks" / "iam_parity_tables.py"
    spec = importlib.util.spec_from_file_location("iam_parity_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("iam_parity_tables", module)
    spec.loader.exec_module(module)
    return module


_T = _tables()
SOURCE_COMMIT = _T.SOURCE_COMMIT
SOURCE_COMMIT_DATE = _T.SOURCE_COMMIT_DATE
SOURCE_READ = _T.SOURCE_READ
SOURCE_REPOSITORY = _T.SOURCE_REPOSITORY
TABLES = _T.TABLES


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def render() -> str:
    """docs/iam-parity.md: every table as Markdown (no trailing newline)."""
    lines = [
        "# IAM parity with AWS's HyperPod role templates",
        "",
        f"<!-- generated: {REGENERATE} -->",
        "",
        "Every action AWS's own HyperPod role templates grant, and every action this project "
        "grants, one table per role: granted here (with its scope) or not (with the reason), "
        "and the actions granted here only under some configs (*when*). "
        "`tests/stacks/test_stack_iam_parity.py` synthesizes the shipped `full` (Slurm) and "
        "`eks-full` (EKS) configs and fails on any action granted that its table lacks, and on "
        "any row granted (for that config) that the synthesized role lacks. The tables are "
        "`tests/stacks/iam_parity_tables.py`; a change that adds an action adds its row "
        f"there, and this page is regenerated from it (`{REGENERATE}`).",
        "",
        f"Source: {SOURCE_REPOSITORY}, commit `{SOURCE_COMMIT}` ({SOURCE_COMMIT_DATE}), read "
        f"{SOURCE_READ}. The managed policy row is the AWS managed policy both templates attach.",
        "",
    ]
    for t in TABLES:
        source = (
            f"AWS's template: `{t.source}`."
            if t.source
            else "AWS's repository has no template for this role; every row is this project's."
        )
        lines += [
            f"## {t.title}",
            "",
            f"Role `{t.role}`. {source}",
            "",
            "| action | AWS | here | when | scope or reason |",
            "|---|---|---|---|---|",
        ]
        for r in t.rows:
            text = r.scope if r.here else r.reason
            if r.here and r.reason:
                text = f"{text} {r.reason}"
            when = r.when_text if r.when is not None else ("always" if r.here else "")
            lines.append(
                f"| `{r.action}` | {_yes(r.aws)} | {_yes(r.here)} | {_cell(when)} | {_cell(text)} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--write"], ["--check"]):
        print("usage: python scripts/iam_parity.py [--write | --check]", file=sys.stderr)
        return 2
    page = render() + "\n"
    if not argv:
        print(page, end="")
        return 0
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if argv == ["--check"]:
        if page != current:
            print(f"docs/iam-parity.md is out of date; run: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    if page != current:
        PAGE.write_text(page, encoding="utf-8")
        print("docs/iam-parity.md rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Run the pinned checkov (.venv-checkov) on the CloudFormation templates of a cloud assembly.

    python scripts/run_checkov.py CDK_OUT      # `make checkov CONFIG=...` synthesizes and runs this

Prints one line per failed check and exits 1 when there is any, else prints a summary and exits 0.
tests/stacks/test_stack_checkov.py imports :func:`run` to scan every shipped config.

checkov runs once for all templates of the assembly (its start-up is the slow part), with only
the CloudFormation framework, and never reaches the network: no platform download
(``--skip-download``, ``BC_SKIP_MAPPING``) and no check for a newer checkov
(``CKV_SKIP_PACKAGE_UPDATE_CHECK``). Only the ``*.template.json`` files are named, so the
asset directories (Lambda code, lifecycle scripts) are not parsed. Nothing is skipped on the
command line: skips live in the resources' metadata (``hyperpod_cdk.compliance.checkov_skips``). So that
no setting from outside creeps in, checkov's own environment variables (``CKV_SKIP_CHECK``...)
are dropped and it runs in the assembly directory with HOME there too, where it finds no
``.checkov.yaml``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CHECKOV = PROJECT_ROOT / ".venv-checkov" / "bin" / "checkov"

# Options that would leave checks or files out, or let failures pass (a config file can hold
# any of them); the command must have none.
FORBIDDEN_OPTIONS = frozenset(
    {"--skip-check", "--check", "-c", "--soft-fail", "-s", "--soft-fail-on", "--hard-fail-on",
     "--skip-path", "--skip-framework", "--config-file"}
)  # fmt: skip
# checkov's settings from the environment are its own variables: none is inherited
_FOREIGN_PREFIXES = ("CKV_", "BC_", "PRISMA_", "CHECKOV_")
OFFLINE_ENV = {
    "BC_SKIP_MAPPING": "TRUE",
    "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true",
    "LOG_LEVEL": "WARNING",
}


@dataclass(frozen=True)
class Finding:
    """One checkov result on one resource."""

    check_id: str
    check_name: str
    template: str  # file name, e.g. ml-research-nodes.template.json
    resource: str  # Type.LogicalId, e.g. AWS::Lambda::Function.Handler1234
    comment: str = ""  # a skip's reason
    path: str = field(default="", compare=False)  # the template's absolute path

    def __str__(self) -> str:
        stack = self.template.removesuffix(".template.json")
        return f"{self.check_id} {self.check_name}: {stack} {self.resource}"


@dataclass
class Report:
    """What checkov found in one cloud assembly."""

    command: list[str]
    templates: list[Path]
    # the templates checkov read: one of each set of byte-identical templates (a variant's
    # unchanged stacks); each of the others gets the findings of the one read
    scanned: list[Path] = field(default_factory=list)
    passed: int = 0
    resource_count: int = 0
    failed: list[Finding] = field(default_factory=list)
    skipped: list[Finding] = field(default_factory=list)
    parsing_errors: list[str] = field(default_factory=list)
    stderr: str = ""  # checkov's warnings, e.g. a download it tried

    def of(self, outdir: Path) -> Report:
        """What this run found in the templates of the assembly ``outdir`` (one of those it
        scanned). ``passed`` and ``resource_count`` stay the whole run's: checkov's report
        counts them for the run, not per file."""

        root = outdir.resolve()

        def inside(path: str | Path) -> bool:
            return Path(path).resolve().is_relative_to(root)

        return Report(
            command=self.command,
            templates=[t for t in self.templates if inside(t)],
            scanned=[t for t in self.scanned if inside(t)],
            passed=self.passed,
            resource_count=self.resource_count,
            failed=[f for f in self.failed if inside(f.path)],
            skipped=[f for f in self.skipped if inside(f.path)],
            parsing_errors=[e for e in self.parsing_errors if inside(e)],
            stderr=self.stderr,
        )


def templates(outdir: Path) -> list[Path]:
    """Every stack template of the assembly (nested assemblies of Stages too), not the assets."""
    return sorted(
        p
        for p in outdir.rglob("*.template.json")
        if not any(part.startswith("asset.") for part in p.relative_to(outdir).parts)
    )


def command(files: list[Path]) -> list[str]:
    """The checkov command line for ``files``."""
    # not --quiet: in JSON it drops the skipped checks, whose reasons the tests read
    args = [str(CHECKOV), "--framework", "cloudformation", "--output", "json", "--compact"]
    args.append("--skip-download")
    for path in files:
        args += ["--file", str(path)]
    return args


def environment(home: Path) -> dict[str, str]:
    """The process environment less checkov's own variables, plus the offline settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
    return {**env, **OFFLINE_ENV, "HOME": str(home)}


def _finding(result: dict[str, Any]) -> Finding:
    check = result.get("check_result", {})
    return Finding(
        check_id=result["check_id"],
        check_name=result.get("check_name", ""),
        template=Path(result.get("file_path", "")).name,
        resource=result.get("resource", ""),
        comment=check.get("suppress_comment", ""),
        path=result.get("file_abs_path", ""),
    )


def run(outdir: Path) -> Report:
    """checkov on every template of the cloud assembly ``outdir``.

    :raises FileNotFoundError: when .venv-checkov is missing.
    :raises RuntimeError: when checkov crashes or prints no JSON report.
    """
    return run_all([outdir], workdir=outdir)


def run_all(outdirs: list[Path], *, workdir: Path) -> Report:
    """One checkov process on every template of every cloud assembly of ``outdirs`` (its
    start-up, about 5 CPU-seconds, is paid once); :meth:`Report.of` picks one assembly's part.
    Byte-identical templates (a variant's stacks that its change left alone) are read once, and
    each copy gets the findings of the one read.
    checkov runs in ``workdir`` with HOME there: a directory without a ``.checkov.yaml``.

    :raises FileNotFoundError: when .venv-checkov is missing.
    :raises RuntimeError: when checkov crashes or prints no JSON report.
    """
    if not CHECKOV.exists():
        raise FileNotFoundError(f"{CHECKOV} not found: run `make bootstrap-checkov`")
    files = [path.resolve() for outdir in outdirs for path in templates(outdir)]
    # checkov reads each content once: what it finds in a template depends on the bytes alone
    same: dict[str, list[Path]] = {}
    for path in files:
        same.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), []).append(path)
    copies = {paths[0]: paths[1:] for paths in same.values()}
    scanned = list(copies)
    report = Report(command=command(scanned), templates=files, scanned=scanned)
    if not files:
        return report
    done = subprocess.run(
        report.command, cwd=workdir, env=environment(workdir), capture_output=True, text=True
    )
    report.stderr = done.stderr
    # exit 1: failed checks (read from the report); anything else but 0 is a crash
    if done.returncode not in (0, 1):
        raise RuntimeError(f"checkov exited {done.returncode}:\n{done.stderr[-4000:]}")
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(
            f"checkov printed no JSON report:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        ) from None
    for part in data if isinstance(data, list) else [data]:
        summary = part.get("summary", part)
        report.passed += summary.get("passed", 0)
        report.resource_count += summary.get("resource_count", 0)
        results = part.get("results", {})
        report.failed += _with_copies(results.get("failed_checks", []), copies)
        report.skipped += _with_copies(results.get("skipped_checks", []), copies)
        for error in results.get("parsing_errors", []):
            report.parsing_errors += [error, *map(str, copies.get(Path(error).resolve(), []))]
    return report


def _with_copies(results: list[dict[str, Any]], copies: dict[Path, list[Path]]) -> list[Finding]:
    """The findings of checkov's results, and the same in each copy of their template."""
    found = []
    for result in results:
        finding = _finding(result)
        found.append(finding)
        for copy in copies.get(Path(finding.path).resolve(), []):
            found.append(dataclasses.replace(finding, template=copy.name, path=str(copy)))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} CDK_OUT", file=sys.stderr)
        return 2
    report = run(Path(argv[1]))
    if not report.templates:
        print(f"checkov: no *.template.json in {argv[1]}", file=sys.stderr)
        return 2
    print(report.stderr, end="", file=sys.stderr)
    for error in report.parsing_errors:
        print(f"checkov: cannot parse {error}")
    for finding in sorted(report.failed, key=str):
        print(f"FAILED {finding}")
    print(
        f"checkov: {len(report.templates)} templates, {report.resource_count} resources, "
        f"{report.passed} passed, {len(report.failed)} failed, {len(report.skipped)} skipped"
    )
    return 1 if report.failed or report.parsing_errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

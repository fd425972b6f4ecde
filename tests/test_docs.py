"""README.md and docs/ stay true to the code (issue 17).

- README.md is what a newcomer reads in ten minutes (under 300 lines) and lists every shipped
  config; the rest is in docs/.
- The config reference in docs/configuration.md is exactly what scripts/config_reference.py
  generates from the pydantic models (fix: ``python scripts/config_reference.py --write``).
- Every make target, file path and config key the pages name exists; every internal link (file
  and anchor) resolves; every stack output is documented.
- The construct-library snippets of docs/library.md synthesize.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
SCRIPT = ROOT / "scripts" / "config_reference.py"
MAX_README_LINES = 300


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def reference_page() -> str:
    return (DOCS / "configuration.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def config_reference() -> ModuleType:
    return _load_script()


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _between(text: str, start: str, end: str) -> str:
    assert text.count(start) == 1 and text.count(end) == 1, f"the page needs one {start} ... {end}"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_config_reference_is_current(reference_page: str, config_reference: ModuleType) -> None:
    block = _between(reference_page, config_reference.START, config_reference.END)
    assert block == f"\n{config_reference.render()}\n", (
        "the config reference in docs/configuration.md is out of date; run: "
        "python scripts/config_reference.py --write"
    )


def test_config_reference_has_a_table_per_section(config_reference: ModuleType) -> None:
    text = config_reference.render()
    for section in (
        "iam",
        "network",
        "storage.fsx",
        "storage.fsx.data_repository_associations[]",
        "cluster",
        "cluster.slurm",
        "cluster.instance_groups[]",
        "cluster.instance_groups[].scheduled_update",
        "cluster.instance_groups[].auto_patch",
        "cluster.instance_groups[].taints[]",
        "eks",
        "pipeline",
        "pipeline.stages[]",
    ):
        assert f"### `{section}`\n" in text, section
    assert "### Top level\n" in text
    for marker in ("**slurm only.**", "**eks only.**", "**Continuous only.**"):
        assert marker in text


def test_every_model_key_is_in_the_reference(config_reference: ModuleType) -> None:
    text = config_reference.render()
    for section in config_reference.walk(config_reference.EnvironmentConfig):
        for key in section.model.model_fields:
            assert f"| `{key}` |" in text, f"{section.path or 'top level'}.{key}"


def test_config_reference_script_does_not_start_the_cdk() -> None:
    """Plain python3 with pydantic and PyYAML is enough: no aws_cdk, no jsii runtime."""
    code = (
        "import runpy, sys\n"
        "ns = runpy.run_path(sys.argv[1], run_name='config_reference')\n"
        "assert ns['render']()\n"
        "loaded = [m for m in ('aws_cdk', 'jsii', 'constructs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(SCRIPT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_config_reference_check_passes() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_readme_names_the_setup_commands(readme: str) -> None:
    assert "make synth" in readme
    assert "make test" in readme


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_make_targets_named_exist(page: Path) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.M))
    # `make x` in text, or a `make x` line of a code block
    named = set(re.findall(r"(?:`|^[ \t]*)make ([a-z][a-z-]*)", _text(page), flags=re.M))
    assert named <= targets, (
        f"{page.name} names make targets the Makefile lacks: {sorted(named - targets)}"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_paths_named_exist(page: Path) -> None:
    prefixes = r"(?:config|scripts|stacks|constructs|lifecycle_assets|tests|docs|examples|\.ci)/"
    paths = set(re.findall(rf"(?<![\w/.-])({prefixes}[A-Za-z0-9_./-]*[A-Za-z0-9_])", _text(page)))
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fence = False
    for line in _text(page).splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and (m := re.match(r"#{1,6} (.+)", line)):
            slug = _slug(m.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    anchors |= set(re.findall(r'<a id="([^"]+)"', _text(page)))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_internal_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", _text(page), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        missing_anchor = bool(anchor) and linked.suffix == ".md" and anchor not in _anchors(linked)
        if not linked.exists() or missing_anchor:
            broken.append(target)
    assert not broken, f"{page.name} has broken links: {broken}"


def test_readme_is_short(readme: str) -> None:
    assert len(readme.splitlines()) < MAX_README_LINES


def test_readme_lists_every_shipped_config(readme: str) -> None:
    shipped = [
        ROOT / "config" / "default.yaml",
        *sorted((ROOT / "config" / "examples").glob("*.yaml")),
    ]
    missing = [
        p.relative_to(ROOT).as_posix()
        for p in shipped
        if f"`{p.relative_to(ROOT).as_posix()}`" not in readme
    ]
    assert not missing, f"README.md's table of shipped configs misses {missing}"


# A config key as the pages name it: `storage.fsx.removal_policy`, `cluster.instance_groups[].name`
_TOP_LEVEL = ("name", "account", "region", "orchestrator", "tags", "compliance_packs", "iam",
              "network", "storage", "cluster", "eks", "pipeline")  # fmt: skip
_KEY = re.compile(rf"`((?:{'|'.join(_TOP_LEVEL)})(?:\.[a-z_]+(?:\[\d*\])?)+)`")


def _resolves(model: type, parts: list[str]) -> bool:
    from pydantic import BaseModel

    annotation: object = model
    for part in parts:
        annotation = _model_of(annotation)
        if annotation is None:
            return True  # a mapping or a free-form value: its keys are not the models'
        assert isinstance(annotation, type) and issubclass(annotation, BaseModel)
        field = annotation.model_fields.get(part)
        if field is None:
            return False
        annotation = field.annotation
    return True


def _model_of(annotation: object) -> type | None:
    """The pydantic model inside ``annotation`` (through Optional, list, Annotated), or None."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _model_of(arg)) is not None:
            return found
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_config_keys_named_exist(page: Path) -> None:
    sys.path.insert(0, str(ROOT / "constructs"))
    try:
        from hyperpod_cdk.config import EnvironmentConfig
        from hyperpod_cdk.config.pipeline import PipelineFileConfig
    finally:
        sys.path.pop(0)
    unknown = []
    for key in sorted(set(_KEY.findall(_text(page)))):
        parts = [re.sub(r"\[\d*\]$", "", p) for p in key.split(".")]
        model = PipelineFileConfig if parts[0] == "pipeline" else EnvironmentConfig
        if not _resolves(model, parts):
            unknown.append(key)
    assert not unknown, f"{page.name} names config keys the models lack: {unknown}"


def test_stack_outputs_are_documented() -> None:
    page = _text(DOCS / "architecture.md") + _text(DOCS / "pipelines.md")
    source = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "stacks").glob("*.py"))
    )
    outputs = set(re.findall(r"\boutput\(\s*self,\s*\"([A-Za-z0-9]+)\"", source))
    assert outputs, "no outputs found in stacks/*.py"
    undocumented = sorted(o for o in outputs if f"`{o}`" not in page)
    assert not undocumented, (
        f"stack outputs missing from docs/architecture.md (pipelines.md): {undocumented}"
    )


@pytest.fixture(scope="module")
def library_page() -> str:
    return (DOCS / "library.md").read_text(encoding="utf-8")


def _snippets(page: str) -> list[str]:
    section = _between(page, "<!-- library-snippet:start -->", "<!-- library-snippet:end -->")
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "no python blocks between the library-snippet markers"
    return blocks


def test_first_snippet_is_the_one_the_wheel_test_runs(library_page: str) -> None:
    """tests/library/test_wheel.py runs this file from the installed wheel in an empty folder."""
    wheel_snippet = ROOT / "tests" / "library" / "readme_library_snippet.py"
    assert _snippets(library_page)[0] == wheel_snippet.read_text(encoding="utf-8")


def test_snippets_import_exported_names(library_page: str) -> None:
    sys.path.insert(0, str(ROOT / "constructs"))
    try:
        import hyperpod_cdk
    finally:
        sys.path.pop(0)
    for block in _snippets(library_page):
        compile(block, "docs/library.md", "exec")
        for grouped, single in re.findall(
            r"from hyperpod_cdk import (?:\(([^)]*)\)|([^\n]+))", block
        ):
            for name in (n.strip() for n in (grouped or single).split(",")):
                if name:
                    assert name in hyperpod_cdk.__all__, name


def test_library_snippets_synthesize(library_page: str, tmp_path: Path) -> None:
    """Both snippets, run in one program as the CDK CLI runs an app: the project's feature flags
    in CDK_CONTEXT_JSON, the output in CDK_OUTDIR (a process of its own, so that the jsii runtime
    sees that environment)."""
    pytest.importorskip("aws_cdk")
    program = tmp_path / "snippets.py"
    program.write_text("\n".join(_snippets(library_page)), encoding="utf-8")
    outdir = tmp_path / "cdk.out"
    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}
    result = subprocess.run(
        [sys.executable, str(program)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    types_by_stack = {
        p.name.removesuffix(".template.json"): {
            r["Type"] for r in json.loads(p.read_text())["Resources"].values()
        }
        for p in outdir.glob("*.template.json")
    }
    assert "AWS::SageMaker::Cluster" in types_by_stack["research-hyperpod"]
    assert "AWS::FSx::FileSystem" in types_by_stack["research-fsx"]


# -- docs/evidence.md: the AWS facts no machine-readable source holds (issue 32) ---------------

EVIDENCE = DOCS / "evidence.md"
EVIDENCE_HEADER = "| fact | used in | source (date) | status | settled by |"
EVIDENCE_STATUSES = ("documented", "inferred", "unconfirmed")
#: where the facts tables live: every module of the library and the app's stacks
FACT_MODULES = sorted([*(ROOT / "constructs" / "hyperpod_cdk").rglob("*.py"),
                       *(ROOT / "stacks").glob("*.py")])  # fmt: skip
_MARKER = re.compile(r"\b(ASSUMED|INFERRED|UNCONFIRMED)\b")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=(?!=)")
# metadata beside a table (its date, its source), not the table
_TABLE_METADATA = ("_AS_OF", "_SOURCE", "_DATE")


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` inside a cell is not a separator)."""
    inner = line.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def evidence_rows(text: str) -> list[dict[str, str]]:
    """The rows of every ledger table in ``text``; a table with another header, or a row
    without five cells, raises AssertionError naming it."""
    rows: list[dict[str, str]] = []
    header: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = line.strip()
            assert header == EVIDENCE_HEADER, f"evidence.md:{number}: table header {header!r}"
            continue
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
            continue
        cells = _cells(line)
        assert len(cells) == 5, f"evidence.md:{number}: {len(cells)} cells, not 5: {line}"
        keys = ("fact", "used in", "source (date)", "status", "settled by")
        rows.append({"line": str(number), **dict(zip(keys, cells, strict=True))})
    return rows


def marked_facts(path: Path, text: str) -> list[tuple[str, str | None, int]]:
    """The facts ``text`` (the module at ``path``) marks ASSUMED, INFERRED or UNCONFIRMED: (the
    module's path, the table the marker's comment stands above or None for the module's
    docstring / a comment inside code, line)."""
    lines = text.splitlines()
    found: list[tuple[str, str | None, int]] = []
    module = path.relative_to(ROOT).as_posix()
    for index, line in enumerate(lines):
        if not _MARKER.search(line):
            continue
        table = None
        if line.startswith("#"):
            for later in lines[index + 1 :]:
                match = _ASSIGNMENT.match(later)
                if match and not match.group(1).endswith(_TABLE_METADATA):
                    table = match.group(1)
                    break
        found.append((module, table, index + 1))
    return found


def unrecorded(marks: list[tuple[str, str | None, int]], rows: list[dict[str, str]]) -> list[str]:
    """The marked facts without a row that names their module (and table) and says inferred or
    unconfirmed, as ``path:line (table)`` with what is wrong."""
    problems = []
    for module, table, line in marks:
        package = module.removeprefix("constructs/hyperpod_cdk/")
        matching = [
            row for row in rows
            if (module in row["used in"] or package in row["used in"])
            and (table is None or table in row["used in"])
        ]  # fmt: skip
        where = f"{module}:{line}" + (f" ({table})" if table else "")
        if not matching:
            problems.append(f"{where}: no row in docs/evidence.md names it")
        elif all(row["status"] == "documented" for row in matching):
            problems.append(f"{where}: marked in the code, but its rows say documented")
    return problems


@pytest.fixture(scope="module")
def evidence() -> list[dict[str, str]]:
    return evidence_rows(EVIDENCE.read_text(encoding="utf-8"))


def test_evidence_rows_are_complete(evidence: list[dict[str, str]]) -> None:
    """Each row: a fact, where it is used (paths that exist), a source with its date, one of
    the three statuses, and what settles it (a check, or ``-``)."""
    assert len(evidence) >= 20
    problems = []
    for row in evidence:
        at = f"evidence.md:{row['line']}"
        if not row["fact"] or not row["used in"] or not row["settled by"]:
            problems.append(f"{at}: an empty cell")
        if row["status"] not in EVIDENCE_STATUSES:
            problems.append(f"{at}: status {row['status']!r} is not one of {EVIDENCE_STATUSES}")
        if not re.search(r"\b20\d\d-\d\d(-\d\d)?\b", row["source (date)"]):
            problems.append(f"{at}: the source has no date (YYYY-MM-DD)")
        for path in re.findall(r"`([\w./{},*-]+/[\w.-]+\.(?:py|json|sh|yaml|md))`", row["used in"]):
            if (
                not (ROOT / path).exists()
                and not (ROOT / "constructs/hyperpod_cdk" / path).exists()
            ):
                problems.append(f"{at}: used in {path}, which does not exist")
    facts = [row["fact"] for row in evidence]
    problems += [
        f"the fact {f!r} has two rows" for f in sorted({f for f in facts if facts.count(f) > 1})
    ]
    assert not problems, "\n".join(problems)


def test_every_fact_the_code_marks_has_its_row(evidence: list[dict[str, str]]) -> None:
    """A fact a module marks ASSUMED / INFERRED / UNCONFIRMED (facts/__init__.py's exporter
    registries, the alert rules' Slurm levels, the log bridge's Slurm shapes, ...) has a row
    naming its module and table, with status inferred or unconfirmed; extra rows are fine."""
    marks = [m for path in FACT_MODULES for m in marked_facts(path, path.read_text("utf-8"))]
    tables = {table for _, table, _ in marks}
    # the scan sees the markers that exist today (a scan that finds nothing proves nothing)
    assert {"HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS", "SLURM_METRIC_LEVELS"} <= tables, tables
    problems = unrecorded(marks, evidence)
    assert not problems, "\n".join(problems)


def test_a_newly_marked_table_without_a_row_fails() -> None:
    """The check itself: a table marked in a module the ledger does not name is reported, and
    a row that names it (inferred) settles the report; a 'documented' row does not."""
    module = ROOT / "constructs" / "hyperpod_cdk" / "facts" / "__init__.py"
    text = "# Where X lives. INFERRED from a sample.\nNEW_TABLE_AS_OF = '2026'\nNEW_TABLE = {}\n"
    marks = marked_facts(module, text)
    assert marks == [("constructs/hyperpod_cdk/facts/__init__.py", "NEW_TABLE", 1)]
    assert unrecorded(marks, []) == [
        "constructs/hyperpod_cdk/facts/__init__.py:1 (NEW_TABLE): no row in docs/evidence.md names it"
    ]
    row = evidence_rows(
        f"{EVIDENCE_HEADER}\n|---|---|---|---|---|\n"
        "| X | `facts/__init__.py` (`NEW_TABLE`) | a sample (2026-11-27) | inferred | - |\n"
    )
    assert unrecorded(marks, row) == []
    row[0]["status"] = "documented"
    assert unrecorded(marks, row)[0].endswith("marked in the code, but its rows say documented")
    with pytest.raises(AssertionError, match="table header"):
        evidence_rows("| fact | where |\n|---|---|\n| a | b |\n")


def test_readme_points_to_the_evidence(readme: str) -> None:
    assert "(docs/evidence.md)" in readme

"""The import layers of the library (``constructs/hyperpod_cdk``) and the tools package
(``tools/hyperpod_ops``), read from the source with ``ast`` (nothing is imported):

(a) no import cycle between modules of ``hyperpod_cdk``;
(b) ``hyperpod_cdk.config``, ``hyperpod_cdk.facts`` and ``hyperpod_ops`` never import a construct
    folder; ``facts`` imports nothing of ``hyperpod_cdk`` but ``facts``, and ``config`` only
    ``config`` and ``facts``;
(c) no CDK (``aws_cdk``, ``constructs``, ``cdk_nag``, ``jsii``) import anywhere in ``hyperpod_ops``;
(d) no ``noqa`` comment naming E402 in any tracked Python file (an import that has to wait for
    other code is the sign of a cycle or of a ``sys.path`` trick).

How the graph is read:

- A node is a module; a package's ``__init__.py`` is the module named like the package
  (``hyperpod_cdk.config``).
- An edge is an import at module level or inside a function (a lazy import still ties the two
  modules together). ``from P import name`` is an edge to ``P.name`` when that is a module, else
  to ``P``.
- Importing ``P.sub`` is an edge to ``P.sub`` only. Python runs ``P/__init__.py`` first, but that
  is not counted: every package whose ``__init__`` re-exports its submodules would otherwise be a
  cycle. A submodule that imports its own package's ``__init__`` is an edge like any other.
- Imports under ``if TYPE_CHECKING:`` are left out: they never run, and they are how a section's
  rules name the root model they are given (``cfg: EnvironmentConfig``).

Each assertion is also run on a small synthetic tree that breaks it, so that the checker itself
is known to see what it looks for.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "constructs" / "hyperpod_cdk"
TOOLS = ROOT / "tools" / "hyperpod_ops"

# the folders of hyperpod_cdk that hold constructs (CDK code and what it ships)
CONSTRUCT_FOLDERS = (
    "network",
    "storage",
    "iam",
    "cluster",
    "eks",
    "alerts",
    "observability",
    "lifecycle.scripts",
    "compliance",
)
CDK_PACKAGES = ("aws_cdk", "constructs", "cdk_nag", "jsii")

# Arrows that (a) or (b) refuses and main still has, each with why it is left and who moves it.
# The test fails when one is gone (remove it here) as well as when a new one appears.
KNOWN: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line`` (inside a function when ``lazy``)."""

    source: str
    target: str
    line: int
    lazy: bool


def modules(package_dir: Path, name: str) -> dict[str, Path]:
    """Every module of the package at ``package_dir`` (named ``name``), by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([name, *parts])] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    tree: ast.AST, lazy: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """The import statements of ``tree``, without TYPE_CHECKING blocks; ``lazy`` inside a
    function."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, lazy
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), lazy)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _imports(node, True)
        else:
            yield from _imports(node, lazy)


def edges(name: str, path: Path, known: Iterable[str]) -> list[Edge]:
    """What module ``name`` (the file at ``path``) imports: every target, as a dotted name (a
    known module where one matches, else the name as written)."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Edge] = []
    for node, lazy in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in dict.fromkeys(targets):
            found.append(Edge(name, _owner(target, known), node.lineno, lazy))
    return found


def _owner(target: str, known: set[str]) -> str:
    """The longest known module ``target`` names (itself when none is known)."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return target


def graph(trees: dict[str, Path]) -> list[Edge]:
    """Every edge of the packages in ``trees`` (package name -> folder)."""
    mods: dict[str, Path] = {}
    for name, folder in trees.items():
        mods.update(modules(folder, name))
    return [edge for name, path in mods.items() for edge in edges(name, path, mods)]


def cycles(all_edges: Iterable[Edge], prefix: str) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing
    itself) among the modules named ``prefix`` or under it (Tarjan)."""

    def inside(module: str) -> bool:
        return module == prefix or module.startswith(prefix + ".")

    succ: dict[str, set[str]] = {}
    for e in all_edges:
        if inside(e.source) and inside(e.target):
            succ.setdefault(e.source, set()).add(e.target)
            succ.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in succ[v]:
                found.append(sorted(component))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return found


def _under(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def layer_violations(all_edges: Iterable[Edge]) -> list[Edge]:
    """(b): the edges from config, facts or hyperpod_ops into a construct folder, from facts to
    anything of hyperpod_cdk but facts, and from config to anything of hyperpod_cdk but config
    and facts."""
    folders = [f"hyperpod_cdk.{folder}" for folder in CONSTRUCT_FOLDERS]
    # what each lower layer of hyperpod_cdk may import of hyperpod_cdk
    allowed = {
        "hyperpod_cdk.facts": ["hyperpod_cdk.facts"],
        "hyperpod_cdk.config": ["hyperpod_cdk.config", "hyperpod_cdk.facts"],
    }
    bad: list[Edge] = []
    for e in all_edges:
        if _under(e.source, ["hyperpod_ops"]) and _under(e.target, folders):
            bad.append(e)
        bad += [
            e
            for layer, ok in allowed.items()
            if _under(e.source, [layer])
            and _under(e.target, ["hyperpod_cdk"])
            and not _under(e.target, ok)
        ]
    return bad


def cdk_imports(all_edges: Iterable[Edge], package: str) -> list[Edge]:
    """(c): the edges from ``package`` to a CDK package."""
    return [e for e in all_edges if _under(e.source, [package]) and _under(e.target, CDK_PACKAGES)]


E402 = re.compile(r"#\s*noqa:[^\n]*\bE402\b")


def noqa_e402(files: Iterable[Path]) -> list[str]:
    """(d): ``file:line`` of every ``noqa`` comment naming E402."""
    return [
        f"{path}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if E402.search(line)
    ]


def tracked_python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def _shown(e: Edge) -> str:
    return f"{e.source} -> {e.target} (line {e.line}{', in a function' if e.lazy else ''})"


# -- the repository ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def repository_edges() -> list[Edge]:
    return graph({"hyperpod_cdk": LIBRARY, "hyperpod_ops": TOOLS})


def _known_pairs(found: Iterable[Edge]) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in found} & set(KNOWN)


def test_no_import_cycle_in_hyperpod_cdk(repository_edges: list[Edge]) -> None:
    live = [e for e in repository_edges if (e.source, e.target) not in KNOWN]
    assert cycles(live, "hyperpod_cdk") == []


def test_config_facts_and_the_tools_never_import_a_construct_folder(
    repository_edges: list[Edge],
) -> None:
    found = layer_violations(repository_edges)
    assert [_shown(e) for e in found if (e.source, e.target) not in KNOWN] == []


def test_every_known_exception_still_exists(repository_edges: list[Edge]) -> None:
    # an arrow fixed on main leaves KNOWN: remove its entry so that it cannot come back
    pairs = {(e.source, e.target) for e in repository_edges}
    assert sorted(set(KNOWN) - pairs) == []


def test_the_tools_import_no_cdk(repository_edges: list[Edge]) -> None:
    assert [_shown(e) for e in cdk_imports(repository_edges, "hyperpod_ops")] == []


def test_no_noqa_e402_in_any_tracked_python_file() -> None:
    assert noqa_e402(tracked_python_files()) == []


# -- the checker on trees that break each rule ---------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_checker_sees_a_cycle_also_through_a_lazy_import(tmp_path: Path) -> None:
    lib = _tree(
        tmp_path / "hyperpod_cdk",
        {
            "__init__.py": "",
            "config/__init__.py": "from hyperpod_cdk.config.models import Root\n",
            "config/models.py": "from hyperpod_cdk.config.base import Strict\n"
            "from hyperpod_cdk.config import storage\n",
            "config/base.py": "Strict = object\n",
            "config/storage.py": "def f():\n    from .models import Root\n",
            "config/iam.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from hyperpod_cdk.config.models import Root\n",
        },
    )
    found = graph({"hyperpod_cdk": lib})
    assert cycles(found, "hyperpod_cdk") == [
        ["hyperpod_cdk.config.models", "hyperpod_cdk.config.storage"]
    ]
    # the edge back is lazy and relative, and read as such; the TYPE_CHECKING one is not an edge
    back = [e for e in found if e.source == "hyperpod_cdk.config.storage"]
    assert back == [Edge("hyperpod_cdk.config.storage", "hyperpod_cdk.config.models", 2, True)]
    assert [e.target for e in found if e.source == "hyperpod_cdk.config.iam"] == ["typing"]


def test_a_package_init_and_its_own_submodules_are_no_cycle_unless_one_imports_it_back(
    tmp_path: Path,
) -> None:
    files = {
        "__init__.py": "",
        "config/__init__.py": "from hyperpod_cdk.config.models import Root\n",
        "config/models.py": "Root = object\n",
    }
    lib = _tree(tmp_path / "a" / "hyperpod_cdk", files)
    assert cycles(graph({"hyperpod_cdk": lib}), "hyperpod_cdk") == []
    files["config/models.py"] = "from hyperpod_cdk.config import Other\nRoot = object\n"
    lib = _tree(tmp_path / "b" / "hyperpod_cdk", files)
    assert cycles(graph({"hyperpod_cdk": lib}), "hyperpod_cdk") == [
        ["hyperpod_cdk.config", "hyperpod_cdk.config.models"]
    ]


def test_the_checker_sees_each_arrow_into_a_construct_folder(tmp_path: Path) -> None:
    lib = _tree(
        tmp_path / "hyperpod_cdk",
        {
            "__init__.py": "",
            "eks/__init__.py": "",
            "eks/chart.py": "",
            "lifecycle/__init__.py": "",
            "lifecycle/scripts.py": "",
            "lifecycle/settings.py": "",
            "facts/__init__.py": "from hyperpod_cdk.facts import versions\n",
            "facts/versions.py": "from hyperpod_cdk.config import base\n",
            "config/__init__.py": "",
            "config/base.py": "from hyperpod_cdk import facts\n",
            "config/eks.py": "def f():\n    from hyperpod_cdk.eks import chart\n",
            "config/cluster.py": "from hyperpod_cdk.lifecycle.settings import x\n",
        },
    )
    ops = _tree(
        tmp_path / "hyperpod_ops",
        {
            "__init__.py": "",
            "status.py": "from hyperpod_cdk.lifecycle import scripts\nfrom hyperpod_cdk import facts\n",
        },
    )
    found = layer_violations(graph({"hyperpod_cdk": lib, "hyperpod_ops": ops}))
    assert sorted((e.source, e.target) for e in found) == [
        # config may import config and facts only: lifecycle.settings is no construct, still out
        ("hyperpod_cdk.config.cluster", "hyperpod_cdk.lifecycle.settings"),
        ("hyperpod_cdk.config.eks", "hyperpod_cdk.eks.chart"),
        # facts imports nothing of hyperpod_cdk but facts
        ("hyperpod_cdk.facts.versions", "hyperpod_cdk.config.base"),
        ("hyperpod_ops.status", "hyperpod_cdk.lifecycle.scripts"),
    ]


def test_the_checker_sees_a_cdk_import_in_the_tools(tmp_path: Path) -> None:
    ops = _tree(
        tmp_path / "hyperpod_ops",
        {
            "__init__.py": "",
            "migrate.py": "import aws_cdk as cdk\n",
            "verify/__init__.py": "def f():\n    from constructs import Construct\n",
            "status.py": "import cdk_nag\nimport jsii\nimport json\nimport constructs_extra\n",
        },
    )
    found = cdk_imports(graph({"hyperpod_ops": ops}), "hyperpod_ops")
    assert sorted((e.source, e.target) for e in found) == [
        ("hyperpod_ops.migrate", "aws_cdk"),
        ("hyperpod_ops.status", "cdk_nag"),
        ("hyperpod_ops.status", "jsii"),
        ("hyperpod_ops.verify", "constructs"),
    ]


NOQA = "# " + "noqa"  # (spelled apart, or this file would hold what it looks for)


def test_the_checker_sees_a_noqa_e402(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "a.py": f"import sys\nsys.path.insert(0, 'x')\nimport b  {NOQA}: E402\n",
            "c.py": f"import d  {NOQA}: F401, E402\nimport e  {NOQA}: F401\n",
            "f.py": "# E402 is ruff's module-import-not-at-top-of-file\n",
        },
    )
    found = noqa_e402(sorted(tree.glob("*.py")))
    assert found == [f"{tree / 'a.py'}:3", f"{tree / 'c.py'}:1"]

"""Bad input never crashes (issue 16): a seeded mutation fuzzer of the shipped configs.

Each mutant is a shipped config with one or more mutations: a key deleted, a value of the wrong
type, an odd string, a list element duplicated or the list grown, or the whole file broken as
text (cut short, bytes inserted, tabs, another encoding). Fed to ``hyperpod_cdk.config`` (what
``make validate`` and ``app.py`` call) and, for a sample, to ``app.py`` itself, each must end in
exactly one of two ways: valid, or a ``ConfigError`` whose every line is ``config error: ...`` or
``config warning: ...``; never another exception. A sample of the valid mutants is synthesized
with every compliance pack: what validates also synthesizes.

The seeds are fixed (a failure names its seed and mutations, and reproduces); set
``HYPERPOD_FUZZ_SEEDS`` to run more.
"""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from stack_testkit import PROJECT_ROOT, SHIPPED_CONFIGS, config_data

from hyperpod_cdk.config import ConfigError, EnvironmentConfig
from hyperpod_cdk.config.loader import load_file

SEEDS = int(os.environ.get("HYPERPOD_FUZZ_SEEDS", "240"))
PREFIXES = ("config error: ", "config warning: ")

# values of another type, or odd values of the same type
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**20,
    float("inf"),
    "",
    " ",
    "\t",
    "null",
    "yes",
    "0x1F",
    "1e3",
    "ü-ñ-ß",
    "🚀",
    "a" * 5000,
    "line\nbreak",
    "${AWS::AccountId}",
    "../../etc/passwd",
    "s3://",
    "arn:aws:iam::000000000000:role/x",
    [],
    {},
    [None],
    {"": None},
    [[[[1]]]],
]


@dataclass
class Mutant:
    """A mutated config: its text (or bytes) and what was done to it."""

    base: str
    done: list[str]
    data: Any = None  # the mutated mapping, when the mutation was structural
    raw: bytes | None = None  # the file's bytes, when the text was broken


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (dict keys and list indices)."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    node = data
    for step in path[:-1]:
        node = node[step]
    return node


def _show(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _delete(rng: random.Random, data: Any) -> str:
    path = rng.choice(_paths(data))
    parent = _parent(data, path)
    del parent[path[-1]]
    return f"deleted {_show(path)}"


def _replace(rng: random.Random, data: Any) -> str:
    path = rng.choice(_paths(data))
    value = copy.deepcopy(rng.choice(ODD_VALUES))
    _parent(data, path)[path[-1]] = value
    return f"{_show(path)} = {value!r:.40}"


def _grow(rng: random.Random, data: Any) -> str:
    lists = [p for p in _paths(data) if isinstance(_parent(data, p)[p[-1]], list)]
    if not lists:
        return _replace(rng, data)
    path = rng.choice(lists)
    items = _parent(data, path)[path[-1]]
    if not items:
        items.append(copy.deepcopy(rng.choice(ODD_VALUES)))
        return f"{_show(path)} given an odd item"
    if rng.random() < 0.5:
        items.append(copy.deepcopy(rng.choice(items)))
        return f"{_show(path)} has an item twice"
    items.extend(copy.deepcopy(items[-1]) for _ in range(rng.choice([10, 60])))
    return f"{_show(path)} grown to {len(items)} items"


def _add_key(rng: random.Random, data: Any) -> str:
    mappings = [()] + [p for p in _paths(data) if isinstance(_parent(data, p)[p[-1]], dict)]
    path = rng.choice(mappings)
    node = data if not path else _parent(data, path)[path[-1]]
    key = rng.choice(["nmae", "extra", "Name", "1", "", "a.b", "x" * 300])
    node[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return f"added {_show((*path, key))}"


STRUCTURAL: list[Callable[[random.Random, Any], str]] = [_delete, _replace, _grow, _add_key]


def _broken_text(rng: random.Random, text: str) -> tuple[bytes, str]:
    """The file broken as text: what editors, shells and copy-paste produce."""
    raw = text.encode()
    kind = rng.randrange(9)
    if kind == 0:
        cut = rng.randrange(len(raw))
        return raw[:cut], f"cut at byte {cut}"
    if kind == 1:
        at = rng.randrange(len(raw))
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        return raw[:at] + junk + raw[at:], f"bytes {junk!r} at {at}"
    if kind == 2:
        return text.replace("  ", "\t", 1).encode(), "a tab as indentation"
    if kind == 3:
        return text.encode("utf-16"), "UTF-16 with a BOM"
    if kind == 4:
        return ("\ufeff" + text).encode(), "UTF-8 with a BOM"
    if kind == 5:
        return text.replace(": ", "=", 1).encode(), "'=' for ': '"
    if kind == 6:
        lines = text.splitlines(keepends=True)
        at = rng.randrange(len(lines))
        return "".join(lines[:at] + [" " + lines[at]] + lines[at + 1 :]).encode(), (
            f"line {at + 1} indented by one"
        )
    if kind == 7:
        return (text + "\n---\nname: second\n").encode(), "a second YAML document"
    return text.encode("latin-1", errors="replace").replace(b"a", b"\xe9", 1), "a Latin-1 byte"


def mutant(seed: int) -> Mutant:
    """The mutant of ``seed``: its base config and what was done, reproducibly."""
    rng = random.Random(seed)
    path = rng.choice(SHIPPED_CONFIGS)
    base = path.stem
    if rng.random() < 0.2:
        raw, what = _broken_text(rng, path.read_text(encoding="utf-8"))
        return Mutant(base, [what], raw=raw)
    data = config_data(path)
    done = [rng.choice(STRUCTURAL)(rng, data) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    return Mutant(base, done, data=data)


def write(m: Mutant, folder: Path) -> Path:
    path = folder / f"{m.base}.yaml"
    if m.raw is not None:
        path.write_bytes(m.raw)
    else:
        path.write_text(yaml.safe_dump(m.data, sort_keys=False, allow_unicode=True))
    return path


def outcome(path: Path) -> EnvironmentConfig | None:
    """The valid config, or None after asserting the error lines keep the contract."""
    try:
        config, _stages, warnings = load_file(path, PROJECT_ROOT)
    except ConfigError as exc:
        lines = [str(i) for i in [*exc.issues, *exc.warnings]]
        assert exc.issues, "a ConfigError without an error"
        for line in lines:
            assert line.startswith(PREFIXES) and "\n" not in line, line
        return None
    for warning in warnings:
        assert str(warning).startswith("config warning: ") and "\n" not in str(warning)
    return config if isinstance(config, EnvironmentConfig) else None


@pytest.mark.parametrize("block", range(8))
def test_mutants_end_valid_or_in_config_errors(block: int, tmp_path: Path) -> None:
    """Every seed of this block (the seeds are split in 8 blocks for the workers); every failure
    is reported, with its seed and mutations."""
    failures = []
    for seed in range(block, SEEDS, 8):
        m = mutant(seed)
        folder = tmp_path / str(seed)
        folder.mkdir()
        try:
            outcome(write(m, folder))
        except AssertionError as exc:
            failures.append(f"seed {seed} ({m.base}: {'; '.join(m.done)}): {exc}")
        except Exception as exc:
            failures.append(
                f"seed {seed} ({m.base}: {'; '.join(m.done)}) raised {type(exc).__name__}: {exc}"
            )
    assert not failures, "\n".join(failures)


def _valid_mutants(count: int, tmp_path: Path) -> list[tuple[int, Mutant, EnvironmentConfig]]:
    found = []
    for seed in range(SEEDS):
        m = mutant(seed)
        if m.raw is not None:
            continue
        folder = tmp_path / f"valid-{seed}"
        folder.mkdir()
        config = outcome(write(m, folder))
        if config is not None and m.done and not m.done[0].startswith("added"):
            found.append((seed, m, config))
        if len(found) == count:
            break
    return found


def test_some_mutants_stay_valid(tmp_path: Path) -> None:
    """The fuzzer also reaches valid configs (else the synth sample below tests nothing)."""
    assert len(_valid_mutants(3, tmp_path)) == 3


def test_valid_mutants_synthesize(tmp_path: Path) -> None:
    """A sample of the valid mutants synthesizes, clean under every compliance pack."""
    from hyperpod_cdk.compliance.nag import PACKS
    from stacks.app_builder import build_app, new_app

    for seed, m, config in _valid_mutants(2, tmp_path):
        config = config.model_copy(update={"compliance_packs": list(PACKS)})
        app = new_app(outdir=str(tmp_path / f"out-{seed}"))
        app, _ = build_app(config, app=app, project_root=PROJECT_ROOT)
        try:
            app.synth()
        except Exception as exc:
            raise AssertionError(
                f"seed {seed} ({m.base}: {'; '.join(m.done)}) validated but did not synthesize: "
                f"{str(exc).splitlines()[0]}"
            ) from None


APP_SEEDS = [3, 17, 19, 44, 59]  # invalid mutants: two broken files (19, 59), three models


@pytest.mark.parametrize("seed", APP_SEEDS)
def test_app_py_keeps_the_contract(seed: int, tmp_path: Path) -> None:
    """``python app.py MUTANT`` exits 0, or 2 with only config error/warning lines."""
    m = mutant(seed)
    path = write(m, tmp_path)
    if outcome(path) is not None:
        pytest.skip(f"seed {seed} gives a valid config (synthesized elsewhere)")
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "app.py"), str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CDK_OUTDIR": str(tmp_path / "out")},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith(PREFIXES) for line in lines), done.stderr
    assert "Traceback" not in done.stderr

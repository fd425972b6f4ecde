"""Bad files never crash (issue 16): encodings, binary bytes, non-scalar keys, deep nesting,
huge files, YAML syntax errors. Each is one ``config error:`` line naming the file, exit 2,
through the real ``python -m hyperpod_cdk.config`` (``make validate``) and ``app.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hyperpod_cdk.config import ConfigError
from hyperpod_cdk.config.loader import MAX_DEPTH, MAX_FILE_BYTES, read_yaml

ROOT = Path(__file__).resolve().parents[2]
GOOD = (ROOT / "config" / "default.yaml").read_text(encoding="utf-8")


def one_line(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        read_yaml(path)
    (issue,) = caught.value.issues
    line = str(issue)
    assert "\n" not in line and line.startswith(f"config error: {path}: "), line
    return line


@pytest.mark.parametrize(
    "codec", ["utf-8-sig", "utf-16", "utf-16-le-bom", "utf-16-be-bom", "utf-32", "utf-32-be-bom"]
)
def test_unicode_with_a_byte_order_mark_is_read(codec: str, tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    if codec.endswith("-bom"):
        base = codec.removesuffix("-bom")
        mark = "\ufeff".encode(base)
        path.write_bytes(mark + GOOD.encode(base))
    else:
        path.write_bytes(GOOD.encode(codec))
    assert read_yaml(path)["name"] == "ml-research"


def test_latin_1_is_one_line_with_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    raw = GOOD.encode().replace(b"team: research", b"team: caf\xe9")
    path.write_bytes(raw)
    line = one_line(path)
    offset = raw.index(b"\xe9")
    assert f"byte {offset} is 0xe9" in line and "save the file as UTF-8" in line


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"name: a\x00b\n", "(line 1, column 8): character U+0000 is not allowed"),
        (b"name: a\nregion: \x07\n", "(line 2, column 9): character U+0007"),
        (b"? [a, b]\n: 1\n", "(line 1, column 3): a key must be a plain word"),
        (b"{[1]: 2}\n", "a key must be a plain word"),
        (b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", f"nested deeper than {MAX_DEPTH} levels"),
        (b"name: [a\nregion: x\n", "(line 2, column 7): expected ',' or ']'"),
        (b"name: a\nname: b\n", "key 'name' is given twice"),
        (b"- a\n- b\n", "must hold a mapping"),
        (b"", "must hold a mapping"),
        (b"just words\n", "must hold a mapping"),
    ],
)
def test_broken_files_are_one_line(content: bytes, fragment: str, tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_bytes(content)
    assert fragment in one_line(path)


def test_a_huge_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_bytes(b"# " + b"x" * MAX_FILE_BYTES + b"\n")
    assert f"at most {MAX_FILE_BYTES} bytes" in one_line(path)


@pytest.mark.parametrize("entry", ["-m hyperpod_cdk.config", "app.py"])
@pytest.mark.parametrize(
    "content",
    [GOOD.encode("latin-1").replace(b"research", b"caf\xe9", 1), b"? [a]\n: 1\n",
     b"a: " + b"[" * 3000 + b"]" * 3000, b"name: \x00\n"],
    ids=["latin-1", "list-key", "deep", "nul"],
)  # fmt: skip
def test_the_commands_exit_2_with_one_line(entry: str, content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_bytes(content)
    command = (
        [sys.executable, *entry.split()]
        if entry.startswith("-m")
        else [sys.executable, str(ROOT / entry)]
    )
    done = subprocess.run(
        [*command, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: "), done.stderr

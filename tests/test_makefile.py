"""The Makefile's cdk commands pass only options the pinned aws-cdk CLI knows."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CDK = ROOT / "node_modules" / ".bin" / "cdk"


def _recipes() -> dict[str, list[str]]:
    """``{target: [recipe lines]}`` of the Makefile."""
    recipes: dict[str, list[str]] = {}
    target = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([a-z-]+):", line)
        if match:
            target = match.group(1)
            recipes[target] = []
        elif line.startswith("\t") and target:
            recipes[target].append(line.strip())
    return recipes


@pytest.mark.parametrize("target", ["synth", "deploy", "diff", "destroy"])
def test_every_cdk_option_of_the_target_is_known_to_the_pinned_cli(target: str) -> None:
    (line,) = [r for r in _recipes()[target] if "$(CDK)" in r]
    command = line.split("$(CDK)", 1)[1].split()[0]
    options = [w.split("=")[0] for w in line.split() if w.startswith("--")]
    help_text = subprocess.run(
        [str(CDK), command, "--help"], capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": f"{ROOT / 'node_modules' / '.bin'}:/usr/bin:/bin", "HOME": str(ROOT)},
    ).stdout  # fmt: skip
    assert f"cdk {command}" in help_text
    for option in options:
        assert re.search(rf"(^|\s){re.escape(option)}(\s|,|$)", help_text, re.M), (
            f"make {target}: the pinned cdk CLI has no {option} for `cdk {command}`"
        )

"""scripts/env.sh does not shadow a platform team's active virtual environment (issue 35;
newcomer review, item 5): with one active it adds only the pinned CDK CLI and Node, and says so;
the repository's own work (no virtualenv, or a make target) gets .venv first as before."""

from __future__ import annotations

import subprocess
from pathlib import Path

from library_testkit import ROOT

ENV_SH = ROOT / "scripts" / "env.sh"


def _source(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f'source "{ENV_SH}" && command -v python && command -v cdk'],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip


def _venv(tmp_path: Path) -> Path:
    venv = tmp_path / "my-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (venv / "bin" / "python").chmod(0o755)
    return venv


def test_an_active_virtualenv_keeps_its_python(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    done = _source({"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "VIRTUAL_ENV": str(venv)})
    python, cdk = done.stdout.split()
    assert python == str(venv / "bin" / "python")
    assert cdk == str(ROOT / "node_modules" / ".bin" / "cdk")
    assert done.stderr.startswith(f"scripts/env.sh: your virtualenv {venv} keeps its python first")


def test_without_a_virtualenv_the_repository_venv_comes_first(tmp_path: Path) -> None:
    done = _source({"PATH": "/usr/bin:/bin"})
    assert done.stdout.split()[0] == str(ROOT / ".venv" / "bin" / "python")
    assert done.stderr == ""


def test_make_targets_use_the_repository_venv(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    done = _source(
        {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "VIRTUAL_ENV": str(venv), "MAKELEVEL": "1"}
    )
    assert done.stdout.split()[0] == str(ROOT / ".venv" / "bin" / "python")

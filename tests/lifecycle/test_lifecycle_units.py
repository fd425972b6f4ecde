"""Every systemd unit and fstab line the lifecycle scripts write, checked by the real systemd.

Lifecycle scripts never run at reboot: what must hold after one lives in an fstab line or a unit,
and a mistake there shows only on the first reboot of a real node. This runs the real
``systemd-fstab-generator`` on the fstab lines the scripts wrote on the fake node and the real
``systemd-analyze verify`` on the result and on every unit file they wrote, against a unit
directory of stand-ins for exactly the units the HyperPod Ubuntu AMIs have
(``fake_node/units``): a line that names a unit the node lacks (Ubuntu has no
``network.service``) or a program it lacks fails here. Where the machine has no systemd, the
tests skip and say so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from lifecycle_testkit import FAKE_NODE, dry

STANDINS = FAKE_NODE / "units"
ANALYZE = shutil.which("systemd-analyze")
FSTAB_GENERATOR = next(
    (
        path
        for path in (
            Path("/usr/lib/systemd/system-generators/systemd-fstab-generator"),
            Path("/lib/systemd/system-generators/systemd-fstab-generator"),
        )
        if path.is_file()
    ),
    None,
)
pytestmark = pytest.mark.skipif(
    ANALYZE is None or FSTAB_GENERATOR is None,
    reason="this machine has no systemd-analyze / systemd-fstab-generator (package systemd)",
)

ADOPTED = {
    "fsx.dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    "fsx.mount_name": "abcdefgh",
    "fsx.mounted_by": "script",
}
# (node, settings changes): every path of the scripts that writes a unit or an fstab line
SCENARIOS = {
    "login: FSx mounted by the scripts, Docker data on NVMe": ("login", ADOPTED),
    "compute: FSx over EFA mounted by the scripts, Docker, every exporter": (
        "compute",
        {
            **ADOPTED,
            "node_setup.exporters.node": True,
            "node_setup.exporters.dcgm": True,
            "node_setup.exporters.efa": True,
        },
    ),
    "controller": ("controller", {}),
    "eks": ("eks", {}),
}
_EXEC = re.compile(r"^(Exec[A-Za-z]*=)([-@:+!]*)(\S+)(.*)$")


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file()}


def _executables() -> set[str]:
    return {line for line in _lines(STANDINS / "EXECUTABLES") if not line.startswith("#")}


def _stand_in_executable(path: str, work: Path, node_root: Path) -> str:
    """``path`` as the verify may run it: a stand-in for an AMI program or one the scripts put on
    the fake node; any other fails the test."""
    installed = node_root / path.lstrip("/")
    assert path in _executables() or os.access(installed, os.X_OK), (
        f"a unit starts {path}, which the HyperPod AMI does not have and the scripts did not install"
    )
    stand_in = work / "exe" / path.lstrip("/")
    stand_in.parent.mkdir(parents=True, exist_ok=True)
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    return str(stand_in)


def verify(units: dict[str, str], fstab: list[str], work: Path, node_root: Path) -> str:
    """systemd's complaints about ``units`` (path under /etc/systemd/system -> text) and the
    ``fstab`` lines; empty when there are none."""
    written, generated = work / "written", work / "generated"
    generated.mkdir(parents=True)
    written.mkdir(parents=True)
    (work / "fstab").write_text("".join(f"{line}\n" for line in fstab))
    done = subprocess.run(
        [str(FSTAB_GENERATOR), str(generated), str(generated), str(generated)],
        env={**os.environ, "SYSTEMD_FSTAB": str(work / "fstab"), "SYSTEMD_LOG_LEVEL": "warning"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    complaints = [done.stderr.strip()] if done.returncode or done.stderr.strip() else []
    to_verify = [p for p in generated.iterdir() if p.suffix in (".mount", ".automount", ".swap")]
    for name, text in units.items():
        target = written / name
        target.parent.mkdir(parents=True, exist_ok=True)
        rewritten = []
        for line in text.splitlines():
            match = _EXEC.match(line)
            if match:
                prefix, flags, program, rest = match.groups()
                line = f"{prefix}{flags}{_stand_in_executable(program, work, node_root)}{rest}"
            rewritten.append(line)
        target.write_text("\n".join(rewritten) + "\n")
        unit = Path(name).parts[0]
        if unit.endswith(".d"):  # a drop-in: verify the unit it changes, with it
            unit = unit[: -len(".d")]
            if (written / unit).exists():
                continue
            to_verify.append(STANDINS / unit if (STANDINS / unit).exists() else written / unit)
        else:
            to_verify.append(target)
    if to_verify:
        done = subprocess.run(
            [str(ANALYZE), "verify", "--man=no", *sorted({str(p) for p in to_verify})],
            env={
                **os.environ,
                # only these directories: the host's own units must not stand in for the AMI's
                "SYSTEMD_UNIT_PATH": f"{written}:{generated}:{STANDINS}",
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode or done.stderr.strip():
            complaints.append(done.stderr.strip() or f"exit {done.returncode}")
    return "\n".join(complaints)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_unit_and_fstab_line_the_scripts_write_passes_systemd(
    scenario: str, fake_node, tmp_path: Path
) -> None:
    node, changes = SCENARIOS[scenario]
    base = fake_node(node, changes)
    mounts = base / "node/proc/self/mounts"
    if changes.get("fsx.mounted_by") == "script":  # the scripts mount FSx themselves
        mounts.write_text("".join(f"{m}\n" for m in _lines(mounts) if " /fsx " not in m))
    before_units = _files(base / "node/etc/systemd/system")
    before_fstab = _lines(base / "node/etc/fstab")
    result = dry.run(node, base)
    assert result.returncode == 0, result.output

    units = {
        name: path.read_text()
        for name, path in _files(base / "node/etc/systemd/system").items()
        if name not in before_units
    }
    fstab = [line for line in _lines(base / "node/etc/fstab") if line not in before_fstab]
    assert verify(units, fstab, tmp_path / "verify", base / "node") == ""


def test_the_check_sees_a_unit_the_node_does_not_have(tmp_path: Path) -> None:
    """The line the scripts wrote before: Ubuntu has no network.service, so /fsx never mounted
    after a reboot."""
    old = (
        "fs.example@tcp:/abcdefgh /fsx lustre defaults,relatime,flock,_netdev,x-systemd.automount,"
        "x-systemd.requires=network.service 0 0"
    )
    assert "Unit network.service not found" in verify({}, [old], tmp_path, tmp_path)


def test_the_check_sees_a_program_the_node_does_not_have(tmp_path: Path) -> None:
    unit = "[Service]\nExecStart=/usr/local/bin/nowhere\n"
    with pytest.raises(AssertionError, match="/usr/local/bin/nowhere"):
        verify({"x.service": unit}, [], tmp_path, tmp_path)


def test_the_check_sees_a_dependency_on_a_missing_unit(tmp_path: Path) -> None:
    unit = (
        "[Unit]\nRequires=nvidia-fabricmanager-x.service\n[Service]\nExecStart=/usr/bin/docker ps\n"
    )
    assert "nvidia-fabricmanager-x.service" in verify({"x.service": unit}, [], tmp_path, tmp_path)

"""The real-tools tier: finding a real program (or skipping with the reason), and PATHs that hold
only what a test means to provide.

Two pytest markers (registered in pyproject.toml):

- ``real_tools``: the test runs a light real program (sssctl, sshd, promtool, amtool,
  systemd-analyze, systemctl, pamtester) where this machine has it; it runs in ``make test`` and
  skips with the reason (the program and its Debian package) where the program is absent. Tests
  install nothing.
- ``real_slurm``: the test needs the one-node Slurm cluster of tests/real (slurmctld, slurmd,
  slurmdbd on MariaDB, munge); ``make test-real`` runs them, ``make test`` deselects them.

A fake that stands in for a program must not be bypassed by the host's own: :func:`only_tools`
builds a folder of links to exactly the host programs a script needs (bash, coreutils, awk...),
so a PATH of ``fakes:that folder`` finds no other program of the host (no ``fio``, ``sssctl``,
``srun`` the machine happens to have).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

REAL_TOOLS = "real_tools"
REAL_SLURM = "real_slurm"

# program -> the Debian package that has it (what .ci/run installs)
PACKAGES: dict[str, str] = {
    "sssctl": "sssd-tools",
    "sssd": "sssd-common",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "promtool": "prometheus",
    "amtool": "prometheus-alertmanager",
    "pamtester": "pamtester",
    "systemd-analyze": "systemd",
    "systemctl": "systemd",
    "fio": "fio",
    "unshare": "util-linux",
}
# Where root's programs are, also when the test runner's PATH lacks the sbin folders.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The host programs a shell script of the project may use besides the ones a test fakes.
BASE_TOOLS = (
    "bash", "sh", "env", "cat", "mkdir", "rm", "rmdir", "mktemp", "base64", "awk", "gawk", "mawk",
    "grep", "sed", "sort", "uniq", "tr", "cut", "head", "tail", "dirname", "basename", "hostname",
    "sleep", "date", "wc", "touch", "cp", "mv", "ln", "chmod", "ls", "od", "tee", "id", "stat",
    "readlink", "realpath", "find", "xargs", "true", "false", "printf", "echo", "expr", "seq",
    "python3", "getent", "cmp", "diff", "install", "test", "[", "comm", "paste", "nproc",
)  # fmt: skip


def find_tool(name: str, path: str | None = None) -> str | None:
    """The program's path on ``path`` (default: this PATH, then the system folders)."""
    search = path if path is not None else f"{os.environ.get('PATH', '')}:{SYSTEM_PATH}"
    return shutil.which(name, path=search)


def tool(name: str, path: str | None = None) -> str:
    """The program's path, or skip the test saying which program and package it needs."""
    found = find_tool(name, path)
    if found is None:
        package = PACKAGES.get(name, name)
        pytest.skip(
            f"{name} is not installed (Debian package {package}); this real-tools test needs it"
        )
    return found


def only_tools(folder: Path, names: Iterable[str] = BASE_TOOLS) -> Path:
    """``folder`` holding links to the host programs ``names`` (those the host has): a PATH entry
    that offers nothing else of the host."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        found = shutil.which(name, path=SYSTEM_PATH)
        link = folder / name
        if found and not link.exists():
            link.symlink_to(found)
    return folder

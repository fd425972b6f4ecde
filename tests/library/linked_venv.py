"""Fresh virtual environments for the library-wheel tests, with the wheel installed by pip and its
dependencies linked from the repository's .venv instead of downloaded and unpacked again.

``make bootstrap`` resolved every dependency from PyPI at the versions constraints.txt pins and
installed them into .venv. A test venv needs the same files, so:

1. :func:`dependency_closure` walks the requirements (the wheel's Requires-Dist with the requested
   extras, plus any other requirement lines) through the distributions installed in .venv:
   environment markers evaluated (``extra`` included), extras followed, transitively. Each
   requirement must be met by the version found there and that version must be constraints.txt's
   pin; anything else (a missing distribution, a version outside the specifier or off the pin, a
   distribution without a pin) fails and names the requirement.
2. :func:`link_distributions` puts exactly those distributions into the fresh venv's
   site-packages: every file their RECORD lists under site-packages (the dist-info included;
   scripts outside it, such as ``../../bin/...``, skipped) is hard-linked, or copied where a hard
   link is not possible (another filesystem). Nothing else of .venv is there.
3. pip installs the wheel itself (``pip install --no-deps --no-index``), run from outside the venv
   with ``pip --python``; the tests then run ``pip check``: pip's own verification that every
   requirement of every installed distribution is met.

What this proves: pip installs the wheel; the dependencies it declares, at the pinned versions,
are present and sufficient; nothing else is importable. (The download from PyPI itself is
bootstrap's work, done once per checkout rather than once per test run.)

The import recorder (:data:`IMPORT_RECORDER_PTH`) is one ``.pth`` line in the test venv: only
when ``HYPERPOD_RECORD_IMPORTS`` names a file does a Python process of the venv register an
atexit hook that writes ``hyperpod_cdk.__file__``, ``sys.prefix`` and the file of every loaded
module there (so the CDK CLI's ``python app.py`` can be observed). Without the variable it does
nothing and defines no name.
"""

from __future__ import annotations

import errno
import filecmp
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.parser import Parser
from importlib.metadata import Distribution, distributions
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"
# the repository's .venv (this interpreter's): what bootstrap installed
SOURCE_SITE = Path(sysconfig.get_path("purelib"))
BOOTSTRAP = "run `make bootstrap`"

RECORD_IMPORTS = "HYPERPOD_RECORD_IMPORTS"
_RECORDER = """\
import json, os, sys
module = sys.modules.get("hyperpod_cdk")
files = sorted({f for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None))})
with open(os.environ["HYPERPOD_RECORD_IMPORTS"], "w") as out:
    json.dump({"hyperpod_cdk": getattr(module, "__file__", None), "prefix": sys.prefix,
               "modules": files}, out)
"""
# site runs a .pth line that starts with "import"; the hook runs the recorder in globals of its own
IMPORT_RECORDER_PTH = (
    f'import os; os.environ.get("{RECORD_IMPORTS}") and '
    f'__import__("atexit").register(exec, {_RECORDER!r}, {{}})\n'
)


class DependencyError(AssertionError):
    """A requirement the repository's .venv cannot meet at the pinned version."""


@dataclass(frozen=True)
class Resolved:
    """A distribution of the closure, found in ``site``."""

    name: str  # canonical
    version: str
    dist: Distribution
    site: Path


def read_pins(constraints: Path = CONSTRAINTS) -> dict[str, str]:
    """constraints.txt's ``name==version`` lines, by canonical name."""
    pins: dict[str, str] = {}
    for line in constraints.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", f"{constraints}: not a pin: {line}"
            pins[canonicalize_name(requirement.name)] = specifier.version
    return pins


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a requirements file (comments and blank lines dropped; options such
    as ``-r`` are not used by the files these tests read, and fail)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        assert not line.startswith("-"), f"{path}: option not supported here: {line}"
        lines.append(line)
    return lines


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    """The requirement's marker holds for this interpreter with one of ``extras`` (or none)."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": e}) for e in {"", *extras})


def dependency_closure(
    requirements: Iterable[str],
    *,
    site: Path = SOURCE_SITE,
    pins: Mapping[str, str],
    extras: Iterable[str] = (),
    provided: Mapping[str, str] | None = None,
) -> list[Resolved]:
    """Every distribution of ``site`` that ``requirements`` need, transitively, sorted by name.

    A requirement line's marker is evaluated with ``extras`` (as a wheel's Requires-Dist is for
    ``wheel[extras]``); a distribution's own requirements with the extras it was asked for.
    ``provided`` (canonical name -> version) are installed otherwise (the wheel under test): a
    requirement on one is checked against its version and not looked up in ``site``.
    All problems are collected; :class:`DependencyError` names each requirement.
    """
    provided = {canonicalize_name(n): v for n, v in (provided or {}).items()}
    found = {canonicalize_name(d.metadata["Name"]): d for d in distributions(path=[str(site)])}
    resolved: dict[str, Resolved] = {}
    walked: set[tuple[str, str]] = set()
    problems: list[str] = []
    pending = [(Requirement(line), "the requirements", frozenset(extras)) for line in requirements]
    while pending:
        requirement, parent, parent_extras = pending.pop(0)
        if not _applies(requirement, parent_extras):
            continue
        name = canonicalize_name(requirement.name)
        where = f"{requirement} (required by {parent})"
        if name in provided:
            if not requirement.specifier.contains(provided[name], prereleases=True):
                problems.append(f"{where}: the wheel under test is {name} {provided[name]}")
            continue
        dist = found.get(name)
        if dist is None:
            problems.append(f"{where}: not installed in {site}; {BOOTSTRAP}")
            continue
        version = dist.version
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{where}: {site} has {name} {version}; {BOOTSTRAP}")
            continue
        if name not in pins:
            problems.append(f"{where}: {name} has no pin in constraints.txt")
            continue
        if Version(pins[name]) != Version(version):
            problems.append(
                f"{where}: {site} has {name} {version}, constraints.txt pins {pins[name]}; "
                f"{BOOTSTRAP}"
            )
            continue
        resolved[name] = Resolved(name, version, dist, site)
        for extra in ["", *sorted(canonicalize_name(e) for e in requirement.extras)]:
            if (name, extra) in walked:
                continue
            walked.add((name, extra))
            for line in dist.requires or []:
                pending.append((Requirement(line), f"{name} {version}", frozenset({extra})))
    if problems:
        raise DependencyError("\n".join(dict.fromkeys(problems)))
    return [resolved[name] for name in sorted(resolved)]


def _place(source: Path, target: Path) -> int:
    """Hard-link ``source`` at ``target``; a copy (with its times and mode) where a hard link is
    not possible. A file that two distributions both list (aws-cdk-lib and the cloud assembly
    schema ship the same module; pip keeps one) is placed once."""
    try:
        os.link(source, target)
    except FileExistsError:
        if not filecmp.cmp(source, target, shallow=False):
            raise
        return 0
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(source, target)
    return 1


def link_distributions(resolved: Iterable[Resolved], target_site: Path) -> int:
    """Every file that each distribution's RECORD lists under its site-packages, placed at the
    same path under ``target_site``; entries outside site-packages (scripts in ``../../bin``)
    are skipped. A byte-code cache that is listed but gone is skipped (Python rebuilds it); any
    other listed file that is gone fails. Returns the number of files placed."""
    placed = 0
    for item in resolved:
        files = item.dist.files
        if files is None:
            raise DependencyError(f"{item.name} {item.version}: no RECORD in {item.site}")
        for entry in files:
            relative = os.path.normpath(PurePosixPath(entry).as_posix())
            if relative.startswith("..") or os.path.isabs(relative):
                continue
            source = item.site / relative
            if not source.is_file():
                if source.suffix == ".pyc":
                    continue
                raise DependencyError(
                    f"{item.name} {item.version}: {source} is listed in RECORD but missing; "
                    f"{BOOTSTRAP}"
                )
            target = target_site / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            placed += _place(source, target)
    return placed


def wheel_metadata(wheel: Path) -> tuple[str, str, list[str]]:
    """The wheel's name, version and Requires-Dist lines."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode())
    return metadata["Name"], metadata["Version"], metadata.get_all("Requires-Dist") or []


def venv_site(venv: Path) -> Path:
    """The venv's site-packages (it was made by this interpreter's version of Python)."""
    return Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))


def run_checked(
    command: list[str], *, timeout: int, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``command`` (text output captured); it must succeed, else the failure shows its tails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    if done.returncode != 0:
        raise AssertionError(
            f"failed ({done.returncode}): {' '.join(command)}\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        )
    return done


def pip(venv: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """This interpreter's pip acting on the venv (``pip --python``); it must succeed."""
    command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
               "--disable-pip-version-check", "--no-input", *args]  # fmt: skip
    return run_checked(command, timeout=timeout)


def build_venv(
    venv: Path,
    wheel: Path,
    *,
    extras: Iterable[str] = (),
    requirements: Iterable[str] = (),
    source_site: Path = SOURCE_SITE,
    constraints: Path = CONSTRAINTS,
) -> dict[str, float]:
    """A fresh venv at ``venv`` with ``wheel[extras]`` installed by pip and the closure of its
    Requires-Dist and ``requirements`` linked from ``source_site``; the import recorder's
    ``.pth`` line. Returns the seconds of each step (venv, link, install)."""
    seconds: dict[str, float] = {}
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    site = venv_site(venv)
    assert site.is_dir(), f"{site}: not the new venv's site-packages"
    seconds["venv"] = time.monotonic() - start
    start = time.monotonic()
    name, version, requires = wheel_metadata(wheel)
    extras = list(extras)
    pins = read_pins(constraints)
    closure = dependency_closure(requires, site=source_site, pins=pins, extras=extras,
                                 provided={name: version})  # fmt: skip
    closure += dependency_closure(list(requirements), site=source_site, pins=pins,
                                  provided={name: version})  # fmt: skip
    unique = {item.name: item for item in closure}
    link_distributions(unique.values(), site)
    (site / "_hyperpod_record_imports.pth").write_text(IMPORT_RECORDER_PTH)
    seconds["link"] = time.monotonic() - start
    start = time.monotonic()
    # the wheel itself, by pip, from the file alone; its dependencies are already there
    pip(venv, "install", "-q", "--no-deps", "--no-index", str(wheel))
    seconds["install"] = time.monotonic() - start
    (venv.parent / "closure.json").write_text(
        json.dumps({item.name: item.version for item in unique.values()}, indent=1)
    )
    return seconds

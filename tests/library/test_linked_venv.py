"""The builder of the library-wheel tests' venvs (linked_venv.py), on small made-up
site-packages: the dependency closure (markers, extras, what is missing, off the specifier or
off the pin), the linking (RECORD's files under site-packages and nothing else; a copy across
filesystems) and the import recorder's ``.pth`` line."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from linked_venv import (
    IMPORT_RECORDER_PTH,
    RECORD_IMPORTS,
    DependencyError,
    dependency_closure,
    link_distributions,
    read_pins,
    requirement_lines,
)


def _dist(
    site: Path, name: str, version: str, requires: tuple[str, ...] = (), files: int = 1
) -> None:
    """An installed distribution ``name`` in ``site``: a package of ``files`` modules, a script
    in ../../bin (as pip records console scripts) and its dist-info with RECORD."""
    package = name.replace("-", "_")
    info = site / f"{package}-{version}.dist-info"
    info.mkdir(parents=True)
    (site / package).mkdir()
    recorded = []
    for i in range(files):
        (site / package / f"m{i}.py").write_text(f"VALUE = {i}\n")
        recorded.append(f"{package}/m{i}.py")
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {line}" for line in requires]
    (info / "METADATA").write_text("\n".join(metadata) + "\n")
    recorded += [f"{info.name}/METADATA", f"{info.name}/RECORD", f"../../../bin/{package}"]
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in recorded))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "source" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    _dist(site, "app-lib", "1.0", (
        "base>=1,<2",
        'old-only; python_version < "3"',
        'new-only; python_version >= "3"',
        'elsewhere; sys_platform == "no-such-platform"',
        'optional[deep]>=2; extra == "opt"',
    ))  # fmt: skip
    _dist(site, "base", "1.5", ("Leaf_Pkg==3.0",))
    _dist(site, "leaf-pkg", "3.0")
    _dist(site, "new-only", "1.0")
    _dist(site, "old-only", "1.0")
    _dist(site, "elsewhere", "1.0")
    _dist(site, "optional", "2.1", ('deep-dep; extra == "deep"', 'shallow-dep; extra == "other"'))
    _dist(site, "deep-dep", "0.1")
    _dist(site, "shallow-dep", "0.1")
    _dist(site, "unrelated", "9.9")
    return site


PINS = {"app-lib": "1.0", "base": "1.5", "leaf-pkg": "3.0", "new-only": "1.0", "old-only": "1.0",
        "elsewhere": "1.0", "optional": "2.1", "deep-dep": "0.1", "shallow-dep": "0.1",
        "unrelated": "9.9"}  # fmt: skip


def _names(site: Path, requirements: list[str], **kwargs: object) -> list[str]:
    pins = kwargs.pop("pins", PINS)
    return [r.name for r in dependency_closure(requirements, site=site, pins=pins, **kwargs)]  # type: ignore[arg-type]


def test_the_closure_follows_requirements_and_markers(site: Path) -> None:
    assert _names(site, ["app-lib"]) == ["app-lib", "base", "leaf-pkg", "new-only"]


def test_the_closure_follows_extras_transitively(site: Path) -> None:
    """``app-lib[opt]`` brings ``optional[deep]``, which brings deep-dep (not shallow-dep)."""
    assert _names(site, ["app-lib[opt]"]) == [
        "app-lib", "base", "deep-dep", "leaf-pkg", "new-only", "optional",
    ]  # fmt: skip


def test_the_requested_extras_apply_to_the_requirement_lines(site: Path) -> None:
    """As a wheel's Requires-Dist for ``wheel[opt]``: the lines with ``extra == "opt"``."""
    lines = ["base>=1", 'optional>=2; extra == "opt"']
    assert _names(site, lines) == ["base", "leaf-pkg"]
    assert _names(site, lines, extras=["opt"]) == ["base", "leaf-pkg", "optional"]


def test_a_missing_distribution_is_named(site: Path) -> None:
    with pytest.raises(DependencyError) as raised:
        _names(site, ["base", "ghost>=1"])
    assert "ghost>=1 (required by the requirements): not installed in" in str(raised.value)
    assert "make bootstrap" in str(raised.value)


def test_a_missing_transitive_distribution_names_who_needs_it(site: Path) -> None:
    _dist(site, "needs-ghost", "1.0", ("ghost",))
    with pytest.raises(DependencyError, match=r"ghost \(required by needs-ghost 1.0\)"):
        _names(site, ["needs-ghost"], pins=PINS | {"needs-ghost": "1.0"})


def test_a_version_outside_the_specifier_fails(site: Path) -> None:
    with pytest.raises(DependencyError) as raised:
        _names(site, ["base>=2"])
    assert "base>=2 (required by the requirements): " in str(raised.value)
    assert "has base 1.5" in str(raised.value)


def test_a_version_other_than_the_pin_fails(site: Path) -> None:
    with pytest.raises(DependencyError, match=r"base 1.5, constraints.txt pins 1.4"):
        _names(site, ["base"], pins=PINS | {"base": "1.4"})
    unpinned = {k: v for k, v in PINS.items() if k != "leaf-pkg"}
    with pytest.raises(DependencyError, match=r"leaf-pkg has no pin in constraints.txt"):
        _names(site, ["base"], pins=unpinned)


def test_a_provided_distribution_is_checked_and_not_looked_up(site: Path) -> None:
    """The wheel under test: not in the source site, its version checked."""
    assert _names(site, ["the-wheel>=0.1,<0.2", "base"], provided={"The_Wheel": "0.1.0"}) == [
        "base", "leaf-pkg",
    ]  # fmt: skip
    with pytest.raises(DependencyError, match=r"the wheel under test is the-wheel 0.3"):
        _names(site, ["the-wheel<0.2"], provided={"the-wheel": "0.3"})


def test_the_files_of_the_closure_are_linked_and_nothing_else(site: Path, tmp_path: Path) -> None:
    target = tmp_path / "venv-site"
    closure = dependency_closure(["base"], site=site, pins=PINS)
    assert link_distributions(closure, target) == 6
    placed = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert placed == [
        "base-1.5.dist-info/METADATA", "base-1.5.dist-info/RECORD", "base/m0.py",
        "leaf_pkg-3.0.dist-info/METADATA", "leaf_pkg-3.0.dist-info/RECORD", "leaf_pkg/m0.py",
    ]  # fmt: skip
    assert os.path.samefile(target / "base" / "m0.py", site / "base" / "m0.py")
    assert not (tmp_path / "bin").exists() and not (target.parent / "bin").exists()


def test_a_file_two_distributions_list_is_placed_once(site: Path, tmp_path: Path) -> None:
    """As aws-cdk-lib and aws-cdk.cloud-assembly-schema both list one module; a different file
    at the same place still fails."""
    with (site / "base-1.5.dist-info" / "RECORD").open("a") as record:
        record.write("leaf_pkg/m0.py,,\n")
    closure = dependency_closure(["base"], site=site, pins=PINS)
    assert link_distributions(closure, tmp_path / "once") == 6
    (tmp_path / "other" / "leaf_pkg").mkdir(parents=True)
    (tmp_path / "other" / "leaf_pkg" / "m0.py").write_text("VALUE = 'other'\n")
    with pytest.raises(FileExistsError):
        link_distributions(closure, tmp_path / "other")


def test_a_file_is_copied_where_it_cannot_be_linked(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cross_device(source: object, target: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    target = tmp_path / "venv-site"
    link_distributions(dependency_closure(["leaf-pkg"], site=site, pins=PINS), target)
    copied = target / "leaf_pkg" / "m0.py"
    assert copied.read_text() == "VALUE = 0\n"
    assert not os.path.samefile(copied, site / "leaf_pkg" / "m0.py")


def test_a_listed_file_that_is_gone_fails(site: Path, tmp_path: Path) -> None:
    (site / "leaf_pkg" / "m0.py").unlink()
    with pytest.raises(DependencyError, match=r"leaf_pkg/m0.py is listed in RECORD but missing"):
        link_distributions(dependency_closure(["leaf-pkg"], site=site, pins=PINS), tmp_path / "t")


def test_pins_and_requirement_files_are_read(tmp_path: Path) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("# pins\nPyYAML==6.0.3\naws-cdk.lambda-layer-kubectl-v30==2.0.4\n")
    assert read_pins(constraints) == {
        "pyyaml": "6.0.3",
        "aws-cdk-lambda-layer-kubectl-v30": "2.0.4",
    }
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# the library\nhyperpod-cdk>=0.1,<0.2  # from the wheel\n\n")
    assert requirement_lines(requirements) == ["hyperpod-cdk>=0.1,<0.2"]


def test_the_import_recorder_writes_only_when_asked(tmp_path: Path) -> None:
    """The ``.pth`` line, processed by site as in a venv: with the variable, the imports of the
    process at exit; without it, nothing is written and no name is left behind."""
    (tmp_path / "recorder.pth").write_text(IMPORT_RECORDER_PTH)
    code = (
        f"import site; site.addsitedir({str(tmp_path)!r}); import json, sys; "
        "sys.modules['hyperpod_cdk'] = type(sys)('hyperpod_cdk'); "
        "sys.modules['hyperpod_cdk'].__file__ = '/x/hyperpod_cdk/__init__.py'; "
        "import atexit; print(atexit._ncallbacks())"
    )
    output = tmp_path / "imports.json"
    env = {k: v for k, v in os.environ.items() if k != RECORD_IMPORTS}
    quiet = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)  # fmt: skip
    assert not output.exists()
    asked = subprocess.run([sys.executable, "-c", code], env=env | {RECORD_IMPORTS: str(output)},
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert int(asked.stdout) == int(quiet.stdout) + 1
    recorded = json.loads(output.read_text())
    assert recorded["hyperpod_cdk"] == "/x/hyperpod_cdk/__init__.py"
    assert recorded["prefix"] == sys.prefix
    assert json.__file__ in recorded["modules"]

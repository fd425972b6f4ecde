"""The scripts' settings schema (lifecycle_assets/settings.schema.json, issue 35) tells the truth:
every key the scripts read is declared in it, every key it calls required fails a node when it
is missing (a dry run proves each), the bundled settings and the settings of every shipped config
pass it, and it is a valid JSON Schema whose verdicts the library's own checker
(hyperpod_cdk.lifecycle.settings.settings_problems) shares with the jsonschema package.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from lifecycle_testkit import FAKE_NODE, LIFECYCLE_ASSETS, PROJECT_ROOT, dry

from hyperpod_cdk.lifecycle.settings import (
    SETTINGS_SCHEMA_FILE,
    read_settings_schema,
    settings_problems,
)

SCHEMA: dict[str, Any] = json.loads((LIFECYCLE_ASSETS / SETTINGS_SCHEMA_FILE).read_text())
# `setting KEY`, `setting_list KEY`, `is_on KEY` with a literal key
_READ = re.compile(r"\b(?:setting|setting_list|is_on) \"?([a-z_]+(?:\.[a-z_]+)+|[a-z_]+)\b")


def _declared(schema: Mapping[str, Any], path: str = "") -> Iterator[str]:
    for key, sub in (schema.get("properties") or {}).items():
        yield f"{path}{key}"
        yield from _declared(sub, f"{path}{key}.")
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield f"{path}*"
        yield from _declared(extra, f"{path}*.")


def _required(schema: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """Every key the schema requires, directly or under if/then (``*``: any key of a map)."""
    yield from (f"{path}{key}" for key in schema.get("required", []))
    for key, sub in (schema.get("properties") or {}).items():
        yield from _required(sub, f"{path}{key}.")
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from _required(extra, f"{path}*.")
    for sub in schema.get("allOf", []):
        yield from _required(sub.get("then", sub), path)


def test_every_key_the_scripts_read_is_declared() -> None:
    read = {
        key
        for script in LIFECYCLE_ASSETS.rglob("*.sh")
        for line in script.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
        for key in _READ.findall(line)
    }
    assert {"cluster_network.cidrs", "fsx.mount_path", "node_setup.users_file"} <= read
    assert read - set(_declared(SCHEMA)) == set()


def test_the_schema_is_a_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


# key the schema requires -> (node, changes that make the rule apply, then the key removed):
# the dry run of that node fails
ADOPTED = {"fsx.mounted_by": "script", "fsx.dns_name": "fs.example", "fsx.mount_name": "abcdefgh"}
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "orchestrator": ("eks", {}),
    "instance_groups": ("compute", {}),
    "cluster_network": ("compute", {}),
    "*.node_type": ("compute", {"instance_groups.gpu": {"partition": "gpu"}}),
    "fsx.mounted_by": ("eks", {}),
    "fsx.dns_name": ("login", ADOPTED),
    "fsx.mount_name": ("login", ADOPTED),
    "homes.mount_path": ("controller", {}),
    "node_setup.exporters.node_image": ("controller", {}),
    "node_setup.exporters.node_registry": ("controller", {}),
    "node_setup.exporters.node_ecr_region": ("controller", {}),
    "node_setup.exporters.dcgm_image": ("compute", {}),
    "node_setup.exporters.dcgm_registry": ("compute", {}),
    # alone: the node exporter's login to the same registry would hide it
    "node_setup.exporters.dcgm_ecr_region": ("compute", {"node_setup.exporters.node": False}),
}


def test_every_required_key_has_a_case() -> None:
    required = {re.sub(r"^instance_groups\.\*\.", "*.", key) for key in _required(SCHEMA)}
    assert required == set(CASES)


def _unmount_fsx(base: Path) -> None:
    mounts = base / "node/proc/self/mounts"
    mounts.write_text("".join(m for m in mounts.read_text().splitlines(True) if " /fsx " not in m))


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_missing_required_key_fails_the_node_and_the_check(key: str, tmp_path: Path) -> None:
    node, changes = CASES[key]
    changes = {**changes, key: None} if not key.startswith("*") else changes
    base = dry.prepare(node, tmp_path, changes=changes)
    if key.startswith("fsx.") and node != "eks":
        _unmount_fsx(base)  # the scripts mount it themselves
    settings = json.loads((base / "scripts" / "settings.json").read_text())
    problems = settings_problems(settings, SCHEMA)
    assert problems, f"the check passes settings without {key}"
    assert any(p.path.endswith(key.lstrip("*")) or p.path == f"settings.{key}" for p in problems)
    result = dry.run(node, base)
    assert result.returncode != 0, f"a {node} node boots without {key}:\n{result.output[-2000:]}"


def test_the_anyof_of_cluster_network_fails_the_node_too(tmp_path: Path) -> None:
    base = dry.prepare("compute", tmp_path, changes={"cluster_network.cidrs": []})
    settings = json.loads((base / "scripts" / "settings.json").read_text())
    assert [str(p) for p in settings_problems(settings, SCHEMA)] == [
        "config error: settings.cluster_network: names no subnet of the cluster: give cidrs (the "
        "HyperPod subnets' IPv4 CIDRs), or subnet_ids and region"
    ]
    assert dry.run("compute", base).returncode != 0


@pytest.mark.parametrize("name", ["slurm", "eks"])
def test_the_bundled_settings_pass(name: str) -> None:
    settings = json.loads((FAKE_NODE / "settings" / f"{name}.json").read_text())
    assert settings_problems(settings, SCHEMA) == []


@pytest.mark.parametrize(
    "config", sorted(p.name for p in (PROJECT_ROOT / "config" / "examples").glob("*.yaml"))
)
def test_the_settings_of_every_shipped_config_pass(config: str) -> None:
    from hyperpod_cdk.config import ConfigError, load_environment
    from hyperpod_cdk.lifecycle.settings import node_settings

    try:
        loaded = load_environment(PROJECT_ROOT / "config" / "examples" / config, PROJECT_ROOT)
    except ConfigError:
        pytest.skip("a pipeline file (its stages are environment files of this folder)")
    except Exception as exc:  # a config that reads a file beside it
        pytest.skip(str(exc))
    assert settings_problems(node_settings(loaded), SCHEMA) == []


def test_the_checker_agrees_with_jsonschema_on_the_cases(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for key, (node, changes) in CASES.items():
        settings = dry.with_changes(
            dry.default_settings(node), {**changes, **({} if key.startswith("*") else {key: None})}
        )
        assert bool(settings_problems(settings, SCHEMA)) == (not validator.is_valid(settings)), key
    for name in ("slurm", "eks"):
        settings = json.loads((FAKE_NODE / "settings" / f"{name}.json").read_text())
        assert validator.is_valid(settings)
    assert read_settings_schema(LIFECYCLE_ASSETS) == SCHEMA

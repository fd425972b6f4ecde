"""The JSON Schemas of the config files (issue 17): committed under config/schema/, equal to what
the models generate, named by every shipped config's first line, and accepting every shipped
config (checked with the jsonschema package, as an editor's YAML language server would)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [
    ROOT / "config" / "default.yaml",
    *sorted((ROOT / "config" / "examples").glob("*.yaml")),
    *sorted((ROOT / "config" / "examples" / "pipeline-stages").glob("*.yaml")),
]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "config_schema", ROOT / "scripts" / "config_schema.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def _is_pipeline(path: Path) -> bool:
    return "pipeline" in (yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def test_committed_schemas_match_the_models() -> None:
    for name, text in SCRIPT.schemas().items():
        committed = (ROOT / "config" / "schema" / name).read_text(encoding="utf-8")
        assert committed == text, (
            f"config/schema/{name} is stale: python scripts/config_schema.py --write"
        )


def test_check_mode_fails_on_a_stale_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SCRIPT, "SCHEMA_DIR", tmp_path)
    assert SCRIPT.main(["--check"]) == 1
    assert SCRIPT.main(["--write"]) == 0
    assert SCRIPT.main(["--check"]) == 0


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_shipped_config_names_its_schema(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == SCRIPT.header_for(path, _is_pipeline(path))
    schema = (path.parent / first.removeprefix(SCRIPT.HEADER)).resolve()
    assert schema.is_file()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_schema_accepts_every_shipped_config(path: Path) -> None:
    name = "pipeline.schema.json" if _is_pipeline(path) else "environment.schema.json"
    schema = json.loads((ROOT / "config" / "schema" / name).read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)


def test_the_schema_rejects_an_unknown_key() -> None:
    schema = json.loads((ROOT / "config" / "schema" / "environment.schema.json").read_text())
    data = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    data["nmae"] = "typo"
    with pytest.raises(jsonschema.ValidationError, match="nmae"):
        jsonschema.validate(data, schema)


if str(ROOT / "constructs") not in sys.path:  # the script imports the models from there
    sys.path.insert(0, str(ROOT / "constructs"))

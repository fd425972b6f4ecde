#!/usr/bin/env python3
"""The JSON Schemas of the config files, generated from the pydantic models, for editors.

    python scripts/config_schema.py --write   # rewrite config/schema/*.schema.json
    python scripts/config_schema.py --check   # exit 1 when a committed schema is out of date

``config/schema/environment.schema.json`` describes an environment file and
``config/schema/pipeline.schema.json`` a pipeline file. Every shipped config names its schema
in its first line (:data:`HEADER`), which the YAML language server (VS Code's YAML extension and
others) reads to complete and check keys as you type. ``make init`` writes the same header.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.pipeline import PipelineFileConfig

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "config" / "schema"
HEADER = "# yaml-language-server: $schema="


def schemas() -> dict[str, str]:
    """File name -> the schema's JSON text (sorted keys, so a diff shows only real changes)."""

    def text(model: type) -> str:
        return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"  # type: ignore[attr-defined]

    return {
        "environment.schema.json": text(EnvironmentConfig),
        "pipeline.schema.json": text(PipelineFileConfig),
    }


def header_for(config: Path, pipeline: bool) -> str:
    """The first line a config file at ``config`` carries: its schema, relative to it."""
    schema = SCHEMA_DIR / ("pipeline.schema.json" if pipeline else "environment.schema.json")
    relative = Path(_relpath(schema, config.parent))
    return f"{HEADER}{relative.as_posix()}"


def _relpath(target: Path, start: Path) -> str:
    import os

    return os.path.relpath(target.resolve(), start.resolve())


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str]) -> int:
    if argv not in (["--write"], ["--check"]):
        print("usage: python scripts/config_schema.py --write | --check", file=sys.stderr)
        return 2
    stale = []
    for name, text in schemas().items():
        path = SCHEMA_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
            if argv == ["--write"]:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                print(f"{_shown(path)}: rewritten")
    if argv == ["--check"] and stale:
        names = ", ".join(_shown(p) for p in stale)
        print(
            f"{names}: out of date; run: python scripts/config_schema.py --write", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

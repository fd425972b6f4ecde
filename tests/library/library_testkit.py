"""Helpers of the construct-library tests: the repository's paths, the platform-team example
and the findings of a synthesized App's validation report.

The CDK is imported inside the functions, so importing this module starts nothing.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "platform_team"
PARTITION_LITERALS = "@aws-cdk/core:enablePartitionLiterals"


def project_context() -> dict[str, Any]:
    """The feature flags of the repository's cdk.json (what ``cdk init`` writes today)."""
    cdk_json = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))
    context: dict[str, Any] = cdk_json["context"]
    return context


def load_example() -> ModuleType:
    """``examples/platform_team/app.py`` as a module (its ``__main__`` block does not run)."""
    name = "platform_team_app"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # jsii and dataclasses look classes up by module
    spec.loader.exec_module(module)
    return module


def findings(outdir: Path) -> list[tuple[str, str, list[str]]]:
    """Every violation of the validation report: (plugin, rule, construct paths)."""
    report = outdir / "validation-report.json"
    if not report.exists():
        return []
    return [
        (
            plugin["pluginName"],
            v["ruleName"],
            [c["constructPath"] for c in v["violatingConstructs"]],
        )
        for plugin in json.loads(report.read_text())["pluginReports"]
        for v in plugin.get("violations", [])
    ]


def templates(outdir: Path) -> dict[str, dict[str, Any]]:
    """The templates of a cloud assembly, by stack name."""
    return {
        path.name.removesuffix(".template.json"): json.loads(path.read_text())
        for path in sorted(outdir.glob("*.template.json"))
    }


def resource_types(template: dict[str, Any]) -> set[str]:
    return {r["Type"] for r in template.get("Resources", {}).values()}


def run_python(code: str) -> None:
    """Run ``code`` in a fresh interpreter (nothing imported yet), from this folder; it must
    exit 0."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr

"""Shared by the bench tests: scripts/bench.py, the deploy estimator (scripts/critical_path.py)
and small templates.

(Test modules import this, never ``conftest``: every test folder has a conftest module.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench
import critical_path as cp

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS_DIR = PROJECT_ROOT / "scripts"

__all__ = ["bench", "cp", "res", "template"]


def res(
    resource_type: str = "AWS::S3::Bucket",
    minutes: float | None = None,
    depends_on: str | list[str] | None = None,
    **properties: Any,
) -> dict[str, Any]:
    """A template resource; ``minutes`` overrides its creation time."""
    resource: dict[str, Any] = {"Type": resource_type}
    if minutes is not None:
        resource["Minutes"] = minutes
    if depends_on is not None:
        resource["DependsOn"] = depends_on
    if properties:
        resource["Properties"] = properties
    return resource


def template(resources: dict[str, Any], outputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A template with these resources (and outputs)."""
    body: dict[str, Any] = {"Resources": resources}
    if outputs:
        body["Outputs"] = outputs
    return body

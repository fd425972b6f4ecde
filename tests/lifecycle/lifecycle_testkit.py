"""Shared by the lifecycle script tests: paths, the dry-run module and the helper loader.

(Test modules import this, never ``conftest``: every test folder has a conftest module.)
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import lifecycle_dry_run as dry

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS_DIR = PROJECT_ROOT / "scripts"

LIFECYCLE_ASSETS = PROJECT_ROOT / "lifecycle_assets"
FAKE_NODE = dry.FAKE_NODE

Changes = dict[str, Any]
DryRunner = Callable[..., dry.DryRun]


def load_helper(name: str) -> ModuleType:
    """A Python helper of lifecycle_assets/lib, imported from its file (it is no package)."""
    spec = importlib.util.spec_from_file_location(name, LIFECYCLE_ASSETS / "lib" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

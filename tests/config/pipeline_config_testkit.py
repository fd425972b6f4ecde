"""A pipeline file and its stage configs written to a project directory, for the pipeline tests.

``write_pipeline(root)`` writes ``root/delivery/pipeline.yaml`` whose stages name
``envs/<stage>.yaml`` (relative to the pipeline file, so ``root/delivery/envs/...``); every
argument changes one part, so each test names exactly what it is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from config_testkit import PIPELINE_BASE, build

DEV_ACCOUNT = "444455556666"
PROD_ACCOUNT = "777788889999"


def stage_env(
    name: str = "research", account: str | None = DEV_ACCOUNT, **changes: Any
) -> dict[str, Any]:
    """A valid Slurm environment for a stage (``account=None`` leaves the account out)."""
    data = build({"name": name, **changes})
    if account is not None:
        data["account"] = account
    return data


def default_stages() -> dict[str, dict[str, Any]]:
    return {
        "dev": stage_env(account=DEV_ACCOUNT),
        "prod": stage_env(account=PROD_ACCOUNT),
    }


def write_pipeline(
    root: Path,
    stages: Mapping[str, dict[str, Any] | str] | None = None,
    *,
    approval: tuple[str, ...] = ("prod",),
    entries: list[dict[str, Any]] | None = None,
) -> Path:
    """Write the pipeline file and one environment file per stage; return the pipeline file.

    ``stages`` maps a stage name to its environment (a mapping) or to raw YAML text;
    ``entries`` replaces the ``pipeline.stages`` list as written (paths not checked).
    """
    pipeline_dir = root / "delivery"
    (pipeline_dir / "envs").mkdir(parents=True, exist_ok=True)
    written = []
    for name, env in (stages if stages is not None else default_stages()).items():
        path = pipeline_dir / "envs" / f"{name}.yaml"
        path.write_text(env if isinstance(env, str) else yaml.safe_dump(env, sort_keys=False))
        entry: dict[str, Any] = {"name": name, "config": f"envs/{name}.yaml"}
        if name in approval:
            entry["approval"] = True
        written.append(entry)
    data = dict(PIPELINE_BASE)
    data["pipeline"] = {
        **PIPELINE_BASE["pipeline"],
        "stages": entries if entries is not None else written,
    }
    path = pipeline_dir / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def project(root: Path) -> Path:
    """``root`` made a project root: lifecycle_assets holds the entry script the rules expect."""
    (root / "lifecycle_assets").mkdir(parents=True, exist_ok=True)
    (root / "lifecycle_assets" / "entrypoint.sh").write_text("#!/bin/bash\n")
    return root

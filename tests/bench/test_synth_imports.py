"""Synth speed (issue 7): a Slurm environment does not load what only EKS, the accounting
database or a pipeline needs. Each ``aws_cdk`` service module costs import time in Python and
module loading in the jsii runtime, on every ``cdk synth``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NOT_FOR_SLURM = ("aws_cdk.aws_eks_v2", "aws_cdk.aws_rds", "aws_cdk.pipelines", "stacks.pipeline")

PROBE = """
import json, sys
from pathlib import Path
from hyperpod_cdk.config.loader import load_file
from stacks.app_builder import build_app, new_app
config, _, _ = load_file(Path(sys.argv[1]), Path.cwd())
build_app(config, app=new_app(outdir=sys.argv[2]), project_root=Path.cwd())
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(config: str, outdir: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, config, str(outdir)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": f"{PROJECT_ROOT}/constructs:{PROJECT_ROOT}"},
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_slurm_app_without_accounting_loads_no_eks_rds_or_pipeline_module(tmp_path: Path) -> None:
    modules = loaded_modules("config/examples/minimal.yaml", tmp_path)
    assert "aws_cdk.aws_sagemaker" in modules  # the probe did build the app
    assert [m for m in NOT_FOR_SLURM if m in modules] == []

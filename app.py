#!/usr/bin/env python3
"""The CDK app: ``cdk synth -c config=path/to/environment.yaml`` (or ``python app.py [CONFIG]``).

An environment file gives the stacks of one environment; a pipeline file (one with a
``pipeline`` key) gives the delivery pipeline in its tooling account, with one Stage per
environment. Reads the config once and validates it before the CDK starts (a pipeline file's
stage configs too): an invalid config prints one ``config error:`` line per problem on stderr
(no traceback) and exits 2. Nothing below this file reads context or environment variables.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from hyperpod_cdk.config import ConfigError, PipelineFileConfig
from hyperpod_cdk.config.loader import load_file

PROJECT_ROOT = Path(__file__).resolve().parent
DEFAULT_CONFIG = "config/default.yaml"


def config_path(argv: list[str]) -> Path:
    """``-c config=...`` (passed by the CDK CLI in CDK_CONTEXT_JSON), else argv[1], else the default."""
    value = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}").get("config")
    path = Path(value if isinstance(value, str) else (argv[1] if len(argv) > 1 else DEFAULT_CONFIG))
    return path if path.is_absolute() else Path.cwd() / path


def main(argv: list[str]) -> int:
    path = config_path(argv)
    try:
        # a pipeline file's stage configs are read and validated with it, once
        config, stages, warnings = load_file(path, PROJECT_ROOT)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return 2
    for warning in warnings:
        print(warning, file=sys.stderr)

    # The CDK (and its JavaScript runtime) starts only for a valid config.
    from stacks.app_builder import build_app, build_pipeline_app

    if isinstance(config, PipelineFileConfig):
        # every stage names its account: CDK_DEFAULT_ACCOUNT (the tooling account) is no default
        app, _ = build_pipeline_app(config, stages, pipeline_file=path, project_root=PROJECT_ROOT)
    else:
        if config.account is None and os.environ.get("CDK_DEFAULT_ACCOUNT"):
            config = config.model_copy(update={"account": os.environ["CDK_DEFAULT_ACCOUNT"]})
        app, _ = build_app(config, project_root=PROJECT_ROOT)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

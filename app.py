#!/usr/bin/env python3
"""The CDK app: ``cdk synth -c config=path/to/environment.yaml`` (or ``python app.py [CONFIG]``).

Reads the config once and validates it before the CDK starts: an invalid
config prints one ``config error:`` line per problem on stderr (no traceback)
and exits 2. Nothing below this file reads context or environment variables.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from hyperpod_cdk.config import ConfigError, EnvironmentConfig
from hyperpod_cdk.config.loader import validate_file

PROJECT_ROOT = Path(__file__).resolve().parent
DEFAULT_CONFIG = "config/default.yaml"


def config_path(argv: list[str]) -> Path:
    """``-c config=...`` (passed by the CDK CLI in CDK_CONTEXT_JSON), else argv[1], else the default."""
    value = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}").get("config")
    path = Path(value if isinstance(value, str) else (argv[1] if len(argv) > 1 else DEFAULT_CONFIG))
    return path if path.is_absolute() else Path.cwd() / path


def main(argv: list[str]) -> int:
    try:
        config, warnings = validate_file(config_path(argv), PROJECT_ROOT)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return 2
    if not isinstance(config, EnvironmentConfig):
        print("config error: pipeline: this file describes a pipeline, which the app does not build yet",
              file=sys.stderr)  # fmt: skip
        return 2
    for warning in warnings:
        print(warning, file=sys.stderr)
    if config.account is None and os.environ.get("CDK_DEFAULT_ACCOUNT"):
        config = config.model_copy(update={"account": os.environ["CDK_DEFAULT_ACCOUNT"]})

    # The CDK (and its JavaScript runtime) starts only for a valid config.
    from stacks.app_builder import build_app

    app, _ = build_app(config, project_root=PROJECT_ROOT)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

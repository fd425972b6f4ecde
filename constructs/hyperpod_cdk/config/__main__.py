"""``python -m hyperpod_cdk.config FILE [--schema]``: validate a config, no synth, no AWS.

Exit 0 with a one-line summary, or exit 2 with one ``config error:`` line per
problem on stderr. ``--schema`` prints the JSON Schema of the environment file
(for editors).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hyperpod_cdk.config.loader import ConfigError, load_file
from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.summary import describe


def main(argv: list[str]) -> int:
    if argv == ["--schema"]:
        print(json.dumps(EnvironmentConfig.model_json_schema(), indent=2))
        return 0
    if len(argv) != 1:
        print("usage: python -m hyperpod_cdk.config CONFIG.yaml | --schema", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        cfg, stages, warnings = load_file(path)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return 2
    for warning in warnings:
        print(warning, file=sys.stderr)
    print(f"{path}: valid: {describe(cfg, stages)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

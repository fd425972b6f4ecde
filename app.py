#!/usr/bin/env python3
"""The CDK app: ``cdk synth -c config=path/to/environment.yaml`` (or ``python app.py [CONFIG]``).

An environment file gives the stacks of one environment; a pipeline file (one with a
``pipeline`` key) gives the delivery pipeline in its tooling account, with one Stage per
environment. Reads the config once and validates it before the CDK starts (a pipeline file's
stage configs too): an invalid config prints one ``config error:`` line per problem on stderr
(no traceback) and exits 2. Nothing below this file reads context or environment variables.
After a successful synth the process ends without the normal teardown (:func:`end_process`).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, cast

PROJECT_ROOT = Path(__file__).resolve().parent
DEFAULT_CONFIG = "config/default.yaml"


USAGE = "usage: python app.py [CONFIG] (or cdk synth -c config=CONFIG)"


def config_path(argv: list[str]) -> Path:
    """``-c config=...`` (passed by the CDK CLI in CDK_CONTEXT_JSON), else argv[1], else the default."""
    value = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}").get("config")
    path = Path(value if isinstance(value, str) else (argv[1] if len(argv) > 1 else DEFAULT_CONFIG))
    return path if path.is_absolute() else Path.cwd() / path


def files_root() -> Path:
    """Where the config's relative paths (lifecycle scripts, users file) are read from: this
    folder, or ``-c project_root=DIR`` (the update notes' base, a git revision exported to a
    temporary folder, synthesized with this code)."""
    value = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}").get("project_root")
    return Path(value) if isinstance(value, str) and value else PROJECT_ROOT


def shown(path: Path) -> str:
    """``path`` as the user likely wrote it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str]) -> int:
    if len(argv) > 2:
        # one config per run: a second file would be ignored without a word
        print(f"{USAGE}; got {len(argv) - 1} arguments: {' '.join(argv[1:])}", file=sys.stderr)
        return 2

    from hyperpod_cdk.config import ConfigError, PipelineFileConfig
    from hyperpod_cdk.config.loader import load_file
    from hyperpod_cdk.config.summary import describe

    path = config_path(argv)
    root = files_root()
    try:
        # a pipeline file's stage configs are read and validated with it, once
        config, stages, warnings = load_file(path, root)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return 2
    for warning in warnings:
        print(warning, file=sys.stderr)
    # what is being synthesized, in one line (the same as `make validate` says)
    print(f"{shown(path)}: {describe(config, stages)}", file=sys.stderr)

    # The CDK (and its JavaScript runtime) starts only for a valid config.
    from stacks.app_builder import build_app, build_pipeline_app

    if isinstance(config, PipelineFileConfig):
        # every stage names its account: CDK_DEFAULT_ACCOUNT (the tooling account) is no default
        app, _ = build_pipeline_app(config, stages, pipeline_file=path, project_root=root)
    else:
        if config.account is None and os.environ.get("CDK_DEFAULT_ACCOUNT"):
            config = config.model_copy(update={"account": os.environ["CDK_DEFAULT_ACCOUNT"]})
        app, _ = build_app(config, project_root=root)
    app.synth()
    return 0


def end_process(code: int) -> NoReturn:
    """Exit with ``code``; after a successful synth, without the normal teardown.

    The cloud assembly is complete once ``app.synth()`` returns. A normal exit would then wait
    for the jsii runtime (the Node.js process that runs aws-cdk-lib) to finish background
    compilation it no longer needs, and tear down every Python object of the aws-cdk-lib
    bindings: together about 0.6 s of each ``cdk synth`` on 2 cores, with nothing left to write
    (``make bench``). Instead, this flushes our output, tells the runtime to exit (it finishes in
    the background and removes its own temporary files), removes the copy of the runtime's
    scripts jsii made for this process, and ends the process. The runtime prints nothing on a
    successful synth of this app (tests/test_app.py).

    Any other code (a config error, before the CDK started) exits normally, and so does a jsii
    whose internals differ from the pinned one's.
    """
    if code != 0:
        sys.exit(code)
    try:
        from jsii._runtime import kernel  # the pinned jsii's private API: see the fallback

        runtime = cast(Any, kernel.provider)._process  # started by the synth
        stdin, scripts = runtime._process.stdin, runtime._ctx_stack
    except (ImportError, AttributeError):
        sys.exit(code)
    atexit.unregister(runtime.stop)
    with contextlib.suppress(OSError):  # a runtime that is already gone needs no exit message
        stdin.write(b'{"exit":0}\n')
        stdin.close()
    scripts.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    # A synth is one short process: the cyclic garbage collector would only re-scan, again and
    # again, the objects of the aws-cdk-lib bindings being imported (about 0.1 s) to free about
    # 1 MB of cycles (the pipeline example) that the exit frees anyway.
    gc.disable()
    end_process(main(sys.argv))

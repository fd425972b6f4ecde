"""What the preflight and status commands share: arguments, the config, the session, and the
one-line exit when AWS cannot be used (a broken AWS CLI configuration, no credentials, an expired
token, no network)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hyperpod_cdk.config import ConfigError, EnvironmentConfig, load_environment
from hyperpod_ops.aws import ClientFactory, session_clients, unavailable_reason

# The body of a command: the config, the clients of its region and the project root -> exit code.
Command = Callable[[EnvironmentConfig, ClientFactory, Path], int]
# Builds the clients of a region (and optional profile); tests pass stubbed ones.
MakeClients = Callable[[str, str | None], ClientFactory]

EXIT_UNUSABLE = 2
# How these commands take a profile, in the line that says the credentials are missing.
PROFILE_OPTION = "--profile NAME (make: PROFILE=NAME)"


def run_command(
    prog: str,
    description: str,
    argv: Sequence[str],
    command: Command,
    make_clients: MakeClients = session_clients,
    check_account: bool = True,
) -> int:
    """Parse ``CONFIG [--profile P] [--project-root DIR]``, load the config, run ``command``.

    Exit 2 with ``config error:`` lines for an invalid config, and with one line
    ``<prog>: <reason>`` on stderr when AWS cannot be used or, when the config names its
    ``account``, the credentials are of another one (a dev/prod pair may share the cluster
    name: the command would act on the other account's cluster; security review L5); no
    traceback for any. ``check_account=False``: the command reports the account itself
    (preflight).
    """
    parser = argparse.ArgumentParser(prog=f"python -m hyperpod_ops.{prog}", description=description)
    parser.add_argument(
        "config",
        help="the environment file: YAML, or the JSON a composed app writes with "
        "hyperpod_cdk.NodeSettings.write_environment_file (docs/library.md)",
    )
    parser.add_argument("--profile", default=None, help="AWS profile (default: the usual chain)")
    parser.add_argument(
        "--project-root",
        type=Path,
        default=Path.cwd(),
        help="the app's folder: lifecycle scripts, cdk.json, cdk.out (default: the cwd)",
    )
    args = parser.parse_args(list(argv))
    try:
        config = load_environment(args.config, args.project_root)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        clients = make_clients(config.region, args.profile)
        if check_account and config.account is not None:
            identity = clients("sts").get_caller_identity()
            account, caller = str(identity["Account"]), str(identity.get("Arn", "the caller"))
            if account != config.account:
                print(
                    f"{prog}: the credentials are of account {account} ({caller}); "
                    f"{args.config} is account {config.account}: use credentials of "
                    f"{config.account} ({PROFILE_OPTION})",
                    file=sys.stderr,
                )
                return EXIT_UNUSABLE
        return command(config, clients, args.project_root)
    except Exception as exc:
        # AwsUnavailable from the session, or botocore's error from a call of the command
        reason = unavailable_reason(exc, PROFILE_OPTION)
        if reason is None:
            raise
        print(f"{prog}: {reason}", file=sys.stderr)
        return EXIT_UNUSABLE

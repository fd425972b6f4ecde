"""``python -m hyperpod_ops.credentials COMMAND CONFIG [CDK ARGS...]``: before ``make deploy``,
``make diff`` and ``make destroy`` run the CDK CLI, check that the AWS credentials can be used.

Without this, the CDK CLI answers missing or expired credentials with its own generic message
(twice for a diff) after synthesizing everything. This reads the config (for its region and
account), takes ``--profile`` from the CDK arguments as the CDK CLI would, loads the credentials
and asks STS who they are: one line on stderr and exit 2 when that fails; else one line naming the
caller (and, when the config deploys to another account, that its bootstrap roles must trust the
caller's), exit 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hyperpod_cdk.config import ConfigError
from hyperpod_cdk.config.loader import load_file
from hyperpod_ops.aws import (
    describe_error,
    is_client_error,
    session_clients,
    unavailable_reason,
)
from hyperpod_ops.cli import EXIT_UNUSABLE, MakeClients

# How `make deploy`/`diff`/`destroy` take a profile, in the line that says the credentials are missing.
PROFILE_OPTION = "CDK_ARGS='--profile NAME'"


def _profile(cdk_args: Sequence[str]) -> str | None:
    """The ``--profile`` of the CDK CLI's arguments (the last one wins, as in the CLI)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--profile")
    known, _ = parser.parse_known_args(list(cdk_args))
    return None if known.profile is None else str(known.profile)


def check(
    command: str,
    config_file: str,
    cdk_args: Sequence[str],
    make_clients: MakeClients = session_clients,
    project_root: Path | None = None,
) -> int:
    """The check; ``make_clients`` builds the boto3 clients of a region (tests stub it)."""
    try:
        config, _, _ = load_file(config_file, project_root)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return EXIT_UNUSABLE
    sts = None
    try:
        sts = make_clients(config.region, _profile(cdk_args))("sts")
        identity = sts.get_caller_identity()
    except Exception as exc:
        reason = unavailable_reason(exc, PROFILE_OPTION)
        if reason is None and is_client_error(exc):
            reason = describe_error(exc, [sts] if sts else [])
        if reason is None:
            raise
        print(f"{command}: {reason}", file=sys.stderr)
        return EXIT_UNUSABLE
    account, caller = str(identity["Account"]), str(identity["Arn"])
    line = f"{command}: as {caller} (account {account}, {config.region})"
    if config.account is not None and config.account != account:
        # legitimate (a central deployment account), if the target's bootstrap trusts this one
        line += (
            f"; {config_file} deploys to account {config.account}: the CDK CLI assumes its "
            f"bootstrap roles, which must trust account {account} (cdk bootstrap --trust {account})"
        )
    print(line, file=sys.stderr)
    return 0


def main(argv: Sequence[str], make_clients: MakeClients = session_clients) -> int:
    if len(argv) < 2:
        print(
            "usage: python -m hyperpod_ops.credentials COMMAND CONFIG [CDK ARGS...]",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    command, config_file, *cdk_args = argv
    return check(command, config_file, cdk_args, make_clients)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

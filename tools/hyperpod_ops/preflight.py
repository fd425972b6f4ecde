"""``python -m hyperpod_ops.preflight CONFIG`` (``make preflight``): read-only checks of the
target account before a deploy.

One line per check (``PASS``, ``FAIL`` with how to fix it, ``SKIP`` with why), then a summary.
Exit 0 when nothing failed, 1 when a check failed, 2 when the config is invalid or AWS cannot be
used (no credentials, an expired token, no network: one line on stderr). An AWS error inside a
check (AccessDenied, throttling) fails that check and names the API; the others still run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops import (
    accounting,
    adopted,
    capacity,
    deploy_target,
    exporter_images,
    grafana,
    inference,
    instance_groups,
    observability,
    shared_cluster,
    task_governance,
)
from hyperpod_ops.addon_configuration import check_addon_configuration
from hyperpod_ops.addons import check_addon_upgrades, check_addon_versions
from hyperpod_ops.alerts import check_alerts_topic, check_rollback_alarms
from hyperpod_ops.aws import (
    ClientFactory,
    describe_error,
    error_code,
    is_client_error,
    session_clients,
    unavailable_reason,
)
from hyperpod_ops.check import Check, failed, format_check, skipped, summary
from hyperpod_ops.cli import MakeClients, run_command

# Error codes of a missing permission (EC2 says UnauthorizedOperation, most others AccessDenied).
_ACCESS_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


@dataclass(frozen=True)
class Step:
    """A group of checks: its name (used when an AWS error stops it), the services it calls."""

    name: str
    services: tuple[str, ...]
    run: Callable[[], list[Check]]


def _steps(
    config: EnvironmentConfig, clients: ClientFactory, account: str, project_root: Path
) -> list[Step]:
    target = deploy_target.bootstrap_target(config, project_root)
    return [
        Step(
            "availability zones",
            ("ec2",),
            lambda: capacity.check_availability_zones(config, clients("ec2")),
        ),
        Step(
            "quotas",
            ("service-quotas",),
            lambda: capacity.check_quotas(config, clients("service-quotas")),
        ),
        Step(
            "training plans",
            ("sagemaker",),
            lambda: capacity.check_training_plans(config, clients("sagemaker")),
        ),
        Step("vpc", ("ec2",), lambda: adopted.check_vpc(config, clients("ec2"))),
        Step("subnets", ("ec2",), lambda: adopted.check_subnets(config, clients("ec2"))),
        Step(
            "security groups",
            ("ec2",),
            lambda: adopted.check_security_groups(config, clients("ec2")),
        ),
        Step(
            "file system",
            ("fsx", "ec2"),
            lambda: adopted.check_file_system(config, clients("fsx"), clients("ec2")),
        ),
        Step("eks cluster", ("eks",), lambda: adopted.check_eks_cluster(config, clients("eks"))),
        Step(
            "eks add-ons",
            ("eks",),
            lambda: [
                *check_addon_versions(config, clients("eks")),
                *check_addon_upgrades(config, clients("eks")),
            ],
        ),
        Step(
            "eks add-on configuration",
            ("eks",),
            lambda: check_addon_configuration(config, clients("eks"), account),
        ),
        Step(
            "shared cluster",
            ("eks", "sts"),
            lambda: shared_cluster.check_shared_cluster(config, clients("eks"), clients("sts")),
        ),
        Step(
            "task governance",
            ("cloudformation", "eks"),
            lambda: task_governance.check_task_governance(
                config, clients("cloudformation"), clients("eks")
            ),
        ),
        Step(
            "inference",
            ("iam", "eks", "ec2", "s3"),
            lambda: inference.check_inference(config, clients),
        ),
        Step(
            "health agent image",
            ("ecr",),
            lambda: shared_cluster.check_agent_image(config, clients("ecr")),
        ),
        Step(
            "exporter images",
            ("ecr",),
            lambda: exporter_images.check_exporter_images(config, clients("ecr")),
        ),
        Step(
            "accounting database engine",
            ("rds",),
            lambda: accounting.check_engine_version(config, clients("rds")),
        ),
        Step(
            "accounting database AMI",
            ("ec2", "sagemaker"),
            lambda: instance_groups.check_accounting_ami(
                config, clients("ec2"), clients("sagemaker")
            ),
        ),
        Step("ebs keys", ("kms",), lambda: instance_groups.check_ebs_keys(config, clients("kms"))),
        Step(
            "rollback alarms",
            ("cloudwatch",),
            lambda: check_rollback_alarms(config, clients("cloudwatch")),
        ),
        Step(
            "alerts topic",
            ("sns", "kms"),
            lambda: check_alerts_topic(config, clients("sns"), clients("kms")),
        ),
        Step(
            "observability",
            ("sagemaker", "amp"),
            lambda: observability.check_observability(config, clients("sagemaker"), clients("amp")),
        ),  # fmt: skip
        Step(
            "grafana",
            ("sso-admin", "grafana"),
            lambda: grafana.check_grafana(config, clients("sso-admin"), clients("grafana")),
        ),
        Step(
            "slurm partitions",
            ("sagemaker",),
            lambda: instance_groups.check_partitions(config, clients("sagemaker")),
        ),
        Step(
            "cluster name",
            ("sagemaker", "cloudformation"),
            lambda: deploy_target.check_cluster(
                config, clients("sagemaker"), clients("cloudformation")
            ),
        ),
        Step(
            "cdk bootstrap",
            ("cloudformation", "ssm"),
            lambda: [
                deploy_target.check_bootstrap(
                    config,
                    clients("cloudformation"),
                    clients("ssm"),
                    account=account,
                    target=target,
                )
            ],
        ),
    ]


def _aws_failure(
    name: str, exc: BaseException, clients: ClientFactory, services: Sequence[str]
) -> Check:
    """A check stopped by an AWS error: the API and the error, and what to do."""
    detail = describe_error(exc, [clients(service) for service in services])
    if error_code(exc) in _ACCESS_DENIED:
        fix = "allow the caller the read-only actions listed in docs/operations.md (Preflight), then rerun"
    else:
        fix = "rerun; if it persists, check the AWS Health Dashboard for the region"
    return failed(name, detail, fix)


def _run_step(step: Step, clients: ClientFactory) -> list[Check]:
    try:
        return step.run()
    except Exception as exc:
        # no credentials, an expired token or no network: the whole run stops (one line)
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        return [_aws_failure(step.name, exc, clients, step.services)]


def run_preflight(
    config: EnvironmentConfig, clients: ClientFactory, *, project_root: Path
) -> list[Check]:
    """Every preflight check of ``config`` against the account of ``clients``, in order.

    :raises Exception: the botocore error when AWS cannot be used at all (see
        :func:`hyperpod_ops.aws.unavailable_reason`).
    """
    sts = clients("sts")
    try:
        identity = sts.get_caller_identity()
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        account_check = _aws_failure("account", exc, clients, ("sts",))
        account = config.account or "<account>"
    else:
        account_check = deploy_target.check_account(
            config, str(identity["Account"]), str(identity["Arn"])
        )
        if account_check.failed:
            return [
                account_check,
                skipped("other checks", "not run: they would inspect the wrong account"),
            ]
        account = config.account or str(identity["Account"])
    checks = [account_check]
    for step in _steps(config, clients, account, project_root):
        checks.extend(_run_step(step, clients))
    return checks


def _command(config: EnvironmentConfig, clients: ClientFactory, project_root: Path) -> int:
    checks = run_preflight(config, clients, project_root=project_root)
    for check in checks:
        print(format_check(check))
    print(f"preflight of {config.name} in {config.region}: {summary(checks)}")
    return 1 if any(check.failed for check in checks) else 0


def main(argv: Sequence[str], make_clients: MakeClients = session_clients) -> int:
    """The command line; ``make_clients`` builds the boto3 clients of a region (tests stub it)."""
    return run_command(
        "preflight",
        "Read-only checks of the target AWS account before deploying CONFIG.",
        argv,
        _command,
        make_clients,
        # preflight reports the account among its checks (deploy_target.check_account)
        check_account=False,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

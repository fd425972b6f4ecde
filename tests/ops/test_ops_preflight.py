"""The preflight runner and command: order, exit codes, one line per check, AWS errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import botocore.exceptions
import pytest
from ops_testkit import (
    ACCOUNT,
    IAM_PREFIXES,
    PROJECT_ROOT,
    StubbedAws,
    by_name,
    environment,
    healthy_account,
    identity,
)
from stack_testkit import SHIPPED_CONFIGS, config_id

from hyperpod_cdk.config import load_environment
from hyperpod_ops import preflight
from hyperpod_ops.preflight import run_preflight


def _main(aws: StubbedAws, path: Path | str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], list[str]]:  # fmt: skip
    code = preflight.main([str(path), "--project-root", str(PROJECT_ROOT)], aws.make_clients)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_every_shipped_config_passes_against_a_healthy_account(
    aws: StubbedAws, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_environment(path, PROJECT_ROOT)
    healthy_account(aws, config)
    code, out, err = _main(aws, path, capsys)
    assert code == 0, out
    assert err == []
    assert not [line for line in out if line.startswith("FAIL")]
    assert out[-1].startswith(f"preflight of {config.name} in us-west-2: ")
    assert " 0 failed" in out[-1]
    assert all(line.split()[0] in ("PASS", "SKIP") for line in out[:-1])
    from hyperpod_ops.aws import READ_ONLY_ACTIONS

    assert "sts:GetCallerIdentity" in aws.called
    assert aws.called <= set(READ_ONLY_ACTIONS), (
        "the action list of docs/operations.md misses a call"
    )


def test_the_checks_of_an_adopting_config(aws: StubbedAws) -> None:
    config = environment("existing-vpc-fsx")
    healthy_account(aws, config)
    checks = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))
    assert list(checks) == [
        "account",
        "availability zone usw2-az2",
        "quota ml.g5.12xlarge",
        "quota ml.m5.2xlarge",
        "training plans",
        "vpc vpc-0a1b2c3d4e5f67890",
        "subnet subnet-0a1b2c3d4e5f67890",
        "security group sg-0a1b2c3d4e5f67890",
        "file system fs-0a1b2c3d4e5f67890",
        "eks cluster",
        "eks add-ons",
        "shared cluster",
        "task governance",
        "inference",
        "health agent image",
        "exporter images",
        "accounting database engine",
        "accounting database AMI",
        "ebs keys",
        "rollback alarms",
        "alerts topic",
        "observability",
        "grafana",
        "slurm partitions",
        "cluster name shared-vpc",
        "cdk bootstrap",
    ]
    assert checks["account"].outcome == "skip"  # the file names no account
    assert checks["file system fs-0a1b2c3d4e5f67890"].outcome == "pass"


def test_the_checks_of_an_adopted_eks_cluster(aws: StubbedAws) -> None:
    config = environment("eks-existing-cluster", {"eks.addons.fsx_csi_driver": True,
                                                  "storage.fsx.enabled": True})  # fmt: skip
    # fsx enabled without file_system_id: the app creates it in the adopted VPC
    healthy_account(aws, config)
    checks = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))
    assert checks["account"].outcome == "pass"
    assert checks["eks authentication mode"].outcome == "pass"
    assert checks["eks add-on aws-fsx-csi-driver"].outcome == "pass"


def test_a_failed_check_exits_1_with_its_fix(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    path = PROJECT_ROOT / "config/examples/minimal.yaml"
    config = load_environment(path, PROJECT_ROOT)
    healthy_account(aws, config, leave_out={"bootstrap"})
    aws.error("cloudformation", "describe_stacks", "ValidationError", {"StackName": "CDKToolkit"},
              message="Stack with id CDKToolkit does not exist")  # fmt: skip
    code, out, _ = _main(aws, path, capsys)
    assert code == 1
    (line,) = [line for line in out if line.startswith("FAIL")]
    assert line.startswith("FAIL  cdk bootstrap: no CDKToolkit stack in")
    assert f"; fix: source scripts/env.sh && cdk bootstrap aws://{ACCOUNT}/us-west-2" in line
    assert "1 failed" in out[-1]


def test_the_wrong_account_stops_the_run(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    identity(aws, "444455556666")
    code, out, _ = _main(aws, PROJECT_ROOT / "config/examples/full.yaml", capsys)
    assert code == 1
    assert out[0].startswith("FAIL  account: the credentials are of account 444455556666")
    assert out[1].startswith("SKIP  other checks")


def test_access_denied_fails_that_check_names_the_api_and_the_rest_runs(aws: StubbedAws) -> None:
    config = environment("default")
    healthy_account(aws, config, leave_out={"quotas"})
    aws.error("service-quotas", "list_service_quotas", "AccessDeniedException",
              {"ServiceCode": "sagemaker"}, message="User: alice is not authorized")  # fmt: skip
    checks = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))
    check = checks["quotas"]
    assert check.outcome == "fail"
    assert check.detail.startswith("servicequotas:ListServiceQuotas returned AccessDeniedException")
    assert check.fix and "docs/operations.md" in check.fix
    assert checks["cdk bootstrap"].outcome == "pass"


def test_ec2_unauthorized_operation_names_the_ec2_action(aws: StubbedAws) -> None:
    config = environment("default")
    healthy_account(aws, config, leave_out={"availability_zones"})
    aws.error("ec2", "describe_availability_zones", "UnauthorizedOperation")
    checks = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))
    assert checks["availability zones"].detail.startswith(
        "ec2:DescribeAvailabilityZones returned UnauthorizedOperation"
    )


def test_an_expired_token_stops_with_one_line_and_exit_2(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    identity(aws)
    aws.error("ec2", "describe_availability_zones", "ExpiredToken",
              message="The security token included in the request is expired")  # fmt: skip
    code, out, err = _main(aws, PROJECT_ROOT / "config/examples/full.yaml", capsys)
    assert code == 2
    assert out == []
    assert len(err) == 1 and err[0].startswith(
        "preflight: AWS rejected the credentials (ExpiredToken"
    )


def test_a_rejected_identity_call_stops_with_one_line(
    aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.error("sts", "get_caller_identity", "InvalidClientTokenId", {}, status=403)
    code, out, err = _main(aws, PROJECT_ROOT / "config/default.yaml", capsys)
    assert (code, out, len(err)) == (2, [], 1)
    assert "InvalidClientTokenId" in err[0]


class _NoCredentials:
    """A client whose every call fails the way botocore does without credentials."""

    def __getattr__(self, name: str) -> Any:
        def call(**_: Any) -> Any:
            raise botocore.exceptions.NoCredentialsError()

        return call


@pytest.mark.parametrize(
    "error",
    [
        botocore.exceptions.NoCredentialsError(),
        botocore.exceptions.PartialCredentialsError(
            provider="env", cred_var="AWS_SECRET_ACCESS_KEY"
        ),
        botocore.exceptions.TokenRetrievalError(provider="sso", error_msg="expired"),
        botocore.exceptions.EndpointConnectionError(
            endpoint_url="https://sts.us-west-2.amazonaws.com"
        ),
    ],
    ids=["none", "partial", "sso", "offline"],
)
def test_unusable_credentials_give_one_line(
    error: Exception, capsys: pytest.CaptureFixture[str]
) -> None:
    class Failing:
        def get_caller_identity(self) -> Any:
            raise error

    code = preflight.main(
        [str(PROJECT_ROOT / "config/default.yaml"), "--project-root", str(PROJECT_ROOT)],
        lambda region, profile: lambda service: Failing(),
    )
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("preflight: ")
    assert "Traceback" not in err


def test_an_invalid_config_exits_2_with_config_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nregion: us-west-2\n")
    code = preflight.main([str(bad)], lambda region, profile: _NoCredentials())
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("config error: ")


def test_output_lines_fold_multi_line_aws_messages(aws: StubbedAws) -> None:
    from hyperpod_ops.check import Check, format_check

    line = format_check(Check("x", "fail", "first\nsecond", "do\nthis"))
    assert line == "FAIL  x: first second; fix: do this"


def test_the_documented_actions_are_real_read_only_operations() -> None:
    import botocore.session

    from hyperpod_ops.aws import READ_ONLY_ACTIONS

    session = botocore.session.get_session()
    prefixes = {
        "sts": "sts",
        "ec2": "ec2",
        "servicequotas": "service-quotas",
        "sagemaker": "sagemaker",
        "fsx": "fsx",
        "eks": "eks",
        "ecr": "ecr",
        "kms": "kms",
        "rds": "rds",
        "cloudformation": "cloudformation",
        "ssm": "ssm",
        "cloudwatch": "cloudwatch",
        "sns": "sns",
        "iam": "iam",
        "s3": "s3",
        "sso": "sso-admin",
        "grafana": "grafana",
        "aps": "amp",
    }
    for action in READ_ONLY_ACTIONS:
        prefix, operation = action.split(":")
        model = session.get_service_model(prefixes[prefix])
        assert IAM_PREFIXES.get(model.signing_name, model.signing_name) == prefix
        assert operation in model.operation_names, action
        assert operation.startswith(("Describe", "List", "Get", "BatchGet")), action


def test_the_docs_list_every_action_the_commands_call() -> None:
    import re

    from hyperpod_ops.aws import READ_ONLY_ACTIONS

    readme = (PROJECT_ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    start = readme.index("The caller needs these read-only")
    listed = re.findall(r"`([a-z0-9-]+:[A-Za-z]+)`", readme[start : readme.index("\n\n", start)])
    assert sorted(listed) == sorted(READ_ONLY_ACTIONS)

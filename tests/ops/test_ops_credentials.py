"""The credentials check before `make deploy`, `make diff` and `make destroy` run the CDK CLI."""

from __future__ import annotations

import pytest
from ops_testkit import ACCOUNT, PROJECT_ROOT, StubbedAws, identity

from hyperpod_ops import credentials

CONFIG = "config/default.yaml"  # no account: the deploying account
PIPELINE = "config/examples/pipeline.yaml"  # the tooling account 111122223333


@pytest.fixture(autouse=True)
def _in_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT_ROOT)


def test_usable_credentials_name_the_caller(capsys: pytest.CaptureFixture[str]) -> None:
    aws = StubbedAws()
    identity(aws)
    assert credentials.main(["deploy", CONFIG], aws.make_clients) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"deploy: as arn:aws:sts::{ACCOUNT}:assumed-role/Admin/alice (account {ACCOUNT}, us-west-2)"
    ]
    aws.verify()


def test_another_account_is_named_with_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    aws = StubbedAws()
    identity(aws, account="999988887777")
    assert credentials.main(["deploy", PIPELINE], aws.make_clients) == 0
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith(
        f"; {PIPELINE} deploys to account 111122223333: the CDK CLI assumes its bootstrap roles, "
        "which must trust account 999988887777 (cdk bootstrap --trust 999988887777)"
    )


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("ExpiredToken", "diff: AWS rejected the credentials (ExpiredToken: it failed); "),
        ("Throttling", "diff: AWS kept throttling sts:GetCallerIdentity through 5 attempts"),
        ("RegionDisabledException", "diff: sts:GetCallerIdentity returned RegionDisabledException"),
    ],
)
def test_unusable_credentials_are_one_line_and_exit_2(
    code: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    aws = StubbedAws()
    aws.error("sts", "get_caller_identity", code, {}, message="it failed")
    assert credentials.main(["diff", CONFIG], aws.make_clients) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(words)
    if code == "ExpiredToken":
        assert "CDK_ARGS='--profile NAME'" in line


def test_the_profile_is_taken_from_the_cdk_arguments() -> None:
    seen: list[str | None] = []
    aws = StubbedAws()
    identity(aws)

    def make_clients(region: str, profile: str | None) -> StubbedAws:
        seen.append(profile)
        return aws

    args = ["destroy", CONFIG, "--require-approval", "never", "--profile", "prod", "-v"]
    assert credentials.main(args, make_clients) == 0
    assert seen == ["prod"]


def test_an_invalid_config_stops_before_any_call(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    assert credentials.main(["deploy", str(bad)], StubbedAws().make_clients) == 2
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("config error: ") for line in err)

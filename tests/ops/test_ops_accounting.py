"""Preflight: the region offers the pinned RDS for MySQL release of the accounting database."""

from __future__ import annotations

from ops_testkit import StubbedAws, engine_versions, environment

from hyperpod_cdk import facts
from hyperpod_ops.accounting import check_engine_version


def test_the_pinned_release_is_offered() -> None:
    aws = StubbedAws()
    engine_versions(aws, ["8.4.7", facts.ACCOUNTING_MYSQL_VERSION])
    (check,) = check_engine_version(environment("full"), aws("rds"))
    assert check.outcome == "pass"
    assert check.detail == f"RDS for MySQL {facts.ACCOUNTING_MYSQL_VERSION} is offered in us-west-2"


def test_a_release_the_region_lacks_fails_with_the_newest_offered() -> None:
    aws = StubbedAws()
    engine_versions(aws, ["8.4.5", "8.4.10", "8.4.6"])
    (check,) = check_engine_version(environment("full"), aws("rds"))
    assert check.failed
    assert "(offered 8.4 releases: 8.4.10, 8.4.6, 8.4.5)" in check.detail
    assert "ACCOUNTING_MYSQL_VERSION" in check.fix


def test_without_the_database_nothing_is_asked() -> None:
    (check,) = check_engine_version(environment("minimal"), StubbedAws()("rds"))
    assert check.outcome == "skip"

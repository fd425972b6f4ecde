"""Preflight check: the region offers the RDS for MySQL release of the accounting database."""

from __future__ import annotations

from typing import Any

from hyperpod_cdk import facts
from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.aws import paginate
from hyperpod_ops.check import Check, failed, passed, skipped

NAME = "accounting database engine"


def check_engine_version(config: EnvironmentConfig, rds: Any) -> list[Check]:
    """``rds:DescribeDBEngineVersions`` lists MySQL :data:`facts.ACCOUNTING_MYSQL_VERSION`."""
    if not config.is_slurm or not config.cluster.slurm_settings.accounting_database:
        return [skipped(NAME, "cluster.slurm.accounting_database is off")]
    pinned = facts.ACCOUNTING_MYSQL_VERSION
    offered = [
        str(v.get("EngineVersion"))
        for v in paginate(
            rds,
            "describe_db_engine_versions",
            "DBEngineVersions",
            Engine="mysql",
            EngineVersion=facts.ACCOUNTING_MYSQL_MAJOR_VERSION,
        )
    ]
    if pinned in offered:
        return [passed(NAME, f"RDS for MySQL {pinned} is offered in {config.region}")]
    newest = ", ".join(sorted(offered, key=_key, reverse=True)[:3]) or "none"
    return [
        failed(
            NAME,
            f"RDS for MySQL {pinned} is not offered in {config.region} (offered "
            f"{facts.ACCOUNTING_MYSQL_MAJOR_VERSION} releases: {newest})",
            "pin an offered release in hyperpod_cdk/facts/__init__.py (ACCOUNTING_MYSQL_VERSION)",
        )
    ]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("-")[0].split("."))

"""Preflight checks of ``rollback_alarms``: the named alarms exist before an update needs them.

A rolling AMI update or patch reads its rollback alarms (``cloudwatch:DescribeAlarms``) while it
runs; a misspelt name is found only then, in the middle of the rollout. ``auto`` alarms are the
app's own (created before the cluster) and are not checked here.
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.alerts import AUTO
from hyperpod_cdk.ops.check import Check, failed, passed, skipped

ROLLBACK_ALARMS = "rollback alarms"
# DescribeAlarms takes at most 100 AlarmNames per call (botocore 1.44.5 ``AlarmNames`` max 100)
_PAGE = 100


def named_rollback_alarms(config: EnvironmentConfig) -> dict[str, list[str]]:
    """Each named (not ``auto``) rollback alarm -> the key paths that name it, in file order."""
    named: dict[str, list[str]] = {}
    for index, group in enumerate(config.cluster.instance_groups):
        for key in ("scheduled_update", "auto_patch"):
            update = getattr(group, key)
            if update is None or update.rollback_alarms == AUTO:
                continue
            for position, name in enumerate(update.rollback_alarms):
                path = f"cluster.instance_groups[{index}].{key}.rollback_alarms[{position}]"
                named.setdefault(name, []).append(path)
    return named


def check_rollback_alarms(config: EnvironmentConfig, cloudwatch: Any) -> list[Check]:
    """Every named rollback alarm exists in the config's account and region (metric and
    composite alarms both count: AutoRollbackConfiguration names either)."""
    named = named_rollback_alarms(config)
    if not named:
        return [skipped(ROLLBACK_ALARMS, "no group names rollback alarms (none, or auto)")]
    names = list(named)
    found: set[str] = set()
    for start in range(0, len(names), _PAGE):
        page = names[start : start + _PAGE]
        answer = cloudwatch.describe_alarms(
            AlarmNames=page, AlarmTypes=["MetricAlarm", "CompositeAlarm"], MaxRecords=_PAGE
        )
        for kind in ("MetricAlarms", "CompositeAlarms"):
            found |= {alarm["AlarmName"] for alarm in answer.get(kind, [])}
    missing = [name for name in names if name not in found]
    if missing:
        where = "; ".join(f"{name!r} ({', '.join(named[name])})" for name in missing)
        return [
            failed(
                ROLLBACK_ALARMS,
                f"no such alarm in {config.region}: {where}",
                "create the alarms first, fix the names, or use rollback_alarms: auto",
            )
        ]
    return [passed(ROLLBACK_ALARMS, f"{len(names)} alarm(s) exist: {', '.join(names)}")]

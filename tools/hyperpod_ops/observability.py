"""Preflight checks of ``observability``: what the deploy relies on before it runs.

- Slurm: the pinned ``sagemaker-observability`` extension version is one HyperPod offers
  (``sagemaker:ListClusterExtensionVersions``: versions no longer offered for new installations
  are left out of that list, and CreateClusterExtension would fail an hour into the deploy).
- An adopted workspace (``prometheus_workspace_arn``) exists and is ACTIVE
  (``aps:DescribeWorkspace``): the rule groups and remote write need it.
- Whether that workspace has an alert manager definition (``aps:DescribeAlertManagerDefinition``):
  the app adds rule groups to an adopted workspace but never its alert manager, so without one
  the rules fire with nowhere to go; the check says how to route them (docs/observability.md).

Facts: botocore 1.44.5 (pinned) ``sagemaker`` ``ListClusterExtensionVersions`` (ExtensionName,
MaxResults 1-100, NextToken; ``ExtensionVersions[].ExtensionVersion``) and ``amp``
``DescribeWorkspace`` (``workspace.status.statusCode`` CREATING | ACTIVE | UPDATING | DELETING |
CREATION_FAILED), ``DescribeAlertManagerDefinition`` (ResourceNotFoundException when the
workspace has none; ``alertManagerDefinition.status.statusCode``), read 2026-11-25.
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.observability import (
    EXTENSION_NAME,
    EXTENSION_VERSION_SOURCE,
    ObservabilityConfig,
    extension_version,
    observability_settings,
)
from hyperpod_ops.aws import call_or_none
from hyperpod_ops.check import Check, failed, passed, skipped

OBSERVABILITY = "observability"
EXTENSION_CHECK = "observability extension version"
WORKSPACE_CHECK = "prometheus workspace"
ALERT_MANAGER_CHECK = "prometheus alert manager"
_NOT_FOUND = ("ResourceNotFoundException",)
_ROUTING = (
    "add an alert manager definition to the workspace with an sns_configs receiver for the "
    'alerts topic (output AlertsTopicArn; docs/observability.md, "Route alerts from an adopted '
    'workspace")'
)


def check_observability(config: EnvironmentConfig, sagemaker: Any, aps: Any) -> list[Check]:
    """The checks of ``observability`` (one skip when metrics are off)."""
    settings = observability_settings(config)
    if settings is None:
        return [skipped(OBSERVABILITY, "metrics are off (observability.enabled is not set)")]
    checks: list[Check] = []
    if config.is_slurm:
        checks.append(_check_extension_version(settings, sagemaker))
    if settings.prometheus_workspace_arn:
        checks.extend(_check_workspace(settings.prometheus_workspace_arn, aps))
    if not checks:
        checks.append(
            passed(OBSERVABILITY, "the app creates the workspace and the observability add-on")
        )
    return checks


def offered_versions(sagemaker: Any, name: str = EXTENSION_NAME) -> list[str]:
    """The versions of extension ``name`` that can be installed, highest first."""
    versions: list[str] = []
    params: dict[str, Any] = {"ExtensionName": name, "MaxResults": 100}
    while True:
        answer = sagemaker.list_cluster_extension_versions(**params)
        versions.extend(v["ExtensionVersion"] for v in answer.get("ExtensionVersions", []))
        token = answer.get("NextToken")
        if not token:
            return versions
        params["NextToken"] = token


def _check_extension_version(settings: ObservabilityConfig, sagemaker: Any) -> Check:
    wanted = extension_version(settings)
    key = (
        "observability.extension_version"
        if settings.extension_version
        else f"the pin ({EXTENSION_VERSION_SOURCE})"
    )
    versions = offered_versions(sagemaker)
    if wanted in versions:
        return passed(EXTENSION_CHECK, f"{EXTENSION_NAME} {wanted} is offered")
    if not versions:
        return failed(
            EXTENSION_CHECK,
            f"HyperPod offers no {EXTENSION_NAME} versions in this region",
            "set observability.enabled: false (or use a region that offers the extension)",
        )
    return failed(
        EXTENSION_CHECK,
        f"{EXTENSION_NAME} {wanted} ({key}) is not offered; offered: {', '.join(versions)}",
        f"set observability.extension_version to one of them, e.g. {versions[0]}",
    )


def _check_workspace(arn: str, aps: Any) -> list[Check]:
    workspace_id = arn.rsplit("/", 1)[-1]
    answer = call_or_none(aps.describe_workspace, _NOT_FOUND, workspaceId=workspace_id)
    if answer is None:
        return [
            failed(
                WORKSPACE_CHECK,
                f"no workspace {workspace_id} (observability.prometheus_workspace_arn)",
                "fix the ARN, or leave prometheus_workspace_arn out and let the app create one",
            )
        ]
    status = answer["workspace"]["status"]["statusCode"]
    if status != "ACTIVE":
        return [
            failed(
                WORKSPACE_CHECK,
                f"workspace {workspace_id} is {status}, not ACTIVE",
                "wait until it is ACTIVE (or fix observability.prometheus_workspace_arn), then "
                "rerun",
            )
        ]
    checks = [passed(WORKSPACE_CHECK, f"workspace {workspace_id} is ACTIVE")]
    definition = call_or_none(
        aps.describe_alert_manager_definition, _NOT_FOUND, workspaceId=workspace_id
    )
    if definition is None:
        checks.append(
            skipped(
                ALERT_MANAGER_CHECK,
                f"workspace {workspace_id} has no alert manager definition: its alert rules "
                f"will fire with nowhere to go; {_ROUTING}",
            )
        )
    else:
        state = definition["alertManagerDefinition"]["status"]["statusCode"]
        checks.append(
            passed(
                ALERT_MANAGER_CHECK,
                f"workspace {workspace_id} routes alerts with its own definition ({state}; the "
                f"app leaves it as it is): if it does not send to the alerts topic, {_ROUTING}",
            )
        )
    return checks

"""Preflight checks of ``observability.grafana``: the region has Amazon Managed Grafana and offers
the pinned Grafana version, and IAM Identity Center, which the workspace signs users in with, is
enabled.

Facts (read 2026-11-25): a workspace with ``AuthenticationProviders: [AWS_SSO]`` needs IAM
Identity Center enabled in the organization or the account (Amazon Managed Grafana user guide,
"Authenticate users in Amazon Managed Grafana workspaces"; HYPERPOD_FACTS "Observability and
events"). ``sso-admin:ListInstances`` (IAM action ``sso:ListInstances``) "lists the details of the
organization and account instances of IAM Identity Center that were created in or visible to
the account calling this API" (IAM Identity Center API reference, ListInstances); pinned botocore
1.44.5 ``sso-admin`` model: ``Instances[]{InstanceArn, IdentityStoreId, OwnerAccountId, Status}``.
``grafana:ListVersions`` without a workspace id lists the Grafana versions a new workspace may
use (Amazon Managed Grafana API reference, ListVersions). The regions:
:data:`hyperpod_cdk.facts.GRAFANA_REGIONS`.
"""

from __future__ import annotations

from typing import Any

from hyperpod_cdk import facts
from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.observability import observability_settings
from hyperpod_ops.aws import paginate
from hyperpod_ops.check import Check, failed, passed, skipped

GRAFANA_REGION = "grafana region"
GRAFANA_VERSION = facts.GRAFANA_VERSION
GRAFANA_VERSION_CHECK = "grafana version"
IDENTITY_CENTER = "iam identity center"
_PATH = "observability.grafana"


def grafana_wanted(config: EnvironmentConfig) -> bool:
    """True when the config asks for a Grafana workspace (observability on, ``grafana: true``)."""
    settings = observability_settings(config)
    return settings is not None and bool(settings.grafana)


def check_grafana(config: EnvironmentConfig, sso_admin: Any, grafana: Any) -> list[Check]:
    """The region offers Amazon Managed Grafana and :data:`GRAFANA_VERSION`
    (``grafana:ListVersions``), and an IAM Identity Center instance is active and visible to the
    account (``sso-admin:ListInstances``)."""
    if not grafana_wanted(config):
        return [skipped("grafana", f"{_PATH} is not set (or observability is off)")]
    checks: list[Check] = []
    if config.region in facts.GRAFANA_REGIONS:
        checks.append(passed(GRAFANA_REGION, f"{config.region} has Amazon Managed Grafana"))
        checks.append(_check_version(config, grafana))
    else:
        checks.append(
            failed(
                GRAFANA_REGION,
                f"{config.region} has no Amazon Managed Grafana ({_PATH}; it is in "
                f"{', '.join(facts.GRAFANA_REGIONS)})",
                "set observability.grafana: false, or deploy in one of those regions",
            )
        )
    instances = list(paginate(sso_admin, "list_instances", "Instances"))
    active = [i for i in instances if i.get("Status", "ACTIVE") == "ACTIVE"]
    if not active:
        seen = (
            f" ({len(instances)} instance(s) not active: "
            f"{', '.join(str(i.get('Status')) for i in instances)})"
            if instances
            else ""
        )
        checks.append(
            failed(
                IDENTITY_CENTER,
                f"no active IAM Identity Center instance is visible from this account in "
                f"{config.region}{seen}: the Grafana workspace ({_PATH}) signs users in with it",
                "enable IAM Identity Center (IAM Identity Center console, Enable: an organization "
                "instance from the management account, or an account instance), create or "
                "connect the users and groups who will open the dashboards, then rerun; or set "
                "observability.grafana: false",
            )
        )
        return checks
    instance = active[0]
    owner = instance.get("OwnerAccountId", "?")
    checks.append(
        passed(
            IDENTITY_CENTER,
            f"{instance['InstanceArn']} (owner account {owner}, identity store "
            f"{instance.get('IdentityStoreId', '?')}) signs users in to the Grafana workspace; "
            "assign users or groups to the workspace after the deploy (docs/dashboards.md)",
        )
    )
    return checks


def _check_version(config: EnvironmentConfig, grafana: Any) -> Check:
    offered = list(paginate(grafana, "list_versions", "grafanaVersions"))
    if GRAFANA_VERSION in offered:
        return passed(
            GRAFANA_VERSION_CHECK, f"Grafana {GRAFANA_VERSION} is offered in {config.region}"
        )
    return failed(
        GRAFANA_VERSION_CHECK,
        f"Amazon Managed Grafana in {config.region} offers {', '.join(offered) or 'no version'}, "
        f"not the pinned {GRAFANA_VERSION} (hyperpod_cdk.facts.GRAFANA_VERSION)",
        "use a release of this app that pins an offered version, or set observability.grafana: "
        "false",
    )

"""Preflight: the configuration the app sends to each EKS add-on is valid under the add-on
version's JSON schema (eks:DescribeAddonConfiguration), built by the constructs' own builders."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from ops_testkit import (
    ACCOUNT,
    PROJECT_ROOT,
    StubbedAws,
    addon_configuration,
    by_name,
    environment,
    healthy_account,
)

from hyperpod_cdk.facts import versions
from hyperpod_cdk.facts.addon_values import CERT_MANAGER, INFERENCE, METRICS_SERVER, OBSERVABILITY
from hyperpod_ops.addon_configuration import check_addon_configuration, configured_addons
from hyperpod_ops.aws import READ_ONLY_ACTIONS
from hyperpod_ops.preflight import run_preflight

DRAFT7 = "http://json-schema.org/draft-07/schema#"
EKS_FULL_CONFIGURED = [CERT_MANAGER, OBSERVABILITY, METRICS_SERVER, INFERENCE]


def _pinned(addon: str, kubernetes: str) -> str:
    return versions.addon_version(addon, kubernetes)


def _strict(properties: dict[str, Any]) -> dict[str, Any]:
    """An object schema that knows only ``properties`` (anything below them is free)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {key: value or {} for key, value in properties.items()},
    }


def _answer(aws: StubbedAws, config: Any, schemas: dict[str, Any] | None = None) -> None:
    """Queue DescribeAddonConfiguration of each configured add-on: ``schemas[addon]`` or a
    permissive schema."""
    for item in configured_addons(config, ACCOUNT):
        addon_configuration(aws, item.addon, item.version, (schemas or {}).get(item.addon))


def test_every_configured_addon_of_eks_full_is_checked(aws: StubbedAws) -> None:
    config = environment("eks-full")
    assert [item.addon for item in configured_addons(config, ACCOUNT)] == EKS_FULL_CONFIGURED
    _answer(aws, config)
    checks = check_addon_configuration(config, aws("eks"), ACCOUNT)
    kubernetes = config.eks_settings.kubernetes_version
    assert [c.name for c in checks] == [
        f"eks add-on configuration {addon}" for addon in EKS_FULL_CONFIGURED
    ]
    assert [c.outcome for c in checks] == ["pass"] * 4
    assert checks[3].detail == (
        f"{_pinned(INFERENCE, kubernetes)}: the configuration matches its schema"
    )
    assert aws.called == {"eks:DescribeAddonConfiguration"}


def test_a_schema_that_accepts_the_values_passes(aws: StubbedAws) -> None:
    config = environment("eks-full")
    schemas = {
        CERT_MANAGER: {
            "$schema": DRAFT7,
            **_strict(
                {
                    "tolerations": {"type": "array", "items": {"type": "object"}},
                    "webhook": _strict({"tolerations": {"type": "array"}}),
                    "cainjector": _strict({"tolerations": {"type": "array"}}),
                }
            ),
        },
        METRICS_SERVER: _strict({"tolerations": {"type": "array"}}),
        INFERENCE: _strict(
            {
                "executionRoleArn": {"type": "string", "pattern": "^arn:aws:iam::[0-9]{12}:role/"},
                "tlsCertificateS3Bucket": {"type": "string"},
                "hyperpodClusterArn": {"type": "string", "pattern": ":cluster/[a-z0-9]{12}$"},
                "inferenceOperator": None,
                "inferenceGateway": None,
                "alb": None,
                "keda": None,
                "jumpstartGatedModelDownloadRoleArn": {"type": "string"},
            }
        ),
    }
    _answer(aws, config, schemas)
    checks = check_addon_configuration(config, aws("eks"), ACCOUNT)
    assert [c.outcome for c in checks] == ["pass"] * 4, checks


def test_an_unknown_key_fails_naming_the_key_the_version_and_the_fix(aws: StubbedAws) -> None:
    config = environment("eks-full", {"eks.addons.inference.gateway": True})
    kubernetes = config.eks_settings.kubernetes_version
    pinned = _pinned(INFERENCE, kubernetes)
    # a build that does not know the gateway yet
    known = (
        "executionRoleArn",
        "tlsCertificateS3Bucket",
        "hyperpodClusterArn",
        "inferenceOperator",
        "alb",
        "keda",
        "jumpstartGatedModelDownloadRoleArn",
    )
    older = _strict(dict.fromkeys(known))
    _answer(aws, config, {INFERENCE: older})
    check = by_name(check_addon_configuration(config, aws("eks"), ACCOUNT))[
        f"eks add-on configuration {INFERENCE}"
    ]
    assert check.outcome == "fail"
    assert check.detail == (
        f"{INFERENCE} {pinned}: configuration key inferenceGateway: Additional properties are "
        "not allowed ('inferenceGateway' was unexpected)"
    )
    assert check.fix is not None
    assert check.fix.startswith("change eks.addons.inference.gateway, or pin a ")
    assert "hyperpod_cdk/facts/versions.py" in check.fix
    assert f"--addon-name {INFERENCE} --addon-version {pinned}" in check.fix


def test_a_type_error_fails_with_its_json_path(aws: StubbedAws) -> None:
    config = environment("eks-full")
    kubernetes = config.eks_settings.kubernetes_version
    schemas = {
        # tolerations must be an object in this (made-up) build; and ray metrics take no interval
        CERT_MANAGER: {
            "type": "object",
            "properties": {"webhook": {"properties": {"tolerations": {"type": "object"}}}},
        },
        OBSERVABILITY: {
            "type": "object",
            "properties": {
                "metricsProvider": {
                    "properties": {
                        "rayMetrics": {"properties": {"scrapeInterval": {"type": "string"}}}
                    }
                }
            },
        },
    }
    _answer(aws, config, schemas)
    checks = by_name(check_addon_configuration(config, aws("eks"), ACCOUNT))
    cert_manager = checks[f"eks add-on configuration {CERT_MANAGER}"]
    assert cert_manager.outcome == "fail"
    assert cert_manager.detail == (
        f"{CERT_MANAGER} {_pinned(CERT_MANAGER, kubernetes)}: configuration key "
        "webhook.tolerations: [{'operator': 'Exists'}] is not of type 'object'"
    )
    assert cert_manager.fix and cert_manager.fix.startswith(
        "change eks.addons.training_operator / eks.addons.inference, or pin a cert-manager build"
    )
    observability = checks[f"eks add-on configuration {OBSERVABILITY}"]
    assert observability.outcome == "fail"
    assert (
        "configuration key metricsProvider.rayMetrics.scrapeInterval: 30 is not of type 'string'"
        in observability.detail
    )
    assert observability.fix and observability.fix.startswith("change observability.levels.ray,")
    assert checks[f"eks add-on configuration {INFERENCE}"].outcome == "pass"


def test_every_schema_error_of_an_addon_is_on_its_one_line(aws: StubbedAws) -> None:
    config = environment("eks-full")
    schemas = {METRICS_SERVER: {**_strict({}), "required": ["args"]}}
    _answer(aws, config, schemas)
    check = by_name(check_addon_configuration(config, aws("eks"), ACCOUNT))[
        f"eks add-on configuration {METRICS_SERVER}"
    ]
    assert check.outcome == "fail"
    assert "configuration key (top level): 'args' is a required property" in check.detail
    assert "configuration key tolerations: Additional properties are not allowed" in check.detail
    assert check.fix and check.fix.startswith(
        "change eks.addons.inference, or pin a metrics-server"
    )


def test_an_unknown_version_is_left_to_the_version_check(aws: StubbedAws) -> None:
    config = environment("eks-full")
    for index, item in enumerate(configured_addons(config, ACCOUNT)):
        params = {"addonName": item.addon, "addonVersion": item.version}
        if index == 0:
            aws.error("eks", "describe_addon_configuration", "ResourceNotFoundException", params)
        elif index == 1:
            aws.error("eks", "describe_addon_configuration", "InvalidParameterException", params)
        else:
            addon_configuration(aws, item.addon, item.version)
    checks = check_addon_configuration(config, aws("eks"), ACCOUNT)
    assert [c.outcome for c in checks] == ["skip", "skip", "pass", "pass"]
    assert "(see the eks add-on check)" in checks[0].detail


def test_no_schema_passes_with_a_note(aws: StubbedAws) -> None:
    config = environment("eks-full")
    for item in configured_addons(config, ACCOUNT):
        aws.stub("eks").add_response(
            "describe_addon_configuration",
            {"addonName": item.addon, "addonVersion": item.version},
            {"addonName": item.addon, "addonVersion": item.version},
        )
    checks = check_addon_configuration(config, aws("eks"), ACCOUNT)
    assert [c.outcome for c in checks] == ["pass"] * 4
    assert checks[0].detail.endswith("publishes no configuration schema; not validated")


def test_a_schema_that_is_not_json_is_skipped_with_the_reason(aws: StubbedAws) -> None:
    config = environment("eks-full")
    _answer(aws, config, {CERT_MANAGER: "{not json"})
    checks = check_addon_configuration(config, aws("eks"), ACCOUNT)
    assert checks[0].outcome == "skip"
    assert "EKS returned a schema that cannot be used" in checks[0].detail


def test_without_jsonschema_the_check_is_skipped(
    aws: StubbedAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema: ImportError
    checks = check_addon_configuration(environment("eks-full"), aws("eks"), ACCOUNT)
    assert [(c.name, c.outcome) for c in checks] == [("eks add-on configuration", "skip")]
    assert "jsonschema package is not installed" in checks[0].detail
    assert aws.called == set()


def test_slurm_has_no_addon_configuration(aws: StubbedAws) -> None:
    assert configured_addons(environment("default"), ACCOUNT) == []
    assert check_addon_configuration(environment("default"), aws("eks"), ACCOUNT) == []


def test_a_config_without_configured_addons_is_skipped(aws: StubbedAws) -> None:
    # the core add-ons and the FSx CSI driver get no configuration values
    checks = check_addon_configuration(environment("eks-minimal"), aws("eks"), ACCOUNT)
    assert [c.outcome for c in checks] == ["skip"]
    assert aws.called == set()


def test_the_placeholders_are_of_the_callers_account_region_and_partition() -> None:
    config = environment("eks-full", {"eks.addons.inference.gateway": True})
    values = {item.addon: item.values for item in configured_addons(config, ACCOUNT)}
    inference = values[INFERENCE]
    # the roles carry the config's iam.role_path, as the roles the app creates do
    role = f"arn:aws:iam::{ACCOUNT}:role{config.iam.role_path}eks-full-"
    assert config.iam.role_path == "/hyperpod/"
    for key in ("executionRoleArn", "jumpstartGatedModelDownloadRoleArn"):
        assert inference[key].startswith(role) and inference[key].endswith("-preflight")
    assert inference["inferenceGateway"]["serviceAccount"]["roleArn"].startswith(role)
    assert inference["alb"]["serviceAccount"]["roleArn"].startswith(role)
    assert inference["keda"]["auth"]["aws"]["irsa"]["roleArn"].startswith(role)
    # the bucket the app creates (config/inference.py default_tls_bucket_name)
    assert inference["tlsCertificateS3Bucket"] == f"hyperpod-tls-eks-full-{ACCOUNT}-us-west-2"
    assert inference["hyperpodClusterArn"].startswith(
        f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/"
    )
    workspace = values[OBSERVABILITY]["ampWorkspace"]
    workspace_id = workspace["arn"].rsplit("/", 1)[-1]
    assert workspace["prometheusEndpoint"] == (
        f"https://aps-workspaces.us-west-2.amazonaws.com/workspaces/{workspace_id}"
    )
    assert values[OBSERVABILITY]["metricsProvider"]["trainingMetrics"]["level"] == "ADVANCED"


def test_the_placeholders_follow_the_china_partition() -> None:
    from hyperpod_cdk.config import EnvironmentConfig

    config = environment("eks-full")
    china = EnvironmentConfig.model_construct(**{**dict(config), "region": "cn-north-1"})
    values = {item.addon: item.values for item in configured_addons(china, ACCOUNT)}
    assert values[INFERENCE]["executionRoleArn"].startswith(f"arn:aws-cn:iam::{ACCOUNT}:role/")
    assert values[OBSERVABILITY]["ampWorkspace"]["prometheusEndpoint"].startswith(
        "https://aps-workspaces.cn-north-1.amazonaws.com.cn/workspaces/"
    )


def test_an_adopted_workspace_and_tls_bucket_are_used_as_they_are() -> None:
    arn = f"arn:aws:aps:us-west-2:{ACCOUNT}:workspace/ws-11111111-2222-3333-4444-555555555555"
    config = environment(
        "eks-full",
        {
            "observability.prometheus_workspace_arn": arn,
            "eks.addons.inference.tls_bucket": "my-tls",
        },
    )
    values = {item.addon: item.values for item in configured_addons(config, ACCOUNT)}
    assert values[OBSERVABILITY]["ampWorkspace"]["arn"] == arn
    assert values[INFERENCE]["tlsCertificateS3Bucket"] == "my-tls"


def test_the_preflight_runs_the_check_after_the_addon_versions(aws: StubbedAws) -> None:
    config = environment("eks-full")
    healthy_account(aws, config)
    checks = run_preflight(config, aws, project_root=PROJECT_ROOT)
    names = [c.name for c in checks]
    configured = [n for n in names if n.startswith("eks add-on configuration ")]
    assert configured == [f"eks add-on configuration {a}" for a in EKS_FULL_CONFIGURED]
    assert names.index(configured[0]) > names.index(f"eks add-on {INFERENCE}")
    assert all(c.outcome == "pass" for c in checks if c.name in configured)
    assert "eks:DescribeAddonConfiguration" in aws.called
    assert "eks:DescribeAddonConfiguration" in READ_ONLY_ACTIONS


def test_access_denied_fails_the_step_and_names_the_action(aws: StubbedAws) -> None:
    config = environment("eks-full")
    healthy_account(aws, config, leave_out={"addon_configuration"})
    first = configured_addons(config, ACCOUNT)[0]
    aws.error(
        "eks",
        "describe_addon_configuration",
        "AccessDeniedException",
        {"addonName": first.addon, "addonVersion": first.version},
    )
    check = by_name(run_preflight(config, aws, project_root=PROJECT_ROOT))[
        "eks add-on configuration"
    ]
    assert check.outcome == "fail"
    assert check.detail.startswith("eks:DescribeAddonConfiguration returned AccessDeniedException")


# -- the constructs send what the builders build ----------------------------------------------


def _leaf_paths(value: Any, path: str = "") -> set[str]:
    """Every key path of a JSON value down to its leaves (list items by index)."""
    if isinstance(value, dict):
        found: set[str] = set()
        for key, item in value.items():
            found |= _leaf_paths(item, f"{path}.{key}" if path else key)
        return found
    if isinstance(value, list):
        found = set()
        for index, item in enumerate(value):
            found |= _leaf_paths(item, f"{path}[{index}]")
        return found or {path}
    return {path}


def _parsed(configuration: Any) -> Any:
    """A template's ConfigurationValues as JSON: each token of an Fn::Join (inside a JSON
    string) read as the text TOKEN."""
    if isinstance(configuration, str):
        return json.loads(configuration)
    separator, parts = configuration["Fn::Join"]
    assert separator == ""
    return json.loads("".join(part if isinstance(part, str) else "TOKEN" for part in parts))


def test_the_constructs_send_the_builders_values(synthesized: Callable[[str], Any]) -> None:
    synth = synthesized("eks-full")
    sent = {
        resource["Properties"]["AddonName"]: _parsed(resource["Properties"]["ConfigurationValues"])
        for resource in synth.resources("eks-addons", "AWS::EKS::Addon").values()
        if "ConfigurationValues" in resource["Properties"]
    }
    built = {item.addon: item for item in configured_addons(synth.config, ACCOUNT)}
    assert sorted(sent) == sorted(built)
    kubernetes = synth.config.eks_settings.kubernetes_version
    for addon, values in sent.items():
        assert _leaf_paths(values) == _leaf_paths(built[addon].values), addon
        assert built[addon].version == versions.addon_version(addon, kubernetes)
    # literal values are the same too (cert-manager and metrics-server have no tokens)
    assert sent[CERT_MANAGER] == built[CERT_MANAGER].values
    assert sent[METRICS_SERVER] == built[METRICS_SERVER].values
    assert sent[OBSERVABILITY]["metricsProvider"] == built[OBSERVABILITY].values["metricsProvider"]


def test_the_construct_module_names_agree() -> None:
    from hyperpod_cdk.eks import addons, inference

    assert addons.CERT_MANAGER == CERT_MANAGER
    assert addons.OBSERVABILITY == OBSERVABILITY
    assert inference.METRICS_SERVER == METRICS_SERVER
    assert inference.INFERENCE == INFERENCE

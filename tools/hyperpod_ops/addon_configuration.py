"""Preflight check: each EKS add-on's configuration is valid for the pinned add-on version.

EKS validates an add-on's ``ConfigurationValues`` against the JSON schema of that add-on version
and fails the CREATE of the ``AWS::EKS::Addon`` when a key is unknown or a value invalid: in the
``<name>-eks-addons`` stack, 40+ minutes into a first deploy. This check reads each schema with
``eks:DescribeAddonConfiguration`` (EKS API reference, DescribeAddonConfiguration, read
2026-11-25: ``configurationSchema``, "a JSON schema that's used to validate the configuration
values you provide when an add-on is created or updated"; errors InvalidParameterException,
ResourceNotFoundException) and validates, with ``jsonschema``, the values the
app would send, built by the builders the constructs use
(:mod:`hyperpod_cdk.facts.addon_values`) with placeholder ARNs of the caller's account, the
config's region and partition. Pure Python: no CDK import.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.config.alerts import partition_of
from hyperpod_cdk.config.inference import default_tls_bucket_name
from hyperpod_cdk.config.observability import (
    METRIC_KEYS,
    metric_levels,
    metrics_provider,
    observability_settings,
)
from hyperpod_cdk.facts import versions
from hyperpod_cdk.facts.addon_values import (
    CERT_MANAGER,
    INFERENCE,
    METRICS_SERVER,
    OBSERVABILITY,
    cert_manager_values,
    inference_values,
    metrics_server_values,
    observability_values,
)
from hyperpod_ops.addons import app_addons
from hyperpod_ops.aws import call_or_none
from hyperpod_ops.check import Check, failed, passed, skipped

NAME = "eks add-on configuration"

# What DescribeAddonConfiguration answers for an add-on version EKS does not offer (botocore's
# EKS model lists these errors); the add-on version check reports that version already.
_UNKNOWN_VERSION = ("ResourceNotFoundException", "InvalidParameterException")

# A workspace id of the shape Amazon Managed Service for Prometheus gives (ws-<uuid>), for a
# workspace the deploy creates.
_PLACEHOLDER_WORKSPACE = "ws-00000000-0000-0000-0000-000000000000"
# A HyperPod cluster id of the shape SageMaker gives (12 lowercase letters and digits).
_PLACEHOLDER_CLUSTER_ID = "preflight000"
# At most this many characters of one schema error's message (jsonschema repeats the value).
_MESSAGE_LIMIT = 240


@dataclass(frozen=True)
class AddonConfiguration:
    """One add-on the app configures: its name, the pinned version, the values it would send."""

    addon: str
    version: str
    values: dict[str, Any]


def configured_addons(config: EnvironmentConfig, account: str) -> list[AddonConfiguration]:
    """The add-ons of ``app_addons(config)`` the app sends ``ConfigurationValues`` to, with the
    values built as the constructs build them, from placeholders in ``account``."""
    if config.is_slurm:
        return []
    region = config.region
    partition = partition_of(region)
    suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    role_path = config.iam.role_path

    def role(purpose: str) -> str:
        return f"arn:{partition}:iam::{account}:role{role_path}{config.name}-{purpose}-preflight"

    kubernetes = config.eks_settings.kubernetes_version
    built: dict[str, dict[str, Any]] = {
        CERT_MANAGER: cert_manager_values(),
        METRICS_SERVER: metrics_server_values(),
    }
    observability = observability_settings(config)
    if observability is not None:
        workspace_arn = observability.prometheus_workspace_arn or (
            f"arn:{partition}:aps:{region}:{account}:workspace/{_PLACEHOLDER_WORKSPACE}"
        )
        workspace_id = workspace_arn.rsplit("/", 1)[-1]
        built[OBSERVABILITY] = observability_values(
            prometheus_endpoint=f"https://aps-workspaces.{region}.{suffix}/workspaces/{workspace_id}",
            workspace_arn=workspace_arn,
            levels=metrics_provider(metric_levels(config)),
            logging=observability.logging,
        )
    inference = config.eks_settings.addons.inference_settings
    if inference is not None:
        built[INFERENCE] = inference_values(
            execution_role_arn=role("inference-operator"),
            tls_bucket=inference.tls_bucket
            or default_tls_bucket_name(config.name, account, region),
            hyperpod_cluster_arn=(
                f"arn:{partition}:sagemaker:{region}:{account}:cluster/{_PLACEHOLDER_CLUSTER_ID}"
            ),
            alb_role_arn=role("alb") if inference.installs_alb_controller else None,
            keda_role_arn=role("keda") if inference.installs_keda else None,
            gateway_role_arn=role("inference-gateway") if inference.gateway else None,
            gated_model_role_arn=role("gated-models") if inference.gated_models_enabled else None,
        )
    return [
        AddonConfiguration(name, versions.addon_version(name, kubernetes), built[name])
        for name in app_addons(config)
        if name in built
    ]


def check_addon_configuration(config: EnvironmentConfig, eks: Any, account: str) -> list[Check]:
    """One line per configured add-on: its values are valid under the schema EKS returns for the
    pinned version (FAIL naming each schema error's key and the fix), or why it was not checked."""
    if config.is_slurm:  # no EKS add-ons (the add-on version check says so once)
        return []
    addons = configured_addons(config, account)
    if not addons:
        return [skipped(NAME, "the app configures no EKS add-on for this config")]
    try:
        jsonschema = importlib.import_module("jsonschema")
    except ImportError:
        return [
            skipped(
                NAME,
                "the jsonschema package is not installed (requirements-dev.txt pins it; "
                "`make bootstrap` installs it), so the add-on configurations were not validated",
            )
        ]
    checks: list[Check] = []
    for item in addons:
        name = f"{NAME} {item.addon}"
        answer = call_or_none(
            eks.describe_addon_configuration,
            _UNKNOWN_VERSION,
            addonName=item.addon,
            addonVersion=item.version,
        )
        if answer is None:
            checks.append(
                skipped(name, f"EKS does not know {item.version} (see the eks add-on check)")
            )
            continue
        text = str(answer.get("configurationSchema") or "")
        if not text.strip():
            checks.append(
                passed(name, f"{item.version} publishes no configuration schema; not validated")
            )
            continue
        try:
            schema = json.loads(text)
            # the draft the schema names in $schema; draft 7 when it names none
            validator_class = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft7Validator
            )
            validator_class.check_schema(schema)
        except (ValueError, TypeError, jsonschema.exceptions.SchemaError) as exc:
            reason = getattr(exc, "message", None) or str(exc)
            checks.append(
                skipped(
                    name,
                    f"{item.version}: EKS returned a schema that cannot be used ({reason[:_MESSAGE_LIMIT]})",
                )  # fmt: skip
            )
            continue
        problems = [
            (path, message)
            for error in validator_class(schema).iter_errors(item.values)
            for path, message in _located(error)
        ]
        if not problems:
            checks.append(passed(name, f"{item.version}: the configuration matches its schema"))
            continue
        problems.sort()
        details = "; ".join(
            f"configuration key {path or '(top level)'}: {message}" for path, message in problems
        )
        keys = list(dict.fromkeys(_config_key(item.addon, path) for path, _ in problems))
        checks.append(
            failed(
                name,
                f"{item.addon} {item.version}: {details}",
                f"change {' or '.join(keys)}, or pin a {item.addon} build whose schema accepts "
                f"this configuration in hyperpod_cdk/facts/versions.py (aws eks "
                f"describe-addon-configuration --region {config.region} --addon-name "
                f"{item.addon} --addon-version {item.version} --query configurationSchema); "
                "a key no build accepts is built in hyperpod_cdk/facts/addon_values.py",
            )
        )
    return checks


def _located(error: Any) -> Iterator[tuple[str, str]]:
    """``(dotted path, message)`` of a jsonschema error; an ``additionalProperties`` error once
    per unexpected key, at that key's path."""
    path = ".".join(str(part) for part in error.absolute_path)
    message = " ".join(str(error.message).split())
    if len(message) > _MESSAGE_LIMIT:
        message = message[: _MESSAGE_LIMIT - 3] + "..."
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        known = schema.get("properties") or {}
        patterns = list(schema.get("patternProperties") or {})
        extra = [
            str(key)
            for key in error.instance
            if key not in known and not any(re.search(p, str(key)) for p in patterns)
        ]
        if extra:
            for key in extra:
                yield (f"{path}.{key}" if path else key), message
            return
    yield path, message


# The config key behind a top-level key of an add-on's values (the rest: the add-on's switch).
_INFERENCE_KEYS = {
    "inferenceGateway": "eks.addons.inference.gateway",
    "jumpstartGatedModelDownloadRoleArn": "eks.addons.inference.gated_models",
    "tlsCertificateS3Bucket": "eks.addons.inference.tls_bucket",
}
_OBSERVABILITY_KEYS = {
    "ampWorkspace": "observability.prometheus_workspace_arn",
    "logging": "observability.logging",
}
_SWITCHES = {
    CERT_MANAGER: "eks.addons.training_operator / eks.addons.inference",
    METRICS_SERVER: "eks.addons.inference",
    OBSERVABILITY: "observability",
    INFERENCE: "eks.addons.inference",
}


def _config_key(addon: str, path: str) -> str:
    """The dotted config key to change for a schema error at ``path`` of ``addon``'s values."""
    parts = path.split(".") if path else []
    top = parts[0] if parts else ""
    if addon == INFERENCE and top in _INFERENCE_KEYS:
        return _INFERENCE_KEYS[top]
    if addon == OBSERVABILITY:
        if top == "metricsProvider" and len(parts) > 1:
            categories = {key: category for category, key in METRIC_KEYS.items()}
            if parts[1] in categories:
                return f"observability.levels.{categories[parts[1]]}"
        if top in _OBSERVABILITY_KEYS:
            return _OBSERVABILITY_KEYS[top]
    return _SWITCHES.get(addon, "eks.addons")

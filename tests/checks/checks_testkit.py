"""Helpers of the HyperPod rule tests: small apps of raw CloudFormation resources, synthesized
with the HyperPod pack registered, and what the pack made of them.

A test builds its stacks with :func:`new_app` / :func:`stack` / :func:`resource`, then calls
:func:`check`: the App is synthesized as ``cdk synth`` would (an error finding of a stack under
the App fails the synth; the report says which), and the result gives both the findings of
the validation report and each rule's verdict on any resource (to tell compliant from not
applicable, which the report cannot).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance import AppModel, HyperPodChecks, HyperPodRule

ENV = cdk.Environment(account="111122223333", region="us-west-2")
COMPLIANT = NagRuleCompliance.COMPLIANT
NON_COMPLIANT = NagRuleCompliance.NON_COMPLIANT
NOT_APPLICABLE = NagRuleCompliance.NOT_APPLICABLE


def new_app(*, weak_references: bool = True) -> cdk.App:
    """An App in a fresh directory; the project's app uses weak cross-stack references
    (``Fn::GetStackOutput``), CDK's default is exports (``Fn::ImportValue``).

    CDK's built-in CloudFormation schema validation is off: the test resources carry only the
    properties a rule reads.
    """
    context = {"@aws-cdk/core:defaultCrossStackReferences": "weak"} if weak_references else {}
    return cdk.App(
        outdir=tempfile.mkdtemp(prefix="hyperpod-checks-"),
        context=context,
        builtin_cloud_formation_validation=False,
    )


def stack(scope: Any, name: str) -> cdk.Stack:
    return cdk.Stack(scope, name, env=ENV)


def resource(
    scope: cdk.Stack,
    construct_id: str,
    resource_type: str,
    properties: dict[str, Any] | None = None,
) -> cdk.CfnResource:
    """A raw CloudFormation resource (any type; no L1 class needed)."""
    return cdk.CfnResource(scope, construct_id, type=resource_type, properties=properties or {})


def retain(*resources: cdk.CfnResource) -> None:
    for item in resources:
        item.apply_removal_policy(cdk.RemovalPolicy.RETAIN)


@dataclass
class Checked:
    """A synthesized App: the HyperPod findings of its report and a model of its templates."""

    app: cdk.App
    outdir: Path
    failed: bool
    findings: dict[str, set[str]]
    model: AppModel

    def found(self, rule: HyperPodRule, construct: cdk.CfnResource) -> bool:
        """True when the report has a finding of ``rule`` on ``construct``."""
        return construct.node.path in self.findings.get(rule.id, set())

    def verdict(self, rule: HyperPodRule, construct: cdk.CfnResource) -> NagRuleCompliance:
        """What ``rule`` says about ``construct``, read from its synthesized template."""
        owner = cdk.Stack.of(construct)
        logical_id = owner.resolve(construct.logical_id)
        for assembly in self.model.assemblies.values():
            template = assembly.stacks.get(owner.stack_name)
            if template and logical_id in template.resources:
                return rule(template.resources[logical_id])
        raise KeyError(construct.node.path)


def report_findings(outdir: Path, plugin: str = "HyperPod") -> dict[str, set[str]]:
    """``{rule id: construct paths}`` of one plugin in ``validation-report.json``."""
    report = outdir / "validation-report.json"
    found: dict[str, set[str]] = {}
    if not report.exists():
        return found
    for plugin_report in json.loads(report.read_text())["pluginReports"]:
        if plugin_report["pluginName"] != plugin:
            continue
        assert "error" not in plugin_report.get("metadata", {}), plugin_report["metadata"]
        for violation in plugin_report.get("violations", []):
            paths = {c["constructPath"] for c in violation["violatingConstructs"]}
            found.setdefault(violation["ruleName"], set()).update(paths)
    return found


def check(app: cdk.App, *, register: bool = True) -> Checked:
    """Synthesize ``app`` with the HyperPod pack registered (once, on the App)."""
    if register:
        cdk.Validations.of(app).add_plugins(HyperPodChecks())
    failed = False
    try:
        app.synth()
    except RuntimeError as error:  # jsii's error for "ValidationFailed": the report says why
        if not str(error).startswith("ValidationFailed"):
            raise
        failed = True
    outdir = Path(app.outdir)
    model = AppModel.from_template_paths(outdir.rglob("*.template.json"))
    return Checked(app, outdir, failed, report_findings(outdir), model)

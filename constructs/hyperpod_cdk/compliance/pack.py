"""The HyperPod rule pack: a cdk-nag ``NagPack`` whose rules read the synthesized templates.

It is registered like cdk-nag's own packs (``cdk.Validations.of(app).add_plugins(...)``), so
its findings land in the same validation report, fail the synth the same way and are
acknowledged the same way (``cdk.Validations.of(construct).acknowledge(...)`` with the rule id,
e.g. ``HyperPod-DataRetained``; see ``hyperpod_cdk.compliance.nag.acknowledge``).

Why the templates: a HyperPod environment spans stacks (the security group in the network
stack, the role in the nodes stack, the cluster in its own), and only the synthesized
templates show where a cross-stack reference leads and what property overrides changed.
CDK runs validation plugins after writing the cloud assembly and hands them the template
paths; :meth:`HyperPodChecks.validate_scope` called directly (tests) synthesizes the App of
the scope first, or reuses its assembly when it has already been synthesized.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, cast

import aws_cdk as cdk
import cdk_nag
import jsii
from constructs import IConstruct

from hyperpod_cdk.compliance.model import AppModel, Resource, StackTemplate
from hyperpod_cdk.compliance.rule import NOT_APPLICABLE, PACK_NAME, HyperPodRule
from hyperpod_cdk.compliance.rules import RULES


@jsii.implements(cdk_nag.IApplyRule)
class _RuleApplication:
    """One rule applied to one resource, in the shape cdk-nag's ``applyRule`` takes.

    jsii reads the members through callbacks, so they are properties of the class.
    """

    def __init__(self, rule: HyperPodRule, node: cdk.CfnResource, resource: Resource | None):
        self._rule = rule
        self._node = node
        self._resource = resource

    @property
    def node(self) -> cdk.CfnResource:
        return self._node

    @property
    def rule_suffix_override(self) -> str:
        return self._rule.name

    @property
    def info(self) -> str:
        return self._rule.info

    @property
    def explanation(self) -> str:
        return self._rule.explanation

    @property
    def level(self) -> cdk_nag.NagMessageLevel:
        return self._rule.level

    def rule(self, node: cdk.CfnResource) -> cdk_nag.NagRuleCompliance:
        # a resource missing from the templates (a nested stack's) is not ours to judge
        return NOT_APPLICABLE if self._resource is None else self._rule(self._resource)


def synthesized_template_paths(scope: IConstruct) -> list[str]:
    """The template of every stack of the App of ``scope``, Stages included (synthesizes it
    unless it was already synthesized)."""
    root = scope.node.root
    if not cdk.Stage.is_stage(root):
        raise ValueError(f"{scope.node.path or '<root>'}: the HyperPod pack needs an App")
    assembly = cast(cdk.Stage, root).synth()
    return [stack.template_full_path for stack in assembly.stacks_recursively]


class HyperPodChecks(cdk_nag.NagPack):
    """The project's own rules, always registered next to the configured cdk-nag packs.

    :func:`hyperpod_cdk.compliance.nag.register_compliance_packs` registers it; to register it
    yourself: ``cdk.Validations.of(app).add_plugins(HyperPodChecks())``.

    :param scope: as for cdk-nag's packs; left out when registered on the App.
    :param verbose: as for cdk-nag's packs (longer finding messages); cdk-nag's
        default when left out.
    :param write_suppressions_to_cloud_formation: as for cdk-nag's packs; cdk-nag's
        default when left out.
    :param rules: the rules to run (default: all of :data:`hyperpod_cdk.compliance.rules.RULES`).
    """

    def __init__(
        self,
        scope: IConstruct | None = None,
        *,
        verbose: bool | None = None,
        write_suppressions_to_cloud_formation: bool | None = None,
        rules: Iterable[HyperPodRule] = RULES,
    ) -> None:
        super().__init__(
            scope,
            verbose=verbose,
            write_suppressions_to_cloud_formation=write_suppressions_to_cloud_formation,
        )
        self._pack_name = PACK_NAME
        self.rules = tuple(rules)
        self._by_type: dict[str, list[HyperPodRule]] = {}
        for rule in self.rules:
            for resource_type in sorted(rule.resource_types):
                self._by_type.setdefault(resource_type, []).append(rule)
        self._template_paths: list[str] | None = None
        self._model: AppModel | None = None
        self._stacks: dict[str, StackTemplate | None] = {}

    @property
    def name(self) -> str:
        return PACK_NAME

    @property
    def rule_ids(self) -> list[str] | None:
        return [rule.id for rule in self.rules]

    def validate(self, context: cdk.IPolicyValidationContext) -> cdk.PolicyValidationPluginReport:
        # called by CDK after the assembly is written: the templates are on disk
        self._template_paths = list(context.template_paths)
        try:
            return super().validate(context)
        finally:
            self._template_paths = None

    def validate_scope(self, scope: IConstruct) -> cdk.PolicyValidationPluginReport:
        paths = self._template_paths
        if paths is None:
            paths = synthesized_template_paths(scope)
        self._model = AppModel.from_template_paths(paths)
        self._stacks = {}
        try:
            return super().validate_scope(scope)
        finally:
            self._model = None
            self._stacks = {}

    def _check_resource(self, node: cdk.CfnResource) -> None:
        rules = self._by_type.get(node.cfn_resource_type)
        if not rules:
            return
        resource = self._resource_of(node)
        for rule in rules:
            # IApplyRule declares settable members; cdk-nag only reads them
            self._apply_rule(cast(Any, _RuleApplication(rule, node, resource)))

    def _resource_of(self, node: cdk.CfnResource) -> Resource | None:
        """The resource of ``node`` in its synthesized template."""
        if self._model is None:
            return None
        stack = cdk.Stack.of(node)
        key = stack.node.path
        if key not in self._stacks:
            stage = cdk.Stage.of(stack)
            path = os.path.join(stage.outdir, stack.template_file) if stage else None
            self._stacks[key] = self._model.stack(path) if path else None
        template = self._stacks[key]
        logical_id = stack.resolve(node.logical_id)
        return template.resources.get(logical_id) if template else None

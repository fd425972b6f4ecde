"""Shared fixtures: each shipped config synthesized once per test worker, and variants built from a
config dict for targeted construct tests.

Synthesis is the slow part of the suite (the first one in a worker starts the jsii runtime, ~3 s;
later ones take well under a second), so every synthesized App is cached for the session: by file
path for the shipped configs, by (base, changes, context) for variants. Treat a :class:`Synth` as
read-only; it is shared by every test of the worker.

The CDK is imported inside the functions, so test folders that never synthesize (tests/config)
do not pay for starting it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# `stacks` is a folder of the app, not an installed package; stack_testkit (config discovery and
# template helpers, shared with the stack tests) lives in tests/stacks.
# (tests/ itself for the shared helpers of tests/support, which has no __init__.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stacks"))

from stack_testkit import (
    DELETE,
    EKS_CONFIGS,
    SHIPPED_CONFIGS,
    SLURM_CONFIGS,
    STACK_KINDS,
    config_data,
    config_id,
    config_path,
    with_changes,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]

if TYPE_CHECKING:
    import aws_cdk as cdk
    from aws_cdk import assertions, cx_api

    from hyperpod_cdk.config import EnvironmentConfig
    from stacks import EnvironmentStacks

# -- the synthesized App ---------------------------------------------------------------------


@dataclass
class Synth:
    """One synthesized environment: the App, its stacks, the cloud assembly and the templates.

    Stacks are addressed by kind (``network``, ``storage``, ``nodes``, ``cluster``,
    ``data-repositories``); ``templates`` is keyed by the full stack name.
    """

    config: EnvironmentConfig
    app: cdk.App
    stacks: EnvironmentStacks
    assembly: cx_api.CloudAssembly
    outdir: Path
    templates: dict[str, dict[str, Any]]
    _assertions: dict[str, assertions.Template] = field(default_factory=dict, repr=False)

    def stack_name(self, kind: str) -> str:
        return f"{self.config.name}-{kind}"

    def has(self, kind: str) -> bool:
        return self.stack_name(kind) in self.templates

    def template(self, kind: str) -> dict[str, Any]:
        """The template of one stack, as a dict (read-only)."""
        return self.templates[self.stack_name(kind)]

    def assertions(self, kind: str) -> assertions.Template:
        """An ``aws_cdk.assertions.Template`` of one stack (created once)."""
        from aws_cdk.assertions import Template

        if kind not in self._assertions:
            self._assertions[kind] = Template.from_stack(self.stack(kind))
        return self._assertions[kind]

    def stack(self, kind: str) -> cdk.Stack:
        """The ``cdk.Stack`` object of one kind."""
        for stack in self.stacks.all():
            if stack.stack_name == self.stack_name(kind):
                return stack
        raise KeyError(kind)

    def artifact(self, kind: str) -> cx_api.CloudFormationStackArtifact:
        return self.assembly.get_stack_by_name(self.stack_name(kind))

    def dependencies(self, kind: str) -> set[str]:
        """The kinds of the stacks this one waits for (from the assembly manifest)."""
        prefix = f"{self.config.name}-"
        names = {d.id for d in self.artifact(kind).dependencies}
        return {n.removeprefix(prefix) for n in names if n.removeprefix(prefix) in STACK_KINDS}

    def resources(self, kind: str, resource_type: str | None = None) -> dict[str, dict[str, Any]]:
        """The resources of one stack (of one type), by logical id."""
        found = self.template(kind).get("Resources", {})
        return {
            k: r for k, r in found.items() if resource_type is None or r["Type"] == resource_type
        }

    def network_resources(self, resource_type: str | None = None) -> dict[str, dict[str, Any]]:
        """What ``HyperPodNetwork`` makes, in the network stack and the egress stack together,
        cross-stack references resolved (so a route's ``Ref`` to a route table matches the
        table's id). Logical ids are unique across the two: they come from one construct."""
        found: dict[str, dict[str, Any]] = {}
        for kind in ("network", "egress"):
            if self.has(kind):
                resources = self.resources(kind, resource_type).items()
                found.update({k: self.resolve(r) for k, r in resources})
        return found

    def one(self, kind: str, resource_type: str) -> tuple[str, dict[str, Any]]:
        """The only resource of a type in a stack: (logical id, resource)."""
        found = self.resources(kind, resource_type)
        assert len(found) == 1, f"{kind}: expected one {resource_type}, found {sorted(found)}"
        return next(iter(found.items()))

    def outputs(self, kind: str) -> dict[str, Any]:
        return dict(self.template(kind).get("Outputs", {}))

    def resolve(self, value: Any, *, parameters: bool = True, _stack: str | None = None) -> Any:
        """Follow a cross-stack reference to the value the producing stack outputs.

        The app uses weak cross-stack references: a consumer reads
        ``{"Fn::GetStackOutput": {"StackName", "OutputName"}}`` of the producer, whose output
        holds the ``Ref``/``Fn::GetAtt``. With ``parameters``, a ``Fn::GetAtt`` of an SSM
        parameter's ``Value`` in the producing stack is followed to the value the parameter is
        created with (the app passes values through *ready* parameters so that the reader waits
        for what the parameter waits for). Anything else is returned unchanged, recursively.
        """
        if isinstance(value, dict):
            if set(value) == {"Fn::GetStackOutput"}:
                ref = value["Fn::GetStackOutput"]
                output = self.templates[ref["StackName"]]["Outputs"][ref["OutputName"]]
                return self.resolve(output["Value"], parameters=parameters, _stack=ref["StackName"])
            if parameters and _stack is not None and set(value) == {"Fn::GetAtt"}:
                logical_id, attribute = value["Fn::GetAtt"]
                resource = self.templates[_stack]["Resources"].get(logical_id, {})
                if resource.get("Type") == "AWS::SSM::Parameter" and attribute == "Value":
                    return self.resolve(resource["Properties"]["Value"], _stack=_stack)
            return {
                k: self.resolve(v, parameters=parameters, _stack=_stack) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.resolve(v, parameters=parameters, _stack=_stack) for v in value]
        return value

    @cached_property
    def acknowledgments(self) -> list[tuple[str, str, str]]:
        """Every acknowledged finding in the assembly: (construct path, finding id, reason).

        cdk-nag 3 writes none into the templates: CDK records them as construct metadata, which
        the assembly keeps per stack (``additionalMetadataFile`` of the manifest). Read from the
        files, since jsii cannot pass every metadata entry of ``find_metadata_by_type``.
        """
        import aws_cdk as cdk

        key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
        manifest = json.loads((self.outdir / "manifest.json").read_text())
        found = []
        for artifact in manifest["artifacts"].values():
            if artifact["type"] != "aws:cloudformation:stack":
                continue
            metadata = dict(artifact.get("metadata", {}))
            if "additionalMetadataFile" in artifact:
                metadata.update(
                    json.loads((self.outdir / artifact["additionalMetadataFile"]).read_text())
                )
            for path, entries in metadata.items():
                for entry in entries:
                    if entry["type"] == key:
                        found.extend(
                            (path, finding, reason) for finding, reason in entry["data"].items()
                        )
        return found


def _validation_summary(outdir: Path) -> str:
    report = outdir / "validation-report.json"
    if not report.exists():
        return "(no validation-report.json)"
    lines = []
    for plugin in json.loads(report.read_text()).get("pluginReports", []):
        for violation in plugin.get("violations", []):
            paths = [c["constructPath"] for c in violation.get("violatingConstructs", [])]
            lines.append(f"{plugin['pluginName']}: {violation['ruleName']} at {', '.join(paths)}")
    return "\n".join(lines) or report.read_text()


def synthesize(
    config: EnvironmentConfig,
    outdir: Path,
    *,
    context: Mapping[str, Any] | None = None,
    project_root: Path = PROJECT_ROOT,
    nag: bool = True,
) -> Synth:
    """Build the App of ``config`` as ``app.py`` does and synthesize it.

    With ``nag`` (the default) the compliance packs are registered, and an unacknowledged
    finding fails the synth, as it does for ``cdk synth``.
    """
    from stacks.app_builder import build_app, new_app

    app = new_app(context=dict(context or {}), outdir=str(outdir))
    app, stacks = build_app(config, app=app, project_root=project_root, nag=nag)
    try:
        assembly = app.synth()
    except Exception as exc:  # a jsii error: validation (cdk-nag) failed, or a construct raised
        raise AssertionError(
            f"synth of {config.name} failed: {str(exc).splitlines()[0]}\n{_validation_summary(outdir)}"
        ) from None
    templates = {
        artifact.stack_name: json.loads((outdir / artifact.template_file).read_text())
        for artifact in assembly.stacks
    }
    return Synth(config, app, stacks, assembly, outdir, templates)


def _raise_or_return(cached: Synth | AssertionError) -> Synth:
    if isinstance(cached, AssertionError):
        raise AssertionError(*cached.args)
    return cached


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str | Path], Synth]:
    """``synthesized("full")`` (or a path): that shipped config, synthesized once per worker,
    with every compliance pack registered (AwsSolutions, NIST 800-53 R5, HIPAA, PCI DSS 3.2.1)."""
    from hyperpod_cdk.compliance.nag import PACKS
    from hyperpod_cdk.config import load_environment

    cache: dict[Path, Synth | AssertionError] = {}

    def get(name: str | Path) -> Synth:
        path = config_path(name)
        if path not in cache:
            # every shipped config must pass every pack (issue 5), not only the ones it names
            config = load_environment(path, PROJECT_ROOT).model_copy(
                update={"compliance_packs": list(PACKS)}
            )
            try:
                cache[path] = synthesize(config, tmp_path_factory.mktemp(f"cdk-{config_id(path)}"))
            except AssertionError as exc:  # a failed synth fails each test fast, without retrying
                cache[path] = exc
        return _raise_or_return(cache[path])

    return get


@pytest.fixture(params=SHIPPED_CONFIGS, ids=config_id)
def shipped(request: pytest.FixtureRequest, synthesized: Callable[[str | Path], Synth]) -> Synth:
    """Each shipped config the app builds, synthesized (parametrizes the test)."""
    return synthesized(request.param)


@pytest.fixture(params=SLURM_CONFIGS, ids=config_id)
def shipped_slurm(
    request: pytest.FixtureRequest, synthesized: Callable[[str | Path], Synth]
) -> Synth:
    """Each shipped Slurm config, synthesized (parametrizes the test)."""
    return synthesized(request.param)


@pytest.fixture(params=EKS_CONFIGS, ids=config_id)
def shipped_eks(
    request: pytest.FixtureRequest, synthesized: Callable[[str | Path], Synth]
) -> Synth:
    """Each shipped EKS config, synthesized (parametrizes the test)."""
    return synthesized(request.param)


VariantBuilder = Callable[..., Synth]


@pytest.fixture(scope="session")
def build_variant(tmp_path_factory: pytest.TempPathFactory) -> VariantBuilder:
    """``build_variant({"network.flow_logs": False}, base="minimal", context={...})``.

    Changes a shipped config in memory (dotted keys, see ``stack_testkit.with_changes``),
    validates it with ``hyperpod_cdk.config.parse`` and synthesizes it; the same arguments give
    the same cached Synth. ``project_root`` resolves ``cluster.lifecycle_scripts``;
    ``nag=False`` leaves the compliance packs out (tests of what a construct emits, apart from
    whether cdk-nag accepts it).
    """
    from hyperpod_cdk.config import EnvironmentConfig, parse

    cache: dict[str, Synth | AssertionError] = {}

    def build(
        changes: Mapping[str, Any] | None = None,
        *,
        base: str = "default",
        context: Mapping[str, Any] | None = None,
        project_root: Path = PROJECT_ROOT,
        nag: bool = True,
    ) -> Synth:
        key = json.dumps(
            [base, changes, context, str(project_root), nag],
            sort_keys=True,
            default=lambda v: "<DELETE>" if v is DELETE else str(v),
        )
        if key not in cache:
            config = parse(with_changes(config_data(base), changes), project_root)
            assert isinstance(config, EnvironmentConfig)
            outdir = tmp_path_factory.mktemp(f"cdk-variant-{base}")
            try:
                cache[key] = synthesize(
                    config, outdir, context=context, project_root=project_root, nag=nag
                )
            except AssertionError as exc:
                cache[key] = exc
        return _raise_or_return(cache[key])

    return build

"""Shared fixtures: each shipped config synthesized once per test run, and variants built from a
config dict for targeted construct tests.

Synthesis is the slow part of the suite, so every cloud assembly is made once per run and shared
by the pytest-xdist workers (``_shared_assembly``): in a folder of the run that every worker sees,
keyed by a hash of the app's code and of the config, under a file lock. The first worker to ask
synthesizes (and keeps the App in memory); the others read the templates from the assembly. The
few tests that need the construct objects (``Synth.stacks``, ``Synth.stack``) get them from an
in-process synth made on first use in their worker. Treat a :class:`Synth` as read-only; it is
shared by every test of the worker.

Temporary files: the run's ``TMPDIR`` is a folder of pytest's base temporary directory (for the
workers and every process they start), and the run fails when it leaves anything in the system
temporary directory (``pytest_sessionfinish``).

The CDK is imported inside the functions, so test folders that never synthesize (tests/config)
do not pay for starting it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import tempfile
import time
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

# -- scheduling under pytest-xdist -------------------------------------------------------------

# Modules whose module-scoped fixture makes something costly (an App synthesized from constructs
# in-process, a pipeline, helm's rendering of the charts, the tools' wheel, the ops commands'
# import checks in one process) that the tests then only read: under
# ``--dist loadgroup`` (make test) each runs on one worker, so the fixture is made once per run
# instead of once per worker. The wheel's and the recipes' modules too: their fixtures are made
# once per run already (a file lock), and a second worker would only wait for the lock.
# Every other test is spread as ``--dist load`` spreads it.
ONE_WORKER_MODULES = {
    "tests/library/test_wheel.py",
    "tests/library/test_recipes.py",
    "tests/stacks/test_stack_pipeline.py",
    "tests/stacks/test_stack_checkov.py",
    "tests/eks/test_addons.py",
    "tests/eks/test_node_wait.py",
    "tests/observability/test_grafana_construct.py",
    "tests/library/test_library_platform_example.py",
    "tests/library/test_default_sg_handler.py",
    "tests/eks/test_chart.py",
    "tests/eks/test_pod_policy.py",
    "tests/eks/test_chart_instance_types.py",
    "tests/eks/test_chart_parity.py",
    "tests/alerts/test_alerts_construct.py",
    "tests/library/test_tools_package.py",
    "tests/ops/test_ops_cli.py",
}
# A one-worker module whose fixture waits for what another one's makes (a lock of the run) runs
# in that module's group: after it, on the same worker. In a group of its own, its worker would
# sit idle until the other worker had made it (the recipes waited about 85 s for the wheel's
# venv while the other worker built it).
SAME_WORKER_AS = {"tests/library/test_recipes.py": "tests/library/test_wheel.py"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(SAME_WORKER_AS.get(module, module)))


# -- temporary files ---------------------------------------------------------------------------

# the system's temporary directory, before the run points TMPDIR elsewhere
SYSTEM_TMP = Path(tempfile.gettempdir())
# set HYPERPOD_TMP_CHECK=off on a machine where other work writes to the temporary directory
# at the same time (the check cannot tell whose a new entry is)
_TMP_CHECK = os.environ.get("HYPERPOD_TMP_CHECK", "on") != "off"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Point the run's temporary files (``tempfile``, the jsii runtime, every process started
    by a test) into pytest's base temporary directory, and note what the system's holds. The
    xdist workers inherit the environment of the process that starts them."""
    if hasattr(config, "workerinput"):
        return
    run_tmp = config._tmp_path_factory.getbasetemp() / "tmp"  # type: ignore[attr-defined]
    run_tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(run_tmp)
    # Python's bytecode caches (the gitignored __pycache__ folders; the lifecycle uploads and the
    # code hash of the synth cache leave them out) are written even where PYTHONDONTWRITEBYTECODE
    # is set: without them each worker rewrote the asserts of every test module on every run
    # (about 10 s of each worker's collection) and each Python process compiled the library.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    tempfile.tempdir = str(run_tmp)
    config.stash[_TMP_BEFORE] = (set(os.listdir(SYSTEM_TMP)), time.time())


_TMP_BEFORE = pytest.StashKey[tuple[set[str], float]]()
_TMP_LEFT = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run when it left files in the system's temporary directory: entries that are
    new since the start, made by this user since then (pytest's own base folder aside)."""
    if not _TMP_CHECK or _TMP_BEFORE not in session.config.stash:
        return
    before, start = session.config.stash[_TMP_BEFORE]
    left = []
    for name in sorted(set(os.listdir(SYSTEM_TMP)) - before):
        try:
            stat = os.lstat(SYSTEM_TMP / name)
        except FileNotFoundError:
            continue
        if (
            not name.startswith("pytest-of-")
            and stat.st_uid == os.getuid()
            and (stat.st_ctime >= start - 1)
        ):
            left.append(name)
    if left:
        session.config.stash[_TMP_LEFT] = left
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left = config.stash.get(_TMP_LEFT, [])
    if left:
        terminalreporter.write_sep("=", "files left in the temporary directory", red=True)
        terminalreporter.write_line(
            f"the run left {len(left)} entries in {SYSTEM_TMP} (a test must write under its "
            f"tmp_path; HYPERPOD_TMP_CHECK=off when other work shares the folder):"
        )
        for name in left[:50]:
            terminalreporter.write_line(f"  {SYSTEM_TMP / name}")


# -- the synthesized App ---------------------------------------------------------------------


@dataclass
class Synth:
    """One synthesized environment: the App, its stacks, the cloud assembly and the templates.

    Stacks are addressed by kind (``network``, ``storage``, ``nodes``, ``cluster``,
    ``data-repositories``); ``templates`` is keyed by the full stack name.
    """

    config: EnvironmentConfig
    outdir: Path
    templates: dict[str, dict[str, Any]]
    # the App and its stacks: made by the synth of this worker, or on first use (``_objects``)
    _built: tuple[cdk.App, EnvironmentStacks] | None = field(default=None, repr=False)
    _build: Callable[[], tuple[cdk.App, EnvironmentStacks]] | None = field(default=None, repr=False)
    _assertions: dict[str, assertions.Template] = field(default_factory=dict, repr=False)

    def _objects(self) -> tuple[cdk.App, EnvironmentStacks]:
        if self._built is None:
            assert self._build is not None
            self._built = self._build()
        return self._built

    @property
    def app(self) -> cdk.App:
        """The ``cdk.App`` (synthesized in this worker on first use when another made the
        assembly)."""
        return self._objects()[0]

    @property
    def stacks(self) -> EnvironmentStacks:
        """The app's stack objects (see ``app``)."""
        return self._objects()[1]

    @property
    def assembly(self) -> cx_api.CloudAssembly:
        """The cloud assembly of the App (see ``app``; loaded from ``outdir`` through jsii, a
        stack's artifact would come back as a plain ``CloudArtifact``)."""
        return self.app.synth()

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
            self._assertions[kind] = Template.from_json(self.template(kind))
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
        """The kinds of the stacks this one waits for (from the assembly's manifest.json)."""
        prefix = f"{self.config.name}-"
        manifest = json.loads((self.outdir / "manifest.json").read_text())
        names = set(manifest["artifacts"][self.stack_name(kind)].get("dependencies", []))
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


def _synth_objects(
    config: EnvironmentConfig,
    outdir: Path,
    *,
    context: Mapping[str, Any] | None = None,
    project_root: Path = PROJECT_ROOT,
    nag: bool = True,
) -> tuple[cdk.App, EnvironmentStacks]:
    """Build the App of ``config`` as ``app.py`` does and synthesize it into ``outdir``."""
    from stacks.app_builder import build_app, new_app

    app = new_app(context=dict(context or {}), outdir=str(outdir))
    app, stacks = build_app(config, app=app, project_root=project_root, nag=nag)
    try:
        app.synth()
    except Exception as exc:  # a jsii error: validation (cdk-nag) failed, or a construct raised
        raise AssertionError(
            f"synth of {config.name} failed: {str(exc).splitlines()[0]}\n{_validation_summary(outdir)}"
        ) from None
    return app, stacks


def _templates(outdir: Path) -> dict[str, dict[str, Any]]:
    """The template of every stack of the assembly in ``outdir``, by stack name (manifest.json)."""
    manifest = json.loads((outdir / "manifest.json").read_text())
    found = {}
    for artifact_id, artifact in manifest["artifacts"].items():
        if artifact["type"] == "aws:cloudformation:stack":
            properties = artifact["properties"]
            template = json.loads((outdir / properties["templateFile"]).read_text())
            found[properties.get("stackName", artifact_id)] = template
    return found


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
    built = _synth_objects(config, outdir, context=context, project_root=project_root, nag=nag)
    return Synth(config, outdir, _templates(outdir), _built=built)


def _raise_or_return(cached: Synth | AssertionError) -> Synth:
    if isinstance(cached, AssertionError):
        raise AssertionError(*cached.args)
    return cached


# -- one synth per test run, shared by the workers --------------------------------------------

# what the App is made of: the library, the app's stacks, its entry point and feature flags, and
# the lifecycle scripts it uploads (the config is added to each key)
# (the lifecycle scripts are in constructs/: the repository's lifecycle_assets is a symlink to
# constructs/hyperpod_cdk/lifecycle/assets, so naming it too would hash them twice)
_CODE = ("constructs", "stacks", "app.py", "cdk.json")
_NOT_CODE = {"__pycache__", ".mypy_cache", "build", "dist", "cdk.out"}


def _code_hash() -> str:
    """A hash of every file the app's synth reads besides the config (computed once a process)."""
    global _CODE_HASH
    if _CODE_HASH is None:
        digest = hashlib.sha256()
        for name in _CODE:
            root = PROJECT_ROOT / name
            files = [root] if root.is_file() else []
            for folder, directories, names in os.walk(root, followlinks=True):
                directories[:] = sorted(
                    d for d in directories if d not in _NOT_CODE and not d.endswith(".egg-info")
                )
                files.extend(Path(folder) / n for n in sorted(names) if not n.endswith(".pyc"))
            for path in files:
                digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
        _CODE_HASH = digest.hexdigest()
    return _CODE_HASH


_CODE_HASH: str | None = None


def run_directory(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory of this test run that every pytest-xdist worker sees (the workers' base
    temporary directories share a parent; a run without xdist has its own base)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


def _shared_synth(
    tmp_path_factory: pytest.TempPathFactory,
    label: str,
    key_parts: list[Any],
    config: EnvironmentConfig,
    **options: Any,
) -> Synth:
    """The Synth of ``config`` from the run's assembly cache: made by the first worker that asks
    (under a file lock; the others wait for it), read from disk by the others. A failed synth is
    recorded, so every worker reports it at once instead of trying again."""
    key_text = json.dumps([_code_hash(), *key_parts], sort_keys=True, default=str)
    key = f"{label}-{hashlib.sha256(key_text.encode()).hexdigest()[:20]}"
    cache = run_directory(tmp_path_factory, "synth-cache")
    cache.mkdir(parents=True, exist_ok=True)
    outdir, done, failed = cache / key, cache / f"{key}.done", cache / f"{key}.failed"

    def build() -> tuple[cdk.App, EnvironmentStacks]:  # the objects, in this worker
        return _synth_objects(config, tmp_path_factory.mktemp(f"cdk-objects-{label}"), **options)

    with open(cache / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            raise AssertionError(failed.read_text())
        if done.exists():
            return Synth(config, outdir, _templates(outdir), _build=build)
        try:
            synth = synthesize(config, outdir, **options)
        except AssertionError as exc:
            failed.write_text(str(exc))
            raise
        done.write_text(key_text)
        return synth


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str | Path], Synth]:
    """``synthesized("full")`` (or a path): that shipped config, synthesized once per run (shared
    by the workers), with every compliance pack registered (AwsSolutions, NIST 800-53 R5, HIPAA,
    PCI DSS 3.2.1)."""
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
            parts = [str(path), path.read_text(encoding="utf-8"), config.model_dump_json()]
            try:
                cache[path] = _shared_synth(tmp_path_factory, config_id(path), parts, config)
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
    whether cdk-nag accepts it). Synthesized once per run and shared by the workers, as
    ``synthesized`` is, unless ``project_root`` is another folder.
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
            data = with_changes(config_data(base), changes)
            config = parse(data, project_root)
            assert isinstance(config, EnvironmentConfig)
            options = {"context": context, "project_root": project_root, "nag": nag}
            try:
                if project_root == PROJECT_ROOT:  # shared by the workers (the key holds it all)
                    parts = [data, context, nag, config.model_dump_json()]
                    cache[key] = _shared_synth(
                        tmp_path_factory, f"variant-{config_id(config_path(base))}", parts,
                        config, **options,
                    )  # fmt: skip
                else:  # lifecycle scripts from a folder of the test: its own synth
                    outdir = tmp_path_factory.mktemp(f"cdk-variant-{base}")
                    cache[key] = synthesize(config, outdir, **options)
            except AssertionError as exc:
                cache[key] = exc
        return _raise_or_return(cache[key])

    return build

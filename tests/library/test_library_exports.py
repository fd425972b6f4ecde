"""The public API of ``hyperpod_cdk``: every name in ``__all__`` imports from the package, is
documented and typed, and the config names load without starting the CDK."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest
from library_testkit import ROOT, run_python

import hyperpod_cdk

INIT = ROOT / "constructs" / "hyperpod_cdk" / "__init__.py"

# What a platform team composes (issue 6, "The construct library")
CONSTRUCTS = {
    "HyperPodNetwork",
    "EfaSecurityGroup",
    "LustreFileSystem",
    "DataBucket",
    "DataRepositoryAssociations",
    "ExecutionRole",
    "ClusterAutoScalingRole",
    "HyperPodCluster",
    "LifecycleScripts",
    "SlurmAccountingDatabase",
    "HyperPodEksCluster",
    "AdoptedEksCluster",
    "HyperPodDependencies",
    "HyperPodEksAddons",
    "LogsKey",
}
# handles of adopted or created resources, aspects and the rule pack
OTHER_API = {
    "FileSystemHandle",
    "LifecycleRef",
    "AccountingDatabaseRef",
    "EncryptLogGroups",
    "RolePath",
    "HyperPodChecks",
    "register_compliance_packs",
    "acknowledge",
}
CONFIG = {
    "EnvironmentConfig",
    "NetworkConfig",
    "StorageConfig",
    "FsxConfig",
    "DataRepositoryAssociation",
    "ClusterConfig",
    "InstanceGroup",
    "SlurmSettings",
    "EksConfig",
    "EksAddons",
    "EksDependencies",
    "NodeSetup",
    "ConfigError",
    "Issue",
    "check_environment",
    "load_config",
    "load_environment",
    "parse",
    "validate",
    "validate_file",
}
# their parameters are the scope and id every construct takes
SCOPE_PARAMETERS = {"self", "scope", "construct_id"}


def test_all_lists_exactly_the_lazy_exports() -> None:
    names = hyperpod_cdk.__all__
    assert len(names) == len(set(names)), "a name is listed twice in __all__"
    assert set(names) == set(hyperpod_cdk._EXPORTS)


def test_the_issue_names_are_exported() -> None:
    missing = sorted((CONSTRUCTS | OTHER_API | CONFIG) - set(hyperpod_cdk.__all__))
    assert not missing, f"hyperpod_cdk does not export {missing}"


def test_type_checkers_see_every_export_where_it_is_loaded() -> None:
    """The ``if TYPE_CHECKING:`` imports name each export from the module ``__getattr__``
    loads it from, so mypy and an IDE see the same object as the running code."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )
    imported = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == hyperpod_cdk._EXPORTS


@pytest.mark.parametrize("name", sorted(hyperpod_cdk.__all__))
def test_every_export_imports_and_has_a_docstring(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from hyperpod_cdk import {name}", namespace)
    obj = namespace[name]
    assert obj is getattr(hyperpod_cdk, name)
    assert getattr(obj, "__name__", name) == name
    assert getattr(obj, "__module__", "").startswith("hyperpod_cdk."), obj
    assert (inspect.getdoc(obj) or "").strip(), f"{name} has no docstring"


def _documented_parameters(cls: type) -> list[str]:
    return [
        p
        # (the signature of __init__: jsii's metaclass hides the class's own)
        for p in inspect.signature(getattr(cls, "__init__")).parameters  # noqa: B009
        if p not in SCOPE_PARAMETERS and f":param {p}:" not in (inspect.getdoc(cls) or "")
    ]


@pytest.mark.parametrize(
    "name", sorted(n for n in CONSTRUCTS | OTHER_API if inspect.isclass(getattr(hyperpod_cdk, n)))
)
def test_every_construct_parameter_is_typed_and_documented(name: str) -> None:
    cls = getattr(hyperpod_cdk, name)
    init = cls.__init__
    hints = inspect.signature(init)
    untyped = [
        p
        for p, param in hints.parameters.items()
        if p != "self" and param.annotation is param.empty
    ]
    assert not untyped, f"{name}: parameters without a type: {untyped}"
    if not dataclasses.is_dataclass(cls):
        assert hints.return_annotation in (None, "None"), f"{name}.__init__ has no return type"
    undocumented = _documented_parameters(cls)
    assert not undocumented, f"{name}: no ':param ...:' in the docstring for {undocumented}"


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_constructs_are_constructs(name: str) -> None:
    from constructs import Construct

    assert issubclass(getattr(hyperpod_cdk, name), Construct)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchConstruct'"):
        hyperpod_cdk.NoSuchConstruct  # noqa: B018


def test_dir_lists_the_exports() -> None:
    assert set(hyperpod_cdk.__all__) <= set(dir(hyperpod_cdk))


def test_config_names_load_without_the_cdk() -> None:
    """Validation (``make validate``) must stay fast: the config exports never start jsii."""
    config_names = sorted(
        n for n, module in hyperpod_cdk._EXPORTS.items() if module.startswith("hyperpod_cdk.config")
    )
    code = (
        "import sys, hyperpod_cdk\n"
        f"for name in {config_names!r}:\n"
        "    getattr(hyperpod_cdk, name)\n"
        "loaded = [m for m in ('aws_cdk', 'jsii', 'cdk_nag') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    run_python(code)

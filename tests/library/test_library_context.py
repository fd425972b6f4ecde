"""What the library brings with it from pip (issue 17): the CDK feature flags, the lifecycle
scripts and, behind an extra, the kubectl layers.

- ``hyperpod_cdk.recommended_context()`` is the context of the repository's cdk.json, and a
  construct that needs a flag the App lacks stops at once with a ValueError that names the flag
  and the remedy, instead of the CDK failing deep inside the synth;
- ``LifecycleScripts`` without a ``directory`` uploads the scripts shipped in the package (in
  the repository: a symlink to ``lifecycle_assets/``);
- the repository's own environment installs the library with its ``eks`` extra, at the pinned
  layer versions.

tests/library/test_wheel.py checks the same from an installed wheel.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from constructs import Construct
from library_testkit import EXAMPLE, ROOT, project_context, run_python
from packaging.requirements import Requirement

from hyperpod_cdk import DataBucket, LifecycleScripts, recommended_context
from hyperpod_cdk.context import REQUIRED_FLAGS, SERVER_ACCESS_LOGS_USE_BUCKET_POLICY
from hyperpod_cdk.lifecycle import scripts as lifecycle
from hyperpod_cdk.storage import data_bucket

PACKAGE = ROOT / "constructs" / "hyperpod_cdk"
ENV = cdk.Environment(account="111122223333", region="us-west-2")
# the least the packaged scripts boot with (lifecycle_assets/settings.schema.json)
SETTINGS = {"environment": "research", "orchestrator": "eks"}
REMEDY = "cdk.App(context=hyperpod_cdk.recommended_context())"

# the constructs that need the S3 flag (each makes an access-log bucket)
NEEDS_S3_FLAG: dict[str, Callable[[Construct], Construct]] = {
    "DataBucket": lambda stack: DataBucket(stack, "Data"),
    "LifecycleScripts": lambda stack: LifecycleScripts(stack, "Scripts", settings=SETTINGS),
}


def _stack(context: dict[str, Any], name: str = "flags") -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App(context=context, outdir=tempfile.mkdtemp(prefix="hyperpod-context-"))
    return app, cdk.Stack(app, name, env=ENV)


# -- recommended_context() ----------------------------------------------------------------------


def test_recommended_context_is_the_context_of_the_repository_cdk_json() -> None:
    """The package's copy (recommended_context.json) and cdk.json change together."""
    assert recommended_context() == project_context()


def test_recommended_context_is_a_new_dict_every_time() -> None:
    first = recommended_context()
    first.clear()
    assert recommended_context() == project_context()


def test_the_required_flags_are_on_in_the_recommended_context() -> None:
    assert SERVER_ACCESS_LOGS_USE_BUCKET_POLICY in REQUIRED_FLAGS
    context = recommended_context()
    assert {flag: context.get(flag) for flag in REQUIRED_FLAGS} == dict.fromkeys(
        REQUIRED_FLAGS, True
    )


def test_recommended_context_loads_without_the_cdk() -> None:
    """Reading the flags starts no JavaScript runtime (nor imports the CDK)."""
    code = (
        "import sys, hyperpod_cdk\n"
        "assert hyperpod_cdk.recommended_context()\n"
        "loaded = [m for m in ('aws_cdk', 'jsii', 'constructs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    run_python(code)


# -- the check of the required flags --------------------------------------------------------------


@pytest.mark.parametrize("construct", sorted(NEEDS_S3_FLAG))
@pytest.mark.parametrize(
    "context", [{}, {SERVER_ACCESS_LOGS_USE_BUCKET_POLICY: False}], ids=["missing", "false"]
)
def test_a_construct_names_the_flag_it_lacks_and_the_remedy(
    construct: str, context: dict[str, Any]
) -> None:
    _, stack = _stack(context)
    with pytest.raises(ValueError) as raised:
        NEEDS_S3_FLAG[construct](stack)
    message = str(raised.value)
    assert message.startswith("flags/"), message  # where: the construct's path
    assert SERVER_ACCESS_LOGS_USE_BUCKET_POLICY in message
    assert REMEDY in message


@pytest.mark.parametrize("construct", sorted(NEEDS_S3_FLAG))
def test_the_required_flags_alone_are_enough(construct: str) -> None:
    """Only the flags of REQUIRED_FLAGS, none of the rest of recommended_context(): the
    construct synthesizes (the other flags are advice, not requirements)."""
    app, stack = _stack(dict.fromkeys(REQUIRED_FLAGS, True))
    NEEDS_S3_FLAG[construct](stack)
    app.synth()


def test_the_flag_may_be_set_on_the_stack_alone() -> None:
    """The check asks the CDK for the flag where the construct is, as the CDK's own S3 code
    does: an App that sets it only on the stack with the library's constructs works."""
    app, stack = _stack({})
    stack.node.set_context(SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, True)
    DataBucket(stack, "Data")
    app.synth()


def test_without_the_check_the_cdk_fails_deep_in_the_synth(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flag is really needed: with the check switched off, the CDK's own error (which
    names neither the flag nor the remedy) is what a user would get."""
    monkeypatch.setattr(data_bucket, "require_feature_flags", lambda *_: None)
    app, stack = _stack({})
    with pytest.raises(Exception, match='objectOwnership must be set to "ObjectWriter"'):
        DataBucket(stack, "Data")
        app.synth()


# -- the packaged lifecycle scripts -------------------------------------------------------------


def test_the_repository_links_the_packaged_lifecycle_scripts() -> None:
    """The scripts live in the package's lifecycle capability (no link out of the package, so
    the wheel holds them as they are); the repository's lifecycle_assets/, which configs name
    (``cluster.lifecycle_scripts: lifecycle_assets``), is a relative symlink to them that holds
    in any checkout."""
    scripts = PACKAGE / "lifecycle" / "assets"
    assert not scripts.is_symlink() and (scripts / "entrypoint.sh").is_file()
    assert not any(p.is_symlink() for p in (PACKAGE / "lifecycle").rglob("*"))
    link = ROOT / "lifecycle_assets"
    assert link.is_symlink()
    assert os.readlink(link) == "constructs/hyperpod_cdk/lifecycle/assets"
    assert link.resolve() == lifecycle.PACKAGED_SCRIPTS


def test_lifecycle_scripts_default_to_the_packaged_scripts() -> None:
    _, default_stack = _stack(recommended_context(), "default")
    default = LifecycleScripts(default_stack, "Scripts", settings=SETTINGS)
    _, explicit_stack = _stack(recommended_context(), "explicit")
    explicit = LifecycleScripts(
        explicit_stack, "Scripts", directory=ROOT / "lifecycle_assets", settings=SETTINGS
    )
    assert (
        default.hash == explicit.hash == lifecycle.content_hash(ROOT / "lifecycle_assets", SETTINGS)
    )


def test_an_explicit_directory_still_wins() -> None:
    _, stack = _stack(recommended_context())
    scripts = LifecycleScripts(stack, "Scripts", directory=EXAMPLE / "lifecycle", settings=SETTINGS)
    assert scripts.hash == lifecycle.content_hash(EXAMPLE / "lifecycle", SETTINGS)
    assert scripts.hash != lifecycle.content_hash(lifecycle.PACKAGED_SCRIPTS, SETTINGS)


# -- the eks extra in the repository's own environment -------------------------------------------


def _eks_extra() -> list[Requirement]:
    pyproject = tomllib.loads((ROOT / "constructs" / "pyproject.toml").read_text(encoding="utf-8"))
    return [Requirement(r) for r in pyproject["project"]["optional-dependencies"]["eks"]]


def _pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements or constraints file, by normalized name."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return pins


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_repository_installs_the_library_with_its_eks_extra() -> None:
    """make bootstrap (requirements.txt, constraints.txt) installs the library with the `eks`
    extra, at pins inside the extra's ranges, since the app and the tests build EKS
    environments."""
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert "-e ./constructs[eks]" in requirements
    layers = _eks_extra()
    assert sorted(_normalized(r.name) for r in layers) == [
        f"aws-cdk-lambda-layer-kubectl-v{minor}" for minor in range(30, 36)
    ]
    for pins in (_pins(ROOT / "requirements.txt"), _pins(ROOT / "constraints.txt")):
        for layer in layers:
            pinned = pins[_normalized(layer.name)]
            assert layer.specifier.contains(pinned), f"{layer.name}=={pinned} is not {layer}"


def test_every_kubectl_layer_of_the_extra_is_importable_here() -> None:
    """What the EKS constructs import (hyperpod_cdk.eks.cluster.kubectl_layer), per version."""
    import importlib.util

    from hyperpod_cdk.facts.versions import SUPPORTED_KUBERNETES_VERSIONS

    missing = [
        v
        for v in SUPPORTED_KUBERNETES_VERSIONS
        if importlib.util.find_spec(f"aws_cdk.lambda_layer_kubectl_v{v.split('.')[1]}") is None
    ]
    assert missing == []


def _without_module(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """``importlib.import_module`` in hyperpod_cdk.eks.cluster, as if ``missing`` were not
    installed."""
    import importlib

    from hyperpod_cdk.eks import cluster

    real = importlib.import_module

    def import_module(name: str, package: str | None = None) -> Any:
        if name == missing:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, package)

    monkeypatch.setattr(cluster.importlib, "import_module", import_module)


def test_an_eks_construct_without_the_layers_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aws_cdk import aws_ec2 as ec2

    from hyperpod_cdk import HyperPodEksCluster

    _without_module(monkeypatch, "aws_cdk.lambda_layer_kubectl_v33")
    _, stack = _stack(recommended_context())
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=["us-west-2a", "us-west-2b"], nat_gateways=0)
    with pytest.raises(ImportError) as raised:
        HyperPodEksCluster(
            stack, "Eks", vpc=vpc, subnets=vpc.isolated_subnets, kubernetes_version="1.33"
        )
    assert str(raised.value) == (
        "flags/Eks: the EKS constructs need the kubectl Lambda layer of Kubernetes 1.33 "
        "(aws-cdk.lambda-layer-kubectl-v33), which is not installed. Install the library "
        "with its eks extra: pip install '<the hyperpod_cdk wheel>[eks]' (docs/library.md, Install)"
    )


def test_a_kubernetes_version_without_a_layer_is_a_value_error() -> None:
    from hyperpod_cdk.eks.cluster import kubectl_layer

    _, stack = _stack(recommended_context())
    with pytest.raises(ValueError, match=r"no kubectl layer for Kubernetes 1\.29; .* 1\.30, "):
        kubectl_layer(stack, "Layer", "1.29")


def test_a_module_the_layer_imports_is_not_mistaken_for_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the layer package itself missing means the extra is missing."""
    import importlib

    from hyperpod_cdk.eks import cluster

    real = importlib.import_module
    dependency = "aws_cdk.asset_awscli_v1"

    def broken_layer(name: str, package: str | None = None) -> Any:
        if name == "aws_cdk.lambda_layer_kubectl_v35":
            raise ModuleNotFoundError(f"No module named {dependency!r}", name=dependency)
        return real(name, package)

    _, stack = _stack(recommended_context())
    monkeypatch.setattr(cluster.importlib, "import_module", broken_layer)
    with pytest.raises(ModuleNotFoundError, match="asset_awscli_v1"):
        cluster.kubectl_layer(stack, "Layer", "1.35")

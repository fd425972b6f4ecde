"""Orchestrator scope is declared once, as field metadata, and every key says what it is.

- ``eks_only()`` / ``slurm_only()`` on a field is all a new key of one orchestrator needs: the one
  rule (:func:`check_orchestrator_scope`) refuses it under the other orchestrator and the config
  reference marks it; no description says "eks only" in prose any more.
- Every field of the environment and pipeline models has a description (the reference has no
  blank cell).
"""

from __future__ import annotations

import importlib.util
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from config_testkit import build
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from hyperpod_cdk.config import EnvironmentConfig, Issue, PipelineFileConfig
from hyperpod_cdk.config.base import (
    StrictModel,
    check_orchestrator_scope,
    eks_only,
    scope_of,
    slurm_only,
)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "config_reference.py"


class Collector:
    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def error(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message))

    def warn(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message, "warning"))


def scope_errors(model: BaseModel, orchestrator: str) -> list[str]:
    out = Collector()
    check_orchestrator_scope(model, orchestrator, out)
    return [str(issue) for issue in out.issues]


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def every_field() -> list[tuple[str, FieldInfo]]:
    """(dotted key, field) of every key of both file kinds, nested models included."""
    found: list[tuple[str, FieldInfo]] = []
    seen: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel], path: str) -> None:
        if model in seen:
            return
        seen.add(model)
        for key, field in model.model_fields.items():
            where = f"{path}.{key}" if path else key
            found.append((where, field))
            for nested in _models_in(field.annotation):
                walk(nested, where)

    walk(EnvironmentConfig, "")
    walk(PipelineFileConfig, "(pipeline file)")
    return found


FIELDS = every_field()


# -- a new key of one orchestrator: the metadata is all it takes ---------------------------------


class NewGroup(StrictModel):
    """A made-up list item with a key of each orchestrator."""

    name: str = Field(description="The item's name.")
    eks_thing: bool = Field(
        default=False, description="A new eks-only key.", json_schema_extra=eks_only()
    )
    slurm_thing: int = Field(
        default=0, description="A new slurm-only key.", json_schema_extra=slurm_only("because")
    )


class NewSection(StrictModel):
    """A made-up section: a new eks-only key and a list of items inside."""

    new_key: bool = Field(
        default=False, description="A new eks-only key.", json_schema_extra=eks_only()
    )
    items: list[NewGroup] = Field(default_factory=list, description="Items.")


class NewRoot(StrictModel):
    """A made-up root with an eks-only section."""

    section: NewSection = Field(default_factory=NewSection, description="The section.")
    eks_section: NewSection | None = Field(
        default=None, description="An eks-only section.", json_schema_extra=eks_only()
    )


def test_a_new_eks_only_key_with_only_the_metadata_is_refused_under_slurm() -> None:
    root = NewRoot.model_validate({"section": {"new_key": True}})
    assert scope_errors(root, "slurm") == [
        "config error: section.new_key: applies only with orchestrator: eks; set orchestrator: "
        "eks to use it, or remove it"
    ]
    assert scope_errors(root, "eks") == []


def test_the_rule_reaches_list_items_and_says_the_reason() -> None:
    root = NewRoot.model_validate(
        {"section": {"items": [{"name": "a"}, {"name": "b", "eks_thing": True, "slurm_thing": 2}]}}
    )
    assert scope_errors(root, "slurm") == [
        "config error: section.items[1].eks_thing: applies only with orchestrator: eks; set "
        "orchestrator: eks to use it, or remove it"
    ]
    assert scope_errors(root, "eks") == [
        "config error: section.items[1].slurm_thing: applies only with orchestrator: slurm "
        "(because); set orchestrator: slurm to use it, or remove it"
    ]


def test_a_refused_section_is_named_once_not_looked_into() -> None:
    root = NewRoot.model_validate({"eks_section": {"new_key": True}})
    assert scope_errors(root, "slurm") == [
        "config error: eks_section: section applies only with orchestrator: eks; set "
        "orchestrator: eks to use it, or remove it"
    ]


def test_a_key_left_out_or_at_its_default_changes_nothing_and_passes() -> None:
    # the default is what the other orchestrator gets anyway: nothing to refuse
    root = NewRoot.model_validate({"section": {"new_key": False, "items": [{"name": "a"}]}})
    assert scope_errors(root, "slurm") == []
    assert scope_errors(NewRoot(), "slurm") == []


def test_the_shipped_models_are_checked_by_the_same_rule() -> None:
    # cluster.instance_groups[].labels carries eks_only() and nothing else names it
    config = EnvironmentConfig.model_validate(
        build({"cluster.instance_groups[2].labels": {"team": "a"}})
    )
    assert scope_errors(config, "slurm") == [
        "config error: cluster.instance_groups[2].labels: applies only with orchestrator: eks; "
        "set orchestrator: eks to use it, or remove it"
    ]


def test_the_reference_marks_a_key_by_its_metadata() -> None:
    spec = importlib.util.spec_from_file_location("config_reference", SCRIPT)
    assert spec and spec.loader
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("config_reference", module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    text = module.section_text(module.Section("section", NewSection))
    assert "| `new_key` | boolean | `false` | **eks only.** A new eks-only key. |" in text
    # a section inside an eks-only key says it once, above its table
    nested = next(s for s in module.walk(NewRoot) if s.path == "eks_section")
    intro = module.section_text(nested)
    assert "**eks only.** A made-up section" in intro
    assert "| `new_key` | boolean | `false` | A new eks-only key. |" in intro


# -- the shipped models --------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "field"), FIELDS, ids=[key for key, _ in FIELDS])
def test_every_key_has_a_description(key: str, field: FieldInfo) -> None:
    assert field.description, f"{key}: add Field(description=...) (what it does; when optional, "
    "what happens when it is left out)"


@pytest.mark.parametrize(("key", "field"), FIELDS, ids=[key for key, _ in FIELDS])
def test_no_description_declares_the_orchestrator_in_prose(key: str, field: FieldInfo) -> None:
    # the scope is eks_only()/slurm_only(): a prose "eks only:" would be a second declaration
    # that no rule reads
    text = (field.description or "").lower()
    assert not text.startswith(("eks only", "slurm only")), key


def test_the_scoped_keys_are_the_ones_of_one_orchestrator() -> None:
    scoped = {
        key: scope.orchestrator for key, field in FIELDS if (scope := scope_of(field)) is not None
    }
    assert scoped["eks"] == "eks"
    assert scoped["cluster.slurm"] == "slurm"
    assert scoped["cluster.node_setup.eks_containerd_on_ebs"] == "eks"
    assert scoped["storage.openzfs"] == "slurm"
    assert scoped["cluster.node_pools"] == "eks"
    assert scoped["observability.levels.ray"] == "eks"
    assert scoped["observability.extension_version"] == "slurm"
    assert "cluster.instance_groups.count" not in scoped

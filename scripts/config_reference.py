#!/usr/bin/env python3
"""Print the config reference of docs/configuration.md, generated from the pydantic config models.

    python scripts/config_reference.py           # print the Markdown reference
    python scripts/config_reference.py --write   # rewrite the block between the markers in docs/configuration.md
    python scripts/config_reference.py --check   # exit 1 when the block in docs/configuration.md is out of date

One table per section of the environment file (and of a pipeline file), with
key, type or allowed values, default and description. The descriptions come
from ``Field(description=...)``; the orchestrator a key applies to only comes from
its field metadata (``eks_only()`` / ``slurm_only()`` of
:mod:`hyperpod_cdk.config.base`) and marks the key and every section inside it; a
leading "Continuous only" becomes a marker too.

Runs with the project's Python (hyperpod_cdk installed) and never imports the
CDK: only ``hyperpod_cdk.config`` is loaded.
"""

from __future__ import annotations

import ipaddress
import re
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, StringConstraints
from pydantic.fields import FieldInfo

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import PATTERN_HINTS, scope_of
from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.pipeline import PipelineFileConfig

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "configuration.md"
START = "<!-- config-reference:start -->"
END = "<!-- config-reference:end -->"

# Allowed values that a field validator (not the type) enforces, by dotted path.
VALIDATED_VALUES: dict[str, tuple[str, ...]] = {
    "network.interface_endpoints": facts.INTERFACE_ENDPOINT_SERVICES,
}

_CONTINUOUS_SCOPE = re.compile(r"^Continuous\b(?: only\b)?[,;:.]?\s*")


# -- Markdown helpers ----------------------------------------------------------


def _escape(text: str) -> str:
    """Plain text for a Markdown table cell: no accidental emphasis, HTML or column breaks."""
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
    text = text.replace("<", "\\<").replace(">", "\\>")
    return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", text)


def _code(text: str) -> str:
    return f"`{text}`".replace("|", "\\|")


def _anchor(path: str) -> str:
    return "config-" + (re.sub(r"[^a-z0-9_]+", "-", path.lower()).strip("-") or "top-level")


def _link(path: str) -> str:
    return f"[{_code(path)}](#{_anchor(path)})"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] if text else ""


def _orchestrator(field: FieldInfo, inherited: str | None) -> str | None:
    """The orchestrator a key applies to only: its own scope, else its section's."""
    scope = scope_of(field)
    return scope.orchestrator if scope else inherited


def _scopes(text: str, orchestrator: str | None = None) -> tuple[list[str], str]:
    """The scope markers of a description (the orchestrator given, a leading "Continuous
    only"), and the rest of it."""
    scopes = [f"{orchestrator} only"] if orchestrator else []
    match = _CONTINUOUS_SCOPE.match(text)
    if match:
        scopes.append("Continuous only")
        text = text[match.end() :]
    text = " ".join(text.split())
    return scopes, _sentence(text) if scopes else text


def _described(scopes: list[str], text: str) -> str:
    marker = f"**{', '.join(scopes)}.**" if scopes else ""
    return " ".join(part for part in (marker, _escape(text)) if part)


# -- types ---------------------------------------------------------------------


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _strip(tp: Any) -> tuple[Any, list[Any]]:
    """The type inside Annotated and Optional, and the constraints found on the way."""
    meta: list[Any] = []
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp, *extra = typing.get_args(tp)
            for item in extra:
                meta.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp, meta
            tp = args[0]
        else:
            return tp, meta


def _nullable(tp: Any) -> bool:
    """True when the field accepts null (``X | None``)."""
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _model_of(tp: Any) -> tuple[type[BaseModel] | None, bool]:
    """The nested model of a field (and whether it is a list of them), else None."""
    tp, _ = _strip(tp)
    if typing.get_origin(tp) is list:
        inner, _ = _strip(typing.get_args(tp)[0])
        return (inner, True) if _is_model(inner) else (None, False)
    return (tp, False) if _is_model(tp) else (None, False)


def _hint(meta: list[Any]) -> tuple[str | None, StringConstraints | None]:
    for item in meta:
        if isinstance(item, StringConstraints):
            if item.pattern is None:
                return None, item
            return PATTERN_HINTS.get(str(item.pattern), f"text matching {item.pattern}"), item
    return None, None


def _noun(hint: str) -> str | None:
    """``an AZ ID like usw2-az2 (...)`` -> ``AZ ID``; None when the hint is not a noun phrase."""
    match = re.match(r"^(?:a|an|the) (.+)$", hint)
    if not match:
        return None
    noun = re.split(r" like |: | \(", match.group(1))[0]
    return noun.rstrip(", ")


def _number_range(name: str, meta: list[Any]) -> str:
    low = next((m.ge for m in meta if isinstance(m, Ge)), None)
    high = next((m.le for m in meta if isinstance(m, Le)), None)
    low_x = next((m.gt for m in meta if isinstance(m, Gt)), None)
    high_x = next((m.lt for m in meta if isinstance(m, Lt)), None)
    if low is not None and high is not None:
        return f"{name} {low}..{high}"
    bounds = [f">= {low}" if low is not None else "", f"> {low_x}" if low_x is not None else ""]
    bounds += [
        f"<= {high}" if high is not None else "",
        f"< {high_x}" if high_x is not None else "",
    ]
    return " ".join([name, *(b for b in bounds if b)])


def _length(meta: list[Any], unit: str) -> str:
    low = next((m.min_length for m in meta if isinstance(m, MinLen)), None)
    high = next((m.max_length for m in meta if isinstance(m, MaxLen)), None)
    for item in meta:
        if isinstance(item, StringConstraints):
            low = item.min_length if item.min_length is not None else low
            high = item.max_length if item.max_length is not None else high
    if low is not None and high is not None:
        return f"{low}..{high} {unit}"
    if low == 1 and unit == "characters":
        return "not empty"
    if low is not None:
        return f"at least {low} {unit}"
    if high is not None:
        return f"at most {high} {unit}"
    return ""


def type_text(
    annotation: Any, meta: list[Any] | None = None, *, short: bool = False, path: str = ""
) -> str:
    """How a field's type reads in the table (``short``: as an item of a list or mapping)."""
    tp, found = _strip(annotation)
    meta = [*(meta or []), *found]
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " \\| ".join(_code(_yaml(v)) for v in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(
            type_text(a, short=True) for a in typing.get_args(tp) if a is not type(None)
        )
    if origin is list:
        (item,) = typing.get_args(tp)
        model, _ = _model_of(item)
        if path in VALIDATED_VALUES:
            inner = ", ".join(_code(v) for v in VALIDATED_VALUES[path])
            text = f"list of: {inner}"
        elif model is not None:
            text = "list of mappings"
        else:
            text = f"list of {type_text(item, short=True)}"
        limit = _length(meta, "items")
        return f"{text} ({limit})" if limit else text
    if origin is dict and short:
        return "mapping"
    if origin is dict:
        key, value = typing.get_args(tp)
        return f"mapping: {type_text(key, short=True)} → {type_text(value, short=True)}"
    if _is_model(tp):
        return "mapping"
    if tp is bool:
        return "boolean"
    if tp is int:
        return _number_range("integer", meta)
    if tp is float:
        return _number_range("number", meta)
    if tp is ipaddress.IPv4Network:
        return "IPv4 CIDR"
    if tp is str:
        hint, constraints = _hint(meta)
        if hint is None:
            limit = _length(meta, "characters")
            return f"string ({limit})" if limit and not short else "string"
        if short:
            return _escape(_noun(hint) or "string")
        return "string: " + _escape(re.sub(r" \([^()]*\)$", "", hint))
    if tp is Any:
        return "any"
    return _escape(getattr(tp, "__name__", str(tp)))


# -- defaults ------------------------------------------------------------------


def _yaml(value: Any) -> str:
    """A value as it would be written in the YAML file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, BaseModel):
        return "{}"
    if isinstance(value, ipaddress.IPv4Network | int | float):
        return str(value)
    if isinstance(value, str):
        return value if yaml.safe_load(value) == value and value.strip() == value else f'"{value}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml(k)}: {_yaml(v)}" for k, v in value.items()) + "}"
    return str(value)


def default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        return _code(_yaml(field.default_factory()))  # type: ignore[call-arg]
    return _code(_yaml(field.default))


# -- sections ------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One table: the keys of ``model`` at ``path`` (``""`` for the top level), all of them only
    for ``orchestrator`` when it is set."""

    path: str
    model: type[BaseModel]
    orchestrator: str | None = None


def _doc(model: type[BaseModel]) -> str:
    return (model.__doc__ or "").strip().split("\n\n")[0]


def walk(
    model: type[BaseModel], path: str = "", orchestrator: str | None = None
) -> Iterator[Section]:
    """The section of ``model`` (when it has keys of its own), then those of its nested models."""
    fields = model.model_fields
    if not path or any(_model_of(f.annotation)[0] is None for f in fields.values()):
        yield Section(path, model, orchestrator)
    for key, field in fields.items():
        nested, is_list = _model_of(field.annotation)
        if nested is not None:
            yield from walk(
                nested,
                f"{path}.{key}".lstrip(".") + ("[]" if is_list else ""),
                _orchestrator(field, orchestrator),
            )


def _first_section(model: type[BaseModel], path: str) -> str:
    """The section a nested-model key links to (its own, or its first nested one)."""
    return next(walk(model, path)).path


def row(section: Section, key: str, field: FieldInfo) -> str:
    path = f"{section.path}.{key}".lstrip(".")
    nested, is_list = _model_of(field.annotation)
    description = field.description or ""
    # the section's own scope is said once, above its table
    own = _orchestrator(field, section.orchestrator)
    orchestrator = own if own != section.orchestrator else None
    if nested is not None:
        target = _first_section(nested, path + ("[]" if is_list else ""))
        kind = "list of mappings" if is_list else "mapping"
        type_cell = f"{kind}, see {_link(target)}"
        field_scopes, field_text = _scopes(description, orchestrator)
        doc_scopes, doc_text = _scopes(_doc(nested))
        scopes = field_scopes + [s for s in doc_scopes if s not in field_scopes]
        text = field_text or doc_text
    else:
        type_cell = type_text(field.annotation, list(field.metadata), path=path)
        if (
            _nullable(field.annotation)
            and field.default is not None
            and field.default_factory is None
        ):
            type_cell += f" or {_code('null')}"
        scopes, text = _scopes(description, orchestrator)
    return f"| {_code(key)} | {type_cell} | {default_text(field)} | {_described(scopes, text)} |"


def section_text(section: Section) -> str:
    scopes, text = _scopes(_doc(section.model), section.orchestrator)
    title = _code(section.path) if section.path else "Top level"
    lines = [f'<a id="{_anchor(section.path)}"></a>', "", f"### {title}", ""]
    intro = _described(scopes, text)
    if intro:
        lines += [intro, ""]
    lines += ["| key | type / allowed values | default | description |", "|---|---|---|---|"]
    for key, field in section.model.model_fields.items():
        lines.append(row(section, key, field))
    return "\n".join(lines)


def render() -> str:
    """The whole reference: the environment file, then the pipeline file."""
    parts = [
        "<!-- Generated by `python scripts/config_reference.py --write` from "
        "the models of constructs/hyperpod_cdk/config/: edit the models, not this block. -->",
    ]
    parts += [section_text(s) for s in walk(EnvironmentConfig)]
    pipeline_keys = [k for k in PipelineFileConfig.model_fields if k != "pipeline"]
    keys = ", ".join(
        _code(k) + (" (required)" if PipelineFileConfig.model_fields[k].is_required() else "")
        for k in pipeline_keys
    )
    parts.append(
        "A file with a `pipeline` key is a pipeline file. Besides `pipeline` it takes only "
        f"{keys}, as in an environment file."
    )
    pipeline_field = PipelineFileConfig.model_fields["pipeline"]
    nested, _ = _model_of(pipeline_field.annotation)
    assert nested is not None
    parts += [section_text(s) for s in walk(nested, "pipeline")]
    return "\n\n".join(parts)


# -- the block in docs/configuration.md --------------------------------------------------------------


def with_block(readme: str, text: str) -> str:
    """``readme`` (the page) with the text between the markers replaced by ``text``."""
    if (
        readme.count(START) != 1
        or readme.count(END) != 1
        or readme.index(START) > readme.index(END)
    ):
        raise SystemExit(f"docs/configuration.md needs exactly one {START} ... {END} block")
    head, rest = readme.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{text}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if argv not in ([], ["--write"], ["--check"]):
        print("usage: python scripts/config_reference.py [--write | --check]", file=sys.stderr)
        return 2
    text = render()
    if not argv:
        print(text)
        return 0
    current = REFERENCE.read_text(encoding="utf-8")
    updated = with_block(current, text)
    if argv == ["--check"]:
        if updated != current:
            print("docs/configuration.md: the config reference is out of date; run: python scripts/config_reference.py --write",
                  file=sys.stderr)  # fmt: skip
            return 1
        return 0
    if updated != current:
        REFERENCE.write_text(updated, encoding="utf-8")
        print("docs/configuration.md: config reference rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Load an environment (or pipeline) YAML file into typed models.

All problems are collected and raised together as :class:`ConfigError`, whose
lines follow the error contract of SPEC section 3::

    config error: storage.fsx.storage_capacity_gib: 1300 is not valid for PERSISTENT_2; use ...
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import PATTERN_HINTS, Issue, dotted
from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.network import UNION_TAG_PREFIX
from hyperpod_cdk.config.pipeline import (
    LoadedStage,
    PipelineFileConfig,
    check_pipeline_file,
    check_stage_environment,
    check_stages,
    in_stage,
    outside_project,
    stage_path,
)
from hyperpod_cdk.config.rules import check_environment


class ConfigError(Exception):
    """An invalid config: every problem found, each with its dotted key path."""

    def __init__(self, issues: list[Issue], source: str = "") -> None:
        self.issues = [i for i in issues if i.severity == "error"]
        self.warnings = [i for i in issues if i.severity == "warning"]
        self.source = source
        super().__init__("\n".join(str(i) for i in self.issues))


# A config file is a few kilobytes; these limits keep a broken or hostile file from exhausting
# memory or the interpreter's stack (PyYAML builds nested values recursively).
MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 64
# Byte order marks, longest first (the UTF-32 LE mark begins with the UTF-16 LE one).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML keeps the last), a
    key that is not a scalar, and nesting deeper than :data:`MAX_DEPTH`."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        depth = getattr(self, "_depth", 0)
        if depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
            )
        self._depth = depth + 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth = depth


def _construct_mapping(
    loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "a key must be a plain word, not a list or a mapping",
                key_node.start_mark,
            )
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def decode(raw: bytes, path: Path) -> str:
    """The text of a config file: UTF-8 with or without a byte order mark, or UTF-16/32 with
    one (Windows PowerShell's ``>`` writes UTF-16 LE with a mark); anything else is one
    ConfigError that names the first byte that is not UTF-8."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            try:
                return raw[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                offset = exc.start + len(bom)
                raise ConfigError(
                    [
                        Issue(
                            str(path),
                            f"is not valid {codec.upper()} at byte {offset}; save it as UTF-8",
                        )
                    ]
                ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            [
                Issue(
                    str(path),
                    f"is not UTF-8: byte {exc.start} is 0x{raw[exc.start]:02x} (Latin-1 or another "
                    "encoding?); save the file as UTF-8",
                )
            ]
        ) from None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """One line: where (line and column) and what."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        before = text[: exc.position]
        line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return (
            f"not valid YAML (line {line}, column {column}): character U+{code:04X} is not "
            "allowed in a YAML file (a binary or control character)"
        )
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return _one_line(f"not valid YAML{where}: {problem}")


def read_yaml(path: Path) -> dict[str, Any]:
    """The YAML mapping in ``path``, or ConfigError with the line of the problem."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(
                [
                    Issue(
                        str(path),
                        f"is {size} bytes; a config file is at most {MAX_FILE_BYTES} bytes",
                    )
                ]
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError([Issue(str(path), f"cannot read the file: {exc.strerror}")]) from None
    text = decode(raw, path)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError([Issue(str(path), _yaml_problem(exc, text))]) from None
    except RecursionError:
        raise ConfigError([Issue(str(path), f"is nested deeper than {MAX_DEPTH} levels")]) from None
    if not isinstance(data, dict):
        raise ConfigError(
            [Issue(str(path), "the file must hold a mapping of keys (name, region, network, ...)")]
        )
    return data


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional/Union/Annotated."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class found by walking ``loc`` down from ``root``."""
    current: Any = root
    for part in loc:
        candidates = _unwrap(current)
        nxt = None
        for cand in candidates:
            origin = typing.get_origin(cand)
            if isinstance(part, str) and isinstance(cand, type) and issubclass(cand, BaseModel):
                field = cand.model_fields.get(part)
                if field is not None:
                    nxt = field.annotation
            elif isinstance(part, int) and origin is list:
                nxt = typing.get_args(cand)[0]
            elif isinstance(part, str) and origin is dict:
                nxt = typing.get_args(cand)[1]
            if nxt is not None:
                break
        if nxt is None:
            return None
        current = nxt
    models = [c for c in _unwrap(current) if isinstance(c, type) and issubclass(c, BaseModel)]
    return models[0] if models else None


def _kind_of(value: Any) -> str:
    """How the YAML value reads to the person who wrote it."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


_EXPECTED = {
    "model_type": "a mapping of keys",
    "model_attributes_type": "a mapping of keys",
    "dict_type": "a mapping of keys",
    "list_type": "a list",
    "string_type": "text",
    "int_type": "a whole number",
    "bool_type": "true or false",
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _az_id_problem(value: Any, region: str | None) -> str:
    """What is wrong with a value given where an AZ ID is expected, and the AZ ID to give: one of
    the config's ``region`` when that is a known region, else of the region an AZ name names (an
    unknown region is reported once, at ``region``)."""
    name_region = facts.az_name_region(value) if isinstance(value, str) else None
    target = region if region in facts.REGIONS else name_region
    example = facts.az_id_example(target) if target else None
    if name_region is not None:
        of = f" of {name_region}" if name_region != target else ""
        what = f"{value!r} is an AZ name{of}, not an AZ ID"
        find = f"to find the AZ ID of {value} in your account" if not of else ""
    else:
        what = f"{_short(value)} is not an AZ ID"
        find = ""
    if target is None or example is None:
        return f"{what}; use an AZ ID like usw2-az2"
    find = find or "to map AZ names to AZ IDs in your account"
    return (
        f"{what}; use an AZ ID of {target} like {example}; {find}, run: "
        f"{facts.az_mapping_command(target)}"
    )


def _issue_from_pydantic(
    root: type[BaseModel], err: ErrorDetails, region: str | None = None
) -> Issue:
    """One problem of pydantic's in words; ``region`` is the config's (raw) region, for advice."""
    loc = tuple(
        p
        for p in err["loc"]
        if p != "[key]" and not (isinstance(p, str) and p.startswith(UNION_TAG_PREFIX))
    )
    path = dotted(loc) or "(top level)"
    kind = err["type"]
    value = err.get("input")
    if kind == "extra_forbidden":
        parent = _model_at(root, loc[:-1])
        allowed = sorted(parent.model_fields) if parent else []
        guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f" (did you mean {guess[0]!r}?)" if guess else ""
        return Issue(path, f"unknown key{hint}; allowed here: {', '.join(allowed)}")
    if kind == "missing":
        model = _model_at(root, loc)
        if model is not None:
            required = [n for n, f in model.model_fields.items() if f.is_required()]
            if required:
                return Issue(f"{path}.{required[0]}", "required key is missing")
        return Issue(path, "required key is missing")
    if kind == "value_error":
        message = err["msg"].removeprefix("Value error, ")
        return Issue(path, message)
    if kind == "string_pattern_mismatch":
        pattern = (err.get("ctx") or {}).get("pattern", "")
        if pattern == facts.AZ_ID_PATTERN:
            return Issue(path, _az_id_problem(value, region))
        hint = PATTERN_HINTS.get(str(pattern), f"text matching {pattern}")
        if pattern == facts.REGION_PATTERN and isinstance(value, str):
            region_guess = facts.close_region(value)
            hint = f"{hint} (did you mean {region_guess!r}?)" if region_guess else hint
        return Issue(path, f"{_short(value)} is not valid; use {hint}")
    if kind == "literal_error":
        expected = (err.get("ctx") or {}).get("expected", "")
        return Issue(path, f"{_short(value)} is not allowed; use {expected}")
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        return Issue(path, f'{value!r} is a number here; quote it ("{value}") to give text')
    if kind in _EXPECTED:
        given = "is empty (null)" if value is None else f"{_short(value)} is {_kind_of(value)}"
        return Issue(path, f"{given}; {_EXPECTED[kind]} is expected here")
    if kind == "too_short":
        return Issue(
            path,
            f"{_short(value)} is too short; at least {err['ctx']['min_length']} item(s) are needed",
        )
    if kind == "too_long":
        return Issue(path, f"{len(value)} items; at most {err['ctx']['max_length']} are allowed")
    return Issue(path, f"{_short(value)} is not valid: {err['msg']}")


def validate(
    data: dict[str, Any], project_root: Path | None = None, source: str = ""
) -> tuple[EnvironmentConfig | PipelineFileConfig, list[Issue]]:
    """The config in a loaded YAML mapping and its warnings, or ConfigError with every problem.

    The pipeline model when the mapping has ``pipeline``, else an environment. A pipeline
    mapping alone is checked for its own keys only: its stages are files relative to the
    pipeline file, which :func:`validate_file` (or :func:`load_stages`) reads and checks.
    """
    root: type[EnvironmentConfig] | type[PipelineFileConfig] = (
        PipelineFileConfig if "pipeline" in data else EnvironmentConfig
    )
    try:
        cfg = root.model_validate(data)
    except ValidationError as exc:
        region = data.get("region") if isinstance(data.get("region"), str) else None
        raise ConfigError(
            [_issue_from_pydantic(root, e, region) for e in exc.errors()], source
        ) from None
    if isinstance(cfg, PipelineFileConfig):
        return cfg, []
    issues = check_environment(cfg, project_root)
    if any(i.severity == "error" for i in issues):
        raise ConfigError(issues, source)
    return cfg, issues


def parse(
    data: dict[str, Any], project_root: Path | None = None, source: str = ""
) -> EnvironmentConfig | PipelineFileConfig:
    """Validate a loaded YAML mapping: the pipeline model when it has ``pipeline``, else an environment."""
    return validate(data, project_root, source)[0]


def validate_file(
    path: str | Path, project_root: str | Path | None = None
) -> tuple[EnvironmentConfig | PipelineFileConfig, list[Issue]]:
    """Read and validate ``path``: the config and its warnings. ``project_root`` as in load_config.

    For a pipeline file, each stage's environment config is read and validated too.
    """
    cfg, _, warnings = load_file(path, project_root)
    return cfg, warnings


def load_file(
    path: str | Path, project_root: str | Path | None = None
) -> tuple[EnvironmentConfig | PipelineFileConfig, list[LoadedStage], list[Issue]]:
    """Read and validate ``path`` once: the config, a pipeline file's loaded stages (none for an
    environment file) and the warnings of both. ``project_root`` as in load_config."""
    path = Path(path)
    root = Path(project_root) if project_root is not None else Path.cwd()
    cfg, warnings = validate(read_yaml(path), root, str(path))
    stages: list[LoadedStage] = []
    if isinstance(cfg, PipelineFileConfig):
        stages, stage_warnings = load_stages(cfg, path, root)
        warnings = [*warnings, *stage_warnings]
    return cfg, stages, warnings


def load_stages(
    cfg: PipelineFileConfig, pipeline_file: str | Path, project_root: str | Path | None = None
) -> tuple[list[LoadedStage], list[Issue]]:
    """Each stage's environment config, read relative to ``pipeline_file``, and the warnings;
    or ConfigError with every problem of every stage, each at ``pipeline.stages[i]...``.

    ``project_root`` (default: the cwd) is the repository the pipeline checks out: the pipeline
    file and every stage config must be inside it, and it resolves ``lifecycle_scripts``.
    """
    pipeline_file = Path(pipeline_file)
    root = Path(project_root) if project_root is not None else Path.cwd()
    issues = check_pipeline_file(cfg, pipeline_file, root)
    loaded: list[tuple[int, LoadedStage]] = []
    for index, stage in enumerate(cfg.pipeline.stages):
        path = (pipeline_file.parent / stage.config).resolve()
        if not path.is_file():
            issues.append(
                Issue(
                    stage_path(index),
                    f"{stage.config!r} is not a file ({path}); stage config paths are relative "
                    "to the pipeline file",
                )
            )
            continue
        if outside_project(path, root):
            issues.append(
                Issue(
                    stage_path(index),
                    f"{stage.config!r} is outside the project ({root.resolve()}); the pipeline "
                    "synthesizes from its checkout of the repository: keep stage configs in it",
                )
            )
            continue
        try:
            env, env_warnings = validate(read_yaml(path), root, str(path))
        except ConfigError as exc:
            issues += [in_stage(index, stage, i, path) for i in [*exc.issues, *exc.warnings]]
            continue
        if not isinstance(env, EnvironmentConfig):
            issues.append(
                Issue(
                    stage_path(index),
                    f"{stage.config!r} is a pipeline file; a stage needs an environment config",
                )
            )
            continue
        issues += [in_stage(index, stage, i) for i in env_warnings]
        issues += check_stage_environment(index, stage, env)
        loaded.append((index, LoadedStage(stage, env, path)))
    issues += check_stages(loaded)
    if any(i.severity == "error" for i in issues):
        raise ConfigError(issues, str(pipeline_file))
    return [stage for _, stage in loaded], issues


def load_config(
    path: str | Path, project_root: str | Path | None = None
) -> EnvironmentConfig | PipelineFileConfig:
    """Read and validate ``path``. ``project_root`` (default: the cwd) resolves lifecycle_scripts."""
    return validate_file(path, project_root)[0]


def load_environment(path: str | Path, project_root: str | Path | None = None) -> EnvironmentConfig:
    """Like :func:`load_config`, for a file that must describe one environment."""
    cfg = load_config(path, project_root)
    if not isinstance(cfg, EnvironmentConfig):
        raise ConfigError(
            [
                Issue(
                    "pipeline", "this file describes a pipeline; an environment file is needed here"
                )
            ]
        )
    return cfg

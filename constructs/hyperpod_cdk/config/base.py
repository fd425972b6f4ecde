"""What every config section builds on: the strict model, the field helpers, the value types
several sections share, the issue sink the rules write to, and orchestrator scope.

Nothing here knows a section: each section module (network, storage, cluster, eks, ...) imports
this one and :mod:`hyperpod_cdk.facts`, never the other way round. Every model forbids unknown
keys (they are usually typos); numbers are YAML numbers only (:data:`WHOLE_NUMBER`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
)
from pydantic.fields import FieldInfo

from hyperpod_cdk import facts

# The hint shown when a value does not match a pattern, by pattern (read by the loader).
PATTERN_HINTS: dict[str, str] = {}


def matching(regex: str, hint: str, **limits: Any) -> StringConstraints:
    """A string constraint whose mismatch message tells what is expected: ``hint``."""
    PATTERN_HINTS[regex] = hint
    return StringConstraints(pattern=regex, **limits)


def describe_value(value: Any) -> str:
    """How a YAML value reads to the person who wrote it: ``a boolean (true)``, ``a number (5)``,
    ``text ('12')``, ``null``, ``a list``, ``a mapping``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"text ({value[:40]!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _whole_number(value: Any) -> Any:
    """A YAML integer and nothing else. Pydantic's lax mode would read ``true`` as 1, ``"12"`` as
    12 and ``2.0`` as 2; each of those is a mistake in a config file (a quoted number is text)."""
    if isinstance(value, bool | str):
        fix = ""
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
            fix = f"; write {value.strip()} without quotes"
        raise ValueError(f"expected a number, got {describe_value(value)}{fix}")
    if isinstance(value, float):
        fix = f"; write {int(value)}" if value.is_integer() else ""
        raise ValueError(f"expected a whole number, got {value}{fix}")
    return value


# Every int (and int Literal) of the config carries this, *after* its Field limits (so that the
# JSON Schema keeps minimum/maximum): ``Annotated[int, Field(ge=0), WHOLE_NUMBER]``.
WHOLE_NUMBER = BeforeValidator(_whole_number)


class StrictModel(BaseModel):
    """Base of every config model: frozen, and unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    def is_set(self, key: str) -> bool:
        """True when the YAML gave ``key`` explicitly (not the default)."""
        return key in self.model_fields_set


def unique(values: list[Any], what: str) -> list[Any]:
    """``values`` when no value repeats; else a ValueError naming the first repeat."""
    seen: set[Any] = set()
    dupes = [v for v in values if v in seen or seen.add(v)]  # type: ignore[func-returns-value]
    if dupes:
        raise ValueError(f"{what} must not repeat; {dupes[0]!r} appears more than once")
    return values


def dotted(loc: tuple[int | str, ...]) -> str:
    """``("cluster", "instance_groups", 2, "name")`` -> ``cluster.instance_groups[2].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


# -- problems found by the cross-key rules -----------------------------------------------------


@dataclass(frozen=True)
class Issue:
    """One problem (or warning) found in a config, at a dotted key path."""

    path: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        prefix = "config error" if self.severity == "error" else "config warning"
        return f"{prefix}: {self.path}: {self.message}"


class IssueSink(Protocol):
    """Where the rules put what they find (:func:`hyperpod_cdk.config.rules.check_environment`
    collects them)."""

    def error(self, path: str, message: str) -> None: ...

    def warn(self, path: str, message: str) -> None: ...


# -- orchestrator scope ------------------------------------------------------------------------

Orchestrator = Literal["slurm", "eks"]
# The key the JSON Schema of a scoped field carries, naming its one orchestrator.
SCOPE_KEY = "orchestrator"


@dataclass(frozen=True)
class OnlyWith:
    """Field metadata: the key applies only with ``orchestrator`` (``why`` is said in the error).

    Given as ``Field(..., json_schema_extra=eks_only())``: :func:`check_orchestrator_scope`
    refuses the key under the other orchestrator, the config reference marks it, and the JSON
    Schema says it (``"orchestrator": "eks"``, and the description starts "eks only.", which
    editors show).
    """

    orchestrator: Orchestrator
    why: str | None = None

    def __call__(self, schema: dict[str, JsonValue]) -> None:
        schema[SCOPE_KEY] = self.orchestrator
        text = schema.get("description")
        schema["description"] = f"{self.orchestrator} only." + (f" {text}" if text else "")


def eks_only(why: str | None = None) -> OnlyWith:
    """The key applies only with ``orchestrator: eks`` (:class:`OnlyWith`)."""
    return OnlyWith("eks", why)


def slurm_only(why: str | None = None) -> OnlyWith:
    """The key applies only with ``orchestrator: slurm`` (:class:`OnlyWith`)."""
    return OnlyWith("slurm", why)


def scope_of(field: FieldInfo) -> OnlyWith | None:
    """The orchestrator a field applies to only (and why); None for a field of both."""
    extra = field.json_schema_extra
    return extra if isinstance(extra, OnlyWith) else None


def check_orchestrator_scope(
    model: BaseModel, orchestrator: str, out: IssueSink, path: str = ""
) -> None:
    """Every key of ``model`` (and of the models inside it) that applies only with the other
    orchestrator and that the YAML sets to something other than its default: an error at its
    path. A default value changes nothing, so it passes; a refused section is not looked into."""
    for key, field in type(model).model_fields.items():
        value = getattr(model, key)
        where = f"{path}.{key}" if path else key
        scope = scope_of(field)
        if scope is not None and scope.orchestrator != orchestrator:
            if _given(model, key, field, value):
                other, why = scope.orchestrator, scope.why
                reason = f" ({why})" if why else ""
                section = "section " if isinstance(value, BaseModel) else ""
                out.error(
                    where,
                    f"{section}applies only with orchestrator: {other}{reason}; set "
                    f"orchestrator: {other} to use it, or remove it",
                )
            continue
        for sub_path, item in _models_in(value, where):
            check_orchestrator_scope(item, orchestrator, out, sub_path)


def _given(model: BaseModel, key: str, field: FieldInfo, value: Any) -> bool:
    """The YAML sets ``key``, to something other than its default."""
    if key not in model.model_fields_set:
        return False
    return bool(value != field.get_default(call_default_factory=True))


def _models_in(value: Any, path: str) -> list[tuple[str, BaseModel]]:
    if isinstance(value, BaseModel):
        return [(path, value)]
    if isinstance(value, list):
        return [(f"{path}[{i}]", v) for i, v in enumerate(value) if isinstance(v, BaseModel)]
    if isinstance(value, dict):
        return [(f"{path}.{k}", v) for k, v in value.items() if isinstance(v, BaseModel)]
    return []


# -- value types several sections share --------------------------------------------------------

AzId = Annotated[
    str,
    matching(
        facts.AZ_ID_PATTERN,
        "an AZ ID like usw2-az2 (an AZ name like us-west-2a maps to different AZs per account)",
    ),
    Field(description="An Availability Zone *ID*, e.g. usw2-az2 (not a name like us-west-2a)."),
]


def _parse_cidr(value: Any) -> Any:
    """An IPv4 CIDR block; a block with host bits set names the network it meant. Only text (or
    a default already parsed): ipaddress would take a number, or true, as an address."""
    if isinstance(value, ipaddress.IPv4Network):
        return value
    if not isinstance(value, str):
        raise ValueError(
            f"expected an IPv4 CIDR block like 10.1.0.0/16, got {describe_value(value)}"
        )
    try:
        return ipaddress.IPv4Network(value)
    except ValueError:
        pass
    try:
        network = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise ValueError(f"{value!r} is not an IPv4 CIDR block; use one like 10.1.0.0/16") from None
    raise ValueError(f"{value!r} has host bits set; the block is {network}")


def decimal_version(value: Any) -> Any:
    """YAML reads an unquoted 2.15 or 1.30 as a number: take it as the version it shows."""
    if isinstance(value, float):
        return f"{value:.2f}"
    return value


# what an absolute path (storage.fsx.mount_path, ...) may hold
ABSOLUTE_PATH_PATTERN = r"^/[A-Za-z0-9._/-]*$"


def has_relative_parts(path: str) -> bool:
    """True when an absolute ``path`` has a '.', '..' or empty ('//') part."""
    return "//" in path or any(part in (".", "..") for part in path.split("/")[1:])


def is_system_directory(path: str) -> bool:
    """True for a directory of the node's own (:data:`facts.RESERVED_MOUNT_PATHS`) or one inside
    it (/etc/ssh, /var/lib, /usr/local, /opt/slurm, /opt/dlami/nvme: a mount there hides sshd's
    keys, Docker, Slurm or the NVMe; security review L2, issue 34). Only / and /tmp are
    refused themselves, not what is under them: /home, /fsx and a scratch folder under /tmp
    hide nothing of the node's."""
    clean = path.rstrip("/") or "/"
    return any(
        clean == reserved or (reserved not in ("/", "/tmp") and clean.startswith(reserved + "/"))
        for reserved in facts.RESERVED_MOUNT_PATHS
    )


def _clean_path(value: str) -> str:
    if has_relative_parts(value):
        raise ValueError(f"{value!r} is not a plain absolute path; no '.', '..' or '//' parts")
    return value


Cidr = Annotated[
    ipaddress.IPv4Network,
    BeforeValidator(_parse_cidr),
    Field(description="An IPv4 CIDR block, e.g. 10.1.0.0/16."),
]
SubnetId = Annotated[
    str, matching(r"^subnet-[0-9a-f]{8,17}$", "a subnet id like subnet-0123456789abcdef0")
]
AbsolutePath = Annotated[
    str,
    matching(ABSOLUTE_PATH_PATTERN, "an absolute path like /fsx", max_length=4096),
    AfterValidator(_clean_path),
]
RoleArn = Annotated[
    str,
    matching(
        r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]+$",
        "an IAM role ARN like arn:aws:iam::111122223333:role/name",
        max_length=600,
    ),
]
KmsKeyArn = Annotated[
    str,
    matching(
        r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key/[0-9a-fA-F-]{36}|key/mrk-[0-9a-f]{32}|alias/[\w/-]+)$",
        "a KMS key ARN like arn:aws:kms:us-west-2:111122223333:key/<key id> (or an alias ARN)",
    ),
]


def _offered_instance_type(value: str) -> str:
    """An instance type of HyperPod's table (facts.HYPERPOD_INSTANCE_TYPES), or one shaped like
    an instance type name: a type launched after the table is a warning (rules.py), not an error."""
    if value in facts.HYPERPOD_INSTANCE_TYPES or facts.has_instance_type_shape(value):
        return value
    guess = facts.close_instance_type(value, cutoff=0.6)
    hint = f"did you mean {guess!r}?" if guess else "use one like ml.p5.48xlarge or ml.m5.2xlarge"
    raise ValueError(f"{value!r} is not an instance type HyperPod offers; {hint}")


InstanceType = Annotated[
    str,
    matching(facts.INSTANCE_TYPE_PATTERN, "an ml.* instance type like ml.p5.48xlarge"),
    AfterValidator(_offered_instance_type),
]

KubernetesKey = Annotated[
    str,
    matching(
        r"^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
        "a Kubernetes key like example.com/name (a name of up to 63 letters, digits, '-', '_' and '.')",
    ),
]
KubernetesValue = Annotated[
    str,
    matching(
        r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
        "a Kubernetes value: up to 63 letters, digits, '-', '_' and '.'",
    ),
]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

# What the config says of a value the HyperPod API has and AWS::SageMaker::Cluster cannot
# express yet (HYPERPOD_FACTS 2026-11-24): refused with this reason, never accepted and dropped.
NOT_IN_CLOUDFORMATION = (
    "is in the HyperPod API but not in CloudFormation (AWS::SageMaker::Cluster) yet, so the "
    "app cannot set it"
)

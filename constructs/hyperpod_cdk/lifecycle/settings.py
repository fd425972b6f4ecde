"""The settings the lifecycle scripts read on the node (``settings.json``).

:func:`node_settings` makes them from a config (the app), :func:`build_node_settings` from a
composed app's own objects (the library), and :func:`check_settings` holds any settings to the
schema beside the scripts (``lifecycle_assets/settings.schema.json``: what a node cannot boot
without), which ``LifecycleScripts`` does at synth.

Pure Python (no CDK): the synth uploads exactly these beside the scripts, and
``python -m hyperpod_cdk.lifecycle.dry_run`` runs the scripts on a fake node with them.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hyperpod_cdk import config
from hyperpod_cdk.config.base import Issue
from hyperpod_cdk.config.cluster import ClusterConfig
from hyperpod_cdk.config.eks import EksConfig
from hyperpod_cdk.config.loader import ConfigError
from hyperpod_cdk.config.loader import validate as _validate
from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.node_setup import (
    USERS_FILE_ON_NODE,
    exporter_images,
    lifecycle_extra_files,
)
from hyperpod_cdk.config.storage import FsxConfig, shared_homes_directory

if TYPE_CHECKING:
    from hyperpod_cdk.storage.file_system import FileSystemHandle


def node_settings(config: EnvironmentConfig) -> dict[str, Any]:
    """The settings the lifecycle scripts read on the node (``settings.json``).

    Only literal values: a token here would change the content hash on every synth.
    None values are left out: the uploaded JSON must be the one hashed.
    """
    fsx_cfg = config.storage.fsx
    fsx: dict[str, Any] = {
        "enabled": fsx_cfg.enabled,
        "mount_path": fsx_cfg.mount_path,
        "efa": fsx_cfg.efa_enabled,
    }
    if fsx_cfg.enabled:
        fsx["type"] = "lustre"
        # HyperPod mounts FSx on Slurm nodes (InstanceStorageConfigs); on EKS pods use the FSx
        # CSI driver and the node does not mount it.
        fsx["mounted_by"] = "hyperpod" if config.is_slurm else "none"
        # An adopted file system's names are literals: the scripts can mount it themselves
        # should HyperPod's mount not appear (a created one's names are deploy-time tokens).
        if fsx_cfg.dns_name and fsx_cfg.mount_name:
            fsx["dns_name"] = fsx_cfg.dns_name
            fsx["mount_name"] = fsx_cfg.mount_name
    setup = config.cluster.node_setup
    node_setup = setup.model_dump(mode="json", exclude={"users_file", "directory"})
    # each image as the node pulls it (HyperPod's of the region when the config names none), its
    # registry, and the region to log in to for a private Amazon ECR registry: no region logic
    # on the node
    exporters = node_setup["exporters"]
    for key in ("node_image", "dcgm_image"):
        exporters.pop(key)
    for image in exporter_images(config):
        exporters[f"{image.exporter}_image"] = image.uri
        exporters[f"{image.exporter}_registry"] = image.registry
        if image.ecr_region is not None:
            exporters[f"{image.exporter}_ecr_region"] = image.ecr_region
    if config.is_slurm and setup.users_file is not None:
        node_setup["users_file"] = USERS_FILE_ON_NODE
    if config.is_slurm and setup.directory is not None:
        # the server, the groups and the two secrets' ARNs: the node reads the bind password and
        # the CA certificate from Secrets Manager at boot, so neither is in settings.json (or S3)
        node_setup["directory"] = setup.directory.model_dump(mode="json", exclude_none=True)
    settings: dict[str, Any] = {
        "environment": config.name,
        "orchestrator": config.orchestrator,
        "cluster_name": config.cluster_name,
        "lifecycle_hook": config.cluster.effective_lifecycle_hook(config.is_slurm),
        "fsx": fsx,
        "slurm_accounting_database": config.is_slurm
        and config.cluster.slurm_settings.accounting_database,
        "node_setup": node_setup,
        "instance_groups": {
            g.name: {
                key: value
                for key, value in (
                    ("node_type", g.effective_node_type if config.is_slurm else "eks"),
                    ("partition", g.effective_partition),
                    ("instance_type", g.instance_type),
                )
                if value is not None
            }
            for g in config.cluster.instance_groups
        },
    }
    if config.is_slurm:
        settings["cluster_network"] = cluster_network(config)
        settings["homes"] = homes(config)
        if config.storage.openzfs is not None:
            # HyperPod mounts it (FsxOpenZfsConfig); the scripts wait for it and verify it
            settings["openzfs"] = {"enabled": True, "mount_path": config.storage.openzfs.mount_path}
    return settings


def homes(config: EnvironmentConfig) -> dict[str, Any]:
    """Where the users' home directories are: on shared storage (the FSx for OpenZFS mount, else
    ``<Lustre mount>/home``; the controller makes them), or each node's local ``/home``."""
    shared = shared_homes_directory(config)
    if shared is None:
        return {"shared": False, "path": "/home"}
    openzfs = config.storage.openzfs
    mount = openzfs.mount_path if openzfs is not None else config.storage.fsx.mount_path
    return {"shared": True, "path": shared, "mount_path": mount}


def cluster_network(config: EnvironmentConfig) -> dict[str, Any]:
    """Where the cluster's nodes are (their SSH host-key policy): the HyperPod subnets' CIDRs
    when this app creates them; an adopted VPC's subnet ids, which the node resolves at boot
    (ec2:DescribeSubnets, in the region given here)."""
    net = config.network
    if net.vpc_id is None:
        cidrs = [net.compute_cidr, *net.additional_compute_cidrs.values()]
        return {"region": config.region, "cidrs": [str(c) for c in cidrs], "subnet_ids": []}
    subnet_ids = [net.compute_subnet_id, *net.additional_compute_subnet_ids.values()]
    return {
        "region": config.region,
        "cidrs": [],
        "subnet_ids": [s for s in subnet_ids if s is not None],
    }


# -- what the packaged scripts need: lifecycle_assets/settings.schema.json ----------------------

# The schema beside the scripts: the keys they read and what a node cannot boot without. A
# scripts directory without one (your own scripts) is not checked.
SETTINGS_SCHEMA_FILE = "settings.schema.json"
# where a problem of LifecycleScripts(settings=...) is reported: config error: settings.<key>: ...
SETTINGS_PATH = "settings"
# CDK's string encoding of a token (a deploy-time value): its form is known only at deploy
_TOKEN_MARK = "${Token["


class SettingsError(ConfigError, ValueError):
    """Settings the lifecycle scripts cannot run with: every problem, each at its key path
    (``config error: settings.cluster_network: ...``). A ValueError too, as the constructs'
    other argument errors."""


def read_settings_schema(directory: Path) -> dict[str, Any] | None:
    """The settings schema of a scripts directory, or None when it has none."""
    path = directory / SETTINGS_SCHEMA_FILE
    if not path.is_file():
        return None
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


def is_token(value: Any) -> bool:
    """A CDK token string (a value known only at deploy)."""
    return isinstance(value, str) and _TOKEN_MARK in value


def settings_problems(
    settings: Mapping[str, Any],
    schema: Mapping[str, Any],
    path: str = SETTINGS_PATH,
    token: Callable[[Any], bool] = is_token,
) -> list[Issue]:
    """What in ``settings`` breaks the scripts whose ``schema`` this is, each at its key path
    (a JSON Schema 2020-12 subset: type, const, enum, pattern, minLength, minimum, maximum,
    minItems, minProperties, format ipv4-network, required, properties, additionalProperties,
    items, allOf, anyOf, if/then). ``token`` values are deploy-time values: not checked."""
    found: list[Issue] = []
    _check(settings, schema, path, found, _Descriptions(schema, path), token)
    unique: dict[str, Issue] = {}  # one problem per key (a conditional rule may repeat one)
    for issue in found:
        unique.setdefault(issue.path, issue)
    return list(unique.values())


def check_settings(
    settings: Mapping[str, Any], directory: Path, token: Callable[[Any], bool] = is_token
) -> None:
    """Raise :class:`SettingsError` when ``directory``'s scripts would fail a node with
    ``settings`` (nothing to check when the directory has no settings schema)."""
    schema = read_settings_schema(directory)
    if schema is None:
        return
    problems = settings_problems(settings, schema, token=token)
    if problems:
        raise SettingsError(problems, SETTINGS_PATH)


class _Descriptions:
    """What each key is, from the schema's ``description`` (``*`` for any key of a map)."""

    def __init__(self, schema: Mapping[str, Any], root: str) -> None:
        self.root = root
        self.by_path: dict[str, str] = {}
        self._walk(schema, root)

    def _walk(self, schema: Mapping[str, Any], path: str) -> None:
        for key, sub in (schema.get("properties") or {}).items():
            if "description" in sub:
                self.by_path.setdefault(f"{path}.{key}", sub["description"])
            self._walk(sub, f"{path}.{key}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            self._walk(extra, f"{path}.*")

    def of(self, path: str) -> str:
        if path in self.by_path:
            return self.by_path[path]
        # a map's key (an instance group's name) -> *
        parts = path.split(".")
        for i in range(len(parts) - 1, 0, -1):
            generic = ".".join([*parts[:i], "*", *parts[i + 1 :]])
            if generic in self.by_path:
                return self.by_path[generic]
        return ""


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def _is_type(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _JSON_TYPES[kind]) or isinstance(value, Mapping) and kind == "object"


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _check(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    out: list[Issue],
    descriptions: _Descriptions,
    token: Callable[[Any], bool],
) -> None:
    if token(value):
        return
    what = descriptions.of(path)
    suffix = f" ({what})" if what else ""
    kind = schema.get("type")
    if kind is not None and not _is_type(value, kind):
        out.append(Issue(path, f"{_shown(value)} is not a JSON {kind}{suffix}"))
        return
    if "const" in schema and value != schema["const"]:
        out.append(Issue(path, f"{_shown(value)}: only {_shown(schema['const'])} works{suffix}"))
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_shown(v) for v in schema["enum"])
        out.append(Issue(path, f"{_shown(value)} is not one of {allowed}{suffix}"))
    if isinstance(value, str):
        _check_string(value, schema, path, out, suffix)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(Issue(path, f"{value} is below {schema['minimum']}{suffix}"))
        if "maximum" in schema and value > schema["maximum"]:
            out.append(Issue(path, f"{value} is above {schema['maximum']}{suffix}"))
    elif isinstance(value, (list, tuple)):
        if len(value) < schema.get("minItems", 0):
            out.append(Issue(path, f"needs at least {schema['minItems']} item(s){suffix}"))
        if "items" in schema:
            for i, item in enumerate(value):
                _check(item, schema["items"], f"{path}[{i}]", out, descriptions, token)
    elif isinstance(value, Mapping):
        _check_object(value, schema, path, out, descriptions, token)
    for sub in schema.get("allOf", []):
        _check(value, sub, path, out, descriptions, token)
    branches = schema.get("anyOf")
    if branches and all(_problems(value, b, path, descriptions, token) for b in branches):
        out.append(Issue(path, schema.get("x-anyOf-message", "matches none of its forms")))
    if "if" in schema and not _problems(value, schema["if"], path, descriptions, token):
        _check(value, schema.get("then", {}), path, out, descriptions, token)


def _check_string(
    value: str, schema: Mapping[str, Any], path: str, out: list[Issue], suffix: str
) -> None:
    if len(value) < schema.get("minLength", 0):
        out.append(Issue(path, f"is empty{suffix}"))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        out.append(Issue(path, f"{_shown(value)} does not match {schema['pattern']}{suffix}"))
    if schema.get("format") == "ipv4-network":
        try:
            ipaddress.IPv4Network(value, strict=False)
        except ValueError:
            out.append(Issue(path, f"{_shown(value)} is not an IPv4 CIDR block{suffix}"))


def _check_object(
    value: Mapping[str, Any],
    schema: Mapping[str, Any],
    path: str,
    out: list[Issue],
    descriptions: _Descriptions,
    token: Callable[[Any], bool],
) -> None:
    for key in schema.get("required", []):
        if key not in value or value[key] is None:
            where = f"{path}.{key}"
            what = descriptions.of(where) or "a value"
            out.append(Issue(where, f"missing: the lifecycle scripts need {what} to set a node up"))
    if len(value) < schema.get("minProperties", 0):
        out.append(Issue(path, f"is empty: name at least {schema['minProperties']}"))
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if item is None:
            continue  # left out of settings.json (node_settings drops None values too)
        if key in properties:
            _check(item, properties[key], f"{path}.{key}", out, descriptions, token)
        elif isinstance(extra, Mapping):
            _check(item, extra, f"{path}.{key}", out, descriptions, token)


def _problems(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    descriptions: _Descriptions,
    token: Callable[[Any], bool],
) -> list[Issue]:
    found: list[Issue] = []
    _check(value, schema, path, found, descriptions, token)
    return found


# -- settings from a library app's own objects ---------------------------------------------------


@dataclass(frozen=True)
class NodeSettings:
    """The lifecycle scripts' settings of a composed app, built by :func:`build_node_settings`.

    Give it to ``LifecycleScripts(settings=...)`` as it is (its ``extra_files``, the users file,
    go along). ``config`` is the environment these settings describe, validated as a YAML file
    is; :meth:`write_environment_file` writes it for the operational commands.
    """

    settings: dict[str, Any]
    extra_files: dict[str, str]
    config: EnvironmentConfig

    def write_environment_file(self, path: str | Path) -> Path:
        """Write ``config`` as an environment file (JSON, which is YAML) that ``python -m
        hyperpod_ops.status|preflight|verify|sync-users FILE`` read; returns the path."""
        target = Path(path)
        data = self.config.model_dump(mode="json", exclude_none=True, exclude_unset=True)
        data.update(name=self.config.name, region=self.config.region)
        target.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return target


def build_node_settings(
    *,
    environment: str,
    region: str,
    cluster: ClusterConfig | Mapping[str, Any],
    availability_zone_id: str,
    subnets: Mapping[str, Any] | Sequence[Any] = (),
    vpc: Any = None,
    security_groups: Sequence[Any] = (),
    orchestrator: Literal["slurm", "eks"] = "slurm",
    fsx: FsxConfig | FileSystemHandle | None = None,
    account: str | None = None,
    eks: EksConfig | Mapping[str, Any] | None = None,
    eks_availability_zone_ids: Sequence[str] = (),
    project_root: str | Path | None = None,
) -> NodeSettings:
    """The packaged lifecycle scripts' settings for a cluster made of your own objects.

    Validated as an environment YAML is: every problem raises one :class:`ConfigError` whose
    lines read ``config error: <key path>: ...`` (``cluster.instance_groups[1].count``,
    ``subnets[0]``), and the result passes :func:`check_settings`.

    :param environment: the environment's name (``name`` of a config).
    :param region: the cluster's region.
    :param cluster: the HyperPod cluster: its instance groups, ``node_setup`` (a
        ``users_file`` is read from ``project_root`` and uploaded as ``users.json``), ``slurm``
        settings and ``name`` (default: ``environment``), as given to ``HyperPodCluster``.
    :param availability_zone_id: the AZ ID of the HyperPod subnet (``HyperPodCluster``'s
        ``main_az_id``).
    :param subnets: the HyperPod subnets (``ec2.ISubnet``) by AZ ID, as given to
        ``HyperPodCluster(subnets=...)``, or one subnet (the ``availability_zone_id``'s). A
        Slurm cluster needs them: the nodes trust each other's SSH host keys within them. In
        a VPC imported by id (``vpc=``) they go by their ids (the nodes ask EC2 for the CIDRs
        at boot); otherwise by their CIDRs, which the app knows for a new ``ec2.Vpc``.
    :param vpc: the VPC (``ec2.IVpc``); an imported one's id, and the subnets' ids, go into
        the settings and the environment file.
    :param security_groups: the nodes' security groups (``ec2.ISecurityGroup``); in an
        imported VPC their ids go into the environment file (preflight checks them).
    :param orchestrator: ``slurm`` or ``eks``.
    :param fsx: the FSx for Lustre file system: the ``FsxConfig`` of a ``LustreFileSystem``
        or the ``FileSystemHandle`` given to ``HyperPodCluster``; none when not given.
    :param account: the account (the environment file names it; default: any).
    :param eks: the ``eks`` section of a config (``EksConfig``): an adopted cluster's
        ``cluster_arn``, its ``kubernetes_version``, which ``dependencies`` the app installs.
    :param eks_availability_zone_ids: the AZ IDs of a new EKS cluster's subnets.
    :param project_root: where ``cluster.node_setup.users_file`` is (default: the cwd).
    """
    root = Path(project_root) if project_root is not None else Path.cwd()
    issues: list[Issue] = []
    by_az = _subnets_by_az(subnets, availability_zone_id, issues)
    if orchestrator == "slurm" and not by_az and not issues:
        issues.append(
            Issue(
                "subnets",
                "a Slurm cluster needs its HyperPod subnets: the nodes trust each other's SSH "
                "host keys within them (pass the ec2.ISubnet objects given to HyperPodCluster)",
            )
        )
    network = _network_section(by_az, availability_zone_id, vpc, security_groups, issues)
    if eks_availability_zone_ids:
        network["eks_availability_zone_ids"] = list(eks_availability_zone_ids)
    data: dict[str, Any] = {
        "name": environment,
        "region": region,
        "orchestrator": orchestrator,
        "network": network,
        "storage": {"fsx": _fsx_section(fsx)},
        "cluster": {
            **(
                cluster.model_dump(mode="json", exclude_unset=True)
                if isinstance(cluster, ClusterConfig)
                else dict(cluster)
            ),
            # the scripts LifecycleScripts uploads by default
            "lifecycle_scripts": str(PACKAGED_SCRIPTS),
        },
    }
    if account is not None:
        data["account"] = account
    if eks is not None:
        data["eks"] = (
            eks.model_dump(mode="json", exclude_unset=True)
            if isinstance(eks, EksConfig)
            else dict(eks)
        )
    try:
        parsed, _ = _validate(data, root, "")
    except ConfigError as exc:
        raise ConfigError([*issues, *exc.issues, *exc.warnings]) from None
    assert isinstance(parsed, EnvironmentConfig)  # the mapping has no pipeline key
    config = parsed
    if issues:
        raise ConfigError(issues)
    # exactly what the app's synth of this config uploads, so that the commands that compute the
    # lifecycle prefix from the environment file (sync-users) find the deployed one
    settings = node_settings(config)
    problems = settings_problems(settings, json.loads(PACKAGED_SCHEMA.read_text(encoding="utf-8")))
    if problems:
        raise SettingsError(problems, SETTINGS_PATH)
    return NodeSettings(settings, lifecycle_extra_files(config, root), config)


# the library's scripts (package data, ./assets)
PACKAGED_SCRIPTS = config.PACKAGED_SCRIPTS
PACKAGED_SCHEMA = PACKAGED_SCRIPTS / SETTINGS_SCHEMA_FILE


def _literal(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not is_token(value)


def _subnets_by_az(
    subnets: Mapping[str, Any] | Sequence[Any], availability_zone_id: str, issues: list[Issue]
) -> dict[str, Any]:
    """The subnets by AZ ID (one subnet alone is the HyperPod AZ's)."""
    if isinstance(subnets, Mapping):
        by_az = dict(subnets)
        if by_az and availability_zone_id not in by_az:
            issues.append(
                Issue("subnets", f"names no subnet of availability_zone_id {availability_zone_id}")
            )
        return by_az
    if len(subnets) > 1:
        issues.append(
            Issue(
                "subnets",
                "several subnets: give them by AZ ID, {'usw2-az2': subnet, ...}, as to "
                "HyperPodCluster(subnets=...)",
            )
        )
        return {}
    return {availability_zone_id: subnets[0]} if subnets else {}


def _network_section(
    by_az: dict[str, Any],
    availability_zone_id: str,
    vpc: Any,
    security_groups: Sequence[Any],
    issues: list[Issue],
) -> dict[str, Any]:
    """The config's ``network`` for these subnets: an imported VPC's by id (the nodes resolve
    their CIDRs at boot), else the subnets' CIDRs (known at synth for a new ``ec2.Vpc``)."""
    network: dict[str, Any] = {"availability_zone_id": availability_zone_id}
    vpc_id = getattr(vpc, "vpc_id", None) if vpc is not None else None
    ids = {az: getattr(s, "subnet_id", None) for az, s in by_az.items()}
    if _literal(vpc_id) and by_az and all(_literal(i) for i in ids.values()):
        network.update(vpc_id=vpc_id, compute_subnet_id=ids.pop(availability_zone_id, None))
        network["additional_compute_subnet_ids"] = ids
        group_ids = [getattr(g, "security_group_id", None) for g in security_groups]
        if group_ids and all(_literal(g) for g in group_ids):
            network["security_group_ids"] = group_ids
        return network
    cidrs: dict[str, str] = {}
    for az, subnet in by_az.items():
        try:
            cidr = subnet.ipv4_cidr_block
        except Exception:  # an imported subnet without ipv4_cidr_block raises (jsii)
            cidr = None
        if _literal(cidr):
            cidrs[az] = str(cidr)
        else:
            issues.append(
                Issue(
                    f"subnets.{az}",
                    "its CIDR is not known at synth and the VPC is not imported by id: pass a "
                    "subnet of an ec2.Vpc of this app, or import the VPC (vpc=) and its subnets "
                    "by id",
                )
            )
    if availability_zone_id in cidrs:
        network["compute_cidr"] = cidrs.pop(availability_zone_id)
        network["additional_compute_cidrs"] = cidrs
    return network


def _fsx_section(fsx: FsxConfig | FileSystemHandle | None) -> dict[str, Any]:
    if fsx is None:
        return {"enabled": False}
    if isinstance(fsx, FsxConfig):
        return fsx.model_dump(mode="json", exclude_unset=True)
    section: dict[str, Any] = {"enabled": True, "mount_path": fsx.mount_path}
    names = (fsx.file_system_id, fsx.dns_name, fsx.mount_name)
    if all(_literal(n) for n in names):
        # an adopted file system: named in the environment file (preflight checks it)
        section.update(file_system_id=names[0], dns_name=names[1], mount_name=names[2])
    return section

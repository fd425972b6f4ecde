"""Valid base configs of the config tests, and helpers that change and check them.

A case is written as ``{dotted.path[0].key: value}`` changes to a valid base, so each test names
exactly the key it is about. ``DELETE`` as a value removes the key.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import ConfigError, EnvironmentConfig, Issue, validate

REPO = Path(__file__).resolve().parents[2]

DELETE = "<delete>"

SLURM_BASE: dict[str, Any] = {
    "name": "test-env",
    "region": "us-west-2",
    "network": {"availability_zone_id": "usw2-az2"},
    "storage": {
        "fsx": {
            "data_repository_associations": [
                {"file_system_path": "/datasets", "s3_prefix": "datasets/"}
            ]
        }
    },
    "cluster": {
        "instance_groups": [
            {
                "name": "controller",
                "instance_type": "ml.m5.2xlarge",
                "count": 1,
                "node_type": "Controller",
            },
            {"name": "login", "instance_type": "ml.m5.4xlarge", "count": 1, "node_type": "Login"},
            {
                "name": "gpu",
                "instance_type": "ml.p5.48xlarge",
                "count": 2,
                "node_type": "Compute",
                "partition": "gpu",
            },
        ]
    },
}

EKS_BASE: dict[str, Any] = {
    "name": "test-eks",
    "region": "us-west-2",
    "orchestrator": "eks",
    "network": {
        "availability_zone_id": "usw2-az2",
        "eks_availability_zone_ids": ["usw2-az1", "usw2-az2"],
    },
    "cluster": {
        "instance_groups": [
            {"name": "gpu", "instance_type": "ml.p5.48xlarge", "count": 2},
            {"name": "cpu", "instance_type": "ml.m5.2xlarge", "count": 1},
        ]
    },
}

PIPELINE_BASE: dict[str, Any] = {
    "name": "ml-pipeline",
    "account": "111122223333",
    "region": "us-west-2",
    "pipeline": {
        "connection_arn": "arn:aws:codeconnections:us-west-2:111122223333:connection/0a1b2c3d-aaaa-bbbb-cccc-0123456789ab",
        "repository": "example/hyperpod-env",
        "stages": [
            {"name": "dev", "config": "config/examples/minimal.yaml"},
            {"name": "prod", "config": "config/examples/full.yaml", "approval": True},
        ],
    },
}

BASES = {"slurm": SLURM_BASE, "eks": EKS_BASE, "pipeline": PIPELINE_BASE}

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set (or with DELETE remove) ``cluster.instance_groups[2].count``-style keys, creating mappings."""
    keys: list[Any] = [name if name else int(index) for name, index in _TOKEN.findall(dotted)]
    node: Any = data
    for key in keys[:-1]:
        if isinstance(key, str) and key not in node:
            node[key] = {}
        node = node[key]
    last = keys[-1]
    if value == DELETE:
        del node[last]
    elif isinstance(last, int) and last == len(node):
        node.append(value)
    else:
        node[last] = value


def build(changes: dict[str, Any] | None = None, base: str = "slurm") -> dict[str, Any]:
    """A deep copy of a valid base config with ``changes`` applied in order."""
    data = copy.deepcopy(BASES[base])
    for dotted, value in (changes or {}).items():
        set_path(data, dotted, copy.deepcopy(value))
    return data


def assert_issue(issues: list[Issue], path: str, fragment: str) -> None:
    """One of ``issues`` is at exactly ``path`` and says ``fragment``."""
    listing = "\n".join(str(i) for i in issues) or "(no issues)"
    assert any(i.path == path and fragment in i.message for i in issues), (
        f"expected {path}: ...{fragment}... among:\n{listing}"
    )


def issues(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    """Every problem of ``build(changes, base)``: its errors and warnings when it is invalid,
    else its warnings."""
    try:
        _, found = validate(build(changes, base), None)
    except ConfigError as exc:
        return list(exc.issues)
    return list(found)


def errors(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    """The errors of ``build(changes, base)``."""
    return [i for i in issues(changes, base) if i.severity == "error"]


def warnings(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    """The warnings of ``build(changes, base)``."""
    return [i for i in issues(changes, base) if i.severity == "warning"]


def config(changes: dict[str, Any], base: str = "slurm") -> EnvironmentConfig:
    """The validated config of ``build(changes, base)`` (it must be valid)."""
    cfg, _ = validate(build(changes, base), None)
    assert isinstance(cfg, EnvironmentConfig)
    return cfg

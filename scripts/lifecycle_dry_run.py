#!/usr/bin/env python3
"""Run the real lifecycle entry script against a bundled fake node and list the steps it takes.

    python scripts/lifecycle_dry_run.py controller|login|compute|eks [--config FILE]
        [--group NAME] [--set KEY=VALUE ...] [--settings FILE] [--fail COMMAND] [--root DIR]
        [--quiet]

The node gets what the synth of ``--config`` (default config/default.yaml) uploads: its lifecycle
scripts directory, its ``settings.json`` and its users file, and a HyperPod resource config with
its instance groups; the node is the first instance of the first group of that node type (or of
``--group``). ``--settings FILE`` runs with that settings.json instead (and the built-in test
cluster: groups controller, login and gpu).

Nothing on this machine changes: the scripts run with DRY_RUN=1 (every command that changes the
system goes through their `run` wrapper, which prints it) and HYPERPOD_ROOT pointing to a
temporary copy of the fake node (tests/lifecycle/fake_node): its /etc, mounts, devices and
resource config. The fake node's simulators (fake_node/bin) act out the printed commands inside
that root, so a second run against the same root shows what the scripts do on a node that is
already set up.

``--set node_setup.exporters.dcgm=false`` changes a setting (the value is JSON, else text);
``--fail useradd`` makes that simulated command fail.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT_ROOT / "lifecycle_assets"
FAKE_NODE = PROJECT_ROOT / "tests" / "lifecycle" / "fake_node"
ENTRY_SCRIPT = "entrypoint.sh"
DEFAULT_CONFIG = "config/default.yaml"

# node type -> (orchestrator, the node's IP address in the fake resource config)
NODES: dict[str, tuple[str, str]] = {
    "controller": ("slurm", "10.1.0.10"),
    "login": ("slurm", "10.1.0.20"),
    "compute": ("slurm", "10.1.1.30"),
    "eks": ("eks", "10.1.2.40"),
}

_STEP = re.compile(r"^\[lifecycle\] step: (.+)$")
_SKIP = re.compile(r"^\[lifecycle\] skip: (.+?) \((.*)\)$")


@dataclass
class DryRun:
    """One run of the entry script: its exit status, output, and the steps it announced."""

    node: str
    returncode: int
    output: str
    steps: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, node: str, returncode: int, output: str) -> DryRun:
        run = cls(node, returncode, output)
        for line in output.splitlines():
            if m := _STEP.match(line):
                run.steps.append(m.group(1))
            elif m := _SKIP.match(line):
                run.skipped[m.group(1)] = m.group(2)
            elif line.startswith("[dry-run] "):
                run.commands.append(line.removeprefix("[dry-run] "))
        return run


def parse_value(text: str) -> Any:
    """A --set value: JSON when it parses (true, 3, "x", {...}), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def with_changes(settings: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with dotted keys set (``None`` removes the key)."""
    out = copy.deepcopy(settings)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return out


def default_settings(node: str) -> dict[str, Any]:
    orchestrator, _ = NODES[node]
    return json.loads((FAKE_NODE / "settings" / f"{orchestrator}.json").read_text())


# the node types of a Slurm group (InstanceGroup.effective_node_type) per dry-run node
SLURM_NODE_TYPES = {"controller": "Controller", "login": "Login", "compute": "Compute"}


class DryRunError(Exception):
    """The config cannot give this dry run: one line, exit 2."""


@dataclass
class FakeCluster:
    """What the synth of a config gives a node, and where the fake node sits in the cluster."""

    config_path: Path
    group: str
    address: str
    scripts: Path
    settings: dict[str, Any]
    extra_files: dict[str, str]
    resource_config: dict[str, Any]


def from_config(
    node: str, config_path: Path, group: str | None = None, project_root: Path = PROJECT_ROOT
) -> FakeCluster:
    """The node ``node`` of the environment ``config_path``, as its synth would set it up
    (``project_root``: the app's folder, which the config's paths are relative to).

    :raises ConfigError: the config is not valid.
    :raises DryRunError: the config has no group of that node type, or ``group`` is not one.
    """
    from hyperpod_cdk.config import load_environment
    from hyperpod_cdk.config.node_setup import lifecycle_extra_files
    from hyperpod_cdk.lifecycle_settings import node_settings

    config = load_environment(config_path, project_root)
    orchestrator, _ = NODES[node]
    if orchestrator != config.orchestrator:
        nodes = [name for name, (kind, _) in NODES.items() if kind == config.orchestrator]
        raise DryRunError(
            f"{config_path} is a {config.orchestrator} environment: use NODE={' or NODE='.join(nodes)}"
        )
    groups = config.cluster.instance_groups
    candidates = [
        g.name
        for g in groups
        if orchestrator == "eks" or g.effective_node_type == SLURM_NODE_TYPES[node]
    ]
    if not candidates:
        raise DryRunError(f"{config_path} has no {SLURM_NODE_TYPES[node]} instance group")
    if group is not None and group not in candidates:
        raise DryRunError(
            f"--group {group}: not a {node} group of {config_path}; use one of {', '.join(candidates)}"
        )
    chosen = group or candidates[0]
    resource_groups = []
    address = ""
    for index, g in enumerate(groups):
        # the node's own group has at least the node; the others up to two instances each
        count = max(1, min(g.count, 2)) if g.name == chosen else min(g.count, 2)
        instances = [
            {
                "InstanceName": f"{g.name}-{i + 1}",
                "InstanceId": f"i-{index:08x}{i:09x}",
                "CustomerIpAddress": f"10.1.{index}.{10 + i}",
                "AgentIpAddress": f"172.16.{index}.{10 + i}",
            }
            for i in range(count)
        ]
        if g.name == chosen:
            address = instances[0]["CustomerIpAddress"]
        resource_groups.append(
            {"Name": g.name, "InstanceType": g.all_instance_types[0], "Instances": instances}
        )
    return FakeCluster(
        config_path=config_path,
        group=chosen,
        address=address,
        scripts=project_root / config.cluster.lifecycle_scripts,
        settings=node_settings(config),
        extra_files=lifecycle_extra_files(config, project_root),
        resource_config={
            "ClusterConfig": {
                "ClusterArn": f"arn:aws:sagemaker:{config.region}:111122223333:cluster/dryrun000000",
                "ClusterName": config.cluster_name,
            },
            "InstanceGroups": resource_groups,
        },
    )


def prepare(
    node: str,
    base: Path,
    *,
    settings: dict[str, Any] | None = None,
    changes: dict[str, Any] | None = None,
    cluster: FakeCluster | None = None,
) -> Path:
    """The fake node under ``base``: ``base/scripts`` (as HyperPod unpacks the prefix) and the
    root ``base/node``. ``cluster`` (from :func:`from_config`) gives the scripts, settings, users
    file and resource config; without it, the bundled scripts and test cluster. Returns ``base``."""
    if node not in NODES:
        raise ValueError(f"unknown node type {node!r}; use one of {', '.join(NODES)}")
    orchestrator, _ = NODES[node]
    scripts = base / "scripts"
    shutil.copytree(
        cluster.scripts if cluster else SCRIPTS,
        scripts,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    if cluster is not None:
        settings = cluster.settings
    values = with_changes(settings or default_settings(node), changes or {})
    (scripts / "settings.json").write_text(json.dumps(values, indent=2) + "\n")
    if cluster is not None:
        for name, text in cluster.extra_files.items():
            (scripts / name).write_text(text)
    elif users := values.get("node_setup", {}).get("users_file"):
        shutil.copy(FAKE_NODE / "users.json", scripts / users)
    root = base / "node"
    shutil.copytree(FAKE_NODE / "root", root, symlinks=True)
    shutil.copytree(FAKE_NODE / "nodes" / node, root, symlinks=True, dirs_exist_ok=True)
    # python3 for the scripts: this interpreter, not a version manager's (slow) shim
    tools = base / "bin"
    tools.mkdir()
    (tools / "python3").symlink_to(sys.executable)
    config_dir = root / "opt" / "ml" / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    if cluster is not None:
        (config_dir / "resource_config.json").write_text(
            json.dumps(cluster.resource_config, indent=2)
        )
    else:
        shutil.copy(
            FAKE_NODE / f"resource_config.{orchestrator}.json", config_dir / "resource_config.json"
        )
    return base


def environment(
    node: str, base: Path, fail: str | None = None, address: str | None = None
) -> dict[str, str]:
    """The variables that point the entry script at the fake node (``address``: its IP)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HYPERPOD_", "SAGEMAKER_", "DRY_RUN"))
    }
    env.update(
        PATH=f"{base / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        HYPERPOD_ROOT=str(base / "node"),
        HYPERPOD_NODE_IP=address or NODES[node][1],
        HYPERPOD_POLL_SECONDS="0",
        HYPERPOD_FLUSH_SECONDS="0",
        DRY_RUN="1",
        DRY_RUN_SIMULATORS=str(FAKE_NODE / "bin"),
        LC_ALL="C.UTF-8",
    )
    if fail:
        env["HYPERPOD_FAKE_FAIL"] = fail
    return env


def run(
    node: str,
    base: Path,
    *,
    fail: str | None = None,
    timeout: float = 60,
    address: str | None = None,
) -> DryRun:
    """Run the entry script of a prepared fake node once."""
    proc = subprocess.run(
        ["bash", str(base / "scripts" / ENTRY_SCRIPT)],
        env=environment(node, base, fail, address),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    return DryRun.parse(node, proc.returncode, proc.stdout)


def summary(result: DryRun) -> str:
    lines = [f"Steps on the fake {result.node} node:"]
    lines += [f"  {i}. {name}" for i, name in enumerate(result.steps, 1)]
    if result.skipped:
        lines.append("Skipped:")
        lines += [f"  - {name}: {why}" for name, why in result.skipped.items()]
    lines.append(
        "Result: ok" if result.returncode == 0 else f"Result: FAILED (exit {result.returncode})"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("node", choices=sorted(NODES))
    parser.add_argument(
        "--config", type=Path, default=Path(DEFAULT_CONFIG), help=f"default {DEFAULT_CONFIG}"
    )
    parser.add_argument("--group", help="the instance group of the node (default: the first)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--settings", type=Path, help="a settings.json to use instead")
    parser.add_argument("--fail", metavar="COMMAND", help="make this simulated command fail")
    parser.add_argument("--root", type=Path, help="keep the fake node in DIR (reused if it exists)")
    parser.add_argument("--quiet", action="store_true", help="print the step list only")
    args = parser.parse_args(argv)
    changes = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set {item!r}: use KEY=VALUE")
        changes[key] = parse_value(value)
    settings = cluster = None
    if args.settings:
        settings = json.loads(args.settings.read_text())
        source = f"settings {args.settings}, the test cluster"
    else:
        from hyperpod_cdk.config import ConfigError

        try:
            cluster = from_config(args.node, args.config, args.group)
        except ConfigError as exc:
            for issue in [*exc.issues, *exc.warnings]:
                print(issue, file=sys.stderr)
            return 2
        except DryRunError as exc:
            print(f"lifecycle-dry-run: {exc}", file=sys.stderr)
            return 2
        source = f"{args.config}, group {cluster.group} ({cluster.address})"
    with tempfile.TemporaryDirectory(prefix="hyperpod-dry-run-") as tmp:
        base = args.root or Path(tmp)
        if not (base / "scripts").is_dir():
            prepare(args.node, base, settings=settings, changes=changes, cluster=cluster)
        result = run(args.node, base, fail=args.fail, address=cluster.address if cluster else None)
    if not args.quiet:
        print(result.output, end="")
        print()
    print(f"Dry run of {source}")
    print(summary(result))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Run the real lifecycle entry script against a bundled fake node and list the steps it takes.

    python -m hyperpod_cdk.lifecycle.dry_run controller|login|compute|eks
        [--assembly CDK_OUT [--stack NAME] | --config FILE | --settings FILE]
        [--group NAME] [--set KEY=VALUE ...] [--fail COMMAND] [--root DIR] [--quiet]

What the node gets, one of:

- ``--assembly cdk.out`` (a composed app's synthesized cloud assembly): what its
  ``LifecycleScripts`` uploads (the scripts, ``settings.json`` and any users file, read from the
  assembly's assets), and a HyperPod resource config with the settings' instance groups.
  ``--stack`` picks the stack when the assembly uploads lifecycle scripts from more than one.
- ``--config FILE`` (default config/default.yaml; the app of this repository): what the synth
  of that environment uploads, and its instance groups.
- ``--settings FILE``: that settings.json with the packaged scripts and the built-in test
  cluster (groups controller, login and gpu).

The node is the first instance of the first group of that node type (or of ``--group``).

Nothing on this machine changes: the scripts run with DRY_RUN=1 (every command that changes the
system goes through their `run` wrapper, which prints it) and HYPERPOD_ROOT pointing to a
temporary copy of the fake node (``fake_node/`` beside this module): its /etc, mounts, devices and
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

# the library's lifecycle scripts and the fake node (package data, ../assets and ./fake_node)
SCRIPTS = (Path(__file__).parent.parent / "assets").resolve()
FAKE_NODE = (Path(__file__).parent / "fake_node").resolve()
ENTRY_SCRIPT = "entrypoint.sh"
SETTINGS_FILE = "settings.json"
DEFAULT_CONFIG = "config/default.yaml"
PROG = "python -m hyperpod_cdk.lifecycle.dry_run"

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
    """The bundled settings of the node's orchestrator (every step switched on)."""
    orchestrator, _ = NODES[node]
    settings: dict[str, Any] = json.loads(
        (FAKE_NODE / "settings" / f"{orchestrator}.json").read_text()
    )
    return settings


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
    # subnet id -> CIDR, what the fake node's EC2 answers (run/fake-ec2-subnets)
    subnets: dict[str, str] = field(default_factory=dict)


def _fake_cluster(
    node: str,
    source: str,
    groups: list[tuple[str, str, str, int]],
    group: str | None,
    *,
    scripts: Path,
    settings: dict[str, Any],
    extra_files: dict[str, str],
    cluster_name: str,
    region: str,
) -> FakeCluster:
    """The fake node in a cluster of ``groups`` (name, node type, instance type, count): the
    first instance of ``group``, else of the first group of the node type."""
    orchestrator, _ = NODES[node]
    candidates = [
        name
        for name, kind, _, _ in groups
        if orchestrator == "eks" or kind == SLURM_NODE_TYPES[node]
    ]
    if not candidates:
        raise DryRunError(f"{source} has no {SLURM_NODE_TYPES[node]} instance group")
    if group is not None and group not in candidates:
        raise DryRunError(
            f"--group {group}: not a {node} group of {source}; use one of {', '.join(candidates)}"
        )
    chosen = group or candidates[0]
    resource_groups = []
    address = ""
    for index, (name, _, instance_type, count) in enumerate(groups):
        # the node's own group has at least the node; the others up to two instances each
        count = max(1, min(count, 2)) if name == chosen else min(count, 2)
        instances = [
            {
                "InstanceName": f"{name}-{i + 1}",
                "InstanceId": f"i-{index:08x}{i:09x}",
                "CustomerIpAddress": f"10.1.{index}.{10 + i}",
                "AgentIpAddress": f"172.16.{index}.{10 + i}",
            }
            for i in range(count)
        ]
        if name == chosen:
            address = instances[0]["CustomerIpAddress"]
        resource_groups.append(
            {"Name": name, "InstanceType": instance_type, "Instances": instances}
        )
    return FakeCluster(
        config_path=Path(source),
        group=chosen,
        address=address,
        scripts=scripts,
        settings=settings,
        extra_files=extra_files,
        resource_config={
            "ClusterConfig": {
                "ClusterArn": f"arn:aws:sagemaker:{region}:111122223333:cluster/dryrun000000",
                "ClusterName": cluster_name,
            },
            "InstanceGroups": resource_groups,
        },
    )


def _check_orchestrator(node: str, orchestrator: str, source: object) -> None:
    kind, _ = NODES[node]
    if kind != orchestrator:
        nodes = [name for name, (k, _) in NODES.items() if k == orchestrator]
        article = "an" if orchestrator[0] in "aeiou" else "a"
        raise DryRunError(
            f"{source} is {article} {orchestrator} environment: use NODE={' or NODE='.join(nodes)}"
        )


def from_config(
    node: str, config_path: Path, group: str | None = None, project_root: Path | None = None
) -> FakeCluster:
    """The node ``node`` of the environment ``config_path``, as its synth would set it up
    (``project_root``: the app's folder, which the config's paths are relative to; default the
    working directory).

    :raises ConfigError: the config is not valid.
    :raises DryRunError: the config has no group of that node type, or ``group`` is not one.
    """
    from hyperpod_cdk.config import load_environment
    from hyperpod_cdk.config.node_setup import lifecycle_extra_files
    from hyperpod_cdk.lifecycle.settings import node_settings

    root = project_root if project_root is not None else Path.cwd()
    config = load_environment(config_path, root)
    _check_orchestrator(node, config.orchestrator, config_path)
    groups = [
        (g.name, g.effective_node_type or "", g.all_instance_types[0], g.count)
        for g in config.cluster.instance_groups
    ]
    return _fake_cluster(
        node,
        str(config_path),
        groups,
        group,
        scripts=root / config.cluster.lifecycle_scripts,
        settings=node_settings(config),
        extra_files=lifecycle_extra_files(config, root),
        cluster_name=config.cluster_name,
        region=config.region,
    )


@dataclass(frozen=True)
class Upload:
    """One LifecycleScripts upload of a cloud assembly: the asset directories it unpacks into
    one prefix (the scripts, settings.json, extra files), in order."""

    stack: str
    resource: str
    directories: list[Path]

    @property
    def settings(self) -> dict[str, Any]:
        for directory in self.directories:
            if (directory / SETTINGS_FILE).is_file():
                data: dict[str, Any] = json.loads((directory / SETTINGS_FILE).read_text())
                return data
        raise DryRunError(f"{self.stack}/{self.resource} uploads no {SETTINGS_FILE}")


def _assets(manifest: Path) -> dict[str, Path]:
    """Object key (``<hash>.zip``) -> the asset directory, of one ``*.assets.json``."""
    out: dict[str, Path] = {}
    for asset in json.loads(manifest.read_text()).get("files", {}).values():
        path = manifest.parent / asset["source"]["path"]
        for destination in asset.get("destinations", {}).values():
            out[str(destination.get("objectKey"))] = path
    return out


def lifecycle_uploads(assembly: Path) -> list[Upload]:
    """Every upload of lifecycle scripts (a CDK BucketDeployment whose sources hold the entry
    script and settings.json) in a cloud assembly and its nested ones (Stages)."""
    uploads = []
    for template_path in sorted(assembly.rglob("*.template.json")):
        stack = template_path.name.removesuffix(".template.json")
        manifest = template_path.with_name(f"{stack}.assets.json")
        assets = _assets(manifest) if manifest.is_file() else {}
        resources = json.loads(template_path.read_text()).get("Resources", {})
        for logical_id, resource in resources.items():
            if resource.get("Type") != "Custom::CDKBucketDeployment":
                continue
            keys = resource.get("Properties", {}).get("SourceObjectKeys", [])
            directories = [assets[k] for k in keys if isinstance(k, str) and k in assets]
            names = {p.name for d in directories if d.is_dir() for p in d.iterdir()}
            if {ENTRY_SCRIPT, SETTINGS_FILE} <= names:
                uploads.append(Upload(stack, logical_id, directories))
    return uploads


def from_assembly(
    node: str, assembly: Path, stack: str | None = None, group: str | None = None
) -> FakeCluster:
    """The node ``node`` of the lifecycle scripts a synthesized app uploads (its cloud
    assembly ``assembly``); the cluster has the instance groups of the settings.

    :raises DryRunError: no (or more than one) upload, or no group of that node type.
    """
    if not assembly.is_dir():
        raise DryRunError(f"{assembly} is not a directory: synthesize the app first (cdk synth)")
    uploads = lifecycle_uploads(assembly)
    if stack is not None:
        uploads = [u for u in uploads if u.stack == stack]
    if len(uploads) != 1:
        found = ", ".join(f"{u.stack} ({u.resource})" for u in uploads) or "none"
        which = f" in stack {stack}" if stack else ""
        hint = "; pick one with --stack NAME" if len(uploads) > 1 else ""
        raise DryRunError(
            f"{assembly}: needs one upload of lifecycle scripts{which}, found {found}{hint}"
        )
    (upload,) = uploads
    settings = upload.settings
    _check_orchestrator(node, str(settings.get("orchestrator", "slurm")), upload.stack)
    # an adopted VPC's subnets are named by id: the fake EC2 gives each a CIDR of its own
    subnet_ids = (settings.get("cluster_network") or {}).get("subnet_ids") or []
    groups = [
        (
            name,
            str(values.get("node_type", "")),
            str(values.get("instance_type") or "ml.m5.xlarge"),
            2,
        )
        for name, values in (settings.get("instance_groups") or {}).items()
    ]
    if not groups and NODES[node][0] == "eks":
        groups = [("eks-nodes", "eks", "ml.m5.xlarge", 2)]
    cluster = _fake_cluster(
        node,
        f"{assembly} ({upload.stack})",
        groups,
        group,
        scripts=next(d for d in upload.directories if (d / ENTRY_SCRIPT).is_file()),
        settings=settings,
        extra_files={
            p.name: p.read_text()
            for d in upload.directories
            for p in sorted(d.iterdir())
            if p.is_file() and p.name != SETTINGS_FILE and not (d / ENTRY_SCRIPT).exists()
        },
        cluster_name=str(settings.get("cluster_name", "dryrun")),
        region=str((settings.get("cluster_network") or {}).get("region", "us-east-1")),
    )
    cluster.subnets.update({sid: f"10.{100 + i}.0.0/16" for i, sid in enumerate(subnet_ids)})
    return cluster


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
    if cluster is not None and cluster.subnets:
        lines = "".join(f"{sid} {cidr}\n" for sid, cidr in cluster.subnets.items())
        (root / "run").mkdir(parents=True, exist_ok=True)
        with open(root / "run" / "fake-ec2-subnets", "a") as known:
            known.write(lines)
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


def main(argv: list[str], project_root: Path | None = None) -> int:
    """The command line (``project_root``: what ``--config``'s paths are relative to; default
    the working directory)."""
    parser = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").splitlines()[0])
    parser.add_argument("node", choices=sorted(NODES))
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--assembly", type=Path, metavar="CDK_OUT", help="a synthesized app's cloud assembly"
    )
    source.add_argument(
        "--config", type=Path, help=f"an environment file of the app (default {DEFAULT_CONFIG})"
    )
    source.add_argument("--settings", type=Path, help="a settings.json, on the test cluster")
    parser.add_argument("--stack", help="--assembly: the stack whose lifecycle scripts to run")
    parser.add_argument("--group", help="the instance group of the node (default: the first)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
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
    from hyperpod_cdk.config import ConfigError

    try:
        if args.settings:
            settings = json.loads(args.settings.read_text())
            shown = f"settings {args.settings}, the test cluster"
        elif args.assembly:
            cluster = from_assembly(args.node, args.assembly, args.stack, args.group)
        else:
            config = args.config or Path(DEFAULT_CONFIG)
            cluster = from_config(args.node, config, args.group, project_root)
    except ConfigError as exc:
        for issue in [*exc.issues, *exc.warnings]:
            print(issue, file=sys.stderr)
        return 2
    except DryRunError as exc:
        print(f"lifecycle-dry-run: {exc}", file=sys.stderr)
        return 2
    if cluster is not None:
        shown = f"{cluster.config_path}, group {cluster.group} ({cluster.address})"
    with tempfile.TemporaryDirectory(prefix="hyperpod-dry-run-") as tmp:
        base = args.root or Path(tmp)
        if not (base / "scripts").is_dir():
            prepare(args.node, base, settings=settings, changes=changes, cluster=cluster)
        result = run(args.node, base, fail=args.fail, address=cluster.address if cluster else None)
    if not args.quiet:
        print(result.output, end="")
        print()
    print(f"Dry run of {shown}")
    print(summary(result))
    return result.returncode

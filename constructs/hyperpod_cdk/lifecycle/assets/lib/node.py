#!/usr/bin/env python3
"""Helpers the lifecycle shell scripts call on the node (Python standard library only).

    node.py settings SETTINGS_JSON
        every scalar setting as a shell assignment, ``S_fsx_mount_path='/fsx'`` (dots become _)
    node.py identify SETTINGS_JSON RESOURCE_CONFIG
        which node this is: NODE_ROLE (controller|login|compute|eks), NODE_GROUP, NODE_NAME,
        NODE_INSTANCE_TYPE, NODE_GPU (true|false, from the hardware) and NODE_GPU_SOURCE (what
        decided it), as shell assignments
    node.py users USERS_JSON
        one tab-separated line per declared group (``group NAME GID``, first), per user
        (``user NAME UID ACCOUNT GROUPS``: the Slurm account, default the name) and per public
        key (``key NAME KEY``)
    node.py json-set FILE KEY JSON_VALUE
        set a top-level key of a JSON file (created when missing); prints changed/unchanged
    node.py json-has FILE KEY [SUBKEY]
        exit 0 when the key (and subkey) exists
    node.py ssh-patterns CIDR...
        ssh_config Host patterns that cover exactly these IPv4 blocks, by address (10.1.*) and
        by HyperPod's Slurm node name (ip-10-1-*); blocks between octets are listed per octet
    node.py toml-set-top FILE KEY STRING
        set a top-level string key of a TOML file (containerd's config.toml; created with
        ``version = 2`` when missing); prints changed/unchanged
    node.py ssh-dir NAME HOME
        ~/.ssh of user NAME (mode 0700), run AS THAT USER (the shell's ``as_user``): refuses a
        home or ~/.ssh that is a symbolic link or not owned by the running user
    node.py ssh-authorize NAME HOME [--own-key] KEY...
        the managed block of ~/.ssh/authorized_keys holds exactly KEY... (and, with --own-key,
        ~/.ssh/id_ed25519.pub when it exists); keys outside the block are the user's. Run as
        the user, with the same refusals, and never through a link (O_NOFOLLOW at every step);
        prints changed/unchanged

The ssh commands are the one place the scripts write into a tree a user controls: the shell
runs them with the user's UID (setpriv), reading this file from stdin, so even a missed check
cannot reach a file the user could not write anyway (root's authorized_keys, /fsx/home).

HyperPod writes the cluster's resource config to /opt/ml/config/resource_config.json
(the path is also in SAGEMAKER_RESOURCE_CONFIG_PATH):
``{"InstanceGroups": [{"Name", "InstanceType", "Instances": [{"InstanceName", "InstanceId",
"CustomerIpAddress", ...}]}]}``. A node finds itself by its IP address in the customer VPC
(``CustomerIpAddress``) or its instance id.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shlex
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9_]+$")
# Instance families with NVIDIA GPUs: ml.p*, ml.g* (Trainium/Inferentia have none). Only a hint
# in the log: the hardware decides (a flexible group's resource config names no single type).
_GPU_FAMILY = re.compile(r"^(ml\.)?[pg][0-9]")
# PCI IDs (pci-ids.ucw.cz): NVIDIA's vendor id, and the display controller class (0x03xxxx: VGA
# 0x0300, 3D 0x0302) that its GPUs have; an NVSwitch is a bridge (0x0680), not a GPU.
NVIDIA_PCI_VENDOR = "0x10de"
DISPLAY_CONTROLLER_CLASS = "0x03"
_PCI_DEVICES = "sys/bus/pci/devices"
# On Nitro instances the DMI board asset tag holds the EC2 instance id.
_ASSET_TAG = "sys/devices/virtual/dmi/id/board_asset_tag"


class NodeError(Exception):
    """A problem the entry script reports as the failure of its step."""


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def flatten(settings: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """``{"fsx": {"enabled": True}}`` -> ``("fsx_enabled", "true")``; None is left out.

    ``instance_groups`` is keyed by group names (which may hold '-'), so it is not flattened.
    """
    for key, value in settings.items():
        if value is None or not _NAME.match(key) or (not prefix and key == "instance_groups"):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from flatten(value, f"{name}_")
        else:
            yield name, _scalar(value)


def shell_assignments(
    pairs: Iterator[tuple[str, str]] | list[tuple[str, str]], var_prefix: str
) -> str:
    """Lines ``PREFIX_name='value'`` safe to ``eval`` in bash."""
    return "".join(f"{var_prefix}{name}={shlex.quote(value)}\n" for name, value in pairs)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise NodeError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise NodeError(f"{path} is not valid JSON: {exc}") from None


def local_addresses() -> set[str]:
    """IPv4 addresses this node is known by (no packet is sent)."""
    addresses: set[str] = set()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # connect() on UDP only picks the route's source address
        probe.connect(("10.255.255.255", 1))
        addresses.add(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    with contextlib.suppress(OSError):
        addresses.update(socket.gethostbyname_ex(socket.gethostname())[2])
    return addresses - {"127.0.0.1"}


def instance_id(root: Path) -> str | None:
    try:
        value = (root / _ASSET_TAG).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return value if value.startswith("i-") else None


def find_instance(
    resource_config: dict[str, Any], addresses: set[str], own_id: str | None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The (group, instance) of this node in the resource config, or None."""
    for group in resource_config.get("InstanceGroups") or []:
        for instance in group.get("Instances") or []:
            if instance.get("CustomerIpAddress") in addresses or (
                own_id is not None and instance.get("InstanceId") == own_id
            ):
                return group, instance
    return None


def is_gpu(instance_type: str) -> bool:
    """True for an instance type name of an NVIDIA GPU family (a hint; see :func:`gpu_source`)."""
    return bool(_GPU_FAMILY.match(instance_type))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip().lower()
    except (OSError, UnicodeDecodeError):
        return ""


def gpu_source(root: Path) -> str | None:
    """What shows this node has an NVIDIA GPU (a PCI device, else /dev/nvidia0), or None."""
    devices = root / _PCI_DEVICES
    for device in sorted(devices.iterdir()) if devices.is_dir() else []:
        vendor, kind = _read(device / "vendor"), _read(device / "class")
        if vendor == NVIDIA_PCI_VENDOR and kind.startswith(DISPLAY_CONTROLLER_CLASS):
            return f"NVIDIA PCI device {device.name}"
    if (root / "dev/nvidia0").exists():
        return "/dev/nvidia0"
    return None


def identify(
    settings: dict[str, Any],
    resource_config_path: Path,
    addresses: set[str],
    own_id: str | None,
    root: Path = Path("/"),
) -> dict[str, str]:
    """NODE_* values of this node (``root``: where its /sys and /dev are); NodeError when a
    Slurm node cannot be placed."""
    orchestrator = settings.get("orchestrator")
    groups = settings.get("instance_groups") or {}
    found = None
    if resource_config_path.is_file():
        found = find_instance(read_json(resource_config_path), addresses, own_id)
    elif orchestrator != "eks":
        raise NodeError(f"the HyperPod resource config {resource_config_path} does not exist")
    if found is None:
        if orchestrator != "eks":
            shown = ", ".join(sorted(addresses)) or "none"
            raise NodeError(
                f"this node (addresses {shown}, instance id {own_id or 'unknown'}) is not in "
                f"{resource_config_path}"
            )
        # EKS nodes need no role from the resource config; the group only names the node
        group_name, instance, group = "unknown", {}, {}
    else:
        group, instance = found
        group_name = str(group.get("Name", ""))
    if orchestrator == "eks":
        role = "eks"
    else:
        node_type = (groups.get(group_name) or {}).get("node_type")
        if node_type is None:
            raise NodeError(
                f"instance group {group_name!r} is not in settings.json; were the lifecycle "
                "scripts deployed with this cluster's config?"
            )
        role = str(node_type).lower()
        if role not in ("controller", "login", "compute"):
            raise NodeError(f"instance group {group_name!r} has an unknown node_type {node_type!r}")
    instance_type = str(
        group.get("InstanceType") or (groups.get(group_name) or {}).get("instance_type") or ""
    )
    found_gpu = gpu_source(root)
    if found_gpu is not None:
        source = found_gpu
    else:
        source = "no NVIDIA PCI device and no /dev/nvidia0"
        if is_gpu(instance_type):
            source += f" (although {instance_type} is a GPU instance type)"
    return {
        "ROLE": role,
        "GROUP": group_name,
        "NAME": str(instance.get("InstanceName", "")),
        "INSTANCE_TYPE": instance_type,
        "GPU": "true" if found_gpu is not None else "false",
        "GPU_SOURCE": source,
    }


def user_lines(users: dict[str, Any]) -> str:
    """The users file as tab-separated lines for the shell (names and keys hold no tabs): the
    declared groups first (``group NAME GID``), so that no group takes a GID a user needs."""
    lines = [f"group\t{group['name']}\t{int(group['gid'])}" for group in users.get("groups") or []]
    for user in users.get("users") or []:
        name, uid = str(user["name"]), int(user["uid"])
        account = str(user.get("account") or name)
        lines.append(f"user\t{name}\t{uid}\t{account}\t{','.join(user.get('groups') or [])}")
        lines.extend(f"key\t{name}\t{key}" for key in user.get("ssh_public_keys") or [])
    return "".join(line + "\n" for line in lines)


def json_set(path: Path, key: str, value: Any) -> bool:
    """Set ``key`` in the JSON object in ``path``; True when the file changed."""
    data = read_json(path) if path.is_file() and path.read_text(encoding="utf-8").strip() else {}
    if not isinstance(data, dict):
        raise NodeError(f"{path} does not hold a JSON object")
    if data.get(key) == value:
        return False
    data[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return True


def json_has(path: Path, keys: list[str]) -> bool:
    try:
        node: Any = read_json(path)
    except NodeError:
        return False
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


_TOML_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
_TOML_TABLE = re.compile(r"^\s*\[")


def toml_set_top(path: Path, key: str, value: str) -> bool:
    """Set the top-level ``key = "value"`` of a TOML file (before its first table), keeping every
    other line; True when the file changed. Line-based: the node's Python (3.10 on Ubuntu 22.04)
    has no TOML parser, and containerd's config keeps top-level keys on one line each."""
    text = path.read_text(encoding="utf-8") if path.is_file() else "version = 2\n"
    lines = text.splitlines()
    wanted = f"{key} = {json.dumps(value)}"
    end = next((i for i, line in enumerate(lines) if _TOML_TABLE.match(line)), len(lines))
    for index in range(end):
        match = _TOML_KEY.match(lines[index])
        if match and match.group(1) == key:
            if lines[index].strip() == wanted:
                return False
            lines[index] = wanted
            break
    else:
        # after the leading comments and keys (containerd reads `version` first either way)
        lines.insert(end, wanted)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return True


def ssh_patterns(cidrs: list[str]) -> list[str]:
    """Host patterns (addresses and ``ip-a-b-c-d`` names) covering exactly ``cidrs``: a block is
    listed per octet it spans (a /20 is sixteen /24 patterns), at most 256 per block."""
    import ipaddress

    patterns: list[str] = []
    for text in cidrs:
        network = ipaddress.IPv4Network(text, strict=False)
        # the octet boundary at or below the prefix: /16 -> a.b.*, /20 -> 16 x a.b.c.*
        whole = min(32, ((network.prefixlen + 7) // 8) * 8)
        if whole - network.prefixlen > 8:
            raise NodeError(f"{text}: a block wider than one octet past its prefix")
        for block in network.subnets(new_prefix=whole) if whole > network.prefixlen else [network]:
            octets = str(block.network_address).split(".")[: whole // 8]
            wildcard = [] if whole == 32 else ["*"]
            address = ".".join([*octets, *wildcard])
            name = "ip-" + "-".join([*octets, *wildcard])
            patterns += [address, name]
    return list(dict.fromkeys(patterns))


# The managed part of authorized_keys (the users file's keys and the cluster key); what the user
# adds outside it is left alone. A key taken off the users file leaves the block (issue 34, L11).
KEYS_BEGIN = "# BEGIN hyperpod-cdk managed keys (make sync-users rewrites this block)"
KEYS_END = "# END hyperpod-cdk managed keys"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _owned_dir(name: str, what: str, path: str, dir_fd: int | None = None) -> int:
    """Open directory ``path`` without following a link; refuse one not owned by this UID."""
    try:
        fd = os.open(path, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        # (O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR, not ELOOP)
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(path, dir_fd=dir_fd).st_mode):
                raise NodeError(f"user {name}: {what} is a symbolic link; refused") from exc
        if exc.errno == errno.ELOOP:
            raise NodeError(f"user {name}: {what} is a symbolic link; refused") from exc
        raise NodeError(f"user {name}: cannot open {what} ({exc.strerror}); refused") from exc
    info = os.fstat(fd)
    if info.st_uid != os.geteuid():
        os.close(fd)
        raise NodeError(
            f"user {name}: {what} is owned by UID {info.st_uid}, not by the user; refused"
        )
    return fd


def ssh_dir(name: str, home: str) -> int:
    """~/.ssh of the user running this (made 0700 when missing): an open directory fd."""
    home_fd = _owned_dir(name, "the home directory", home)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(".ssh", 0o700, dir_fd=home_fd)
        fd = _owned_dir(name, "~/.ssh", ".ssh", dir_fd=home_fd)
    finally:
        os.close(home_fd)
    os.fchmod(fd, 0o700)
    return fd


def _read_nofollow(name: str, what: str, file: str, dir_fd: int) -> str | None:
    """The text of regular file ``file`` in ``dir_fd`` (None when missing); refuses a link, a
    file of another owner or one with more than one name (a hard link to someone's file)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NodeError(f"user {name}: {what} is a symbolic link; refused") from exc
        raise NodeError(f"user {name}: cannot open {what} ({exc.strerror}); refused") from exc
    with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NodeError(f"user {name}: {what} is not a regular file; refused")
        if info.st_uid != os.geteuid() or info.st_nlink != 1:
            raise NodeError(f"user {name}: {what} is not the user's own file; refused")
        return handle.read()


def managed_keys(text: str, keys: list[str]) -> str:
    """``text`` (an authorized_keys) with its managed block holding exactly ``keys``; a managed
    key found outside the block (added there by an older version) moves into it."""
    lines, inside = [], False
    for line in text.splitlines():
        if line == KEYS_BEGIN:
            inside = True
        elif line == KEYS_END:
            inside = False
        elif not inside and line not in keys:
            lines.append(line)
    block = [KEYS_BEGIN, *dict.fromkeys(keys), KEYS_END]
    return "".join(f"{line}\n" for line in [*lines, *block])


def ssh_authorize(name: str, home: str, keys: list[str], own_key: bool) -> bool:
    """Rewrite the managed block of the user's authorized_keys; True when it changed."""
    fd = ssh_dir(name, home)
    try:
        if own_key:
            public = _read_nofollow(name, "~/.ssh/id_ed25519.pub", "id_ed25519.pub", fd)
            if public and public.strip():
                keys = [*keys, public.strip().splitlines()[0]]
        for key in keys:
            if "\n" in key or "\r" in key:
                raise NodeError(f"user {name}: a key spans lines; refused")
        current = _read_nofollow(name, "~/.ssh/authorized_keys", "authorized_keys", fd)
        wanted = managed_keys(current or "", keys)
        if current == wanted:
            return False
        # a new file beside it, renamed over it: rename replaces a name and never follows one
        temporary = f".authorized_keys.hyperpod-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=fd)
        out = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd
        )
        with os.fdopen(out, "w", encoding="utf-8") as handle:
            handle.write(wanted)
        os.rename(temporary, "authorized_keys", src_dir_fd=fd, dst_dir_fd=fd)
        return True
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    try:
        if command == "settings" and len(args) == 1:
            data = read_json(Path(args[0]))
            if not isinstance(data, dict):
                raise NodeError(f"{args[0]} does not hold a JSON object")
            sys.stdout.write(shell_assignments(list(flatten(data)), "S_"))
        elif command == "identify" and len(args) == 2:
            root = Path(os.environ.get("HYPERPOD_ROOT") or "/")
            override = os.environ.get("HYPERPOD_NODE_IP")
            addresses = {override} if override else local_addresses()
            values = identify(
                read_json(Path(args[0])), Path(args[1]), addresses, instance_id(root), root
            )
            sys.stdout.write(shell_assignments(list(values.items()), "NODE_"))
        elif command == "users" and len(args) == 1:
            sys.stdout.write(user_lines(read_json(Path(args[0]))))
        elif command == "json-set" and len(args) == 3:
            changed = json_set(Path(args[0]), args[1], json.loads(args[2]))
            print("changed" if changed else "unchanged")
        elif command == "ssh-patterns" and args:
            print(" ".join(ssh_patterns(args)))
        elif command == "toml-set-top" and len(args) == 3:
            print("changed" if toml_set_top(Path(args[0]), args[1], args[2]) else "unchanged")
        elif command == "json-has" and len(args) >= 2:
            return 0 if json_has(Path(args[0]), args[1:]) else 1
        elif command == "ssh-dir" and len(args) == 2:
            os.close(ssh_dir(args[0], args[1]))
        elif command == "ssh-authorize" and len(args) >= 2:
            own = "--own-key" in args[2:]
            keys = [key for key in args[2:] if key != "--own-key"]
            print("changed" if ssh_authorize(args[0], args[1], keys, own) else "unchanged")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except NodeError as exc:
        print(f"[lifecycle] {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The FSx for OpenZFS mount of the homes on the fake node (lifecycle_assets/steps/storage.sh,
``step_openzfs``): HyperPod mounts it (InstanceStorageConfigs FsxOpenZfsConfig); the scripts wait
for it and check it is NFS v4, and never mount it themselves. The Lustre steps no longer read the
old ``fsx.type``.

The settings keys ``openzfs.enabled`` and ``openzfs.mount_path`` are set through the dry run's
changes; the step runs from the node's copy of entrypoint.sh, right after the FSx (Lustre) wait,
as the proposed entry-script change does, unless the shipped entry script does already.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lifecycle_testkit import dry

STEP = "wait for FSx for OpenZFS mount"
ON = {"openzfs.enabled": True, "openzfs.mount_path": "/home"}
NFS = "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com:/fsx {path} nfs4 rw,relatime,vers=4.1 0 0"
SLURM_STEPS = re.compile(r"^SLURM_STEPS=\(([^)]*)\)", re.M)
SLURM_NODES = ["controller", "login", "compute"]


def with_openzfs_step(scripts: Path) -> None:
    """The proposed entrypoint.sh change: ``openzfs`` right after ``fsx`` in SLURM_STEPS (the
    homes' mount is there before the users step makes homes); EKS_STEPS unchanged."""
    entry = scripts / dry.ENTRY_SCRIPT
    text = entry.read_text()
    found = SLURM_STEPS.search(text)
    assert found and found.group(1).split()[0] == "fsx", "entrypoint.sh changed shape"
    if "openzfs" in found.group(1).split():
        return
    steps = found.group(1).replace("fsx ", "fsx openzfs ", 1)
    entry.write_text(text[: found.start(1)] + steps + text[found.end(1) :])


def mount(base: Path, path: str, line: str = NFS) -> None:
    """HyperPod's mount of the file system, in the fake node's /proc/self/mounts."""
    with (base / "node/proc/self/mounts").open("a") as mounts:
        mounts.write(line.format(path=path) + "\n")


Node = Callable[..., Path]


@pytest.fixture
def node(tmp_path: Path) -> Node:
    """``node(kind, changes=None, mounted_at=None)``: a fresh fake node running the OpenZFS step,
    with HyperPod's NFS mount at ``mounted_at``."""
    count = iter(range(1000))

    def make(
        kind: str, changes: dict[str, Any] | None = None, mounted_at: str | None = None
    ) -> Path:
        base = dry.prepare(kind, tmp_path / f"{kind}-{next(count)}", changes=changes)
        with_openzfs_step(base / "scripts")
        if mounted_at:
            mount(base, mounted_at)
        return base

    return make


@pytest.mark.parametrize("kind", SLURM_NODES)
def test_the_step_waits_for_the_nfs_mount_before_the_users(node: Node, kind: str) -> None:
    base = node(kind, ON, mounted_at="/home")
    result = dry.run(kind, base)
    assert result.returncode == 0, result.output
    assert STEP in result.steps
    # after the Lustre wait, before any home is made
    assert result.steps.index("wait for FSx mount") < result.steps.index(STEP)
    if "users and groups" in result.steps:
        assert result.steps.index(STEP) < result.steps.index("users and groups")
    assert "/home is an nfs4 mount" in result.output
    # the scripts only wait: nothing is mounted, nothing written to fstab
    assert not [c for c in result.commands if c.startswith("mount ")]
    assert "nfs" not in (base / "node/etc/fstab").read_text()


def test_the_step_is_idempotent(node: Node) -> None:
    base = node("controller", ON, mounted_at="/home")
    first, second = dry.run("controller", base), dry.run("controller", base)
    assert (first.returncode, second.returncode) == (0, 0), second.output
    assert STEP in second.steps


def test_the_mount_path_comes_from_the_settings(node: Node) -> None:
    changes = {**ON, "openzfs.mount_path": "/shared/home"}
    result = dry.run("login", node("login", changes, mounted_at="/shared/home"))
    assert result.returncode == 0, result.output
    assert "/shared/home is an nfs4 mount" in result.output


def test_a_missing_mount_fails_the_node_with_the_reason(node: Node) -> None:
    result = dry.run("login", node("login", ON))
    assert result.returncode != 0
    assert STEP in result.steps
    assert f"FAILED in step '{STEP}'" in result.output, result.output
    assert "/home is not mounted after 60s" in result.output
    assert "at node provisioning only" in result.output
    # nothing after it ran: no home was made on the root volume under /home
    assert "users and groups" not in result.steps


def test_another_file_system_at_the_mount_path_fails_the_node(node: Node) -> None:
    base = node("login", ON)
    mount(base, "/home", "/dev/nvme1n1 {path} ext4 rw,relatime 0 0")
    result = dry.run("login", base)
    assert result.returncode != 0
    assert "/home is mounted, but not as nfs4" in result.output


def test_without_openzfs_the_step_is_skipped_with_the_reason(node: Node) -> None:
    result = dry.run("controller", node("controller"))
    assert result.returncode == 0, result.output
    assert result.skipped[STEP] == "storage.openzfs is not set"
    result = dry.run("controller", node("controller", {"openzfs.enabled": False}))
    assert result.skipped[STEP] == "storage.openzfs is not set"


def test_eks_nodes_have_no_openzfs_step(node: Node) -> None:
    result = dry.run("eks", node("eks", ON))
    assert result.returncode == 0, result.output
    assert STEP not in result.steps and STEP not in result.skipped


# -- the old fsx.type paths are gone ----------------------------------------------------------

ADOPTED_LUSTRE = {
    "fsx.dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    "fsx.mount_name": "abcdefgh",
    "fsx.mounted_by": "script",
}


def test_fsx_type_no_longer_turns_the_lustre_mount_into_nfs(node: Node) -> None:
    """``fsx.type: openzfs`` once made the scripts mount an NFS share at the Lustre path; the
    Lustre steps now ignore the key (OpenZFS has settings of its own)."""
    base = node("login", {**ADOPTED_LUSTRE, "fsx.type": "openzfs"})
    mounts = base / "node/proc/self/mounts"
    mounts.write_text("".join(m for m in mounts.read_text().splitlines(True) if " /fsx " not in m))
    result = dry.run("login", base)
    assert result.returncode == 0, result.output
    fstab = (base / "node/etc/fstab").read_text()
    assert "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com@tcp:/abcdefgh /fsx lustre " in fstab
    assert "nfs" not in fstab
    assert "/fsx is a lustre mount" in result.output
    assert "hold the Lustre client and kernel" in result.steps


def test_storage_sh_reads_no_fsx_type() -> None:
    text = (dry.SCRIPTS / "steps" / "storage.sh").read_text()
    assert "fsx.type" not in text
    assert "fsx.volume_path" not in text

"""Issue 34, H1: the users and SSH-key steps never write through a link a user planted in their
own home (security review H1: ``~/.ssh -> /root/.ssh`` put alice's key into root's
authorized_keys; ``~/.ssh -> /fsx/home`` made the shared homes 0700).

Each case: a controller set up once (alice and bob, shared homes), then alice plants a link and
the operator runs ``make sync-users`` (HYPERPOD_ONLY_STEPS=users,ssh_keys,slurm_users, as
ops/sync_users.py runs the scripts). Expected: one refusal line for alice, the link's target
unchanged, bob still set up, the node's setup not failed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from lifecycle_testkit import dry

SYNC_USERS = "users,ssh_keys,slurm_users"
ROOT_KEY = "ssh-ed25519 AAAArootadminkey admin@corp\n"


def sync_users(base: Path) -> dry.DryRun:
    env = {**dry.environment("controller", base), "HYPERPOD_ONLY_STEPS": SYNC_USERS}
    done = subprocess.run(["bash", str(base / "scripts/entrypoint.sh")], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)  # fmt: skip
    return dry.DryRun.parse("controller", done.returncode, done.stdout)


@pytest.fixture
def controller(fake_node: Callable[..., Path]) -> Path:
    base = fake_node("controller")
    first = dry.run("controller", base)
    assert first.returncode == 0, first.output
    root = base / "node"
    (root / "root/.ssh").mkdir(parents=True, exist_ok=True)
    (root / "root/.ssh/authorized_keys").write_text(ROOT_KEY)
    (root / "etc/shadow").write_text("root:$6$secret:19000:0:99999:7:::\n")
    return base


def alice_ssh(base: Path) -> Path:
    return base / "node/fsx/home/alice/.ssh"


def replace_with_link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


def refusals(result: dry.DryRun) -> list[str]:
    return [line for line in result.output.splitlines() if "refused" in line]


def assert_bob_still_set_up(base: Path) -> None:
    keys = (base / "node/fsx/home/bob/.ssh/authorized_keys").read_text()
    assert "DryRunFakeKeybob bob@" in keys  # the cluster key of bob's own


def test_ssh_dir_linked_to_roots_is_refused(controller: Path) -> None:
    replace_with_link(alice_ssh(controller), controller / "node/root/.ssh")
    result = sync_users(controller)
    assert result.returncode == 0, result.output
    assert refusals(result) == ["[lifecycle] user alice: ~/.ssh is a symbolic link; refused"]
    assert (controller / "node/root/.ssh/authorized_keys").read_text() == ROOT_KEY
    assert sorted(p.name for p in (controller / "node/root/.ssh").iterdir()) == ["authorized_keys"]
    assert_bob_still_set_up(controller)
    # the Slurm users step after it still ran
    assert "Slurm accounts and users" in result.steps


def test_ssh_dir_linked_to_the_shared_homes_is_refused(controller: Path) -> None:
    homes = controller / "node/fsx/home"
    homes.chmod(0o755)
    before = sorted(p.name for p in homes.iterdir())
    replace_with_link(alice_ssh(controller), homes)
    result = sync_users(controller)
    assert result.returncode == 0, result.output
    assert refusals(result) == ["[lifecycle] user alice: ~/.ssh is a symbolic link; refused"]
    assert stat.S_IMODE(homes.stat().st_mode) == 0o755  # no chmod 700 through the link
    assert sorted(p.name for p in homes.iterdir()) == before
    assert_bob_still_set_up(controller)


def test_ssh_dir_linked_to_the_root_directory_is_refused(controller: Path) -> None:
    node = controller / "node"
    mode = stat.S_IMODE(node.stat().st_mode)
    replace_with_link(alice_ssh(controller), node)
    result = sync_users(controller)
    assert refusals(result) == ["[lifecycle] user alice: ~/.ssh is a symbolic link; refused"]
    assert stat.S_IMODE(node.stat().st_mode) == mode
    assert not (node / "authorized_keys").exists()


def test_authorized_keys_linked_elsewhere_is_refused(controller: Path) -> None:
    target = controller / "node/root/.ssh/authorized_keys"
    replace_with_link(alice_ssh(controller) / "authorized_keys", target)
    result = sync_users(controller)
    assert result.returncode == 0, result.output
    assert refusals(result) == [
        "[lifecycle] user alice: ~/.ssh/authorized_keys is a symbolic link; refused"
    ]
    assert target.read_text() == ROOT_KEY
    assert_bob_still_set_up(controller)


def test_public_key_linked_to_a_root_file_is_not_read(controller: Path) -> None:
    """Root used to `cat ~/.ssh/id_ed25519.pub` into authorized_keys: a link to /etc/shadow
    copied the hashes into a file alice can read."""
    replace_with_link(alice_ssh(controller) / "id_ed25519.pub", controller / "node/etc/shadow")
    result = sync_users(controller)
    assert refusals(result) == [
        "[lifecycle] user alice: ~/.ssh/id_ed25519.pub is a symbolic link; refused"
    ]
    assert "$6$secret" not in (alice_ssh(controller) / "authorized_keys").read_text()


def test_a_home_that_is_a_link_is_refused(controller: Path) -> None:
    home = controller / "node/fsx/home/alice"
    elsewhere = controller / "node/root"
    replace_with_link(home, elsewhere)
    result = sync_users(controller)
    assert refusals(result) == ["[lifecycle] user alice: the home directory is a symbolic link; refused"]  # fmt: skip
    assert (elsewhere / ".ssh/authorized_keys").read_text() == ROOT_KEY
    assert_bob_still_set_up(controller)


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a directory of another owner needs root")
def test_an_ssh_dir_of_another_owner_is_refused(controller: Path) -> None:
    os.chown(alice_ssh(controller), 4242, 4242)
    result = sync_users(controller)
    assert refusals(result) == [
        "[lifecycle] user alice: ~/.ssh is owned by UID 4242, not by the user; refused"
    ]
    assert_bob_still_set_up(controller)


def test_the_key_writes_run_as_the_user(fake_node: Callable[..., Path]) -> None:
    base = fake_node("controller")
    result = dry.run("controller", base)
    keygen = [c for c in result.commands if "ssh-keygen" in c]
    assert keygen and all(c.startswith("setpriv --reuid=2001 --regid=2001 --clear-groups -- ssh-keygen") or c.startswith("setpriv --reuid=2002") for c in keygen)  # fmt: skip
    text = (alice_ssh(base) / "authorized_keys").read_text()
    assert "alice@laptop" in text and "DryRunFakeKeyalice" in text


def test_a_key_taken_off_the_users_file_leaves_authorized_keys(fake_node: Callable[..., Path]) -> None:  # fmt: skip
    """Review L11: the managed block is rewritten from the file; the user's own lines stay."""
    base = fake_node("controller")
    assert dry.run("controller", base).returncode == 0
    keys = alice_ssh(base) / "authorized_keys"
    keys.write_text("ssh-ed25519 AAAAmyownkey alice@home\n" + keys.read_text())
    users = base / "scripts/users.json"
    users.write_text(users.read_text().replace('"ssh_public_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyOfAliceForTheDryRunOnly0000000000 alice@laptop"]', '"ssh_public_keys": []'))  # fmt: skip
    result = sync_users(base)
    assert result.returncode == 0, result.output
    text = keys.read_text()
    assert "alice@laptop" not in text
    assert "alice@home" in text and "DryRunFakeKeyalice" in text


def _real_user_run_possible() -> str | None:
    if os.geteuid() != 0:
        return "running as another UID needs root"
    if shutil.which("setpriv") is None or not os.access("/usr/bin/python3", os.X_OK):
        return "setpriv or /usr/bin/python3 is missing"
    return None


@pytest.mark.skipif(bool(_real_user_run_possible()), reason=_real_user_run_possible() or "")
def test_the_helper_as_a_real_user_through_setpriv(tmp_path_factory) -> None:
    """What the node runs: setpriv to the user's UID, lib/node.py on stdin (the user need not
    read the scripts). The user's own home is set up; a link to a root-owned folder is refused
    and the folder untouched (the kernel would refuse the write anyway)."""
    import tempfile

    from lifecycle_testkit import LIFECYCLE_ASSETS

    base = Path(tempfile.mkdtemp(prefix="h1-", dir="/tmp"))
    try:
        base.chmod(0o755)
        homes, roots = base / "home", base / "rootssh"
        homes.mkdir(mode=0o755)
        roots.mkdir(mode=0o700)
        (roots / "authorized_keys").write_text(ROOT_KEY)
        for name, uid in (("alice", 2001), ("bob", 2002)):
            home = homes / name
            home.mkdir(mode=0o700)
            os.chown(home, uid, uid)
        os.symlink(roots, homes / "alice" / ".ssh")
        os.lchown(homes / "alice" / ".ssh", 2001, 2001)
        script = (LIFECYCLE_ASSETS / "lib" / "node.py").read_bytes()

        def authorize(name: str, uid: int) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run(
                ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                 "/usr/bin/python3", "-S", "-", "ssh-authorize", name, str(homes / name),
                 f"ssh-ed25519 AAAAkey{name} {name}@laptop"],
                input=script, capture_output=True, timeout=60, check=False,
            )  # fmt: skip

        refused = authorize("alice", 2001)
        assert refused.returncode == 1
        assert refused.stderr.decode().strip() == "[lifecycle] user alice: ~/.ssh is a symbolic link; refused"  # fmt: skip
        assert (roots / "authorized_keys").read_text() == ROOT_KEY
        done = authorize("bob", 2002)
        assert done.returncode == 0, done.stderr
        keys = homes / "bob" / ".ssh" / "authorized_keys"
        assert "AAAAkeybob" in keys.read_text()
        assert keys.stat().st_uid == 2002 and stat.S_IMODE(keys.stat().st_mode) == 0o600
        assert stat.S_IMODE((homes / "bob" / ".ssh").stat().st_mode) == 0o700
    finally:
        shutil.rmtree(base)

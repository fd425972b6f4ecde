"""Issue 34: the security review's low findings (and M1's tag) refused by validation, each with
the review's hostile input and the key path it names (what ``make validate`` prints)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from config_testkit import REPO, assert_issue, build

from hyperpod_cdk.config.base import is_system_directory
from hyperpod_cdk.lifecycle.prefix import UPLOAD_EXCLUDE, lifecycle_files

EKS_PUBLIC = {"eks.endpoint_access": "public"}


# -- M1: the product's own tag keys ------------------------------------------------------------


@pytest.mark.parametrize("key", ["hyperpod-cdk:environment", "HyperPod-CDK:Owner", "hyperpod-environment"])  # fmt: skip
def test_the_products_tag_keys_are_refused(check, key: str) -> None:
    assert_issue(check({"tags": {key: "eks-full"}}, base="eks"), "tags", "is the product's own")


def test_other_tags_stay_allowed(check) -> None:
    assert check({"tags": {"team": "ml", "cost-center": "42", "hyperpod": "x"}}) == []


# -- L1: the public endpoint's blocks together ------------------------------------------------


@pytest.mark.parametrize(
    "blocks",
    [["0.0.0.0/1", "128.0.0.0/1"], ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2"], ["10.0.0.0/7"]],
)
def test_public_endpoint_blocks_covering_the_internet_are_refused(check, blocks: list[str]) -> None:
    issues = check({**EKS_PUBLIC, "eks.public_access_cidrs": blocks}, base="eks")
    assert_issue(issues, "eks.public_access_cidrs", "more than a /8")


def test_public_endpoint_blocks_of_an_organisation_stay_allowed(check) -> None:
    blocks = ["203.0.113.0/24", "198.51.100.0/24", "100.64.0.0/10"]
    assert check({**EKS_PUBLIC, "eks.public_access_cidrs": blocks}, base="eks") == []


# -- L2: a mount path inside a system directory ------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/etc/ssh",
        "/var/lib",
        "/var/log",
        "/usr/local",
        "/opt/slurm",
        "/opt/dlami/nvme",
        "/etc/ssh/",
    ],  # fmt: skip
)
def test_a_mount_path_inside_a_system_directory_is_refused(check, path: str) -> None:
    assert_issue(check({"storage.fsx.mount_path": path}), "storage.fsx.mount_path", "system directory")  # fmt: skip


@pytest.mark.parametrize("path", ["/fsx", "/home", "/data/lustre", "/mnt/fsx", "/tmp/scratch"])
def test_a_mount_path_elsewhere_stays_allowed(path: str) -> None:
    assert not is_system_directory(path)


# -- L3: lifecycle_scripts stays inside the project, dotfiles are never uploaded ------------------


def test_lifecycle_scripts_outside_the_project_are_refused(check, tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    for folder in (project / "lifecycle_assets", outside):
        folder.mkdir(parents=True)
        (folder / "entrypoint.sh").write_text("#!/bin/bash\n")
    (outside / ".env").write_text("AWS_SECRET_ACCESS_KEY=wJalrEXAMPLE\n")
    issues = check({"cluster.lifecycle_scripts": "../outside"}, root=project)
    assert_issue(issues, "cluster.lifecycle_scripts", "is outside the project")
    issues = check({"cluster.lifecycle_scripts": str(outside)}, root=project)
    assert_issue(issues, "cluster.lifecycle_scripts", "is outside the project")


def test_the_packaged_scripts_are_not_outside_the_project(check, tmp_path: Path) -> None:
    """A library app's default is the scripts of its installed hyperpod_cdk (site-packages),
    outside its project: the product's own files, allowed. A look-alike folder is not."""
    import hyperpod_cdk

    packaged = Path(hyperpod_cdk.__file__).parent / "lifecycle" / "assets"
    project = tmp_path / "project"
    project.mkdir()
    issues = check({"cluster.lifecycle_scripts": str(packaged)}, root=project)
    assert not [i for i in issues if "cluster.lifecycle_scripts" in str(i)], issues
    fake = tmp_path / "elsewhere" / "hyperpod_cdk" / "lifecycle" / "assets"
    fake.mkdir(parents=True)
    (fake / "entrypoint.sh").write_text("#!/bin/bash\n")
    issues = check({"cluster.lifecycle_scripts": str(fake)}, root=project)
    assert_issue(issues, "cluster.lifecycle_scripts", "is outside the project")


def test_dotfiles_and_key_files_are_never_uploaded(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    for name in ("entrypoint.sh", "lib/common.sh", ".env", ".env.local", ".git/config",
                 "lib/.secret", "id.pem", "lib/tls.key", ".aws/credentials"):  # fmt: skip
        (scripts / name).parent.mkdir(parents=True, exist_ok=True)
        (scripts / name).write_text("x")
    assert [p.relative_to(scripts).as_posix() for p in lifecycle_files(scripts)] == [
        "entrypoint.sh",
        "lib/common.sh",
    ]
    assert {".*", "*.pem", "*.key"} <= set(UPLOAD_EXCLUDE)


def test_the_upload_excludes_what_the_hash_leaves_out() -> None:
    """The asset upload takes UPLOAD_EXCLUDE (lifecycle/scripts.py), the prefix hash
    lifecycle_files: both from lifecycle_prefix."""
    text = (REPO / "constructs/hyperpod_cdk/lifecycle/scripts.py").read_text()
    assert "exclude=UPLOAD_EXCLUDE" in text


# -- L4: the AMI's base-passwd accounts and groups --------------------------------------------


def _users_errors(check, tmp_path: Path, users: dict[str, Any]) -> list[str]:
    root = tmp_path / "project"
    (root / "lifecycle_assets").mkdir(parents=True)
    (root / "lifecycle_assets" / "entrypoint.sh").write_text("#!/bin/bash\n")
    (root / "users.yaml").write_text(yaml.safe_dump(users))
    return [str(i) for i in check({"cluster.node_setup.users_file": "users.yaml"}, root=root)]


@pytest.mark.parametrize("name", ["bin", "sshd", "nogroup", "systemd-network", "www-data", "_apt"])
def test_a_user_named_like_a_system_account_is_refused(check, tmp_path: Path, name: str) -> None:
    errors = _users_errors(check, tmp_path, {"users": [{"name": name, "uid": 2002}]})
    assert any(
        e.startswith("config error: cluster.node_setup.users_file:")
        and f"users[0].name: {name!r} is an account or group of the AMI" in e
        for e in errors
    ), errors


@pytest.mark.parametrize("name", ["shadow", "disk", "kmem", "tty"])
def test_a_group_named_like_a_system_group_is_refused(check, tmp_path: Path, name: str) -> None:
    errors = _users_errors(check, tmp_path, {"groups": [{"name": name, "gid": 3001}]})
    assert any(f"groups[0].name: {name!r} is a group of the AMI or the system" in e for e in errors), errors  # fmt: skip


def test_the_base_passwd_list_is_the_systems_where_it_can_be_read() -> None:
    """The table holds every name of this machine's base-passwd (Debian's passwd.master and
    group.master), when the package is installed."""
    from hyperpod_cdk.config.node_setup import BASE_PASSWD_GROUPS, BASE_PASSWD_USERS

    master = Path("/usr/share/base-passwd")
    if not master.is_dir():
        pytest.skip("base-passwd is not installed here (no /usr/share/base-passwd)")
    users = {line.split(":")[0] for line in (master / "passwd.master").read_text().splitlines()}
    groups = {line.split(":")[0] for line in (master / "group.master").read_text().splitlines()}
    assert users <= BASE_PASSWD_USERS and groups <= BASE_PASSWD_GROUPS


# -- make validate prints the key path -------------------------------------------------------


def test_make_validate_refuses_a_reserved_tag_with_its_key(tmp_path: Path) -> None:
    config = tmp_path / "env.yaml"
    config.write_text(yaml.safe_dump(build({"tags": {"hyperpod-cdk:environment": "x"}})))
    done = subprocess.run([sys.executable, "-m", "hyperpod_cdk.config", str(config)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode != 0
    assert "config error: tags: " in done.stderr + done.stdout

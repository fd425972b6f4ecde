"""cluster.node_setup: field limits (through the loader, with dotted key paths), the cross-key
rules of ``check_node_setup``, and the users file shipped to the nodes as users.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk.config import EnvironmentConfig, Issue
from hyperpod_cdk.config.base import check_orchestrator_scope
from hyperpod_cdk.config.node_setup import (
    USERS_FILE_ON_NODE,
    NodeSetup,
    check_node_setup,
    lifecycle_extra_files,
    read_users_file,
)

NS = "cluster.node_setup"
G = "cluster.instance_groups"

ALICE = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOfAliceNotARealKey000000000000 alice@laptop"
USERS_YAML = f"""\
users:
  - name: alice
    uid: 2001
    groups: [docker]
    ssh_public_keys: ["{ALICE}"]
  - name: bob
    uid: 2002
"""


class Collector:
    """What ``check_node_setup`` reports, as Issues."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def error(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message))

    def warn(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message, "warning"))


def config_of(changes: dict[str, Any], base: str, root: Path) -> EnvironmentConfig:
    """The typed config, before the cross-key rules (which would raise on the cases here)."""
    return EnvironmentConfig.model_validate(build(changes, base))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project root with the entry script and a valid users file (users.yaml)."""
    (tmp_path / "lifecycle_assets").mkdir()
    (tmp_path / "lifecycle_assets" / "entrypoint.sh").write_text("#!/bin/bash\n")
    (tmp_path / "users.yaml").write_text(USERS_YAML)
    return tmp_path


def node_issues(
    root: Path, changes: dict[str, Any], base: str = "slurm", severity: str | None = None
) -> list[Issue]:
    out = Collector()
    check_node_setup(config_of(changes, base, root), root, out)
    return [i for i in out.issues if severity is None or i.severity == severity]


def scope_issues(root: Path, changes: dict[str, Any], base: str) -> list[Issue]:
    """What the one orchestrator-scope rule reports (the node_setup keys carry their scope)."""
    out = Collector()
    cfg = config_of(changes, base, root)
    check_orchestrator_scope(cfg, cfg.orchestrator, out)
    return out.issues


# -- defaults -----------------------------------------------------------------------------------


def test_defaults() -> None:
    setup = NodeSetup()
    assert setup.model_dump() == {
        "users_file": None,
        "home_on_shared_storage": True,
        "ssh_keys_between_nodes": True,
        "container_runtime_on_nvme": True,
        "nvidia_container_toolkit": True,
        "enroot_pyxis": True,
        "eks_containerd_on_ebs": True,
        "log_rotation": True,
        "log_retention_days": 14,
        "fsx_mount_timeout_seconds": 600,
        "fsx_efa_check": "fail",
        "exporters": {
            "node": False,
            "dcgm": False,
            "efa": False,
            "node_port": 9100,
            "dcgm_port": 9400,
            "efa_port": 9109,
            "node_image": None,
            "dcgm_image": None,
        },
        "directory": None,
        "restrict_imds": True,
        "pam_slurm_adopt": False,
    }


def test_an_unquoted_off_in_yaml_means_off(check, root: Path) -> None:
    # YAML 1.1 reads `fsx_efa_check: off` as false
    assert check({f"{NS}.fsx_efa_check": False}) == []
    cfg = config_of({f"{NS}.fsx_efa_check": False}, "slurm", root)
    assert cfg.cluster.node_setup.fsx_efa_check == "off"


def test_every_key_has_a_description() -> None:
    from hyperpod_cdk.config.node_setup import Exporters

    for model in (NodeSetup, Exporters):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"


def test_a_config_without_the_section_gets_the_defaults(check, root: Path) -> None:
    assert check({}) == []
    assert config_of({}, "slurm", root).cluster.node_setup == NodeSetup()
    assert node_issues(root, {}) == []
    assert node_issues(root, {}, base="eks") == []


# -- field limits (the loader reports them with dotted paths) ----------------------------------


def case(changes: dict[str, Any], path: str, fragment: str) -> Any:
    return pytest.param(changes, path, fragment, id=f"{path}: {fragment}")


REJECTED = [
    case({f"{NS}.exporters.dcgm": "sometimes"}, f"{NS}.exporters.dcgm", "is not valid"),
    case(
        {f"{NS}.exporters.dcgm_port": 80},
        f"{NS}.exporters.dcgm_port",
        "greater than or equal to 1024",
    ),
    case(
        {f"{NS}.exporters.efa_port": 70000},
        f"{NS}.exporters.efa_port",
        "less than or equal to 65535",
    ),
    case(
        {f"{NS}.exporters.efa_port": 9100},
        f"{NS}.exporters",
        "efa_port 9100 is also node_port; give each exporter its own port",
    ),
    case(
        {f"{NS}.exporters.dcgm_image": "nvcr.io/nvidia/k8s/dcgm-exporter:latest"},
        f"{NS}.exporters.dcgm_image",
        "is not pinned; name a version tag or a sha256 digest",
    ),
    case(
        {f"{NS}.exporters.dcgm_image": "dcgm-exporter"},
        f"{NS}.exporters.dcgm_image",
        "a container image pinned by tag or digest",
    ),
    case({f"{NS}.exporters.prometheus": True}, f"{NS}.exporters.prometheus", "unknown key"),
    case({f"{NS}.log_retention_days": 0}, f"{NS}.log_retention_days", "greater than or equal to 1"),
    case(
        {f"{NS}.fsx_mount_timeout_seconds": 5},
        f"{NS}.fsx_mount_timeout_seconds",
        "greater than or equal to 30",
    ),
    case({f"{NS}.fsx_efa_check": "maybe"}, f"{NS}.fsx_efa_check", "use 'off', 'warn' or 'fail'"),
    case(
        {f"{NS}.users_file": "/etc/users.yaml"},
        f"{NS}.users_file",
        "a path relative to the project root",
    ),
    case({f"{NS}.users_file": "../users.yaml"}, f"{NS}.users_file", "inside the project"),
    case({f"{NS}.enroot": False}, f"{NS}.enroot", "unknown key (did you mean 'enroot_pyxis'?)"),
    case({f"{NS}.log_rotation": None}, f"{NS}.log_rotation", "true or false"),
]


@pytest.mark.parametrize(("changes", "path", "fragment"), REJECTED)
def test_rejected(check, changes: dict[str, Any], path: str, fragment: str) -> None:
    assert_issue(check(changes), path, fragment)


@pytest.mark.parametrize(
    "changes",
    [
        {f"{NS}.exporters": {"node": True, "dcgm": True, "efa": True}},
        {f"{NS}.exporters.dcgm_image": "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:" + "a" * 64},
        {
            f"{NS}.exporters.dcgm_image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/mirror/dcgm:4.2"
        },
        {f"{NS}.fsx_efa_check": "fail", "storage.fsx.efa_enabled": True},
        {f"{NS}.log_retention_days": 365, f"{NS}.log_rotation": False},
    ],
)
def test_accepted(check, changes: dict[str, Any]) -> None:
    assert [i for i in check(changes) if not i.path.startswith(NS)] == check(changes)
    assert not [i for i in check(changes) if i.path.startswith(NS)]


# -- cross-key rules ----------------------------------------------------------------------------


SLURM_ONLY = [
    "users_file",
    "home_on_shared_storage",
    "ssh_keys_between_nodes",
    "container_runtime_on_nvme",
    "nvidia_container_toolkit",
    "enroot_pyxis",
    "fsx_mount_timeout_seconds",
    "fsx_efa_check",
    "exporters",
]
SAMPLE = {
    "users_file": "users.yaml",
    "fsx_mount_timeout_seconds": 300,
    "fsx_efa_check": "off",
    "exporters": {"node": True},
}


@pytest.mark.parametrize("key", SLURM_ONLY)
def test_slurm_keys_are_errors_under_eks(root: Path, key: str) -> None:
    issues = scope_issues(root, {f"{NS}.{key}": SAMPLE.get(key, False)}, base="eks")
    assert_issue(issues, f"{NS}.{key}", "applies only with orchestrator: slurm")


def test_eks_keys_are_errors_under_slurm(root: Path) -> None:
    issues = scope_issues(root, {f"{NS}.eks_containerd_on_ebs": False}, base="slurm")
    assert_issue(issues, f"{NS}.eks_containerd_on_ebs", "applies only with orchestrator: eks")


def test_users_file_must_exist(root: Path) -> None:
    issues = node_issues(root, {f"{NS}.users_file": "people.yaml"})
    assert_issue(issues, f"{NS}.users_file", "'people.yaml' is not a file under")


def test_a_valid_users_file_passes(root: Path) -> None:
    assert node_issues(root, {f"{NS}.users_file": "users.yaml"}) == []


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (
            "users:\n  - name: root\n    uid: 2001\n",
            "users[0].name: 'root' is an account or group of the AMI",
        ),
        (
            "users:\n  - name: Alice\n    uid: 2001\n",
            "users[0].name: 'Alice' is not valid; use 1-32 lowercase letters, digits, _ and -",
        ),
        (
            "users:\n  - name: alice\n    uid: 1001\n",
            "users[0].uid: 1001 is below 2000: the AMI and the SSM agent (ssm-user) take IDs below "
            "it, so a node may already have 1001; renumber from 2000 up, and on a running cluster "
            "then give the existing homes on the shared file system to the new ID",
        ),
        (
            "users:\n  - name: alice\n    uid: 60000\n",
            "users[0].uid: 60000 is above 59999",
        ),
        (
            "users:\n  - name: a\n    uid: 2001\n  - name: b\n    uid: 2001\n",
            "users[1].uid: UID 2001 is taken by users[0].uid",
        ),
        (
            "users:\n  - name: a\n    uid: 2001\n  - name: a\n    uid: 2002\n",
            "users[1].name: name 'a' is taken by users[0].name",
        ),
        (
            "groups:\n  - {name: research, gid: 2002}\nusers:\n  - {name: alice, uid: 2001, "
            "groups: [research]}\n  - {name: bob, uid: 2002}\n",
            "groups[0].gid: GID 2002 is taken by users[1].uid (each user has a group of its own "
            "name with GID = UID)",
        ),
        (
            "groups:\n  - {name: alice, gid: 3000}\nusers:\n  - {name: alice, uid: 2001}\n",
            "groups[0].name: name 'alice' is taken by users[0].name",
        ),
        (
            "groups:\n  - {name: a, gid: 3000}\n  - {name: b, gid: 3000}\n",
            "groups[1].gid: GID 3000 is taken by groups[0].gid",
        ),
        (
            "groups:\n  - {name: docker, gid: 3000}\n",
            "groups[0].name: 'docker' is a group of the AMI, with the GID its package gave it",
        ),
        (
            "groups:\n  - {name: a, gid: 999}\n",
            "groups[0].gid: 999 is below 2000",
        ),
        (
            "users:\n  - {name: alice, uid: 2001, groups: [docker, research]}\n",
            "users[0].groups[1]: 'research' is not declared under groups (add it with its GID, the "
            "same on every node) and is no group of the AMI",
        ),
        (
            "users:\n  - name: a\n    uid: 2001\n    ssh_public_keys: [not-a-key]\n",
            "users[0].ssh_public_keys[0]",
        ),
        (
            "users:\n  - name: a\n    uid: 2001\n    shell: /bin/zsh\n",
            "users[0].shell: Extra inputs are not permitted",
        ),
        ("users: [\n", "not valid YAML (line 2, column 1)"),
        ("- alice\n", "(top level)"),
    ],
)
def test_a_bad_users_file_is_an_error_naming_the_entry(
    root: Path, content: str, fragment: str
) -> None:
    (root / "users.yaml").write_text(content)
    issues = node_issues(root, {f"{NS}.users_file": "users.yaml"})
    assert_issue(issues, f"{NS}.users_file", fragment)


def test_dcgm_exporter_without_gpu_groups_is_a_warning(root: Path) -> None:
    cpu_only = {
        f"{G}[2].instance_type": "ml.c5.18xlarge",
        f"{NS}.exporters.dcgm": True,
    }
    issues = node_issues(root, cpu_only, severity="warning")
    assert_issue(issues, f"{NS}.exporters.dcgm", "no instance group has NVIDIA GPUs")
    assert node_issues(root, {f"{NS}.exporters.dcgm": True}) == []  # the base has ml.p5


def test_efa_exporter_without_accelerated_groups_is_a_warning(root: Path) -> None:
    issues = node_issues(
        root, {f"{G}[2].instance_type": "ml.c5.18xlarge", f"{NS}.exporters.efa": True}
    )
    assert_issue(issues, f"{NS}.exporters.efa", "the EFA exporter runs nowhere")


def test_keys_between_nodes_need_shared_homes(root: Path) -> None:
    changes = {f"{NS}.users_file": "users.yaml", f"{NS}.home_on_shared_storage": False}
    issues = node_issues(root, changes, severity="warning")
    assert_issue(issues, f"{NS}.ssh_keys_between_nodes", "need home directories on shared storage")
    assert node_issues(root, {**changes, f"{NS}.ssh_keys_between_nodes": False}) == []


def test_shared_homes_without_fsx_is_a_warning(root: Path) -> None:
    changes = {
        "storage.fsx": {"enabled": False},
        f"{NS}.home_on_shared_storage": True,
    }
    issues = node_issues(root, changes, severity="warning")
    assert_issue(issues, f"{NS}.home_on_shared_storage", "storage.fsx is disabled")


def test_efa_check_without_an_efa_file_system_is_a_warning(root: Path) -> None:
    issues = node_issues(root, {f"{NS}.fsx_efa_check": "fail"}, severity="warning")
    assert_issue(issues, f"{NS}.fsx_efa_check", "storage.fsx.efa_enabled is false")


def test_containerd_on_ebs_asked_for_without_a_volume_is_a_warning(root: Path) -> None:
    changes = {f"{NS}.eks_containerd_on_ebs": True, f"{G}[0].ebs_volume_gb": 500}
    issues = node_issues(root, changes, base="eks", severity="warning")
    assert_issue(issues, f"{G}[1].ebs_volume_gb", "containerd data stays on the root volume")
    assert not [i for i in issues if i.path == f"{G}[0].ebs_volume_gb"]
    # left at its default, the switch does not nag about groups without a volume
    assert node_issues(root, {}, base="eks") == []


# -- the users file on the node -----------------------------------------------------------------


def test_users_file_becomes_users_json_beside_the_scripts(root: Path) -> None:
    cfg = config_of({f"{NS}.users_file": "users.yaml"}, "slurm", root)
    files = lifecycle_extra_files(cfg, root)
    assert list(files) == [USERS_FILE_ON_NODE] == ["users.json"]
    assert json.loads(files["users.json"]) == {
        "groups": [],
        "users": [
            {
                "name": "alice",
                "uid": 2001,
                "groups": ["docker"],
                "ssh_public_keys": [ALICE],
                "account": None,
            },
            {"name": "bob", "uid": 2002, "groups": [], "ssh_public_keys": [], "account": None},
        ],
    }


def test_no_extra_files_without_a_users_file(root: Path) -> None:
    assert lifecycle_extra_files(config_of({}, "slurm", root), root) == {}
    assert lifecycle_extra_files(config_of({}, "eks", root), root) == {}


def test_an_empty_users_file_has_no_users(root: Path) -> None:
    (root / "users.yaml").write_text("")
    assert read_users_file(root / "users.yaml").users == []


# -- a closed network (issue 15): steps that download from the internet are refused -------------

CLOSED = {"network.closed_network": True}


def test_closed_network_runs_hyperpods_exporter_images(root: Path) -> None:
    """Issue 20: the node exporter no longer comes from the Ubuntu archive, and the default DCGM
    image is HyperPod's in the region's Amazon ECR (the closed network's endpoints reach it)."""
    exporters = {f"{NS}.exporters.node": True, f"{NS}.exporters.dcgm": True}
    assert node_issues(root, {**CLOSED, **exporters}) == []


def test_closed_network_refuses_a_public_dcgm_image(root: Path) -> None:
    nvcr = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
    changes = {**CLOSED, f"{NS}.exporters.dcgm": True, f"{NS}.exporters.dcgm_image": nvcr}
    issues = node_issues(root, changes)
    assert_issue(issues, f"{NS}.exporters.dcgm_image", "reaches no image in nvcr.io")


def test_closed_network_takes_a_dcgm_image_from_private_ecr(root: Path) -> None:
    mirror = (
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/mirror/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
    )
    changes = {**CLOSED, f"{NS}.exporters.dcgm": True, f"{NS}.exporters.dcgm_image": mirror}
    assert node_issues(root, changes) == []
    # the EFA exporter ships with the scripts: nothing to download
    assert node_issues(root, {**CLOSED, f"{NS}.exporters.efa": True}) == []


def test_open_network_takes_the_public_images(root: Path) -> None:
    assert node_issues(root, {f"{NS}.exporters.node": True, f"{NS}.exporters.dcgm": True}) == []


def test_every_users_file_problem_is_a_line_of_its_own(root: Path) -> None:
    """Issue 16: one issue per problem, in words (no regex)."""
    (root / "users.yaml").write_text(
        "users:\n  - name: Alice\n    uid: 2001\n    ssh_public_keys: [not-a-key]\n"
    )
    issues = [
        i for i in node_issues(root, {f"{NS}.users_file": "users.yaml"}) if "users_file" in i.path
    ]
    assert len(issues) == 2
    text = "\n".join(str(i) for i in issues)
    assert "^" not in text and "pattern" not in text
    assert "one OpenSSH public key line" in text


# -- homes on the shared file system are never exported to S3 -----------------------------------

DRA = "storage.fsx.data_repository_associations"


@pytest.mark.parametrize("path", ["/", "/home", "/home/alice"])
def test_exporting_the_homes_is_an_error(root: Path, path: str) -> None:
    """Users' SSH private keys live in <mount>/home/<name>/.ssh: S3 would get every key."""
    from hyperpod_cdk.config.storage import check_storage

    dra = {"file_system_path": path, "s3_prefix": "all/", "auto_export": ["NEW", "CHANGED"]}
    changes = {f"{NS}.users_file": "users.yaml", DRA: [dra]}
    out = Collector()
    check_storage(config_of(changes, "slurm", root), out)
    assert_issue(
        out.issues,
        f"{DRA}[0].auto_export",
        f"exports {path!r}, which holds the users' home directories (/fsx/home/<name>) with their "
        "SSH private keys",
    )
    for safe in (
        {DRA: [{**dra, "auto_export": []}]},  # import only
        {DRA: [{**dra, "file_system_path": "/homework"}]},  # not the homes
        {f"{NS}.home_on_shared_storage": False},  # homes are local
        {f"{NS}.users_file": None},  # no homes are made
    ):
        out = Collector()
        check_storage(config_of({**changes, **safe}, "slurm", root), out)
        assert not [i for i in out.issues if i.path.endswith("auto_export")], safe

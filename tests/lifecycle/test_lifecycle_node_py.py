"""Unit tests of lifecycle_assets/lib/node.py, the standard-library helper the scripts call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lifecycle_testkit import FAKE_NODE, LIFECYCLE_ASSETS, load_helper

node = load_helper("node")

SLURM_SETTINGS = json.loads((FAKE_NODE / "settings" / "slurm.json").read_text())
EKS_SETTINGS = json.loads((FAKE_NODE / "settings" / "eks.json").read_text())
SLURM_CONFIG = FAKE_NODE / "resource_config.slurm.json"
EKS_CONFIG = FAKE_NODE / "resource_config.eks.json"


# -- settings -----------------------------------------------------------------------------------


def test_flatten_joins_keys_and_leaves_out_nulls_and_groups() -> None:
    flat = dict(
        node.flatten(
            {
                "fsx": {"enabled": True, "mount_path": "/fsx", "dns_name": None},
                "instance_groups": {"gpu-a": {"node_type": "Compute"}},
                "node_setup": {"exporters": {"dcgm_port": 9400}, "list": [1, 2]},
            }
        )
    )
    assert flat == {
        "fsx_enabled": "true",
        "fsx_mount_path": "/fsx",
        "node_setup_exporters_dcgm_port": "9400",
        "node_setup_list": "[1, 2]",
    }


def test_flatten_skips_keys_that_are_not_shell_names() -> None:
    assert dict(node.flatten({"a-b": 1, "ok": False})) == {"ok": "false"}


@pytest.mark.parametrize("value", ["it's", "a b", "$(reboot)", "`x`", 'q"uote', "new\nline"])
def test_shell_assignments_survive_eval(value: str) -> None:
    script = node.shell_assignments([("value", value)], "S_") + 'printf "%s" "$S_value"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout == value


def test_settings_command_prints_assignments(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"fsx": {"mount_path": "/fsx"}}))
    out = subprocess.run(
        [sys.executable, str(LIFECYCLE_ASSETS / "lib" / "node.py"), "settings", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == "S_fsx_mount_path=/fsx\n"


# -- which node this is -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "role", "group", "gpu"),
    [
        ("10.1.0.10", "controller", "controller", "false"),
        ("10.1.0.20", "login", "login", "false"),
        ("10.1.1.31", "compute", "gpu", "true"),
    ],
)
def test_identify_finds_the_node_by_its_address(
    address: str, role: str, group: str, gpu: str
) -> None:
    values = node.identify(
        SLURM_SETTINGS, SLURM_CONFIG, {address}, None, FAKE_NODE / "nodes" / role
    )
    assert (values["ROLE"], values["GROUP"], values["GPU"]) == (role, group, gpu)


def test_identify_finds_the_node_by_its_instance_id() -> None:
    values = node.identify(
        SLURM_SETTINGS,
        SLURM_CONFIG,
        {"192.0.2.1"},
        "i-0ccccccccccccccc2",
        FAKE_NODE / "nodes/compute",
    )
    assert values == {
        "ROLE": "compute",
        "GROUP": "gpu",
        "NAME": "gpu-2",
        "INSTANCE_TYPE": "ml.p5.48xlarge",
        "GPU": "true",
        "GPU_SOURCE": "NVIDIA PCI device 0000:53:00.0",
    }


def _pci(root: Path, address: str, vendor: str, kind: str) -> None:
    device = root / "sys/bus/pci/devices" / address
    device.mkdir(parents=True)
    (device / "vendor").write_text(f"{vendor}\n")
    (device / "class").write_text(f"{kind}\n")


def test_the_hardware_decides_whether_a_node_has_a_gpu(tmp_path: Path) -> None:
    """A flexible group's resource config may name any of its types; the hardware does not lie."""
    settings: dict[str, Any] = {**SLURM_SETTINGS}
    config = json.loads(SLURM_CONFIG.read_text())
    config["InstanceGroups"][2]["InstanceType"] = "ml.c5.18xlarge"  # not a GPU type by name
    path = tmp_path / "resource_config.json"
    path.write_text(json.dumps(config))
    root = tmp_path / "root"
    _pci(root, "0000:00:05.0", "0x1d0f", "0x020000")  # the ENA network interface
    _pci(root, "0000:a8:00.0", "0x10de", "0x068000")  # an NVSwitch: NVIDIA, but a bridge
    values = node.identify(settings, path, {"10.1.1.30"}, None, root)
    assert (values["GPU"], values["GPU_SOURCE"]) == (
        "false",
        "no NVIDIA PCI device and no /dev/nvidia0",
    )
    _pci(root, "0000:53:00.0", "0x10DE", "0x030200")
    values = node.identify(settings, path, {"10.1.1.30"}, None, root)
    assert (values["GPU"], values["GPU_SOURCE"]) == ("true", "NVIDIA PCI device 0000:53:00.0")


def test_a_gpu_type_without_gpu_hardware_says_so(tmp_path: Path) -> None:
    values = node.identify(SLURM_SETTINGS, SLURM_CONFIG, {"10.1.1.30"}, None, tmp_path)
    assert values["GPU"] == "false"
    assert values["GPU_SOURCE"] == (
        "no NVIDIA PCI device and no /dev/nvidia0 (although ml.p5.48xlarge is a GPU instance type)"
    )
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/nvidia0").touch()
    assert (
        node.identify(SLURM_SETTINGS, SLURM_CONFIG, {"10.1.1.30"}, None, tmp_path)["GPU_SOURCE"]
        == "/dev/nvidia0"
    )


def test_a_slurm_node_not_in_the_resource_config_is_an_error() -> None:
    with pytest.raises(node.NodeError, match=r"addresses 192\.0\.2\.1.* is not in"):
        node.identify(SLURM_SETTINGS, SLURM_CONFIG, {"192.0.2.1"}, None)


def test_a_missing_resource_config_is_an_error_on_slurm(tmp_path: Path) -> None:
    with pytest.raises(node.NodeError, match="does not exist"):
        node.identify(SLURM_SETTINGS, tmp_path / "none.json", {"10.1.0.10"}, None)


def test_a_group_the_settings_do_not_know_is_an_error() -> None:
    settings: dict[str, Any] = {**SLURM_SETTINGS, "instance_groups": {}}
    with pytest.raises(node.NodeError, match="'controller' is not in settings.json"):
        node.identify(settings, SLURM_CONFIG, {"10.1.0.10"}, None)


def test_eks_nodes_need_no_resource_config(tmp_path: Path) -> None:
    assert node.identify(EKS_SETTINGS, EKS_CONFIG, {"10.1.2.40"}, None)["GROUP"] == "gpu"
    values = node.identify(EKS_SETTINGS, tmp_path / "none.json", {"10.9.9.9"}, None)
    assert (values["ROLE"], values["GROUP"], values["GPU"]) == ("eks", "unknown", "false")


@pytest.mark.parametrize(
    ("instance_type", "gpu"),
    [
        ("ml.p5.48xlarge", True),
        ("ml.g5.8xlarge", True),
        ("ml.g6e.12xlarge", True),
        ("ml.trn1.32xlarge", False),
        ("ml.m5.2xlarge", False),
        ("ml.c5n.18xlarge", False),
        ("", False),
    ],
)
def test_gpu_instance_types(instance_type: str, gpu: bool) -> None:
    assert node.is_gpu(instance_type) is gpu


def test_instance_id_comes_from_the_dmi_asset_tag(tmp_path: Path) -> None:
    tag = tmp_path / "sys/devices/virtual/dmi/id/board_asset_tag"
    assert node.instance_id(tmp_path) is None
    tag.parent.mkdir(parents=True)
    tag.write_text("i-0123456789abcdef0\n")
    assert node.instance_id(tmp_path) == "i-0123456789abcdef0"
    tag.write_text("Amazon EC2\n")
    assert node.instance_id(tmp_path) is None


def test_local_addresses_are_ipv4_and_not_loopback() -> None:
    for address in node.local_addresses():
        assert address.count(".") == 3
        assert address != "127.0.0.1"


# -- users and JSON files -----------------------------------------------------------------------


def test_user_lines_are_tab_separated_users_and_keys() -> None:
    users = json.loads((FAKE_NODE / "users.json").read_text())
    lines = node.user_lines(users).splitlines()
    assert lines[0] == "group\tresearch\t3001"  # declared groups first
    assert lines[1] == "user\talice\t2001\tresearch\tdocker,research"
    assert lines[2].startswith("key\talice\tssh-ed25519 AAAA")
    assert lines[3] == "user\tbob\t2002\tbob\tdocker,research"
    assert len(lines) == 4


def test_json_set_reports_a_change_once(tmp_path: Path) -> None:
    path = tmp_path / "docker" / "daemon.json"
    assert node.json_set(path, "data-root", "/opt/dlami/nvme/docker/data-root") is True
    assert node.json_set(path, "data-root", "/opt/dlami/nvme/docker/data-root") is False
    assert json.loads(path.read_text()) == {"data-root": "/opt/dlami/nvme/docker/data-root"}


def test_json_set_keeps_other_keys_and_reads_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "daemon.json"
    path.write_text("")
    node.json_set(path, "a", 1)
    node.json_set(path, "b", {"c": 2})
    assert json.loads(path.read_text()) == {"a": 1, "b": {"c": 2}}
    assert node.json_has(path, ["b", "c"])
    assert not node.json_has(path, ["b", "d"])
    assert not node.json_has(tmp_path / "missing.json", ["a"])


def test_json_set_refuses_a_file_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "daemon.json"
    path.write_text("[1]")
    with pytest.raises(node.NodeError, match="does not hold a JSON object"):
        node.json_set(path, "a", 1)


def test_bad_json_is_a_node_error(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{")
    with pytest.raises(node.NodeError, match="is not valid JSON"):
        node.read_json(path)


def test_main_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert node.main([]) == 2
    assert node.main(["nonsense"]) == 2
    assert node.main(["settings", str(tmp_path / "missing.json")]) == 1
    assert "[lifecycle] cannot read" in capsys.readouterr().err
    path = tmp_path / "x.json"
    assert node.main(["json-set", str(path), "k", '"v"']) == 0
    assert capsys.readouterr().out == "changed\n"
    assert node.main(["json-has", str(path), "k"]) == 0
    assert node.main(["json-has", str(path), "nope"]) == 1


def test_toml_set_top_sets_containerds_root_and_keeps_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert node.toml_set_top(config, "root", "/opt/dlami/nvme/docker/containerd")
    assert config.read_text() == 'version = 2\nroot = "/opt/dlami/nvme/docker/containerd"\n'
    config.write_text(
        '# from the package\nversion = 2\nroot = "/var/lib/containerd"\n\n[grpc]\n  root = "x"\n'
    )
    assert node.toml_set_top(config, "root", "/data/containerd")
    assert config.read_text() == (
        '# from the package\nversion = 2\nroot = "/data/containerd"\n\n[grpc]\n  root = "x"\n'
    )
    assert not node.toml_set_top(config, "root", "/data/containerd")  # unchanged: no restart


def test_toml_set_top_puts_a_new_key_before_the_first_table(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('disabled_plugins = ["cri"]\n[plugins]\n  x = 1\n')
    assert node.toml_set_top(config, "root", "/data")
    assert config.read_text() == 'disabled_plugins = ["cri"]\nroot = "/data"\n[plugins]\n  x = 1\n'


@pytest.mark.parametrize(
    ("cidrs", "expected"),
    [
        (["10.1.0.0/16"], ["10.1.*", "ip-10-1-*"]),
        (["10.2.4.0/23"], ["10.2.4.*", "ip-10-2-4-*", "10.2.5.*", "ip-10-2-5-*"]),
        (["10.0.0.0/8", "10.1.0.0/16"], ["10.*", "ip-10-*", "10.1.*", "ip-10-1-*"]),
        (["192.168.1.0/31"], ["192.168.1.0", "ip-192-168-1-0", "192.168.1.1", "ip-192-168-1-1"]),
    ],
)
def test_ssh_patterns_cover_exactly_the_blocks(cidrs: list[str], expected: list[str]) -> None:
    assert node.ssh_patterns(cidrs) == expected

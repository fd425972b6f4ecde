"""The real entry script on the fake node: steps per node type, switches, idempotency, failures.

The bundled settings (constructs/hyperpod_cdk/lifecycle/dry_run/fake_node/settings) switch every step on: a users file,
an EFA-enabled FSx, the accounting database and all exporters (Slurm); the EKS settings keep
the defaults. The switch tests turn one setting off and check that its step goes, with a reason
that names the setting.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from lifecycle_testkit import DryRunner, dry

CONTROLLER_STEPS = [
    "read settings",
    "identify node",
    "wait for FSx mount",
    "hold the Lustre client and kernel",
    "users and groups",
    "IMDS only for root and system accounts",
    "ssh keys between nodes",
    "SSH within the cluster",
    "enroot and pyxis",
    "wait for Slurm accounting",
    "Slurm accounts and users",
    "log rotation",
    "node exporter",
    "done",
]
LOGIN_STEPS = [
    "read settings",
    "identify node",
    "wait for FSx mount",
    "hold the Lustre client and kernel",
    "users and groups",
    "IMDS only for root and system accounts",
    "SSH within the cluster",
    "container runtime on NVMe",
    "enroot and pyxis",
    "log rotation",
    "node exporter",
    "done",
]
COMPUTE_STEPS = [
    "read settings",
    "identify node",
    "wait for FSx mount",
    "hold the Lustre client and kernel",
    "verify EFA transport to FSx",
    "users and groups",
    "IMDS only for root and system accounts",
    "SSH within the cluster",
    "container runtime on NVMe",
    "NVIDIA container toolkit",
    "enroot and pyxis",
    "log rotation",
    "node exporter",
    "DCGM exporter",
    "EFA exporter",
    "done",
]
EKS_STEPS = ["read settings", "identify node", "containerd data on EBS", "log rotation", "done"]
EFA_UNIT = "configure-efa-fsx-lustre-client.service"
SLURM_ONLY_STEPS = {
    "wait for FSx mount",
    "SSH within the cluster",
    "hold the Lustre client and kernel",
    "users and groups",
    "IMDS only for root and system accounts",
    "ssh keys between nodes",
    "enroot and pyxis",
    "wait for Slurm accounting",
    "Slurm accounts and users",
    "container runtime on NVMe",
}


@pytest.mark.parametrize(
    ("node", "steps"),
    [
        ("controller", CONTROLLER_STEPS),
        ("login", LOGIN_STEPS),
        ("compute", COMPUTE_STEPS),
        ("eks", EKS_STEPS),
    ],
)
def test_steps_per_node_type(dry_run: DryRunner, node: str, steps: list[str]) -> None:
    result = dry_run(node)
    assert result.returncode == 0, result.output
    assert result.steps == steps


def test_only_the_controller_makes_keys_and_waits_for_accounting(dry_run: DryRunner) -> None:
    for node in ("login", "compute"):
        skipped = dry_run(node).skipped
        assert skipped["ssh keys between nodes"] == (
            "the controller makes the keys in the shared home directories"
        )
        assert skipped["wait for Slurm accounting"] == "slurmdbd runs on the controller"
    assert dry_run("controller").skipped["container runtime on NVMe"] == (
        "the controller runs no containers"
    )


def test_gpu_and_efa_steps_only_where_the_hardware_is(dry_run: DryRunner) -> None:
    login = dry_run("login").skipped
    assert login["NVIDIA container toolkit"] == "no NVIDIA GPU on this node"
    assert login["DCGM exporter"] == "no NVIDIA GPU on this node"
    assert login["EFA exporter"] == "this node has no EFA device"
    assert login["verify EFA transport to FSx"].startswith("this node has no EFA device")


def test_eks_node_has_no_slurm_steps_and_no_fsx_mount(dry_run: DryRunner) -> None:
    result = dry_run("eks")
    assert not SLURM_ONLY_STEPS & set(result.steps)
    assert "CSI driver" in result.skipped["wait for FSx mount"]
    assert not any(c.startswith(("mount /fsx", "useradd")) for c in result.commands)


def test_eks_moves_containerd_and_kubelet_to_the_ebs_volume(dry_run: DryRunner) -> None:
    """At OnCreate, before the node joins: nothing is stopped, started or restarted."""
    commands = dry_run("eks").commands
    assert commands == [
        "cp -a -x /var/lib/containerd/. /opt/sagemaker/containerd/",
        "mount --bind /opt/sagemaker/containerd /var/lib/containerd",
        "cp -a -x /var/lib/kubelet/. /opt/sagemaker/kubelet/",
        "mount --bind /opt/sagemaker/kubelet /var/lib/kubelet",
        "systemctl daemon-reload",
    ]
    root = dry_run.root("eks") / "node"
    assert (root / "opt/sagemaker/containerd/io.containerd.content.v1.content/pause").is_file()
    fstab = lines(root / "etc/fstab")
    assert (
        "/opt/sagemaker/kubelet /var/lib/kubelet none "
        "bind,nofail,x-systemd.requires-mounts-for=/opt/sagemaker 0 0"
    ) in fstab
    for unit in ("containerd", "kubelet"):
        dropin = root / f"etc/systemd/system/{unit}.service.d/hyperpod-ebs.conf"
        assert f"RequiresMountsFor=/var/lib/{unit}" in dropin.read_text().splitlines()


@pytest.mark.parametrize("unit", ["containerd", "kubelet"])
def test_a_joined_eks_node_keeps_its_data_where_it_is(fake_node, unit: str) -> None:
    """Under OnInitComplete (or a re-run on a joined node) a daemon runs: nothing is moved."""
    base = fake_node("eks", {"lifecycle_hook": "OnInitComplete"})
    (base / f"node/run/fake-systemd/active/{unit}").touch()
    result = dry.run("eks", base)
    assert result.returncode == 0, result.output
    assert result.skipped["containerd data on EBS"].startswith(
        f"{unit} is running (the node has joined the cluster): its data stays on the root volume"
    )
    assert not [c for c in result.commands if c.startswith(("cp", "mount", "systemctl"))]


def test_the_eks_copy_stays_on_one_file_system(fake_node) -> None:
    """A file system mounted under /var/lib/kubelet (a pod's FSx claim) is never copied."""
    base = fake_node("eks")
    volume = "/var/lib/kubelet/pods/abc/volumes/kubernetes.io~csi/fsx/mount"
    (base / f"node{volume}").mkdir(parents=True)
    (base / f"node{volume}/dataset.bin").write_text("terabytes")
    mounts = base / "node/proc/self/mounts"
    mounts.write_text(mounts.read_text() + f"fs@tcp:/x {volume} lustre rw 0 0\n")
    assert dry.run("eks", base).returncode == 0
    copied = base / "node/opt/sagemaker/kubelet/pods/abc/volumes/kubernetes.io~csi/fsx/mount"
    assert copied.is_dir()
    assert list(copied.iterdir()) == []


def test_slurm_nodes_put_docker_data_on_the_fastest_local_disk(dry_run: DryRunner) -> None:
    assert "Docker and containerd data on /opt/dlami/nvme/docker" in dry_run("compute").output
    # the login node of the fake cluster has no instance store, only the group's EBS volume
    assert "Docker and containerd data on /opt/sagemaker/docker" in dry_run("login").output


def test_docker_images_move_with_containerd_and_wait_for_the_disk(dry_run: DryRunner) -> None:
    """Docker 29 keeps images in containerd's store: data-root alone leaves them on the root
    volume. Both daemons start only once the local disk is mounted."""
    result = dry_run("compute")
    root = dry_run.root("compute") / "node"
    config = (root / "etc/containerd/config.toml").read_text()
    assert 'root = "/opt/dlami/nvme/docker/containerd"' in config.splitlines()
    daemon = json.loads((root / "etc/docker/daemon.json").read_text())
    assert daemon["data-root"] == "/opt/dlami/nvme/docker/data-root"
    for unit in ("docker", "containerd"):
        dropin = (root / f"etc/systemd/system/{unit}.service.d/hyperpod-data.conf").read_text()
        assert "RequiresMountsFor=/opt/dlami/nvme" in dropin.splitlines()
        assert "After=dlami-nvme.service" in dropin.splitlines()
    commands = result.commands
    order = [commands.index(c) for c in ("systemctl stop docker", "systemctl restart containerd",
                                         "systemctl restart docker")]  # fmt: skip
    assert order == sorted(order)
    login = dry_run.root("login") / "node/etc/systemd/system/docker.service.d/hyperpod-data.conf"
    assert "RequiresMountsFor=/opt/sagemaker" in login.read_text().splitlines()
    assert "After=dlami-nvme.service" not in login.read_text()


def _count_sleeps(base: Path) -> Path:
    """Make ``sleep`` on the fake node's PATH record its calls (in the returned file)."""
    calls = base / "sleep-calls"
    sleep = base / "bin/sleep"
    sleep.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    sleep.chmod(0o755)
    return calls


@pytest.mark.parametrize("enabled", [True, False])
def test_the_local_disk_is_waited_for_only_when_its_unit_will_mount_it(
    fake_node, enabled: bool
) -> None:
    """The DLAMI's dlami-nvme.service mounts the instance store, maybe after the script starts;
    the empty directory the AMI ships is no sign that a mount is coming."""
    base = fake_node("compute")
    mounts = base / "node/proc/self/mounts"
    mounts.write_text("".join(f"{m}\n" for m in lines(mounts) if "/opt/dlami/nvme" not in m))
    if not enabled:
        (base / "node/run/fake-systemd/enabled/dlami-nvme.service").unlink()
    calls = _count_sleeps(base)
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert (base / "node/opt/dlami/nvme").is_dir()
    assert len(lines(calls) if calls.exists() else []) == (12 if enabled else 0)
    assert "Docker and containerd data on /opt/sagemaker/docker" in result.output


def test_accounting_is_waited_for_never_configured(dry_run: DryRunner) -> None:
    result = dry_run("controller")
    assert "slurmdbd is active (configured by HyperPod)" in result.output
    assert "slurmdbd.conf" not in result.output
    for script in dry.SCRIPTS.rglob("*.sh"):
        assert "slurmdbd.conf" not in script.read_text().replace(
            "never write slurm.conf or slurmdbd.conf", ""
        ), script


# -- switches -----------------------------------------------------------------------------------

# (setting, value, node, step): the setting turns the step off on that node
SWITCHES = [
    ("node_setup.users_file", None, "controller", "users and groups"),
    ("node_setup.users_file", None, "controller", "ssh keys between nodes"),
    ("node_setup.ssh_keys_between_nodes", False, "controller", "ssh keys between nodes"),
    ("node_setup.container_runtime_on_nvme", False, "compute", "container runtime on NVMe"),
    ("node_setup.nvidia_container_toolkit", False, "compute", "NVIDIA container toolkit"),
    ("node_setup.enroot_pyxis", False, "compute", "enroot and pyxis"),
    ("node_setup.log_rotation", False, "compute", "log rotation"),
    ("node_setup.log_rotation", False, "eks", "log rotation"),
    ("node_setup.fsx_efa_check", "off", "compute", "verify EFA transport to FSx"),
    ("node_setup.exporters.node", False, "compute", "node exporter"),
    ("node_setup.exporters.dcgm", False, "compute", "DCGM exporter"),
    ("node_setup.exporters.efa", False, "compute", "EFA exporter"),
    ("node_setup.eks_containerd_on_ebs", False, "eks", "containerd data on EBS"),
    ("slurm_accounting_database", False, "controller", "wait for Slurm accounting"),
    ("fsx.enabled", False, "compute", "wait for FSx mount"),
    ("fsx.efa", False, "compute", "verify EFA transport to FSx"),
]


@pytest.mark.parametrize(
    ("key", "value", "node", "step"),
    SWITCHES,
    ids=[f"{k}={v}:{n}:{s}" for k, v, n, s in SWITCHES],
)
def test_each_switch_turns_its_step_off(
    dry_run: DryRunner, key: str, value: object, node: str, step: str
) -> None:
    assert step in dry_run(node).steps  # on with the bundled settings
    result = dry_run(node, {key: value})
    assert result.returncode == 0, result.output
    assert step not in result.steps
    assert step in result.skipped
    # the rest of the node's steps stay
    assert [s for s in dry_run(node).steps if s not in result.skipped] == result.steps


@pytest.mark.parametrize(
    ("key", "node", "step"),
    [
        ("node_setup.ssh_keys_between_nodes", "controller", "ssh keys between nodes"),
        ("node_setup.container_runtime_on_nvme", "compute", "container runtime on NVMe"),
        ("node_setup.exporters.dcgm", "compute", "DCGM exporter"),
        ("node_setup.eks_containerd_on_ebs", "eks", "containerd data on EBS"),
    ],
)
def test_a_switched_off_step_names_its_setting(
    dry_run: DryRunner, key: str, node: str, step: str
) -> None:
    assert dry_run(node, {key: False}).skipped[step] == f"{key} is off"


def test_local_homes_are_made_on_every_node(dry_run: DryRunner) -> None:
    local = {"homes.shared": False, "homes.path": "/home", "homes.mount_path": None}
    result = dry_run("compute", local)
    assert (
        "useradd --uid 2001 --gid 2001 --home-dir /home/alice --no-create-home --shell /bin/bash alice"
        in (result.commands)
    )
    assert "chown -hR 2001:2001 /home/alice" in result.commands
    assert result.skipped["ssh keys between nodes"] == "home directories are not on shared storage"


def test_shared_homes_are_made_by_the_controller_only(dry_run: DryRunner) -> None:
    assert "chown -hR 2001:2001 /fsx/home/alice" in dry_run("controller").commands
    assert not any(c.startswith("chown") for c in dry_run("compute").commands)


# -- idempotency --------------------------------------------------------------------------------


def lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("node", ["controller", "login", "compute", "eks"])
def test_a_second_run_succeeds_and_changes_nothing(dry_run: DryRunner, node: str) -> None:
    first, second = dry_run(node), dry_run(node, again=True)
    assert first.returncode == 0, first.output
    assert first.commands
    assert second.returncode == 0, second.output
    assert second.steps == first.steps
    assert second.commands == []  # nothing left to change
    root = dry_run.root(node) / "node"  # type: ignore[attr-defined]
    for name in ("etc/fstab", "etc/passwd", "etc/group", "proc/self/mounts"):
        content = lines(root / name)
        assert len(content) == len(set(content)), name


def test_a_second_run_adds_no_user_key_or_group_member_twice(dry_run: DryRunner) -> None:
    assert dry_run("controller", again=True).returncode == 0
    root = dry_run.root("controller") / "node"  # type: ignore[attr-defined]
    assert [line.split(":")[0] for line in lines(root / "etc/passwd")].count("alice") == 1
    keys = [k for k in lines(root / "fsx/home/alice/.ssh/authorized_keys") if k[0] != "#"]
    assert len(keys) == 2  # the key from the users file and the cluster key
    assert len(set(keys)) == 2
    docker = next(line for line in lines(root / "etc/group") if line.startswith("docker:"))
    assert docker == "docker:x:999:ubuntu,alice,bob"


def test_eks_bind_mounts_are_in_fstab_once(dry_run: DryRunner) -> None:
    assert dry_run("eks", again=True).returncode == 0
    root = dry_run.root("eks") / "node"  # type: ignore[attr-defined]
    fstab = lines(root / "etc/fstab")
    options = "none bind,nofail,x-systemd.requires-mounts-for=/opt/sagemaker 0 0"
    assert fstab.count(f"/opt/sagemaker/containerd /var/lib/containerd {options}") == 1
    assert fstab.count(f"/opt/sagemaker/kubelet /var/lib/kubelet {options}") == 1
    assert "containerd and kubelet data are on /opt/sagemaker already" in (
        dry_run("eks", again=True).output
    )
    # the preloaded images went along
    assert (root / "opt/sagemaker/containerd/io.containerd.content.v1.content/pause").is_file()


ADOPTED = {
    "fsx.dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    "fsx.mount_name": "abcdefgh",
}
LUSTRE_FSTAB = (
    "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com@tcp:/abcdefgh /fsx lustre "
    "defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target"
)


def unmount_fsx(base: Path) -> None:
    mounts = base / "node/proc/self/mounts"
    mounts.write_text("".join(f"{m}\n" for m in lines(mounts) if " /fsx " not in m))


def test_scripts_mount_fsx_with_retries_when_they_own_the_mount(fake_node) -> None:
    base = fake_node("login", {**ADOPTED, "fsx.mounted_by": "script"})
    unmount_fsx(base)
    for _ in range(2):
        result = dry.run("login", base)
        assert result.returncode == 0, result.output
        assert "mount FSx" in result.steps
    assert lines(base / "node/etc/fstab").count(f"{LUSTRE_FSTAB} 0 0") == 1


def test_an_efa_node_mounts_fsx_after_the_efa_lustre_client_is_set_up(fake_node) -> None:
    base = fake_node("compute", {**ADOPTED, "fsx.mounted_by": "script"})
    unmount_fsx(base)
    assert dry.run("compute", base).returncode == 0
    after = "x-systemd.after=configure-efa-fsx-lustre-client.service"
    assert f"{LUSTRE_FSTAB},{after} 0 0" in lines(base / "node/etc/fstab")


def test_an_adopted_file_system_is_mounted_when_hyperpod_did_not(fake_node) -> None:
    base = fake_node("login", {**ADOPTED, "node_setup.fsx_mount_timeout_seconds": 30})
    unmount_fsx(base)
    result = dry.run("login", base)
    assert result.returncode == 0, result.output
    assert (
        "HyperPod has not mounted /fsx after 30s; mounting the adopted file system" in result.output
    )
    assert "mount /fsx" in result.commands


# -- failures -----------------------------------------------------------------------------------


def test_a_failing_command_names_the_step_and_the_command(dry_run: DryRunner, fake_node) -> None:
    base = fake_node("controller")
    result = dry.run("controller", base, fail="useradd")
    assert result.returncode != 0
    assert (
        "[lifecycle] FAILED in step 'users and groups': command failed (exit 1): useradd --uid 2001 "
        "--gid 2001 --home-dir /fsx/home/alice --no-create-home --shell /bin/bash alice"
    ) in result.output
    assert result.steps[-1] == "users and groups"  # nothing after it ran
    # the node's log file has the same lines
    log = (base / "node/var/log/provision/hyperpod-lifecycle.log").read_text()
    assert "FAILED in step 'users and groups'" in log


def test_a_missing_fsx_mount_fails_the_node(fake_node) -> None:
    base = fake_node("compute", {"node_setup.fsx_mount_timeout_seconds": 30})
    unmount_fsx(base)
    result = dry.run("compute", base)
    assert result.returncode != 0
    assert "FAILED in step 'wait for FSx mount': /fsx is not mounted after 30s" in result.output


def test_a_failing_shell_command_is_reported_by_the_error_trap(fake_node) -> None:
    base = fake_node("controller")
    # a file where alice's home goes: mkdir fails outside the run wrapper
    (base / "node/fsx/home").mkdir(parents=True, exist_ok=True)
    (base / "node/fsx/home/alice").write_text("")
    result = dry.run("controller", base)
    assert result.returncode != 0
    assert (
        "[lifecycle] FAILED in step 'users and groups' (exit 1): mkdir -p \"$R$home\""
    ) in result.output


def test_a_node_missing_from_the_resource_config_fails(fake_node) -> None:
    base = fake_node("compute")
    config = base / "node/opt/ml/config/resource_config.json"
    data = json.loads(config.read_text())
    data["InstanceGroups"] = [g for g in data["InstanceGroups"] if g["Name"] != "gpu"]
    config.write_text(json.dumps(data))
    result = dry.run("compute", base)
    assert result.returncode != 0
    assert "FAILED in step 'identify node'" in result.output
    assert "is not in" in result.output


@pytest.mark.parametrize(("mode", "fails"), [("warn", False), ("fail", True)])
def test_fsx_over_tcp_instead_of_efa_warns_or_fails(fake_node, mode: str, fails: bool) -> None:
    base = fake_node("compute", {"node_setup.fsx_efa_check": mode})
    (base / "node/run/fake-lnet").unlink()
    result = dry.run("compute", base)
    assert (result.returncode != 0) == fails, result.output
    message = "Lustre networking has no efa network: FSx traffic goes over TCP"
    if fails:
        assert f"FAILED in step 'verify EFA transport to FSx': {message}" in result.output
    else:
        assert f"WARNING: {message}" in result.output


def test_missing_pyxis_fails_with_the_switch_to_turn_it_off(fake_node) -> None:
    base = fake_node("compute")
    (base / "node/opt/slurm/lib/slurm/spank_pyxis.so").unlink()
    result = dry.run("compute", base)
    assert result.returncode != 0
    assert (
        "FAILED in step 'enroot and pyxis': pyxis (spank_pyxis.so) is not installed"
        in result.output
    )
    assert "cluster.node_setup.enroot_pyxis: false" in result.output


def test_an_unregistered_pyxis_is_registered_once_by_the_controller(fake_node) -> None:
    base = fake_node("controller")
    plugstack = base / "node/opt/slurm/etc/plugstack.conf"
    plugstack.write_text("")
    first = dry.run("controller", base)
    assert first.returncode == 0, first.output
    assert dry.run("controller", base).returncode == 0
    assert lines(plugstack) == ["required /opt/slurm/lib/slurm/spank_pyxis.so"]
    # configless nodes get the new file from the controller
    assert "scontrol reconfigure" in first.commands


def test_a_configless_node_reads_the_controllers_plugstack_and_edits_nothing(fake_node) -> None:
    """HyperPod's compute and login nodes run configless: their own plugstack.conf is unused."""
    base = fake_node("compute")
    local = base / "node/opt/slurm/etc/plugstack.conf"
    local.write_text("")
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert "pyxis is registered with Slurm (/var/spool/slurmd/conf-cache/plugstack.conf)" in (
        result.output
    )
    assert lines(local) == []
    (base / "node/var/spool/slurmd/conf-cache/plugstack.conf").write_text("")
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert "WARNING: pyxis is not in /var/spool/slurmd/conf-cache/plugstack.conf yet" in (
        result.output
    )
    assert lines(local) == []
    assert not [c for c in result.commands if c.startswith(("systemctl restart slurm", "scontrol"))]


def test_enroot_paths_on_local_storage_pass_and_on_lustre_fail(fake_node) -> None:
    base = fake_node("compute")
    result = dry.run("compute", base)
    assert "enroot ENROOT_DATA_PATH /opt/dlami/nvme/enroot/data is on /opt/dlami/nvme" in (
        result.output
    )
    conf = base / "node/etc/enroot/enroot.conf"
    conf.write_text("ENROOT_DATA_PATH /fsx/enroot/$(id -u)\nENROOT_CACHE_PATH /var/cache/enroot\n")
    result = dry.run("compute", base)
    assert result.returncode == 1
    assert "WARNING: enroot ENROOT_CACHE_PATH /var/cache/enroot is on the root volume" in (
        result.output
    )
    assert (
        "FAILED in step 'enroot and pyxis': enroot ENROOT_DATA_PATH /fsx/enroot is on the shared "
        "file system (/fsx)"
    ) in result.output


def test_dry_run_cli_prints_the_step_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert dry.main(["controller", "--quiet"]) == 0  # config/default.yaml
    out = capsys.readouterr().out
    assert out.startswith(
        "Dry run of config/default.yaml, group controller (10.1.0.10)\n"
        "Steps on the fake controller node:\n  1. read settings\n  2. identify node\n"
    )
    assert "Result: ok" in out


def test_a_config_gives_the_node_what_its_synth_uploads(tmp_path: Path) -> None:
    """Settings, users file, scripts and the cluster's groups all come from the config."""
    from hyperpod_cdk.config import load_environment
    from hyperpod_cdk.config.node_setup import lifecycle_extra_files
    from hyperpod_cdk.lifecycle.settings import node_settings

    project = tmp_path / "project"
    project.mkdir()
    (project / "lifecycle_assets").symlink_to(dry.SCRIPTS)
    (project / "users.yaml").write_text(
        "users:\n  - name: carol\n    uid: 2101\n  - name: dave\n    uid: 2102\n"
    )
    config = project / "env.yaml"
    data = yaml.safe_load((dry.PROJECT_ROOT / "config/examples/full.yaml").read_text())
    data["cluster"].setdefault("node_setup", {})["users_file"] = "users.yaml"
    config.write_text(yaml.safe_dump(data))
    cluster = dry.from_config("compute", config, "cpu", project_root=project)
    loaded = load_environment(config, project)
    assert cluster.settings == node_settings(loaded)
    assert cluster.settings["node_setup"]["users_file"] == "users.json"
    assert cluster.group == "cpu"
    assert [g["Name"] for g in cluster.resource_config["InstanceGroups"]] == [
        g.name for g in loaded.cluster.instance_groups
    ]

    base = dry.prepare("compute", tmp_path / "node", cluster=cluster)
    assert json.loads((base / "scripts/settings.json").read_text()) == cluster.settings
    expected_users = lifecycle_extra_files(loaded, project)["users.json"]
    assert (base / "scripts/users.json").read_text() == expected_users
    result = dry.run("compute", base, address=cluster.address)
    assert result.returncode == 0, result.output
    assert "users and groups" in result.steps
    assert any("carol" in command for command in result.commands)
    assert not any("alice" in command for command in result.commands)  # the test cluster's users


def test_the_cli_says_which_config_it_ran(capsys: pytest.CaptureFixture[str]) -> None:
    assert dry.main(["eks", "--config", "config/examples/eks-minimal.yaml", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Dry run of config/examples/eks-minimal.yaml, group ")


def test_an_invalid_config_is_config_errors_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    assert dry.main(["compute", "--config", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() and all(line.startswith("config error: ") for line in err.splitlines())


def test_a_flexible_group_on_gpu_hardware_gets_the_gpu_steps(tmp_path: Path) -> None:
    """A group with instance_types: the hardware, not the type's name, decides the GPU steps."""
    cluster = dry.from_config("compute", dry.PROJECT_ROOT / "config/examples/full.yaml", "flex")
    for group in cluster.resource_config["InstanceGroups"]:
        if group["Name"] == "flex":
            group["InstanceType"] = "ml.flexible"  # a name that says nothing about GPUs
    base = dry.prepare("compute", tmp_path / "node", cluster=cluster)
    result = dry.run("compute", base, address=cluster.address)
    assert result.returncode == 0, result.output
    assert "GPU true (NVIDIA PCI device 0000:53:00.0)" in result.output
    assert "NVIDIA container toolkit" in result.steps


def test_a_failed_write_fails_the_step_instead_of_reading_as_unchanged(fake_node) -> None:
    base = fake_node("login")
    (base / "node/etc/systemd/system").mkdir(parents=True, exist_ok=True)
    (base / "node/etc/systemd/system/docker.service.d").write_text("")  # a file: mkdir fails
    result = dry.run("login", base)
    assert result.returncode == 1
    assert (
        "[lifecycle] FAILED in step 'container runtime on NVMe': cannot write "
        f"{base}/node/etc/systemd/system/docker.service.d/hyperpod-data.conf" in result.output
    )


def test_the_log_is_also_where_aws_runbooks_look(dry_run: DryRunner) -> None:
    dry_run("controller")
    root = dry_run.root("controller") / "node/var/log/provision"
    ours = (root / "hyperpod-lifecycle.log").read_text()
    assert "[lifecycle] node setup complete" in ours
    assert (root / "provisioning.log").read_text() == ours


def test_a_failed_run_waits_for_its_log_to_be_shipped(fake_node) -> None:
    base = fake_node("login")
    calls = _count_sleeps(base)
    env = {**dry.environment("login", base, fail="useradd"), "HYPERPOD_FLUSH_SECONDS": "7"}
    (base / "scripts/users.json").write_text(json.dumps({"users": [{"name": "x", "uid": 2001}]}))
    settings = json.loads((base / "scripts/settings.json").read_text())
    settings["node_setup"]["users_file"] = "users.json"
    (base / "scripts/settings.json").write_text(json.dumps(settings))
    done = subprocess.run(
        ["bash", str(base / "scripts/entrypoint.sh")], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    assert calls.read_text().splitlines()[-1] == "7"
    env["HYPERPOD_FAKE_FAIL"] = ""
    calls.unlink()
    done = subprocess.run(
        ["bash", str(base / "scripts/entrypoint.sh")], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert "7" not in (calls.read_text().splitlines() if calls.exists() else [])


def test_packages_are_installed_from_refreshed_lists(fake_node) -> None:
    """An AMI's package lists are as old as the AMI: install after update, once per run (two
    installs: SSSD for directory users, Docker; the exporters install no package)."""
    secrets = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-"
    directory = {
        "uri": "ldaps://dc1.example.com", "search_base": "dc=example,dc=com",
        "bind_dn": "cn=bind,dc=example,dc=com", "ldap_schema": "ad",
        "bind_password_secret_arn": f"{secrets}bind-AbCdEf",
        "ca_certificate_secret_arn": f"{secrets}ca-AbCdEf",
        "allowed_groups": {"controller": [], "login": [], "compute": ["hpc"]}, "sudo_groups": [],
    }  # fmt: skip
    base = fake_node("compute", {"node_setup.directory": directory})
    (base / "node/usr/bin/docker").unlink()
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    apt = [c for c in result.commands if c.startswith("apt-get")]
    assert apt == [
        "apt-get -y -o DPkg::Lock::Timeout=120 update",
        "apt-get -y -o DPkg::Lock::Timeout=120 install sssd-ldap libnss-sss libpam-sss sssd-tools",
        "apt-get -y -o DPkg::Lock::Timeout=120 install docker.io",
    ]


def test_slurm_logs_are_capped_by_size_too(dry_run: DryRunner) -> None:
    result = dry_run("controller")
    root = dry_run.root("controller") / "node/etc"
    assert "    maxsize 1G" in (root / "logrotate.d/hyperpod-slurm").read_text().splitlines()
    timer = (root / "systemd/system/logrotate.timer.d/hyperpod-hourly.conf").read_text()
    assert timer.splitlines()[-2:] == ["OnCalendar=", "OnCalendar=hourly"]
    assert "systemctl restart logrotate.timer" in result.commands


def test_declared_groups_come_first_with_their_gids(dry_run: DryRunner) -> None:
    """With alice 2001 in research and bob 2002, an undeclared research took 2002 (shadow-utils
    gives the next GID above the highest) and bob's own group then failed on every node."""
    result = dry_run("controller")
    assert result.returncode == 0, result.output
    group = lines(dry_run.root("controller") / "node/etc/group")
    assert "research:x:3001:alice,bob" in group
    assert [line for line in group if line.startswith(("alice:", "bob:"))] == [
        "alice:x:2001:",
        "bob:x:2002:",
    ]
    adds = [c for c in result.commands if c.startswith("groupadd")]
    assert adds[0] == "groupadd --gid 3001 research"


def test_the_fake_groupadd_allocates_as_shadow_utils_does(fake_node) -> None:
    """What today's users file would have done without GIDs: the clash the scripts now avoid."""
    base = fake_node("controller")
    env = dry.environment("controller", base)
    groupadd = dry.FAKE_NODE / "bin/groupadd"
    (base / "node/etc/group").write_text(
        "root:x:0:\ndocker:x:999:\nubuntu:x:1000:\nalice:x:2001:\n"
    )
    subprocess.run([str(groupadd), "research"], env=env, check=True)
    assert lines(base / "node/etc/group")[-1] == "research:x:2002:"
    clash = subprocess.run([str(groupadd), "--gid", "2002", "bob"], env=env, capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert (clash.returncode, clash.stderr.strip()) == (4, "groupadd: GID '2002' already exists")
    subprocess.run([str(groupadd), "--system", "render"], env=env, check=True)
    assert lines(base / "node/etc/group")[-1] == "render:x:998:"


def test_a_node_whose_group_has_another_gid_fails_naming_both(fake_node) -> None:
    base = fake_node("compute")
    group_file = base / "node/etc/group"
    group_file.write_text(group_file.read_text() + "research:x:1500:\n")
    result = dry.run("compute", base)
    assert result.returncode == 1
    assert (
        "FAILED in step 'users and groups': group research exists with GID 1500, the users file "
        "says 3001"
    ) in result.output


def test_a_node_where_the_gid_is_taken_fails_naming_the_owner(fake_node) -> None:
    base = fake_node("compute")
    group_file = base / "node/etc/group"
    group_file.write_text(group_file.read_text() + "lxd:x:3001:\n")
    result = dry.run("compute", base)
    assert result.returncode == 1
    assert "GID 3001 of group research is taken by group lxd on this node" in result.output


def test_an_ami_group_a_node_lacks_is_made_as_a_system_group(fake_node) -> None:
    base = fake_node("controller")
    group_file = base / "node/etc/group"
    group_file.write_text(
        "".join(f"{g}\n" for g in lines(group_file) if not g.startswith("docker:"))
    )
    result = dry.run("controller", base)
    assert result.returncode == 0, result.output
    assert "groupadd --system docker" in result.commands
    assert next(g for g in lines(group_file) if g.startswith("docker:")).startswith("docker:x:999:")


def test_users_are_registered_in_slurm_accounting_once(dry_run: DryRunner) -> None:
    first = dry_run("controller")
    assert "Slurm accounts and users" in first.steps
    added = [c for c in first.commands if c.startswith("sacctmgr")]
    assert added == [
        "sacctmgr -i add account research Description=research Organization=ml-research",
        "sacctmgr -i add user alice Account=research DefaultAccount=research",
        "sacctmgr -i add account bob Description=bob Organization=ml-research",
        "sacctmgr -i add user bob Account=bob DefaultAccount=bob",
    ]
    again = dry_run("controller", again=True)
    assert again.returncode == 0, again.output
    assert not [c for c in again.commands if c.startswith("sacctmgr")]
    assert "Slurm user alice is in account research" in again.output
    for node in ("login", "compute"):
        assert dry_run(node).skipped["Slurm accounts and users"] in (
            "the controller registers them",
            "no accounting database (cluster.slurm.accounting_database)",
        )


def test_a_slurmdbd_that_never_answers_fails_the_step(fake_node) -> None:
    """slurmdbd active for systemd, but sacctmgr gets no answer (its database is not up)."""
    base = fake_node("controller")
    result = dry.run("controller", base, fail="sacctmgr")
    assert result.returncode == 1
    assert (
        "FAILED in step 'Slurm accounts and users': slurmdbd does not answer sacctmgr"
    ) in result.output
    assert "waiting for slurmdbd to answer (29/30)" in result.output


# -- EFA to FSx: measured, not only configured -------------------------------------------------


def test_efa_transport_is_measured_and_checked_again_at_boot(dry_run: DryRunner) -> None:
    result = dry_run("compute")
    assert "Lustre traffic uses EFA: 2 NIs for 2 EFA devices; 64 MiB moved the efa counters" in (
        result.output
    )
    root = dry_run.root("compute") / "node"
    unit = (root / "etc/systemd/system/hyperpod-fsx-efa-check.service").read_text()
    assert "ExecStart=/usr/bin/bash /opt/hyperpod-lifecycle/fsx_efa_check.sh /fsx warn" in unit
    assert "RequiresMountsFor=/fsx" in unit.splitlines()
    assert (root / "opt/hyperpod-lifecycle/fsx_efa_check.sh").is_file()
    assert "systemctl enable hyperpod-fsx-efa-check.service" in result.commands
    assert not list((root / "fsx").glob(".hyperpod-efa-probe-*"))  # the probe file is gone


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("fake-lnet-efa-nis", "only 1 of this node's 2 EFA devices carry Lustre traffic"),
        ("fake-lnet-efa-idle", "64 MiB of direct I/O to /fsx did not move LNet's efa counters"),
    ],
)
def test_an_efa_network_that_carries_no_traffic_fails_by_default(
    fake_node, fault: str, message: str
) -> None:
    base = fake_node("compute", {"node_setup.fsx_efa_check": None})  # the default: fail
    (base / "node/run" / fault).write_text("1\n")
    result = dry.run("compute", base)
    assert result.returncode == 1
    assert f"FAILED in step 'verify EFA transport to FSx': {message}" in result.output
    assert "(node_setup.fsx_efa_check: fail)" in result.output


def test_the_boot_check_is_the_same_check(fake_node) -> None:
    base = fake_node("compute")
    assert dry.run("compute", base).returncode == 0
    installed = base / "node/opt/hyperpod-lifecycle/fsx_efa_check.sh"
    env = {
        **dry.environment("compute", base),
        "PATH": f"{dry.FAKE_NODE / 'bin'}:{dry.environment('compute', base)['PATH']}",
    }

    def boot(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(installed), "/fsx", mode], env=env, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip

    assert boot("fail").returncode == 0
    (base / "node/run/fake-lnet-efa-idle").touch()
    done = boot("fail")
    assert done.returncode == 1
    assert done.stdout.startswith("FAILED: 64 MiB of direct I/O to /fsx did not move")
    assert boot("warn").returncode == 0


def test_the_shared_homes_take_a_write_before_any_home_is_made(fake_node) -> None:
    base = fake_node("controller")
    (base / "node/fsx/home").write_text("")  # a file where the directory should be: no writes
    result = dry.run("controller", base)
    assert result.returncode == 1
    assert (
        "FAILED in step 'users and groups': cannot write to /fsx/home on the shared file system"
    ) in result.output
    assert not [c for c in result.commands if c.startswith(("useradd", "groupadd"))]


def test_homes_are_never_made_on_an_unmounted_shared_file_system(fake_node) -> None:
    base = fake_node("controller")
    mounts = base / "node/proc/self/mounts"
    mounts.write_text("".join(f"{m}\n" for m in lines(mounts) if " /fsx " not in m))
    result = dry.run(
        "controller",
        base,
    )
    assert result.returncode == 1
    assert "/fsx is not mounted" in result.output


def test_the_lustre_client_and_kernel_are_held_once(dry_run: DryRunner) -> None:
    """A kernel upgrade would come up at the next reboot without the Lustre client module."""
    first = dry_run("login")
    assert [c for c in first.commands if c.startswith("apt-mark")] == [
        "apt-mark hold linux-aws linux-image-aws linux-headers-aws "
        "lustre-client-modules-6.8.0-1024-aws lustre-client-modules-aws lustre-client-utils"
    ]
    again = dry_run("login", again=True)
    assert not [c for c in again.commands if c.startswith("apt-mark")]
    held = lines(dry_run.root("login") / "node/var/lib/fake-dpkg/held")
    assert "openssh-server" not in held and "lustre-client-utils" in held


def test_only_the_named_steps_run_for_make_sync_users(fake_node) -> None:
    base = fake_node("controller")
    env = {
        **dry.environment("controller", base),
        "HYPERPOD_ONLY_STEPS": "users,ssh_keys,slurm_users",
    }
    done = subprocess.run(["bash", str(base / "scripts/entrypoint.sh")], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)  # fmt: skip
    result = dry.DryRun.parse("controller", done.returncode, done.stdout)
    assert result.returncode == 0, result.output
    assert result.steps == [
        "read settings",
        "identify node",
        "users and groups",
        "ssh keys between nodes",
        "Slurm accounts and users",
        "done",
    ]
    env["HYPERPOD_ONLY_STEPS"] = "users,nope"
    done = subprocess.run(["bash", str(base / "scripts/entrypoint.sh")], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 1
    assert "HYPERPOD_ONLY_STEPS: unknown step nope" in done.stdout


def test_ssh_trusts_host_keys_within_the_cluster_subnets_only(dry_run: DryRunner) -> None:
    """A replaced node keeps its address and gets a new host key: no prompt, no refusal."""
    result = dry_run("compute")
    assert "SSH within the cluster" in result.steps
    conf = dry_run.root("compute") / "node/etc/ssh/ssh_config.d/hyperpod-cluster.conf"
    lines_ = conf.read_text().splitlines()
    host = next(line for line in lines_ if line.startswith("Host "))
    patterns = host.split()[1:]
    # 10.1.0.0/17: 128 /24 blocks, by address and by Slurm node name; 10.3.0.0/16: one each
    assert len(patterns) == 2 * 128 + 2
    assert {"10.1.0.*", "ip-10-1-0-*", "10.1.127.*", "10.3.*", "ip-10-3-*"} <= set(patterns)
    assert "10.1.128.*" not in patterns and "*" not in patterns
    assert "    StrictHostKeyChecking no" in lines_
    assert "    UserKnownHostsFile /dev/null" in lines_


def test_an_adopted_vpc_asks_ec2_for_its_subnets(fake_node) -> None:
    base = fake_node(
        "login",
        {"cluster_network.cidrs": [], "cluster_network.subnet_ids": ["subnet-0aaa", "subnet-0bbb"]},
    )
    (base / "node/run/fake-ec2-subnets").write_text(
        "subnet-0aaa 172.31.64.0/20\nsubnet-0bbb 172.31.96.0/24\n"
    )
    result = dry.run("login", base)
    assert result.returncode == 0, result.output
    conf = (base / "node/etc/ssh/ssh_config.d/hyperpod-cluster.conf").read_text()
    assert "172.31.64.* ip-172-31-64-*" in conf and "172.31.96.* ip-172-31-96-*" in conf
    (base / "node/run/fake-ec2-subnets").write_text("")
    (base / "node/etc/ssh/ssh_config.d/hyperpod-cluster.conf").unlink()
    result = dry.run("login", base)
    assert result.returncode == 1
    assert "cannot read the CIDRs of the cluster's subnets (subnet-0aaa subnet-0bbb) from EC2" in (
        result.output
    )


def test_homes_on_openzfs_are_made_by_the_controller_under_its_mount(fake_node) -> None:
    """storage.openzfs: HyperPod mounts it at /home; the controller makes the homes there."""
    changes = {
        "openzfs": {"enabled": True, "mount_path": "/home"},
        "homes": {"shared": True, "path": "/home", "mount_path": "/home"},
    }
    base = fake_node("controller", changes)
    mounts = base / "node/proc/self/mounts"
    mounts.write_text(
        mounts.read_text() + "fs-0abc.fsx.us-west-2.amazonaws.com:/fsx /home nfs4 rw 0 0\n"
    )
    result = dry.run("controller", base)
    assert result.returncode == 0, result.output
    assert (
        "useradd --uid 2001 --gid 2001 --home-dir /home/alice --no-create-home --shell /bin/bash alice"
        in result.commands
    )
    assert (base / "node/home/alice/.ssh/id_ed25519").exists() or any(
        c.startswith("ssh-keygen") and "/home/alice/.ssh/id_ed25519" in c for c in result.commands
    )
    mounts.write_text("".join(f"{m}\n" for m in lines(mounts) if " /home " not in m))
    (base / "node/etc/passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    result = dry.run("controller", base)
    assert result.returncode == 1
    assert "/home is not mounted" in result.output


def test_an_eks_node_runs_the_lustre_client_over_efa(fake_node) -> None:
    """Pods mount FSx through the CSI driver, but with the node's Lustre client: over EFA."""
    base = fake_node("eks", {"fsx.efa": True})
    node = base / "node"
    for device in ("rdmap16s27", "rdmap32s27"):
        (node / "sys/class/infiniband" / device).mkdir(parents=True)
    (node / "run/fake-systemd/units").mkdir(parents=True)
    (node / "run/fake-systemd/units" / EFA_UNIT).touch()
    (node / "run/fake-lnet").write_text("net:\n    - net type: tcp\n    - net type: efa\n")
    result = dry.run("eks", base)
    assert result.returncode == 0, result.output
    assert f"systemctl enable --now {EFA_UNIT}" in result.commands
    assert "the Lustre client runs over EFA: 2 NIs for 2 EFA devices" in result.output
    (node / "run/fake-lnet-efa-nis").write_text("1\n")
    result = dry.run("eks", base)
    assert result.returncode == 1
    assert "only 1 of this node's 2 EFA devices carry Lustre traffic" in result.output
    (node / "run/fake-systemd/units" / EFA_UNIT).unlink()
    result = dry.run("eks", base)
    assert result.returncode == 1
    assert f"the image has no {EFA_UNIT}" in result.output


def test_an_eks_node_without_efa_skips_the_lustre_client_step(dry_run: DryRunner) -> None:
    assert (
        dry_run("eks").skipped["EFA for the Lustre client"] == "the file system is not EFA-enabled"
    )

"""The node and DCGM exporters on the fake node (lifecycle_assets/steps/observability.sh).

Issue 20, closed network: the node exporter came from the Ubuntu archive (apt-get, which a closed
network cannot reach) and the DCGM exporter's unit pulled nvcr.io at start, restarting forever
while the step reported success. Now the step logs in to the image's registry (HyperPod's
regional Amazon ECR images by default), pulls with retries and fails the node with one readable
line; the units run the pulled image only (``--pull never``) and give up after bounded restarts.

The fake node's ``docker`` (fake_node/bin/docker) wants a login for Amazon ECR, reaches no other
registry while ``run/fake-closed-network`` exists, and fails pulls on demand; its ``aws`` gives
the ECR login token (or fails as without the endpoint, or without the permission).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from lifecycle_testkit import LIFECYCLE_ASSETS, PROJECT_ROOT, DryRunner, dry

REGISTRY = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
NODE_IMAGE = f"{REGISTRY}/hyperpod/node_exporter:v1.9.1"
DCGM_IMAGE = f"{REGISTRY}/hyperpod/dcgm_exporter:4.1.1-4.0.4-ubi9"
# the DCGM image settings.json named before: NVIDIA's registry on the internet
OLD_DCGM = {
    "node_setup.exporters.dcgm_image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
    "node_setup.exporters.dcgm_registry": "nvcr.io",
    "node_setup.exporters.dcgm_ecr_region": None,
}
JOB_MAPPING = "/run/slurm/dcgm-job-mapping"
LOGIN = f"docker login --username AWS --password-stdin {REGISTRY}"
UNITS = "node/etc/systemd/system"


def step_commands(result: dry.DryRun, step: str) -> list[str]:
    """The commands the dry run printed inside ``step`` (up to the next step line)."""
    inside, found = False, []
    for line in result.output.splitlines():
        if line.startswith("[lifecycle] step: "):
            inside = line == f"[lifecycle] step: {step}"
        elif inside and line.startswith("[dry-run] "):
            found.append(line.removeprefix("[dry-run] "))
    return found


def failure(result: dry.DryRun) -> str:
    (line,) = [x for x in result.output.splitlines() if x.startswith("[lifecycle] FAILED")]
    return line


def fake_docker(base: Path) -> Path:
    state = base / "node/run/fake-docker"
    state.mkdir(parents=True, exist_ok=True)
    return state


def unit_sections(text: str) -> dict[str, list[str]]:
    """A unit file's lines by section (comments and blank lines left out)."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections[current] = []
        elif line.strip() and not line.startswith("#"):
            sections[current].append(line)
    return sections


# -- the pull happens in the step ---------------------------------------------------------------


def test_the_step_logs_in_and_pulls_hyperpods_regional_images(dry_run: DryRunner) -> None:
    result = dry_run("compute")
    assert result.returncode == 0, result.output
    assert step_commands(result, "node exporter")[:2] == [
        LOGIN,
        f"docker pull --quiet {NODE_IMAGE}",
    ]
    assert step_commands(result, "DCGM exporter")[:2] == [
        LOGIN,
        f"docker pull --quiet {DCGM_IMAGE}",
    ]
    login = f"aws ecr get-login-password --region us-west-2 | {LOGIN}"
    assert f"[lifecycle] logging in to {REGISTRY}: {login}" in result.output
    state = dry_run.root("compute") / "node/run/fake-docker"  # type: ignore[attr-defined]
    assert (state / "logins").read_text().splitlines() == [REGISTRY]
    assert (state / "images").read_text().splitlines() == [NODE_IMAGE, DCGM_IMAGE]
    # the registry token goes to docker on stdin, never on a command line or in the log
    assert "fake-ecr-token" not in result.output and "eyJ" not in result.output


def test_the_controller_starts_docker_before_it_pulls(dry_run: DryRunner) -> None:
    """The controller runs no container step; its exporter needs the daemon all the same."""
    result = dry_run("controller")
    assert result.returncode == 0, result.output
    commands = step_commands(result, "node exporter")
    assert commands[:3] == [
        "systemctl enable --now docker",
        LOGIN,
        f"docker pull --quiet {NODE_IMAGE}",
    ]


def test_a_second_run_uses_the_image_on_the_node(dry_run: DryRunner) -> None:
    again = dry_run("compute", again=True)
    assert again.returncode == 0, again.output
    assert f"[lifecycle] {NODE_IMAGE} is on the node already" in again.output
    assert not [c for c in again.commands if c.startswith("docker")]


def test_a_pull_that_fails_four_times_is_retried_with_growing_waits(fake_node) -> None:
    base = fake_node("compute", {"node_setup.exporters.dcgm": False})
    (fake_docker(base) / "pull-failures").write_text("4")
    calls = base / "sleep-calls"
    sleep = base / "bin/sleep"
    sleep.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    sleep.chmod(0o755)
    env = {**dry.environment("compute", base), "HYPERPOD_POLL_SECONDS": "3"}
    done = subprocess.run(
        ["bash", str(base / "scripts/entrypoint.sh")], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    result = dry.DryRun.parse("compute", done.returncode, done.stdout)
    pulls = [c for c in step_commands(result, "node exporter") if c.startswith("docker pull")]
    assert len(pulls) == 5
    assert "cannot pull " + NODE_IMAGE + " yet (4/5): Error response from daemon" in done.stdout
    # backoff: POLL_SECONDS x the attempt, between the attempts only
    waits = calls.read_text().splitlines()
    assert waits[-4:] == ["3", "6", "9", "12"]


def test_a_pull_that_keeps_failing_fails_the_node_with_one_readable_line(fake_node) -> None:
    base = fake_node("compute")
    (fake_docker(base) / "pull-failures").write_text("99")
    result = dry.run("compute", base)
    assert result.returncode == 1
    assert result.steps[-1] == "node exporter"
    pulls = [c for c in step_commands(result, "node exporter") if c.startswith("docker pull")]
    assert pulls == [f"docker pull --quiet {NODE_IMAGE}"] * 5
    line = failure(result)
    assert line.startswith(
        f"[lifecycle] FAILED in step 'node exporter': cannot pull the node exporter image "
        f"{NODE_IMAGE} from {REGISTRY} after 5 attempts (Error response from daemon: "
    )
    assert line.endswith(
        "likely cause: the node cannot reach Amazon ECR (endpoint): a closed network needs the "
        "ecr.api and ecr.dkr interface endpoints and the S3 gateway endpoint (the image layers), "
        "an open one a route to the internet"
    )
    # no unit runs an image the node does not have
    assert not (base / UNITS / "hyperpod-node-exporter.service").exists()


@pytest.mark.parametrize(
    ("marker", "content", "cause"),
    [
        ("run/fake-ecr-outage", "99", "the node cannot reach Amazon ECR (endpoint)"),
        ("run/fake-ecr-denied", "", "likely cause: a missing permission: the execution role needs "
         "ecr:GetAuthorizationToken, and ecr:BatchGetImage and ecr:GetDownloadUrlForLayer on the "
         "repository"),
        ("run/fake-docker/missing", NODE_IMAGE, "likely cause: the image is not in that registry: "
         "set cluster.node_setup.exporters.node_image to a copy in an Amazon ECR repository of "
         "your account (make preflight checks that it exists)"),
    ],
    ids=["no endpoint", "no permission", "no such image"],
)  # fmt: skip
def test_the_failure_names_the_likely_cause(
    fake_node, marker: str, content: str, cause: str
) -> None:
    base = fake_node("compute")
    fake_docker(base)
    (base / "node" / marker).write_text(content)
    result = dry.run("compute", base)
    assert result.returncode == 1
    line = failure(result)
    assert f"cannot pull the node exporter image {NODE_IMAGE} from {REGISTRY} after 5" in line
    assert cause in line


def test_a_missing_docker_fails_with_a_clear_line(fake_node) -> None:
    base = fake_node("controller")  # no container step there to install it
    (base / "node/usr/bin/docker").unlink()
    result = dry.run("controller", base)
    assert result.returncode == 1
    assert failure(result) == (
        "[lifecycle] FAILED in step 'node exporter': the node exporter runs in Docker, which is "
        "not on this node (/usr/bin/docker): HyperPod's AMIs have it, and the container runtime "
        "step installs it on login and compute nodes; give the group an image with Docker "
        "(cluster.instance_groups[].image_id; a closed network cannot install it), or switch "
        "cluster.node_setup.exporters.node off"
    )


def test_another_registry_needs_no_login(fake_node) -> None:
    base = fake_node("compute", {"node_setup.exporters.node": False, **OLD_DCGM})
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert step_commands(result, "DCGM exporter")[0] == (
        "docker pull --quiet nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
    )
    assert not [c for c in result.commands if c.startswith("docker login")]


# -- a closed network -----------------------------------------------------------------------------


def test_in_a_closed_network_the_old_default_fails_the_node_and_the_new_one_passes(
    tmp_path: Path,
) -> None:
    old = dry.prepare("compute", tmp_path / "old", changes=OLD_DCGM)
    (old / "node/run/fake-closed-network").write_text("")
    result = dry.run("compute", old)
    assert result.returncode == 1
    line = failure(result)
    assert line.startswith(
        "[lifecycle] FAILED in step 'DCGM exporter': cannot pull the DCGM exporter image "
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04 from nvcr.io after 5 attempts"
    )
    assert line.endswith(
        "likely cause: the node cannot reach nvcr.io (endpoint): a closed network reaches only "
        "Amazon ECR of its region (copy the image there and set "
        "cluster.node_setup.exporters.dcgm_image to the copy), an open one needs a route to the "
        "internet"
    )
    new = dry.prepare("compute", tmp_path / "new")
    (new / "node/run/fake-closed-network").write_text("")
    result = dry.run("compute", new)
    assert result.returncode == 0, result.output
    assert {"node exporter", "DCGM exporter"} <= set(result.steps)


def test_a_closed_network_node_from_a_config_pulls_from_its_regions_registry(
    tmp_path: Path,
) -> None:
    config = tmp_path / "closed.yaml"
    data = yaml.safe_load((PROJECT_ROOT / "config/default.yaml").read_text())
    data["region"] = "eu-south-1"
    data["network"]["availability_zone_id"] = "eus1-az1"
    data["network"]["closed_network"] = True
    data["cluster"]["node_setup"] = {
        **data["cluster"].get("node_setup", {}),
        "exporters": {"node": True, "dcgm": True},
    }
    config.write_text(yaml.safe_dump(data))
    cluster = dry.from_config("compute", config, project_root=PROJECT_ROOT)
    exporters = cluster.settings["node_setup"]["exporters"]
    registry = "590381155156.dkr.ecr.eu-south-1.amazonaws.com"
    assert exporters["node_image"] == f"{registry}/hyperpod/node_exporter:v1.9.1"
    assert exporters["dcgm_registry"] == registry
    assert exporters["dcgm_ecr_region"] == "eu-south-1"
    base = dry.prepare("compute", tmp_path / "node", cluster=cluster)
    (base / "node/run/fake-closed-network").write_text("")
    result = dry.run("compute", base, address=cluster.address)
    assert result.returncode == 0, result.output
    assert f"docker login --username AWS --password-stdin {registry}" in result.commands


# -- the units -----------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["hyperpod-node-exporter", "hyperpod-dcgm-exporter"])
def test_units_run_the_pulled_image_and_restart_a_bounded_number_of_times(
    dry_run: DryRunner, unit: str
) -> None:
    dry_run("compute")
    text = (dry_run.root("compute") / UNITS / f"{unit}.service").read_text()  # type: ignore[attr-defined]
    sections = unit_sections(text)
    assert {"StartLimitIntervalSec=600", "StartLimitBurst=5"} <= set(sections["Unit"])
    assert {"Restart=on-failure", "RestartSec=10"} <= set(sections["Service"])
    assert not [line for line in sections["Service"] if line == "Restart=always"]
    (start,) = [line for line in sections["Service"] if line.startswith("ExecStart=")]
    assert start.startswith(f"ExecStart=/usr/bin/docker run --rm --pull never --name {unit} ")


def test_the_node_exporter_sees_the_host(dry_run: DryRunner) -> None:
    dry_run("compute")
    text = (dry_run.root("compute") / UNITS / "hyperpod-node-exporter.service").read_text()  # type: ignore[attr-defined]
    assert (
        "ExecStart=/usr/bin/docker run --rm --pull never --name hyperpod-node-exporter --net host "
        f"--pid host -v /:/host:ro,rslave {NODE_IMAGE} --path.rootfs=/host "
        "--web.listen-address=:9100"
    ) in text.splitlines()
    assert "systemctl enable hyperpod-node-exporter" in dry_run("compute").commands


@pytest.mark.parametrize("mapping", [False, True])
def test_the_dcgm_exporter_maps_slurm_jobs_where_hyperpod_writes_them(
    fake_node, mapping: bool
) -> None:
    base = fake_node("compute")
    if mapping:
        (base / "node" / JOB_MAPPING.lstrip("/")).mkdir(parents=True)
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    text = (base / UNITS / "hyperpod-dcgm-exporter.service").read_text()
    (start,) = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    head = (
        "ExecStart=/usr/bin/docker run --rm --pull never --name hyperpod-dcgm-exporter --gpus all "
        "--cap-add SYS_ADMIN -p 9400:9400"
    )
    if mapping:
        assert start == (
            f"{head} -v {JOB_MAPPING}:{JOB_MAPPING}:ro {DCGM_IMAGE} --hpc-job-mapping-dir {JOB_MAPPING}"
        )
    else:
        assert start == f"{head} {DCGM_IMAGE}"
        assert "hpc-job-mapping" not in text


def test_the_ubuntu_package_of_earlier_scripts_is_switched_off(fake_node) -> None:
    """Its service would hold the node exporter's port."""
    base = fake_node("compute")
    (base / "node/run/fake-systemd/enabled/prometheus-node-exporter").touch()
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert "systemctl disable --now prometheus-node-exporter" in step_commands(
        result, "node exporter"
    )


# -- nothing from the distribution -------------------------------------------------------------


def test_no_apt_get_anywhere_in_the_exporters(dry_run: DryRunner) -> None:
    result = dry_run("compute")
    for step in ("node exporter", "DCGM exporter", "EFA exporter"):
        assert step in result.steps
        assert not [c for c in step_commands(result, step) if c.startswith("apt")], step
    script = (LIFECYCLE_ASSETS / "steps/observability.sh").read_text()
    assert not re.search(r"\bapt(-get|_install)?\b", script)


def test_settings_name_the_registry_and_login_region_not_the_node(dry_run: DryRunner) -> None:
    """The node holds no region logic: settings.json names what to pull and where to log in."""
    dry_run("compute")
    settings = json.loads(
        (dry_run.root("compute") / "scripts/settings.json").read_text()  # type: ignore[attr-defined]
    )
    exporters = settings["node_setup"]["exporters"]
    assert exporters["node_registry"] == exporters["dcgm_registry"] == REGISTRY
    assert exporters["node_ecr_region"] == exporters["dcgm_ecr_region"] == "us-west-2"

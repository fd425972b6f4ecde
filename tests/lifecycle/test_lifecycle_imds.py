"""Issue 34, M4: on Slurm nodes the users' UIDs cannot reach the instance metadata service.

Security review M4: any user (or a pyxis container, which shares the host network) could take
the node role's credentials from IMDS and read the accounting and directory secrets. The step
``imds`` (lifecycle_assets/steps/imds.sh) installs an iptables owner match, as AWS
ParallelCluster's ``Imds: Secured`` does (aws/aws-parallelcluster-cookbook
cookbooks/aws-parallelcluster-environment/resources/imds: an OUTPUT rule on 169.254.169.254 per
allowed user, REJECT for the others), here by UID range so that root and every system account
keep it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lifecycle_testkit import DryRunner, dry

STEP = "IMDS only for root and system accounts"
SCRIPT = "opt/hyperpod-lifecycle/imds-restrict.sh"
FAKE_TOOLS = Path(__file__).resolve().parent / "fake_tools"


def test_every_slurm_node_restricts_imds_at_every_boot(dry_run: DryRunner) -> None:
    for node in ("controller", "login", "compute"):
        result = dry_run(node)
        assert result.returncode == 0, result.output
        assert STEP in result.steps
        assert "systemctl enable hyperpod-imds.service" in result.commands
        assert "/opt/hyperpod-lifecycle/imds-restrict.sh" in result.commands
        # after the users exist, before anything else runs jobs
        assert result.steps.index(STEP) > result.steps.index("users and groups")
    unit = (dry_run.root("compute") / "node/etc/systemd/system/hyperpod-imds.service").read_text()
    assert "ExecStart=/opt/hyperpod-lifecycle/imds-restrict.sh" in unit
    assert "Before=slurmd.service slurmctld.service" in unit
    assert STEP not in dry_run("eks").steps


def test_the_switch_turns_it_off_and_removes_an_earlier_restriction(fake_node) -> None:
    base = fake_node("compute")
    assert dry.run("compute", base).returncode == 0
    settings = base / "scripts/settings.json"
    settings.write_text(settings.read_text().replace('"node_setup": {', '"node_setup": {"restrict_imds": false,'))  # fmt: skip
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    assert result.skipped[STEP] == "node_setup.restrict_imds is off"
    assert "/opt/hyperpod-lifecycle/imds-restrict.sh remove" in result.commands
    assert not (base / "node/etc/systemd/system/hyperpod-imds.service").exists()


def _installed_script(fake_node: Callable[..., Path], passwd_extra: str = "") -> Path:
    base = fake_node("compute")
    if passwd_extra:
        passwd = base / "node/etc/passwd"
        passwd.write_text(passwd.read_text() + passwd_extra)
    result = dry.run("compute", base)
    assert result.returncode == 0, result.output
    return base / "node" / SCRIPT


def _run_with_fake_iptables(script: Path, work: Path, *args: str) -> list[str]:
    """The installed script with a PATH holding only bash, the fake iptables and python3."""
    tools = work / "path"
    if not tools.exists():
        tools.mkdir()
        for name in ("iptables", "ip6tables"):
            (tools / name).symlink_to(FAKE_TOOLS / "iptables")
        (tools / "python3").symlink_to(sys.executable)
        (tools / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    log = work / "calls.log"
    log.write_text("")
    env = {
        "PATH": str(tools),
        "FAKE_IPTABLES_STATE": str(work / "state"),
        "FAKE_IPTABLES_LOG": str(log),
    }
    done = subprocess.run([str(tools / "bash"), str(script), *args], env=env, text=True,
                          capture_output=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


def _rules(work: Path, tool: str) -> list[str]:
    import json

    chains = json.loads((work / f"state.{tool}.json").read_text())
    return [f"-A {chain} {rule}" for chain, rules in chains.items() for rule in rules]


def test_the_rules_refuse_the_users_uids_and_keep_system_accounts(fake_node, tmp_path: Path) -> None:  # fmt: skip
    # a Slurm daemon account with a UID in the users' range keeps IMDS (by name)
    script = _installed_script(fake_node, "slurm:x:64030:64030::/nonexistent:/usr/sbin/nologin\n")
    calls = _run_with_fake_iptables(script, tmp_path)
    assert calls[0] == "iptables -w -N HYPERPOD-IMDS"
    assert _rules(tmp_path, "iptables") == [
        "-A OUTPUT -d 169.254.169.254/32 -j HYPERPOD-IMDS",
        "-A HYPERPOD-IMDS -m owner --uid-owner 64030 -j RETURN",
        "-A HYPERPOD-IMDS -m owner --uid-owner 2000-4294967294 -j REJECT",
    ]
    assert _rules(tmp_path, "ip6tables")[0] == "-A OUTPUT -d fd00:ec2::254/128 -j HYPERPOD-IMDS"
    # at the next boot (and a second run): the chain is refilled, the jump not added twice
    _run_with_fake_iptables(script, tmp_path)
    assert len(_rules(tmp_path, "iptables")) == 3
    # switched off: nothing left
    _run_with_fake_iptables(script, tmp_path, "remove")
    assert _rules(tmp_path, "iptables") == [] and _rules(tmp_path, "ip6tables") == []


SYSTEM_PYTHON = "/usr/bin/python3"


def _can_use_netns() -> str | None:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"{SYSTEM_PYTHON} (run as other UIDs) is not installed"
    if os.geteuid() != 0:
        return "a network namespace and setpriv to another UID need root"
    for tool in ("iptables", "unshare", "setpriv", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "--net", "iptables", "-S"], capture_output=True, timeout=30, check=False)  # fmt: skip
    if probe.returncode != 0:
        return f"iptables does not work in a new network namespace: {probe.stderr.decode()[:200]}"
    return None


CONNECT = (
    "import socket,sys\n"
    "s=socket.socket(); s.settimeout(3)\n"
    "try:\n s.connect(('169.254.169.254', 8080)); print('open')\n"
    "except OSError as e:\n print('refused', e.errno)\n"
)


@pytest.mark.skipif(bool(_can_use_netns()), reason=_can_use_netns() or "")
def test_real_iptables_in_a_network_namespace(fake_node, tmp_path: Path) -> None:
    """The installed script with the real iptables, in a network namespace of its own where
    169.254.169.254 is a local address with a listener: UID 2001 (a users-file user) and
    250000 (a directory user) are refused; root, UID 999 (a system account) and the exempt
    Slurm UID connect."""
    script = _installed_script(fake_node, "slurm:x:64030:64030::/nonexistent:/usr/sbin/nologin\n")
    # the probe runs as other UIDs: the system's python3, the program on the command line
    python = SYSTEM_PYTHON
    inner = f"""
set -e
ip link set lo up
ip addr add 169.254.169.254/32 dev lo
{python} -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('169.254.169.254', 8080)); s.listen(16); time.sleep(30)" &
sleep 1
bash {script}
for uid in 0 999 64030 2001 250000; do
  printf '%s ' "$uid"; setpriv --reuid=$uid --regid=$uid --clear-groups {python} -S -c {shlex.quote(CONNECT)}
done
iptables -S
kill %1
"""
    done = subprocess.run(["unshare", "--net", "bash", "-c", inner], capture_output=True, text=True, timeout=90, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    answers = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line[:1].isdigit())
    assert answers["0"] == "open" and answers["999"] == "open" and answers["64030"] == "open"
    assert answers["2001"].startswith("refused") and answers["250000"].startswith("refused")
    assert "-A OUTPUT -d 169.254.169.254/32 -j HYPERPOD-IMDS" in done.stdout

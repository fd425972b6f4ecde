"""A one-node Slurm cluster from Debian's packages (slurmctld, slurmd, slurmdbd on MariaDB,
munge), under a temporary directory, on loopback addresses, for the ``real_slurm`` tier.

Everything it writes is under ``base``: munge's key and socket, MariaDB's data directory and
socket, slurm.conf/slurmdbd.conf, the spool and state directories, the logs. Every address in
the configuration is 127.0.0.1 and every port a free one picked at start (MariaDB binds
127.0.0.1 only). It changes nothing of the host and starts no service through systemd: each
daemon runs in the foreground as a child of the test process, and :meth:`SlurmCluster.stop`
ends exactly the processes it started, by their pids.

The node is named after this host (``hostname -s``), as HyperPod names a Slurm node after its
host, so that ``pam_slurm_adopt`` finds itself in slurm.conf. The partitions are the ones a
HyperPod config names (``config/default.yaml``: its Compute group's partition, plus HyperPod's
built-in default partition ``dev``).

Run by hand (for debugging)::

    python tests/real/slurm_cluster.py /tmp/cluster   # starts, prints SLURM_CONF, waits for ^C
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The programs the cluster needs (Debian packages: munge, mariadb-server, slurmdbd, slurmctld,
# slurmd, slurm-client).
DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "squeue", "sbatch", "srun", "scontrol", "sacct", "sacctmgr", "scancel")
PACKAGES = "munge mariadb-server slurmdbd slurmctld slurmd slurm-client"
CLUSTER_NAME = "hpv-real"
DB_USER = "slurm"
DB_PASSWORD = "real-tier-only"  # a throwaway database on 127.0.0.1, removed with the directory
# A job whose Epilog finds this file (under the cluster's directory) keeps its node
# `completing` for EPILOG_HOLD_SECONDS.
EPILOG_HOLD = "epilog-hold"
EPILOG_HOLD_SECONDS = 20
READY_SECONDS = 90.0


class ClusterError(RuntimeError):
    """The cluster did not come up: the message says which daemon and its log's last lines."""


def missing_programs() -> list[str]:
    """The cluster's programs this machine lacks (empty: it can run)."""
    search = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [p for p in (*DAEMONS, *CLIENTS) if shutil.which(p, path=search) is None]


def _which(program: str) -> str:
    found = shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if found is None:
        raise ClusterError(f"{program} is not installed (apt-get install {PACKAGES})")
    return found


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies, even by SIGKILL, so that
    no daemon outlives a killed test run (Linux prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} not written)"
    return "\n".join(text[-lines:])


@dataclass
class SlurmCluster:
    """The cluster's directory, node, partitions; :meth:`start` brings it up."""

    base: Path
    partitions: Sequence[str] = ("dev", "gpu")
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    cpus: int = 2
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    # --- paths ---------------------------------------------------------------------------

    @property
    def conf(self) -> Path:
        return self.base / "etc" / "slurm.conf"

    @property
    def dbd_conf(self) -> Path:
        return self.base / "etc" / "slurmdbd.conf"

    @property
    def munge_socket(self) -> Path:
        return self.base / "munge" / "munge.socket"

    @property
    def db_socket(self) -> Path:
        return self.base / "db" / "mysqld.sock"

    def log(self, daemon: str) -> Path:
        return self.base / "log" / f"{daemon}.log"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for Slurm's clients: SLURM_CONF pointing at this cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra or {})
        return env

    # --- configuration ---------------------------------------------------------------------

    def _write_configs(self) -> None:
        for sub in ("etc", "log", "munge", "db", "spool", "state", "tmp"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.base / "tmp", 0o1777)
        self.ports = {name: free_port() for name in ("ctld", "slurmd", "dbd", "db")}
        auth = f"AuthInfo=socket={self.munge_socket}"
        epilog = self.base / "etc" / "epilog.sh"
        epilog.write_text(
            f"#!/bin/sh\n[ -e {self.base / EPILOG_HOLD} ] && sleep {EPILOG_HOLD_SECONDS}\nexit 0\n"
        )
        epilog.chmod(0o755)
        parts = "\n".join(
            f"PartitionName={name} Nodes={self.node} State=UP MaxTime=INFINITE"
            + (" Default=YES" if index == 0 else "")
            for index, name in enumerate(self.partitions)
        )
        self.conf.write_text(
            f"""# the real_slurm test tier's one-node cluster (tests/real/slurm_cluster.py)
ClusterName={CLUSTER_NAME}
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={self.ports["ctld"]}
SlurmdPort={self.ports["slurmd"]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
{auth}
StateSaveLocation={self.base / "state"}
SlurmdSpoolDir={self.base / "spool"}/%n
SlurmctldPidFile={self.base / "slurmctld.pid"}
SlurmdPidFile={self.base / "slurmd.pid"}
SlurmctldLogFile={self.log("slurmctld")}
SlurmdLogFile={self.log("slurmd")}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
PrologFlags=Contain
Epilog={epilog}
MpiDefault=none
ReturnToService=1
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=2
KillWait=2
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={self.ports["dbd"]}
# with slurmdbd, the munge socket of the connection to it (slurm.conf(5) AccountingStoragePass)
AccountingStoragePass={self.munge_socket}
NodeName={self.node} NodeAddr=127.0.0.1 NodeHostname={self.node} CPUs={self.cpus} State=UNKNOWN
{parts}
"""
        )
        self.dbd_conf.write_text(
            f"""# the real_slurm test tier's slurmdbd
{auth}
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={self.ports["dbd"]}
SlurmUser=root
LogFile={self.log("slurmdbd")}
PidFile={self.base / "slurmdbd.pid"}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.ports["db"]}
StorageUser={DB_USER}
StoragePass={DB_PASSWORD}
StorageLoc=slurm_acct_db
"""
        )
        self.dbd_conf.chmod(0o600)

    # --- daemons ---------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        out = self.log(f"{name}.stdout").open("ab")
        self.processes[name] = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env or self.env(),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        out.close()

    def _wait(
        self, name: str, ready: Callable[[], bool], what: str, timeout: float = READY_SECONDS
    ) -> None:
        end = time.monotonic() + timeout
        process = self.processes.get(name)
        while time.monotonic() < end:
            if process is not None and process.poll() is not None:
                raise ClusterError(
                    f"{name} exited with {process.returncode} before {what}; its log:\n"
                    f"{_tail(self.log(name))}\n{_tail(self.log(name + '.stdout'))}"
                )
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                if ready():
                    return
            time.sleep(0.3)
        raise ClusterError(
            f"{name}: not {what} within {timeout:g} s; its log:\n"
            f"{_tail(self.log(name))}\n{_tail(self.log(name + '.stdout'))}"
        )

    def _ok(self, argv: list[str], timeout: float = 10, **kw: object) -> bool:
        return (
            subprocess.run(
                argv, env=self.env(), capture_output=True, timeout=timeout, check=False, **kw
            ).returncode
            == 0
        )

    def run(self, *argv: str, timeout: float = 60, check: bool = True) -> str:
        """A Slurm client command against this cluster: its stdout (stderr on failure)."""
        proc = subprocess.run(
            list(argv), env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise ClusterError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def start(self) -> SlurmCluster:
        """Start munge, MariaDB, slurmdbd, slurmctld, slurmd; wait until each answers."""
        self._write_configs()
        try:
            self._start_munge()
            self._start_db()
            self.start_slurmdbd()
            self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
            self._wait(
                "slurmctld",
                lambda: "UP" in self.run("scontrol", "ping", timeout=10, check=False),
                "answering scontrol ping",
            )
            self._spawn("slurmd", [_which("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
            self._wait("slurmd", self._node_idle, f"node {self.node} idle in sinfo")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_munge(self) -> None:
        key = self.base / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        # others may use the socket (a job's owner); munged refuses a folder others can write
        os.chmod(self.base / "munge", 0o755)
        self._spawn(
            "munged",
            [
                _which("munged"),
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={self.base / 'munge' / 'munged.pid'}",
                f"--seed-file={self.base / 'munge' / 'munged.seed'}",
                f"--log-file={self.log('munged')}",
            ],
        )
        self._wait("munged", self.munge_socket.exists, "listening on its socket", 30)

    def _start_db(self) -> None:
        data = self.base / "db" / "data"
        proc = subprocess.run(
            [
                _which("mariadb-install-db"),
                f"--datadir={data}",
                "--user=root",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if proc.returncode != 0:
            raise ClusterError(
                f"mariadb-install-db failed: {proc.stdout[-500:]}{proc.stderr[-500:]}"
            )
        self._spawn(
            "mariadbd",
            [
                _which("mariadbd"),
                "--no-defaults",
                f"--datadir={data}",
                f"--socket={self.db_socket}",
                f"--pid-file={self.base / 'db' / 'mariadbd.pid'}",
                "--bind-address=127.0.0.1",
                f"--port={self.ports['db']}",
                "--skip-name-resolve",
                "--user=root",
                f"--log-error={self.log('mariadbd')}",
                "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=8M",
            ],
        )
        client = _which("mariadb")
        self._wait(
            "mariadbd",
            lambda: self._ok([client, f"--socket={self.db_socket}", "-e", "select 1"]),
            "answering on its socket",
        )
        sql = (
            f"CREATE USER '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}';"
            f"GRANT ALL ON slurm_acct_db.* TO '{DB_USER}'@'127.0.0.1';"
        )
        if not self._ok([client, f"--socket={self.db_socket}", "-e", sql]):
            raise ClusterError("cannot create the slurmdbd database user in MariaDB")

    def start_slurmdbd(self) -> None:
        """Start slurmdbd (again, after :meth:`stop_daemon`), wait until sacctmgr answers."""
        self._spawn(
            "slurmdbd", [_which("slurmdbd"), "-D"], self.env({"SLURM_CONF": str(self.conf)})
        )
        self._wait(
            "slurmdbd",
            lambda: self._ok(["sacctmgr", "-n", "show", "cluster"], timeout=20),
            "answering sacctmgr",
        )
        # the cluster's own record (slurmctld adds it when it registers; do it now)
        if CLUSTER_NAME not in self.run("sacctmgr", "-nP", "show", "cluster", "format=cluster"):
            self.run("sacctmgr", "-i", "add", "cluster", CLUSTER_NAME)

    def _node_idle(self) -> bool:
        return "idle" in self.run("sinfo", "-h", "-N", "-o", "%T", timeout=10, check=False)

    def stop_daemon(self, name: str) -> None:
        """SIGTERM the daemon this cluster started (then SIGKILL after 10 s)."""
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def pause_daemon(self, name: str) -> None:
        """SIGSTOP the daemon this cluster started (it hangs: connections open, no answer)."""
        os.kill(self.processes[name].pid, signal.SIGSTOP)

    def resume_daemon(self, name: str) -> None:
        """SIGCONT after :meth:`pause_daemon`."""
        os.kill(self.processes[name].pid, signal.SIGCONT)

    def stop(self) -> None:
        """End every daemon this cluster started, by pid, the last started first."""
        for name in reversed(list(self.processes)):
            self.stop_daemon(name)

    # --- node states -------------------------------------------------------------------------

    def state(self, partition: str | None = None) -> str:
        """The node's sinfo %T (in ``partition``, default the first)."""
        part = partition or self.partitions[0]
        return self.run("sinfo", "-h", "-N", "-p", part, "-o", "%T").strip()

    def wait_state(self, wanted: Iterable[str], timeout: float = 60) -> str:
        """Wait until the node's state is one of ``wanted``; its state."""
        wanted = set(wanted)
        end = time.monotonic() + timeout
        state = ""
        while time.monotonic() < end:
            state = self.state()
            if state in wanted:
                return state
            time.sleep(0.5)
        raise ClusterError(
            f"node {self.node} is {state!r}, not {sorted(wanted)} after {timeout:g} s"
        )

    def settle(self, timeout: float = 90) -> None:
        """No job left and the node idle: cancel everything, remove reservations, resume."""
        self.run("scancel", "--user=root", check=False)
        for line in self.run("scontrol", "-o", "show", "reservation", check=False).splitlines():
            if line.startswith("ReservationName="):
                name = line.split()[0].split("=", 1)[1]
                self.run("scontrol", "delete", f"reservation={name}", check=False)
        with contextlib.suppress(FileNotFoundError):
            (self.base / EPILOG_HOLD).unlink()
        state = self.state()
        if state.startswith(("drain", "down")) or "drain" in state:
            self.run("scontrol", "update", f"nodename={self.node}", "state=resume", check=False)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            queued = self.run("squeue", "-h", "-o", "%i", check=False).strip()
            if not queued and self.state() == "idle":
                return
            if queued:
                self.run("scancel", *queued.split(), check=False)
            time.sleep(0.5)
        raise ClusterError(f"node {self.node} did not come back to idle: {self.state()}")


def main(argv: list[str]) -> int:
    base = Path(argv[0] if argv else "/tmp/hpv-slurm")
    cluster = SlurmCluster(base).start()
    print(f"SLURM_CONF={cluster.conf}  (node {cluster.node}; ^C stops it)")
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The real Slurm tier (``make test-real``): one session-scoped one-node cluster from Debian's
packages (tests/real/slurm_cluster.py) that the tests of this folder drive.

Its tests carry the ``real_slurm`` marker; they run only when it is selected (``pytest -m
real_slurm``, as ``make test-real`` does) and skip with the reason where a program is missing or
the run is not root. Between tests the cluster is brought back to one idle node, no job, no
reservation (:meth:`SlurmCluster.settle`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# ops_testkit, lifecycle_testkit
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lifecycle"))
from slurm_cluster import PACKAGES, SlurmCluster, missing_programs

from hyperpod_ops.verify.slurm import compute_groups

SELECT = "the Slurm cluster tier runs with make test-real (pytest -m real_slurm)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``real_slurm`` tests run only when selected by name (they start daemons)."""
    if "real_slurm" in (config.option.markexpr or ""):
        return
    for item in items:
        if item.get_closest_marker("real_slurm"):
            item.add_marker(pytest.mark.skip(reason=SELECT))


def hyperpod_partitions() -> list[str]:
    """HyperPod's built-in default partition ``dev``, then the partitions config/default.yaml's
    Compute groups name (the cluster is named as a HyperPod config names it)."""
    from ops_testkit import environment

    from hyperpod_ops.verify.model import VerifyRun

    run = VerifyRun(config=environment("default"), clients=lambda service: None)
    names = ["dev"]
    for group in compute_groups(run):
        name = group.effective_partition or group.name
        if name not in names:
            names.append(name)
    return names


@pytest.fixture(scope="session")
def cluster() -> Iterator[SlurmCluster]:
    """The running cluster; stopped (by the pids it started) at the end of the session."""
    missing = missing_programs()
    if missing:
        pytest.skip(f"the Slurm tier needs {', '.join(missing)} (apt-get install {PACKAGES})")
    if os.geteuid() != 0:
        pytest.skip("the Slurm tier runs as root (slurmd and munged as root, as CI runs it)")
    # not under pytest's temporary folder (mode 0700), which the run's TMPDIR points into
    # (tests/conftest.py): the PAM test's job owner, a plain user, reads slurm.conf and the
    # munge socket there. So in the system's /tmp by name, and removed at the end.
    base = Path(tempfile.mkdtemp(prefix="hpv-slurm-", dir="/tmp"))
    base.chmod(0o755)
    started = SlurmCluster(base, partitions=hyperpod_partitions())
    try:
        started.start()
        yield started
    finally:
        started.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def idle_cluster(cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The cluster with one idle node, no job and no reservation, before and after the test."""
    cluster.settle()
    yield cluster
    cluster.settle()

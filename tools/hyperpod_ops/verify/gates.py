"""The gates ``make verify`` holds measurements to, and the decisions.

The figures (what each instance type has, AWS's published two-node nccl-tests bus bandwidths,
the FSx baseline throughput, the pinned nccl-tests image) are AWS facts, each with its source, in
:mod:`hyperpod_cdk.facts.gates`. The NCCL gate is :data:`NCCL_FRACTION` of the published figure
or, where none is published, of a provisional floor from the EFA rate; the FSx gate is
:data:`FSX_FRACTION` of the file system's baseline throughput. A run at or over its gate passes,
whatever its margin; being faster never fails.

Pure Python: no AWS calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hyperpod_cdk.facts.gates import ALL_REDUCE_PERF as ALL_REDUCE_PERF
from hyperpod_cdk.facts.gates import FROM_TABLE as FROM_TABLE
from hyperpod_cdk.facts.gates import INSTANCE_FACTS as INSTANCE_FACTS
from hyperpod_cdk.facts.gates import INSTANCE_FACTS_SOURCE as INSTANCE_FACTS_SOURCE
from hyperpod_cdk.facts.gates import NCCL_PUBLISHED as NCCL_PUBLISHED
from hyperpod_cdk.facts.gates import NCCL_TESTS_DIGEST as NCCL_TESTS_DIGEST
from hyperpod_cdk.facts.gates import NCCL_TESTS_IMAGE as NCCL_TESTS_IMAGE
from hyperpod_cdk.facts.gates import NCCL_TESTS_IMAGE_TAG as NCCL_TESTS_IMAGE_TAG
from hyperpod_cdk.facts.gates import NCCL_TESTS_REPOSITORY as NCCL_TESTS_REPOSITORY
from hyperpod_cdk.facts.gates import GiB as GiB
from hyperpod_cdk.facts.gates import InstanceFacts as InstanceFacts
from hyperpod_cdk.facts.gates import fsx_baseline_mbps as fsx_baseline_mbps
from hyperpod_cdk.facts.gates import instance_facts as instance_facts
from hyperpod_ops.verify.parsers import NcclRun

NCCL_FRACTION = 0.8
# Where no figure is published, the gate is read at this message size (every GPU type reaches
# it in a sweep to 16 GiB; p4d's 40 GB GPUs may cut the sweep short).
PROVISIONAL_MESSAGE_BYTES = 2 * GiB


@dataclass(frozen=True)
class NcclGate:
    """The bus bandwidth a 2-node all-reduce must reach on an instance type.

    :param reference_gbps: the published figure, or the provisional floor (EFA rate in GB/s).
    :param message_bytes: the message size the figure is at; the run is read at the largest size
        of at least this.
    :param gate_gbps: ``fraction`` x ``reference_gbps`` (GB/s, rounded as nccl-tests prints).
    :param source: where the reference comes from.
    :param provisional: True when no figure is published and the floor comes from the EFA rate.
    """

    instance_type: str
    reference_gbps: float
    message_bytes: int
    gate_gbps: float
    fraction: float
    source: str
    provisional: bool


def nccl_gate(instance_type: str, facts: InstanceFacts | None = None) -> NcclGate | None:
    """The NCCL gate of ``instance_type``; None when NCCL does not apply (not NVIDIA GPUs, no
    EFA) or there are no facts. ``facts``: the type's facts when they come from the account
    (DescribeInstanceTypes); left out, the table row."""
    facts = facts if facts is not None else instance_facts(instance_type)
    if facts is None or facts.accelerator != "nvidia" or facts.efa_interfaces == 0:
        return None
    published = NCCL_PUBLISHED.get(instance_type)
    if published:
        gbps, size, source = published
        return _gate(instance_type, gbps, size, source, provisional=False)
    # Provisional floor: the EFA line rate in GB/s. A 2-node all-reduce's bus bandwidth can
    # exceed the NIC rate (NVLink carries part of the reduction; nccl-tests issue 22), so this
    # floor is conservative: it catches a run on too few NICs or on sockets, not a slow fabric.
    origin = (
        INSTANCE_FACTS_SOURCE
        if facts.source == FROM_TABLE
        else f"EC2 {facts.source} read this run: the EFA network cards' peak bandwidth"
    )
    source = (
        f"provisional: no published 2-node figure; floor = EFA rate {facts.efa_gbps} Gbit/s / 8 "
        f"({origin})"
    )
    return _gate(instance_type, facts.efa_gbps / 8, PROVISIONAL_MESSAGE_BYTES, source, True)


def _gate(instance_type: str, gbps: float, size: int, source: str, provisional: bool) -> NcclGate:
    """A gate at :data:`NCCL_FRACTION` of ``gbps``."""
    return NcclGate(
        instance_type=instance_type,
        reference_gbps=gbps,
        message_bytes=size,
        gate_gbps=round(NCCL_FRACTION * gbps, 2),
        fraction=NCCL_FRACTION,
        source=source,
        provisional=provisional,
    )


FSX_FRACTION = 0.8


@dataclass(frozen=True)
class Decision:
    """A pass or a fail with its one line, the fix on a fail, and the figures for ``--json``."""

    outcome: Literal["pass", "fail"]
    detail: str
    fix: str | None
    figures: dict[str, float | int | str]


_FIX_TRANSPORT = (
    "NCCL did not use EFA: run with NCCL_DEBUG=INFO and look for 'NET/OFI Selected provider is "
    "efa'; check that aws-ofi-nccl is in the image (/opt/amazon/ofi-nccl) and loaded, that "
    "FI_PROVIDER is efa (or unset), that the EFA devices are passed to the job, and that the "
    "nodes' security group allows all traffic to and from itself (EFA needs both self rules)"
)
_FIX_WRONG = (
    "all_reduce_perf reported wrong values: a GPU, NVLink or NIC is corrupting data; run "
    "HyperPod's deep health check on these nodes and replace the node that fails"
)
_FIX_SLOW = (
    "check that every EFA device is in use (NCCL_DEBUG=INFO 'found N nics'), that the nodes are "
    "idle and in one placement group or spine, and that the image's NCCL and aws-ofi-nccl match "
    "the pinned ones; rerun to rule out a noisy neighbour"
)
_FIX_NO_ROWS = (
    "read the job's output for the NCCL WARN or launcher error; a run that stops before the table "
    "usually cannot reach the other node (EFA security group self rules) or cannot start MPI"
)


def decide_nccl(gate: NcclGate, run: NcclRun) -> Decision:
    """Pass when the bus bandwidth at ``gate.message_bytes`` (or the largest size run) reaches
    ``gate.gate_gbps``, the transport was EFA and no row reported wrong values."""
    figures: dict[str, float | int | str] = {
        "gate_gbps": gate.gate_gbps,
        "reference_gbps": gate.reference_gbps,
        "message_bytes": gate.message_bytes,
        "transport": run.transport,
        "wrong": run.wrong_total,
    }
    if not run.rows:
        first = f": {run.errors[0]}" if run.errors else ""
        return Decision("fail", f"nccl-tests printed no result rows{first}", _FIX_NO_ROWS, figures)
    at = run.busbw_at(gate.message_bytes)
    size, busbw = at if at is not None else run.largest or (0, 0.0)
    figures.update(busbw_gbps=busbw, size_bytes=size)
    basis = _gate_basis(gate)
    reached = f"busbw {busbw:.2f} GB/s at {_size(size)}"
    if at is None:
        reached += f" (the run stopped below {_size(gate.message_bytes)})"
    problems, fixes = [], []
    if run.transport != "efa":
        problems.append(f"transport {run.transport}, not EFA")
        fixes.append(_FIX_TRANSPORT)
    if run.wrong_total > 0:
        problems.append(f"{run.wrong_total} wrong values")
        fixes.append(_FIX_WRONG)
    if busbw < gate.gate_gbps:
        problems.append(f"{reached} is under the gate {gate.gate_gbps:.2f} GB/s ({basis})")
        fixes.append(_FIX_SLOW)
    if problems:
        return Decision("fail", "; ".join(problems), "; ".join(fixes), figures)
    detail = f"{reached} over EFA, 0 wrong; gate {gate.gate_gbps:.2f} GB/s ({basis})"
    return Decision("pass", detail, None, figures)


def _gate_basis(gate: NcclGate) -> str:
    """``0.8 x 487.1 GB/s published`` or ``0.8 x 400.0 GB/s EFA rate, provisional``."""
    kind = "EFA rate, provisional" if gate.provisional else "published 2-node figure"
    return f"{gate.fraction:g} x {gate.reference_gbps:g} GB/s {kind}"


def _size(size: int) -> str:
    """``16 GiB``, ``512 MiB`` or ``4096 B``."""
    for unit, scale in (("GiB", GiB), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def decide_fsx(
    capacity_gib: int, throughput_per_tib: int, write_mbps: float | None, read_mbps: float | None
) -> Decision:
    """Pass when both write and read reach :data:`FSX_FRACTION` of the baseline; faster is fine
    (the 125 and 250 tiers burst above their baseline). A missing figure fails."""
    baseline = fsx_baseline_mbps(capacity_gib, throughput_per_tib)
    gate = round(FSX_FRACTION * baseline, 1)
    figures: dict[str, float | int | str] = {"baseline_mbps": round(baseline, 1), "gate_mbps": gate}
    basis = (
        f"gate {gate:.1f} MB/s = {FSX_FRACTION:g} x baseline {baseline:.1f} MB/s "
        f"({capacity_gib} GiB at {throughput_per_tib} MB/s/TiB)"
    )
    problems = []
    for name, value in (("write", write_mbps), ("read", read_mbps)):
        if value is None:
            problems.append(f"no {name} figure")
            continue
        figures[f"{name}_mbps"] = round(value, 1)
        if value < gate:
            problems.append(f"{name} {value:.1f} MB/s is under the gate")
    if problems:
        fix = (
            "read the throughput test's output on the node; check the Lustre client and its "
            "LNet (lnetctl net show), that the clients are not sharing the file system with "
            "other work, and the file system's CloudWatch DataWriteBytes/DataReadBytes"
        )
        return Decision("fail", f"{'; '.join(problems)}; {basis}", fix, figures)
    detail = f"write {write_mbps:.1f} MB/s, read {read_mbps:.1f} MB/s; {basis}"
    return Decision("pass", detail, None, figures)


def test_image(registry: str | None = None) -> str:
    """The pinned image, from ``registry`` (``eks.image_registry``, a mirror that keeps the
    ``hpc-cloud/nccl-tests`` path) when given, else from public ECR; always by digest."""
    if registry is None:
        return NCCL_TESTS_IMAGE
    return f"{registry.rstrip('/')}/{NCCL_TESTS_REPOSITORY}@{NCCL_TESTS_DIGEST}"


test_image.__test__ = False  # type: ignore[attr-defined]  # pytest: not a test despite its name


# enroot (and pyxis, which hands --container-image to `enroot import docker://...`) names a
# registry with '#': docker://[USER@][REGISTRY#]IMAGE[:TAG]. Digests: enroot 3.x (AWS's HyperPod
# lifecycle scripts install 3.4.1; the PCS images 3.5.0) rejects "IMAGE@sha256:..." as an invalid
# image reference (its tag pattern excludes '@'), but takes "IMAGE:sha256:<hex>" since the tag is
# sent as the manifest reference; enroot >= 4.0.0 (2025-10-01, src/docker.sh _parse_uri) takes
# both. AWS's pins.env above uses the ':' form for enroot. Read in NVIDIA/enroot v3.5.0 and
# v4.1.2 src/docker.sh, 2026-11-25.
def enroot_image(image: str, *, digest_with_at: bool = False) -> str:
    """``image`` in enroot's form: the first ``/`` after a registry host becomes ``#``
    (``public.ecr.aws#hpc-cloud/nccl-tests:sha256:...``), and a digest follows ``:`` so that
    enroot 3.x takes it (``digest_with_at``: keep ``@``, for enroot >= 4.0 only)."""
    first, slash, rest = image.partition("/")
    if slash and _is_registry_host(first):
        image = f"{first}#{rest}"
    if not digest_with_at:
        image = image.replace("@sha256:", ":sha256:", 1)
    return image


def _is_registry_host(part: str) -> bool:
    """True when the first part of an image name is a registry (has a dot or a port, or is
    ``localhost``), as Docker decides it; else it is a Docker Hub namespace."""
    return "." in part or ":" in part or part == "localhost"

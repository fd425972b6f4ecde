"""The gates tables and the NCCL and FSx decisions: a run 1 % under its gate fails, at or over it
passes; a run over sockets or with wrong values fails; every row has a source."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hyperpod_cdk.facts import HYPERPOD_INSTANCE_TYPES
from hyperpod_ops.verify import gates
from hyperpod_ops.verify.parsers import NcclRow, NcclRun, parse_nccl

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GiB = 1024**3


def run_at(busbw: float, size: int = 16 * GiB, transport: str = "efa", wrong: int = 0) -> NcclRun:
    """A run whose largest row is ``size`` at ``busbw`` (both halves), smaller rows far under."""
    rows = (
        NcclRow(1024, 256, 0.03, 0.03, 0, 0),
        NcclRow(size, size // 4, busbw, busbw, wrong, 0),
    )
    return NcclRun(rows, 50.0, transport, 16, ())  # type: ignore[arg-type]


def test_every_type_is_a_hyperpod_type() -> None:
    assert set(gates.INSTANCE_FACTS) <= HYPERPOD_INSTANCE_TYPES
    assert set(gates.NCCL_PUBLISHED) <= set(gates.INSTANCE_FACTS)


def test_instance_rows_are_consistent() -> None:
    for name, facts in gates.INSTANCE_FACTS.items():
        assert facts.instance_type == name
        assert (facts.accelerator == "none") == (facts.accelerators == 0)
        assert (facts.efa_interfaces == 0) == (facts.efa_gbps == 0)
    assert "ac.html" in gates.INSTANCE_FACTS_SOURCE and "2026" in gates.INSTANCE_FACTS_SOURCE


def test_every_published_figure_has_a_source() -> None:
    for name, (gbps, size, source) in gates.NCCL_PUBLISHED.items():
        assert gbps > 0 and size >= GiB, name
        assert "awslabs/awsome-distributed-ai @ 95b939cd" in source, name


def test_every_gate_has_a_source() -> None:
    for name in gates.INSTANCE_FACTS:
        gate = gates.nccl_gate(name)
        if gate is not None:
            assert gate.source and gate.gate_gbps == round(gate.fraction * gate.reference_gbps, 2)


def test_p5_gate_is_080_of_487_at_16_gib() -> None:
    gate = gates.nccl_gate("ml.p5.48xlarge")
    assert gate is not None
    assert (gate.reference_gbps, gate.message_bytes, gate.fraction) == (487.1, 16 * GiB, 0.8)
    assert gate.gate_gbps == pytest.approx(389.68)
    assert not gate.provisional
    assert "micro-benchmarks/nccl-tests" in gate.source


def test_published_gates() -> None:
    p4de = gates.nccl_gate("ml.p4de.24xlarge")
    b300 = gates.nccl_gate("ml.p6-b300.48xlarge")
    assert p4de and (p4de.reference_gbps, p4de.message_bytes) == (78.3, 2 * GiB)
    assert b300 and (b300.reference_gbps, b300.message_bytes) == (654.0, 16 * GiB)
    assert "aws-pcs/tests/compute-test.md" in b300.source


@pytest.mark.parametrize(
    ("name", "floor"),
    [("ml.p5en.48xlarge", 400.0), ("ml.p6-b200.48xlarge", 400.0), ("ml.p4d.24xlarge", 50.0)],
)
def test_provisional_gate_is_the_efa_rate(name: str, floor: float) -> None:
    gate = gates.nccl_gate(name)
    assert gate is not None and gate.provisional
    assert gate.reference_gbps == floor and gate.gate_gbps == pytest.approx(0.8 * floor)
    assert gate.message_bytes == 2 * GiB
    assert "provisional" in gate.source


@pytest.mark.parametrize("name", ["ml.trn1.32xlarge", "ml.trn2.48xlarge", "ml.c5.large", "ml.x"])
def test_no_nccl_gate_without_nvidia_gpus_or_row(name: str) -> None:
    assert gates.nccl_gate(name) is None


def test_instance_facts_lookup() -> None:
    assert gates.instance_facts("ml.p5en.48xlarge") == gates.InstanceFacts(
        "ml.p5en.48xlarge", "nvidia", 8, 16, 3200
    )
    assert gates.instance_facts("ml.g5.48xlarge") is None  # not confirmed: left out


def p5_gate() -> gates.NcclGate:
    """The p5 gate (389.68 GB/s at 16 GiB)."""
    gate = gates.nccl_gate("ml.p5.48xlarge")
    assert gate is not None
    return gate


def test_nccl_at_the_gate_passes() -> None:
    decision = gates.decide_nccl(p5_gate(), run_at(389.68))
    assert decision.outcome == "pass" and decision.fix is None
    assert decision.detail == (
        "busbw 389.68 GB/s at 16 GiB over EFA, 0 wrong; gate 389.68 GB/s "
        "(0.8 x 487.1 GB/s published 2-node figure)"
    )
    assert decision.figures["busbw_gbps"] == 389.68 and decision.figures["gate_gbps"] == 389.68


def test_nccl_1_percent_under_the_gate_fails() -> None:
    decision = gates.decide_nccl(p5_gate(), run_at(389.68 * 0.99))
    assert decision.outcome == "fail"
    assert "is under the gate 389.68 GB/s" in decision.detail
    assert decision.fix and "found N nics" in decision.fix


def test_nccl_faster_than_published_passes() -> None:
    assert gates.decide_nccl(p5_gate(), run_at(751.0)).outcome == "pass"


def test_nccl_fixture_decisions() -> None:
    gate = p5_gate()
    good = gates.decide_nccl(gate, parse_nccl((FIXTURES / "nccl-efa-p5.txt").read_text()))
    assert good.outcome == "pass" and "487.14 GB/s at 16 GiB" in good.detail
    socket = gates.decide_nccl(gate, parse_nccl((FIXTURES / "nccl-socket.txt").read_text()))
    assert socket.outcome == "fail" and socket.detail.startswith("transport socket, not EFA")
    wrong = gates.decide_nccl(gate, parse_nccl((FIXTURES / "nccl-wrong.txt").read_text()))
    assert wrong.outcome == "fail" and "8389624 wrong values" in wrong.detail


def test_nccl_socket_transport_fails_even_when_fast() -> None:
    decision = gates.decide_nccl(p5_gate(), run_at(480.0, transport="socket"))
    assert decision.outcome == "fail"
    assert decision.detail == "transport socket, not EFA"
    assert decision.fix is not None
    for hint in ("FI_PROVIDER", "aws-ofi-nccl", "security group"):
        assert hint in decision.fix


@pytest.mark.parametrize("transport", ["unknown", "ib"])
def test_nccl_unknown_or_ib_transport_fails(transport: str) -> None:
    assert gates.decide_nccl(p5_gate(), run_at(480.0, transport=transport)).outcome == "fail"


def test_nccl_wrong_values_fail() -> None:
    decision = gates.decide_nccl(p5_gate(), run_at(480.0, wrong=1))
    assert decision.outcome == "fail" and decision.detail == "1 wrong values"
    assert decision.fix and "deep health check" in decision.fix


def test_nccl_no_rows_fails_with_the_first_error() -> None:
    crashed = parse_nccl((FIXTURES / "nccl-crash.txt").read_text())
    decision = gates.decide_nccl(p5_gate(), crashed)
    assert decision.outcome == "fail"
    assert decision.detail.startswith("nccl-tests printed no result rows: ")
    assert "NCCL WARN" in decision.detail
    empty = gates.decide_nccl(p5_gate(), NcclRun((), None, "efa", None, ()))
    assert empty.detail == "nccl-tests printed no result rows"


def test_nccl_short_sweep_uses_the_largest_size_and_says_so() -> None:
    decision = gates.decide_nccl(p5_gate(), run_at(479.28, size=8 * GiB))
    assert decision.outcome == "pass"
    assert "busbw 479.28 GB/s at 8 GiB (the run stopped below 16 GiB)" in decision.detail
    assert decision.figures["size_bytes"] == 8 * GiB


def test_nccl_provisional_gate_says_so() -> None:
    gate = gates.nccl_gate("ml.p5en.48xlarge")
    assert gate is not None
    decision = gates.decide_nccl(gate, run_at(480.0, size=16 * GiB))
    assert decision.outcome == "pass"
    assert "0.8 x 400 GB/s EFA rate, provisional" in decision.detail
    under = gates.decide_nccl(replace(gate), run_at(gate.gate_gbps * 0.99))
    assert under.outcome == "fail"


def test_fsx_baseline() -> None:
    assert gates.fsx_baseline_mbps(1200, 250) == pytest.approx(292.97, abs=0.01)
    assert gates.fsx_baseline_mbps(2400, 1000) == pytest.approx(2343.75)


def test_fsx_at_the_gate_passes_and_1_percent_under_fails() -> None:
    gate = round(0.8 * gates.fsx_baseline_mbps(1200, 250), 1)  # 234.4 MB/s
    at = gates.decide_fsx(1200, 250, gate, gate)
    assert at.outcome == "pass" and at.fix is None
    assert at.detail == (
        "write 234.4 MB/s, read 234.4 MB/s; gate 234.4 MB/s = 0.8 x baseline 293.0 MB/s "
        "(1200 GiB at 250 MB/s/TiB)"
    )
    write_under = gates.decide_fsx(1200, 250, gate * 0.99, gate)
    read_under = gates.decide_fsx(1200, 250, gate, gate * 0.99)
    assert write_under.outcome == "fail" and write_under.detail.startswith("write 232.1 MB/s is")
    assert read_under.outcome == "fail" and read_under.detail.startswith("read 232.1 MB/s is")
    assert read_under.fix


def test_fsx_bursting_far_over_the_baseline_passes() -> None:
    assert gates.decide_fsx(1200, 125, 1500.0, 2900.0).outcome == "pass"


def test_fsx_missing_figure_fails() -> None:
    decision = gates.decide_fsx(1200, 250, None, 400.0)
    assert decision.outcome == "fail" and decision.detail.startswith("no write figure;")
    both = gates.decide_fsx(1200, 250, None, None)
    assert both.detail.startswith("no write figure; no read figure;")


def test_test_image() -> None:
    assert gates.test_image() == gates.NCCL_TESTS_IMAGE
    assert gates.NCCL_TESTS_IMAGE == (
        "public.ecr.aws/hpc-cloud/nccl-tests@sha256:"
        "a5390d3f0eb50f3e5854085e2ae0fef90b9eb4f3b7486ed4cab0d47864809d4c"
    )
    mirror = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror/"
    assert gates.test_image(mirror) == (
        "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror/hpc-cloud/nccl-tests@"
        + gates.NCCL_TESTS_DIGEST
    )
    assert gates.NCCL_TESTS_IMAGE_TAG.endswith("testsv2.18.3")
    assert gates.ALL_REDUCE_PERF == "/opt/nccl-tests/build/all_reduce_perf"


def test_enroot_image() -> None:
    digest = gates.NCCL_TESTS_DIGEST
    assert gates.enroot_image(gates.NCCL_TESTS_IMAGE) == (
        f"public.ecr.aws#hpc-cloud/nccl-tests:{digest}"  # enroot 3.x and 4.x
    )
    assert gates.enroot_image(gates.NCCL_TESTS_IMAGE, digest_with_at=True) == (
        f"public.ecr.aws#hpc-cloud/nccl-tests@{digest}"  # enroot >= 4.0 only
    )
    mirrored = gates.enroot_image(
        gates.test_image("111122223333.dkr.ecr.us-west-2.amazonaws.com/m")
    )
    assert (
        mirrored == f"111122223333.dkr.ecr.us-west-2.amazonaws.com#m/hpc-cloud/nccl-tests:{digest}"
    )
    assert gates.enroot_image("localhost:5000/a/b:1") == "localhost:5000#a/b:1"
    assert gates.enroot_image("nvidia/cuda:13.0") == "nvidia/cuda:13.0"  # Docker Hub: no '#'


def test_the_figures_are_facts_of_the_construct_library_and_the_judging_is_the_tools() -> None:
    """Issue 36: the tables (instance facts, published bus bandwidths, the nccl-tests image) are
    AWS facts, in hyperpod_cdk.facts.gates with their sources; verify only judges by them."""
    from hyperpod_cdk.facts import gates as facts

    assert gates.INSTANCE_FACTS is facts.INSTANCE_FACTS
    assert gates.NCCL_PUBLISHED is facts.NCCL_PUBLISHED
    assert gates.InstanceFacts.__module__ == "hyperpod_cdk.facts.gates"
    assert gates.test_image() == facts.NCCL_TESTS_IMAGE
    assert gates.decide_nccl.__module__ == "hyperpod_ops.verify.gates"
    from hyperpod_ops.verify import slurm

    assert slurm.RDMA_FAMILIES is facts.RDMA_FAMILIES

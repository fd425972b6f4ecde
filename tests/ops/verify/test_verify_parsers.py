"""The readers of nccl-tests, fio, dd and /proc/mounts output, on fixtures written in the
tools' formats (tests/ops/verify/fixtures) and on edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_ops.verify.parsers import (
    parse_dd,
    parse_fio,
    parse_lustre_mounts,
    parse_nccl,
    strip_prefix,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GiB = 1024**3


def fixture(name: str) -> str:
    """A fixture's text."""
    return (FIXTURES / name).read_text()


def test_nccl_good_efa_run() -> None:
    run = parse_nccl(fixture("nccl-efa-p5.txt"))
    assert len(run.rows) == 32  # 8 B to 16 GiB, factor 2
    assert run.rows[0].size_bytes == 8 and run.rows[0].count == 2
    assert run.largest == (16 * GiB, 487.14)
    assert run.busbw_at(2 * GiB) == (16 * GiB, 487.14)  # the largest size at or over 2 GiB
    assert run.transport == "efa"
    assert run.nranks == 16
    assert run.avg_busbw == 112.463
    assert run.wrong_total == 0
    assert run.errors == ()


def test_nccl_socket_fallback() -> None:
    run = parse_nccl(fixture("nccl-socket.txt"))
    assert run.transport == "socket"
    assert run.largest == (16 * GiB, 4.6)
    assert run.wrong_total == 0


def test_nccl_wrong_values_behind_mpirun_tags() -> None:
    run = parse_nccl(fixture("nccl-wrong.txt"))
    assert len(run.rows) == 32
    assert run.wrong_total == 1024 + 2 * 4194300  # "%6g" prints 4194304 as 4.1943e+06
    bad = [row for row in run.rows if row.wrong]
    assert [row.size_bytes for row in bad] == [256 * 1024**2, GiB]
    assert run.transport == "efa"


def test_nccl_crashed_run_has_no_rows_and_its_errors() -> None:
    run = parse_nccl(fixture("nccl-crash.txt"))
    assert run.rows == ()
    assert run.largest is None and run.busbw_at(0) is None
    assert run.avg_busbw is None
    assert any("NCCL WARN NET/OFI Unable to connect" in e for e in run.errors)
    assert any(e.startswith("MPI_ABORT was invoked") for e in run.errors)
    assert any("Test NCCL failure" in e for e in run.errors)
    assert any("Test failure common.cu" in e for e in run.errors)


def test_nccl_srun_labels_interleaved_ranks_and_no_check() -> None:
    run = parse_nccl(fixture("nccl-srun-labels.txt"))
    assert len(run.rows) == 31  # to 8 GiB
    assert all(row.wrong_out is None and row.wrong_in is None for row in run.rows)  # -c 0: N/A
    assert run.wrong_total == 0
    assert run.busbw_at(16 * GiB) is None  # never reached
    size, _ = run.largest or (0, 0.0)
    assert size == 8 * GiB
    assert run.transport == "efa"
    assert run.nranks == 16


@pytest.mark.parametrize("text", ["", "garbage\n\x00\x01 not a table\n", "#\n# Avg bus"])
def test_nccl_empty_or_garbage(text: str) -> None:
    run = parse_nccl(text)
    assert run.rows == () and run.transport == "unknown" and run.nranks is None
    assert run.avg_busbw is None and run.errors == ()


def test_nccl_row_formats_printf_writes() -> None:
    """Exponent figures, CRLF, a missing in-place half and a torn line (another rank wrote into
    it) as they can appear."""
    text = (
        "  17179869184    4294967296     float     sum      -1  1.2e+05  143.1  268.3  0"
        "  1.2e+05  143.0  268.2  0\r\n"
        "        1024           256     float     sum      -1    69.24    0.01    0.03      0\n"
        "     2048   512  float  sum  -1   72.2  0.03  0.05  8: NCCL INFO torn\n"
    )
    run = parse_nccl(text)
    assert [row.size_bytes for row in run.rows] == [16 * GiB, 1024]
    assert run.rows[0].busbw_out == 268.3 and run.rows[0].busbw_in == 268.2
    assert run.rows[1].busbw_in is None and run.rows[1].wrong_in is None


def test_nccl_best_of_out_of_place_and_in_place() -> None:
    text = "  2147483648  536870912  float  sum  -1  9074.5  236.65  443.72  0  9108.5  235.77  450.06  0\n"
    assert parse_nccl(text).busbw_at(2 * GiB) == (2 * GiB, 450.06)


@pytest.mark.parametrize(
    ("lines", "transport"),
    [
        (
            ["NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)"],
            "efa",
        ),
        (["NCCL INFO Using network AWS Libfabric"], "efa"),
        (
            ["NCCL INFO NET/OFI Selected provider is tcp", "NCCL INFO Using network Libfabric"],
            "socket",
        ),
        (
            ["NCCL INFO NET/OFI Selected provider is efa", "NCCL INFO Using network Socket"],
            "socket",
        ),
        (["NCCL INFO NET/Socket : Using [0]ens32:10.1.2.3<0>"], "socket"),
        (["NCCL INFO Using network IB"], "ib"),
        (["NCCL INFO Bootstrap : Using ens32:10.1.2.3<0>"], "unknown"),
    ],
)
def test_nccl_transport(lines: list[str], transport: str) -> None:
    assert parse_nccl("\n".join(lines)).transport == transport


@pytest.mark.parametrize(
    ("line", "stripped"),
    [
        ("0: # Avg", "# Avg"),
        ("12: NCCL INFO x", "NCCL INFO x"),
        ("[1,0]<stdout>:  8  2  float", "  8  2  float"),
        ("[1,15]<stderr>:NCCL WARN", "NCCL WARN"),
        ("        8             2     float", "        8             2     float"),
    ],
)
def test_strip_prefix(line: str, stripped: str) -> None:
    assert strip_prefix(line) == stripped


def test_fio_sums_jobs_and_skips_noise() -> None:
    run = parse_fio(fixture("fio-two-clients.json"))
    assert run.write_mbps == pytest.approx((187245916 + 62754084) / 1e6)
    assert run.read_mbps == pytest.approx((203423040 + 66974720) / 1e6)
    assert run.errors == 5
    assert run.problem is None


def test_fio_old_bw_in_kib_and_write_only() -> None:
    text = (
        '{"jobs": [{"error": 0, "write": {"io_bytes": 10, "bw": 1000}, "read": {"io_bytes": 0}}]}'
    )
    run = parse_fio(text)
    assert run.write_mbps == pytest.approx(1.024)
    assert run.read_mbps is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "fio printed no JSON document"),
        ("fio: pid=0, err=2/file:filesetup.c:174, error=No such file {oops", "fio printed no JSON"),
        ('{"fio version": "fio-3.36"}', "fio's JSON has no jobs"),
    ],
)
def test_fio_without_figures(text: str, problem: str) -> None:
    run = parse_fio(text)
    assert run.write_mbps is None and run.read_mbps is None
    assert run.problem is not None and run.problem.startswith(problem)


def test_dd_si_summary() -> None:
    assert parse_dd(fixture("dd-gnu.txt")) == pytest.approx(2147483648 / 7.31206 / 1e6)


def test_dd_decimal_comma_locale() -> None:
    assert parse_dd(fixture("dd-gnu-slow-gbs.txt")) == pytest.approx(536870912 / 0.412 / 1e6)


@pytest.mark.parametrize(
    ("line", "mbps"),
    [
        ("0 bytes copied, 0 s, 0.0 kB/s", 0.0),
        ("0 bytes copied, 0.0001 s, 0 B/s", 0.0),
        ("1 bytes copied, 0 s, 512 MiB/s", 512 * 1024**2 / 1e6),
        ("1 bytes copied, 0 s, 2.5 GB/s", 2500.0),
        ("1 bytes copied, 0 s, 900 kB/s", 0.9),
    ],
)
def test_dd_units(line: str, mbps: float) -> None:
    assert parse_dd(line) == pytest.approx(mbps)


def test_dd_takes_the_last_summary_and_none_without_one() -> None:
    two = "100 bytes copied, 1 s, 100 B/s\n2000000 bytes (2.0 MB) copied, 1 s, 2.0 MB/s\n"
    assert parse_dd(two) == pytest.approx(2.0)
    assert parse_dd("") is None
    assert parse_dd("dd: failed to open '/fsx/x': Permission denied") is None


def test_lustre_mounts() -> None:
    mounts = parse_lustre_mounts(fixture("mounts-proc.txt"))
    assert [m.path for m in mounts] == ["/fsx", "/data sets", "/scratch"]
    first, failover, multi = mounts
    assert first.source == "10.1.40.17@tcp:/abcdefgh"
    assert (first.dns_name, first.mount_name) == ("10.1.40.17", "abcdefgh")
    assert first.options == ("rw", "relatime", "flock", "lazystatfs", "encrypt")
    assert failover.dns_name == "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"
    assert failover.mount_name == "zyxwvuts"
    assert (multi.dns_name, multi.mount_name) == ("10.1.40.18", "qrstuvwx")


@pytest.mark.parametrize(
    "text", ["", "garbage", "x /fsx lustre rw 0 0", "a@tcp:/b /fsx nfs rw 0 0"]
)
def test_lustre_mounts_none(text: str) -> None:
    assert parse_lustre_mounts(text) == []

"""Readers of what the node-side tools print: nccl-tests, fio, dd and ``/proc/mounts``.

Each parser takes the raw text a node sent back (banners, other ranks' lines and launcher
prefixes included) and returns the figures :mod:`.gates` decides on. None of them raises on odd
input: what could not be read is absent (``None``, no rows), so the decision says so.

Formats, read from the tools' own source:

- nccl-tests 2.18.x (``src/util.cu``, NVIDIA/nccl-tests tag v2.18.3): header lines start with
  ``#``; a result row is ``size count type redop root`` then, out-of-place and in-place, ``time
  algbw busbw #wrong`` (``#wrong`` is ``N/A`` under ``-c 0``; large figures may be printed as
  ``1e+05``); the footer has ``# Avg bus bandwidth    : <value>``. ``-J`` (JSON) exists only from
  v2.18.5, so the text table is what every pinned image prints.
- fio ``--output-format=json``: ``jobs[].read|write.bw_bytes`` (bytes/s) and ``jobs[].error``.
- GNU dd: ``<n> bytes (...) copied, <s> s, <rate> MB/s`` (SI units unless asked otherwise).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Transport = Literal["efa", "socket", "ib", "unknown"]

# Launcher prefixes in front of a rank's line: srun --label "12: ", mpirun
# --tag-output "[1,0]<stdout>:" (also <stderr>).
_PREFIX = re.compile(r"^\s*(?:\d+: ?|\[\d+,\d+\]<std(?:out|err)>:)")
_INT = re.compile(r"-?\d+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AVG_BUSBW = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_RANK_LINE = re.compile(r"#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid")
_NRANKS = re.compile(r"\bnranks\s+(\d+)")
# NCCL's own choice of network ("Using network AWS Libfabric" with aws-ofi-nccl >= 1.9,
# "Libfabric" before, "Socket", "IB").
_USING_NETWORK = re.compile(r"Using network\s+(.+?)\s*$")
# aws-ofi-nccl: "NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)"
_OFI_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is\s+([A-Za-z0-9_;-]+)")
# Lines that say the run failed (nccl-tests common.h/common.cu, NCCL, Open MPI, Slurm).
_ERROR_MARKS = (
    "NCCL WARN",
    "Test failure",
    "Test NCCL failure",
    "Test CUDA failure",
    "Test timeout",
    "MPI_ABORT",
    "# error:",
    "srun: error:",
)


@dataclass(frozen=True)
class NcclRow:
    """One row of the nccl-tests table (bus bandwidths in GB/s, 10^9 bytes/s)."""

    size_bytes: int
    count: int
    busbw_out: float
    busbw_in: float | None
    wrong_out: int | None
    wrong_in: int | None

    @property
    def best_busbw(self) -> float:
        """The better of the out-of-place and in-place bus bandwidths."""
        return max(self.busbw_out, self.busbw_in if self.busbw_in is not None else 0.0)

    @property
    def wrong(self) -> int:
        """Wrong values in this row (0 when nccl-tests did not check: ``N/A``)."""
        return (self.wrong_out or 0) + (self.wrong_in or 0)


@dataclass(frozen=True)
class NcclRun:
    """What one ``all_reduce_perf`` run printed.

    :param rows: the result rows, in the order printed.
    :param avg_busbw: the footer's ``# Avg bus bandwidth`` (None when the run stopped before it).
    :param transport: the network NCCL used between nodes, from its INFO lines.
    :param nranks: the ranks taking part (None when not printed).
    :param errors: the lines that say the run failed, launcher prefixes removed.
    """

    rows: tuple[NcclRow, ...]
    avg_busbw: float | None
    transport: Transport
    nranks: int | None
    errors: tuple[str, ...]

    @property
    def wrong_total(self) -> int:
        """Wrong values over all rows, out-of-place and in-place."""
        return sum(row.wrong for row in self.rows)

    def busbw_at(self, min_bytes: int) -> tuple[int, float] | None:
        """``(size, best bus bandwidth)`` at the largest size of at least ``min_bytes``; None when
        the run never reached ``min_bytes``. A size printed twice (two ranks) counts its best."""
        sizes = [row.size_bytes for row in self.rows if row.size_bytes >= min_bytes]
        if not sizes:
            return None
        size = max(sizes)
        return size, max(row.best_busbw for row in self.rows if row.size_bytes == size)

    @property
    def largest(self) -> tuple[int, float] | None:
        """``(size, best bus bandwidth)`` at the largest size run; None when there is no row."""
        return self.busbw_at(0) if self.rows else None


def strip_prefix(line: str) -> str:
    """``line`` without an srun ``--label`` or mpirun ``--tag-output`` prefix (and trailing CR)."""
    return _PREFIX.sub("", line.rstrip("\r\n"), count=1).rstrip("\r")


def parse_nccl(text: str) -> NcclRun:
    """The rows, footer, transport and errors of nccl-tests output (``NCCL_DEBUG=INFO``); lines
    of several ranks may be interleaved and carry srun or mpirun prefixes."""
    lines = [strip_prefix(line) for line in text.splitlines()]
    rows = tuple(row for row in (_nccl_row(line) for line in lines) if row is not None)
    avg = [float(m.group(1)) for m in map(_AVG_BUSBW.search, lines) if m and _is_float(m.group(1))]
    return NcclRun(
        rows=rows,
        avg_busbw=avg[-1] if avg else None,
        transport=_transport(lines),
        nranks=_nranks(lines),
        errors=tuple(dict.fromkeys(line.strip() for line in lines if _is_error(line))),
    )


def _nccl_row(line: str) -> NcclRow | None:
    """A result row, or None for any other line (headers, INFO lines, fragments)."""
    if line.lstrip().startswith("#"):
        return None
    fields = line.split()
    if len(fields) < 9 or not all(_INT.fullmatch(fields[i]) for i in (0, 1, 4)):
        return None
    if not (_IDENT.fullmatch(fields[2]) and _IDENT.fullmatch(fields[3])):
        return None
    out = _half(fields[5:9])
    if out is None:
        return None
    in_place = _half(fields[9:13]) if len(fields) >= 13 else None
    return NcclRow(
        size_bytes=int(fields[0]),
        count=int(fields[1]),
        busbw_out=out[0],
        busbw_in=in_place[0] if in_place else None,
        wrong_out=out[1],
        wrong_in=in_place[1] if in_place else None,
    )


def _half(fields: list[str]) -> tuple[float, int | None] | None:
    """``(busbw, #wrong)`` from ``time algbw busbw #wrong``; None when they are not numbers."""
    time, algbw, busbw, wrong = fields
    if not all(_is_float(f) for f in (time, algbw, busbw)):
        return None
    if wrong == "N/A":
        return float(busbw), None
    if not _is_float(wrong):
        return None
    return float(busbw), int(float(wrong))


def _is_float(text: str) -> bool:
    """True when ``text`` is a finite number as printf writes it (``12.5``, ``1e+05``)."""
    try:
        value = float(text)
    except ValueError:
        return False
    return value == value and value not in (float("inf"), float("-inf"))


def _transport(lines: list[str]) -> Transport:
    """The network NCCL used: its ``Using network`` choice first, then aws-ofi-nccl's provider,
    then the transports' own INFO tags."""
    networks = [m.group(1).lower() for m in map(_USING_NETWORK.search, lines) if m]
    providers = [m.group(1).lower() for m in map(_OFI_PROVIDER.search, lines) if m]
    if any(net == "socket" for net in networks):
        return "socket"
    if any(net == "ib" for net in networks):
        return "ib"
    if providers:
        # FI_PROVIDER=tcp or sockets under the plugin is a socket transport in all but name.
        return "efa" if all(p.startswith("efa") for p in providers) else "socket"
    if any("libfabric" in net for net in networks):
        return "efa"
    if any("NET/Socket" in line for line in lines):
        return "socket"
    if any("NET/IB" in line for line in lines):
        return "ib"
    return "unknown"


def _nranks(lines: list[str]) -> int | None:
    """The ranks nccl-tests listed (``#  Rank  3 Group ...``), else NCCL's ``nranks N``."""
    ranks = {int(m.group(1)) for m in map(_RANK_LINE.search, lines) if m}
    if ranks:
        return len(ranks)
    counts = [int(m.group(1)) for m in map(_NRANKS.search, lines) if m]
    return max(counts) if counts else None


def _is_error(line: str) -> bool:
    """True for a line that says the run failed."""
    if "Out of bounds values" in line:
        return "FAILED" in line
    return any(mark in line for mark in _ERROR_MARKS)


@dataclass(frozen=True)
class FioRun:
    """fio's throughput, summed over its jobs.

    :param write_mbps: MB/s (10^6 bytes/s) written; None when no job wrote.
    :param read_mbps: MB/s read; None when no job read.
    :param errors: the sum of the jobs' ``error``.
    :param problem: why nothing could be read (no JSON document), else None.
    """

    write_mbps: float | None
    read_mbps: float | None
    errors: int
    problem: str | None = None


def parse_fio(text: str) -> FioRun:
    """fio's ``--output-format=json`` document; noise before its first ``{`` is skipped."""
    document = _first_json_object(text)
    if document is None:
        return FioRun(None, None, 0, "fio printed no JSON document")
    jobs = [job for job in document.get("jobs", []) if isinstance(job, dict)]
    if not jobs:
        return FioRun(None, None, 0, "fio's JSON has no jobs")
    return FioRun(
        write_mbps=_fio_mbps(jobs, "write"),
        read_mbps=_fio_mbps(jobs, "read"),
        errors=sum(int(job.get("error", 0) or 0) for job in jobs),
    )


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that decodes, skipping whatever comes before it."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def _fio_mbps(jobs: list[dict[str, Any]], direction: str) -> float | None:
    """MB/s in ``direction`` summed over the jobs that moved data that way; None if none did."""
    total = 0.0
    moved = False
    for job in jobs:
        stats = job.get(direction)
        if not isinstance(stats, dict) or not stats.get("io_bytes"):
            continue
        moved = True
        if "bw_bytes" in stats:
            total += float(stats["bw_bytes"])
        else:  # older fio: "bw" in KiB/s
            total += float(stats.get("bw", 0)) * 1024
    return total / 1e6 if moved else None


# GNU dd's summary: "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2.5 s, 429 MB/s"; some
# locales print a decimal comma ("2,5 s").
_DD_SUMMARY = re.compile(
    r"(\d+) bytes\b.*?copied,\s*([0-9]+(?:[.,][0-9]+)?(?:e[+-]?\d+)?) s,\s*"
    r"([0-9]+(?:[.,][0-9]+)?) ([kKMGTP]?i?B)/s"
)
_DD_UNITS = {
    "B": 1.0,
    "kB": 1e3,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "PB": 1e15,
    "KiB": 1024.0,
    "MiB": 1024.0**2,
    "GiB": 1024.0**3,
    "TiB": 1024.0**4,
    "PiB": 1024.0**5,
}


def parse_dd(text: str) -> float | None:
    """MB/s (10^6 bytes/s) from GNU dd's last summary line; None when there is none. The figure
    is bytes / seconds when both are printed (dd rounds its rate to 2-3 digits)."""
    matches = list(_DD_SUMMARY.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    size = int(last.group(1))
    seconds = float(last.group(2).replace(",", "."))
    if seconds > 0 and size > 0:
        return size / seconds / 1e6
    unit = _DD_UNITS.get(last.group(4))
    if unit is None:
        return None
    return float(last.group(3).replace(",", ".")) * unit / 1e6


@dataclass(frozen=True)
class LustreMount:
    """A Lustre file system in ``/proc/mounts``.

    :param source: as mounted, ``fs-0123.fsx.us-west-2.amazonaws.com@tcp:/abcdefgh``.
    :param dns_name: the host of the first NID (a DNS name or an IP address).
    :param mount_name: the Lustre file system name (FSx's MountName), without a sub-directory.
    :param path: where it is mounted.
    :param options: the mount options.
    """

    source: str
    dns_name: str
    mount_name: str
    path: str
    options: tuple[str, ...]


def parse_lustre_mounts(text: str) -> list[LustreMount]:
    """The ``lustre`` lines of ``/proc/mounts``; NIDs may be ``a@tcp:b@tcp:/name`` (failover) or
    ``a@tcp,b@tcp:/name``; other lines and malformed ones are left out."""
    mounts = []
    for line in text.splitlines():
        fields = strip_prefix(line).split()
        if len(fields) < 4 or fields[2] != "lustre" or ":/" not in fields[0]:
            continue
        nids, _, name = fields[0].partition(":/")
        first_nid = nids.split(":")[0].split(",")[0]
        mounts.append(
            LustreMount(
                source=fields[0],
                dns_name=first_nid.split("@")[0],
                mount_name=name.split("/")[0],
                path=_unescape_mount_path(fields[1]),
                options=tuple(o for o in fields[3].split(",") if o),
            )
        )
    return mounts


def _unescape_mount_path(path: str) -> str:
    """``/proc/mounts`` writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)

"""What the nccl-tests parser reads: runs, rows, NVLS facts, and the events a stream yields."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class NcclPerf:
    """One half (out-of-place or in-place) of a table row.

    Attributes:
        time_us: time per iteration in microseconds.
        algbw: algorithm bandwidth, GB/s.
        busbw: bus bandwidth, GB/s.
        wrong: the ``#wrong`` count; None when printed ``N/A`` (``-c 0``) or for the old ``error`` column.
        max_error: the old builds' ``error`` column (a relative error such as ``2e-07``).
    """

    time_us: float | None = None
    algbw: float | None = None
    busbw: float | None = None
    wrong: int | None = None
    max_error: float | None = None


@dataclass(frozen=True, slots=True)
class NcclRow:
    """One row of the result table (one message size)."""

    size: int
    count: int
    type: str
    redop: str
    root: int | None
    oop: NcclPerf
    ip: NcclPerf
    timestamp: str | None = None


@dataclass(frozen=True, slots=True)
class NvlsInfo:
    """What an ``NCCL_DEBUG=INFO`` log said about NVLink SHARP.

    Attributes:
        channels: the largest ``N nvls channels`` seen (None when never printed).
        multicast_available: False if any device said ``not available``, True if all said available.
        used: an NVLS comm / ``Connected NVLS`` / N>0 nvls channels / ``NCCL_ALGO`` NVLS was seen.
        bind_error: the CUDA error number of a ``Failed to bind NVLink SHARP`` line (802, 401, ...), of a
            ``Cuda failure 802`` (CUDA's "system not yet initialized": the fabric is not ready), or of
            NVSHMEM's failed ``cuMemMap`` of multicast memory.
        bind_failed: multicast setup failed, by any client's words: the lines above, NCCL's NVLS transport
            failing a CUDA call (its older form carries no number), NVSHMEM's multicast group mapping.
    """

    channels: int | None = None
    multicast_available: bool | None = None
    used: bool = False
    bind_error: int | None = None
    bind_failed: bool = False


@dataclass(frozen=True, slots=True)
class NcclRun:
    """Everything read from one nccl-tests run (possibly still running or cut short).

    Attributes:
        test: ``all_reduce_perf``, ...; version: the nccl-tests version (``2.19.6``).
        ngpus: GPUs taking part (threads x GPUs per thread, or the number of rank lines if larger).
        devices: the ``# Using devices`` rank lines, whitespace collapsed.
        completed: the run concluded (footer seen) and nothing failed.
        errors: failure lines (trailers, NVLS bind failure, out-of-bounds FAILED).
        warns: every ``NCCL WARN`` line.
        exit_hint: one sentence saying why the run failed or is incomplete (None when it passed).
        nccl_version: the NCCL library version (``2.28.9``) when printed.
        test_output: some line of nccl-tests' own was seen (its header, a table row or header, its footer); without
            one the text is an NCCL client's log (a job's ``NCCL_DEBUG=INFO`` lines), not a test that ended early.
    """

    test: str | None = None
    version: str | None = None
    ngpus: int | None = None
    devices: tuple[str, ...] = ()
    rows: tuple[NcclRow, ...] = ()
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    completed: bool = False
    errors: tuple[str, ...] = ()
    warns: tuple[str, ...] = ()
    nvls: NvlsInfo = field(default_factory=NvlsInfo)
    exit_hint: str | None = None
    nccl_version: str | None = None
    test_output: bool = False


@dataclass(frozen=True, slots=True)
class RowEvent:
    """A table row arrived."""

    row: NcclRow


@dataclass(frozen=True, slots=True)
class WarnEvent:
    """An ``NCCL WARN`` line."""

    line: str


@dataclass(frozen=True, slots=True)
class InfoEvent:
    """An ``NCCL INFO`` line."""

    line: str


@dataclass(frozen=True, slots=True)
class FooterEvent:
    """A footer line: kind ``out_of_bounds`` (int), ``avg_busbw`` (float) or ``concluded`` (test name)."""

    kind: str
    value: int | float | str | None


@dataclass(frozen=True, slots=True)
class FailureEvent:
    """A line that means the run failed (trailer, CUDA/NCCL failure, NVLS bind failure)."""

    line: str


@dataclass(frozen=True, slots=True)
class HeaderEvent:
    """A header fact: kind ``version``, ``test``, ``ngpus``, ``device`` or ``columns``."""

    kind: str
    value: str | int | tuple[str, ...] | None


NcclEvent = RowEvent | WarnEvent | InfoEvent | FooterEvent | FailureEvent | HeaderEvent

"""nccl-tests text output (``all_reduce_perf`` and friends), parsed incrementally line by line.

The console streams a smoke test and wants each table row as soon as it is printed, so the parser
is a small state machine fed one line at a time (:class:`NcclStreamParser`); :func:`parse_nccl_text`
feeds a whole capture through the same machine. The table's columns are read from its header line
because they changed between nccl-tests releases (``root`` appeared, ``error`` became ``#wrong``,
``-S 1`` adds a ``timestamp``); when the header is missing the field count decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed, number
from nvls_tui.parsers.nccl_types import (
    FailureEvent,
    FooterEvent,
    HeaderEvent,
    InfoEvent,
    NcclEvent,
    NcclPerf,
    NcclRow,
    NcclRun,
    NvlsInfo,
    RowEvent,
    WarnEvent,
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Prefixes that loggers put before nccl-tests' own text: `[2026-06-23 15:45:07]`, mpirun
# --tag-output `[1,0]<stdout>:`, kubectl --timestamps `2026-06-23T15:45:07.1Z`.
_PREFIX = re.compile(
    r"^(?:\[[^\]]{0,80}\](?:<std(?:out|err)>:)?\s*|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?\s+)+"
)
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_LIBRARY = re.compile(r"nccl-library=(\d{1,9})")
_STARTING = re.compile(r"^#\s*Collective test starting\s*:\s*(\S+)")
_CONCLUDED = re.compile(r"^#\s*Collective test concluded\s*:?\s*(\S*)")
# (A paste may have lost the header's "#": " nThread 1 nGpus 1 ...", "  Rank  0 Group  0 ...".)
_NTHREAD = re.compile(r"^#?\s*nThread\s+(\d{1,6})\s+nGpus\s+(\d{1,6})")
_RANK = re.compile(r"^#?\s*Rank\s+\d+\b")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\S+)\s*(\S*)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_NCCL_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+\S*)")
_BIND = re.compile(
    r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory(?: of size \d+)?\s*:\s*"
    r"CUDA error (\d{1,6})(?: '([^']*)')?"
)
# Other clients' words for a multicast setup that failed (tests/unit/test_multicast_clients.py): CUDA's 802 in
# NCCL's "Last error:" trailer (inside a PyTorch traceback), NCCL's NVLS transport failing a CUDA call (its
# older form has no number), NVSHMEM's cuMemMap of multicast memory and its multicast group mapping.
_CUDA_802 = re.compile(r"Cuda failure 802(?: '([^']*)')?|Cuda failure \d* ?'system not yet initialized'")
_NVLS_CUDA = re.compile(r"(transport/nvls\.cc:\d+) NCCL WARN Cuda failure (?:\d+ )?'([^']*)'")
_NVSHMEM_MAP = re.compile(r"non-zero status: (\d{1,6}) cuMemMap failed")
_NVSHMEM_GROUP = re.compile(r"non-zero status: \d{1,6} (?:Mapping mem size \d+ to MC group \d+ failed"
                            r"|Mapping multicast groups? [^\n]{0,120}?\bfailed)")
_TEST_NCCL = re.compile(r"Test NCCL failure\s+\S+\s+'([^']*)'")
_CUDA_FAIL = re.compile(r"(?:Test CUDA failure|Cuda failure)\s+(?:\S+\s+)?'([^']*)'")
_CUDA_FAIL_BARE = re.compile(r"Test CUDA failure|Cuda failure|\bpid \d+: Test failure\b|Test failure \S+:\d+")
_NCCL_ERROR = re.compile(
    r"\bNCCL error\b|unhandled cuda error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError"
    r"|ncclInvalidUsage|ncclRemoteError"
)
_MC_AVAILABLE = re.compile(r"NVLS multicast support is (not )?available")
_NVLS_CHANNELS = re.compile(r"\b(\d{1,6}) nvls channels")
_NVLS_USED = re.compile(r"NVLS comm 0x|Connected NVLS")
_ALGO = re.compile(r"NCCL_ALGO set (?:by environment )?to (\S+)")
_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The header's own lines where a paste lost their "#": nThread, "Using devices", a device's Rank line, the column
# header (``size count type redop ...``).
_HEADER_WITHOUT_HASH = re.compile(r"nThread\s+\d+\s+nGpus\s+\d+|Using devices\s*$|Rank\s+\d+\s+(?:Group|Pid|on)\b"
                                  r"|(?:size|bytes)\s+(?:count|N)\s+type\s+(?:redop|op)\b")

# Field-count fallbacks when no column header was seen: lead columns, then 2 x 4 perf columns.
_LEAD_BY_COUNT = {
    13: ("size", "count", "type", "redop", "root"),
    12: ("size", "count", "type", "redop"),
    11: ("size", "count", "type"),
}
_GROUP = ("time", "algbw", "busbw", "#wrong")


@dataclass(frozen=True, slots=True)
class _Columns:
    """The table layout: lead columns, the perf group (repeated twice) and trailing columns."""

    lead: tuple[str, ...]
    group: tuple[str, ...] = _GROUP
    tail: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return len(self.lead) + 2 * len(self.group)


# The first builds' column names (``bytes N type op time algbw busbw res``) in today's terms.
_OLD_NAMES = {"bytes": "size", "n": "count", "op": "redop", "res": "error"}


def _columns_from_header(tokens: list[str]) -> _Columns | None:
    """Column layout from a header line's tokens (``size count type redop root time ...``; the first builds'
    ``bytes N type op ... res`` too)."""
    names = [_OLD_NAMES.get(t.lower(), t.lower()) for t in tokens]
    if "time" not in names or "size" not in names:
        return None
    first = names.index("time")
    try:
        second = names.index("time", first + 1)
    except ValueError:
        return None
    group = tuple(names[first:second])
    lead = tuple(names[:first])
    tail = tuple(names[second + len(group):])
    if "count" not in lead or lead[0] != "size" or names[second:second + len(group)] != list(group):
        return None
    return _Columns(lead=lead, group=group, tail=tail)


def _int(text: str) -> int | None:
    value = number(text)
    return value if isinstance(value, int) else None


def _float(text: str) -> float | None | bool:
    """A perf value: float, None for ``N/A``/NaN/inf, False for garbage (the row is then rejected)."""
    value = number(text)
    if value is None:
        return None if text.upper() == "N/A" or text.lower() in ("nan", "-nan", "inf", "-inf") else False
    try:
        return float(value)
    except OverflowError:  # an integer past 1e308 (garbled output): not a measurement
        return None


def _perf(names: tuple[str, ...], values: list[str]) -> NcclPerf | None:
    got: dict[str, float | int | None] = {}
    for name, text in zip(names, values, strict=False):  # a short row leaves the rest unset
        if name in ("#wrong", "wrong"):
            if text.upper() == "N/A":
                got["wrong"] = None
                continue
            wrong = number(text)
            if wrong is None:
                return None
            got["wrong"] = int(wrong) if wrong == int(wrong) else None
        elif name == "error":
            err = _float(text)
            if err is False:
                return None
            got["max_error"] = err
        elif name in ("time", "algbw", "busbw"):
            val = _float(text)
            if val is False:
                return None
            got["time_us" if name == "time" else name] = val
    return NcclPerf(**got)  # type: ignore[arg-type]


def parse_row(tokens: list[str], columns: _Columns | None) -> NcclRow | None:
    """One table row from its whitespace-separated fields, or None when it is not a valid row."""
    if columns is not None and len(tokens) < columns.width:
        return None  # a cut-off row: guessing another layout would misread its numbers
    if columns is None:
        lead = _LEAD_BY_COUNT.get(len(tokens)) or (_LEAD_BY_COUNT[13] if len(tokens) > 13 else None)
        if lead is None:
            return None
        columns = _Columns(lead=lead, tail=("timestamp",) if len(tokens) > 13 else ())
    cells = dict(zip(columns.lead, tokens, strict=False))
    size, count = _int(cells.get("size", "")), _int(cells.get("count", ""))
    dtype, redop = cells.get("type", "?"), cells.get("redop", "none")
    if size is None or count is None or size < 0 or count < 0:
        return None
    if not _WORD.match(dtype) or not _WORD.match(redop):
        return None
    root = None
    if "root" in cells:
        root = _int(cells["root"])
        if root is None:
            return None
    n_lead, n_group = len(columns.lead), len(columns.group)
    oop = _perf(columns.group, tokens[n_lead:n_lead + n_group])
    ip = _perf(columns.group, tokens[n_lead + n_group:n_lead + 2 * n_group])
    if oop is None or ip is None:
        return None
    rest = tokens[columns.width:]
    timestamp = " ".join(rest) if rest else None
    return NcclRow(size, count, dtype, redop, root, oop, ip, timestamp)


class NcclStreamParser:
    """Reads nccl-tests output one line at a time; :meth:`feed` returns a RowEvent as each row arrives.

    Call :meth:`finish` at the end of the output; :attr:`run` is the run as read so far.
    """

    def __init__(self) -> None:
        self._test: str | None = None
        self._version: str | None = None
        self._nccl_version: str | None = None
        self._threads_x_gpus: int | None = None
        self._devices: list[str] = []
        self._columns: _Columns | None = None
        self._rows: list[NcclRow] = []
        self._avg: float | None = None
        self._oob: int | None = None
        self._concluded = False
        self._errors: list[str] = []
        self._warns: list[str] = []
        self._channels: int | None = None
        self._mc_yes = False
        self._mc_no = False
        self._nvls_used = False
        self._bind_error: int | None = None
        self._bind_failed = False
        self._hint: str | None = None
        self._finished = False
        self._warnings: list[str] = []

    @property
    def warnings(self) -> tuple[str, ...]:
        """Lines that looked like table rows but could not be read, and similar notes."""
        return tuple(self._warnings)

    @property
    def run(self) -> NcclRun:
        """The run as read so far (a new immutable object on every access)."""
        ngpus = self._threads_x_gpus
        if self._devices and (ngpus is None or len(self._devices) > ngpus):
            ngpus = len(self._devices)
        # The out-of-bounds line is printed once, after the last row: a tail cut after it still saw the end.
        seen_end = self._concluded or self._avg is not None or self._oob is not None
        completed = seen_end and not self._errors
        hint = self._hint
        if hint is None and self._finished and not seen_end:
            hint = "the output ended before the test concluded" if self._rows or self._columns else None
            hint = hint or "no nccl-tests result table was found"
        return NcclRun(
            test=self._test,
            version=self._version,
            ngpus=ngpus,
            devices=tuple(self._devices),
            rows=tuple(self._rows),
            avg_busbw=self._avg,
            out_of_bounds=self._oob,
            completed=completed,
            errors=tuple(self._errors),
            warns=tuple(self._warns),
            nvls=NvlsInfo(
                channels=self._channels,
                multicast_available=False if self._mc_no else (True if self._mc_yes else None),
                used=self._nvls_used,
                bind_error=self._bind_error,
                bind_failed=self._bind_failed,
            ),
            exit_hint=hint,
            nccl_version=self._nccl_version,
        )

    def finish(self) -> NcclRun:
        """Mark the end of the output and return the final run."""
        self._finished = True
        return self.run

    def feed(self, line: str) -> list[NcclEvent]:
        """Read one line (a trailing newline is fine; embedded newlines are split) and return its events."""
        if "\n" in line.rstrip("\r\n"):
            events: list[NcclEvent] = []
            for part in line.splitlines():
                events.extend(self._feed_one(part))
            return events
        return self._feed_one(line)

    # -- one line ------------------------------------------------------------------------------

    def _feed_one(self, raw: str) -> list[NcclEvent]:
        line = _ANSI.sub("", raw).replace("\r", "").strip()
        if not line:
            return []
        body = _PREFIX.sub("", line)
        events: list[NcclEvent] = []
        if body.startswith("#") or _HEADER_WITHOUT_HASH.match(body):
            events.extend(self._comment(body))
            return events
        if "NCCL WARN" in line:
            self._warns.append(line)
            events.append(WarnEvent(line))
        elif "NCCL INFO" in line:
            events.append(InfoEvent(line))
        else:
            tokens = body.split()
            if len(tokens) >= 2 and tokens[0].isdecimal() and tokens[1].isdecimal():
                row = parse_row(tokens, self._columns)
                if row is not None:
                    self._rows.append(row)
                    return [RowEvent(row)]
                self._warnings.append(f"could not read the table row: {line[:200]}")
        self._facts(line)
        failure = self._failure(line)
        if failure:
            events.append(FailureEvent(line))
        return events

    def _comment(self, body: str) -> list[NcclEvent]:
        if m := _OOB.match(body):
            value = _int(m.group(1))
            self._oob = value
            if (value is not None and value > 0) or m.group(2).upper().startswith("FAIL"):
                self._errors.append(body)
                self._hint = self._hint or f"{m.group(1)} out-of-bounds values (wrong results)"
                return [FooterEvent("out_of_bounds", value), FailureEvent(body)]
            return [FooterEvent("out_of_bounds", value)]
        if m := _AVG.match(body):
            avg = number(m.group(1))
            self._avg = float(avg) if avg is not None else None
            return [FooterEvent("avg_busbw", self._avg)]
        if m := _CONCLUDED.match(body):
            self._concluded = True
            self._test = self._test or (m.group(1) or None)
            return [FooterEvent("concluded", m.group(1) or None)]
        if m := _STARTING.match(body):
            self._test = m.group(1)
            return [HeaderEvent("test", self._test)]
        if m := _VERSION.match(body):
            self._version = m.group(1)
            if lib := _LIBRARY.search(body):
                self._nccl_version = self._nccl_version or version_from_code(int(lib.group(1)))
            return [HeaderEvent("version", self._version)]
        if m := _NTHREAD.match(body):
            self._threads_x_gpus = int(m.group(1)) * int(m.group(2))
            return [HeaderEvent("ngpus", self._threads_x_gpus)]
        if _RANK.match(body):
            device = " ".join(body.lstrip("#").split())
            self._devices.append(device)
            return [HeaderEvent("device", device)]
        tokens = body.lstrip("#").split()
        if ("size" in tokens or "bytes" in tokens) and "time" in tokens:
            columns = _columns_from_header(tokens)
            if columns is None:
                self._warnings.append(f"unrecognised column header: {body[:200]}")
                return []
            self._columns = columns
            return [HeaderEvent("columns", columns.lead + columns.group + columns.group + columns.tail)]
        return []

    def _facts(self, line: str) -> None:
        """NVLS markers and the NCCL version, wherever they appear."""
        if m := _NCCL_VERSION.search(line):
            self._nccl_version = m.group(1)
        if m := _MC_AVAILABLE.search(line):
            if m.group(1):
                self._mc_no = True
            else:
                self._mc_yes = True
        if m := _NVLS_CHANNELS.search(line):
            n = int(m.group(1))
            self._channels = n if self._channels is None else max(self._channels, n)
            self._nvls_used = self._nvls_used or n > 0
        if _NVLS_USED.search(line):
            self._nvls_used = True
        if (m := _ALGO.search(line)) and not m.group(1).startswith("^") and "nvls" in m.group(1).lower():
            self._nvls_used = True

    def _failure(self, line: str) -> bool:
        """Record ``line`` as an error when it says the run failed; True if it did."""
        if m := _BIND.search(line):
            self._bind_error, self._bind_failed = int(m.group(1)), True
            reason = f" '{m.group(2)}'" if m.group(2) is not None else ""
            self._hint = (
                f"NVLS multicast bind failed: CUDA error {m.group(1)}{reason}"
                " (a Fabric Manager or NVSwitch fault)"
            )
        elif _CUDA_802.search(line):
            self._bind_error, self._bind_failed = 802, True
            self._hint = ("NVLS multicast bind failed: CUDA error 802 'system not yet initialized'"
                          " (a Fabric Manager or NVSwitch fault)")
        elif m := _NVLS_CUDA.search(line):
            self._bind_failed = True
            self._hint = self._hint or f"NVLS multicast setup failed: Cuda failure '{m.group(2)}' at {m.group(1)}"
        elif m := _NVSHMEM_MAP.search(line):
            self._bind_error, self._bind_failed = int(m.group(1)), True
            self._hint = f"NVLS multicast bind failed: NVSHMEM's cuMemMap returned CUDA error {m.group(1)}"
        elif _NVSHMEM_GROUP.search(line):
            self._bind_failed = True
            self._hint = self._hint or "NVLS multicast setup failed: NVSHMEM could not map its multicast group"
        elif m := _TEST_NCCL.search(line):
            # nccl-tests appends " / " and the remote error (often empty) to the message.
            self._hint = self._hint or f"NCCL failure: {m.group(1).strip().removesuffix('/').strip()}"
        elif m := _CUDA_FAIL.search(line):
            self._hint = self._hint or f"CUDA failure: {m.group(1)}"
        elif _CUDA_FAIL_BARE.search(line) or _NCCL_ERROR.search(line):
            self._hint = self._hint or "the test failed"
        else:
            return False
        self._errors.append(line)
        return True


def version_from_code(code: int) -> str:
    """NCCL's version code (``22809``) as text (``2.28.9``); codes before 2.9 were ``major*1000+minor*100+patch``."""
    if code >= 20900:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def parse_nccl_text(text: str) -> Parsed[NcclRun]:
    """Parse a whole nccl-tests capture (stdout, possibly with ``NCCL_DEBUG=INFO`` lines mixed in)."""
    parser = NcclStreamParser()
    for line in text.splitlines():
        parser.feed(line)
    run = parser.finish()
    warnings = list(parser.warnings)
    if not run.rows and not run.errors:
        warnings.append("no nccl-tests result rows were found")
    return Parsed(run, tuple(warnings))


__all__ = [
    "FailureEvent",
    "FooterEvent",
    "HeaderEvent",
    "InfoEvent",
    "NcclEvent",
    "NcclPerf",
    "NcclRow",
    "NcclRun",
    "NcclStreamParser",
    "NvlsInfo",
    "RowEvent",
    "WarnEvent",
    "parse_nccl_text",
    "parse_row",
    "version_from_code",
]

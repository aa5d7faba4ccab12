"""Kernel log lines that matter for the NVLink fabric: ``NV_ERR_*`` codes, Xid and NVSwitch SXid.

Accepts ``journalctl -k`` (short and short-iso), ``dmesg`` with or without ``[ seconds]``, ``dmesg -T``
and raw ``/dev/kmsg`` records. The incident's decisive line has no code at all ("NVLink fabric state
cached by the driver is out of sync"), so some codes are recognised by their words, and the two fabric
statuses by their number too (``(0x00000087)``, ``(0x0000007a)``): the name the driver prints beside it,
and the source line it cites, vary between releases.

A kernel message may span several lines: one record with embedded newlines (``dmesg`` and ``journalctl``
indent the lines after the first), or, in older drivers, one ``printk`` per line ("NVRM: The NVIDIA GPU
0000:b3:00.0" / "NVRM: (PCI ID: ...) installed in this system has" / "NVRM: fallen off the bus and is not
responding to commands."). Both are joined into one line before they are matched, so a GPU that fell off
the bus is seen although no single line names both the GPU and the words, and there is no ``Xid``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from nvls_tui import catalogues
from nvls_tui.model import KernelEvent
from nvls_tui.parsers.base import Parsed, literals_pattern
from nvls_tui.parsers.driver_failures import SCAN as _FAILURE_WORDS
from nvls_tui.parsers.driver_failures import driver_failure
from nvls_tui.parsers.unread import ANCHORS as _UNREAD_ANCHORS
from nvls_tui.parsers.unread import nvidia_error_line

OUT_OF_SYNC = "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"
FM_NOT_PRESENT = "NV_ERR_FABRIC_MANAGER_NOT_PRESENT"
# A GPU the driver says has fallen off the bus, in its words without an Xid (an Xid 79 line stays XID 79).
FELL_OFF_BUS = "GPU_FELL_OFF_BUS"
# The driver's words of an NVLink failure without an Xid or a status ("knvlinkDiscoverPostRxDetLinks_GH100:
# Getting peer0's postRxDetLinkMask failed!").
NVLINK_FAILED = "NVLINK_FAILED"
# "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0xffff:1863)": the driver could not bring a GPU up.
GPU_INIT_FAILED = "GPU_INIT_FAILED"

_TIMESTAMPS = (
    # journalctl short / short-precise: "Nov 30 08:00:01 host kernel: ..."
    re.compile(r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?)\s+\S+\s+kernel:\s?"),
    # journalctl short-iso(-precise): "2026-11-30T08:00:01+0000 host kernel: ..."
    re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+\S+\s+kernel:\s?"),
    # dmesg -T: "[Mon Nov 30 08:00:01 2026] ..."
    re.compile(r"^\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?"),
    # dmesg: "[   25.948274] ..."
    re.compile(r"^\[\s*(?P<ts>\d+\.\d+)\]\s?"),
    # /dev/kmsg: "6,1234,25948274,-;NVRM: ..." (microseconds since boot)
    re.compile(r"^\d+,\d+,(?P<ts>\d+),[^;]*;"),
)
_OUT_OF_SYNC_WORDS = re.compile(r"fabric state cached by the driver is out of sync", re.IGNORECASE)
_FM_NOT_LOADED_WORDS = re.compile(r"Fabric Manager is not loaded", re.IGNORECASE)
_XID = re.compile(r"\bXid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\):\s*(?P<xid>\d{1,9})")
_SXID = re.compile(r"\bSXid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\):\s*(?P<xid>\d{1,9})")
_NV_ERR = re.compile(r"\bNV_ERR_[A-Z0-9_]+")
# The driver's status print: "[NV_ERR_NAME] (0x%08x)". By number alone only in an NVRM line.
# The two numbers are the driver's (catalogues/nv_status.csv, from nvstatuscodes.h): 0x87 and 0x7a.
_NUMBER = {name: f"0x{status.code:08x}" for name in (OUT_OF_SYNC, FM_NOT_PRESENT)
           if (status := catalogues.nv_status(name)) is not None}
_OUT_OF_SYNC_CODE = re.compile(rf"\({_NUMBER[OUT_OF_SYNC]}\)", re.IGNORECASE)
_FM_NOT_PRESENT_CODE = re.compile(rf"\({_NUMBER[FM_NOT_PRESENT]}\)", re.IGNORECASE)
_NUMBERS = "|".join(_NUMBER.values())
# The same numbers with their hex digits in either case (for the case-sensitive scan below).
_NUMBERS_ANY_CASE = "|".join("0x" + "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in n[2:])
                             for n in _NUMBER.values())
_FELL = re.compile(r"fallen off the bus", re.IGNORECASE)
# Where the words name the GPU: "The NVIDIA GPU 0000:b3:00.0 (PCI ID: ...)", "GPU 0000:01:00.0: GPU has fallen".
_FELL_GPU = re.compile(r"\bNVIDIA GPU (?P<a>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)"
                       r"|\bGPU (?P<b>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?):")
# A status by its number only: "_issueRpcAndWait: rpcSendMessage failed with status 0x0000000f for fn 76!".
_STATUS_NUMBER = re.compile(r"\bfailed with status (0x[0-9A-Fa-f]{1,8})\b")
# An NVLink failure in the driver's words: a line of NVRM or of the NVLink core module that names NVLink (its
# knvlink* functions) and says something failed.
_NVLINK_WORD = re.compile(r"nvlink", re.IGNORECASE)
_INIT_FAILED = re.compile(r"\b(?:RmInitAdapter|rm_init_adapter(?:\(\d+\))?) failed\b")
_INIT_GPU = re.compile(r"\bGPU (?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_NVLINK_FAIL = re.compile(r"\bfail(?:ed|ure|s)?\b", re.IGNORECASE)
_NVLINK_SOURCE = re.compile(r"\bNVRM\b|\bnvidia-nvlink:")
# One cheap test first: almost every kernel line is unrelated, and a busy node logs many.
_MAYBE = re.compile(rf"out of sync|not loaded|xid \(|NV_ERR_|fallen off the bus|\((?:{_NUMBERS})\)|"
                    r"failed with status 0x|nvlink|rminitadapter failed|rm_init_adapter(?:\(\d+\))? failed|"
                    + _FAILURE_WORDS.pattern, re.IGNORECASE)
# The same words, case-sensitive as the driver prints them, to scan a whole log in one pass
# (about three times faster than the case-blind pattern on a 300-line log).
_SCAN = re.compile(rf"out of sync|not loaded|Xid \(|NV_ERR_|fallen off the bus|\((?:{_NUMBERS_ANY_CASE})\)|"
                   r"failed with status 0x|[Nn][Vv][Ll]ink|RmInitAdapter failed|rm_init_adapter(?:\(\d+\))? failed|"
                   + _FAILURE_WORDS.pattern)
# A literal, in lower case, that every match of each of _SCAN's words contains (tests/unit/test_unread_fast_path.py
# holds it): one search for these in the lower-cased log finds the lines worth the pattern, at a fraction of the
# pattern's own cost over the whole log (a fresh poll's largest bastion cost, docs/performance.md 2026-12-07).
SCAN_LITERALS = (
    "out of sync", "not loaded", "xid (", "nv_err_", "fallen off the bus", "(0x000000", "failed with status 0x",
    "nvlink", "rminitadapter failed", "rm_init_adapter", "fsp boot cmds failed", "rm cannot boot",
    "fsp response reported error", "installed in this system is not supported by", "probe with driver nvidia failed",
    "nvidia probe routine failed", "none of the nvidia devices were initialized", "api mismatch",
    "heartbeat timed out", "gsp timeout", "waiting for rpc response from gpu", "kflcncoredump",
    "failed to insert module 'nvidia", "modprobe nvidia")
_SCAN_ANCHORS = re.compile("|".join(re.escape(a) for a in SCAN_LITERALS))
# The lines worth either reader's look, found in one search of the lower-cased log: a line that holds one of the
# scan's literals or one of the unread words' (nvls_tui.parsers.unread.ANCHORS). Each literal that holds another
# is left out (the shorter one finds its lines), and the rest are written as one tree (literals_pattern): one
# pass over the log for both readers, instead of one for each and a test of every line (a fresh poll's largest
# bastion cost, docs/performance.md, 2026-12-07).
_WORTH_LITERALS = tuple(sorted(w for w in {*SCAN_LITERALS, *_UNREAD_ANCHORS}
                               if not any(other != w and other in w for other in {*SCAN_LITERALS, *_UNREAD_ANCHORS})))
_WORTH = literals_pattern(_WORTH_LITERALS)
# The opening line of the driver's split "fallen off the bus" message (one printk per line).
_SPLIT_OPEN = re.compile(r"NVRM: The NVIDIA GPU [0-9A-Fa-f:.]+\s*$")
_SPLIT_MORE = re.compile(r"^NVRM: (?:\(PCI ID|installed in this system|fallen off the bus)")


def _line_at(text: str, start: int) -> tuple[str, int]:
    """The line that begins at ``start`` and where the next one begins (``len(text) + 1`` past the end)."""
    end = text.find("\n", start)
    return (text[start:], len(text) + 1) if end < 0 else (text[start:end], end + 1)


def _previous(text: str, start: int) -> int:
    """Where the line before the one at ``start`` begins (-1 at the first line)."""
    return -1 if start <= 0 else text.rfind("\n", 0, start - 1) + 1


def _is_continuation(line: str) -> bool:
    """An indented line with no stamp of its own: the next line of a multi-line record."""
    return line[:1] in (" ", "\t") and bool(line.strip()) and _timestamp(line.lstrip()) is None


def message(line: str) -> str:
    """``line`` without its timestamp prefix (journalctl's, dmesg's or /dev/kmsg's)."""
    for pattern in _TIMESTAMPS:
        if m := pattern.match(line):
            return line[m.end():]
    return line


def _split_part(line: str) -> bool:
    """A later line of the driver's split "fallen off the bus" message (its own printk)."""
    return bool(_SPLIT_MORE.match(message(line).strip()))


def _record_bounds(text: str, start: int) -> tuple[int, int]:
    """The whole record around the line at ``start``: back to its first line, on over the lines after it.

    An indented line belongs to the unindented line above it (at most four lines up); where there is
    none (a pasted block indented as a whole) every line stands alone.
    """
    line, _ = _line_at(text, start)
    first = start
    for _ in range(4):  # the driver's longest messages span three or four lines
        before = _previous(text, first)
        if before < 0:
            break
        prev, _ = _line_at(text, before)
        if _is_continuation(line) or (_split_part(line) and (_split_part(prev) or _SPLIT_OPEN.search(prev))):
            first, line = before, prev
        else:
            break
    head, end = _line_at(text, first)
    if head[:1] in (" ", "\t"):
        return start, _line_at(text, start)[1]  # no head line: the line alone
    split = bool(_SPLIT_OPEN.search(head))
    for _ in range(8):
        if end > len(text):
            break
        nxt, after = _line_at(text, end)
        if _is_continuation(nxt) or (split and _split_part(nxt)):
            end = after
        else:
            break
    return first, end


def join_record(lines: list[str]) -> str:
    """A multi-line record as one line: the first line, then each later line's message (its own stamp
    and ``NVRM:`` dropped), so ``The NVIDIA GPU X (PCI ID: Y) installed ... fallen off the bus ...``."""
    head = lines[0].rstrip()
    rest = [message(ln.strip()).strip() for ln in lines[1:]]
    return " ".join([head, *(r[len("NVRM:"):].strip() if r.startswith("NVRM:") else r for r in rest)])


def worth_lines(text: str) -> list[tuple[int, int]] | None:
    """Where the lines of ``text`` that hold one of :data:`_WORTH`'s literals (in lower case) begin and end
    (the end at the line's ``\n``, or the text's end), in order, each once: the only lines either reader
    (:func:`parse_kernel_log`, :func:`unread_kernel_lines`) can find anything in. None for a text that is not
    ASCII (lower-casing it could move its characters): the readers then read every line, as before."""
    if not text.isascii():
        return None
    lines: list[tuple[int, int]] = []
    line_end = -1
    for found in _WORTH.finditer(text.lower()):
        if found.start() < line_end:
            continue  # a line already listed (no literal spans a line)
        start = text.rfind("\n", 0, found.start()) + 1
        line_end = text.find("\n", found.start())
        line_end = len(text) if line_end < 0 else line_end
        lines.append((start, line_end))
    return lines


def _scan(text: str, worth: list[tuple[int, int]] | None) -> Iterator[re.Match[str]]:
    """The first match of :data:`_SCAN` on each line of ``text`` that has one, in order (what ``_SCAN.finditer``
    gives, less the later matches of a line, which the caller skips: no word of it spans a line). Only the lines
    ``worth`` names are searched (every match of _SCAN holds one of :data:`SCAN_LITERALS`, so no other line has
    one); a text that is not ASCII (``worth`` None) is searched whole, as before."""
    if worth is None:
        yield from _SCAN.finditer(text)
        return
    for start, end in worth:
        if m := _SCAN.search(text, start, end):
            yield m


def _candidate_lines(text: str, worth: list[tuple[int, int]] | None = None):
    """The records of ``text`` that contain a word worth classifying, each once, in order, joined into
    one line each (see :func:`join_record`); ``worth``: :func:`worth_lines` of ``text``, where known."""
    done = -1
    for m in _scan(text, worth_lines(text) if worth is None else worth):
        if m.start() < done:
            continue  # inside the record just given
        start = text.rfind("\n", 0, m.start()) + 1
        start, end = _record_bounds(text, start)
        done = end
        body = text[start:min(end, len(text))].rstrip("\n")
        yield body if "\n" not in body else join_record(body.split("\n"))


def _timestamp(line: str) -> str | None:
    for pattern in _TIMESTAMPS:
        if m := pattern.match(line):
            return m.group("ts").strip()
    return None


def _nvrm(text: str) -> bool:
    return "NVRM" in text


def classify_kernel_line(line: str) -> KernelEvent | None:
    """The fabric event a kernel log line (a multi-line record joined: :func:`join_record`) reports, or
    None for an unrelated line.

    Example:
        >>> classify_kernel_line("NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB ...").xid
        144
    """
    text = line.strip()
    if not text or not _MAYBE.search(text):
        return None
    ts = _timestamp(text)
    if OUT_OF_SYNC in text or _OUT_OF_SYNC_WORDS.search(text) or (_nvrm(text) and _OUT_OF_SYNC_CODE.search(text)):
        return KernelEvent(code=OUT_OF_SYNC, line=text, timestamp=ts)
    if FM_NOT_PRESENT in text or _FM_NOT_LOADED_WORDS.search(text) or (
            _nvrm(text) and _FM_NOT_PRESENT_CODE.search(text)):
        return KernelEvent(code=FM_NOT_PRESENT, line=text, timestamp=ts)
    # NVSwitch SXid numbers are a different table from GPU Xids: keep the two codes apart.
    if m := _SXID.search(text):
        return KernelEvent(code="SXID", line=text, xid=int(m.group("xid")), pci=m.group("pci"), timestamp=ts)
    if m := _XID.search(text):
        return KernelEvent(code="XID", line=text, xid=int(m.group("xid")), pci=m.group("pci"), timestamp=ts)
    if _FELL.search(text) and _nvrm(text):
        gpu = _FELL_GPU.search(text)
        return KernelEvent(code=FELL_OFF_BUS, line=text, pci=(gpu.group("a") or gpu.group("b")) if gpu else None,
                           timestamp=ts)
    if _INIT_FAILED.search(text) and _nvrm(text):  # before its status: the GPU itself failed to come up
        gpu = _INIT_GPU.search(text)
        return KernelEvent(code=GPU_INIT_FAILED, line=text, pci=gpu.group("pci") if gpu else None, timestamp=ts)
    if m := _NV_ERR.search(text):
        return KernelEvent(code=m.group(0), line=text, timestamp=ts)
    if _nvrm(text) and (m := _STATUS_NUMBER.search(text)):
        status = catalogues.nv_status(int(m.group(1), 16))
        if status is not None and status.code != 0:
            return KernelEvent(code=status.name, line=text, timestamp=ts)
    # The driver failing without an Xid in its own words (nvls_tui.parsers.driver_failures): its failure's code.
    if failure := driver_failure(text):
        return KernelEvent(code=failure.code, line=text, timestamp=ts)
    if _NVLINK_SOURCE.search(text) and _NVLINK_WORD.search(message(text)) and _NVLINK_FAIL.search(text):
        return KernelEvent(code=NVLINK_FAILED, line=text, timestamp=ts)
    return None


# The NVLink core module registers when the driver's core module starts to load and unregisters when it unloads:
# both within one second is the core module's load failing and rolling back (no other line may say so).
_CORE_UP = re.compile(r"Nvlink Core is being initialized")
_CORE_DOWN = re.compile(r"Unregistered Nvlink Core")
#: A kernel event's code: the driver's core module failed to load (nvls_tui.parsers.driver_failures).
MODULE_FAILED = "NVIDIA_MODULE_FAILED"


def _same_second(a: str | None, b: str | None) -> bool:
    """Whether two of the parsers' time stamps are less than a second apart (dmesg's seconds, or a wall time)."""
    if not a or not b:
        return False
    try:
        return abs(float(a) - float(b)) < 1.0
    except ValueError:
        return len(a) >= 19 and a[:19] == b[:19]


def parse_kernel_log(text: str, *, worth: list[tuple[int, int]] | None = None) -> Parsed[tuple[KernelEvent, ...]]:
    """Every fabric-relevant event of a kernel log, in log order (unrelated lines are skipped).

    ``worth``: :func:`worth_lines` of ``text`` where the caller has it already (:func:`read_kernel_text`)."""
    events = []
    previous = ""
    for line in _candidate_lines(text, worth):
        event = classify_kernel_line(line)
        if event is None and _CORE_DOWN.search(line) and _CORE_UP.search(previous) and _same_second(
                _timestamp(previous.strip()), _timestamp(line.strip())):
            event = KernelEvent(code=MODULE_FAILED, line=line.strip(), timestamp=_timestamp(line.strip()))
        if event is not None:
            events.append(event)
        previous = line
    return Parsed(tuple(events))


def _line_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where each line of ``text`` begins and ends (at its ``\n``, or the text's end), one at a time, never all at
    once: a paste of millions of short lines must not be held twice over (issue 34, item 9b)."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        end = size if end < 0 else end
        yield start, end
        start = end + 1


def _each_line(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (``\n`` or ``\r\n``), as :func:`_line_spans` finds them."""
    for start, end in _line_spans(text):
        yield text[start:end].rstrip("\r")


#: The code of a kernel line from NVIDIA's stack that says something went wrong and that no rule reads.
UNREAD = "UNREAD"


def unread_kernel_lines(text: str, *, worth: list[tuple[int, int]] | None = None) -> tuple[KernelEvent, ...]:
    """The lines of ``text`` in which the driver or an ``nvidia-*`` module says something went wrong that
    :func:`classify_kernel_line` does not read (``NVRM: RmInitAdapter failed!``, an NVSwitch's ``Link training
    failed``), each an event of code :data:`UNREAD` with its time stamp. The indented lines of a record whose
    head a rule reads are read with it.

    Only the lines :func:`worth_lines` names can say something went wrong (each word holds one of its literals):
    they alone are read, each continued record's first line found by looking back from it; a text that is not
    ASCII is read line by line. ``worth``: those lines where the caller has them already (:func:`read_kernel_text`)."""
    if worth is None:
        worth = worth_lines(text)
    out: list[KernelEvent] = []
    head: str | None = None  # the first line of the record the last line looked at belongs to
    head_read: bool | None = None  # whether a rule reads ``head`` (classified once, when a line needs it)
    after = 0  # where the line after the last line looked at begins
    for start, end in _line_spans(text) if worth is None else worth:
        raw = text[start:end].rstrip("\r")
        line = raw.strip()
        continuation = raw[:1] in (" ", "\t") and _timestamp(line) is None
        if continuation and start > after:  # lines between were not looked at: the record may have begun there
            above = _head_above(text, start, after, head)
            if above != head:
                head, head_read = above, None
        after = end + 1
        if not line:
            continue
        if not continuation:
            head, head_read = line, None
        # Most lines say nothing wrong: that test first, and the rules (many patterns) only for the rest.
        if not nvidia_error_line(line):
            continue
        if continuation:
            if head_read is None:
                head_read = head is not None and classify_kernel_line(head) is not None
            if head_read or classify_kernel_line(line) is not None:
                continue  # a later line of a record a rule read, or one a rule reads itself
        else:
            head_read = classify_kernel_line(line) is not None
            if head_read:
                continue
        out.append(KernelEvent(code=UNREAD, line=line, timestamp=_timestamp(line)))
    return tuple(out)


def _head_above(text: str, start: int, stop: int, known: str | None) -> str | None:
    """The first line of the record that the line at ``start`` continues: the nearest line above it that is
    neither empty nor a continuation, looked for up to the line at ``stop``; ``known`` (the record's first line
    as of that line, None at the text's start) where no such line lies between."""
    at = start
    while at > stop:
        above = text.rfind("\n", 0, at - 1) + 1
        raw = text[above:at - 1].rstrip("\r")
        at = above
        line = raw.strip()
        if line and not (raw[:1] in (" ", "\t") and _timestamp(line) is None):
            return line
    return known


def read_kernel_text(text: str) -> tuple[tuple[KernelEvent, ...], tuple[KernelEvent, ...]]:
    """:func:`parse_kernel_log`'s events and :func:`unread_kernel_lines`' of one text, from one search of it for
    the lines worth a look (a poll reads both of every kernel section)."""
    worth = worth_lines(text)
    return parse_kernel_log(text, worth=worth).value, unread_kernel_lines(text, worth=worth)


__all__ = ["FELL_OFF_BUS", "FM_NOT_PRESENT", "GPU_INIT_FAILED", "MODULE_FAILED", "NVLINK_FAILED", "OUT_OF_SYNC", "UNREAD", "classify_kernel_line", "join_record", "message",
           "parse_kernel_log", "read_kernel_text", "unread_kernel_lines", "worth_lines"]

"""Kernel log lines that matter for the NVLink fabric: ``NV_ERR_*`` codes, Xid and NVSwitch SXid.

Accepts ``journalctl -k`` (short and short-iso), ``dmesg`` with or without ``[ seconds]``, ``dmesg -T``
and raw ``/dev/kmsg`` records. The incident's decisive line has no code at all ("NVLink fabric state
cached by the driver is out of sync"), so some codes are recognised by their words.
"""

from __future__ import annotations

import re

from nvls_tui.model import KernelEvent
from nvls_tui.parsers.base import Parsed

OUT_OF_SYNC = "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"
FM_NOT_PRESENT = "NV_ERR_FABRIC_MANAGER_NOT_PRESENT"

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
_XID = re.compile(r"\bXid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\):\s*(?P<xid>\d{1,9})")
_SXID = re.compile(r"\bSXid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\):\s*(?P<xid>\d{1,9})")
_NV_ERR = re.compile(r"\bNV_ERR_[A-Z0-9_]+")
# One cheap test first: almost every kernel line is unrelated, and a busy node logs many.
_MAYBE = re.compile(r"out of sync|not loaded|xid \(|NV_ERR_", re.IGNORECASE)
# The same words, case-sensitive as the driver prints them, to scan a whole log in one pass
# (about three times faster than the case-blind pattern on a 300-line log).
_SCAN = re.compile(r"out of sync|not loaded|Xid \(|NV_ERR_")


def _candidate_lines(text: str):
    """The lines of ``text`` that contain a word worth classifying, each once, in order."""
    last_start = -1
    for m in _SCAN.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start == last_start:
            continue
        last_start = start
        end = text.find("\n", m.end())
        yield text[start:] if end < 0 else text[start:end]


def _timestamp(line: str) -> str | None:
    for pattern in _TIMESTAMPS:
        if m := pattern.match(line):
            return m.group("ts").strip()
    return None


def classify_kernel_line(line: str) -> KernelEvent | None:
    """The fabric event a kernel log line reports, or None for an unrelated line.

    Example:
        >>> classify_kernel_line("NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB ...").xid
        144
    """
    text = line.strip()
    if not text or not _MAYBE.search(text):
        return None
    ts = _timestamp(text)
    if OUT_OF_SYNC in text or _OUT_OF_SYNC_WORDS.search(text):
        return KernelEvent(code=OUT_OF_SYNC, line=text, timestamp=ts)
    if FM_NOT_PRESENT in text or _FM_NOT_LOADED_WORDS.search(text):
        return KernelEvent(code=FM_NOT_PRESENT, line=text, timestamp=ts)
    # NVSwitch SXid numbers are a different table from GPU Xids: keep the two codes apart.
    if m := _SXID.search(text):
        return KernelEvent(code="SXID", line=text, xid=int(m.group("xid")), pci=m.group("pci"), timestamp=ts)
    if m := _XID.search(text):
        return KernelEvent(code="XID", line=text, xid=int(m.group("xid")), pci=m.group("pci"), timestamp=ts)
    if m := _NV_ERR.search(text):
        return KernelEvent(code=m.group(0), line=text, timestamp=ts)
    return None


def parse_kernel_log(text: str) -> Parsed[tuple[KernelEvent, ...]]:
    """Every fabric-relevant event of a kernel log, in log order (unrelated lines are skipped)."""
    events = tuple(e for line in _candidate_lines(text) if (e := classify_kernel_line(line)) is not None)
    return Parsed(events)


__all__ = ["FM_NOT_PRESENT", "OUT_OF_SYNC", "classify_kernel_line", "parse_kernel_log"]

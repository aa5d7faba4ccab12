"""An Xid or SXid kernel line read through NVIDIA's catalogues (nvls_tui.catalogues). Pure.

Severity and the next move are those of the Xid catalogue's immediate-action bucket (:data:`catalogues.BUCKETS`),
unless the driver's line itself orders a recovery action (Xid 154's "to 0x4 (Drain and Reset)", an uncontained
error's "RST: Yes"): then the stronger of the two stands, and a line that orders a reset or more is never a
warning. An Xid the catalogue does not list is a warning with its number and the driver's words. An NVSwitch
SXid is named through the SXid catalogue (the driver's error enum), and its line says itself whether it is ``Fatal``
(an error whose move is the repair), ``Non-fatal`` (a warning) or ``Correctable`` (info). A line without that word
(an SXid's ``Data {...}`` line) is weighed by the Fabric Manager user guide's table for the code (sxid.csv's
``fm_recovery``): an error where the guide's recovery is a reset or a host restart, else a warning. An SXid the
catalogue does not list is still read, with its number and the driver's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui import catalogues
from nvls_tui.model import KernelEvent, Severity

_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}
# What follows "Xid (PCI:...): N," in the driver's line: its own words for the event.
_WORDS = re.compile(r"\bS?Xid \([^)]*\):\s*\d+\s*,?\s*(?P<words>.*)$")
# The driver's word for the SXid's weight, first after the number (its NVSWITCH_REPORT_* macros).
_SXID_WORD = re.compile(r"\bSXid \([^)]*\):\s*\d+\s*,\s*(?P<word>Fatal|Non-fatal|Correctable)\b", re.IGNORECASE)
_SXID_SEVERITY = {"fatal": Severity.ERROR, "non-fatal": Severity.WARNING, "correctable": Severity.INFO}
WORDS_MAX = 120
# The Fabric Manager guide's recoveries (catalogues/sxid.csv's fm_recovery) that the repair's reset of every GPU and
# NVSwitch performs on bare metal (the guide's guest VM restart, its reset of all GPUs and NVSwitches, its host restart).
_GUIDE_RESETS = frozenset({"reset", "reboot"})
SXID_FATAL_MOVE = "reset every GPU and NVSwitch, then start Fabric Manager (the repair)"
UNLISTED_MOVE = "not in NVIDIA's Xid catalogue: read the driver's words"


@dataclass(frozen=True, slots=True)
class XidReading:
    """What one Xid/SXid line means.

    Attributes:
        severity: the finding's severity.
        tail: the words after ``Xid N on PLACE`` (mnemonic, NVIDIA's action and the move), ``""`` for none.
        action: the bucket that stands (``RESET_GPU``, ``DRAIN_AND_RESET``, ...), None where no catalogue names one.
        move: the next move in a few words (None where nothing says one).
        reset_fixes: the bucket's (True: a GPU reset is the move; False: a reset will not fix it).
        worded: False for an SXid line that carries no weight word of its own (the "Severity N Engine ..." and
            "Data {...}" lines after the one that does): the worded line of the same event stands for it.
    """

    severity: Severity
    tail: str
    action: str | None
    move: str | None
    reset_fixes: bool | None
    worded: bool = True


def driver_words(line: str) -> str:
    """The driver's own words after the Xid number, cut to :data:`WORDS_MAX` characters."""
    m = _WORDS.search(line)
    words = (m.group("words") if m else line).strip()
    return words if len(words) <= WORDS_MAX else words[:WORDS_MAX - 1] + "…"


def read_xid(event: KernelEvent) -> XidReading:
    """The reading of one ``XID`` or ``SXID`` kernel event."""
    if event.code == "SXID":
        return _read_sxid(event)
    entry = catalogues.xid(event.xid)
    ordered = catalogues.action_named_in(event.line)
    if entry is None:
        words = f"not in NVIDIA's Xid catalogue; the driver said: {driver_words(event.line)}"
        if ordered is None:
            return XidReading(Severity.WARNING, words, None, UNLISTED_MOVE, None)
        said = catalogues.bucket(ordered.bucket)
        severity = max(Severity(said.severity), Severity.WARNING, key=_RANK.__getitem__)
        return XidReading(severity, f"{words}; the line orders {ordered.words}", said.name, said.move,
                          said.reset_fixes)
    listed = catalogues.bucket(entry.immediate)
    stands = listed
    head = f"{entry.mnemonic}, NVIDIA's immediate action {entry.immediate or 'none given'}"
    if ordered is not None:
        said = catalogues.bucket(ordered.bucket)
        # The line's own order stands where it is at least as strong as the catalogue's bucket (Xid 154's bucket
        # is only "follow the line"), so a line that orders a reset is never read as a warning.
        if entry.immediate == "XID_154" or _RANK[Severity(said.severity)] >= _RANK[Severity(listed.severity)]:
            stands = said
        head += f"; the line orders {ordered.words}"
    return XidReading(Severity(stands.severity), f"{head}: {stands.move}", stands.name or None, stands.move,
                      stands.reset_fixes)


def _read_sxid(event: KernelEvent) -> XidReading:
    """An NVSwitch SXid: named through the SXid catalogue, weighed by the driver's own word in the line."""
    entry = catalogues.sxid(event.xid)
    m = _SXID_WORD.search(event.line)
    word = m.group("word") if m else None
    severity = _SXID_SEVERITY[word.lower()] if word else Severity.WARNING
    said = f"{word} (the driver's word)" if word else ""
    if word is None and entry is not None and entry.fm_recovery in _GUIDE_RESETS:
        # No word in the line: the Fabric Manager guide's table says the code stalls or downs the fabric.
        severity = Severity.ERROR
        said = (f"no weight word in the line; the Fabric Manager guide lists it {entry.fm_guide}, its recovery a "
                f"{entry.fm_recovery}")
    if entry is not None:
        tail = f"{entry.name} ({entry.unit})" + (f", {said}" if said else "")
    else:
        tail = f"not in the SXid catalogue; the driver said: {driver_words(event.line)}"
    if severity is Severity.ERROR:
        return XidReading(severity, tail, None, SXID_FATAL_MOVE, True, worded=True)
    return XidReading(severity, tail, None, None, None, worded=word is not None)


def strongest(readings: list[XidReading]) -> XidReading:
    """The most severe of several readings (the first of equals): one device's lines of one Xid read as one. An
    SXid's lines without a weight word of their own follow the line that has one."""
    worded = [r for r in readings if r.worded] or readings
    return max(worded, key=lambda r: _RANK[r.severity])


def ticket_xids(events: tuple[KernelEvent, ...] | list[KernelEvent]) -> list[tuple[KernelEvent, XidReading]]:
    """The Xid events whose move is not a GPU reset (a reboot, a hardware ticket, a driver update): the repair
    cannot fix what they report."""
    out = []
    for event in events:
        if event.code == "XID":
            reading = read_xid(event)
            if reading.reset_fixes is False:
                out.append((event, reading))
    return out


def resets_fix(event: KernelEvent) -> bool:
    """Whether ``event`` is an Xid/SXid whose move is the reset the repair does (the fabric is not healthy)."""
    if event.code not in ("XID", "SXID"):
        return False
    reading = read_xid(event)
    return reading.severity is Severity.ERROR and reading.reset_fixes is not False


__all__ = ["XidReading", "driver_words", "read_xid", "resets_fix", "strongest", "ticket_xids"]

"""The kernel lines of one poll from the journal and, where it falls short, the ring buffer: and from when
they cover this boot. Pure.

The journal rotates or is vacuumed (a monitor missed Xids that ``dmesg`` still showed), is volatile, or
is absent (a real H200 VM has ``dmesg`` but no ``journalctl``). Where the journal's lines of this boot do
not start with the kernel's own first line, or it cannot be read, the ``ring`` section (``dmesg``) is read
as well: its ``[seconds]`` stamps are put on the node's clock by the node's boot time (its clock less its
uptime, read by the same poll), and a line the journal holds too is kept once. The kernel log is missing
evidence only when neither could be read.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nvls_tui.diagnosis.story import node_time
from nvls_tui.model import CommandResult, KernelEvent, MissingEvidence
from nvls_tui.model.node import KernelCoverage
from nvls_tui.parsers.kernel_log import message, read_kernel_text
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.kernel_tail import RING_SKIPPED, filter_ring, journal_coverage

JOURNAL, RING = "journal", "dmesg"
# A line in both sources is one line when their times differ by no more than this: the journal stamps a
# kernel line when journald reads it, the ring buffer when the kernel logs it.
SAME_LINE_S = 5.0


@dataclass(frozen=True, slots=True)
class KernelRead:
    """What one poll read of the kernel log.

    Attributes:
        events: the fabric events, journal and ring buffer merged, in time order.
        coverage: from when they cover this boot (None: the poll's kernel section does not say).
        missing: why the kernel log is missing evidence (neither source read), else None.
        unread: the lines from NVIDIA's stack that say something went wrong and that no rule reads
            (``UNREAD`` events, :func:`~nvls_tui.parsers.kernel_log.unread_kernel_lines`), merged alike.
    """

    events: tuple[KernelEvent, ...]
    coverage: KernelCoverage | None
    missing: MissingEvidence | None
    unread: tuple[KernelEvent, ...] = ()


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="seconds")


def _ring_start(text: str) -> tuple[float | None, bool]:
    """Where the filtered ring buffer starts (its first stamp in seconds since boot), and whether that is
    the boot's first line."""
    for line in text.splitlines():
        if line.startswith("-- nvls-tui ring first "):
            words = line.split()
            try:
                return float(words[4]), words[5] == "1"
            except (IndexError, ValueError):
                return None, False
    return None, False


def _on_clock(events: tuple[KernelEvent, ...], boot: float | None) -> tuple[KernelEvent, ...]:
    """Ring-buffer events with their ``[seconds]`` put on the node's clock (ISO, UTC); left as seconds
    (dating nothing, so never stale) when the boot time is unknown."""
    if boot is None:
        return events
    out = []
    for e in events:
        try:
            seconds = float(e.timestamp) if e.timestamp is not None else None
        except ValueError:
            seconds = None
        out.append(e if seconds is None else KernelEvent(e.code, e.line, e.xid, e.pci, _iso(boot + seconds)))
    return tuple(out)


def merge(journal: tuple[KernelEvent, ...], ring: tuple[KernelEvent, ...]) -> tuple[KernelEvent, ...]:
    """The journal's events and the ring buffer's that the journal does not hold, in time order.

    A ring line is the journal's when a journal line has the same message and a time within
    :data:`SAME_LINE_S` (each journal line stands for one ring line: a message logged twice is two).
    """
    unmatched = list(journal)
    extra: list[KernelEvent] = []
    for event in ring:
        text, at = message(event.line).strip(), node_time(event.timestamp)
        twin = next((j for j in unmatched if message(j.line.split("kernel: ", 1)[-1]).strip() == text
                     and (at is None or (t := node_time(j.timestamp)) is None or abs(t - at) <= SAME_LINE_S)), None)
        if twin is not None:
            unmatched.remove(twin)
        else:
            extra.append(event)
    both = list(journal) + extra
    # Sorted by time where every event has one; otherwise the ring's older lines first, as read.
    times = [node_time(e.timestamp) for e in both]
    if all(t is not None for t in times):
        return tuple(e for _, _, e in sorted(zip(times, range(len(both)), both, strict=True)))
    return tuple(extra) + tuple(journal)


def read_kernel(kernel: CommandResult | None, ring: CommandResult | None, *, root: bool | None,
                boot: float | None) -> KernelRead:
    """The kernel lines of a poll and their coverage.

    Args:
        kernel: the ``kernel`` section (the journal, as :class:`~nvls_tui.poll.kernel_tail.KernelTail` hands it on).
        ring: the ``ring`` section (``dmesg``), or None where the poll did not read it.
        root: whether the privileged sections ran as root (None: unknown).
        boot: the node's boot time on its clock (epoch seconds), or None when it could not be read.
    """
    why = missing_evidence("kernel", kernel, root=root)
    journal_events: tuple[KernelEvent, ...] = ()
    journal_unread: tuple[KernelEvent, ...] = ()
    said = None
    if why is None and kernel is not None:
        text = kernel.output
        journal_events, journal_unread = read_kernel_text(text)
        said = journal_coverage(text)
        if said is None:
            # An older probe's section: it does not say what it covers, and read no ring buffer.
            return KernelRead(journal_events, None, None, journal_unread)
    journal_since, journal_whole = said if said is not None else (None, False)
    if why is None and journal_whole:
        return KernelRead(journal_events, KernelCoverage(journal_since, (JOURNAL,), True, journal_since), None,
                          journal_unread)
    notes: list[str] = []
    if why is not None:
        notes.append(why.detail)
    ring_why = missing_evidence("ring", ring, root=root)
    if ring_why is None and ring is not None and ring.output.strip() == RING_SKIPPED:
        ring_why = MissingEvidence("ring", "not run", "the kernel ring buffer was not read")
    sources = (JOURNAL,) if why is None else ()
    if ring_why is not None or ring is None:
        notes.append(ring_why.detail if ring_why is not None else "the kernel ring buffer was not read")
        if why is not None:
            # Neither could be read: EVIDENCE_MISSING(kernel), for the journal's reason, naming both.
            return KernelRead((), None, MissingEvidence(why.section, why.reason, "; ".join(notes)))
        return KernelRead(journal_events, KernelCoverage(journal_since, sources, False, journal_since,
                                                         tuple(notes)), None, journal_unread)
    text = filter_ring(ring.output)
    start, ring_whole = _ring_start(text)
    ring_read, ring_unread = read_kernel_text(text)
    ring_events = _on_clock(ring_read, boot)
    ring_since = _iso(boot + start) if boot is not None and start is not None else None
    candidates = [t for t in (ring_since, journal_since) if t is not None and node_time(t) is not None]
    since = min(candidates, key=lambda t: node_time(t) or 0.0) if candidates else None
    if boot is None:
        notes.append("the node's boot time could not be read, so the ring buffer's lines are not dated")
    return KernelRead(merge(journal_events, ring_events),
                      KernelCoverage(since, (*sources, RING), ring_whole, journal_since, tuple(notes)), None,
                      merge(journal_unread, _on_clock(ring_unread, boot)))


__all__ = ["JOURNAL", "RING", "SAME_LINE_S", "KernelRead", "merge", "read_kernel"]

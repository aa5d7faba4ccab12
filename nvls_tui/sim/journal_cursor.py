"""Journal cursors as systemd's journalctl hands them out and seeks to them (``--show-cursor``,
``--cursor``, ``--after-cursor``), for the simulated journal.

What systemd 252 does, checked against the real journald of a lab node (tests/lab/test_lab_journal.py):

- ``--show-cursor`` ends the output with ``-- cursor: s=…;i=…;b=…;m=…;t=…;x=…``: the entry journalctl
  visited last (``--grep`` filters what is printed, not what is visited), also after
  ``-- No entries --``; no line at all when it visited no entry.
- ``--cursor=C`` seeks to C and starts there: at C when it still exists and matches the filters, else
  at the first entry after where C would be.
- ``--after-cursor=C`` seeks the same way and steps twice, so it starts after C when C exists; when C
  is gone (a rotated journal, vacuumed) the first entry after its place is stepped over too.
- An entry is placed by its sequence number within its seqnum id (``s=``), else by its realtime
  (``t=``). A cursor journalctl cannot parse: ``Failed to seek to cursor: Invalid argument``, exit 1.
- ``-n 0`` after a seek shows nothing and stays where the seek landed (``--show-cursor`` prints that
  entry's cursor: the cursor itself while the journal holds its entry); without a seek it stays on the
  last entry. ``--show-cursor`` that visited no entry prints no cursor and exits 1 (verify-fabric's
  commands, checked against a real journald in tests/unit/test_journal_cursor_real.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from nvls_tui.sim.state import LogLine, Node

_FIELD = re.compile(r"([sibmtx])=([0-9a-f]+)")
SEEK_FAILED = "Failed to seek to cursor: Invalid argument\n"


def _hex(text: str, size: int = 32) -> str:
    return hashlib.md5(text.encode()).hexdigest()[:size]


def seqnum_id(node: Node) -> str:
    """The node's journal seqnum id (one per node: the simulated journal is never recreated)."""
    return _hex(f"seqnum:{node.name}")


def boot_id(node: Node, boot: float | None = None) -> str:
    """The boot id of the boot that began at ``boot`` (default: the node's current boot)."""
    return _hex(f"boot:{node.name}:{node.boot if boot is None else boot:.6f}")


def cursor_of(node: Node, entry: LogLine) -> str:
    """The cursor journalctl prints for ``entry``."""
    boot = node.boot if entry.ts >= node.boot else entry.ts  # an earlier boot's entry: a boot of its own
    return (f"s={seqnum_id(node)};i={entry.seq:x};b={boot_id(node, boot)};m={max(0, int((entry.ts - boot) * 1e6)):x};"
            f"t={int(entry.ts * 1e6):x};x={_hex(entry.text, 16)}")


@dataclass(frozen=True)
class Cursor:
    """A parsed cursor: the fields journalctl seeks by (any may be absent)."""

    seqnum_id: str | None
    seq: int | None
    realtime_us: int | None


def parse_cursor(text: str) -> Cursor | None:
    """The cursor's fields, or None where journalctl would refuse it (``Invalid argument``)."""
    fields: dict[str, str] = {}
    for item in text.split(";"):
        m = _FIELD.fullmatch(item)
        if m is None:
            return None
        fields[m.group(1)] = m.group(2)
    if not fields.keys() & {"s", "i", "t"}:
        return None
    return Cursor(fields.get("s"), int(fields["i"], 16) if "i" in fields else None,
                  int(fields["t"], 16) if "t" in fields else None)


def seek(node: Node, entries: list[LogLine], cursor: Cursor, after: bool) -> tuple[int, LogLine | None]:
    """Where output starts in ``entries`` (journal order, the query's filters applied) after a seek.

    The first step lands on the cursor's own entry when the filters keep it, else on the first entry
    after its place; ``--after-cursor`` takes one step more, whether or not that entry was the cursor's.

    Returns:
        ``(index of the first entry to print, the entry the seek's steps stopped on, or None)``.
    """
    def key(e: LogLine) -> tuple[float, int]:
        return (e.ts, e.seq)

    if cursor.seqnum_id == seqnum_id(node) and cursor.seq is not None:
        placed = next((e for e in node.kernel + node.journal if e.seq == cursor.seq), None)
        if placed is not None:
            first = next((i for i, e in enumerate(entries) if key(e) >= key(placed)), len(entries))
        else:  # gone (vacuumed): placed by its sequence number among the entries left
            first = next((i for i, e in enumerate(entries) if e.seq > cursor.seq), len(entries))
    else:
        t = (cursor.realtime_us or 0) / 1e6
        first = next((i for i, e in enumerate(entries) if e.ts >= t), len(entries))
    if not after:
        return first, None
    landed = entries[first] if first < len(entries) else None
    return min(first + 1, len(entries)), landed

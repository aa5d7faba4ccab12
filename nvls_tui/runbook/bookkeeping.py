"""Which commands of an audit log written before the runbook marked its own bookkeeping were the repair's own lock
and record on the node, its clock and the kernel journal's cursor at T0 (pure).

Since then every command's record says so itself (``CommandStarted.bookkeeping``, from the change's or the read's
mark in :mod:`nvls_tui.runbook.changes`), and the plan's steps keep the marked values; only the report of an
older log (``bookkeeping`` absent from its records) still judges by the command's words, as those versions did,
so that the reports of the logs they wrote stay what they were (tests/fixtures/audit-v1).
"""

from __future__ import annotations

from collections.abc import Sequence

BOOKKEEPING = ("mkdir", "tee", "mv", "rm", "rmdir", "cat", "date")
"""The programs of the repair's own lock and record on the node (and its clock), as older logs hold them."""

# Where the kernel journal stands at T0 (verify-fabric reads after it): a bookmark, like the clock's `date`.
JOURNAL_BOOKMARK = ("journalctl", "-k", "-n", "0", "--show-cursor")


def legacy_bookkeeping(argv: Sequence[str]) -> bool:
    """True for the lock/record/clock commands of the repair itself in a log written before the mark
    (``/var/lib/nvls-tui``, ``date``, the journal's cursor at T0)."""
    words = tuple(argv)
    if words[:len(JOURNAL_BOOKMARK)] == JOURNAL_BOOKMARK:
        return True
    return bool(words) and words[0] in BOOKKEEPING and (words[0] == "date" or
                                                         any("/var/lib/nvls-tui" in w for w in words))


__all__ = ["BOOKKEEPING", "JOURNAL_BOOKMARK", "legacy_bookkeeping"]

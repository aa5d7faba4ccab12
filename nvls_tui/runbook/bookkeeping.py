"""What the commands of an audit log written before the runbook marked them were (pure): the repair's own lock and
record on the node, its clock and the kernel journal's cursor at T0 (bookkeeping), and the few a report needs to
know (a registration poll, the clock's ``date``, the holders' read, Fabric Manager's start: their purpose).

Since then every command's record says so itself (``CommandStarted.bookkeeping`` from the change's or the read's
mark in :mod:`nvls_tui.runbook.changes`, ``CommandStarted.purpose`` from where it is sent), and the plan's steps
keep the marked values; only an older log (a mark absent from its records) is still judged by the command's words,
as those versions judged it, when :mod:`nvls_tui.runbook.log_entries` reads it, so that the reports of the logs
they wrote stay what they were (tests/fixtures/audit-v1).
"""

from __future__ import annotations

from collections.abc import Sequence

from nvls_tui.runbook.events import CLOCK, FABRIC_POLL, FABRIC_START, HOLDERS
from nvls_tui.runbook.steps import DATE_ARGV, FM_UNIT

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


def legacy_purpose(argv: Sequence[str]) -> str:
    """What a command of a log written before the purpose mark was for, as those versions' report judged it by its
    words: any unit's ``systemctl is-active`` and any ``nvidia-smi --query-gpu`` a registration poll (folded only
    beside Fabric Manager's polls), the clock's own ``date``, ``fuser`` the holders' read, and Fabric Manager's start;
    "" for any other command."""
    words = tuple(str(w) for w in argv)
    if words[:2] == ("systemctl", "is-active") or (words[:1] == ("nvidia-smi",)
                                                    and any(w.startswith("--query-gpu") for w in words)):
        return FABRIC_POLL
    if words == DATE_ARGV:
        return CLOCK
    if words[:1] == ("fuser",):
        return HOLDERS
    if words == ("systemctl", "start", FM_UNIT):
        return FABRIC_START
    return ""


__all__ = ["BOOKKEEPING", "JOURNAL_BOOKMARK", "legacy_bookkeeping", "legacy_purpose"]

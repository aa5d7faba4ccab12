"""Which of the repair's commands are its own bookkeeping: the lock and record on the node, its clock
and the kernel journal's cursor at T0 (pure).

The runbook issues these commands, so it says which they are; the plan screen folds them and the
report's timeline does too (both read this, neither from the other: docs/design.md, "Layers").
"""

from __future__ import annotations

BOOKKEEPING = ("mkdir", "tee", "mv", "rm", "rmdir", "cat", "date")
"""The repair's own lock and record on the node (and its clock): folded, not listed, in the plan."""


# Where the kernel journal stands at T0 (verify-fabric reads after it): a bookmark, like the clock's `date`.
JOURNAL_BOOKMARK = "journalctl -k -n 0 --show-cursor"


def is_bookkeeping(command: str) -> bool:
    """True for the lock/record/clock commands of the repair itself (``/var/lib/nvls-tui``, ``date``, the
    journal's cursor at T0)."""
    words = command.split()
    if command.startswith(JOURNAL_BOOKMARK):
        return True
    return bool(words) and words[0] in BOOKKEEPING and (words[0] == "date" or "/var/lib/nvls-tui" in command)


__all__ = ["BOOKKEEPING", "JOURNAL_BOOKMARK", "is_bookkeeping"]

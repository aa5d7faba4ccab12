"""What a logged command changed, read back from its argv (pure): the inverse of the changes' rendering
(:meth:`nvls_tui.runbook.changes.Change.commands`) for the ones a report tells.

An audit log keeps each command as the argv that went out, and the logs already written carry nothing else; so
the change a command made is read back here, once, at the edge, and :mod:`nvls_tui.runbook.log_entries` puts it
on the command's entries (:attr:`~nvls_tui.runbook.log_entries.LogEntry.change`): the report reads typed changes
(a unit stopped, persistence mode off, the record written, the lock made, a Slurm drain, an eviction), never an
argv's words. The cluster's own are :func:`nvls_tui.runbook.changes.read_cluster_change`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvls_tui.poll.probe import LOCK_DIR
from nvls_tui.runbook.changes import (
    Change,
    DrainNode,
    ReleaseLock,
    RemoveFile,
    SetPersistence,
    TakeLock,
    UnitChange,
    WriteFile,
    read_cluster_change,
)


def change_made(argv: Sequence[str]) -> Change | None:
    """The change ``argv`` makes, as far as a report tells it; None for a read or a command it does not tell.

    The lock's directory made is :class:`TakeLock` and removed :class:`ReleaseLock`, whichever change sent it (a
    take-over, a lock given back); what the argv does not say is left at its default (a file's content, a drain's
    remark).
    """
    words = tuple(str(w) for w in argv)
    match words:
        case ("systemctl", verb, unit, *_) if verb in UnitChange.VERBS:
            return UnitChange(verb, unit)
        case ("nvidia-smi", "-pm", mode, *rest) if mode in ("0", "1"):
            gpu = rest[1] if rest[:1] == ["-i"] and len(rest) > 1 and rest[1].isdigit() else None
            return SetPersistence(mode == "1", int(gpu) if gpu is not None else None)
        case ("mv", "-f", temporary, path) if temporary == f"{path}.tmp":
            return WriteFile(path)
        case ("rm", "-f", path):
            return RemoveFile(path)
        case ("mkdir", directory) if directory == LOCK_DIR:
            return TakeLock(again=True)
        case ("rmdir", directory) if directory == LOCK_DIR:
            return ReleaseLock()
        case ("scontrol", "update", *fields) if any(f.lower() == "state=drain" for f in fields):
            said = dict(f.split("=", 1) for f in fields if "=" in f)
            return DrainNode(said.get("NodeName", ""), said.get("Reason", ""))
    return read_cluster_change(words)


__all__ = ["change_made"]

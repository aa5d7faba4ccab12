"""The command that puts back a node an interrupted repair left behind (``INTERRUPTED_REPAIR``).

A repair that died where it stood (``kill -9``, a bastion that went down) leaves its lock beside its record.
``repair --restore HOST`` takes that lock like any run: it refuses while the run that holds it is alive, and
once that run is gone (the lock is stale) it refuses too, saying that ``--force`` takes the lock over (the
refusal of ``runbook/lock.py``). A repair whose own restore failed gave its lock back, so there the plain
command works. The poll does not read the lock, so the hint names both commands and when each applies; every
place that advises a restore (the finding, the grid's story, the report, the refusal of a second repair, the
console's and headless ``repair``'s last words) says it with these words.
"""

from __future__ import annotations

import shlex


def restore_commands(host: str) -> tuple[str, str]:
    """``nvls-tui repair --restore HOST`` and the same with ``--force`` (the host quoted for a shell)."""
    quoted = shlex.quote(host)
    return f"nvls-tui repair --restore {quoted}", f"nvls-tui repair --restore --force {quoted}"


def restore_hint(host: str) -> str:
    """Both commands, in the order to try them, each with when it works (Markdown code spans)."""
    plain, forced = restore_commands(host)
    return (f"`{plain}` puts it back; where that refuses because the lock is stale (the run that left it is "
            f"gone), `{forced}` takes the lock over (a run still alive refuses both)")


# The grid's story has one short line: the move, and the word that says when --force is needed.
STORY_HINT = "run repair --restore (--force once its lock is stale)"

__all__ = ["STORY_HINT", "restore_commands", "restore_hint"]

"""The changes to the node's repair lock (``/var/lib/nvls-tui/lock``): runbook/lock.py takes, beats and releases
it through the door. Which of a change's commands the lock's fence guards is each command's ``fenced``: taking the
lock cannot be fenced by it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nvls_tui.poll.fence import OWNER_FILE
from nvls_tui.poll.probe import LOCK_DIR, STATE_DIR
from nvls_tui.runbook.changes.base import Change, Command
from nvls_tui.runbook.changes.shown import Read

OWNER_TMP = f"{OWNER_FILE}.tmp"


class LockChange(Change):
    """A change to the node's repair lock (``/var/lib/nvls-tui/lock``): the repair's own bookkeeping. Which of
    its commands the lock's fence guards is each command's ``fenced``: taking the lock cannot be fenced by it."""

    __slots__ = ()
    bookkeeping: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class TakeLock(LockChange):
    """``mkdir -p`` the state directory, then ``mkdir`` the lock (atomic: of two runs only one makes it).
    ``again``: a take-over of a stale lock, which makes the lock directory only (it may be there already)."""

    again: bool = False

    def commands(self) -> tuple[Command, ...]:
        make_lock = Command(("mkdir", LOCK_DIR), fenced=False)
        return (make_lock,) if self.again else (Command(("mkdir", "-p", STATE_DIR), fenced=False), make_lock)

    @property
    def why(self) -> str:
        return "the node's repair lock: one run at a time"


@dataclass(frozen=True, slots=True)
class WriteOwner(LockChange):
    """The lock's owner file written (``content`` on stdin to a temporary file) and renamed over. The rename is
    fenced: a heartbeat never replaces an owner file that names another run (taking the lock, no fence is held
    yet, so it goes out plainly)."""

    content: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("tee", OWNER_TMP), stdin=self.content, fenced=False),
                Command(("mv", "-f", OWNER_TMP, OWNER_FILE)))

    @property
    def why(self) -> str:
        return "names this run the lock's owner (and, rewritten every interval, its heartbeat)"


@dataclass(frozen=True, slots=True)
class ReleaseLock(LockChange):
    """The owner file removed while it still names this run (fenced), then the lock directory (not fenced: the
    owner file that proves the run's hold is gone by then)."""

    def commands(self) -> tuple[Command, ...]:
        return (Command(("rm", "-f", OWNER_FILE, OWNER_TMP)), Command(("rmdir", LOCK_DIR), fenced=False))

    @property
    def why(self) -> str:
        return "the repair is over: the lock goes"


@dataclass(frozen=True, slots=True)
class GiveBackLock(LockChange):
    """A lock just made that this run could not name itself the owner of, given back at once (an empty lock no
    one owns would look like an older nvls-tui's). Unfenced: this run holds no fence yet."""

    def commands(self) -> tuple[Command, ...]:
        return (Command(("rm", "-f", OWNER_TMP), fenced=False), Command(("rmdir", LOCK_DIR), fenced=False))

    @property
    def why(self) -> str:
        return "this run could not name itself the lock's owner: the lock is given back"


def lock_age_reads() -> tuple[Read, Read]:
    """The heartbeat's age on the node's clock: the owner file's modification time, then the node's time (seconds;
    the clock's read is bookkeeping, as every ``date`` of the repair's is)."""
    return Read(("stat", "-c", "%Y", "--", OWNER_FILE)), Read(("date", "+%s"), bookkeeping=True)


def read_owner() -> Read:
    """The lock's owner file read back (the release reads it first: only this run's lock is removed)."""
    return Read(("cat", OWNER_FILE), bookkeeping=True)


__all__ = ["GiveBackLock", "LockChange", "OWNER_TMP", "ReleaseLock", "TakeLock", "WriteOwner", "lock_age_reads",
           "read_owner"]

"""What the scheduler (Slurm) says about a node: its state, why, and the jobs on it.

Immutable and standard-library only, like the rest of the model. ``None`` on a NodeState means no
scheduler was found (everything works as without one); a scheduler that was found but could not be
read is a SchedulerState with ``state`` "unknown" and ``error`` set, never a reassuring "idle".
"""

from __future__ import annotations

from dataclasses import dataclass

# contract.md's words for a node's scheduler state.
IDLE, ALLOCATED, MIXED, DRAINED, DRAINING, DOWN, UNKNOWN = (
    "idle", "allocated", "mixed", "drained", "draining", "down", "unknown")
# States in which the scheduler hands the node no new work.
HELD_BACK = frozenset({DRAINED, DRAINING, DOWN})
# Slurm's own state words of a node that jobs hold (``MIXED+DRAIN``, ``ALLOCATED+NOT_RESPONDING``, ...).
_BUSY_WORDS = frozenset({"ALLOCATED", "MIXED", "COMPLETING"})


@dataclass(frozen=True, slots=True)
class Job:
    """A job running on the node: id, owner, name and when its time limit ends (ISO, scheduler's clock)."""

    id: int
    user: str
    name: str
    end: str | None = None
    state: str | None = None


@dataclass(frozen=True, slots=True)
class SchedulerState:
    """One node as the scheduler sees it.

    Attributes:
        kind: ``slurm``.
        node: the scheduler's name of the node (the target's short host name unless mapped).
        state: one of idle / allocated / mixed / drained / draining / down / unknown.
        reason: why the node is drained or down (Slurm's ``Reason=``), else None.
        jobs: the jobs running on it.
        raw: the scheduler's own state words (``IDLE+DRAIN``), for the node screen.
        error: why the scheduler could not be read (state is then ``unknown``).
        unreadable: the scheduler answered, but with text that could not be read whole (``error`` says
            what); else a failed or missing answer.
    """

    kind: str
    node: str
    state: str
    reason: str | None = None
    jobs: tuple[Job, ...] = ()
    raw: str | None = None
    error: str | None = None
    unreadable: bool = False

    @property
    def held_back(self) -> bool:
        """True when the scheduler sends the node no new work (drained, draining or down)."""
        return self.state in HELD_BACK

    @property
    def busy(self) -> bool:
        """True when the scheduler says jobs hold the node (allocated, mixed, draining; down with jobs)."""
        words = {w.rstrip("*") for w in (self.raw or "").upper().split("+")}
        return self.state in (ALLOCATED, MIXED, DRAINING) or bool(words & _BUSY_WORDS)

    @property
    def jobs_unseen(self) -> bool:
        """True when the scheduler says jobs hold the node yet none was read: its jobs are unknown."""
        return self.busy and not self.jobs and not self.error


__all__ = ["ALLOCATED", "DOWN", "DRAINED", "DRAINING", "HELD_BACK", "IDLE", "Job", "MIXED", "SchedulerState",
           "UNKNOWN"]

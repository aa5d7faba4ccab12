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
    """

    kind: str
    node: str
    state: str
    reason: str | None = None
    jobs: tuple[Job, ...] = ()
    raw: str | None = None
    error: str | None = None

    @property
    def held_back(self) -> bool:
        """True when the scheduler sends the node no new work (drained, draining or down)."""
        return self.state in HELD_BACK


__all__ = ["ALLOCATED", "DOWN", "DRAINED", "DRAINING", "HELD_BACK", "IDLE", "Job", "MIXED", "SchedulerState",
           "UNKNOWN"]

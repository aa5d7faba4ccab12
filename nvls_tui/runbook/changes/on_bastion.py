"""The scheduler's changes, made on the bastion: Slurm's drain and resume of the node, a job the operator chose
to cancel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nvls_tui.runbook.changes.base import SCHEDULER, Change, Command


class OnBastion(Change):
    """A scheduler's change, made on the bastion; ``remark`` (a field of each) is what the plan says after it."""

    __slots__ = ()
    where: ClassVar[str] = SCHEDULER
    remark: str

    @property
    def note(self) -> str:
        return self.remark


@dataclass(frozen=True, slots=True)
class DrainNode(OnBastion):
    """``scontrol update NodeName=N State=DRAIN Reason=...`` on the bastion: no new job lands on the node (the
    reason names the run, or the step a failed repair stopped at)."""

    node: str
    reason: str
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        # One argv word per field: no shell quoting needed.
        return (Command(("scontrol", "update", f"NodeName={self.node}", "State=DRAIN", f"Reason={self.reason}")),)

    @property
    def why(self) -> str:
        return f"no new job lands on {self.node} while the repair runs"

    def undo(self) -> Change | None:
        return ResumeNode(self.node)


@dataclass(frozen=True, slots=True)
class ResumeNode(OnBastion):
    """``scontrol update NodeName=N State=RESUME`` on the bastion: the node back in service."""

    node: str
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("scontrol", "update", f"NodeName={self.node}", "State=RESUME")),)

    @property
    def why(self) -> str:
        return f"{self.node} is repaired: back in service"


@dataclass(frozen=True, slots=True)
class CancelJob(OnBastion):
    """``scancel JOB`` on the bastion: a job the operator chose to end (a repair never signals a job's processes)."""

    job: int
    remark: str = field(default="", compare=False)

    def commands(self) -> tuple[Command, ...]:
        return (Command(("scancel", str(int(self.job)))),)

    @property
    def why(self) -> str:
        return f"the operator chose to cancel job {self.job} rather than wait for it"


__all__ = ["CancelJob", "DrainNode", "OnBastion", "ResumeNode"]

"""How a run of one node ended, in the shape of contract.md's ``repair --json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nvls_tui.model import SmokeResult
from nvls_tui.runbook.changes import Change, PlanEntry

REPAIRED = "repaired"
FAILED = "failed"
PLANNED = "planned"
REFUSED = "refused"
ABORTED = "aborted"  # stopped by the operator or a signal; ``reason`` names the step
RESTORED = "restored"  # `repair --restore` put a node back (not in contract.md, which covers repair only)
# A node the run left alone: its fabric looked healthy and the smoke re-check passed, so nothing was
# reset (contract.md: ``skipped``, with ``reason``). Never "repaired": it was not. Success for the exit status.
NO_REPAIR_NEEDED = "skipped"

OK = "ok"
STEP_FAILED = "failed"
SKIPPED = "skipped"
STEP_PLANNED = "planned"


@dataclass
class StepOutcome:
    """One step of one node: its status, the commands it ran (or would run) and why it ended so.

    Commands are shell-quoted display strings; the exact argv lists are in the audit log.
    """

    name: str
    status: str = SKIPPED
    commands: list[str] = field(default_factory=list)
    duration: float = 0.0
    message: str = ""
    # A plan's step as values (:data:`nvls_tui.runbook.plan.Entry`: a change, a read, or a note): what the plan
    # summary, the confirmation and the plan screen read (never ``commands``' words). Not in the JSON.
    entries: list[PlanEntry | str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The contract's step object (plus duration and message)."""
        return {"name": self.name, "status": self.status, "commands": list(self.commands),
                "duration": round(self.duration, 3), "message": self.message}


@dataclass
class NodeOutcome:
    """The whole run of one node.

    Attributes:
        host: the node.
        dry_run: True for a plan only.
        steps: every step of contract.md, in order.
        restored: units the restore started again.
        smoke: the judged smoke test, if one ran.
        result: repaired, failed, planned, refused, aborted, or skipped (left alone: healthy).
        message: one sentence: why it failed or was refused, or what was done.
        audit_log: the audit log's path.
        audit_fallback: the file that holds what the audit log could not take (a full disk): the
            restore's commands among them. None while the log took everything.
        no_repair_needed: the re-check found NVLS healthy, so nothing was reset.
        escalate: the fault is one a reset does not fix (report it to the vendor).
        reason: for ``aborted``, the step it stopped at and why (``smoke-test: SIGTERM``); for
            ``skipped``, why the node was left alone.
        basis: for a dry run, what the plan was made from (the approval a repair holds the node to).
        drift: how the node differed from the approved plan, when that refused the run.
        manual: what was changed by hand on the node before the run (the console's ledger), described.
        lock_stale: a restore was refused because of a stale lock (``--force`` would take it over);
            not in the JSON (the message says it, and ``lock_owner``'s status).
        lock_owner: when another run's lock refused this one, who holds it (run id, bastion, operator,
            tool PID, since, heartbeat, live/stale); None otherwise.
        kube: on Kubernetes, what the repair changed in the cluster (node, cordoned, paused labels, evicted
            pods, what the restore put back and what it could not); None without a cluster (not in the JSON).
        stays: what the run leaves holding the node out of service, each a sentence with the command that lifts
            it: a cordon or Slurm drain someone else set before the repair, the repair's own kept after a
            failure or by ``--keep-drained``, an operand label it could not put back. Also in ``message``.
        changes: every change made through the door (:mod:`nvls_tui.runbook.changes`), in order; for a dry run
            every change the run would make (not in the JSON: the steps' ``commands`` say them).
    """

    host: str
    dry_run: bool = False
    steps: list[StepOutcome] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    smoke: SmokeResult | None = None
    result: str = FAILED
    message: str = ""
    audit_log: str | None = None
    audit_fallback: str | None = None
    no_repair_needed: bool = False
    escalate: bool = False
    duration: float = 0.0
    reason: str = ""
    basis: dict[str, Any] | None = None
    drift: list[str] = field(default_factory=list)
    manual: list[str] = field(default_factory=list)
    lock_stale: bool = False
    lock_owner: dict[str, Any] | None = None
    kube: dict[str, Any] | None = None
    stays: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def step(self, name: str) -> StepOutcome:
        """The outcome of step ``name`` (created on first use, kept in contract order)."""
        for s in self.steps:
            if s.name == name:
                return s
        created = StepOutcome(name)
        self.steps.append(created)
        return created

    @property
    def ok(self) -> bool:
        """True when the node counts as a success for the exit status."""
        return self.result in (REPAIRED, PLANNED, RESTORED, NO_REPAIR_NEEDED)

    def to_json(self) -> dict[str, Any]:
        """The node object of contract.md's ``repair --json``."""
        smoke = None
        if self.smoke is not None:
            smoke = {"avg_busbw": self.smoke.avg_busbw, "passed": self.smoke.passed,
                     "out_of_bounds": self.smoke.out_of_bounds, "nvls_used": self.smoke.nvls_used,
                     "threshold": self.smoke.threshold}
        return {
            "host": self.host,
            "dry_run": self.dry_run,
            "steps": [s.to_json() for s in self.steps],
            "restored": list(self.restored),
            "smoke": smoke,
            "result": self.result,
            "message": self.message,
            "no_repair_needed": self.no_repair_needed,
            "escalate": self.escalate,
            "reason": self.reason or None,
            "audit_log": self.audit_log,
            "audit_fallback": self.audit_fallback,
            "basis": self.basis,
            "drift": list(self.drift),
            "manual_changes": list(self.manual),
            "lock_owner": self.lock_owner,
            "stays": list(self.stays),
            **({"kube": self.kube} if self.kube is not None else {}),
        }


__all__ = [
    "ABORTED",
    "FAILED",
    "NO_REPAIR_NEEDED",
    "OK",
    "PLANNED",
    "REFUSED",
    "REPAIRED",
    "RESTORED",
    "SKIPPED",
    "STEP_FAILED",
    "STEP_PLANNED",
    "NodeOutcome",
    "StepOutcome",
]

"""``repair --restore``: put a node back from the record an interrupted repair left on it.

When nvls-tui died mid-run (kill -9, a sleeping laptop, a dropped link), the node still holds
``/var/lib/nvls-tui/repair.json`` with the prior state of every unit and of persistence mode, and
the lock. This reads the record, starts what ran before, turns persistence mode back on, then
removes the record and the lock. Without a record it only clears a stale lock.
"""

from __future__ import annotations

from nvls_tui.backends.base import Backend, BackendError
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.engine import new_run_id
from nvls_tui.runbook.events import (
    EventSink,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from nvls_tui.runbook.outcome import FAILED, OK, RESTORED, STEP_FAILED, NodeOutcome
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.restore import restore
from nvls_tui.runbook.steps import RepairOptions, unlock_argv


async def restore_node(backend: Backend, options: RepairOptions | None = None, *,
                       on_event: EventSink | None = None, run_id: str | None = None,
                       audit_log: str | None = None) -> NodeOutcome:
    """Restore one node from its on-node record.

    Returns:
        An outcome with the single step ``restore``; result ``restored`` (also when there was nothing
        to restore) or ``failed``.
    """
    options = options or RepairOptions()
    outcome = NodeOutcome(host=backend.host, audit_log=audit_log)
    ctx = NodeContext(backend, options, on_event, outcome)
    ctx.step = "restore"
    step = outcome.step("restore")
    ctx.emit(RunStarted(host=ctx.host, run_id=run_id or new_run_id(), mode="restore"))
    ctx.emit(StepStarted(host=ctx.host, step="restore"))
    began = options.clock()
    try:
        found = await ctx.run(("cat", RECORD_FILE), privileged=True, abortable=False)
        unreadable = missing_evidence("record", found)
        if unreadable is not None:  # fail closed: "no record" must be a fact, not a failed cat
            raise ValueError(f"{unreadable.detail}; restore the units by hand or fix that first")
        record = RepairRecord.from_json(found.stdout) if found.ok else None
        if record is None:
            if found.ok and found.stdout.strip():
                raise ValueError(f"{RECORD_FILE} is not a record nvls-tui can read; restore the units by hand")
            cleared = await ctx.run(unlock_argv(), privileged=True, abortable=False)
            outcome.result = RESTORED
            outcome.message = ("no interrupted repair on this node" +
                               ("; removed a stale lock" if cleared.ok else ""))
        else:
            report = await restore(ctx, record.units, record.persistence, remove_record=True, release_lock=True)
            outcome.restored = list(report.units)
            if report.ok:
                outcome.result = RESTORED
                what = ", ".join(report.units) or "nothing needed starting"
                pm = f"; persistence mode on GPUs {report.persistence_gpus}" if report.persistence_gpus else ""
                outcome.message = f"restored the repair of {record.started} by {record.operator}: {what}{pm}"
            else:
                outcome.result = FAILED
                outcome.message = "could not put back: " + ", ".join(report.failed)
    except (BackendError, ValueError) as exc:
        outcome.result = FAILED
        outcome.message = f"restore failed: {exc}"
    step.status = OK if outcome.result == RESTORED else STEP_FAILED
    step.duration = options.clock() - began
    step.message = outcome.message
    ctx.emit(StepFinished(host=ctx.host, step="restore", status=step.status, duration=step.duration,
                          message=outcome.message))
    ctx.emit(RunFinished(host=ctx.host, result=outcome.result, message=outcome.message, duration=step.duration))
    return outcome


__all__ = ["RESTORED", "restore_node"]

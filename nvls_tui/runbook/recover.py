"""``repair --restore``: put a node back from the record an interrupted repair left on it.

When nvls-tui died mid-run (kill -9, a sleeping laptop, a dropped link), the node still holds
``/var/lib/nvls-tui/repair.json`` with the prior state of every unit and of persistence mode, and
maybe the lock. The restore first takes the node's lock itself: a lock whose owner is alive (its
heartbeat is fresh) refuses the restore, whatever ``--force`` says, and names the owner; a stale one
is taken over only with ``force`` (audited). Under the lock it reads the record, starts what ran
before (only units a repair stops, and those the record names as stopped by hand), turns persistence
mode back on, then removes the record and releases the lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nvls_tui.backends.base import Backend, BackendError
from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import kube_identity, kube_repair
from nvls_tui.runbook.context import NodeContext, Refused
from nvls_tui.runbook.engine import new_run_id
from nvls_tui.runbook.events import (
    EventSink,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from nvls_tui.runbook.kube_repair import KubeHold
from nvls_tui.runbook.lock import STALE, UNJUDGED, LockHeld, NodeLock, whoami
from nvls_tui.runbook.outcome import FAILED, OK, REFUSED, RESTORED, STEP_FAILED, NodeOutcome
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.restore import restore
from nvls_tui.runbook.steps import RepairOptions


async def _lock(lock: NodeLock, force: bool, outcome: NodeOutcome) -> None:
    """Take the node's lock for the restore; a stale one (or one that cannot be judged) only with ``force``.

    Raises:
        LockHeld, Refused: not taken (the message names the owner and whether it is live).
    """
    try:
        await lock.take()
    except LockHeld as held:
        outcome.lock_stale = held.status in (STALE, UNJUDGED)
        if not outcome.lock_stale or not force:
            raise
        await lock.take_over(held)


def _cluster_back(ctx: NodeContext, record: RepairRecord, kube: Kubectl | None,
                  outcome: NodeOutcome) -> Callable[[], Awaitable[list[str]]] | None:
    """What puts the record's cluster changes back (None: the record names none): the paused labels, and the
    cordon kept with the step the crashed run was in (no smoke test passed)."""
    hold = KubeHold.from_record(record.kube)
    if hold is None:
        return None

    async def back() -> list[str]:
        if kube is None:
            return [f"the labels and cordon of Kubernetes node {hold.node} (no cluster is configured here: run "
                    f"`nvls-tui repair --restore` again with --kubeconfig)"]
        if hold.node != kube.node_name(ctx.host):
            # The record is a file on the node: it never steers the restore to another node of the cluster.
            return [f"the labels and cordon of Kubernetes node {hold.node!r}, which the record names, though this "
                    f"target is node {kube.node_name(ctx.host)} there: nothing was changed in the cluster"]
        # The record names the node, and the target maps to that name: the Node must still prove it is this
        # machine (the kubeconfig's context may have changed since, or the name moved to another machine), or
        # the cluster is left as it is and the record stays for a restore against the right cluster.
        try:
            found = await kube_repair.read_node(ctx, kube, hold.node, abortable=False)
        except KubeError as exc:
            return [f"the labels and cordon of Kubernetes node {hold.node}: the cluster could not be read to prove "
                    f"the node is this machine ({exc}); nothing was changed in the cluster"]
        if found is None:
            return [f"the labels and cordon of Kubernetes node {hold.node}: the cluster has no such node (another "
                    f"cluster than the repair's?); nothing was changed in the cluster"]
        refusal, _ = await kube_identity.check(ctx, kube, found, abortable=False)
        if refusal is not None:
            return [f"the labels and cordon of Kubernetes node {hold.node}: {refusal}"]
        step = kube_repair.step_in_log(record.audit_log, record.host) or kube_repair.INTERRUPTED
        try:
            done, failed = await kube_repair.settle(ctx, kube, hold, passed=False, stopped_at=step, blind=True,
                                                    read=found)
        except KubeError as exc:
            return [f"the cluster ({exc})"]
        outcome.kube = {"node": hold.node, "restored": done, "failed": failed}
        return failed

    return back


async def _restore_under_lock(ctx: NodeContext, lock: NodeLock, outcome: NodeOutcome,
                              kube: Kubectl | None = None) -> None:
    """Read the record and put back what it names (the lock is held)."""
    found = await ctx.run(("cat", RECORD_FILE), privileged=True, abortable=False, bookkeeping=True)
    unreadable = missing_evidence("record", found)
    if unreadable is not None:  # fail closed: "no record" must be a fact, not a failed cat
        raise ValueError(f"{unreadable.detail}; restore the units by hand or fix that first")
    record = RepairRecord.from_json(found.stdout) if found.ok else None
    if record is None:
        if found.ok and found.stdout.strip():
            raise ValueError(f"{RECORD_FILE} is not a record nvls-tui can read; restore the units by hand")
        left = await lock.release(ctx.options.restore_attempts)
        outcome.result = FAILED if left else RESTORED
        outcome.message = "no interrupted repair on this node" + (f"; could not release {left}" if left else "")
        return
    report = await restore(ctx, record.units, record.persistence, record_of=record.run_id, lock=lock,
                           manual=record.manual, before_record=_cluster_back(ctx, record, kube, outcome))
    outcome.restored = list(report.units)
    if report.ok:
        outcome.result = RESTORED
        what = ", ".join(report.units) or "nothing needed starting"
        pm = f"; persistence mode on GPUs {report.persistence_gpus}" if report.persistence_gpus else ""
        outcome.message = f"restored the repair of {record.started} by {record.operator}: {what}{pm}"
        kept = [d for d in (outcome.kube or {}).get("restored", []) if "stays cordoned" in d]
        if kept:
            outcome.stays = kept
            outcome.message += "; " + "; ".join(kept)
    else:
        outcome.result = FAILED
        outcome.message = "could not put back: " + ", ".join(report.failed)


async def restore_node(backend: Backend, options: RepairOptions | None = None, *,
                       on_event: EventSink | None = None, run_id: str | None = None,
                       audit_log: str | None = None, force: bool = False,
                       operator: str | None = None, kube: Kubectl | None = None) -> NodeOutcome:
    """Restore one node from its on-node record, under the node's lock.

    Args:
        force: take over a stale lock (never a live one).
        operator: who asks (written into the lock's owner file).
        kube: the cluster, where one is configured (a record that names a Kubernetes node needs it).

    Returns:
        An outcome with the single step ``restore``; result ``restored`` (also when there was nothing
        to restore), ``refused`` (another run holds the lock: the message names it) or ``failed``.
    """
    options = options or RepairOptions()
    run_id = run_id or new_run_id()
    outcome = NodeOutcome(host=backend.host, audit_log=audit_log)
    ctx = NodeContext(backend, options, on_event, outcome)
    ctx.step = "restore"
    step = outcome.step("restore")
    ctx.emit(RunStarted(host=ctx.host, run_id=run_id, mode="restore"))
    ctx.emit(StepStarted(host=ctx.host, step="restore"))
    began = options.clock()
    lock = NodeLock(ctx, run_id, operator or whoami())
    try:
        await _lock(lock, force, outcome)
        await _restore_under_lock(ctx, lock, outcome, kube)
    except Refused as exc:
        outcome.result = REFUSED
        outcome.message = str(exc)
    except (BackendError, ValueError) as exc:
        outcome.result = FAILED
        outcome.message = f"restore failed: {exc}"
    finally:
        if lock.held:  # a failure before the restore's own release: give the lock back (ours only)
            try:
                left = await lock.release(options.restore_attempts)
            except BackendError as exc:
                left = str(exc)
            if left:
                outcome.message += f"; could not release {left}"
    step.status = OK if outcome.result == RESTORED else STEP_FAILED
    step.duration = options.clock() - began
    step.message = outcome.message
    ctx.emit(StepFinished(host=ctx.host, step="restore", status=step.status, duration=step.duration,
                          message=outcome.message))
    ctx.emit(RunFinished(host=ctx.host, result=outcome.result, message=outcome.message, duration=step.duration))
    return outcome


__all__ = ["RESTORED", "restore_node"]

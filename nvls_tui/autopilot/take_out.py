"""A node the autopilot gives up on, taken out of service for a person: through the runbook's one door.

The autopilot's one change outside a repair: a node whose budget is spent (a hardware ticket) is left drained
in Slurm and, on a Kubernetes cluster, cordoned with nvls-tui's annotation naming why. Each is a typed change
(:class:`~nvls_tui.runbook.changes.DrainNode`, :class:`~nvls_tui.runbook.changes.Cordon`,
:class:`~nvls_tui.runbook.changes.Annotate`) made through :func:`nvls_tui.runbook.door.perform`: announced
and on the audit log before it goes out, and fenced by the node's repair lock, which is taken first
(:class:`~nvls_tui.runbook.lock.NodeLock`, as the repair takes it) and given back after. A node whose lock
another run holds is not touched (that run's repair or restore decides what the node needs). On Kubernetes
the Node must prove it is this machine first (``kube_repair.survey``), as before a repair.

Unlike the rest of this package this module changes nodes; it sits in ``autopilot`` because only the
autopilot escalates, and it reaches the node only through the runbook.
"""

from __future__ import annotations

import asyncio

from nvls_tui.audit.log import AuditLog
from nvls_tui.audit.writer import AuditWriter
from nvls_tui.backends.base import Backend, BackendError
from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.runbook.changes import Annotate, Cordon, DrainNode
from nvls_tui.runbook.context import Aborted, NodeContext, Refused
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.events import fan_out
from nvls_tui.runbook.kube_repair import STOPPED_AT, make, prefix, survey
from nvls_tui.runbook.lock import NodeLock
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.scheduling import SchedulerHook
from nvls_tui.runbook.steps import RepairOptions
from nvls_tui.textsafe import one_line

STEP = "take-out-of-service"


def annotation(reason: str) -> str:
    """The value of nvls-tui's annotation on a node the autopilot left cordoned: what stopped, and why."""
    return f"autopilot escalation ({one_line(reason, 200)})"


async def take_out_of_service(ctx: NodeContext, *, run_id: str, operator: str, reason: str,
                              scheduler: SchedulerHook | None, kube: Kubectl | None) -> tuple[list[str], list[str]]:
    """Drain (Slurm) and cordon with the reason (Kubernetes) the node of ``ctx``, under its lock.

    Args:
        reason: the drain's reason and the annotation's words (the budget's hardware ticket).
        scheduler: the node's Slurm (None: not in one); kube: its cluster's kubectl (None: not in one).

    Returns:
        (what was done, what could not be done), in words.

    Raises:
        Refused: the lock could not be taken (another run holds it: its owner is named), nothing was changed.
    """
    lock = NodeLock(ctx, run_id, operator)
    ctx.step = STEP
    await lock.take()
    done: list[str] = []
    failed: list[str] = []
    try:
        if scheduler is not None:
            result = await perform(ctx, DrainNode(scheduler.node, reason), via=scheduler.command)
            (done if result.ok else failed).append(
                f"Slurm drain of {scheduler.node}" + ("" if result.ok else f" ({one_line(result.stdout, 200)})"))
        if kube is not None:
            await _cordon(ctx, kube, reason, done, failed)
    finally:
        left = await lock.release(attempts=3)
        if left is not None:
            failed.append(f"{left} could not be given back")
    return done, failed


async def _cordon(ctx: NodeContext, kube: Kubectl, reason: str, done: list[str], failed: list[str]) -> None:
    """Cordon (unless it is already) and annotate the node, once it proved it is this machine."""
    name = kube.node_name(ctx.host)
    try:
        hold = await survey(ctx, kube, name)
    except Refused as exc:
        failed.append(f"the cordon of {name} ({exc})")
        return
    if hold is None:
        failed.append(f"the cordon of {name} (the cluster has no such node)")
        return
    kubectl = prefix(kube)
    if hold.cordoned_before and not hold.annotated:
        # Someone else's cordon: left as it is, and not claimed (nvls-tui's annotation would let a passing
        # repair lift it).
        done.append(f"{name} was cordoned already (not by nvls-tui): left as it is")
        return
    try:
        if not hold.cordoned_before:
            status, said = await make(ctx, kube, Cordon(name, kubectl), abortable=False)
            if status != 0:
                failed.append(f"the cordon of {name} ({one_line(said, 200)})")
                return
            done.append(f"{name} cordoned")
        status, said = await make(ctx, kube, Annotate(name, annotation(reason), kubectl), abortable=False)
    except KubeError as exc:
        failed.append(f"the cordon of {name} ({exc})")
        return
    (done if status == 0 else failed).append(f"the annotation {STOPPED_AT} on {name}"
                                             + ("" if status == 0 else f" ({one_line(said, 200)})"))




async def escalate(backend: Backend, options: RepairOptions, *, audit_dir: str | None, run_id: str, operator: str,
                   reason: str, scheduler: SchedulerHook | None, kube: Kubectl | None) -> tuple[list[str], list[str], str]:
    """:func:`take_out_of_service` in its own audit log (``escalate-RUN.jsonl``, as a repair has its own):
    (what was done, what could not be done, the log's path). A lock another run holds is one thing not done."""
    log = await asyncio.to_thread(AuditLog.create, audit_dir, run_id, kind="escalate")
    writer = AuditWriter(log)
    ctx = NodeContext(backend, options, fan_out(writer), NodeOutcome(host=backend.host, audit_log=str(log.path)),
                      durable=writer.flush)
    try:
        return (*await take_out_of_service(ctx, run_id=run_id, operator=operator, reason=reason,
                                           scheduler=scheduler, kube=kube), str(log.path))
    except (Refused, Aborted, BackendError) as exc:
        return [], [f"{backend.host} was not taken out of service: {one_line(str(exc), 300)}"], str(log.path)
    finally:
        await asyncio.to_thread(writer.close)


__all__ = ["STEP", "annotation", "escalate", "take_out_of_service"]

"""Several nodes: side by side (parallel), one after another (serial), or a canary first.

Canary repairs the first node alone, then the rest one by one, and stops at the first failure: the
nodes not attempted are reported ``refused`` with the reason, never touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from nvls_tui.backends.base import Backend
from nvls_tui.kube.client import Kubectl
from nvls_tui.runbook.engine import Runbook, new_run_id
from nvls_tui.runbook.events import EventSink, Note, RunFinished, RunStarted
from nvls_tui.runbook.kube_shared import shared_nodes
from nvls_tui.runbook.ledger import ManualChange
from nvls_tui.runbook.outcome import ABORTED, REFUSED, NodeOutcome
from nvls_tui.runbook.scheduling import SchedulerHook
from nvls_tui.runbook.steps import STEPS, Operator, RepairOptions

STRATEGIES = ("parallel", "serial", "canary")


class RunGroup:
    """The runbooks of one run, so that a signal (or the console's quit) stops them all at once.

    Attributes:
        books: every node's runbook, once :func:`run_many` made them.
        interrupted: why the run was interrupted (None while it was not).
        aborted: nodes the operator aborted one by one (a node not started yet never starts).
    """

    def __init__(self) -> None:
        self.books: list[Runbook] = []
        self.interrupted: str | None = None
        self.aborted: set[str] = set()

    def abort(self, host: str) -> None:
        """Abort one node at its next command (it restores what it changed); the others go on."""
        self.aborted.add(host)
        for book in self.books:
            if book.host == host:
                book.abort()

    def interrupt(self, reason: str) -> None:
        """Stop every node now (each restores what it changed); nodes not started yet never start."""
        self.interrupted = self.interrupted or reason
        for book in self.books:
            book.interrupt(reason)


def refused_before(host: str, options: RepairOptions, reason: str, audit_log: str | None, run_id: str,
                   on_event: EventSink | None) -> NodeOutcome:
    """A node refused before its runbook starts (nothing run on it): preflight says why, as a plan's refusal
    does, and the audit log has its start and end."""
    from nvls_tui.runbook.plan import NOT_RUN

    outcome = NodeOutcome(host=host, dry_run=options.dry_run, result=REFUSED, message=reason, audit_log=audit_log)
    for name in STEPS:
        outcome.step(name).message = NOT_RUN
    outcome.step("preflight").message = reason
    if on_event is not None:
        on_event(RunStarted(host=host, run_id=run_id, dry_run=options.dry_run))
        on_event(RunFinished(host=host, result=REFUSED, message=reason))
    return outcome


def _not_attempted(backend: Backend, options: RepairOptions, reason: str, audit_log: str | None,
                   result: str = REFUSED) -> NodeOutcome:
    outcome = NodeOutcome(host=backend.host, dry_run=options.dry_run, result=result, message=reason,
                          audit_log=audit_log)
    for name in STEPS:
        outcome.step(name)
    return outcome


async def run_many(backends: Sequence[Backend], options: RepairOptions | None = None, *,
                   strategy: str = "parallel", on_event: EventSink | None = None,
                   operator: Operator | None = None, run_id: str | None = None,
                   audit_log: str | None = None, group: RunGroup | None = None,
                   approved: Mapping[str, Mapping[str, Any]] | None = None,
                   manual: Mapping[str, Sequence[ManualChange]] | None = None, put_back_manual: bool = True,
                   durable: Callable[[], Awaitable[bool]] | None = None,
                   schedulers: Mapping[str, SchedulerHook] | None = None,
                   kubes: Mapping[str, Kubectl] | None = None) -> list[NodeOutcome]:
    """Repair (or plan) every node with ``strategy``; outcomes come back in the order of ``backends``.

    Args:
        backends: one per node.
        options: shared by every node.
        strategy: parallel, serial or canary.
        on_event: receives the events of every node (each carries its host).
        operator: asked about holders only the operator may stop.
        run_id: one id for the whole run (the audit log's).
        audit_log: its path, echoed in each outcome.
        group: where the runbooks are registered, to interrupt them (signals) or abort one.
        approved: per node, the basis of the plan the operator approved (drift is refused).
        manual: per node, what was changed by hand before the run (the console's ledger).
        put_back_manual: the restore starts the units stopped by hand again.
        durable: awaited before each command (the audit log holds everything so far).
        schedulers: per node, its scheduler (Slurm): drained before, put back after.
        kubes: per node, its Kubernetes cluster: cordoned, operands paused and workloads evicted through the
            API instead of stopping kubelet, all put back after.

    Raises:
        ValueError: an unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    options = options or RepairOptions()
    run_id = run_id or new_run_id()
    # Two targets on one Kubernetes node would undo each other there: both refused before anything runs.
    shared = shared_nodes([b.host for b in backends], kubes or {})
    if shared:
        refused = {h: refused_before(h, options, why, audit_log, run_id, on_event) for h, why in shared.items()}
        rest = [b for b in backends if b.host not in shared]
        ran = iter(await run_many(rest, options, strategy=strategy, on_event=on_event, operator=operator,
                                  run_id=run_id, audit_log=audit_log, group=group, approved=approved, manual=manual,
                                  put_back_manual=put_back_manual, durable=durable, schedulers=schedulers,
                                  kubes=kubes) if rest else [])
        return [refused[b.host] if b.host in refused else next(ran) for b in backends]
    books = [Runbook(b, options, on_event=on_event, operator=operator, run_id=run_id, audit_log=audit_log,
                     approved=(approved or {}).get(b.host), manual=(manual or {}).get(b.host, ()),
                     put_back_manual=put_back_manual, durable=durable,
                     scheduler=(schedulers or {}).get(b.host), kube=(kubes or {}).get(b.host))
             for b in backends]
    group = group if group is not None else RunGroup()
    group.books.extend(books)
    if group.interrupted:  # interrupted before its runbooks existed: none of them starts
        for book in books:
            book.interrupt(group.interrupted)
    # A dry run changes nothing, so its nodes can always be read side by side.
    if strategy == "parallel" or options.dry_run:
        return list(await asyncio.gather(*(book.run() for book in books)))
    outcomes: list[NodeOutcome] = []
    stopped: str | None = None
    for index, book in enumerate(books):
        if group.interrupted and not stopped:
            stopped = f"not attempted: the run was interrupted ({group.interrupted})"
        if stopped:
            outcomes.append(_not_attempted(backends[index], options, stopped, audit_log))
            continue
        if book.host in group.aborted:
            outcomes.append(_not_attempted(backends[index], options, "aborted by the operator before it started; "
                                           "nothing was changed", audit_log, ABORTED))
            continue
        outcome = await book.run()
        outcomes.append(outcome)
        if strategy == "canary" and not outcome.ok:
            what = "the canary" if index == 0 else "an earlier node"
            stopped = f"not attempted: {what} ({book.host}) ended {outcome.result}"
            if on_event:
                on_event(Note(host=book.host, message=f"canary strategy: stopping after {book.host}", level="warning"))
    return outcomes


__all__ = ["STRATEGIES", "RunGroup", "refused_before", "run_many"]

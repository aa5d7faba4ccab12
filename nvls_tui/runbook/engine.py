"""The repair of one node as an explicit state machine that cannot run its steps out of order.

``Runbook(backend).run()`` walks the steps of contract.md in order; the first step that fails sends
the run straight to ``restore``, which also runs on abort, on cancellation and on any exception, so
the node always ends with its units and settings as they were. The engine knows nothing of screens:
it talks to a :class:`~nvls_tui.backends.base.Backend` and reports through events.

What each step does is the run's program (:mod:`nvls_tui.runbook.program`), the same one the dry run lists: a
step walks its entries, each change through the door, each read run, and at each decision point (``Decide``) it
does what the point names from what it reads then.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import getpass
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from nvls_tui.backends.base import (
    Backend,
    BackendError,
    CommandFailed,
    CommandTimeout,
    OutputTooLarge,
)
from nvls_tui.diagnosis import fm_container
from nvls_tui.kube.client import Kubectl, KubeError
from nvls_tui.model import NodeState
from nvls_tui.model.kube import KubePod
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import fabric, kube_absent, kube_repair, preflight, program, quiesce, scheduling, smoke
from nvls_tui.runbook.changes import Change, DrainNode, Read, ResetGpus, UnitChange, WriteFile
from nvls_tui.runbook.context import Aborted, NodeContext, Refused, StepFailed
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.drift import drift
from nvls_tui.runbook.events import (
    EventSink,
    ManualChanges,
    NodeObserved,
    ProcessSignalled,
    RunbookEvent,
    RunFinished,
    RunStarted,
    StepFinished,
)
from nvls_tui.runbook.kube_repair import KubeHold
from nvls_tui.runbook.ledger import ManualChange, put_back
from nvls_tui.runbook.lock import NodeLock
from nvls_tui.runbook.outcome import (
    ABORTED,
    FAILED,
    NO_REPAIR_NEEDED,
    OK,
    REFUSED,
    REPAIRED,
    SKIPPED,
    STEP_FAILED,
    NodeOutcome,
    StepOutcome,
)
from nvls_tui.runbook.program import Known, prior_units
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.restore import ORDER as RESTORE_ORDER
from nvls_tui.runbook.restore import RestoreReport, restore, restored_message
from nvls_tui.runbook.scheduling import DrainHold, SchedulerHook
from nvls_tui.runbook.smoke_words import failure_words
from nvls_tui.runbook.steps import (
    FM_UNIT,
    STEPS,
    Operator,
    RepairOptions,
    persistence_modes,
    unit_states,
)
from nvls_tui.runbook.summary import summarize
from nvls_tui.textsafe import one_line
from nvls_tui.words import count

# How many signalled processes an abort's message names (the audit log names every one).
SHOWN_PROCESSES = 3
# Preflight's decision points that come before the record's check (under the lock, and the scheduler's drain).
_BEFORE_RECORD_CHECK = frozenset({program.LOCK, program.DRAIN, program.JOBS})


def stopped_words(signalled: Sequence[ProcessSignalled]) -> str:
    """``2 processes were stopped with SIGTERM (4242 python train.py, 4243 ...); the restore does not start
    processes again``.

    The restore puts units and settings back, never a process the run ended (a user's job is gone): an
    abort after a signal must say so, not that the node is as it was.
    """
    by_signal: dict[str, list[ProcessSignalled]] = {}
    for event in signalled:
        by_signal.setdefault(event.signal, []).append(event)
    parts = []
    for name, events in by_signal.items():
        shown = ", ".join(f"{e.pid} {one_line(e.command)[:40]}" for e in events[:SHOWN_PROCESSES])
        more = f", +{len(events) - SHOWN_PROCESSES} more" if len(events) > SHOWN_PROCESSES else ""
        parts.append(f"{count(len(events), 'process')} {'was' if len(events) == 1 else 'were'} stopped with "
                     f"{name} ({shown}{more})")
    return " and ".join(parts) + "; the restore does not start processes again"


def aborted_words(outcome: NodeOutcome, step: str, signalled: Sequence[ProcessSignalled] = ()) -> str:
    """``aborted at fabric-manager: GPUs reset, fabric not verified — run the repair again``.

    What an abort leaves behind depends on how far the run got; the operator must read that, not
    a bare "aborted" (an abort after the reset leaves the GPUs reset and the fabric unproven).
    ``signalled``: the processes the run signalled (the restore cannot bring them back).
    """
    done = {s.name for s in outcome.steps if s.status == OK}
    if step == "reset" and "reset" not in done:
        where = "the reset may have begun, fabric not verified"  # cut short in flight: assume the worst
    elif "reset" not in done and signalled:
        where = f"nothing was reset; {stopped_words(signalled)}"
    elif "reset" not in done:
        where = "nothing was reset; the node is as it was"
    elif "verify-fabric" not in done:
        where = "GPUs reset, fabric not verified"
    else:
        where = "GPUs reset and fabric verified, NVLS not smoke-tested"
    return f"aborted at {step}: {where} — run the repair again"


def lock_lost_words(host: str, step: str, why: str) -> str:
    """``LOCK LOST at reset: ...``: the run stopped and put nothing back, and what the operator does now."""
    return (f"LOCK LOST at {step}: {why}. Nothing was put back by this run: the run that holds the lock now "
            f"owns {host} and restores it; `nvls-tui check {host}` shows what the node is like now")


def new_run_id() -> str:
    """A short, sortable id for one run: UTC time plus a random suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


class Runbook:
    """The repair of one node.

    Example:
        >>> outcome = await Runbook(backend, RepairOptions(), on_event=print).run()

    Attributes:
        outcome: filled in as the run goes (readable even after a cancellation).
        context: the node context (``abort()`` stops the run at the next command).
        approved: the basis of the plan the operator approved (:func:`~nvls_tui.runbook.drift.plan_basis`);
            preflight refuses when the node differs from it in what matters. None: no plan to hold to.
        manual: what the operator changed by hand on the node before this run (the ledger); units
            stopped by hand are put back by the restore unless ``put_back_manual`` is False.
    """

    def __init__(self, backend: Backend, options: RepairOptions | None = None, *,
                 on_event: EventSink | None = None, operator: Operator | None = None,
                 run_id: str | None = None, operator_name: str | None = None,
                 audit_log: str | None = None, approved: Mapping[str, Any] | None = None,
                 manual: Sequence[ManualChange] = (), put_back_manual: bool = True,
                 durable: Callable[[], Awaitable[bool]] | None = None,
                 scheduler: SchedulerHook | None = None, kube: Kubectl | None = None) -> None:
        self.options = options or RepairOptions()
        self.run_id = run_id or new_run_id()
        self.operator_name = operator_name or _whoami()
        self.approved = approved
        self.manual = tuple(manual)
        self.put_back_manual = put_back_manual
        self.outcome = NodeOutcome(host=backend.host, dry_run=self.options.dry_run, audit_log=audit_log)
        # The processes this run signalled: an abort's words must say they are gone for good.
        self.signalled: list[ProcessSignalled] = []

        def sink(event: RunbookEvent) -> None:
            if isinstance(event, ProcessSignalled) and event.outcome == "signalled":
                self.signalled.append(event)
            if on_event is not None:
                on_event(event)

        self.context = NodeContext(backend, self.options, sink, self.outcome, operator, durable)
        self._locked = False
        self.lock: NodeLock | None = None
        self._manual_units: tuple[str, ...] = ()
        self._record_written = False
        self._prior_units: dict[str, str] = {}
        self._prior_pm: dict[int, str] = {}
        self._prior_known = False
        self._state: NodeState | None = None  # as preflight read it: the program of the later steps is built from it
        self._t0: str | None = None
        self._cursor: str | None = None
        self._interrupted: str | None = None
        self._steps_task: asyncio.Future | None = None
        self.scheduler = scheduler
        self._drain: DrainHold | None = None
        # On Kubernetes (a cluster configured and the node in it): cordon, operand labels, evictions.
        self.kube = kube
        self._kube: KubeHold | None = None
        self._driver_pod: KubePod | None = None  # FM runs in it: its restart is the reset
        self._stopped_at: str | None = None

    @property
    def host(self) -> str:
        """The node."""
        return self.context.host

    def abort(self) -> None:
        """Stop at the next command; everything is restored and the result is ``aborted``."""
        self.context.abort()

    def interrupt(self, reason: str) -> None:
        """Stop now, even inside a long command (a reset, the smoke test), then restore.

        The step in flight is cancelled (its remote command is ended), the restore runs shielded,
        and the result is ``aborted`` with ``reason`` (``SIGTERM received``). A run not started yet
        never starts.
        """
        self._interrupted = self._interrupted or reason
        self.context.abort()
        if self._steps_task is not None and not self._steps_task.done():
            self._steps_task.cancel()

    # -- the run ------------------------------------------------------------------------------------

    async def run(self) -> NodeOutcome:
        """Repair the node (or plan it, with ``dry_run``). Never raises except on cancellation.

        Returns:
            The node's outcome; its ``result`` is repaired, failed, refused or planned.
        """
        if self.options.dry_run:
            from nvls_tui.runbook.plan import plan_node

            return await plan_node(self.context, self.run_id, manual=self.manual,
                                   put_back_manual=self.put_back_manual,
                                   scheduler_node=self.scheduler.node if self.scheduler is not None else None,
                                   kube=self.kube)
        ctx = self.context
        started = self.options.clock()
        for name in STEPS:
            self.outcome.step(name)
        ctx.emit(RunStarted(host=self.host, run_id=self.run_id, dry_run=False))
        cancelled: asyncio.CancelledError | None = None
        try:
            if self._interrupted:
                raise Aborted(self._interrupted)
            self._steps_task = asyncio.ensure_future(self._steps())
            try:
                await self._steps_task
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if self._interrupted and not (me is not None and me.cancelling()):
                    raise Aborted(self._interrupted) from None  # our own interrupt, not a cancel of run()
                raise
        except Refused as exc:
            self._fail_current(str(exc), REFUSED)
        except StepFailed as exc:
            self.outcome.escalate = exc.escalate
            self._fail_current(str(exc), FAILED)
        except Aborted as exc:
            step = ctx.step or "preflight"
            if ctx.lock_lost is not None:  # a fence refused, or a heartbeat found the lock gone
                self._fail_lock_lost(step, ctx.lock_lost)
            else:
                self.outcome.reason = f"{step}: {exc}"
                self._fail_current(f"{aborted_words(self.outcome, step, self.signalled)} ({exc})", ABORTED)
        except CommandFailed as exc:
            # The node answered but refused (sudo wants a password): not a lost node, say what it is.
            self._fail_current(f"{ctx.step} could not go on: {exc}", FAILED)
        except (CommandTimeout, OutputTooLarge) as exc:
            # The node answered, but a command hung or printed without end: it was stopped.
            self._fail_current(f"{ctx.step} stopped: {exc}", FAILED)
        except KubeError as exc:
            # kubectl hung, printed without end or could not be started: its one line, never a repr.
            self._fail_current(f"{ctx.step} stopped: {exc}", FAILED)
        except BackendError as exc:
            self._fail_current(f"lost the node during {ctx.step}: {exc}", FAILED)
        except asyncio.CancelledError as exc:
            cancelled = exc
            self._fail_current("the run was cancelled", FAILED)
        except Exception as exc:  # noqa: BLE001 - a bug must still end in a restore
            self._fail_current(f"internal error during {ctx.step}: {exc!r}", FAILED)
        finally:
            self._stopped_at = None if self.outcome.result in (REPAIRED, NO_REPAIR_NEEDED) else (ctx.step or "preflight")
            cancelled = await self._finish(cancelled) or cancelled
        self.outcome.duration = self.options.clock() - started
        ctx.emit(RunFinished(host=self.host, result=self.outcome.result, message=self.outcome.message,
                             duration=self.outcome.duration))
        if cancelled is not None:
            raise cancelled
        return self.outcome

    async def _steps(self) -> None:
        """preflight .. smoke-test, each walking its entries of the run's program; each raises to stop the run."""
        state = await self._step("preflight", self._preflight)
        if self.outcome.no_repair_needed:
            return
        await self._step("quiesce", lambda: self._quiesce(state))
        await self._step("verify-no-holders", lambda: self._walk(state, "verify-no-holders"))
        await self._step("reset", lambda: self._walk(state, "reset"))
        await self._step("fabric-manager", lambda: self._walk(state, "fabric-manager"))
        await self._step("verify-fabric", lambda: self._walk(state, "verify-fabric"))
        result = await self._step("smoke-test", lambda: smoke.smoke_test(self.context, state,
                                                                          self._program(state, "smoke-test")))
        self.outcome.smoke = result
        if not result.passed:
            raise StepFailed(f"the NVLS smoke test failed after the repair: {failure_words(result.errors)}")
        self.outcome.result = REPAIRED
        self.outcome.message = (f"NVLS works again: average bus bandwidth {result.avg_busbw:.1f} GB/s "
                                f"(threshold {result.threshold:.0f})")

    def _known(self, *, preflight: bool = False) -> Known:
        """What the program of this run's steps depends on besides the node's state (runbook/program.py).

        ``preflight``: before the cluster is read (a configured cluster is read; whether the node is repaired through
        it is known after); then the cluster's path is the one the read found. The cluster's own entries are made by
        its module (runbook/kube_repair.py) at the program's decision points.
        """
        on_cluster = self.kube is not None if preflight else self._kube is not None
        return Known(smoke_threshold=self.options.smoke_threshold, thresholds=dict(self.options.thresholds),
                     restore_also=put_back(self.manual) if self.put_back_manual else {},
                     kube={} if on_cluster else None, driver_pod=self._driver_pod is not None,
                     scheduler_node=self.scheduler.node if self.scheduler is not None else None, run_id=self.run_id,
                     keep_drained=self.options.keep_drained, recheck=self.options.recheck_transient,
                     cursor=self._cursor or program.CURSOR)

    def _program(self, state: NodeState, step: str) -> list[program.Entry]:
        """The entries of ``step`` for this run, from the one program the dry run shows."""
        return program.BUILDERS[step](state, self._known(preflight=step == "preflight"))

    async def _walk(self, state: NodeState, step: str) -> str | None:
        """Make ``step``'s entries in order: each change through the door, each read run, each decision point the
        step's own; the step's words are the last answer that said something (None: nothing to say)."""
        said = None
        for entry in self._program(state, step):
            said = await self._entry(state, entry) or said
        return said

    async def _entry(self, state: NodeState, entry: program.Entry) -> str | None:
        """One entry of a step after preflight (see :meth:`_walk`)."""
        ctx = self.context
        if isinstance(entry, str):
            return None  # a line the plan says (a note)
        if isinstance(entry, program.Decide):
            return await self._decide(state, entry)
        if isinstance(entry, ResetGpus):
            return await fabric.reset(ctx, entry)
        if isinstance(entry, UnitChange) and entry.unit == FM_UNIT and entry.verb in ("reset-failed", "start"):
            await fabric.start_unit(ctx, entry)
            return None
        if isinstance(entry, Read):
            await ctx.run(entry.argv, bookkeeping=entry.bookkeeping)
            return None
        if not isinstance(entry, Change):
            return None  # a wait or a remark the plan shows: the cluster's module makes its own (kube_repair.py)
        result = await perform(ctx, entry)
        if not result.ok:
            raise StepFailed(f"`{entry.display}` failed (exit status {result.exit_status})")
        return None

    async def _decide(self, state: NodeState, decide: program.Decide) -> str | None:
        """A decision point of a step after preflight: what the step does there, from what it reads then."""
        ctx = self.context
        match decide.point:
            case program.NO_HOLDERS:
                # The driver pod's processes (FM) stay on the devices where its restart is the reset (no FM start
                # follows then). Before FM starts it is proven again: a holder may have come back since the reset.
                await quiesce.verify_no_holders(ctx, state, spare=self._spare())
                return None
            case program.DRIVER_POD if self._driver_pod is not None and self._kube is not None \
                    and self.kube is not None:
                return await kube_repair.restart_driver_pod(ctx, self.kube, self._kube, self._driver_pod)
            case program.FM_REGISTERED:
                reads = [e for e in decide.entries if isinstance(e, Read)]
                return await fabric.wait_registered(ctx, len(state.gpus), unit=len(reads) > 1, reads=reads)
            case program.KERNEL_SINCE_T0:
                reads = [e for e in decide.entries if isinstance(e, Read)]
                return await fabric.verify_fabric(ctx, self._t0 or "", self._cursor,
                                                  reads if self._cursor is not None else ())
        raise StepFailed(f"the run does not know the decision point {decide.point!r} of {ctx.step}")

    async def _step(self, name: str, body: Callable[[], Awaitable]):
        """Run one step through :meth:`NodeContext.run_step`, its outcome kept in the node's."""
        def failure(exc: BaseException) -> str:
            interrupted = isinstance(exc, asyncio.CancelledError) and self._interrupted
            return f"interrupted: {self._interrupted}" if interrupted else (str(exc) or type(exc).__name__)

        return await self.context.run_step(name, body, record=self.outcome.step(name), failure=failure)

    async def _quiesce(self, state: NodeState) -> object:
        """On Kubernetes the operands leave through their labels and the workloads through evictions first;
        kubelet keeps running. Then the node's own clients, as without a cluster: the program's changes, the watch
        loops and the holders left read and SIGTERMed where the program names them."""
        ctx = self.context
        quiesce.note_held(ctx, state)
        holders: tuple = ()
        for entry in self._program(state, "quiesce"):
            match entry:
                case program.Decide(point=program.CLUSTER_QUIESCE):
                    if self._kube is not None and self.kube is not None:
                        await kube_repair.pause_operands(ctx, self.kube, self._kube)
                        await kube_repair.evict_workloads(ctx, self.kube, self._kube, state)
                case program.Decide(point=program.WATCH_LOOPS):
                    await quiesce.stop_watch_loops(ctx, state)
                case program.Decide(point=program.HOLDERS_LEFT):
                    holders = await quiesce.stop_holders_left(ctx, state)
                case Change():
                    await quiesce.stop(ctx, entry)
                case _:
                    await self._entry(state, entry)
        return holders

    def _spare(self) -> frozenset[str]:
        """The driver pod's processes (FM) stay on the devices where its restart is the reset."""
        return frozenset({f"pod{self._driver_pod.uid}"}) if self._driver_pod is not None else frozenset()

    async def _preflight(self) -> NodeState:
        ctx = self.context
        state = self._state = await ctx.read_node()
        ctx.emit(NodeObserved(host=self.host, step=ctx.step, label="before", summary=summarize(state)))
        if self.manual:
            ctx.emit(ManualChanges(host=self.host, step=ctx.step, changes=tuple(c.to_dict() for c in self.manual),
                                   put_back=self.put_back_manual))
        # FM in the driver pod: on a cluster the pod's restart is the move (the pod is looked up under the lock).
        await preflight.check(ctx, state, fm_pod=self.kube is not None and fm_container.in_container(state))
        if self.approved is not None:
            changes = drift(self.approved, state)
            if changes:
                self.outcome.drift = changes
                raise Refused("the node changed since the plan was approved: " + "; ".join(changes)
                              + " (plan again)")
        checked = False
        for entry in self._program(state, "preflight"):
            if not checked and not (isinstance(entry, program.Decide) and entry.point in _BEFORE_RECORD_CHECK):
                # Checked under the lock (and the drain): a second run sees the lock first; a record without a
                # lock is a run whose cleanup half-failed, and only `repair --restore` may deal with it.
                checked = True
                reason = preflight.record_refusal(state)
                if reason:
                    raise Refused(reason)
            if await self._preflight_entry(state, entry):
                return state  # healthy: the smoke test passed, nothing is reset
        return state

    async def _preflight_entry(self, state: NodeState, entry: program.Entry) -> bool:
        """One entry of preflight's program; True when the run ends here (no repair needed)."""
        ctx = self.context
        match entry:
            case program.Decide(point=program.LOCK):
                self.lock = NodeLock(ctx, self.run_id, self.operator_name, on_lost=self._lock_lost)
                await self.lock.take()  # refused, naming the owner, when another run holds it
                self._locked = True  # from here on the restore step runs, and releases the lock at the end
            case program.Decide(point=program.DRAIN) if self.scheduler is not None:
                # Drained first, so no new job lands while the running ones end; the restore puts it back.
                drain = next((c for c in entry.entries if isinstance(c, DrainNode)), None)
                self._drain = await scheduling.drain(ctx, self.scheduler, self.run_id, drain)
            case program.Decide(point=program.JOBS) if self.scheduler is not None:
                if self._drain is not None:
                    await scheduling.wait_for_jobs(ctx, self.scheduler, self.options.wait_jobs)
            case program.Decide(point=program.CLUSTER_SURVEY):
                await self._survey(state)
            case program.CLOCK_READ:
                self._t0 = await smoke.node_time(ctx, entry)
                if not self._t0:
                    raise StepFailed("the node's clock could not be read (needed to check the kernel log since the "
                                     "repair)")
            case program.CURSOR_READ:
                # verify-fabric reads the kernel journal after this cursor: the journal's order, which a clock step
                # does not change (--since T0 compares the clock's dates). None: it falls back to T0, and says so.
                self._cursor = await fabric.kernel_cursor(ctx, entry)
                self._remember_prior(state)
            case program.Decide(point=program.RECHECK):
                return await self._recheck(state, entry.entries)
            case WriteFile(path=path) if path == RECORD_FILE:
                self._remember_prior(state)
                record = RepairRecord(run_id=self.run_id, host=self.host, operator=self.operator_name,
                                      started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), t0=self._t0,
                                      units=self._prior_units, persistence=self._prior_pm, tool_pid=os.getpid(),
                                      audit_log=self.outcome.audit_log, manual=self._manual_units,
                                      kube=self._kube.to_record() if self._kube is not None else None)
                self._record_written = True  # set first: a half-written record must still be cleaned up
                await preflight.write_record(ctx, record, entry)
            case program.Decide(point=program.CORDON):
                if self._kube is not None and self.kube is not None:
                    await kube_repair.cordon(ctx, self.kube, self._kube)  # the record names it first
            case _:
                await self._entry(state, entry)
        return False

    async def _survey(self, state: NodeState) -> None:
        """The cluster read before anything changes (what the record says the restore puts back); a node it lacks
        is repaired without it only where kubelet may be stopped, and FM in a driver pod needs that pod listed."""
        if self.kube is None:
            return
        name = self.kube.node_name(self.host)
        self._kube = await kube_repair.survey(self.context, self.kube, name)
        if self._kube is None:
            why = kube_absent.absent(self.context, self.kube, state, stop_kubelet=self.options.stop_kubelet)
            if why is not None:
                raise Refused(why)
        if fm_container.in_container(state):
            self._driver_pod = kube_repair.driver_pod(self._kube, state) if self._kube is not None else None
            if self._driver_pod is None:
                raise Refused(f"{fm_container.refusal(state)}; the cluster lists no such pod on {name}")

    def _remember_prior(self, state: NodeState) -> None:
        """What the restore puts back (once): the units and persistence modes as read, units stopped by hand."""
        if self._prior_known:
            return
        self._prior_known = True
        ctx = self.context
        self._prior_units = prior_units(state, put_back(self.manual) if self.put_back_manual else None)
        # Named in the record, so that `repair --restore` may start them too (it starts no other unit a
        # repair does not stop).
        self._manual_units = tuple(sorted(put_back(self.manual))) if self.put_back_manual else ()
        for unit in sorted(set(self._prior_units.items()) - set(unit_states(state).items())):
            ctx.note(f"{unit[0]} was stopped by hand in this console; the restore starts it again")
        self._prior_pm = persistence_modes(state)

    async def _recheck(self, state: NodeState, entries: Sequence[object]) -> bool:
        """Smoke-test a node whose fabric looks healthy, and once more after a pause if that fails.

        A CUDA 802 during a short FM stall clears by itself; resetting a node for it would take every
        workload down for nothing. True when a test passed (the run then ends: no repair needed). ``entries``:
        the smoke test as the program names it (each attempt makes them).
        """
        ctx = self.context
        ctx.note("the fabric looks healthy: running the NVLS smoke test before anything destructive")
        for attempt in range(2):
            if attempt:
                ctx.note("the smoke test failed on a healthy-looking fabric (a transient failure?): "
                         "re-running it once", "warning")
                await self.options.sleep(self.options.transient_pause)
            result = await smoke.smoke_test(ctx, state, entries)
            self.outcome.smoke = result
            if result.passed:
                self.outcome.no_repair_needed = True
                self.outcome.result = NO_REPAIR_NEEDED
                self.outcome.message = self.outcome.reason = (
                    f"healthy: the NVLS smoke test passed ({result.avg_busbw:.1f} GB/s"
                    + (", on re-check" if attempt else "") + "); nothing was reset")
                return True
        ctx.note("the smoke test failed twice: going on with the repair", "warning")
        return False

    def _lock_lost(self, reason: str) -> None:
        """A heartbeat found the node's lock is no longer this run's: stop now (the restore step decides
        whether anything is put back: not when another run owns the node)."""
        self.interrupt(f"{reason}; this run stopped")

    def _fail_current(self, message: str, result: str) -> None:
        self.outcome.result = result
        self.outcome.message = message

    def _fail_lock_lost(self, step: str, why: str) -> None:
        """The run ends failed at ``step`` because its lock is another run's (or gone): ``why`` says whose."""
        self.outcome.reason = f"{step}: {why}"
        self._fail_current(lock_lost_words(self.host, step, why), FAILED)

    async def _finish(self, cancelled: asyncio.CancelledError | None) -> asyncio.CancelledError | None:
        """Run the restore step, shielded so a second Ctrl-C cannot leave the node half-done."""
        task = asyncio.ensure_future(self._restore_step())
        while True:
            try:
                await asyncio.shield(task)
                break
            except asyncio.CancelledError as exc:
                if task.done():
                    break
                cancelled = cancelled or exc
        return cancelled

    async def _restore_step(self) -> None:
        ctx = self.context
        record = self.outcome.step("restore")
        if not self._locked:
            record.status = SKIPPED
            record.message = "nothing was changed"
            return
        if ctx.lock_lost is not None:
            if self.outcome.result == ABORTED:
                # A heartbeat found the take-over after the abort was handled: the same words as when it came
                # first (``run``'s Aborted case), so the operator learns whose run holds the node now.
                self._fail_lock_lost(self._stopped_at or "preflight", ctx.lock_lost)
            await self._let_go_lost(record)
            return
        try:
            await self._restore_units(ctx)
        finally:
            await self._settle_scheduler()

    async def _let_go_lost(self, record: StepOutcome) -> None:
        """The lock is another run's (or gone): nothing is put back, released or resumed by this run."""
        if self.lock is not None:
            await self.lock.abandon()
        self.context.fence = None
        record.status = SKIPPED
        record.message = "not run: the lock is no longer this run's (the run that holds it restores the node)"
        self.context.emit(StepFinished(host=self.host, step="restore", status=SKIPPED, message=record.message))
        await self._observe_after()

    async def _settle_scheduler(self) -> None:
        """The scheduler's drain back the way it was (after the units: a resumed node must be whole)."""
        if self.scheduler is None or self._drain is None:
            return
        failed = next((st.name for st in self.outcome.steps if st.status == STEP_FAILED and st.name != "restore"),
                      None)
        try:
            said = await scheduling.settle(self.context, self.scheduler, self._drain, self.outcome.result, failed,
                                           self.options.keep_drained)
        except (StepFailed, BackendError, OSError) as exc:
            said = str(exc)
            if self.outcome.result != FAILED:
                self.outcome.result = FAILED
        if said:
            if " stays " in said:
                self.outcome.stays.append(said)
            self.context.note(said)
            self.outcome.message = f"{self.outcome.message}; {said}".lstrip("; ")

    async def _restore_units(self, ctx: NodeContext) -> None:
        report: RestoreReport | None = None

        async def body() -> str:
            nonlocal report
            lock = self.lock
            other = await lock.other_owner() if lock is not None else None
            if other is not None and lock is not None:
                await lock.release()  # stops the heartbeat; the lock is left to its owner
                self._record_written = False  # not this run's to restore from any more
                raise StepFailed(f"the lock of {self.host} now belongs to {other.words()}: this run put nothing "
                                 "back and left that run's record and lock alone")
            report = await restore(ctx, self._prior_units if self._record_written else {},
                                   self._prior_pm if self._record_written else {},
                                   record_of=self.run_id if self._record_written else None, lock=lock,
                                   manual=self._manual_units, before_record=self._settle_kube,
                                   order=self._restore_order())
            if not report.ok:
                raise StepFailed("could not put back: " + ", ".join(report.failed))
            return restored_message(report)

        try:
            await self._step("restore", body)
        except StepFailed as exc:
            self.outcome.result = FAILED
            keep = (f"; the record stays on the node: run `nvls-tui repair --restore {self.host}`"
                    if self._record_written else "")
            self.outcome.message = f"{self.outcome.message}; {exc}{keep}".lstrip("; ")
        except Exception as exc:  # noqa: BLE001 - report, never raise out of the cleanup
            self.outcome.result = FAILED
            self.outcome.message = f"{self.outcome.message}; restore failed: {exc}".lstrip("; ")
        finally:
            if report is not None:
                self.outcome.restored = list(report.units)
            if self.lock is not None:
                await self.lock.stop_beating()  # whatever happened above: the run is over
        await self._observe_after()

    def _restore_order(self) -> tuple[str, ...]:
        """The restore's decision points in the order of the run's program (runbook/program.py): what differs is
        put back, the cluster's, the record, the lock (the scheduler's drain follows the step)."""
        if self._state is None:
            return RESTORE_ORDER
        return tuple(e.point for e in self._program(self._state, "restore")
                     if isinstance(e, program.Decide) and e.point in RESTORE_ORDER)

    async def _settle_kube(self) -> list[str]:
        """The cluster back (after the units, before the record goes): the labels this run paused, and the
        cordon lifted after a pass or kept, naming the step, after anything else. Returns what failed."""
        if self._kube is None or self.kube is None:
            return []
        passed = self.outcome.result in (REPAIRED, NO_REPAIR_NEEDED)
        try:
            done, failed = await kube_repair.settle(self.context, self.kube, self._kube, passed=passed,
                                                    stopped_at=self._stopped_at)
        except KubeError as exc:
            done, failed = [], [f"the cluster ({exc})"]
        self.outcome.kube = {"node": self._kube.node, "cordoned": self._kube.cordoned,
                             "paused": list(self._kube.paused), "evicted": list(self._kube.evicted),
                             "restored": done, "failed": failed}
        stays = kube_repair.left_in_cluster(self._kube, done, failed)
        self.outcome.stays += stays
        said = "; ".join(stays)
        if said:
            self.context.note(said)
            self.outcome.message = f"{self.outcome.message}; {said}".lstrip("; ")
        return failed

    async def _observe_after(self) -> None:
        """One last read of the node for the report's before/after comparison (best effort)."""
        state = await self.context.read_node()
        if not state.reachable:
            return
        self.context.emit(NodeObserved(host=self.host, step="restore", label="after", summary=summarize(state)))


def _whoami() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


async def repair_node(backend: Backend, options: RepairOptions | None = None, *, on_event: EventSink | None = None,
                      operator: Operator | None = None, run_id: str | None = None,
                      audit_log: str | None = None) -> NodeOutcome:
    """Repair (or plan) one node; see :class:`Runbook`."""
    return await Runbook(backend, options, on_event=on_event, operator=operator, run_id=run_id,
                         audit_log=audit_log).run()


__all__ = ["Runbook", "new_run_id", "repair_node"]

"""The operations layer: every action that changes a node goes through one :class:`Session`.

The console and the headless commands both drive nodes through here, so each action is done one
way: SIGTERM of selected holders (identity re-checked by the backend), a unit stopped or started by
hand, a single action (reset, Fabric Manager restart, smoke test), a restore from an interrupted
repair's record, and repairs of several nodes with any strategy. Every one of them

* is audited: manual actions in the session's audit log (one per console run), repairs in their
  own run log, and the record of each command is on disk before the command goes out;
* pauses that node's poller while it runs (a poll's nvidia-smi opens the devices and can make a
  reset refuse);
* runs at most one at a time per node (a second is refused, not queued behind the first);
* holds the node's repair lock while it changes the node (a SIGTERM or a unit by hand as well as a single
  action or a repair): refused, naming the owner, while another run holds it, and its commands fenced by it;
* ends in an outcome whose sentence is in the past tense, which screens show as they are.

What the operator changes by hand is remembered in the session's :class:`Ledger`: a later repair's
plan lists it and its restore puts the units back. No Textual here: screens only ask and show.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal as signals
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from nvls_tui.audit.log import AuditLog, AuditWriteError
from nvls_tui.audit.writer import AuditWriter
from nvls_tui.backends.base import Backend, BackendError, InvalidArgument, validate_unit
from nvls_tui.kube.client import Kubectl
from nvls_tui.model import Holder
from nvls_tui.runbook.actions import PidOutcome, summarise
from nvls_tui.runbook.changes import UnitChange
from nvls_tui.runbook.context import Aborted, NodeContext, Refused
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.engine import Runbook, new_run_id
from nvls_tui.runbook.events import (
    EventSink,
    ManualChanged,
    Note,
    RunFinished,
    RunStarted,
    fan_out,
)
from nvls_tui.runbook.kube_shared import shared_nodes
from nvls_tui.runbook.ledger import SIGNALLED, STARTED, STOPPED, Ledger, ManualChange
from nvls_tui.runbook.lock import NodeLock, whoami
from nvls_tui.runbook.multi import RunGroup, refused_before, run_many
from nvls_tui.runbook.outcome import RESTORED, NodeOutcome
from nvls_tui.runbook.quiesce import signal_holder
from nvls_tui.runbook.recover import restore_node
from nvls_tui.runbook.scheduling import SchedulerHook
from nvls_tui.runbook.single import ACTIONS, run_single
from nvls_tui.runbook.steps import HAND_UNITS, RUNNING, Operator, RepairOptions

ACTIVE_STATES = frozenset({"active", "inactive", "failed", "activating", "deactivating", "reloading",
                           "maintenance", "refreshing"})

Pause = Callable[[str], AbstractAsyncContextManager[None]]
Severity = Literal["information", "warning", "error"]  # how loudly a screen says it (Textual's words)


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """How one manual action ended.

    Attributes:
        host: the node.
        action: ``sigterm``, ``unit-stop``, ``unit-start``, ``reset``, ``fm-restart``, ``smoke`` or ``restore``.
        ok: it did what was asked.
        message: one past-tense sentence (or a few lines) for the operator.
        severity: ``information``, ``warning`` or ``error``: how loudly to say it.
        audit_log: where its records are.
        outcome: the node outcome, for actions that run steps.
    """

    host: str
    action: str
    ok: bool
    message: str
    severity: Severity = "information"
    audit_log: str | None = None
    outcome: NodeOutcome | None = None


@dataclass
class RepairRun:
    """One repair of several nodes through the session.

    Attributes:
        hosts: the nodes, in order.
        strategy: parallel, serial or canary.
        group: the runbooks (abort one node, interrupt all).
        audit_log: the run's own log.
        outcomes: filled in when the run ended.
    """

    hosts: list[str]
    strategy: str
    group: RunGroup = field(default_factory=RunGroup)
    audit_log: str | None = None
    outcomes: list[NodeOutcome] = field(default_factory=list)
    finished: bool = False


class Busy(Exception):
    """Another action is under way on the node; ``str()`` says which."""


@contextlib.asynccontextmanager
async def _no_pause(_: str) -> AsyncIterator[None]:
    yield


def _name_fallback(outcomes: list[NodeOutcome], writer: AuditWriter) -> list[NodeOutcome]:
    """Each outcome names the file that holds what the run's audit log could not take, if it failed."""
    if writer.fallback_path is not None:
        for outcome in outcomes:
            outcome.audit_fallback = str(writer.fallback_path)
    return outcomes


class Session:
    """Every node-changing action of one console run (or one headless command).

    Args:
        backends: ``{host: backend}``.
        audit_dir: where the audit logs go (None: the XDG state directory).
        timeout: per-command timeout of manual actions.
        pause: ``pause(host)`` is held while an action runs on the node (the console's poller);
            headless runs poll nothing.
        read_only: refuse every action (the console hides them too; this is the last line).
        on_audit_failure: told (one sentence) when an audit log can no longer be written.
        options: tunables of the steps the manual actions run (default: RepairOptions with ``timeout``).
    """

    def __init__(self, backends: Mapping[str, Backend], *, audit_dir: str | None = None,
                 timeout: float | None = None, pause: Pause | None = None, read_only: bool = False,
                 on_audit_failure: Callable[[str], None] | None = None,
                 options: RepairOptions | None = None,
                 schedulers: Mapping[str, SchedulerHook] | None = None,
                 kube: Mapping[str, Kubectl] | None = None) -> None:
        self.backends = dict(backends)
        self.schedulers = dict(schedulers or {})  # per node, its scheduler (Slurm), where there is one
        self.kube = dict(kube or {})  # per node, its Kubernetes cluster, where one is configured
        self.audit_dir = audit_dir
        self.timeout = timeout
        self.read_only = read_only
        self.on_audit_failure = on_audit_failure
        self.options = options or RepairOptions(command_timeout=timeout or RepairOptions().command_timeout)
        self.run_id = new_run_id()
        self.ledger = Ledger()
        self.repairs: list[RepairRun] = []
        self.interrupted: str | None = None  # why every repair was stopped (interrupt): later ones never start
        self.busy: dict[str, str] = {}
        self._pause = pause or _no_pause
        self._log: AuditWriter | None = None
        self._log_lock = asyncio.Lock()

    # ---- the session's own audit log ------------------------------------------------------------
    @property
    def audit_path(self) -> str | None:
        """The session log, once the first action opened it."""
        return str(self._log.path) if self._log is not None else None

    async def session_log(self) -> AuditWriter:
        """The session's audit log, created (and proven writable) on first use.

        Raises:
            AuditWriteError, UnsafeLocation, OSError: it cannot be created: the action must not run.
        """
        async with self._log_lock:
            if self._log is None or self._log.failed is not None:
                log = await asyncio.to_thread(AuditLog.create, self.audit_dir, self.run_id, kind="session")
                self._log = AuditWriter(log, self._audit_failed)
            return self._log

    def _audit_failed(self, exc: AuditWriteError) -> None:
        if self.on_audit_failure is not None:
            self.on_audit_failure(str(exc))

    async def close(self) -> None:
        """Write what is queued and close the session log."""
        if self._log is not None:
            await asyncio.to_thread(self._log.close)

    # ---- the shape every manual action shares ---------------------------------------------------
    @contextlib.asynccontextmanager
    async def _action(self, host: str, action: str, on_event: EventSink | None = None,
                      options: RepairOptions | None = None) -> AsyncIterator[NodeContext]:
        """Claim the node, open the log, pause its polls, and hand out a context whose events are audited."""
        if self.read_only:
            raise Busy(f"read-only session: {action} on {host} was refused")
        if host in self.busy:
            raise Busy(f"{host} is busy ({self.busy[host]}); {action} was not started")
        backend = self.backends[host]
        self.busy[host] = action
        try:
            log = await self.session_log()
            outcome = NodeOutcome(host=host, audit_log=str(log.path))
            ctx = NodeContext(backend, options or self.options, fan_out(log, on_event), outcome, durable=log.flush)
            async with self._pause(host):
                yield ctx
        finally:
            self.busy.pop(host, None)

    @contextlib.asynccontextmanager
    async def _locked(self, ctx: NodeContext) -> AsyncIterator[None]:
        """Hold the node's repair lock for a change by hand, as a single action does; give it back after.

        Another run's lock refuses the change before anything is sent (:class:`LockHeld` names its owner,
        live or stale: a stale one is the restore's to take over, never a SIGTERM's); while it is held,
        every command of the change goes out behind its fence.
        """
        lock = NodeLock(ctx, self.run_id, whoami())
        await lock.take()
        try:
            yield
        finally:
            left = await lock.release(attempts=3)
            if left:
                ctx.note(f"could not release {left}", "error")

    def _refused(self, host: str, action: str, exc: Exception) -> ActionOutcome:
        return ActionOutcome(host, action, False, f"{action} on {host} was not done: {exc}", "error")

    def _refused_in(self, ctx: NodeContext, action: str, words: str, exc: Exception) -> ActionOutcome:
        """A change by hand the lock refused (or the node did not let be taken): nothing was sent; said in the log."""
        refused = self._refused(ctx.host, words, exc)
        ctx.emit(RunFinished(host=ctx.host, step=action, result="failed", message=refused.message))
        return dataclasses.replace(refused, action=action, audit_log=ctx.outcome.audit_log)

    # ---- SIGTERM ---------------------------------------------------------------------------------
    async def sigterm(self, host: str, holders: Sequence[Holder]) -> ActionOutcome:
        """SIGTERM each holder whose identity still matches (never SIGKILL); one line per PID."""
        try:
            async with self._action(host, "sigterm") as ctx:
                ctx.step = "sigterm"
                ctx.emit(RunStarted(host=host, run_id=self.run_id, mode="sigterm"))
                try:
                    async with self._locked(ctx):
                        units = await self._units_before(ctx, holders)
                        outcomes = [await self._send(ctx, h) for h in holders]
                except (Refused, BackendError) as exc:
                    return self._refused_in(ctx, "sigterm", "SIGTERM", exc)
                message, severity = summarise(host, outcomes)
                sent = [o for o in outcomes if o.outcome == "signalled"]
                for o in sent:
                    self.ledger.record(ManualChange(host, SIGNALLED, pid=o.holder.pid, command=o.holder.command,
                                                    kind=str(o.holder.kind), signal="SIGTERM"))
                for unit, (before, pid) in units.items():
                    # A SIGTERM is a clean exit to systemd: the unit may well stay down. A stop by hand, then: the
                    # next repair's restore starts it again (a start of a unit that came back changes nothing).
                    if before in RUNNING and any(o.holder.unit == unit for o in sent):
                        change = ManualChange(host, STOPPED, unit=unit, before=before, pid=pid, signal="SIGTERM")
                        self.ledger.record(change)
                        ctx.emit(ManualChanged(host=host, step="sigterm", change=change.to_dict()))
                ok = all(o.outcome in ("signalled", "gone") for o in outcomes)
                ctx.emit(RunFinished(host=host, step="sigterm", result="ok" if ok else "failed",
                                     message=message.splitlines()[0]))
                return ActionOutcome(host, "sigterm", ok, message, severity, ctx.outcome.audit_log)
        except (Busy, OSError) as exc:
            return self._refused(host, "SIGTERM", exc)

    @staticmethod
    async def _units_before(ctx: NodeContext, holders: Sequence[Holder]) -> dict[str, tuple[str | None, int]]:
        """``{unit: (its state before, the PID signalled)}`` for the units of the Units pane whose process is
        among ``holders`` (a pod's process is kubelet's, not the unit's); read before any signal goes."""
        units: dict[str, tuple[str | None, int]] = {}
        for holder in holders:
            unit = holder.unit
            if unit and not holder.pod and unit in HAND_UNITS and unit not in units:
                units[unit] = (await _unit_state(ctx, unit), holder.pid)
        return units

    @staticmethod
    async def _send(ctx: NodeContext, h: Holder) -> PidOutcome:
        try:
            outcome, detail = await signal_holder(ctx, h, signals.SIGTERM)
        except (BackendError, Aborted) as exc:
            return PidOutcome(h, "failed", str(exc))
        return PidOutcome(h, outcome, detail)

    # ---- units -----------------------------------------------------------------------------------
    async def unit(self, host: str, verb: str, unit: str, *, seen: str | None = None) -> ActionOutcome:
        """``systemctl stop|start UNIT`` by hand; the state before is read first and kept in the ledger.

        Args:
            seen: the unit's state as the operator last saw it (used when the node cannot say).
        """
        if verb not in ("stop", "start"):
            raise ValueError(f"unit action must be stop or start, not {verb!r}")
        action = f"unit-{verb}"
        try:
            unit = validate_unit(unit)
            if unit not in HAND_UNITS:
                # Only what the Units pane lists: a restore starts no other unit a record names as stopped by hand.
                raise InvalidArgument(f"{unit} is not a unit of the Units pane (a restore would never start it again)")
            async with self._action(host, action) as ctx:
                ctx.step = action
                ctx.emit(RunStarted(host=host, run_id=self.run_id, mode=action))
                try:
                    async with self._locked(ctx):
                        before = await _unit_state(ctx, unit) or seen
                        result = await perform(ctx, UnitChange(verb, unit, "stopped or started by hand in the console"))
                except Refused as exc:
                    return self._refused_in(ctx, action, f"{verb} {unit}", exc)
                if result.ok:
                    change = ManualChange(host, STOPPED if verb == "stop" else STARTED, unit=unit, before=before)
                    self.ledger.record(change)
                    ctx.emit(ManualChanged(host=host, step=action, change=change.to_dict()))
                    was = f" (it was {before})" if before else ""
                    message = f"{unit} on {host}: {'stopped' if verb == 'stop' else 'started'}{was}"
                    severity: Severity = "information"
                else:
                    lines = (result.stderr or result.stdout).strip().splitlines()
                    why = lines[0] if lines else f"exit status {result.exit_status}"
                    message, severity = f"{verb} {unit} on {host} failed: {why}", "error"
                ctx.emit(RunFinished(host=host, step=action, result="ok" if result.ok else "failed", message=message))
                return ActionOutcome(host, action, result.ok, message, severity, ctx.outcome.audit_log)
        except (Busy, BackendError, OSError, Aborted) as exc:
            return self._refused(host, f"{verb} {unit}", exc)

    # ---- single actions and restore ----------------------------------------------------------------
    async def single(self, host: str, kind: str, *, options: RepairOptions | None = None,
                     on_event: EventSink | None = None) -> ActionOutcome:
        """Run one single action (``reset``, ``fm-restart``, ``smoke``) with its steps streamed to ``on_event``."""
        spec = ACTIONS[kind]
        try:
            async with self._action(host, kind, on_event, options) as ctx:
                await run_single(spec, ctx, run_id=self.run_id)
                outcome = ctx.outcome
        except (Busy, OSError) as exc:
            return self._refused(host, spec.title, exc)
        ok = outcome.result == "ok"
        return ActionOutcome(host, kind, ok, f"{spec.title} on {host}: {'done' if ok else 'failed'}. {outcome.message}",
                             "information" if ok else "error", outcome.audit_log, outcome)

    async def restore(self, host: str, *, on_event: EventSink | None = None, force: bool = False) -> ActionOutcome:
        """Put ``host`` back from an interrupted repair's record (the node screen's ``U``), in the session log.

        Refused while another run holds the node's lock and is alive; ``force`` takes over a stale lock.
        """
        try:
            log = await self.session_log()
            outcome = await self._restore_one(host, log, on_event, force)
        except (Busy, OSError) as exc:
            return self._refused(host, "restore", exc)
        ok = outcome.result == RESTORED
        return ActionOutcome(host, "restore", ok, f"{host}: {outcome.message or outcome.result}",
                             "information" if ok else "error", outcome.audit_log, outcome)

    async def restore_nodes(self, hosts: Sequence[str], *, on_event: EventSink | None = None,
                            force: bool = False) -> list[NodeOutcome]:
        """``repair --restore``: every node put back from its record, side by side, in a run log of its own.

        ``force`` (``--force``) takes over stale locks; a live run's lock refuses the node whatever it says.

        Raises:
            AuditWriteError, UnsafeLocation, OSError: the run log cannot be created (nothing ran).
        """
        log = AuditWriter(await asyncio.to_thread(AuditLog.create, self.audit_dir, new_run_id(), kind="restore"),
                          self._audit_failed)
        try:
            results = await asyncio.gather(*(self._restore_one(h, log, on_event, force) for h in hosts),
                                           return_exceptions=True)
        finally:
            await asyncio.to_thread(log.close)
        outcomes = []
        for host, result in zip(hosts, results, strict=True):
            if isinstance(result, BaseException):
                result = NodeOutcome(host=host, result="failed", message=f"restore not started: {result}",
                                     audit_log=str(log.path))
            outcomes.append(result)
        return _name_fallback(outcomes, log)

    async def _restore_one(self, host: str, log: AuditWriter, on_event: EventSink | None,
                           force: bool = False) -> NodeOutcome:
        """The one restore both the console and the headless command run (never cut short: shielded)."""
        if self.read_only:
            raise Busy(f"read-only session: the restore of {host} was refused")
        if host in self.busy:
            raise Busy(f"{host} is busy ({self.busy[host]}); the restore was not started")
        self.busy[host] = "restore"
        try:
            async with self._pause(host):
                outcome = await asyncio.shield(restore_node(self.backends[host], self.options,
                                                            on_event=fan_out(log, on_event), run_id=self.run_id,
                                                            audit_log=str(log.path), force=force,
                                                            kube=self.kube.get(host)))
        finally:
            self.busy.pop(host, None)
        if outcome.result == RESTORED:
            self.ledger.forget(host, outcome.restored)
        return outcome

    # ---- repairs ---------------------------------------------------------------------------------
    async def plan(self, hosts: Sequence[str], options: RepairOptions, *,
                   put_back_manual: bool = True) -> dict[str, NodeOutcome]:
        """The dry run of ``hosts`` (read-only), each listing what was changed by hand in this session."""
        dry = _with(options, dry_run=True)
        # Two targets on one Kubernetes node: refused together, unread (the repair would refuse them so).
        shared = shared_nodes(hosts, self.kube)
        readable = [h for h in hosts if h not in shared]
        books = [Runbook(self.backends[h], dry, manual=self.ledger.changes(h), put_back_manual=put_back_manual,
                         scheduler=self.schedulers.get(h), kube=self.kube.get(h))
                 for h in readable]
        results = await asyncio.gather(*(b.run() for b in books), return_exceptions=True)
        plans: dict[str, NodeOutcome] = {h: refused_before(h, dry, why, None, self.run_id, None)
                                         for h, why in shared.items()}
        for host, result in zip(readable, results, strict=True):
            if isinstance(result, BaseException):
                result = NodeOutcome(host=host, dry_run=True, result="refused",
                                     message=f"the node could not be read: {result}")
            plans[host] = result
        return {h: plans[h] for h in hosts}

    def start_repair(self, hosts: Sequence[str], strategy: str = "parallel") -> RepairRun:
        """Register a repair before it runs, so that it can be aborted from its first moment (one registered
        after :meth:`interrupt`, by a screen still opening as the signal came, never starts)."""
        run = RepairRun(list(hosts), strategy)
        if self.interrupted is not None:
            run.group.interrupt(self.interrupted)
        self.repairs.append(run)
        return run

    async def repair(self, run: RepairRun, options: RepairOptions, *, on_event: EventSink | None = None,
                     operator: Operator | None = None, approved: Mapping[str, Mapping[str, Any]] | None = None,
                     put_back_manual: bool = True, kind: str = "repair") -> list[NodeOutcome]:
        """Repair (or plan, with ``options.dry_run``) ``run.hosts`` with ``run.strategy``.

        The run has its own audit log; the session log notes where it is. A run log that fails
        mid-run (a full disk) interrupts every node, which then restores.

        Raises:
            AuditWriteError, UnsafeLocation, OSError: the run log cannot be created (nothing ran).
            Busy: a node is busy with another action.
        """
        hosts = run.hosts
        taken = [h for h in hosts if h in self.busy]
        if taken:
            raise Busy(", ".join(f"{h} is busy ({self.busy[h]})" for h in taken))
        if self.read_only and not options.dry_run:
            raise Busy("read-only session: the repair was refused")
        run_id = new_run_id()
        log = await asyncio.to_thread(AuditLog.create, self.audit_dir, run_id, kind=kind, dry_run=options.dry_run)

        def failed(exc: AuditWriteError) -> None:
            run.group.interrupt(f"the audit log could not be written ({exc})")
            self._audit_failed(exc)

        writer = AuditWriter(log, failed)
        run.audit_log = str(log.path)
        for h in hosts:
            self.busy[h] = "repair" if not options.dry_run else "dry run"
        try:
            await self._note_run(hosts, f"{kind} of {' '.join(hosts)} ({run.strategy}): audit log {log.path}")
            async with contextlib.AsyncExitStack() as stack:
                if not options.dry_run:
                    for h in hosts:
                        await stack.enter_async_context(self._pause(h))
                run.outcomes = await run_many([self.backends[h] for h in hosts], options, strategy=run.strategy,
                                              on_event=fan_out(writer, on_event), operator=operator, run_id=run_id,
                                              audit_log=str(log.path), group=run.group, approved=approved,
                                              manual={h: self.ledger.changes(h) for h in hosts},
                                              put_back_manual=put_back_manual, durable=writer.flush,
                                              schedulers=self.schedulers, kubes=self.kube)
        finally:
            await asyncio.to_thread(writer.close)
            for h in hosts:
                self.busy.pop(h, None)
            run.finished = True
        _name_fallback(run.outcomes, writer)
        for outcome in run.outcomes:
            if options.dry_run:
                continue
            if outcome.restored and put_back_manual:
                self.ledger.forget(outcome.host, outcome.restored)
            preflight = next((s for s in outcome.steps if s.name == "preflight"), None)
            if preflight is not None and preflight.status == "ok":  # its log holds the manual changes
                self.ledger.reported(outcome.host)
        await self._note_run(hosts, "; ".join(f"{o.host} {o.result}" for o in run.outcomes))
        return run.outcomes

    async def _note_run(self, hosts: Sequence[str], message: str) -> None:
        """A line in an open session log pointing at a repair's own log (the run log is the record;
        a session that changed nothing by hand has no session log, and a repair opens none)."""
        log = self._log
        if log is None or log.failed is not None:
            return
        for h in hosts:
            log(Note(host=h, step="repair", message=message))

    # ---- stopping --------------------------------------------------------------------------------
    def abort(self, host: str | None = None) -> None:
        """Abort ``host``'s repair at its next command (every running repair when None)."""
        for run in self.repairs:
            if run.finished:
                continue
            for h in run.hosts if host is None else [host]:
                if h in run.hosts:
                    run.group.abort(h)

    def interrupt(self, reason: str) -> None:
        """Stop every running repair now, even inside a long command; each node restores. A repair registered
        after this never starts (the console is ending)."""
        self.interrupted = self.interrupted or reason
        for run in self.repairs:
            if not run.finished:
                run.group.interrupt(reason)

    @property
    def running(self) -> list[RepairRun]:
        """Repairs still going."""
        return [r for r in self.repairs if not r.finished]


async def _unit_state(ctx: NodeContext, unit: str) -> str | None:
    """The unit's ActiveState as ``systemctl is-active`` says it now (None: the node did not say one)."""
    words = (await ctx.run(("systemctl", "is-active", unit))).stdout.split()
    return words[0] if words and words[0] in ACTIVE_STATES else None


def _with(options: RepairOptions, **changes: Any) -> RepairOptions:
    return dataclasses.replace(options, **changes)


__all__ = ["ActionOutcome", "Busy", "RepairRun", "Session"]

"""One node's run context: the backend, the options, the event sink and the current step.

Every command of a run goes through :meth:`NodeContext.run`, so every one of them is announced,
timed, recorded in the step's outcome and reported with its exit status and output, whatever happens
to it (a timeout or a dropped link included).

Once the run holds the node's lock (:attr:`NodeContext.fence` names its run), every command goes out
behind the lock's fence (:mod:`nvls_tui.poll.fence`): the node runs it only while the lock still names
this run, checked in the same remote command. A command the fence refused means another run took the
lock over: the context remembers it (:attr:`NodeContext.lock_lost`) and raises :class:`LockLost`, and
from then on sends no fenced command at all, so the run changes nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from nvls_tui.backends.base import Backend, BackendError, CommandResult, Fenced, join_argv
from nvls_tui.model import NodeState
from nvls_tui.poll.once import poll_deadline, poll_once
from nvls_tui.runbook.changes import Change
from nvls_tui.runbook.events import (
    CommandFinished,
    CommandStarted,
    EventSink,
    Note,
    RunbookEvent,
    StepFinished,
    StepStarted,
)
from nvls_tui.runbook.outcome import OK, STEP_FAILED, NodeOutcome, StepOutcome
from nvls_tui.runbook.steps import Operator, RepairOptions

# Output kept in an event; the audit log bounds it again (16 KB).
EVENT_OUTPUT_LIMIT = 64 * 1024


class Aborted(Exception):
    """The operator aborted the run (the runbook restores everything, then reports ``failed``)."""


class StepFailed(Exception):
    """A step's verification failed; ``str()`` is the sentence for the operator."""

    def __init__(self, message: str, *, escalate: bool = False) -> None:
        super().__init__(message)
        self.escalate = escalate


class Refused(Exception):
    """Preflight refused to start (platform, versions, lock, an earlier record)."""


class LockLost(Aborted):
    """The node's lock no longer names this run (another run took it over, or it was removed).

    The run stops at once and changes nothing more: no restore, no release, no cluster or scheduler
    change; what it stopped is the new owner's to put back. ``str()`` is the sentence for the operator.
    """


def bounded(text: str, limit: int = EVENT_OUTPUT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not kept]\n"


class NodeContext:
    """What the step functions of one node share.

    Attributes:
        backend: how the node is reached.
        options: the run's tunables.
        outcome: the node's outcome, filled in as steps run.
        operator: asked about holders only the operator may stop (None: headless, just wait).
        step: the step running now.
        abort_requested: set by :meth:`abort`; checked before every command.
        durable: awaited before every command goes out; True once the audit log holds every event so
            far (the record of a change lands before the change). None: the sink writes synchronously.
        fence: the run id whose lock fences this context's commands (None: no lock held, no fence).
        lock_lost: why the lock is no longer this run's (None while it is, or while no lock is held).
        performer: how :func:`nvls_tui.runbook.door.perform` makes a change (None: it sends it; the dry run's
            ``door.Recording`` keeps it only).
        performed: every change made through the door, in order (the dry run's: every change it would make).
    """

    def __init__(self, backend: Backend, options: RepairOptions, sink: EventSink | None,
                 outcome: NodeOutcome, operator: Operator | None = None,
                 durable: Callable[[], Awaitable[bool]] | None = None) -> None:
        self.backend = backend
        self.operator = operator
        self.options = options
        self.outcome = outcome
        self.host = backend.host
        self.step = ""
        self.abort_requested = asyncio.Event()
        self.durable = durable
        self.fence: str | None = None
        self.lock_lost: str | None = None
        # Whose the lock is now, in words (set by the lock this run holds): what a refused fence reports.
        self.whose_lock: Callable[[], Awaitable[str | None]] | None = None
        self.performer: object | None = None
        self.performed: list[Change] = outcome.changes  # the outcome keeps them
        self._sink = sink

    def emit(self, event: RunbookEvent) -> None:
        """Hand ``event`` to the sink; a broken sink must not break a repair half-way."""
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception:  # noqa: BLE001 - the node's state matters more than one lost UI update
            pass

    def note(self, message: str, level: str = "info") -> None:
        """Tell the operator something about the current step."""
        self.emit(Note(host=self.host, step=self.step, message=message, level=level))

    def abort(self) -> None:
        """Ask the run to stop at the next command; it then restores everything."""
        self.abort_requested.set()

    def check_abort(self) -> None:
        """Raise :class:`Aborted` if the operator asked to stop."""
        if self.abort_requested.is_set():
            raise Aborted("aborted by the operator")

    async def audit_first(self, argv: tuple[str, ...], *, abortable: bool = True) -> None:
        """Wait until the audit log holds the command's announcement; refuse to send it otherwise.

        Only what may be aborted is refused: the restore runs even when the log cannot record it,
        since a node left with its services stopped is worse than a gap in the log.

        Raises:
            Aborted: the audit log could not be written (the command was not sent).
        """
        if self.durable is None or await self.durable() or not abortable:
            return
        self.emit(CommandFinished(host=self.host, step=self.step, argv=argv, exit_status=None,
                                  error="not sent: the audit log could not be written"))
        raise Aborted("the audit log could not be written")

    # ---- the lock's fence --------------------------------------------------------------------------
    def fenced_by(self) -> str | None:
        """The run id a command goes out fenced by (None: no lock held, nothing to fence).

        Raises:
            LockLost: the lock was already lost: nothing more may go out.
        """
        if self.fence is not None and self.lock_lost is not None:
            raise LockLost(self.lock_lost)
        return self.fence

    async def lose_lock_to_fence(self) -> LockLost:
        """The node's fence refused a command of this run: the lock is lost, and the words say whose it is now
        where its owner file can be read (the operator's next question); the plain words where it cannot."""
        why = None
        if self.lock_lost is None and self.whose_lock is not None:
            try:
                why = await self.whose_lock()
            except (BackendError, Refused):
                why = None  # cannot see: the words without the owner
        return self.lose_lock(why and f"{why} (the node refused this run's command at its fence)")

    def lose_lock(self, why: str | None = None) -> LockLost:
        """Remember (once, loudly) that the lock is no longer this run's; the exception to raise."""
        if self.lock_lost is None:
            self.lock_lost = (why or f"the lock of {self.host} no longer names run {self.fence}: another run took it "
                              "over or it was removed") + "; this run stopped and changes nothing more"
            self.emit(Note(host=self.host, step=self.step, message=f"LOCK LOST: {self.lock_lost}", level="error"))
        return LockLost(self.lock_lost)

    async def check_fence(self) -> None:
        """Prove on the node, right now, that the lock still names this run (before a change made elsewhere:
        the cluster, the scheduler). Nothing when no lock is held.

        Raises:
            LockLost: it does not.
        """
        if self.fence is not None:
            await self.run(("true",), abortable=False)

    async def read_node(self) -> NodeState:
        """A fresh read of the node under the poll's deadline (``poll_deadline`` of ``--timeout``); never raises.

        The runbook's own reads (the preflight, the restore's, a single action's, the dry run's and the last
        one for the report) went through ``backend.snapshot()`` with no deadline: a probe that never answered
        hung the run. Past the deadline the node reads as unreachable, and its error names the command the
        read hung in (``poll_once``), one line the caller refuses or goes on with.
        """
        return await poll_once(self.backend, poll_deadline(self.options.command_timeout))

    def record_command(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Add a command to the current step's outcome (display form)."""
        self.outcome.step(self.step).commands.append(join_argv(list(argv), env))

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        privileged: bool = False,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        abortable: bool = True,
        fenced: bool = True,
        bookkeeping: bool = False,
        purpose: str = "",
    ) -> CommandResult:
        """Run one command on the node, announcing it and its result.

        Args:
            argv: the command.
            timeout: seconds (default: the run's per-command timeout).
            privileged: needs root (``sudo -n`` where the backend was asked to use it).
            env: extra environment variables.
            stdin: text for the command's standard input.
            abortable: False for the restore, which must run even after an abort.
            fenced: behind the lock's fence while a lock is held (only the lock's own commands, which
                take it, judge it or read it, go out unfenced).
            bookkeeping: one of the repair's own lock, record or clock commands (its audit record says so: the
                report's timeline folds them by this mark, never by the command's words).
            purpose: what the command is for where the audit log's reader needs it (``events.PURPOSES``: a
                registration poll, the clock, the holders' read, Fabric Manager's start); "" for none.

        Raises:
            Aborted: the operator asked to stop before this command.
            LockLost: the lock is not this run's (the fence refused this command, or an earlier one).
            Unreachable, CommandTimeout, InvalidArgument: from the backend (after the event).
        """
        if abortable:
            self.check_abort()
        argv = tuple(argv)
        fence = self.fenced_by() if fenced else None
        self.record_command(argv, env)
        self.emit(CommandStarted(host=self.host, step=self.step, argv=argv, env=dict(env or {}), fence=fence or "",
                                 bookkeeping=bookkeeping, purpose=purpose))
        await self.audit_first(argv, abortable=abortable)
        clock = self.options.clock
        started = clock()
        try:
            result = await self.backend.run(argv, timeout or self.options.command_timeout, privileged=privileged,
                                            env=env, stdin=stdin, fence=fence)
        except asyncio.CancelledError:
            self.emit(CommandFinished(host=self.host, step=self.step, argv=argv, exit_status=None,
                                      duration=clock() - started, error="cancelled"))
            raise
        except Fenced as exc:
            self.emit(CommandFinished(host=self.host, step=self.step, argv=argv, exit_status=None,
                                      duration=clock() - started, error=f"not run: {exc}"))
            raise await self.lose_lock_to_fence() from None
        except Exception as exc:
            self.emit(CommandFinished(host=self.host, step=self.step, argv=argv, exit_status=None,
                                      duration=clock() - started, error=str(exc) or type(exc).__name__))
            raise
        self.emit(CommandFinished(host=self.host, step=self.step, argv=argv, exit_status=result.exit_status,
                                  output=bounded(result.output), duration=result.duration or clock() - started))
        return result

    async def run_step(self, name: str, body: Callable[[], Awaitable[Any]], *, record: StepOutcome | None = None,
                       failure: Callable[[BaseException], str] | None = None) -> Any:
        """Run one step: announce it, time it, mark it ok or failed; the one step wrapper of every run.

        Args:
            name: the step (it becomes :attr:`step` for the commands it runs).
            body: the step's work; a text it returns is the step's message.
            record: the step's outcome to fill in (the repair's; a single action keeps none).
            failure: the message of a step that raised (default: the exception's text, else its type).

        Returns:
            What ``body`` returned. Its exception goes on up, after the step is marked failed.
        """
        self.step = name
        record = record if record is not None else StepOutcome(name)
        self.emit(StepStarted(host=self.host, step=name))
        clock = self.options.clock
        began = clock()
        try:
            value = await body()
        except BaseException as exc:
            record.status, record.duration = STEP_FAILED, clock() - began
            record.message = failure(exc) if failure is not None else (str(exc) or type(exc).__name__)
            self.emit(StepFinished(host=self.host, step=name, status=STEP_FAILED, duration=record.duration,
                                   message=record.message))
            raise
        record.status, record.duration = OK, clock() - began
        if isinstance(value, str):
            record.message = value
        self.emit(StepFinished(host=self.host, step=name, status=OK, duration=record.duration, message=record.message))
        return value

    async def pause(self) -> None:
        """Wait one poll interval (aborts are honoured right after)."""
        await self.options.sleep(self.options.poll_interval)
        self.check_abort()


__all__ = ["Aborted", "LockLost", "NodeContext", "Refused", "StepFailed", "bounded"]

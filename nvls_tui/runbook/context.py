"""One node's run context: the backend, the options, the event sink and the current step.

Every command of a run goes through :meth:`NodeContext.run`, so every one of them is announced,
timed, recorded in the step's outcome and reported with its exit status and output, whatever happens
to it (a timeout or a dropped link included).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from nvls_tui.backends.base import Backend, CommandResult, join_argv
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
    ) -> CommandResult:
        """Run one command on the node, announcing it and its result.

        Args:
            argv: the command.
            timeout: seconds (default: the run's per-command timeout).
            privileged: needs root (``sudo -n`` where the backend was asked to use it).
            env: extra environment variables.
            stdin: text for the command's standard input.
            abortable: False for the restore, which must run even after an abort.

        Raises:
            Aborted: the operator asked to stop before this command.
            Unreachable, CommandTimeout, InvalidArgument: from the backend (after the event).
        """
        if abortable:
            self.check_abort()
        argv = tuple(argv)
        self.record_command(argv, env)
        self.emit(CommandStarted(host=self.host, step=self.step, argv=argv, env=dict(env or {})))
        await self.audit_first(argv, abortable=abortable)
        clock = self.options.clock
        started = clock()
        try:
            result = await self.backend.run(argv, timeout or self.options.command_timeout,
                                             privileged=privileged, env=env, stdin=stdin)
        except asyncio.CancelledError:
            self.emit(CommandFinished(host=self.host, step=self.step, argv=argv, exit_status=None,
                                      duration=clock() - started, error="cancelled"))
            raise
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


__all__ = ["Aborted", "NodeContext", "Refused", "StepFailed", "bounded"]

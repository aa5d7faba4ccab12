"""The one door every change to a node goes out through: :func:`perform`.

A change (:mod:`nvls_tui.runbook.changes`) is announced and on disk in the audit log before it leaves
(:meth:`NodeContext.audit_first`), and goes out behind the lock's fence while the run holds the lock, as
every command of :meth:`NodeContext.run` does. Each one performed is kept, in order, in
:attr:`NodeContext.performed`: what the run did, as values, which a plan's list can be compared with.

The dry run gives its context a :class:`Recording` performer: the same changes are kept, none is sent.
"""

from __future__ import annotations

import signal as signals
from collections.abc import Awaitable, Callable, Sequence
from typing import overload

from nvls_tui.backends.base import Fenced, ProcessChanged, ProcessGone, ProcessIdentity
from nvls_tui.model import CommandResult
from nvls_tui.runbook.changes import NODE, Change, Command, SignalHolder, WriteFile, WriteOwner
from nvls_tui.runbook.context import NodeContext
from nvls_tui.runbook.events import CommandFinished, CommandStarted, ProcessSignalled

SIGNALLED, GONE, CHANGED = "signalled", "gone", "changed"
_SIGNALS = {"TERM": signals.SIGTERM, "KILL": signals.SIGKILL}


class Recording:
    """The dry run's performer: it keeps each change and sends nothing (every command "succeeds"). A context
    without one (``performer`` None, the default) sends each change."""


# How a change made elsewhere than on the node goes out (a scheduler's command on the bastion): its exit
# status and output.
Via = Callable[[Sequence[str]], Awaitable[tuple[int, str]]]


@overload
async def perform(ctx: NodeContext, change: SignalHolder, *, timeout: float | None = ...,  # type: ignore[overload-overlap]
                  abortable: bool = ..., kind: str = ..., user: str = ..., via: Via | None = ...) -> tuple[str, str]: ...


@overload
async def perform(ctx: NodeContext, change: Change, *, timeout: float | None = ..., abortable: bool = ...,
                  kind: str = ..., user: str = ..., via: Via | None = ..., purpose: str = ...) -> CommandResult: ...


async def perform(ctx: NodeContext, change: Change, *, timeout: float | None = None, abortable: bool = True,
                  kind: str = "", user: str = "", via: Via | None = None,
                  purpose: str = "") -> CommandResult | tuple[str, str]:
    """Make ``change`` on the node: announced, audited first, fenced by the lock.

    Args:
        timeout: seconds for each of its commands (default: the run's per-command timeout).
        abortable: False for the restore, which must run even after an abort (and when the log fails).
        kind, user: a signalled holder's kind and user (the words and the audit record name them).
        via: how a change made elsewhere than on the node goes out (required for a scheduler's change).
        purpose: what the change's command is for where the audit log's reader needs it (``events.PURPOSES``:
            Fabric Manager's start); "" for none.

    Returns:
        For a signal, ``(outcome, detail)``: ``signalled``, ``gone`` (it had exited) or ``changed`` (the PID
        is another process now, or the node refused the signal: nothing was sent). For any other change the
        result of its last command sent (a file's write stops at its first failed command).

    Raises:
        Aborted: the operator asked to stop first, or the audit log could not be written.
        LockLost: the lock is not this run's.
        BackendError: from the backend (after the event).
    """
    if isinstance(ctx.performer, Recording):
        ctx.performed.append(change)
        if isinstance(change, SignalHolder):
            return SIGNALLED, ""
        return CommandResult(change.argvs()[-1], 0)
    if isinstance(change, SignalHolder):
        return await _signal(ctx, change, kind=kind, user=user, abortable=abortable)
    if change.where != NODE:
        if via is None:
            raise ValueError(f"{type(change).__name__} runs on the {change.where}: say how it goes there")
        return await _elsewhere(ctx, change, via)
    if abortable:
        ctx.check_abort()
    ctx.performed.append(change)
    if isinstance(change, WriteFile | WriteOwner):
        return await _write(ctx, change, timeout=timeout, abortable=abortable)
    result: CommandResult | None = None
    for command in change.commands():
        result = await _send(ctx, change, command, timeout=timeout, abortable=abortable, purpose=purpose)
    assert result is not None  # every change has a command
    return result


async def announce(ctx: NodeContext, change: Change) -> str | None:
    """Put a change that streams its output (the smoke test) through the door's first half: announced, on
    disk, kept in :attr:`NodeContext.performed`; the caller then sends it, behind the fence returned."""
    (command,) = change.commands()
    fence = ctx.fenced_by()
    ctx.performed.append(change)
    ctx.record_command(command.argv, dict(command.env))
    ctx.emit(CommandStarted(host=ctx.host, step=ctx.step, argv=command.argv, env=dict(command.env),
                            fence=fence or "", bookkeeping=change.bookkeeping, purpose=""))
    await ctx.audit_first(command.argv)
    return fence


async def _send(ctx: NodeContext, change: Change, command: Command, *, timeout: float | None,
                abortable: bool, purpose: str = "") -> CommandResult:
    return await ctx.run(command.argv, timeout=timeout, privileged=change.privileged, env=dict(command.env) or None,
                         stdin=command.stdin, abortable=abortable, fenced=command.fenced,
                         bookkeeping=change.bookkeeping, purpose=purpose)


async def _write(ctx: NodeContext, change: WriteFile | WriteOwner, *, timeout: float | None,
                 abortable: bool) -> CommandResult:
    """mkdir where the file has one (its answer is not judged: the tee says whether the directory is there), tee,
    then mv if the tee wrote; the result of the last one sent."""
    *make_dir, tee, move = change.commands()
    for command in make_dir:
        await _send(ctx, change, command, timeout=timeout, abortable=abortable)
    written = await _send(ctx, change, tee, timeout=timeout, abortable=abortable)
    return await _send(ctx, change, move, timeout=timeout, abortable=abortable) if written.ok else written


async def _elsewhere(ctx: NodeContext, change: Change, via: Via) -> CommandResult:
    """A change made off the node (the scheduler's, the cluster's): the node's lock proven on the node right before, announced
    and on disk first, whatever an abort says (putting a drain back must not be refused)."""
    (command,) = change.commands()
    argv = command.argv
    await ctx.check_fence()
    ctx.performed.append(change)
    ctx.emit(CommandStarted(host=ctx.host, step=ctx.step, argv=argv, bookkeeping=change.bookkeeping, purpose=""))
    await ctx.audit_first(argv, abortable=False)
    began = ctx.options.clock()
    try:
        status, output = await via(argv)
    except Exception as exc:  # sent, and no answer (a kubectl that hung): said, then the caller decides
        ctx.emit(CommandFinished(host=ctx.host, step=ctx.step, argv=argv, exit_status=None, error=str(exc),
                                 duration=ctx.options.clock() - began))
        raise
    ctx.emit(CommandFinished(host=ctx.host, step=ctx.step, argv=argv, exit_status=status, output=output,
                             duration=ctx.options.clock() - began))
    return CommandResult(argv, status, output)


async def _signal(ctx: NodeContext, change: SignalHolder, *, kind: str, user: str,
                  abortable: bool) -> tuple[str, str]:
    """Signal one holder after the backend re-verifies its identity (audit first: the intent is on disk
    before the signal leaves; the outcome follows it)."""
    name = f"SIG{change.signal}"
    if abortable:
        ctx.check_abort()
    argv = change.argv()
    ctx.performed.append(change)
    ctx.record_command(argv)
    ctx.note(f"sending {name} to {change.pid} ({kind}, {user}: {change.command[:120]})")
    await ctx.audit_first(argv, abortable=abortable)
    expected = ProcessIdentity(change.pid, change.start_time, change.command)
    fence = ctx.fenced_by()  # the re-read and the signal go out behind the lock's fence
    try:
        outcome = await ctx.backend.signal(change.pid, _SIGNALS[change.signal], expected, fence=fence)
        found, detail = (SIGNALLED, "") if outcome.signalled else (CHANGED, outcome.reason or "not signalled")
        said = "signalled" if outcome.signalled else (outcome.reason or "not signalled")
    except ProcessGone as exc:
        found, detail, said = GONE, str(exc), "already gone"
    except ProcessChanged as exc:
        found, detail, said = CHANGED, str(exc), f"not signalled: {exc}"
    except Fenced:
        ctx.emit(ProcessSignalled(host=ctx.host, step=ctx.step, pid=change.pid, signal=name, command=change.command,
                                  holder_kind=kind, outcome="not signalled: the lock is not this run's"))
        raise await ctx.lose_lock_to_fence() from None
    ctx.emit(ProcessSignalled(host=ctx.host, step=ctx.step, pid=change.pid, signal=name, command=change.command,
                              holder_kind=kind, outcome=said))
    return found, detail


__all__ = ["CHANGED", "GONE", "SIGNALLED", "Recording", "announce", "perform"]

"""The repair around a scheduler: drain the node first, let its jobs end, and put the drain back after.

A node under Slurm runs users' job steps: the repair never SIGTERMs them. Preflight drains the node
(``scontrol update ... State=DRAIN Reason="nvls-tui RUN: NVLS repair"``) so no new job lands, waits
up to ``wait_jobs`` seconds for the running ones to end, and refuses (naming them) if they do not.
After the run the drain goes back the way it was: a drain this run set is resumed after a repair
(unless ``keep_drained``) and after a refusal or an abort; after a failed repair it stays, with the
reason ``nvls-tui: repair failed at STEP``, so the scheduler never gets a broken node. A drain
someone else set is left alone. Every scontrol call is an audited command of the step it belongs to.

The scheduler itself is reached through a :class:`SchedulerHook` (the bastion's Slurm, or a test's),
so this module stays free of subprocesses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nvls_tui.model.scheduler import SchedulerState
from nvls_tui.runbook.changes import CancelJob, Change, DrainNode, ResumeNode
from nvls_tui.runbook.context import Aborted, NodeContext, Refused, StepFailed
from nvls_tui.runbook.door import perform
from nvls_tui.textsafe import one_line
from nvls_tui.words import count

# How often the job wait reads the scheduler again.
JOB_POLL = 2.0


class SchedulerHook(Protocol):
    """The scheduler of one node, as the runbook needs it."""

    @property
    def node(self) -> str:
        """The scheduler's name of the node."""
        ...

    async def read(self) -> SchedulerState | None:
        """The node's state, reason and running jobs; None when the scheduler has no such node."""
        ...

    async def command(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run one scheduler command (on the bastion): its exit status and output."""
        ...


@dataclass
class DrainHold:
    """What the drain was before the run, and whether this run set it."""

    node: str
    ours: bool
    prior_state: str
    prior_reason: str | None
    inherited: bool = False  # an earlier nvls-tui run's drain: resumed after a pass, else left as it was


def run_reason(run_id: str) -> str:
    """The drain reason of a run: ``nvls-tui RUN_ID: NVLS repair``."""
    return f"nvls-tui {run_id}: NVLS repair"


def drain_argv(node: str, reason: str) -> tuple[str, ...]:
    """``scontrol update NodeName=N State=DRAIN Reason=...`` (:class:`~nvls_tui.runbook.changes.DrainNode`)."""
    return DrainNode(node, reason).argv()


def resume_argv(node: str) -> tuple[str, ...]:
    """``scontrol update NodeName=N State=RESUME`` (:class:`~nvls_tui.runbook.changes.ResumeNode`)."""
    return ResumeNode(node).argv()


def drain_change(node: str, run_id: str) -> DrainNode:
    """The run's drain of ``node`` (the program's, runbook/program.py, and :func:`drain`'s)."""
    return DrainNode(node, run_reason(run_id), remark="on the bastion: no new job lands")


def resume_change(node: str) -> ResumeNode:
    """The resume of ``node`` after a passing repair (the program's and :func:`settle`'s)."""
    return ResumeNode(node, remark="on the bastion, after a passing smoke test")


def jobs_words(node: str) -> str:
    """What a plan says of the wait for the drained node's jobs (:func:`wait_for_jobs`)."""
    return f"squeue -w {node}  # on the bastion: running jobs end first (--wait-jobs), or the repair is refused"


async def _command(ctx: NodeContext, hook: SchedulerHook, change: Change) -> tuple[int, str]:
    """One scheduler change through the door, as a command of the current step (the node's lock proven on the
    node right before)."""
    result = await perform(ctx, change, via=hook.command)
    return result.exit_status, result.stdout


async def read(ctx: NodeContext, hook: SchedulerHook) -> SchedulerState | None:
    """The node's scheduler state; one that cannot be read stops the run (a guard that cannot see refuses).

    None: the scheduler answered and has no such node. The repair then goes on without it; a job's
    process on the GPUs would still stop it, at verify-no-holders (a workload is never signalled).
    """
    state = await hook.read()
    if state is None:
        return None
    if state.error:
        raise Refused(f"the scheduler could not be read, so the node's jobs are unknown: {state.error}")
    return state


async def drain(ctx: NodeContext, hook: SchedulerHook, run_id: str,
                change: DrainNode | None = None) -> DrainHold | None:
    """Drain the node (unless the scheduler already holds it back); what it was before.

    ``change``: the drain the run's program names (runbook/program.py); by default :func:`drain_change`'s.

    None when the scheduler has no such node (nothing to drain, nothing to put back).
    """
    state = await read(ctx, hook)
    if state is None:
        ctx.note(f"the Slurm cluster has no node {hook.node}: repaired without draining it "
                 f"(map the target with --slurm-node-map if it has another name there)", "warning")
        return None
    if state.held_back and state.state != "down" and (state.reason or "").startswith("nvls-tui"):
        # An earlier run's drain (its repair failed, or it was cut short): this run's to put back.
        ctx.note(f"{hook.node} is still drained by an earlier nvls-tui run ({state.reason}): a passing repair "
                 f"resumes it")
        return DrainHold(hook.node, True, state.state, state.reason, inherited=True)
    if state.held_back:
        why = f" ({state.reason})" if state.reason else ""
        ctx.note(f"Slurm already has {hook.node} {state.state}{why}: the drain is left as it is after the run")
        return DrainHold(hook.node, False, state.state, state.reason)
    status, output = await _command(ctx, hook, change or drain_change(hook.node, run_id))
    if status != 0:
        raise Refused(f"Slurm did not drain {hook.node}: {output.strip() or f'exit status {status}'}")
    return DrainHold(hook.node, True, state.state, state.reason)


def _jobs_words(state: SchedulerState) -> str:
    return ", ".join(f"{j.id} ({one_line(j.user, 40)}/{one_line(j.name, 80)})" for j in state.jobs[:5]) + (
        f" and {len(state.jobs) - 5} more" if len(state.jobs) > 5 else "")


def _unseen_words(node: str, state: SchedulerState) -> str:
    raw = f" ({state.raw})" if state.raw else ""
    return f"Slurm has {node} {state.state}{raw} but no job on it could be read, so its jobs are unknown"


@dataclass(frozen=True)
class JobDecision:
    """The operator's answer about jobs still running on a drained node (the console asks).

    Attributes:
        scancel: job ids to cancel now (typed by the operator); none means wait for them to end.
        abort: stop the repair (everything is put back, the drain included).
    """

    scancel: tuple[int, ...] = ()
    abort: bool = False


async def wait_for_jobs(ctx: NodeContext, hook: SchedulerHook, wait_s: float) -> None:
    """Wait for the node's jobs to end; refuse, naming them, when they outlast ``wait_s``.

    With an operator who can answer (the console's ``resolve_jobs``), the operator decides instead:
    wait for them (an abort stops the wait), scancel them, or abort; no deadline applies then. A node
    Slurm calls busy with no job read is refused once two reads in a row say so and ``wait_s`` is over,
    whoever could answer: there is no job to ask about.
    """
    deadline = ctx.options.clock() + max(0.0, wait_s)
    ask = getattr(ctx.operator, "resolve_jobs", None)
    state = await read(ctx, hook)
    told: tuple[int, ...] | None = None
    asked = False
    unseen = 0  # reads in a row that found the node busy with no job: one more read before refusing
    while state is not None and (state.jobs or state.jobs_unseen):
        if state.jobs_unseen:
            # Slurm says jobs hold the node, yet none was read (one may have started between scontrol
            # and squeue, or squeue did not list it): never a repair under a job nobody could name.
            unseen += 1
            if unseen > 1 and ctx.options.clock() >= deadline:
                raise Refused(f"{_unseen_words(hook.node, state)}; a repair never runs under a job: check "
                              f"`squeue -w {hook.node}`, then repair again")
        else:
            unseen = 0
        if state.jobs and ask is not None and not asked:
            asked = True
            decision: JobDecision = await ask(ctx.host, state.jobs)
            if decision.abort:
                raise Aborted("aborted by the operator while Slurm jobs ran")
            for job in decision.scancel:
                await _command(ctx, hook, CancelJob(int(job)))
        elif state.jobs and ask is None and ctx.options.clock() >= deadline:
            raise Refused(f"{hook.node} still runs {count(len(state.jobs), 'Slurm job')}: {_jobs_words(state)}; "
                          f"a repair never signals a job: let them end (--wait-jobs SECONDS keeps the node "
                          f"drained while they do) or scancel them, then repair again")
        ids = tuple(j.id for j in state.jobs)
        if ids != told:  # said once per change, not every re-read
            told = ids
            ctx.note(f"waiting for {count(len(state.jobs), 'Slurm job')} to end: {_jobs_words(state)}" if ids else
                     f"{_unseen_words(hook.node, state)}: reading again")
        ctx.check_abort()
        await ctx.options.sleep(JOB_POLL)
        state = await read(ctx, hook)


async def settle(ctx: NodeContext, hook: SchedulerHook, hold: DrainHold | None, result: str,
                 failed_step: str | None, keep_drained: bool) -> str | None:
    """Put the drain back the way it was; a sentence for the run's message, or None.

    Raises:
        StepFailed: Slurm refused to resume or re-reason the node (the node stays drained: say so).
    """
    if hold is None:
        return None
    resume = f"`{' '.join(resume_argv(hook.node))}`"
    if not hold.ours:  # someone else's drain (or down): left as it was, and said where the run ends
        why = f": {hold.prior_reason}" if hold.prior_reason else ""
        return (f"{hook.node} stays {hold.prior_state} in Slurm (before the repair, not by nvls-tui{why}): {resume} "
                "once whoever set it agrees")
    if hold.inherited and result not in ("repaired", "skipped"):
        # drained before this run, by an earlier one: it stays so until a repair passes
        return (f"{hook.node} stays drained in Slurm (an earlier nvls-tui run's: {hold.prior_reason}): {resume} "
                "once it is repaired")
    if result == "failed":
        reason = f"nvls-tui: repair failed at {failed_step or 'an unknown step'}"
        status, output = await _command(ctx, hook, DrainNode(hook.node, reason))
        if status != 0:
            raise StepFailed(f"Slurm did not take the reason {reason!r}: {output.strip() or status}")
        return f"{hook.node} stays drained in Slurm ({reason}): {resume} once it is repaired"
    if result in ("repaired", "skipped") and keep_drained:
        return f"{hook.node} stays drained in Slurm (--keep-drained): {resume} puts it back in service"
    status, output = await _command(ctx, hook, resume_change(hook.node))
    if status != 0:
        raise StepFailed(f"Slurm did not resume {hook.node}; it stays drained: {output.strip() or status}")
    return f"{hook.node} resumed in Slurm"


__all__ = ["DrainHold", "JobDecision", "SchedulerHook", "drain", "drain_argv", "drain_change", "jobs_words", "read", "resume_argv",
           "resume_change", "run_reason", "settle", "wait_for_jobs"]

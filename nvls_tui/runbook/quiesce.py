"""``quiesce`` and ``verify-no-holders``: take every client off the GPUs, then prove it.

The order is the write-up's: the snapshot timer and its service, the watch loops (parent first,
or it spawns a new nvidia-smi), DCGM, persistence mode, kubelet (or it recreates the GPU Operator
pods), Fabric Manager; then SIGTERM to the management processes still holding a device, each one
re-verified (start time and command line) just before the signal. Workloads (CUDA applications and
unknown processes) are never signalled unless the operator selects them.

What quiesce does to a state is :func:`quiesce_plan`'s; the run walks it from its program (runbook/program.py:
the changes through :func:`stop`, the watch loops and the holders left at their decision points), and the dry run
lists the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from nvls_tui.model import Holder, HolderKind, NodeState
from nvls_tui.parsers.fuser import parse_fuser_streams
from nvls_tui.parsers.holders import build_holders, classify
from nvls_tui.parsers.ps import parse_ps, parse_ps_cgroups
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.probe import DEVICE_LIST_ARGV, PS_FORMAT, cgroup_argv, ps_argv
from nvls_tui.runbook.changes import Change, Read, SetPersistence, SignalHolder, UnitChange
from nvls_tui.runbook.context import Aborted, NodeContext, StepFailed
from nvls_tui.runbook.describe import as_plain, holder_list
from nvls_tui.runbook.door import SIGNALLED, perform
from nvls_tui.runbook.events import HOLDERS, HoldersRemaining
from nvls_tui.runbook.hold_apt import HELD_NOTE, held_sentence, timers_to_hold
from nvls_tui.runbook.steps import (
    AFTER_FAILURE,
    DCGM,
    FM_UNIT,
    KUBELET,
    PERSISTENCED,
    SNAPSHOT_SERVICE,
    SNAPSHOT_TIMER,
    clock_text,
    devices_of,
    is_running,
    persistence_modes,
    unit_states,
)
from nvls_tui.words import count, verb

# Holder kinds that belong to a unit quiesce stops anyway: signalling them would race systemd.
_UNIT_KINDS = frozenset({HolderKind.FABRIC_MANAGER, HolderKind.PERSISTENCED})
# Every process with its identity: how watch loops are found (see watch_parents).
WATCH_PS = ("ps", "-ww", "-e", "-o", PS_FORMAT)
# How many times verify-no-holders stops management holders that came back before it gives up.
MAX_RESPAWN_ROUNDS = 5
# fuser is asked about the device files DEVICE_LIST_ARGV finds, and no other. A node may lack some of
# the shared ones (the real H200 has no nvidia-modeset, nvidia-nvlink or nvidia-nvswitchctl), and a
# fuser that names a file that does not exist exits 1 with only its complaint once nothing holds a
# device: the very answer that proves a node free read as unparseable, on every run.
_DEVICE_FILE = re.compile(r"/dev/nvidia[A-Za-z0-9_.-]*")


# What quiesce does, in order: a change (a unit stopped, persistence mode off, a SIGTERM to a verified
# process) or a read the plan shows (the listing of every watch loop).
Action = Change | Read


def _signal(pid: int, why: str) -> SignalHolder:
    return SignalHolder(pid=pid, reason=why)


def watch_plan(holders: tuple[Holder, ...], loops: Sequence[Holder] | None = None) -> list[Action]:
    """The watch loops, as far as what was read shows them: the listing of every loop, then a SIGTERM to each.

    ``loops``: the loops that listing found (:func:`watch_loops_in`; the dry run reads it as the run does).
    None: only a snapshot is known; ``watch`` itself opens no device, so a snapshot often shows only its
    nvidia-smi child, and the parent is then named by the child's PPID. A loop's nvidia-smi ends with it: no
    signal of its own is planned (one still there after the loop's end is a management holder like any).
    """
    parents: list[Action] = [Read(WATCH_PS, reason="find every watch ... nvidia-smi loop")]
    if loops is not None:
        return parents + [_signal(h.pid, "watch loop") for h in loops]
    known = {h.pid for h in holders}
    parents += [_signal(h.pid, "watch loop") for h in holders if h.kind is HolderKind.WATCH]
    for ppid in sorted({h.ppid for h in holders
                        if h.kind is HolderKind.NVIDIA_SMI and h.ppid and h.ppid > 1 and h.ppid not in known}):
        parents.append(_signal(ppid, "parent of an nvidia-smi, if it is a watch loop"))
    return parents


@dataclass(frozen=True)
class QuiescePlan:
    """What quiesce does to a state, in its four parts (in order): the units stopped before the watch loops
    (apt's timers, the snapshot timer and its service); the watch loops (the listing of every process, a SIGTERM to
    each loop found); the clients stopped after them (DCGM, persistence mode, kubelet, FM); the management
    processes still holding a device, SIGTERMed (the run re-reads them there: these are the ones the state shows).
    """

    first: tuple[Change, ...]
    watch_loops: tuple[Action, ...]
    then: tuple[Change, ...]
    holders_left: tuple[SignalHolder, ...]

    def actions(self) -> list[Action]:
        """Every part's, in order."""
        return [*self.first, *self.watch_loops, *self.then, *self.holders_left]


def quiesce_plan(state: NodeState, *, stop_kubelet: bool = True, listing: str | None = None) -> QuiescePlan:
    """Everything quiesce would do to ``state``, by part (:class:`QuiescePlan`), in the order it does it.

    ``stop_kubelet`` False: the repair goes through the Kubernetes API instead (runbook/kube_repair.py), and
    kubelet keeps running (the node stays Ready; the paused operands' pods are deleted by their DaemonSets, the
    workloads' evicted, before quiesce: their processes get no signal of quiesce's). ``listing``: what :data:`WATCH_PS` printed (the dry run reads it as the run does): the watch loops it lists
    are the ones signalled, and a holder it no longer lists (a loop's short-lived nvidia-smi) has exited.
    """
    units = unit_states(state)
    # apt's timers first: an unattended upgrade (and the needrestart it runs) would restart FM mid-repair.
    first: list[Change] = [UnitChange("stop", timer, HELD_NOTE) for timer in timers_to_hold(state)]
    timer_up = is_running(units.get(SNAPSHOT_TIMER))
    if timer_up:
        first.append(UnitChange("stop", SNAPSHOT_TIMER))
    if SNAPSHOT_SERVICE in units and (timer_up or is_running(units.get(SNAPSHOT_SERVICE))):
        first.append(UnitChange("stop", SNAPSHOT_SERVICE))
    holders = state.holders
    loops: list[Holder] | None = None
    if listing is not None:
        loops = watch_loops_in(listing, holders)
        alive = {e.pid: e.ppid for e in parse_ps(listing).value}
        holders = tuple(dataclasses.replace(h, ppid=alive[h.pid]) for h in holders if h.pid in alive)
    watch = watch_plan(holders, loops)
    then: list[Change] = []
    for unit in (DCGM, PERSISTENCED):
        if is_running(units.get(unit)):
            then.append(UnitChange("stop", unit))
    if any(mode == "Enabled" for mode in persistence_modes(state).values()):
        then.append(SetPersistence(False))
    for unit in (KUBELET, FM_UNIT):
        if unit == KUBELET and not stop_kubelet:
            continue
        if is_running(units.get(unit)):
            then.append(UnitChange("stop", unit))
    done = {a.pid for a in watch if isinstance(a, SignalHolder)}
    # A unit's own processes go with `systemctl stop` (nv-hostengine with nvidia-dcgm): no signal planned; a
    # loop's nvidia-smi goes with its loop.
    stopped = {a.unit for a in [*first, *then] if isinstance(a, UnitChange) and a.verb == "stop"}
    # On Kubernetes (kubelet kept) a pod's processes leave with their pod before quiesce: the operands' through
    # their paused labels, the workloads' through evictions (runbook/kube_repair.py): no signal is planned.
    left = [_signal(h.pid, f"{h.kind} holder") for h in stoppable(holders)
            if h.pid not in done and h.unit not in stopped
            and not (h.kind is HolderKind.NVIDIA_SMI and h.ppid in done) and not (h.pod and not stop_kubelet)]
    return QuiescePlan(tuple(first), tuple(watch), tuple(then), tuple(left))


def quiesce_actions(state: NodeState, *, stop_kubelet: bool = True, listing: str | None = None) -> list[Action]:
    """Everything quiesce would do to ``state``, in the order it does it (:func:`quiesce_plan`'s parts in one)."""
    return quiesce_plan(state, stop_kubelet=stop_kubelet, listing=listing).actions()


def stoppable(holders: tuple[Holder, ...] | list[Holder]) -> list[Holder]:
    """The holders the runbook may SIGTERM on its own: management processes not owned by a stopped unit.

    A process of a scheduler's job is a workload whatever its name (an `nvidia-smi` in a job step):
    the scheduler ends jobs (drain, scancel), never a SIGTERM from the repair.
    """
    return [h for h in holders if h.kind.is_management and h.kind not in _UNIT_KINDS and h.job is None]


def listed_devices(text: str) -> tuple[str, ...]:
    """The device files in :data:`DEVICE_LIST_ARGV`'s answer, sorted (anything else on a line is not one)."""
    return tuple(sorted({line.strip() for line in text.splitlines() if _DEVICE_FILE.fullmatch(line.strip())}))


def present_fuser_argv(state: NodeState, present: tuple[str, ...]) -> tuple[str, ...]:
    """``fuser -v`` on the device files the node has: the state's own first (GPUs, shared files,
    NVSwitches, in that order), then any other the node has (a GPU the snapshot did not list)."""
    named = [d for d in devices_of(state) if d in present]
    return ("fuser", "-v", *named, *(d for d in present if d not in named))


async def present_devices(ctx: NodeContext) -> tuple[str, ...]:
    """The /dev/nvidia* files of the node, read on the node now (a device file can come and go).

    Raises:
        StepFailed: the listing could not be read, or there is no device file at all (no driver).
    """
    listing = await ctx.run(DEVICE_LIST_ARGV)
    why = missing_evidence("devices", listing)
    if why is not None:
        raise StepFailed(f"cannot prove that no process holds a GPU device: {why.detail}")
    present = listed_devices(listing.stdout)
    if not present:
        raise StepFailed("cannot prove that no process holds a GPU device: no /dev/nvidia* device file exists on "
                         "the node (is the NVIDIA driver loaded?)")
    return present


async def read_holders(ctx: NodeContext, state: NodeState) -> tuple[Holder, ...]:
    """``fuser -v`` on every device file the node has, then ``ps`` for each PID's identity and cgroup.

    Fail closed: "no holder" is believed only from a fuser that really ran on the files the node
    really has and could see every process; anything else stops the step, so no reset can follow.
    A shared file the node lacks is no evidence either way: it is simply not named.

    Raises:
        StepFailed: the device files could not be listed, or fuser is missing, was denied, timed out,
            or could not read some process's files.
    """
    result = await ctx.run(present_fuser_argv(state, await present_devices(ctx)), privileged=True, purpose=HOLDERS)
    why = missing_evidence("holders", result)
    if why is not None:
        raise StepFailed(f"cannot prove that no process holds a GPU device: {why.detail}")
    entries = parse_fuser_streams(result.stdout, result.stderr).value
    pids = sorted({e.pid for e in entries})
    if not pids:
        return ()
    ps = await ctx.run(ps_argv(pids))
    cgroups = await ctx.run(cgroup_argv(pids))
    return tuple(build_holders(entries, parse_ps(ps.stdout).value, parse_ps_cgroups(cgroups.stdout).value))


def watch_loops_in(listing: str, holders: tuple[Holder, ...]) -> list[Holder]:
    """Every ``watch ... nvidia-smi`` loop in :data:`WATCH_PS`'s ``listing``, with its identity (the watch holders
    fuser found first)."""
    found = {h.pid: h for h in holders if h.kind is HolderKind.WATCH}
    for entry in parse_ps(listing).value:
        if classify(entry.args) is HolderKind.WATCH and "nvidia-smi" in entry.args and entry.pid not in found:
            found[entry.pid] = Holder(pid=entry.pid, user=entry.user, command=entry.args, kind=HolderKind.WATCH,
                                      start_time=entry.lstart, ppid=entry.ppid)
    # A watch loop forks before each run, and its child reads "watch -n 1 nvidia-smi" until it execs
    # (seen with procps watch on a real node): only the loops themselves are stopped.
    return [w for w in found.values() if w.ppid not in found]


async def watch_parents(ctx: NodeContext, holders: tuple[Holder, ...]) -> list[Holder]:
    """Every ``watch ... nvidia-smi`` loop on the node, with its identity, read with ``ps -e``.

    ``watch`` opens no device itself and its nvidia-smi child lives about one second out of two, so
    following a holder's PPID misses it whenever the child exits between fuser and ps: list them all.
    """
    return watch_loops_in((await ctx.run(WATCH_PS)).stdout, holders)


async def signal_holder(ctx: NodeContext, holder: Holder, sig: int = signal.SIGTERM) -> tuple[str, str]:
    """Signal one holder through the door, after the backend re-verifies its identity.

    Returns:
        ``(outcome, detail)``: ``signalled``, ``gone`` (it had exited) or ``changed`` (the PID is
        another process now, or the node refused the signal: nothing was sent).
    """
    change = SignalHolder(pid=holder.pid, signal="KILL" if sig == signal.SIGKILL else "TERM",
                          reason=f"{holder.kind} holder", start_time=holder.start_time, command=holder.command)
    return await perform(ctx, change, kind=str(holder.kind), user=holder.user)


async def send(ctx: NodeContext, holder: Holder, sig: int = signal.SIGTERM) -> bool:
    """:func:`signal_holder`, True if the signal went out."""
    return (await signal_holder(ctx, holder, sig))[0] == SIGNALLED


async def _wait_gone(ctx: NodeContext, state: NodeState, pids: set[int]) -> tuple[Holder, ...]:
    """Re-read the holders until none of ``pids`` is left or the grace time ends; return the holders."""
    deadline = ctx.options.clock() + ctx.options.term_grace
    while True:
        holders = await read_holders(ctx, state)
        if not {h.pid for h in holders} & pids or ctx.options.clock() >= deadline:
            return holders
        await ctx.pause()


async def terminate(ctx: NodeContext, state: NodeState, holders: list[Holder]) -> tuple[Holder, ...]:
    """SIGTERM ``holders`` (SIGKILL after the grace time only if the operator allowed it).

    Returns:
        The holders of the node afterwards.
    """
    sent = {h.pid for h in holders if await send(ctx, h)}
    if not sent:
        return await read_holders(ctx, state)
    after = await _wait_gone(ctx, state, sent)
    stubborn = [h for h in after if h.pid in sent]
    if stubborn and ctx.options.sigkill:
        killed = {h.pid for h in stubborn if await send(ctx, h, signal.SIGKILL)}
        after = await _wait_gone(ctx, state, killed) if killed else after
    return after


def note_held(ctx: NodeContext, state: NodeState) -> None:
    """Say which of apt's timers are held for the repair (quiesce's first words)."""
    if held := timers_to_hold(state):
        ctx.note(held_sentence(held))


async def stop_watch_loops(ctx: NodeContext, state: NodeState) -> None:
    """The watch loops, in their place (before DCGM: a loop's nvidia-smi is a client like any), read now and
    SIGTERMed (each identity re-checked)."""
    parents = await watch_parents(ctx, await read_holders(ctx, state))
    if parents:
        await terminate(ctx, state, parents)


async def stop(ctx: NodeContext, change: Change) -> None:
    """One of quiesce's changes (a unit stopped, persistence mode off) through the door.

    Raises:
        StepFailed: the node refused it.
    """
    result = await perform(ctx, change)
    if not result.ok:
        first = next((ln for ln in result.output.splitlines() if ln.strip()), f"exit status {result.exit_status}")
        raise StepFailed(f"`{change.display}` failed: {first.strip()}")


async def stop_holders_left(ctx: NodeContext, state: NodeState) -> tuple[Holder, ...]:
    """The management processes still holding a device, re-read now and SIGTERMed with a shared grace time;
    returns the holders left (the verify step deals with them)."""
    holders = await read_holders(ctx, state)
    left = stoppable(holders)
    if left:
        holders = await terminate(ctx, state, left)
    if holders:
        ctx.emit(HoldersRemaining(host=ctx.host, step=ctx.step, holders=holders))
    return holders


def _describe(holders: tuple[Holder, ...] | list[Holder]) -> str:
    """The holders named as every sentence about them names them (runbook/describe.holder_list)."""
    return as_plain(holder_list(holders))


def _owners(holders: tuple[Holder, ...]) -> list[str]:
    """The pods and units that run ``holders`` (what the operator stops instead of a PID), in order."""
    owners = [f"pod {h.pod}" if h.pod else f"unit {h.unit}" for h in holders if h.pod or h.unit]
    return list(dict.fromkeys(owners))[:6]


def holders_deadline_message(limit: float, holders: tuple[Holder, ...], sigkill: bool) -> str:
    """Why verify-no-holders failed when ``holders`` outlived its ``limit`` seconds, and the next move.

    Workloads are the operator's to stop (the runbook never signals them); a management process
    still there ignored SIGTERM, which only ``--sigkill`` goes past.
    """
    n = len(holders)
    them = "it" if n == 1 else "them"
    owners = _owners(holders)
    runs = f"what runs {them}: {', '.join(owners)}" if owners else f"the unit or pod that runs {them}"
    advice = f"stop {them} (or {runs}) and run the repair again"
    if not sigkill and any(h.kind.is_management for h in holders):
        advice += ", or run the repair with --sigkill to SIGKILL the management processes that ignore SIGTERM"
    return (f"{count(n, 'process')} still {verb(n, 'holds')} /dev/nvidia* after {clock_text(limit)}: "
            f"{_describe(holders)}: {advice}; {AFTER_FAILURE}")


async def verify_no_holders(ctx: NodeContext, state: NodeState, *, spare: frozenset[str] = frozenset()) -> None:
    """Prove that nothing holds a device; wait for the operator (bounded) while something does.

    ``spare``: the cgroup pod ids (``pod<uid>``) whose processes are left on the devices: the GPU Operator's
    driver pod where Fabric Manager runs in it (its restart is the reset, runbook/kube_repair.py).

    Management holders that come back (a pod restarted by its container runtime, a timer fired) are
    re-checked and stopped again, a bounded number of times. Workloads are listed and left to the
    operator, who may select them for SIGTERM through the :class:`~nvls_tui.runbook.steps.Operator`.

    Each re-check while it waits reports the holders with the time waited against the deadline, and
    once they are gone one last report says so (an empty list), so the wait ends on screen too.

    Raises:
        StepFailed: holders remain when the wait ends (the message names them and the next move);
            the runbook then restores.
        Aborted: the operator chose to abort.
    """
    opts = ctx.options
    began = opts.clock()
    deadline = began + opts.holder_timeout
    rounds = 0
    waited = False
    while True:
        holders = tuple(h for h in await read_holders(ctx, state) if not (h.pod and h.pod in spare))
        if not holders:
            if waited:
                ctx.emit(HoldersRemaining(host=ctx.host, step=ctx.step, holders=(), elapsed=opts.clock() - began,
                                          limit=opts.holder_timeout))
            return
        again = stoppable(holders)
        if again and rounds < MAX_RESPAWN_ROUNDS:
            rounds += 1
            ctx.note(f"management processes hold devices again ({_describe(again)}): stopping them "
                     f"(re-check {rounds} of {MAX_RESPAWN_ROUNDS})", "warning")
            smi = any(h.kind is HolderKind.NVIDIA_SMI for h in again)
            parents = await watch_parents(ctx, holders) if smi else []
            await terminate(ctx, state, parents + again)
            continue
        waiting = opts.clock() < deadline
        waited = True
        ctx.emit(HoldersRemaining(host=ctx.host, step=ctx.step, holders=holders, waiting=waiting,
                                  elapsed=opts.clock() - began, limit=opts.holder_timeout))
        if not waiting:
            raise StepFailed(holders_deadline_message(opts.holder_timeout, holders, opts.sigkill))
        if ctx.operator is not None:
            await _ask_operator(ctx, state, holders, deadline)
        else:
            await ctx.pause()


async def _ask_operator(ctx: NodeContext, state: NodeState, holders: tuple[Holder, ...], deadline: float) -> None:
    """Let the operator pick holders to SIGTERM (or abort), within what is left of the wait."""
    remaining = max(0.0, deadline - ctx.options.clock())
    if ctx.operator is None:
        return
    try:
        async with asyncio.timeout(remaining):
            decision = await ctx.operator.resolve_holders(ctx.host, holders)
    except TimeoutError:
        return
    if decision.abort:
        raise Aborted("aborted by the operator while holders remained")
    chosen = [h for h in holders if h.pid in set(decision.sigterm)]
    if chosen:
        await terminate(ctx, state, chosen)
    else:
        await ctx.pause()


__all__ = ["DEVICE_LIST_ARGV", "Action", "QuiescePlan", "note_held", "quiesce_plan", "stop", "stop_holders_left",
           "stop_watch_loops", "holders_deadline_message", "listed_devices", "present_devices",
           "present_fuser_argv", "quiesce_actions", "read_holders", "send", "stoppable",
           "terminate", "verify_no_holders", "watch_loops_in"]

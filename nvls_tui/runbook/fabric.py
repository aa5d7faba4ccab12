"""``reset``, ``fabric-manager`` and ``verify-fabric``: the destructive middle of the repair.

The reset runs only after verify-no-holders proved the devices free; Fabric Manager starts only
after a successful reset (an FM restart without a reset leaves NVLS broken, domain.md). Registration
is watched with a bounded wait in which ``In Progress`` is progress, and ``Completed`` with a status
other than ``Success`` is a fault a reset does not fix: it is reported for escalation. Both waits
report their deadline (a ``WaitStarted`` before the reset, each poll's ``FabricProgress``), and a wait
that runs past it fails with what to look at next.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence

from nvls_tui.backends.base import CommandTimeout
from nvls_tui.model import GpuState, KernelEvent
from nvls_tui.parsers.kernel_log import message, parse_kernel_log
from nvls_tui.parsers.nvidia_smi_csv import gpus_from_query, parse_query_csv
from nvls_tui.parsers.nvidia_smi_reset import parse_reset
from nvls_tui.poll.assemble import parse_boot
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.kernel_tail import CURSOR, filter_ring, last_cursor
from nvls_tui.poll.probe import BOOT_ARGV, QUERY_FIELDS
from nvls_tui.runbook.changes import Read, ResetGpus, UnitChange
from nvls_tui.runbook.changes import start_fabric_manager as start_fm
from nvls_tui.runbook.context import NodeContext, StepFailed
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.events import CLOCK, FABRIC_POLL, FABRIC_START, FabricProgress, WaitStarted
from nvls_tui.runbook.steps import (
    AFTER_FAILURE,
    DATE_ARGV,
    FM_UNIT,
    KERNEL_CURSOR_ARGV,
    clock_text,
    kernel_after_argv,
    kernel_cursor_check_argv,
    kernel_since_argv,
)
from nvls_tui.words import count

FABRIC_QUERY = ("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv")
# What the reset waits on, as a waiting step says it (``nvidia-smi -r`` takes every GPU and NVSwitch).
RESET_STATE = "resetting every GPU and NVSwitch"
FM_JOURNAL = f"journalctl -u {FM_UNIT.removesuffix('.service')}"
# How journalctl (systemd 252) refuses a cursor it cannot seek to: "Failed to seek to cursor: Invalid argument".
SEEK_REFUSED = "Failed to seek to cursor"


def reset_deadline_message(limit: float) -> str:
    """Why the reset failed when ``nvidia-smi -r`` ran past ``limit`` seconds, and what to check next."""
    return (f"nvidia-smi -r did not finish within {clock_text(limit)}: a GPU or NVSwitch did not answer the reset; "
            "check `journalctl -k` on the node for Xid/SXid lines and `lspci` for a GPU or NVSwitch that fell off "
            "the bus; one that hangs the reset again needs a reboot of the node (a power cycle if it is gone from "
            f"`lspci`); {AFTER_FAILURE}")


def fabric_counts(states: dict[str, int]) -> str:
    """``8× In Progress``: the GPUs per fabric state, as a waiting fabric-manager step shows them."""
    return " ".join(f"{n}× {key.split('/')[0]}" for key, n in states.items()) or "no GPU answered"


def registration_deadline_message(limit: float, unit: str, states: dict[str, int]) -> str:
    """Why fabric-manager failed when registration ran past ``limit`` seconds, and where to look for the reason."""
    return (f"fabric registration did not finish within {clock_text(limit)} (Fabric Manager {unit}; "
            f"{fabric_counts(states)}): check `{FM_JOURNAL}` on the node for the reason (a driver/FM version "
            f"mismatch, or an NVSwitch that did not come back after the reset); {AFTER_FAILURE}")


def _first_line(text: str, default: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), default)


async def reset(ctx: NodeContext, change: ResetGpus | None = None) -> str:
    """``nvidia-smi -r`` on every GPU and NVSwitch. Returns nvidia-smi's note.

    Raises:
        StepFailed: the reset was refused, failed, or ran past its deadline (the runbook goes straight
            to restore).
    """
    limit = ctx.options.reset_timeout
    ctx.emit(WaitStarted(host=ctx.host, step=ctx.step, wait="reset", state=RESET_STATE, limit=limit, command=True))
    try:
        result = await perform(ctx, change or ResetGpus(), timeout=limit)
    except CommandTimeout:
        raise StepFailed(reset_deadline_message(limit)) from None
    parsed = parse_reset(result.output, result.exit_status).value
    if not parsed.succeeded:
        if parsed.failed:
            detail = "; ".join(f"{bus}: {why}" for bus, why in parsed.failed[:4])
        else:
            detail = parsed.message or _first_line(result.output, f"exit status {result.exit_status}")
        raise StepFailed(f"nvidia-smi -r was refused: {detail}")
    switches = " and NVSwitches" if parsed.nvswitches_reset else ""
    return f"reset {count(len(parsed.reset), 'GPU')}{switches}"


def _fabric_counts(gpus: tuple[GpuState, ...]) -> dict[str, int]:
    return dict(Counter(f"{g.fabric.state}/{g.fabric.status}" for g in gpus))


async def read_fabric(ctx: NodeContext, argv: tuple[str, ...] = FABRIC_QUERY) -> tuple[GpuState, ...]:
    """Every GPU's fabric registration, read now; none when nvidia-smi could not answer (never "done")."""
    result = await ctx.run(argv, purpose=FABRIC_POLL)
    if missing_evidence("gpus", result) is not None:
        return ()
    return gpus_from_query(parse_query_csv(result.output).value)


async def start_fabric_manager(ctx: NodeContext, gpus_expected: int) -> str:
    """``reset-failed`` + ``start`` FM, then wait until it is active and every GPU is Completed/Success.

    Raises:
        StepFailed: FM did not start or stopped, a GPU registered with an error status (``escalate``),
            or registration did not finish in time.
    """
    # reset-failed clears a stale `failed` state that would otherwise block the start; harmless if none.
    for change in start_fm(FM_UNIT):
        await start_unit(ctx, change)
    return await wait_registered(ctx, gpus_expected)


async def start_unit(ctx: NodeContext, change: UnitChange) -> None:
    """One change of FM's start: ``reset-failed`` (its answer not judged: there may be no failed state to clear),
    then ``start`` (given a minute at least: FM's start waits for the NVSwitches).

    Raises:
        StepFailed: FM did not start.
    """
    if change.verb != "start":
        await perform(ctx, change)
        return
    started = await perform(ctx, change, timeout=max(ctx.options.command_timeout, 60.0), purpose=FABRIC_START)
    if not started.ok:
        raise StepFailed(f"Fabric Manager did not start: {_first_line(started.output, 'no message')}")


async def wait_registered(ctx: NodeContext, gpus_expected: int, *, unit: bool = True,
                          reads: Sequence[Read] = ()) -> str:
    """Wait until FM is active and every GPU is Completed/Success (bounded by ``fm_timeout``).

    ``unit`` False: Fabric Manager runs in the GPU Operator's driver pod (no host unit to ask): only the
    GPUs' registration is read, and the words say where FM runs. ``reads``: the program's (runbook/program.py
    ``FM_REGISTERED``): the unit's read where there is one, then the GPUs' (it decides ``unit``).

    Raises:
        StepFailed: FM stopped, a GPU registered with an error status (``escalate``), or registration did
            not finish in time.
    """
    if reads:
        *unit_reads, fabric = reads
        unit_argv: tuple[str, ...] | None = unit_reads[0].argv if unit_reads else None
        fabric_argv = fabric.argv
    else:
        unit_argv, fabric_argv = ("systemctl", "is-active", FM_UNIT) if unit else None, FABRIC_QUERY
    unit = unit_argv is not None
    opts = ctx.options
    began = opts.clock()
    deadline = began + opts.fm_timeout
    while True:
        active = ((await ctx.run(unit_argv, purpose=FABRIC_POLL)).stdout.strip() or "unknown") \
            if unit_argv is not None else "active"
        gpus = await read_fabric(ctx, fabric_argv)
        ctx.emit(FabricProgress(host=ctx.host, step=ctx.step, unit=active, states=_fabric_counts(gpus),
                                elapsed=opts.clock() - began, limit=opts.fm_timeout))
        if active in ("failed", "inactive"):
            raise StepFailed(f"Fabric Manager is {active} again after its start (see journalctl -u {FM_UNIT})")
        bad = [g for g in gpus if g.fabric.state == "Completed" and g.fabric.status != "Success"]
        if bad:
            statuses = sorted({g.fabric.status for g in bad})
            raise StepFailed(
                f"{count(len(bad), 'GPU')} registered with fabric status {', '.join(statuses)}: a reset does not fix "
                "this; escalate to the hardware vendor (not repaired)", escalate=True)
        done = len(gpus) >= max(gpus_expected, 1) and all(g.fabric.completed_ok for g in gpus)
        if active == "active" and done:
            where = "" if unit else " in the driver pod"
            return f"Fabric Manager active{where}; {count(len(gpus), 'GPU')} Completed/Success"
        if opts.clock() >= deadline:
            raise StepFailed(registration_deadline_message(opts.fm_timeout, active, _fabric_counts(gpus)))
        await ctx.pause()


def fabric_faults(events: tuple[KernelEvent, ...]) -> list[KernelEvent]:
    """The kernel events that mean the fabric is still (or again) unhealthy.

    The kernel-log parser keeps only fabric-relevant lines (``NV_ERR_*``, out of sync, Xid, SXid), and
    after a reset any of them is news, so every one counts.
    """
    return list(events)


async def kernel_cursor(ctx: NodeContext, read: Read | None = None) -> str | None:
    """Where the node's kernel journal stands now (T0): the cursor of its last entry, or None (``read``: the
    program's, runbook/program.py ``CURSOR_READ``; by default :data:`KERNEL_CURSOR_ARGV`).

    None when journalctl printed no cursor in its own form (no kernel entry this boot, an unreadable
    journal): verify-fabric then falls back to the node's clock, and says so.
    """
    read = read or Read(KERNEL_CURSOR_ARGV, bookkeeping=True)
    result = await ctx.run(read.argv, privileged=True, bookkeeping=read.bookkeeping)
    cursor = last_cursor(result.stdout) if result.ok else None
    return cursor if cursor is not None and CURSOR.fullmatch(cursor) else None


def _seek_refused(text: str) -> str | None:
    return next((line.strip() for line in text.splitlines() if line.startswith(SEEK_REFUSED)), None)


async def _kernel_read(ctx: NodeContext, t0: str, cursor: str | None,
                       reads: Sequence[Read] = ()) -> tuple[tuple[str, ...], str]:
    """The journalctl that lists the kernel lines logged since the repair began, and how it reads them.

    The journal's own order first: a line logged before T0 while the clock ran ahead is not "new", and
    one logged after T0 while the clock ran behind is. The node's clock (``--since T0``) only when there
    is no cursor, or the journal no longer holds the cursor's entry (rotated away: ``--after-cursor``
    would then step over one entry too many, systemd 252).

    Raises:
        StepFailed: the journal refused to seek to its own cursor (fail closed: its order cannot be read).
    """
    since = f"since {t0} by the node's clock"
    if cursor is None:
        return kernel_since_argv(t0), f"{since} (no journal cursor was read at the start; a clock step could hide a line)"
    check_argv, after_argv = ((reads[0].argv, reads[1].argv) if len(reads) == 2 else
                              (kernel_cursor_check_argv(cursor), kernel_after_argv(cursor)))
    check = await ctx.run(check_argv, privileged=True)
    refused = _seek_refused(check.output)
    if refused is not None:
        raise StepFailed(f"cannot verify that the kernel logged no new fabric error: journalctl answered "
                         f"'{refused}' to the cursor it gave at {t0}")
    if check.ok and last_cursor(check.stdout) == cursor:
        return after_argv, f"after the journal cursor read at {t0}"
    why = missing_evidence("kernel", check) if check.exit_status != 1 or check.output.strip() else None
    if why is not None:
        raise StepFailed(f"cannot verify that the kernel logged no new fabric error: {why.detail}")
    return kernel_since_argv(t0), (f"{since} (the journal no longer holds the entry of the cursor read then; "
                                   "a clock step could hide a line)")


RING_ARGV = ("dmesg",)
RING_WORDS = "in the kernel ring buffer (dmesg)"
# The node's clock reads whole seconds: a ring line logged within this of T0 counts as new (fail closed).
RING_SLACK_S = 1.0


def _node_clock(text: str) -> dt.datetime | None:
    """``YYYY-MM-DD HH:MM:SS`` (the node's wall clock, as T0 is kept), or None."""
    try:
        return dt.datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None


def ring_faults_since(ring: str, t0: str, clock: str, uptime: float | None) -> list[KernelEvent] | None:
    """The fabric events of ``dmesg`` output logged at or after ``t0``, or None when they cannot be dated.

    Each line's ``[seconds]`` is put on the node's wall clock by its boot (``clock`` less ``uptime``, read
    uptime first: a slow read then dates lines later, never earlier). A line the kernel logged within
    :data:`RING_SLACK_S` before T0 counts too (the clock has whole seconds); an undated line counts. Pure.
    """
    start, now = _node_clock(t0), _node_clock(clock)
    if start is None or now is None or uptime is None:
        return None
    booted = now - dt.timedelta(seconds=uptime)
    fresh = []
    for event in parse_kernel_log(filter_ring(ring)).value:
        try:
            at = booted + dt.timedelta(seconds=float(event.timestamp or ""))
        except ValueError:
            fresh.append(event)
            continue
        if at >= start - dt.timedelta(seconds=RING_SLACK_S):
            fresh.append(event)
    return fresh


async def _ring_read(ctx: NodeContext, t0: str) -> tuple[list[KernelEvent] | None, str]:
    """The ring buffer's fabric events since T0, or None and why they could not be read."""
    boot = await ctx.run(BOOT_ARGV)
    clock = await ctx.run(DATE_ARGV, bookkeeping=True, purpose=CLOCK)
    ring = await ctx.run(RING_ARGV, privileged=True)
    why = missing_evidence("ring", ring)
    if why is not None:
        return None, why.detail
    _boot_id, uptime = parse_boot(boot)
    fresh = ring_faults_since(ring.output, t0, clock.stdout if clock.ok else "", uptime)
    if fresh is None:
        return None, "the node's clock or uptime could not be read, so the ring buffer's lines cannot be dated"
    return fresh, ""


async def verify_fabric(ctx: NodeContext, t0: str, cursor: str | None = None, reads: Sequence[Read] = ()) -> str:
    """No new fabric, Xid or SXid line in the kernel journal after ``cursor`` (read at T0), else since T0.

    Where the journal does not reach back to T0 (no cursor was read then, or its entry was rotated or
    vacuumed away meanwhile) or cannot be read, the kernel ring buffer is read as well, its lines dated on
    the node's clock by its boot: a fresh line the journal lost is still seen. Only a journal that holds
    T0's entry is read alone. ``reads``: the program's (runbook/program.py ``KERNEL_SINCE_T0``): the seek to
    ``cursor``, then the read after it.

    Raises:
        StepFailed: naming the first new line, or neither the journal nor the ring buffer could be read.
    """
    argv, how = await _kernel_read(ctx, t0, cursor, reads)
    result = await ctx.run(argv, privileged=True)
    why = missing_evidence("kernel", result)
    faults = fabric_faults(parse_kernel_log(result.output).value) if why is None else []
    if argv == kernel_since_argv(t0) or why is not None:
        ring, ring_why = await _ring_read(ctx, t0)
        if ring is None:
            said = f"{why.detail}; {ring_why}" if why is not None else \
                f"the journal does not reach back to T0 and {ring_why}"
            raise StepFailed(f"cannot verify that the kernel logged no new fabric error: {said}")
        faults += [e for e in ring if not any(_same_line(e, j) for j in faults)]
        how = (f"{how}, and {RING_WORDS} as well: the journal does not reach back to T0" if why is None
               else f"{RING_WORDS} since {t0} by the node's clock ({why.detail})")
    if faults:
        raise StepFailed(f"{len(faults)} new fabric/Xid kernel lines {how}: {faults[0].line.strip()[:200]}")
    return f"no new fabric or Xid kernel lines {how}"


def _same_line(ring: KernelEvent, journal: KernelEvent) -> bool:
    """A ring buffer line the journal read too (the same message): counted once."""
    return message(ring.line).strip() == message(journal.line.split("kernel: ", 1)[-1]).strip()


__all__ = ["wait_registered", "FABRIC_QUERY", "RESET_STATE", "fabric_counts", "fabric_faults", "read_fabric", "registration_deadline_message",
           "kernel_cursor", "reset", "reset_deadline_message", "start_fabric_manager", "start_unit", "verify_fabric"]

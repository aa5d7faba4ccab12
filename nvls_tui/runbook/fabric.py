"""``reset``, ``fabric-manager`` and ``verify-fabric``: the destructive middle of the repair.

The reset runs only after verify-no-holders proved the devices free; Fabric Manager starts only
after a successful reset (an FM restart without a reset leaves NVLS broken, domain.md). Registration
is watched with a bounded wait in which ``In Progress`` is progress, and ``Completed`` with a status
other than ``Success`` is a fault a reset does not fix: it is reported for escalation. Both waits
report their deadline (a ``WaitStarted`` before the reset, each poll's ``FabricProgress``), and a wait
that runs past it fails with what to look at next.
"""

from __future__ import annotations

from collections import Counter

from nvls_tui.backends.base import CommandTimeout
from nvls_tui.model import GpuState, KernelEvent
from nvls_tui.parsers.kernel_log import parse_kernel_log
from nvls_tui.parsers.nvidia_smi_csv import gpus_from_query, parse_query_csv
from nvls_tui.parsers.nvidia_smi_reset import parse_reset
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.probe import QUERY_FIELDS
from nvls_tui.runbook.context import NodeContext, StepFailed
from nvls_tui.runbook.events import FabricProgress, WaitStarted
from nvls_tui.runbook.steps import AFTER_FAILURE, FM_UNIT, clock_text, kernel_since_argv, reset_argv, unit_argv
from nvls_tui.words import count

FABRIC_QUERY = ("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv")
# What the reset waits on, as a waiting step says it (``nvidia-smi -r`` takes every GPU and NVSwitch).
RESET_STATE = "resetting every GPU and NVSwitch"
FM_JOURNAL = f"journalctl -u {FM_UNIT.removesuffix('.service')}"


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


async def reset(ctx: NodeContext) -> str:
    """``nvidia-smi -r`` on every GPU and NVSwitch. Returns nvidia-smi's note.

    Raises:
        StepFailed: the reset was refused, failed, or ran past its deadline (the runbook goes straight
            to restore).
    """
    limit = ctx.options.reset_timeout
    ctx.emit(WaitStarted(host=ctx.host, step=ctx.step, wait="reset", state=RESET_STATE, limit=limit, command=True))
    try:
        result = await ctx.run(reset_argv(), privileged=True, timeout=limit)
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


async def read_fabric(ctx: NodeContext) -> tuple[GpuState, ...]:
    """Every GPU's fabric registration, read now; none when nvidia-smi could not answer (never "done")."""
    result = await ctx.run(FABRIC_QUERY)
    if missing_evidence("gpus", result) is not None:
        return ()
    return gpus_from_query(parse_query_csv(result.output).value)


async def start_fabric_manager(ctx: NodeContext, gpus_expected: int) -> str:
    """``reset-failed`` + ``start`` FM, then wait until it is active and every GPU is Completed/Success.

    Raises:
        StepFailed: FM did not start or stopped, a GPU registered with an error status (``escalate``),
            or registration did not finish in time.
    """
    opts = ctx.options
    # reset-failed clears a stale `failed` state that would otherwise block the start; harmless if none.
    await ctx.run(unit_argv("reset-failed", FM_UNIT), privileged=True)
    started = await ctx.run(unit_argv("start", FM_UNIT), privileged=True, timeout=max(opts.command_timeout, 60.0))
    if not started.ok:
        raise StepFailed(f"Fabric Manager did not start: {_first_line(started.output, 'no message')}")
    began = opts.clock()
    deadline = began + opts.fm_timeout
    while True:
        active = (await ctx.run(("systemctl", "is-active", FM_UNIT))).stdout.strip() or "unknown"
        gpus = await read_fabric(ctx)
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
            return f"Fabric Manager active; {count(len(gpus), 'GPU')} Completed/Success"
        if opts.clock() >= deadline:
            raise StepFailed(registration_deadline_message(opts.fm_timeout, active, _fabric_counts(gpus)))
        await ctx.pause()


def fabric_faults(events: tuple[KernelEvent, ...]) -> list[KernelEvent]:
    """The kernel events that mean the fabric is still (or again) unhealthy.

    The kernel-log parser keeps only fabric-relevant lines (``NV_ERR_*``, out of sync, Xid, SXid), and
    after a reset any of them is news, so every one counts.
    """
    return list(events)


async def verify_fabric(ctx: NodeContext, t0: str) -> str:
    """No new fabric, Xid or SXid line in ``journalctl -k --since T0``.

    Raises:
        StepFailed: naming the first new line.
    """
    result = await ctx.run(kernel_since_argv(t0), privileged=True)
    why = missing_evidence("kernel", result)
    if why is not None:
        raise StepFailed(f"cannot verify that the kernel logged no new fabric error: {why.detail}")
    faults = fabric_faults(parse_kernel_log(result.output).value)
    if faults:
        raise StepFailed(f"{len(faults)} new fabric/Xid kernel lines since {t0}: {faults[0].line.strip()[:200]}")
    return f"no new fabric or Xid kernel lines since {t0}"


__all__ = ["FABRIC_QUERY", "RESET_STATE", "fabric_counts", "fabric_faults", "read_fabric", "registration_deadline_message",
           "reset", "reset_deadline_message", "start_fabric_manager", "verify_fabric"]

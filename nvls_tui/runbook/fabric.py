"""``reset``, ``fabric-manager`` and ``verify-fabric``: the destructive middle of the repair.

The reset runs only after verify-no-holders proved the devices free; Fabric Manager starts only
after a successful reset (an FM restart without a reset leaves NVLS broken, domain.md). Registration
is watched with a bounded wait in which ``In Progress`` is progress, and ``Completed`` with a status
other than ``Success`` is a fault a reset does not fix: it is reported for escalation.
"""

from __future__ import annotations

from collections import Counter

from nvls_tui.model import GpuState, KernelEvent
from nvls_tui.parsers.kernel_log import parse_kernel_log
from nvls_tui.parsers.nvidia_smi_csv import gpus_from_query, parse_query_csv
from nvls_tui.parsers.nvidia_smi_reset import parse_reset
from nvls_tui.poll.evidence import missing_evidence
from nvls_tui.poll.probe import QUERY_FIELDS
from nvls_tui.runbook.context import NodeContext, StepFailed
from nvls_tui.runbook.events import FabricProgress
from nvls_tui.runbook.steps import FM_UNIT, kernel_since_argv, reset_argv, unit_argv
from nvls_tui.words import count

FABRIC_QUERY = ("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv")


def _first_line(text: str, default: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), default)


async def reset(ctx: NodeContext) -> str:
    """``nvidia-smi -r`` on every GPU and NVSwitch. Returns nvidia-smi's note.

    Raises:
        StepFailed: the reset was refused or failed (the runbook goes straight to restore).
    """
    result = await ctx.run(reset_argv(), privileged=True, timeout=ctx.options.reset_timeout)
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
    deadline = opts.clock() + opts.fm_timeout
    while True:
        active = (await ctx.run(("systemctl", "is-active", FM_UNIT))).stdout.strip() or "unknown"
        gpus = await read_fabric(ctx)
        ctx.emit(FabricProgress(host=ctx.host, step=ctx.step, unit=active, states=_fabric_counts(gpus)))
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
            states = ", ".join(f"{k}: {v}" for k, v in _fabric_counts(gpus).items()) or "no GPU answered"
            raise StepFailed(f"fabric registration did not finish within {opts.fm_timeout:.0f} s "
                             f"(Fabric Manager {active}; {states})")
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


__all__ = ["FABRIC_QUERY", "fabric_faults", "read_fabric", "reset", "start_fabric_manager", "verify_fabric"]

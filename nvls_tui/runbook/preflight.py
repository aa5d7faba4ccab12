"""``preflight``: decide from a fresh read whether this playbook may touch the node at all.

It refuses an unsupported platform, a Fabric Manager whose version differs from the driver's, a
masked FM unit, and a node that still holds the record of an interrupted repair; it reports a fabric
status a reset cannot fix for escalation; it records everything the restore will need before quiesce
changes a thing. The per-node lock it takes is ``runbook/lock.py``'s.
"""

from __future__ import annotations

import dataclasses

from nvls_tui.diagnosis import GUARDED_SECTIONS, current_kernel_events, fm_container, gpu_lost_findings
from nvls_tui.diagnosis.node import host_side
from nvls_tui.diagnosis.restore_hint import restore_hint
from nvls_tui.diagnosis.xids import resets_fix, ticket_xids
from nvls_tui.model import NodeState
from nvls_tui.runbook.changes import WriteFile, record_write
from nvls_tui.runbook.context import NodeContext, Refused, StepFailed
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.hold_apt import apt_run_refusal
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.runbook.steps import FM_UNIT
from nvls_tui.words import count, verb

_PLATFORM_WHY = {
    "gb200-nvl": "GB200/GB300 NVL racks have no host Fabric Manager (the rack manages the fabric and needs IMEX)",
    "hgx-b200": "B200/B300 boards run NVLSM and reset after Fabric Manager starts",
    "no-nvswitch": "the node has no NVSwitch, so there is no NVLink fabric to repair",
    "unknown": "the board could not be identified as an H100/H200 NVSwitch board",
}


def blind_spot(state: NodeState, ignore: frozenset[str] = frozenset()) -> str | None:
    """Why the guards of a repair cannot see enough of ``state`` to act (None when they can).

    A guard that cannot see refuses: without the holders table no reset; without the units no
    faithful restore; without the kernel log no verdict on the fabric; and so on (GUARDED_SECTIONS).
    """
    for missing in state.missing:
        if missing.section in GUARDED_SECTIONS and missing.section not in ignore:
            return f"{missing.detail} ({missing.reason}); a guard that cannot see refuses, so nothing was changed"
    return None


def refusal(state: NodeState, *, fm_pod: bool = False) -> str | None:
    """Why the H100/H200 playbook must not run on ``state`` (None when it may).

    ``fm_pod``: Fabric Manager runs in the GPU Operator's driver pod and the cluster is configured, so the
    repair restarts that pod through the API (runbook/kube_repair.py) instead of a host unit: no host unit
    or host FM version is needed then (the driver container carries its own FM). Whether the cluster lists
    that pod is the caller's to check, under the lock.
    """
    if not state.reachable:
        return f"the node cannot be read: {state.error or 'unreachable'}"
    if (gpus := state.missing_section("gpus")) is not None:  # without them the board itself is unknown
        return f"{gpus.detail} ({gpus.reason}); a guard that cannot see refuses, so nothing was changed"
    if (host := host_side(state)) is not None:
        # Before the platform's words: this is why no reset loop is offered (FABRIC_HOST_SIDE).
        return f"{host}; nothing was changed"
    if not state.platform.has_host_fm:
        why = _PLATFORM_WHY.get(str(state.platform), f"platform {state.platform} is not supported")
        return f"unsupported platform ({state.platform}): {why}; this H100/H200 playbook does not apply"
    if fm_container.in_container(state) and not fm_pod:
        # Before the blind spots: the host's missing nv-fabricmanager is where FM lives, not a blind guard.
        return fm_container.refusal(state)
    if (unplaced := fm_container.unknown_place(state)) is not None:
        return f"where Fabric Manager runs could not be told: {unplaced}; a guard that cannot see refuses"
    # FM's version on the host is no guard where FM runs in the driver pod: its container carries its own FM.
    pod_fm = fm_pod and fm_container.in_container(state)
    blind = blind_spot(state, frozenset({"fm_version"}) if pod_fm else frozenset())
    if blind:
        return blind
    if (lost := lost_gpu(state)) is not None:
        return lost
    if pod_fm:
        return apt_run_refusal(state)
    fm = state.service(FM_UNIT)
    if fm is None or not fm.exists:
        return "there is no nvidia-fabricmanager unit on this node"
    if fm.load == "masked":
        return "nvidia-fabricmanager is masked: unmask it (`systemctl unmask nvidia-fabricmanager`) first"
    if not state.driver or not state.fm_version:
        return "the driver or Fabric Manager version could not be read, so they cannot be compared"
    if state.fm_version != state.driver:
        return (f"Fabric Manager {state.fm_version} differs from driver {state.driver}: FM will not start until "
                "they match (install the matching nvidia-fabricmanager package)")
    return apt_run_refusal(state)  # an unattended upgrade under way would restart FM mid-repair (FM_RESTARTER)


def lost_gpu(state: NodeState) -> str | None:
    """Why no reset may be tried on a node with a GPU that fell off the bus (GPU_LOST), or None.

    ``nvidia-smi -r`` needs every GPU to answer on PCIe; one that fell off never answers, so the reset
    fails half-way after every holder was stopped. The reboot (or the hardware ticket) is the move.
    """
    lost = gpu_lost_findings(state)
    if not lost:
        return None
    return "; ".join(f.message for f in lost) + "; nothing was changed"


def record_refusal(state: NodeState) -> str | None:
    """Why a node holding a repair record must not be repaired again (None without a record)."""
    rec = state.repair_record
    if not rec:
        return None
    return (f"the node holds the record of a repair that is running or was interrupted (started "
            f"{rec.get('started', '?')} by {rec.get('operator', '?')}): if none is running, put it back first: "
            f"{restore_hint(state.host)}")


def escalation(state: NodeState) -> str | None:
    """A fault a reset does not fix, or None: a fabric Completed with an error status, or an Xid whose
    NVIDIA action is not a GPU reset (CONTACT_SUPPORT, CHECK_MECHANICALS, a reboot, a driver update: the Xid
    catalogue's immediate action, or the recovery action the driver's line orders)."""
    bad = [g for g in state.gpus
           if g.fabric.state == "Completed" and g.fabric.status not in ("Success", "N/A", "")]
    if bad:
        statuses = ", ".join(sorted({g.fabric.status for g in bad}))
        return (f"{count(len(bad), 'GPU')} {verb(len(bad), 'reports')} fabric Completed with status {statuses}: a GPU reset does not fix this "
                "(it survives reboots and GPU swaps); escalate to the hardware vendor")
    tickets = ticket_xids(current_kernel_events(state))
    if not tickets:
        return None
    said = []
    for event, reading in tickets:
        words = f"Xid {event.xid}{f' on {event.pci}' if event.pci else ''} ({reading.action}: {reading.move})"
        if words not in said:
            said.append(words)
    return (f"the kernel logged {', '.join(said[:4])}{' and more' if len(said) > 4 else ''}: NVIDIA's move for "
            f"{'it' if len(said) == 1 else 'them'} is not a GPU reset, so this repair will not fix "
            f"{'it' if len(said) == 1 else 'them'}; escalate")


def fabric_looks_healthy(state: NodeState) -> bool:
    """FM active, every GPU Completed/Success and no current fabric fault in the kernel log.

    Such a node may only have had a transient failure (a CUDA 802 during a short FM stall), so the
    runbook re-runs the smoke test before doing anything destructive.
    """
    fm = state.service(FM_UNIT)
    if fm is None or fm.active != "active" or not state.gpus:
        return False
    if not all(g.fabric.completed_ok for g in state.gpus):
        return False
    for event in current_kernel_events(state):
        if event.code in ("SXID",) or "FABRIC" in event.code or "OUT_OF_SYNC" in event.code:
            return False
        if resets_fix(event):  # an Xid whose NVIDIA action is the reset (RESET_GPU, DRAIN_AND_RESET, ...)
            return False
    return True


async def check(ctx: NodeContext, state: NodeState, *, fm_pod: bool = False) -> None:
    """The checks that need no change to the node (``fm_pod``: see :func:`refusal`).

    Raises:
        Refused: the playbook does not apply or the node is not in a state to start.
        StepFailed: a fault to escalate (``escalate`` set); nothing was changed.
    """
    reason = refusal(state, fm_pod=fm_pod)
    if reason:
        raise Refused(reason)
    reason = escalation(state)
    if reason:
        raise StepFailed(reason, escalate=True)


async def write_record(ctx: NodeContext, record: RepairRecord, change: WriteFile | None = None) -> None:
    """Write the crash-safe record atomically (tee to a temporary file, then rename); ``change``: the write the
    run's program names (runbook/program.py), ``record`` its content.

    Raises:
        StepFailed: the record could not be written (then nothing is changed).
    """
    moved = await perform(ctx, dataclasses.replace(change or record_write(), content=record.to_json()))
    if not moved.ok:
        raise StepFailed("the crash-safe record could not be written to the node, so nothing was changed")


__all__ = ["blind_spot", "check", "escalation", "fabric_looks_healthy", "lost_gpu", "record_refusal", "refusal", "write_record"]

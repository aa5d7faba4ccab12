"""Plan -> apply: the node a repair meets must be the node the operator approved.

A dry run records its basis (who held the devices, which units ran, the versions, the platform).
Right before a repair changes anything, preflight compares the node it finds with that basis and
refuses when it differs in what matters: a workload that appeared on a GPU (a job that started
after the plan was read), a unit that came up or went down, another driver or Fabric Manager, a
repair record, a MIG mode change that became pending (the reset would commit it unshown). Holders that
went away are not drift: there is less to stop. Nor is a new PID of a management kind (each run of a
watch loop's or a snapshot timer's nvidia-smi is a new process; a pod kubelet recreated): the plan
already stops those, whatever their PIDs. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvls_tui.model import NodeState
from nvls_tui.runbook.steps import SNAPSHOT_SERVICE, is_running, unit_states

# Oneshot units their timer starts every few minutes: activating or inactive by the second, and
# stopped by quiesce either way, so a flip between plan and apply changes nothing the plan does.
FLAPPING_UNITS = frozenset({SNAPSHOT_SERVICE})


def steady_units(state: NodeState) -> dict[str, str]:
    """The units' states a plan and a restore answer for: every unit but the flapping oneshots (their timer runs
    them; the restore starts the timer, never the oneshot)."""
    return {unit: active for unit, active in unit_states(state).items() if unit not in FLAPPING_UNITS}


def plan_basis(state: NodeState) -> dict[str, Any]:
    """What a plan was made from, as plain JSON (``repair --dry-run --json`` carries it as ``basis``)."""
    return {
        "platform": str(state.platform),
        "driver": state.driver,
        "fm_version": state.fm_version,
        "gpus": len(state.gpus),
        "nvswitches": len(state.nvswitches),
        "units": unit_states(state),
        "holders": [{"pid": h.pid, "start_time": h.start_time, "kind": str(h.kind), "command": h.command}
                    for h in state.holders],
        "record": bool(state.repair_record),
        # Each GPU's MIG mode [current, pending] (null where nvidia-smi printed N/A): what the reset commits.
        "mig": {str(g.index): [g.mig_current, g.mig_pending] for g in state.gpus},
    }


def _same_process(a: Mapping[str, Any], pid: int, start: str | None) -> bool:
    return a.get("pid") == pid and " ".join(str(a.get("start_time") or "").split()) == " ".join((start or "").split())


def drift(basis: Mapping[str, Any], state: NodeState) -> list[str]:
    """How ``state`` differs from the approved ``basis`` in what matters, one sentence each ([] when not)."""
    changes: list[str] = []
    for key, words in (("platform", "the platform"), ("driver", "the driver"), ("fm_version", "Fabric Manager")):
        now = str(state.platform) if key == "platform" else getattr(state, key)
        if basis.get(key) != now:
            changes.append(f"{words} was {basis.get(key) or 'unknown'}, now {now or 'unknown'}")
    if basis.get("gpus") != len(state.gpus):
        changes.append(f"{basis.get('gpus')} GPUs were planned for, {len(state.gpus)} answer now")
    approved = basis.get("holders") or []
    for h in state.holders:
        if h.kind.is_management:
            continue  # stopped by the plan's own quiesce, whatever its PID
        if not any(_same_process(a, h.pid, h.start_time) for a in approved):
            changes.append(f"a process appeared on the GPUs: {h.pid} ({h.kind}, {h.user}: {h.command[:60]})")
    before = basis.get("units") or {}
    for unit, active in steady_units(state).items():
        was = before.get(unit)
        if was is not None and is_running(was) != is_running(active):
            changes.append(f"{unit} was {was}, now {active}")
    if state.repair_record and not basis.get("record"):
        changes.append("the node now holds the record of another repair")
    changes += _mig_drift(basis.get("mig"), state)
    return changes


def _mig_drift(planned: Any, state: NodeState) -> list[str]:
    """MIG mode changes the reset would commit that the plan did not show, one sentence per GPU.

    Drift: a change pending now that the plan did not show as pending (or showed as another change), and a
    mode the plan read that cannot be read now (unknown is never "no change"). Not drift: a change the plan
    showed, one that went away, a mode unread then and now (the plan said it was unknown). A basis without
    MIG modes (saved before plans recorded them) showed no pending change.
    """
    modes = planned if isinstance(planned, Mapping) else {}
    changes: list[str] = []
    for g in state.gpus:
        shown = modes.get(str(g.index))
        was = (shown[0], shown[1]) if isinstance(shown, list | tuple) and len(shown) == 2 else (None, None)
        if g.mig_change_pending and (g.mig_current, g.mig_pending) != was:
            changes.append(f"GPU {g.index} has a pending MIG mode change ({g.mig_current} -> {g.mig_pending}) "
                           "that the plan did not show: the reset would commit it")
        elif (g.mig_current is None or g.mig_pending is None) and None not in was:
            changes.append(f"GPU {g.index}'s MIG mode was read for the plan ({was[0]}, pending {was[1]}) but "
                           "cannot be read now: whether the reset commits a MIG mode change is unknown")
    return changes


__all__ = ["drift", "plan_basis"]

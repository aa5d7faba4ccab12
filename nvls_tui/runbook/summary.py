"""A node's state boiled down to what an incident report compares before and after a repair."""

from __future__ import annotations

from typing import Any

from nvls_tui.diagnosis import current_kernel_events, diagnose
from nvls_tui.model import NodeState
from nvls_tui.runbook.steps import unit_states

# A node that logs an Xid every second must not blow up every audit record that carries its summary:
# the newest lines are kept (the report counts what it has and says how many were left out).
KERNEL_LINES_KEPT = 64


def summarize(state: NodeState) -> dict[str, Any]:
    """JSON-ready summary: verdict, findings, units, fabric per GPU, holders, kernel lines, last smoke
    (and ``simulated``, only for a simulated node).

    ``kernel_events`` (the codes, every line) is what older reports read; ``kernel_lines`` adds each
    line's time on the node's clock and whether it still counts, so a report can leave out the lines
    older than the repair.
    """
    # A simulated node's clock is the simulator's (its scenario's date), not the bastion's: the report must
    # know, or it reads the gap as a clock fault.
    simulated = {"simulated": True} if state.simulated else {}
    if not state.reachable:
        return {"reachable": False, "error": state.error, "verdict": "unreachable", **simulated}
    diagnosis = diagnose(state)
    units = [s for s in state.services if s.exists]
    return {
        "reachable": True,
        "platform": str(state.platform),
        "driver": state.driver,
        "fm_version": state.fm_version,
        "verdict": str(diagnosis.verdict),
        "findings": [f.code for f in diagnosis.findings],
        "finding_details": [{"code": f.code, "severity": str(f.severity), "message": f.message}
                            for f in diagnosis.findings],
        "units": unit_states(state),
        "unit_results": {_unit_name(s.name): s.result for s in units if s.result},
        "unit_since": {_unit_name(s.name): s.since for s in units if s.since},
        "unit_signals": {_unit_name(s.name): s.killed_by for s in units if s.killed_by},
        "fabric": [{"index": g.index, "state": g.fabric.state, "status": g.fabric.status,
                    "persistence_mode": g.persistence_mode} for g in state.gpus],
        "holders": [{"pid": h.pid, "kind": str(h.kind), "command": h.command, "user": h.user} for h in state.holders],
        "kernel_events": sorted({e.code for e in state.kernel_events}),
        **_kernel_lines(state),
        "smoke": None if state.smoke is None else {"avg_busbw": state.smoke.avg_busbw, "passed": state.smoke.passed,
                                                   "at": state.smoke.at},
        "repair_record": bool(state.repair_record),
        **simulated,
    }


def _unit_name(name: str) -> str:
    """The unit's full name, as ``unit_states`` keys it (``.service`` may be omitted on a ServiceState)."""
    return name if "." in name else f"{name}.service"


def _kernel_lines(state: NodeState) -> dict[str, Any]:
    """The kernel lines that matter, oldest first: code, Xid, the time as the node logged it, and
    ``current`` (False once a later passing smoke test made the line history, as the diagnosis reads it)."""
    counting = set(current_kernel_events(state))
    kept = state.kernel_events[-KERNEL_LINES_KEPT:]
    return {
        "kernel_lines": [{"code": e.code, "xid": e.xid, "timestamp": e.timestamp, "current": e in counting}
                         for e in kept],
        "kernel_lines_left_out": len(state.kernel_events) - len(kept),
    }


__all__ = ["KERNEL_LINES_KEPT", "summarize"]

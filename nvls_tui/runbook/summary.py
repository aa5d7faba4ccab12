"""A node's state boiled down to what an incident report compares before and after a repair."""

from __future__ import annotations

from typing import Any

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.runbook.steps import unit_states


def summarize(state: NodeState) -> dict[str, Any]:
    """JSON-ready summary: verdict, findings, units, fabric per GPU, holders, kernel codes, last smoke."""
    if not state.reachable:
        return {"reachable": False, "error": state.error, "verdict": "unreachable"}
    diagnosis = diagnose(state)
    return {
        "reachable": True,
        "platform": str(state.platform),
        "driver": state.driver,
        "fm_version": state.fm_version,
        "verdict": str(diagnosis.verdict),
        "findings": [f.code for f in diagnosis.findings],
        "units": unit_states(state),
        "fabric": [{"index": g.index, "state": g.fabric.state, "status": g.fabric.status,
                    "persistence_mode": g.persistence_mode} for g in state.gpus],
        "holders": [{"pid": h.pid, "kind": str(h.kind), "command": h.command, "user": h.user} for h in state.holders],
        "kernel_events": sorted({e.code for e in state.kernel_events}),
        "smoke": None if state.smoke is None else {"avg_busbw": state.smoke.avg_busbw, "passed": state.smoke.passed,
                                                   "at": state.smoke.at},
        "repair_record": bool(state.repair_record),
    }


__all__ = ["summarize"]

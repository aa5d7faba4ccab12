"""The kernel's lines in a node summary: which were logged since the repair began, and how they read."""

from __future__ import annotations

from typing import Any

from nvls_tui import catalogues
from nvls_tui.report.clock import NodeClock
from nvls_tui.report.text import prose

# The findings that rest on a kernel line, and that line's code: a line logged before the repair is
# no proof the repair left the fault.
KERNEL_FINDINGS = {"FABRIC_MANAGER_NOT_PRESENT": "NV_ERR_FABRIC_MANAGER_NOT_PRESENT",
                   "FABRIC_OUT_OF_SYNC": "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"}


def _kernel_label(line: dict[str, Any]) -> str:
    code = str(line.get("code"))
    if code == "XID" and isinstance(line.get("xid"), int):
        # As NVIDIA's Xid catalogue names it: the mnemonic and the immediate action (the record keeps no line,
        # so an action the line itself ordered is the diagnosis's to say, not the report's).
        entry = catalogues.xid(line["xid"])
        if entry is None:
            return f"Xid {line['xid']} (not in NVIDIA's Xid catalogue)"
        return f"Xid {entry.code} ({entry.mnemonic}, NVIDIA: {entry.immediate or 'no immediate action given'})"
    if code in ("XID", "SXID") and line.get("xid") is not None:
        return f"{'Xid' if code == 'XID' else 'SXid'} {line.get('xid')}"
    return code


def kernel_listing(lines: list[dict[str, Any]], clock: NodeClock) -> list[str]:
    """``NV_ERR_X ×3, the last at 15:44:58 UTC`` per code (Markdown), in the order first logged."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_label.setdefault(_kernel_label(line), []).append(line)
    out = []
    for label, same in by_label.items():
        name = prose(label)
        stamp = same[-1].get("timestamp")
        if len(same) == 1:
            out.append(f"{name}, at {clock.show(stamp)}" if stamp else name)
        else:
            out.append(f"{name} ×{len(same)}" + (f", the last at {clock.show(stamp)}" if stamp else ""))
    return out


def kernel_lines(summary: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The summary's kernel lines with their times (None: an older log, which has the codes only)."""
    lines = summary.get("kernel_lines")
    return [line for line in lines if isinstance(line, dict)] if isinstance(lines, list) else None


def since_repair(lines: list[dict[str, Any]], clock: NodeClock) -> list[dict[str, Any]]:
    """The lines logged after the repair began (where a line's time cannot say: those that still count)."""
    def new(line: dict[str, Any]) -> bool:
        older = clock.before_start(line.get("timestamp"))
        return bool(line.get("current")) if older is None else not older

    return [line for line in lines if new(line)]


"""The kernel's lines in a node summary: which were logged since the repair began, and how they read."""

from __future__ import annotations

from collections.abc import Sequence

from nvls_tui import catalogues
from nvls_tui.report.clock import NodeClock
from nvls_tui.report.text import prose
from nvls_tui.runbook.observed import KernelLine, ObservedNode

# The findings that rest on a kernel line, and that line's code: a line logged before the repair is
# no proof the repair left the fault.
KERNEL_FINDINGS = {"FABRIC_MANAGER_NOT_PRESENT": "NV_ERR_FABRIC_MANAGER_NOT_PRESENT",
                   "FABRIC_OUT_OF_SYNC": "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"}


def _kernel_label(line: KernelLine) -> str:
    code = str(line.code)
    if code == "XID" and line.xid is not None:
        # As NVIDIA's Xid catalogue names it: the mnemonic and the immediate action (the record keeps no line,
        # so an action the line itself ordered is the diagnosis's to say, not the report's).
        entry = catalogues.xid(line.xid)
        if entry is None:
            return f"Xid {line.xid} (not in NVIDIA's Xid catalogue)"
        return f"Xid {entry.code} ({entry.mnemonic}, NVIDIA: {entry.immediate or 'no immediate action given'})"
    if code in ("XID", "SXID") and line.xid is not None:
        return f"{'Xid' if code == 'XID' else 'SXid'} {line.xid}"
    return code


def kernel_listing(lines: Sequence[KernelLine], clock: NodeClock) -> list[str]:
    """``NV_ERR_X ×3, the last at 15:44:58 UTC`` per code (Markdown), in the order first logged."""
    by_label: dict[str, list[KernelLine]] = {}
    for line in lines:
        by_label.setdefault(_kernel_label(line), []).append(line)
    out = []
    for label, same in by_label.items():
        name = prose(label)
        stamp = same[-1].timestamp
        if len(same) == 1:
            out.append(f"{name}, at {clock.show(stamp)}" if stamp else name)
        else:
            out.append(f"{name} ×{len(same)}" + (f", the last at {clock.show(stamp)}" if stamp else ""))
    return out


def kernel_lines(summary: ObservedNode) -> list[KernelLine] | None:
    """The summary's kernel lines with their times (None: an older log, which has the codes only)."""
    return list(summary.kernel_lines) if summary.kernel_lines is not None else None


def since_repair(lines: Sequence[KernelLine], clock: NodeClock) -> list[KernelLine]:
    """The lines logged after the repair began (where a line's time cannot say: those that still count)."""
    def new(line: KernelLine) -> bool:
        older = clock.before_start(line.timestamp)
        return bool(line.current) if older is None else not older

    return [line for line in lines if new(line)]


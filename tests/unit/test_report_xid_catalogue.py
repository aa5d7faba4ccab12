"""The incident report names each Xid as NVIDIA's catalogue does (issue 35, item 3): its mnemonic and NVIDIA's
immediate action beside the number, so the report says what NVIDIA asks for, not only "Xid 95"."""

from __future__ import annotations

from nvls_tui.report.clock import NodeClock
from nvls_tui.report.kernel import kernel_listing
from nvls_tui.runbook.observed import KernelLine


def test_the_report_names_an_xid_s_mnemonic_and_nvidia_s_action():
    lines = [KernelLine(code="XID", xid=95), KernelLine(code="XID", xid=95), KernelLine(code="XID", xid=999)]
    listing = kernel_listing(lines, NodeClock())
    assert listing[0].startswith("Xid 95 (ROBUST\\_CHANNEL\\_UNCONTAINED\\_ERROR, NVIDIA: RESET\\_GPU) ×2")
    assert listing[1] == "Xid 999 (not in NVIDIA's Xid catalogue)"

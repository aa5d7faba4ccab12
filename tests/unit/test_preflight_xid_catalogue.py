"""The repair's preflight reads Xids through NVIDIA's catalogue (issue 35, item 3), fail-closed.

An Xid whose NVIDIA action is a hardware ticket (CONTACT_SUPPORT, CHECK_MECHANICALS) or a reboot is no fault a
GPU reset fixes: the plan and the preflight escalate it, saying so, and change nothing. An Xid whose action is
the reset (RESET_GPU, DRAIN_AND_RESET) means the node is not healthy: the repair resets it instead of skipping it
after a passing smoke test. An application's Xid (RESTART_APP) does neither.
"""

from __future__ import annotations

from nvls_tui.model import KernelEvent, ServiceState
from tests.unit.test_runbook_units import incident_node


def fm_up(**changes):
    services = tuple(ServiceState(s.name, "active" if "fabric" in s.name else s.active, load="loaded")
                     for s in incident_node().services)
    return incident_node(services=services, **changes)


def xid(code: int, words: str = "pid=1, x", pci: str = "0000:5a:00") -> KernelEvent:
    return KernelEvent("XID", f"NVRM: Xid (PCI:{pci}): {code}, {words}", xid=code, pci=pci)


def test_a_check_mechanicals_xid_is_escalated_a_reset_will_not_fix_it():
    from nvls_tui.runbook.preflight import escalation

    reason = escalation(incident_node(kernel_events=(xid(54, "Auxiliary power is not connected"),)))
    assert reason is not None and "Xid 54 on 0000:5a:00" in reason and "CHECK_MECHANICALS" in reason
    assert "will not fix" in reason and "escalate" in reason


def test_a_line_that_orders_a_node_reboot_is_escalated():
    from nvls_tui.runbook.preflight import escalation

    line = xid(154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
    reason = escalation(incident_node(kernel_events=(line,)))
    assert reason is not None and "RESTART_BM" in reason


def test_reset_and_application_xids_are_no_escalation():
    from nvls_tui.runbook.preflight import escalation

    assert escalation(incident_node(kernel_events=(xid(95, "Uncontained: FBHUB. RST: Yes, D-RST: No"),))) is None
    assert escalation(incident_node(kernel_events=(xid(13, "Graphics Exception"),))) is None


def test_an_xid_whose_action_is_the_reset_means_the_fabric_is_not_healthy():
    from nvls_tui.runbook.preflight import fabric_looks_healthy

    assert fabric_looks_healthy(fm_up(kernel_events=()))
    assert not fabric_looks_healthy(fm_up(kernel_events=(xid(95, "Uncontained: FBHUB. RST: Yes, D-RST: No"),)))
    drain = xid(154, "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)")
    assert not fabric_looks_healthy(fm_up(kernel_events=(drain,)))
    assert fabric_looks_healthy(fm_up(kernel_events=(xid(13, "Graphics Exception"),)))  # the application's

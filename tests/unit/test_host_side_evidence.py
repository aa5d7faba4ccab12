"""FABRIC_HOST_SIDE is a confident claim ("nothing inside can finish the fabric"), so it rests on a reading of
the PCI bus that lists the node's GPUs and no NVSwitch. A state without that reading (lspci not read, or an
lspci that saw no GPU at all) gets no host-side claim; the fabric findings and the missing evidence say the
rest, and the node is still not healthy."""

from __future__ import annotations

from nvls_tui.diagnosis import diagnose
from nvls_tui.model import FabricInfo, GpuState, MissingEvidence, NodeState, Platform, Verdict
from nvls_tui.runbook import preflight

VM_BUS = "00000000:00:06.0"


def vm(pci_gpus: tuple[str, ...] | None, **changes) -> NodeState:
    gpu = GpuState(0, VM_BUS, "NVIDIA H200", "GPU-0", FabricInfo("In Progress", "N/A"))
    return NodeState("vm1", platform=Platform.UNKNOWN, gpus=(gpu,), pci_gpus=pci_gpus).replace(**changes)


def codes(state: NodeState) -> list[str]:
    return [f.code for f in diagnose(state).findings]


def test_a_vm_whose_lspci_lists_its_gpu_and_no_nvswitch_is_host_side():
    assert "FABRIC_HOST_SIDE" in codes(vm((VM_BUS,)))


def test_without_a_pci_reading_no_host_side_claim_is_made_and_the_node_is_not_healthy():
    state = vm(None)
    result = diagnose(state)
    assert "FABRIC_HOST_SIDE" not in codes(state)
    assert "FABRIC_NOT_COMPLETED" in codes(state)
    assert result.verdict is not Verdict.HEALTHY


def test_an_lspci_that_saw_no_gpu_at_all_says_nothing_about_nvswitches():
    # A bus listing without the GPUs nvidia-smi drives is not a view of the board (a container's /sys, a
    # filtered listing): its missing NVSwitches prove nothing.
    state = vm(())
    assert "FABRIC_HOST_SIDE" not in codes(state)
    assert diagnose(state).verdict is not Verdict.HEALTHY


def test_an_unread_nvswitch_section_is_not_host_side_and_the_repair_refuses():
    state = vm((VM_BUS,), missing=(MissingEvidence("nvswitches", "failed", "lspci: command not found"),))
    assert "FABRIC_HOST_SIDE" not in codes(state)
    assert "EVIDENCE_MISSING" in codes(state)
    assert preflight.refusal(state) is not None


def test_an_hgx_board_state_without_a_pci_reading_keeps_its_fabric_findings():
    # The 8-GPU HGX states of tests/unit/test_diagnosis.py: no lspci reading, so their fabric words stand.
    gpus = tuple(GpuState(i, f"00000000:{0x18 + i:02X}:00.0", "NVIDIA H100 80GB HBM3", f"GPU-{i}",
                          FabricInfo("Not Started", "N/A")) for i in range(8))
    state = NodeState("gpu01", platform=Platform.HGX_H100, gpus=gpus)
    assert "FABRIC_HOST_SIDE" not in codes(state)
    assert "FABRIC_NOT_COMPLETED" in codes(state)

"""A node that cannot be repaired from inside (issue 26 item 6): a VM whose GPUs wait for a fabric while no
NVSwitch is visible on its PCI bus reads FABRIC_HOST_SIDE, and the repair is refused with that sentence."""

from __future__ import annotations

import asyncio
import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import FabricInfo, GpuState, NodeState, Platform
from nvls_tui.runbook import preflight
from nvls_tui.sim.fleet import load_fleet

SENTENCE = "the host or provider must finish fabric initialisation"


def on(fleet):
    return lambda settings: sim_backends(fleet)


def snapshot(fleet) -> NodeState:
    return asyncio.run(sim_backends(fleet)[0].snapshot())


def test_the_vm_reads_fabric_host_side_and_nothing_that_offers_a_reset(capsys):
    fleet = load_fleet("sim:vm-host-side", speed=0)
    assert main(["check", "sim:vm-host-side", "--json"], connect=on(fleet)) == 1
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["nvswitches"] == [] and node["pci_gpus"] == ["00000000:00:06.0"]
    codes = [f["code"] for f in node["findings"]]
    assert "FABRIC_HOST_SIDE" in codes
    assert not {"FABRIC_NOT_COMPLETED", "PLATFORM_UNSUPPORTED", "GPU_LOST", "FM_NOT_RUNNING"} & set(codes)
    host = next(f for f in node["findings"] if f["code"] == "FABRIC_HOST_SIDE")
    assert host["severity"] == "error" and SENTENCE in host["message"] and "In Progress" in host["message"]


def test_the_vm_fm_says_it_has_nothing_to_do():
    fleet = load_fleet("sim:vm-host-side", speed=0)
    log = fleet.sh("gpu-vm01", "journalctl", "-u", "nvidia-fabricmanager", "--no-pager").stdout
    assert "[NV_WARN_NOTHING_TO_DO]" in log and "status=1/FAILURE" in log


def test_the_plan_is_refused_with_the_sentence_and_no_reset_runs(tmp_path, capsys):
    fleet = load_fleet("sim:vm-host-side", speed=0)
    assert main(["repair", "sim:vm-host-side", "--dry-run", "--json", "--audit-dir", str(tmp_path)],
                connect=on(fleet)) == 1
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["result"] == "refused" and SENTENCE in node["message"]
    assert not any(argv[:2] == ["nvidia-smi", "-r"] for _, argv in fleet.node("gpu-vm01").cmdlog)


def test_without_lspci_the_vm_is_not_called_host_side_and_a_repair_still_refuses():
    fleet = load_fleet("sim:vm-host-side", speed=0)
    fleet.node("gpu-vm01").missing_tools.append("lspci")
    state = snapshot(fleet)
    codes = [f.code for f in diagnose(state).findings]
    assert "FABRIC_HOST_SIDE" not in codes and "EVIDENCE_MISSING" in codes
    assert preflight.refusal(state) is not None


def test_a_vm_whose_host_finished_the_fabric_is_not_host_side():
    # The real two-H200 VM: no NVSwitch visible, fabric Completed/Success (tests/fixtures/real/h200x2-nvswitch).
    gpus = tuple(GpuState(i, f"00000000:00:0{6 + i}.0", "NVIDIA H200", f"GPU-{i}", FabricInfo("Completed", "Success", "0"))
                 for i in range(2))
    state = NodeState("vm2", platform=Platform.UNKNOWN, gpus=gpus, pci_gpus=tuple(g.bus_id for g in gpus))
    assert "FABRIC_HOST_SIDE" not in [f.code for f in diagnose(state).findings]


def test_a_gpu_without_fabric_is_not_host_side():
    # The real one-H200 VM prints fabric N/A: no fabric at all, nothing for a host to finish.
    gpu = GpuState(0, "00000000:00:06.0", "NVIDIA H200", "GPU-0", FabricInfo("N/A", "N/A"))
    state = NodeState("vm1", platform=Platform.NO_NVSWITCH, gpus=(gpu,), pci_gpus=(gpu.bus_id,))
    assert "FABRIC_HOST_SIDE" not in [f.code for f in diagnose(state).findings]

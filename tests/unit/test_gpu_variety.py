"""GPUs as real nodes have them (issue 26 items 4 and 7): a GPU on the PCI bus that nvidia-smi does not list
is lost (GPU_LOST, no reset), and an IMEX daemon on a single-node HGX board is no finding."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import CommandResult, NodeState, Verdict
from nvls_tui.parsers.lspci import parse_lspci
from nvls_tui.poll.assemble import assemble_node_state
from nvls_tui.poll.probe import section_argv
from nvls_tui.runbook import preflight
from nvls_tui.sim.fleet import load_fleet

FIXTURES = Path(__file__).parents[1] / "fixtures"
LOST_BUS = "00000000:D8:00.0"


def snapshot(fleet, host: str) -> NodeState:
    backend = next(b for b in sim_backends(fleet) if b.host.endswith(host))
    return asyncio.run(backend.snapshot())


def on(fleet):
    return lambda settings: sim_backends(fleet)


def test_lspci_nn_tells_gpus_from_nvswitches():
    text = ("0000:0f:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
            "0000:05:00.0 Bridge [0680]: NVIDIA Corporation Device [10de:22a3] (rev a1)\n"
            "0000:01:00.0 VGA compatible controller [0300]: NVIDIA Corporation Device [10de:2204] (rev a1)\n")
    devices = parse_lspci(text).value
    assert [(d.is_gpu, d.is_nvswitch) for d in devices] == [(True, False), (False, True), (True, False)]
    assert devices[0].canonical_bus_id == "00000000:0F:00.0"


def test_the_real_iommu_listing_of_an_h200_board_tells_its_gpus_from_its_nvswitches():
    devices = parse_lspci((FIXTURES / "public/nvlink-topo/lspci-iommu-h200-hgx-nvswitch-22a3.txt").read_text()
                          .split("# ---\n", 1)[1]).value
    gpus = [d for d in devices if d.is_gpu]
    assert {d.vendor_device for d in gpus} == {"10de:2335"} and not any(d.is_nvswitch for d in gpus)
    assert all(d.vendor_device == "10de:22a3" for d in devices if not d.is_gpu)
    assert gpus[0].canonical_bus_id == "00000000:5D:00.0"


def test_the_simulated_node_lists_eight_gpus_on_the_bus_and_seven_in_nvidia_smi():
    fleet = load_fleet("sim:gpu-missing", speed=0)
    lspci = fleet.sh("gpu-lost01", *section_argv("nvswitches")).stdout
    # The poll asks for numbers only (lspci -D -n): the class 0302 is a 3D controller, 10de:22a3 an NVSwitch.
    assert lspci.count(" 0302: 10de:") == 8 and lspci.count(" 0680: 10de:22a3 ") == 4
    assert "0000:d8:00.0 0302: " in lspci
    smi = fleet.sh("gpu-lost01", "nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader").stdout
    assert smi.splitlines() == [f"{i}, 00000000:{b}:00.0" for i, b in enumerate(("0F", "34", "48", "5A", "87", "AE", "C2"))]


def test_a_gpu_on_the_bus_but_not_in_nvidia_smi_is_lost_by_its_bus_id(capsys):
    fleet = load_fleet("sim:gpu-missing", speed=0)
    assert main(["check", "sim:gpu-missing", "--json"], connect=on(fleet)) == 1
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["verdict"] == "broken" and len(node["gpus"]) == 7 and len(node["pci_gpus"]) == 8
    lost = [f for f in node["findings"] if f["code"] == "GPU_LOST"]
    assert len(lost) == 1 and lost[0]["severity"] == "error"
    assert lost[0]["message"].startswith(f"the GPU at {LOST_BUS} is lost: it is on the PCI bus but nvidia-smi does not "
                                         "list it")
    assert "reboot" in lost[0]["message"]


def test_the_repair_refuses_the_reset_path_for_a_lost_gpu():
    state = snapshot(load_fleet("sim:gpu-missing", speed=0), "gpu-lost01")
    why = preflight.refusal(state)
    assert why is not None and LOST_BUS in why and "reset cannot bring it back" in why


def test_without_lspci_nothing_is_called_lost_and_the_node_is_not_healthy():
    fleet = load_fleet("sim:gpu-missing", speed=0)
    fleet.node("gpu-lost01").missing_tools.append("lspci")
    state = snapshot(fleet, "gpu-lost01")
    assert state.pci_gpus is None
    diag = diagnose(state)
    assert "GPU_LOST" not in [f.code for f in diag.findings]
    assert ("EVIDENCE_MISSING", "nvswitches") in [(f.code, f.section) for f in diag.findings]
    assert diag.verdict is not Verdict.HEALTHY and preflight.refusal(state) is not None


def test_without_nvidia_smi_no_gpu_of_the_bus_is_called_lost():
    fleet = load_fleet("sim:gpu-missing", speed=0)
    fleet.node("gpu-lost01").missing_tools.append("nvidia-smi")
    state = snapshot(fleet, "gpu-lost01")
    assert state.pci_gpus is not None and len(state.pci_gpus) == 8 and not state.gpus
    assert "GPU_LOST" not in [f.code for f in diagnose(state).findings]


def test_a_capture_of_the_older_switch_only_lspci_still_counts_its_switches():
    old = CommandResult(("lspci", "-D", "-d", "10de:22a3"), 0,
                        "0000:05:00.0 Bridge: NVIDIA Corporation Device 22a3 (rev a1)\n"
                        "0000:06:00.0 Bridge: NVIDIA Corporation Device 22a3 (rev a1)\n")
    state = assemble_node_state("n", {"nvswitches": old, "gpus": CommandResult(section_argv("gpus"), 0, "")},
                                simulated=False)
    assert len(state.nvswitches) == 2 and state.pci_gpus == ()


def test_an_imex_daemon_on_a_single_node_hgx_board_is_no_finding():
    fleet = load_fleet("sim:healthy/hgx01", speed=0)
    node = fleet.node("hgx01")
    # nvidia-imex installed and running on an 8xH100 (other tools flag its "not ready" there): it keeps the
    # control device open, as the daemon does, and has no unit the probe reads.
    node.spawn(ppid=1, user="root", start=node.boot + 30, argv=["/usr/bin/nvidia-imex", "-c",
               "/etc/nvidia-imex/config.cfg"], cgroup="0::/system.slice/nvidia-imex.service",
               devices=["/dev/nvidiactl"], role="other")
    state = snapshot(fleet, "hgx01")
    assert any("nvidia-imex" in h.command for h in state.holders)
    diag = diagnose(state)
    assert diag.verdict is Verdict.HEALTHY and diag.findings == ()


def test_imex_inactive_status_pasted_is_no_finding():
    from nvls_tui.analyze.captured import analyze_text

    status = ("○ nvidia-imex.service - NVIDIA IMEX service\n"
              "     Loaded: loaded (/lib/systemd/system/nvidia-imex.service; disabled; vendor preset: enabled)\n"
              "     Active: inactive (dead)\n")
    entry = analyze_text(status, "f")
    assert entry["kind"] == "systemctl-status" and entry["findings"] == []


def test_the_healthy_scenario_is_unchanged_by_the_wider_lspci():
    state = asyncio.run(sim_backends(load_fleet("sim:healthy/hgx01", speed=0))[0].snapshot())
    assert len(state.nvswitches) == 4 and len(state.pci_gpus or ()) == 8
    assert diagnose(state).verdict is Verdict.HEALTHY

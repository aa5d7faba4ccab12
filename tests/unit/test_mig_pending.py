"""MIG and persistence in the plan (issue 26 item 5) and nvidia-smi's MIG messages in a paste (issue 27).

A pending MIG mode change (``mig.mode.pending`` != ``mig.mode.current``) is committed by the repair's reset:
the poll reads it, the diagnosis says it (MIG_PENDING), and the plan says it before the operator confirms.
A mode nvidia-smi prints as N/A is unknown, never "no change".
"""

from __future__ import annotations

import json
from pathlib import Path

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import FabricInfo, GpuState, NodeState, Platform
from nvls_tui.parsers.nvidia_smi_csv import gpus_from_query, parse_query_csv
from nvls_tui.runbook.changes import ResetGpus, SetPersistence, UnitChange
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import fill_steps, plan_entries, reset_side_effects
from nvls_tui.runbook.steps import PERSISTENCED
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.plan_summary import what_it_does
from tests.unit.test_sim_incident import quiesce

FIXTURES = Path(__file__).parents[1] / "fixtures"


def on(fleet):
    return lambda settings: sim_backends(fleet)


def codes(state: NodeState) -> list[str]:
    return [f.code for f in diagnose(state).findings]


def gpu(index: int, current: str | None, pending: str | None) -> GpuState:
    return GpuState(index, f"00000000:{index + 16:02X}:00.0", "NVIDIA H100 80GB HBM3", f"GPU-{index}",
                    FabricInfo("Completed", "Success"), "Disabled", current, pending)


def test_the_real_h200_query_reads_mig_disabled_disabled_and_no_pending_change():
    q = parse_query_csv((FIXTURES / "real/nvidia-h200/query-gpu-mig-persistence.csv").read_text()).value
    (h200,) = gpus_from_query(q)
    assert (h200.mig_current, h200.mig_pending, h200.persistence_mode) == ("Disabled", "Disabled", "Enabled")
    assert not h200.mig_change_pending


def test_na_is_unknown_not_no_change():
    q = parse_query_csv("index, pci.bus_id, mig.mode.current, mig.mode.pending\n"
                        "0, 00000000:01:00.0, [N/A], [N/A]\n").value
    (board,) = gpus_from_query(q)
    assert (board.mig_current, board.mig_pending) == (None, None) and not board.mig_change_pending
    state = NodeState("n1", platform=Platform.HGX_H100, gpus=(board,))
    assert "MIG_PENDING" not in codes(state)
    assert reset_side_effects(state) == [
        "may commit a pending MIG mode change: the MIG mode of GPU 0 could not be read (N/A)"]


def test_a_pending_change_is_a_warning_naming_the_gpu_and_both_modes():
    state = NodeState("n1", platform=Platform.HGX_H100, gpus=(gpu(0, "Disabled", "Disabled"), gpu(3, "Disabled", "Enabled")))
    mig = [f for f in diagnose(state).findings if f.code == "MIG_PENDING"]
    assert [(f.severity.value, f.gpu) for f in mig] == [("warning", 3)]
    assert mig[0].message.startswith("GPU 3 has a pending MIG mode change (Disabled -> Enabled): a GPU reset")


def test_the_poll_reads_the_pending_change_of_the_simulated_node(capsys):
    fleet = load_fleet("sim:mig-pending", speed=0)
    assert main(["check", "sim:mig-pending", "--json"], connect=on(fleet)) == 1
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["gpus"][3]["mig"] == {"current": "Disabled", "pending": "Enabled"}
    assert node["gpus"][0]["mig"] == {"current": "Disabled", "pending": "Disabled"}
    mig = [f for f in node["findings"] if f["code"] == "MIG_PENDING"]
    assert [(f["severity"], f["gpu"]) for f in mig] == [("warning", 3)]


def test_the_plan_says_the_reset_commits_it_before_the_operator_confirms(tmp_path, capsys):
    fleet = load_fleet("sim:mig-pending", speed=0)
    assert main(["repair", "sim:mig-pending", "--dry-run", "--audit-dir", str(tmp_path)], connect=on(fleet)) == 0
    out = capsys.readouterr().out
    sentence = "the reset will commit GPU 3's pending MIG mode change (Disabled -> Enabled)"
    reset_part = out[out.index("reset planned"):out.index("fabric-manager planned")]
    assert f"# {sentence}" in reset_part
    # The dry run changed nothing on the node: the change still waits for a reset.
    assert fleet.sh("gpu-mig01", "nvidia-smi", "--query-gpu=mig.mode.current,mig.mode.pending",
                    "--format=csv,noheader").stdout.splitlines()[3] == "Disabled, Enabled"


def test_the_plan_summary_lifts_the_side_effect_and_names_persistence():
    state = NodeState("n1", platform=Platform.HGX_H100, gpus=(gpu(3, "Disabled", "Enabled"),))
    entries = plan_entries(state)
    entries["quiesce"] = [UnitChange("stop", PERSISTENCED), SetPersistence(False)]
    outcome = fill_steps(NodeOutcome("n1", dry_run=True, result="planned"), entries)
    lines = what_it_does(outcome)
    assert "the reset will commit GPU 3's pending MIG mode change (Disabled -> Enabled)" in lines
    assert any(line.startswith("turns persistence mode off for the reset (nvidia-smi -pm 0") for line in lines)
    assert any(line.startswith("stops the persistence daemon (nvidia-persistenced") for line in lines)


def test_a_plan_without_persistence_says_nothing_of_it():
    outcome = fill_steps(NodeOutcome("n1", dry_run=True, result="planned"), {"reset": [ResetGpus()]})
    assert not any("persistence" in line for line in what_it_does(outcome))


def test_the_simulated_reset_commits_the_pending_mode():
    fleet = load_fleet("sim:mig-pending", speed=0)
    quiesce(fleet, "gpu-mig01")  # the incident's stops: nothing holds a device, the reset goes through
    assert fleet.sh("gpu-mig01", "nvidia-smi", "-r").exit_status == 0
    rows = fleet.sh("gpu-mig01", "nvidia-smi", "--query-gpu=mig.mode.current,mig.mode.pending",
                    "--format=csv,noheader").stdout.splitlines()
    assert rows[3] == "Enabled, Enabled" and rows[0] == "Disabled, Disabled"


def test_the_simulated_table_marks_the_pending_mode_with_a_star():
    fleet = load_fleet("sim:mig-pending", speed=0)
    table = fleet.sh("gpu-mig01", "nvidia-smi").stdout
    assert table.count("Enabled* |") == 1 and table.count("Disabled |") == 7


def test_analyze_reads_a_pending_enable_as_mig_pending():
    entry = analyze_text((FIXTURES / "mig/pending-enable-not-supported-mig-user-guide.txt").read_text(), "f")
    assert entry["kind"] == "nvidia-smi-mig"
    assert entry["data"]["pending"] == [{"bus_id": "00000000:00:03.0", "mode": "Enabled", "reason": "Not Supported"}]
    (finding,) = entry["findings"]
    assert finding["code"] == "MIG_PENDING" and finding["severity"] == "warning"
    assert "00000000:00:03.0" in finding["message"] and "reset would commit it" in finding["message"]


def test_analyze_reads_a_pending_disable_refused_while_in_use():
    entry = analyze_text((FIXTURES / "mig/pending-disable-in-use-gpu-operator-118.txt").read_text(), "f")
    assert entry["data"]["pending"] == [{"bus_id": "00000000:C1:00.0", "mode": "Disabled",
                                         "reason": "In use by another client"}]
    assert [f["code"] for f in entry["findings"]] == ["MIG_PENDING"]


def test_analyze_reads_an_applied_change_as_no_finding():
    entry = analyze_text((FIXTURES / "mig/enabled-applied-hpcmate-wiki.txt").read_text(), "f")
    assert entry["kind"] == "nvidia-smi-mig"
    assert entry["data"] == {"pending": [], "changed": [{"bus_id": "00000000:36:00.0", "mode": "Enabled"}]}
    assert entry["findings"] == []


def test_analyze_reads_the_messages_inside_journal_lines():
    text = ("Jan 19 12:30:10 blanka nvidia-smi[4765]: Warning: MIG mode is in pending disable state for GPU "
            "00000000:07:00.0:Timeout\n"
            "Jan 19 12:30:10 blanka nvidia-smi[4765]: Reboot the system or try nvidia-smi --gpu-reset to make MIG "
            "mode effective on GPU 00000000:07:00.0\n"
            "Jan 19 12:30:10 blanka nvidia-smi[4765]: All done.\n")
    entry = analyze_text(text, "f")
    assert entry["kind"] == "nvidia-smi-mig"
    assert entry["data"]["pending"] == [{"bus_id": "00000000:07:00.0", "mode": "Disabled", "reason": "Timeout"}]


def test_prose_that_names_mig_mode_is_not_a_mig_message():
    entry = analyze_text("If you see a warning that MIG mode is in pending enable state, stop dcgm first.\n", "f")
    assert entry["kind"] != "nvidia-smi-mig"

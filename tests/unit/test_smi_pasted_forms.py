"""Issue 35 items 1 and 3: nvidia-smi's outputs in the forms a paste leaves are read: the ``-q`` Fabric block grepped
out without its GPU header (at the line's start too), its Health summary ``Unhealthy`` (FABRIC_UNHEALTHY, a
warning, in check too), ``In Progress`` in a paste (no age: fail closed, an error), nvidia-smi's NVML failure behind
a logger's bracketed tags (an error: the GPUs cannot be read), ``topo -m`` with its tabs turned into spaces and NIC
rows. Lines are the corpus's real ones (tests/corpus/nvidia-smi-q/, nvidia-smi/, topo/)."""

from __future__ import annotations

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import FabricHealth, FabricInfo, GpuState, NodeState


def _read(text: str) -> tuple[str, list[tuple[str, str]]]:
    entry = analyze_text(text, "paste")
    found = entry["findings"] or [f for p in entry.get("parts") or [] for f in p["findings"]]
    return entry["kind"], [(f["code"], f["severity"]) for f in found]


def test_a_fabric_block_grepped_at_the_lines_start_is_read():
    text = ("Fabric\n    State                             : Completed\n"
            "    Status                            : Insufficient Resources\n"
            "    CliqueId                          : 0\n")
    assert _read(text) == ("nvidia-smi-q", [("FABRIC_STATUS_ERROR", "error")])


def test_in_progress_in_a_paste_has_no_age_and_is_an_error():
    text = "    Fabric\n        State                                          : In Progress\n" \
           "        Status                                         : N/A\n"
    assert _read(text) == ("nvidia-smi-q", [("FABRIC_NOT_COMPLETED", "error")])


def test_an_unhealthy_health_summary_is_a_warning_naming_the_fields():
    text = ("    Fabric\n        State                             : Completed\n"
            "        Status                            : Success\n        Health\n"
            "            Summary                       : Unhealthy\n            Bandwidth                     : Full\n")
    entry = analyze_text(text, "paste")
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("FABRIC_UNHEALTHY", "warning")]
    assert "Bandwidth: Full" in entry["findings"][0]["message"]


def test_check_reads_the_health_summary_the_same_way():
    fabric = FabricInfo(state="Completed", status="Success", health=FabricHealth(summary="Unhealthy"))
    state = NodeState(host="n", gpus=(GpuState(index=0, bus_id="00000000:18:00.0", name="NVIDIA H100 80GB HBM3", uuid="GPU-0", fabric=fabric),))
    assert [f.code for f in diagnose(state).findings if f.code == "FABRIC_UNHEALTHY"] == ["FABRIC_UNHEALTHY"]
    healthy = NodeState(host="n", gpus=(GpuState(index=0, bus_id="00000000:18:00.0", name="NVIDIA H100 80GB HBM3", uuid="GPU-0", fabric=FabricInfo(
        state="Completed", status="Success", health=FabricHealth(summary="Healthy"))),))
    assert not [f for f in diagnose(healthy).findings if f.code == "FABRIC_UNHEALTHY"]


def test_nvml_failure_behind_a_loggers_tags_is_an_error(tmp_path):
    text = ("[task 2025-07-01T05:06:30.004+00:00] [train] nvidia-smi failed with return code 18\n"
            "[task 2025-07-01T05:06:30.005+00:00] [train] [nvidia-smi(stdout)] Failed to initialize NVML: "
            "Driver/library version mismatch\n")
    kind, found = _read(text)
    assert kind == "nvidia-smi" and ("EVIDENCE_MISSING", "error") in found
    path = tmp_path / "task.log"
    path.write_text(text)
    assert main(["analyze", str(path)]) == 1


def test_topo_m_with_spaces_and_nic_rows_is_a_matrix_of_the_gpus():
    text = ("        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
            "GPU0     X      NV6     PIX     6,14,22,30      3               N/A\n"
            "GPU1    NV6      X      SYS     4,12,20,28      1               N/A\n"
            "NIC0    PIX     SYS      X \n\nLegend:\n\n  X    = Self\n")
    entry = analyze_text(text, "paste")
    assert entry["kind"] == "topo-matrix" and entry["findings"] == []
    assert entry["data"]["matrix"]["GPU0"] == {"GPU0": "X", "GPU1": "NV6"}

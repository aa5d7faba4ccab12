"""Golden tests: simulated outputs have the real fixtures' layout and analyse into the same structure."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_sim_incident import NVLS_ENV, SMOKE

REAL = Path(__file__).parents[1] / "fixtures" / "real" / "h200x2-nvswitch"


@pytest.fixture(scope="module")
def fleet():
    return load_fleet("sim:seed-incident", speed=0)


def column_widths(text: str) -> list[list[int]]:
    return [[len(cell) for cell in line.split("|")] for line in text.splitlines() if line.startswith("|")]


def test_the_nvidia_smi_table_has_the_real_column_widths(fleet):
    sim = column_widths(fleet.sh("gpu01", "nvidia-smi").stdout)
    real = column_widths((REAL / "nvidia-smi.txt").read_text())
    assert sim[:7] == real[:7]
    assert {len(line) for line in fleet.sh("gpu01", "nvidia-smi").stdout.splitlines()[1:] if line} == {91}


def test_nvidia_smi_q_values_start_at_the_real_column(fleet):
    text = fleet.sh("gpu01", "nvidia-smi", "-q").stdout
    assert text.startswith("\n==============NVSMI LOG==============\n\nTimestamp")
    assert {line.index(": ") for line in text.splitlines() if " : " in line} == {55}
    assert "        ClusterUUID                                    : 00000000-0000-0000-0000-000000000000" in text


@pytest.mark.parametrize(("argv", "real_file"), [
    (("nvidia-smi", "-q"), "nvidia-smi-q.txt"),
    (("nvidia-smi", "-q", "-x"), "nvidia-smi-q-x.xml"),
    (("nvidia-smi", "--query-gpu=index,pci.bus_id,name,uuid,driver_version,fabric.state,fabric.status,"
      "fabric.cliqueId,fabric.clusterUuid", "--format=csv"), "query-gpu-fabric.csv"),
])
def test_simulated_nvidia_smi_analyses_like_the_real_capture(fleet, argv, real_file):
    sim = analyze_text(fleet.sh("gpu01", *argv).stdout, "sim")
    real = analyze_text((REAL / real_file).read_text(), real_file)
    assert sim["kind"] == real["kind"]
    sim_rows = sim["data"].get("gpus") or sim["data"].get("rows")
    real_rows = real["data"].get("gpus") or real["data"].get("rows")
    assert len(sim_rows) == 8
    assert set(sim_rows[0]) == set(real_rows[0])
    if "fabric" in real_rows[0]:
        assert set(sim_rows[0]["fabric"]) == set(real_rows[0]["fabric"])
        assert sim_rows[0]["fabric"]["state"] == "Completed"


def test_the_smoke_test_output_has_the_real_header_and_analyses_like_the_real_run(fleet):
    text = fleet.sh("gpu01", *SMOKE, env={"NCCL_NVLS_ENABLE": "1"}).stdout
    real_text = (REAL / "all_reduce_perf-g2.txt").read_text()
    real_lines = real_text.splitlines()
    for header in real_lines[8:11]:
        assert header + "\n" in text
    sim, real = analyze_text(text, "sim"), analyze_text(real_text, "real")
    assert sim["kind"] == real["kind"] == "nccl-tests"
    assert len(sim["data"]["rows"]) == len(real["data"]["rows"]) == 5
    assert sim["data"]["out_of_bounds"] == 0 and sim["data"]["completed"] is True
    assert 289 < sim["data"]["avg_busbw"] < 295


def test_the_failed_smoke_test_analyses_as_an_nvls_failure(fleet):
    text = fleet.sh("gpu05", *SMOKE, env=NVLS_ENV).stdout
    result = analyze_text(text, "sim")
    assert result["kind"] == "nccl-tests"
    assert result["data"]["completed"] is False
    assert any("802" in e for e in result["data"]["errors"])


def test_fuser_v_has_the_real_header_and_row_layout(fleet):
    text = fleet.sh("gpu01", "fuser", "-v", "/dev/nvidia0").stderr
    real_header = (REAL / "fuser-v-two-cuda-processes.txt").read_text().splitlines()[0]
    assert text.splitlines()[0] == real_header
    assert text.splitlines()[1].startswith("/dev/nvidia0:        root ")
    assert analyze_text(text, "sim")["kind"] == "fuser"


def test_the_refused_and_successful_resets_analyse_as_resets():
    fleet = load_fleet("sim:persistence-blocks-reset", speed=0)
    refused = analyze_text(fleet.sh("gpu-pm01", "nvidia-smi", "-r").stdout, "sim")
    assert refused["kind"] == "nvidia-smi-reset"
    assert refused["data"]["failed"][0]["bus_id"] == "00000000:0F:00.0"

"""Grammar and rounding of what nvls-tui prints (issue 14, item 13)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nvls_tui.words import count, gbps, verb

REAL = Path(__file__).parents[1] / "fixtures" / "real"  # the repository's copies: a clone has no ../shared


def test_counts_agree_with_their_number():
    assert count(1, "GPU") == "1 GPU" and count(8, "GPU") == "8 GPUs"
    assert count(1, "process") == "1 process" and count(3, "process") == "3 processes"
    assert count(None, "GPU") == "an unknown number of GPUs"
    assert f"{count(1, 'process')} {verb(1, 'holds')}" == "1 process holds"
    assert gbps(235.209557) == "235.2 GB/s" and gbps(None) == "–"


def analyze(*files: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "analyze", *map(str, files)], capture_output=True,
                          text=True, timeout=60, check=False, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    return done.stdout


def test_analyze_says_one_gpu_one_holder_and_rounds_bandwidth():
    out = analyze(*sorted((REAL / "h200-1gpu-vm").iterdir()), REAL / "h200x2-nvswitch" / "all_reduce_perf-g2.json")
    assert "1 holders" not in out and "1 processes" not in out and "1 rows" not in out
    assert "1 holder:" in out and "1 process" in out
    assert "235.2 GB/s" in out and "235.209557" not in out
    assert "None" not in out


def test_analyze_of_a_probe_output_says_what_the_node_is():
    out = analyze(REAL / "h200-1gpu-vm" / "probe-output-with-cuda-holder.txt")
    assert "degraded" in out and "1 GPU" in out and "no-nvswitch" in out


def test_an_nccl_log_without_a_gpu_count_says_no_none():
    from nvls_tui.headless.analyze import _summary

    line = _summary({"kind": "nccl-tests", "data": {"test": "all_reduce_perf", "ngpus": None, "rows": [{}],
                                                     "avg_busbw": 120.33333, "completed": False}})
    assert "None" not in line and "on None" not in line
    assert line == "all_reduce_perf, 1 row, avg bus bandwidth 120.3 GB/s, did not complete"
    assert json.dumps(line)  # plain text


def test_analyze_of_an_nccl_log_with_802_says_what_it_means_and_what_to_do(tmp_path):
    from nvls_tui.sim.fleet import load_fleet

    fleet = load_fleet("seed-incident", speed=0)
    plan = fleet.run("gpu05", ["all_reduce_perf", "-b", "8M", "-e", "128M", "-f", "2", "-g", "8"],
                     env={"NCCL_DEBUG": "WARN"})
    log = tmp_path / "nccl.log"
    log.write_text(plan.text() if hasattr(plan, "text") else plan.stdout)
    done = subprocess.run([sys.executable, "-m", "nvls_tui.cli", "analyze", "--json", str(log)], capture_output=True,
                          text=True, timeout=60, check=False)
    (entry,) = json.loads(done.stdout)
    (finding,) = [f for f in entry["findings"] if f["code"] == "NVLS_SMOKE_FAILED"]
    assert "CUDA error 802 means NVLS multicast could not bind" in finding["message"]
    assert "resets the GPUs and NVSwitches" in finding["message"]


def test_nccl_401_and_invalid_argument_have_their_own_advice():
    from nvls_tui.analyze.captured import nccl_advice

    assert "not permitted" in nccl_advice("CUDA error 401 'operation not permitted'")
    assert "without a GPU reset" in nccl_advice("transport/nvls.cc:162 NCCL WARN Cuda failure 'invalid argument'")
    assert nccl_advice("NCCL WARN something else") is None

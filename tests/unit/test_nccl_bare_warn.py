"""Issue 35 item 4: NCCL ``WARN`` lines without NCCL's ``host:pid:tid`` field (pasted bare, or with only the rank
in brackets) are NCCL's and read by the NCCL advice."""

from __future__ import annotations

import pathlib

import pytest

from nvls_tui.analyze.captured import analyze_text

PUBLIC = pathlib.Path(__file__).parents[1] / "fixtures" / "public" / "nccl-tests"


def test_bare_nvls_warn_lines_are_an_nccl_failure_with_the_fm_restart_advice():
    name = "bare-warn-nvls-invalid-argument-nccl-976.txt"
    entry = analyze_text((PUBLIC / name).read_text(), name)
    assert entry["kind"] == "nccl-tests"
    (finding,) = [f for f in entry["findings"] if f["code"] == "NVLS_SMOKE_FAILED"]
    assert finding["severity"] == "error"
    assert "transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'" in finding["message"]
    assert "Fabric Manager restart without a GPU reset" in finding["message"]


@pytest.mark.parametrize("line", ["NCCL WARN Cuda failure 'system not yet initialized'",
                                  "[0] NCCL WARN Cuda failure 'system not yet initialized'",
                                  "[3] misc/cudawrap.cc:33 NCCL WARN Cuda failure 'system not yet initialized'"])
def test_a_bare_or_rank_only_warn_line_gets_the_802_advice(line):
    entry = analyze_text(line + "\n", "w.txt")
    assert entry["kind"] == "nccl-tests"
    codes = [(f["code"], f["severity"]) for f in entry["findings"]]
    assert codes[0] == ("NVLS_SMOKE_FAILED", "error")
    assert "CUDA error 802" in entry["findings"][0]["message"]


def test_prose_that_mentions_nccl_warn_midline_is_not_an_nccl_output():
    entry = analyze_text("If you see NCCL WARN Cuda failure in your logs, check the fabric.\n", "p.txt")
    assert entry["kind"] == "unknown"

"""analyze groups the same Xid from several lines into one finding naming the GPUs (X3 item 5).

Before, a kernel log with seven Xid 45 lines on four GPUs printed seven findings, the same line several times.
"""

from __future__ import annotations

from pathlib import Path

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.cli import main

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wrapped" / "kernel-tag-xid-45-open-gpu-kernel-modules-1150.txt"


def _xids(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["code"] == "XID"]


def test_seven_xid_45_lines_on_four_gpus_are_one_finding_naming_them():
    result = analyze_text(FIXTURE.read_text(), str(FIXTURE))
    (xid,) = _xids(result["findings"])
    assert xid["severity"] == "warning"
    head, _, nvidia = xid["message"].partition(" — ")
    assert head == "Xid 45 on 4 GPUs (7 lines): 0000:97:00, 0000:ba:00, 0000:dc:00, 0000:ed:00"
    # NVIDIA's catalogue: ROBUST_CHANNEL_PREEMPTIVE_REMOVAL, a sympathetic Xid (WORKFLOW_XID_45)
    assert "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL" in nvidia and xid["action"] == "WORKFLOW_XID_45"
    assert len(result["data"]["events"]) == 7  # every line is still an event


def test_one_line_reads_as_before_and_different_xids_stay_apart():
    text = ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001\n"
            "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000002\n"
            "kernel: NVRM: Xid (PCI:0000:ba:00): 79, pid=1, name=python3, GPU has fallen off the bus.\n"
            "kernel: NVRM: Xid (PCI:0000:97:00): 13, pid=1, name=python3, Graphics Exception\n")
    xids = _xids(analyze_text(text, "k.txt")["findings"])
    assert [f["message"].partition(" — ")[0] for f in xids] == [
        "Xid 45 on 0000:dc:00 (2 lines)", "Xid 79 on 0000:ba:00", "Xid 13 on 0000:97:00"]
    assert [f["action"] for f in xids] == ["WORKFLOW_XID_45", "RESTART_BM", "RESTART_APP"]


def test_the_text_says_it_once(capsys):
    assert main(["analyze", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert out.count("Xid 45") == 1 and "4 GPUs" in out

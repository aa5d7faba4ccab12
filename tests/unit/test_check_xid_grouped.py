"""check groups repeated Xids the way analyze does: one XID finding per Xid, naming its GPUs.

``analyze`` said ``Xid 45 on 4 GPUs (7 lines): ...`` for a log that ``check`` (and the console) listed as
seven findings, one per line. The grouping is the diagnosis's now (diagnosis.kernel_findings), and analyze
takes it from there: both say the same words for the same lines.
"""

from __future__ import annotations

from pathlib import Path

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis import diagnose, kernel_findings
from nvls_tui.model import NodeState, Severity
from nvls_tui.parsers.kernel_log import parse_kernel_log

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wrapped" / "kernel-tag-xid-45-open-gpu-kernel-modules-1150.txt"
GROUPED = "Xid 45 on 4 GPUs (7 lines): 0000:97:00, 0000:ba:00, 0000:dc:00, 0000:ed:00"


def node_with(text: str) -> NodeState:
    return NodeState(host="gpu05", kernel_events=parse_kernel_log(text).value)


def xid_messages(findings) -> list[tuple[Severity, str]]:
    """Each XID finding's severity and its message up to NVIDIA's words (`` — MNEMONIC, NVIDIA's ...``)."""
    return [(f.severity, f.message.partition(" — ")[0]) for f in findings if f.code == "XID"]


def test_the_diagnosis_of_seven_xid_45_lines_is_one_finding():
    state = node_with(FIXTURE.read_text())
    assert len(state.kernel_events) == 7
    assert xid_messages(kernel_findings(state)) == [(Severity.WARNING, GROUPED)]
    assert xid_messages(diagnose(state).findings) == [(Severity.WARNING, GROUPED)]


def test_check_and_analyze_say_the_same_words():
    text = FIXTURE.read_text()
    from_analyze = [f["message"] for f in analyze_text(text, str(FIXTURE))["findings"] if f["code"] == "XID"]
    from_check = [f.message for f in kernel_findings(node_with(text)) if f.code == "XID"]
    assert from_check == from_analyze and from_check[0].startswith(GROUPED + " — ROBUST_CHANNEL_PREEMPTIVE_REMOVAL")


def test_one_line_reads_as_before_and_nvlink_xids_stay_errors_apart():
    state = node_with("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001\n"
                      "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000002\n"
                      "kernel: NVRM: Xid (PCI:0000:ba:00): 74, pid=1, name=python3, NVLink: fatal error\n"
                      "kernel: NVRM: Xid (PCI:0000:97:00): 74, pid=1, name=python3, NVLink: fatal error\n"
                      "kernel: NVRM: Xid (PCI:0000:97:00): 13, pid=1, name=python3, Graphics Exception\n")
    assert xid_messages(kernel_findings(state)) == [
        (Severity.WARNING, "Xid 45 on 0000:dc:00 (2 lines)"),
        (Severity.ERROR, "Xid 74 on 2 GPUs (2 lines): 0000:97:00, 0000:ba:00"),
        (Severity.WARNING, "Xid 13 on 0000:97:00"),
    ]


def test_one_devices_many_lines_are_weighed_once_not_once_a_line(monkeypatch):
    """The strongest reading of a device's lines was taken again for each of its lines: a log of n lines of one
    Xid on one GPU cost n x n comparisons (analyze's escaped kernel-line paste: 256 KiB grew to 1.5 s of CPU,
    most of it here). It is taken once per device and Xid, and reads the same."""
    import nvls_tui.diagnosis.kernel as kernel

    weighed: list[int] = []

    def counted(readings):
        weighed.append(len(readings))
        return strongest(readings)

    strongest = kernel.strongest
    monkeypatch.setattr(kernel, "strongest", counted)
    line = "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001\n"
    state = node_with(line * 500 + "kernel: NVRM: Xid (PCI:0000:97:00): 74, pid=1, name=python3, NVLink: fatal error\n")
    assert xid_messages(kernel_findings(state)) == [(Severity.WARNING, "Xid 45 on 0000:dc:00 (500 lines)"),
                                                     (Severity.ERROR, "Xid 74 on 0000:97:00")]
    assert sorted(weighed) == [1, 500]

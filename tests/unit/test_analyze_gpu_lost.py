"""``analyze`` of a kernel log that says a GPU fell off the bus gives GPU_LOST, as ``check`` does for the same lines.

contract.md's GPU_LOST covers Xid 79 and the driver's "fallen off the bus" words; analyze used to give only
a generic XID finding (Xid 79) or nothing (the driver's three-line message without an Xid), so a pasted log
never said that a reset cannot help. The finding is built by the diagnosis's own gpu_lost_finding, so the
words and the advice are check's.
"""

from __future__ import annotations

import json
import pathlib

from nvls_tui.cli import main
from nvls_tui.diagnosis.node import GPU_LOST_ADVICE

KERNEL = pathlib.Path(__file__).parents[1] / "fixtures" / "kernel"


def analyze(capsys, path: pathlib.Path) -> dict:
    """analyze's entry for one file; its findings are errors, so the exit status is 1."""
    assert main(["analyze", "--json", str(path)]) == 1
    (entry,) = json.loads(capsys.readouterr().out)
    return entry


def test_the_drivers_fallen_off_the_bus_words_without_an_xid_are_gpu_lost(capsys):
    entry = analyze(capsys, KERNEL / "fallen-off-bus-no-xid-570.txt")
    assert entry["kind"] == "kernel-log"
    assert [(f["code"], f["severity"], f["message"]) for f in entry["findings"]] == [
        ("GPU_LOST", "error", f"the GPU at 0000:b3:00.0 is lost: the kernel says it has fallen off the bus; "
                              f"{GPU_LOST_ADVICE}")]
    # The driver's next line ("The NVIDIA probe routine failed for 1 device(s).") is read now, as the GPU's loss's
    # consequence (driver_failures' GPU_PROBE_FAILED, explained by the fall): no finding of its own, never dropped.
    assert [e["code"] for e in entry["data"]["events"]] == ["GPU_FELL_OFF_BUS", "GPU_PROBE_FAILED"]


def test_xid_79_and_the_drivers_words_for_one_gpu_are_one_gpu_lost_beside_the_xid(capsys):
    entry = analyze(capsys, KERNEL / "xid-79-fallen-off-bus-journal.txt")
    assert [(f["code"], f["severity"], f["message"]) for f in entry["findings"]] == [
        ("GPU_LOST", "error", f"the GPU at 0000:01:00 is lost: the kernel logged Xid 79 (fallen off the bus); "
                              f"{GPU_LOST_ADVICE}"),
        ("XID", "error", "Xid 79 on 0000:01:00 — ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS, NVIDIA's immediate "
                         "action RESTART_BM: reboot the node: a GPU reset will not fix it"),
    ]


def test_a_kernel_log_without_a_lost_gpu_gives_no_gpu_lost(capsys, tmp_path):
    log = tmp_path / "xid.txt"
    log.write_text("[  100.500000] NVRM: Xid (PCI:0000:34:00): 74, pid=1234, name=python, NVLink: fatal error\n")
    entry = analyze(capsys, log)
    assert [f["code"] for f in entry["findings"]] == ["XID"]

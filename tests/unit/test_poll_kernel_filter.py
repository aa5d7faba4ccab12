"""Issue 35 item 4: where the poll reads the same text as ``analyze`` (the kernel log), ``check`` gives the same
findings. The node-side kernel filter (the probe's awk, and filter_journal/filter_ring, its Python twins) must keep
the lines of every ``nvidia-*`` kernel module that the analyze side reads, not only NVRM and nvidia-nvswitch."""

from __future__ import annotations

import subprocess

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.parsers.kernel_log import parse_kernel_log, unread_kernel_lines
from nvls_tui.poll.kernel_tail import filter_journal, filter_ring
from nvls_tui.poll.probe import JOURNAL_ROOT_ENV
from nvls_tui.poll.probe_output import split_probe_output
from nvls_tui.poll.probe_script import probe_script
from tests.unit.test_probe_journal_dirs import journal_in

# Lines of NVIDIA's kernel modules other than NVRM and nvidia-nvswitch (journal form, short-iso, as the poll reads
# it): the modeset driver's GPU-progress timeout as operators post it; the uvm and nvlink lines are only shaped like
# their modules' lines (the filter reads the module's tag, not the words after it).
LINES = (
    "2026-12-06T10:00:01+0000 gpu05 kernel: nvidia-modeset: ERROR: GPU:0: Error while waiting for GPU progress: "
    "0x0000c67d:0 2:0:4048:4040\n",
    "2026-12-06T10:00:02+0000 gpu05 kernel: nvidia-uvm: uvm_gpu_init failed for GPU 0000:18:00.0: Invalid state\n",
    "2026-12-06T10:00:03+0000 gpu05 kernel: nvidia-nvlink: nvlink_core_link_train failed on link 4\n",
)
BOOT = "2026-12-06T09:59:59+0000 gpu05 kernel: Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)\n"


@pytest.mark.parametrize("line", LINES, ids=("modeset", "uvm", "nvlink"))
def test_the_python_filters_keep_every_nvidia_module_line(line):
    assert line.strip() in filter_journal(BOOT + line)
    ring = "[    0.000000] Linux version 6.8.0-49-generic\n[   12.5] " + line.split("kernel: ", 1)[1]
    assert line.split("kernel: ", 1)[1].strip() in filter_ring(ring)


def test_the_nodes_awk_keeps_them_too(tmp_path):
    journal = BOOT + "".join(LINES) + "-- cursor: s=0\n"
    (tmp_path / "journalctl.out").write_text(journal)
    (tmp_path / "journalctl").write_text(f"#!/bin/sh\ncat {tmp_path / 'journalctl.out'}\n")
    (tmp_path / "journalctl").chmod(0o755)
    done = subprocess.run(["sh", "-c", probe_script(only=("kernel",))], capture_output=True, text=True,
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin", JOURNAL_ROOT_ENV: str(journal_in(tmp_path / "root"))},
                          check=False)
    body = split_probe_output(done.stdout)["kernel"][1]
    assert body == filter_journal(journal)
    for line in LINES:
        assert line.strip() in body


def test_check_on_the_filtered_lines_gives_what_analyze_gives_on_the_paste():
    pasted = BOOT + "".join(LINES)
    analyzed = sorted((f["code"], f["severity"]) for f in analyze_text(pasted, "k.txt")["findings"])
    kept = filter_journal(pasted)
    state = NodeState(host="gpu05", kernel_events=parse_kernel_log(kept).value, kernel_unread=unread_kernel_lines(kept))
    checked = sorted((f.code, f.severity.value) for f in diagnose(state).findings
                     if f.code in {code for code, _ in analyzed})
    assert analyzed and checked == analyzed


def test_the_kernels_taint_notice_for_an_unsigned_nvidia_module_stays_quiet_in_check_and_analyze():
    # Printed on every boot of a DKMS-built driver without module signing (as the public dmesg excerpts quote it):
    # the kernel's notice, not a fault. Kept by the filter now, so it must not become UNREAD_EVIDENCE.
    boot = (BOOT + "2026-12-06T10:00:00+0000 gpu05 kernel: nvidia: module verification failed: signature and/or "
            "required key missing - tainting kernel\n")
    assert analyze_text(boot, "k.txt")["findings"] == []
    kept = filter_journal(boot)
    state = NodeState(host="gpu05", kernel_events=parse_kernel_log(kept).value, kernel_unread=unread_kernel_lines(kept))
    assert [f for f in diagnose(state).findings if f.code == "UNREAD_EVIDENCE"] == []

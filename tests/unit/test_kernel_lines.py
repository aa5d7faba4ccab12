"""Kernel-line kinds of issues 26/27: a GPU that fell off the bus (Xid 79, or the driver's multi-line words
without an Xid), the two fabric statuses by name or by number, and the GPU_LOST finding they lead to.

The multi-line forms are made by the real tools where they run here: util-linux ``dmesg --file`` over a
syslog-format file, and the real ``journalctl`` over a journal file written by ``systemd-journal-remote``.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from nvls_tui.diagnosis import diagnose, gpu_lost_finding
from nvls_tui.diagnosis.story import node_story
from nvls_tui.model import FabricInfo, GpuState, KernelEvent, NodeState, Platform, ServiceState, Severity
from nvls_tui.parsers.kernel_log import (
    FELL_OFF_BUS,
    FM_NOT_PRESENT,
    OUT_OF_SYNC,
    classify_kernel_line,
    parse_kernel_log,
)
from nvls_tui.runbook.preflight import lost_gpu, refusal

FIXTURES = Path(__file__).parents[1] / "fixtures" / "kernel"
JOURNAL_REMOTE = Path("/usr/lib/systemd/systemd-journal-remote")
SPLIT = ("NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system has\n"
         "NVRM: fallen off the bus and is not responding to commands.")


def _body(path: Path) -> str:
    """A fixture without its provenance header."""
    return path.read_text().split("# ---\n", 1)[1]


def test_the_driver_s_three_line_message_without_an_xid_names_the_gpu():
    # (The probe failure the driver logs after it is its own event: GPU_PROBE_FAILED.)
    (event,) = [e for e in parse_kernel_log(_body(FIXTURES / "fallen-off-bus-no-xid-570.txt")).value
                if e.code != "GPU_PROBE_FAILED"]
    assert event.code == FELL_OFF_BUS
    assert event.pci == "0000:b3:00.0"
    assert event.xid is None
    assert event.timestamp == "1843.308145"
    assert "installed in this system has fallen off the bus" in event.line


def test_xid_79_and_the_driver_s_own_line_are_two_events_of_one_gpu():
    events = parse_kernel_log(_body(FIXTURES / "xid-79-fallen-off-bus-journal.txt")).value
    assert [(e.code, e.xid, e.pci) for e in events] == [("XID", 79, "0000:01:00"), (FELL_OFF_BUS, None, "0000:01:00.0")]


def test_one_printk_per_line_is_joined_too():
    text = "".join(f"[ 1843.30814{i}] {line}\n" for i, line in enumerate(SPLIT.split("\n")))
    (event,) = parse_kernel_log(text).value
    assert event.code == FELL_OFF_BUS
    assert event.pci == "0000:b3:00.0"


def test_a_block_indented_as_a_whole_is_not_joined():
    """A pasted block indented as a whole has no head line: each Xid stays its own event."""
    text = ("    NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
            "    NVRM: Xid (PCI:0000:34:00): 74, pid=2, NVLink error.\n")
    assert [e.xid for e in parse_kernel_log(text).value] == [79, 74]


def test_the_lines_after_a_joined_record_are_still_read():
    text = f"[  301.500000] {SPLIT.replace(chr(10), chr(10) + ' ' * 15)}\n[  302.000000] NVRM: Xid (PCI:0000:34:00): 74, x\n"
    assert [e.code for e in parse_kernel_log(text).value] == [FELL_OFF_BUS, "XID"]


@pytest.mark.parametrize(("line", "code"), [
    # By number only, whatever name and source line the release prints beside it.
    ("NVRM: nvAssertOkFailedNoLog: Assertion failed: Generic Error [NV_ERR_GENERIC] (0x00000087) returned from "
     "_memMulticastFabricGpuAttach @ mem_multicast_fabric.c:2650", OUT_OF_SYNC),
    ("NVRM: nvCheckOkFailedNoLog: Check failed: Failure: Generic Error (0x0000007A) returned from "
     "_memMulticastFabricDescriptorAlloc @ mem_multicast_fabric.c:1555", FM_NOT_PRESENT),
    ("NVRM: nvCheckOkFailedNoLog: Check failed: unknown [NV_ERR_FABRIC_MANAGER_NOT_PRESENT] returned from x @ y.c:1",
     FM_NOT_PRESENT),
    ("NVRM: _memMulticastFabricGpuAttach: status [NV_ERR_FABRIC_STATE_OUT_OF_SYNC]", OUT_OF_SYNC),
])
def test_the_fabric_statuses_match_by_name_or_by_number(line, code):
    event = classify_kernel_line(line)
    assert event is not None and event.code == code


def test_the_number_alone_outside_an_nvrm_line_is_no_fabric_status():
    assert classify_kernel_line("mlx5_core 0000:17:00.0: cmd failed (0x00000087)") is None


def _export(path: Path, entries: list[tuple[int, str]]) -> None:
    """Journal export format (what systemd-journal-remote reads): kernel-transport entries of one boot."""
    with path.open("wb") as out:
        for i, (mono_us, text) in enumerate(entries, 1):
            fields = {"__CURSOR": f"s=0;i={i}", "__REALTIME_TIMESTAMP": str(1_786_376_734_000_000 + mono_us),
                      "__MONOTONIC_TIMESTAMP": str(mono_us), "_BOOT_ID": "0123456789abcdef0123456789abcdef",
                      "_TRANSPORT": "kernel", "PRIORITY": "3", "SYSLOG_IDENTIFIER": "kernel", "_HOSTNAME": "gpu07",
                      "MESSAGE": text}
            for key, value in fields.items():
                raw = value.encode()
                out.write(key.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n" if b"\n" in raw
                          else key.encode() + b"=" + raw + b"\n")
            out.write(b"\n")


@pytest.mark.skipif(not JOURNAL_REMOTE.exists() or shutil.which("journalctl") is None,
                    reason="systemd-journal-remote is not installed (scripts/system-deps.sh)")
def test_the_real_journalctl_prints_the_record_indented_and_it_is_joined(tmp_path):
    _export(tmp_path / "k.export", [(0, "Linux version 6.1.0"), (301_500_000, SPLIT)])
    subprocess.run([str(JOURNAL_REMOTE), "-o", str(tmp_path / "k.journal"), str(tmp_path / "k.export")],
                   check=True, capture_output=True)
    text = subprocess.run(["journalctl", "--file", str(tmp_path / "k.journal"), "-k", "-o", "short-iso", "--no-pager"],
                          check=True, capture_output=True, text=True).stdout
    assert text.count("\n") == 4  # the record's later lines indented under its first
    (event,) = parse_kernel_log(text).value
    assert event.code == FELL_OFF_BUS
    assert event.pci == "0000:b3:00.0"
    assert event.timestamp == "2026-08-10T15:50:35+0000"


@pytest.mark.skipif(shutil.which("dmesg") is None, reason="util-linux dmesg is not installed")
def test_the_real_dmesg_prints_the_record_indented_and_it_is_joined(tmp_path):
    ring = tmp_path / "ring.txt"
    ring.write_text("<6>[    0.000000] Linux version 6.1.0\n<3>[ 1843.308145] " + SPLIT + "\n")
    text = subprocess.run(["dmesg", "--file", str(ring)], check=True, capture_output=True, text=True).stdout
    assert "\n               NVRM: (PCI ID" in text
    (event,) = parse_kernel_log(text).value
    assert (event.code, event.pci, event.timestamp) == (FELL_OFF_BUS, "0000:b3:00.0", "1843.308145")


# ----- GPU_LOST ---------------------------------------------------------------------------------------


def _node(*events: KernelEvent) -> NodeState:
    gpus = tuple(GpuState(index=i, bus_id=f"00000000:{bus}:00.0", name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{i}",
                          fabric=FabricInfo("Completed", "Success"))
                 for i, bus in enumerate(("0F", "34", "48", "5A")))
    return NodeState(host="gpu07", platform=Platform.HGX_H100, driver="580.82.07", fm_version="580.82.07", gpus=gpus,
                     services=(ServiceState("nvidia-fabricmanager.service", "active", "running", "loaded"),),
                     kernel_events=events)


XID79 = KernelEvent("XID", "NVRM: Xid (PCI:0000:5a:00): 79, pid=0, GPU has fallen off the bus.", xid=79,
                    pci="0000:5a:00")
WORDS = KernelEvent(FELL_OFF_BUS, "NVRM: GPU 0000:5a:00.0: GPU has fallen off the bus.", pci="0000:5a:00.0")


def test_xid_79_is_gpu_lost_naming_the_gpu_index_and_bus():
    diagnosis = diagnose(_node(XID79))
    (lost,) = [f for f in diagnosis.findings if f.code == "GPU_LOST"]
    assert lost.severity is Severity.ERROR
    assert lost.gpu == 3
    assert lost.message.startswith("GPU 3 (0000:5a:00) is lost: the kernel logged Xid 79")
    assert "reboot" in lost.message and "hardware ticket" in lost.message
    assert diagnosis.findings[0].code == "GPU_LOST"


def test_the_words_without_an_xid_are_gpu_lost_once_with_the_xid_beside_them():
    assert [f.code for f in diagnose(_node(WORDS)).findings] == ["GPU_LOST"]
    both = [f for f in diagnose(_node(XID79, WORDS)).findings if f.code == "GPU_LOST"]
    assert len(both) == 1


def test_a_gpu_gone_from_nvidia_smi_is_named_by_its_bus():
    state = _node().replace(gpus=_node().gpus[:3])
    finding = gpu_lost_finding(state, "0000:5a:00.0", "the kernel says it has fallen off the bus")
    assert finding.gpu is None
    assert finding.message.startswith("the GPU at 0000:5a:00.0 is lost")


def test_the_repair_refuses_the_reset_path_on_a_lost_gpu():
    why = refusal(_node(WORDS))
    assert why is not None
    assert "GPU 3 (0000:5a:00.0) is lost" in why and "a GPU reset cannot bring it back" in why
    assert lost_gpu(_node()) is None
    assert refusal(_node()) is None


def test_the_story_says_the_gpu_fell_off_and_no_reset_helps():
    state = _node(XID79)
    story = node_story(state, diagnose(state))
    assert story.text == "GPU 3 fell off the bus; a reset cannot help: reboot / hardware ticket"
    assert story.severity is Severity.ERROR

"""Issue 35 items 2-3: the driver failing without an Xid (a GPU it cannot boot or does not support, an API
mismatch, a GSP timeout or dump, a module that failed to load) is a DRIVER_ERROR graded by the Xid catalogue
(a GSP timeout is Xid 119's RESET_GPU) or the bucket of the same move, never nothing and never UNREAD_EVIDENCE
alone; and the wrappers those lines came in (Talos' dmesg, gpud's scan, a journal without its host) are read.
Lines are the corpus's real ones (tests/corpus/kernel/, each file's source line says where)."""

from __future__ import annotations

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.parsers.kernel_log import parse_kernel_log, unread_kernel_lines


def _findings(text: str) -> list[tuple[str, str, str | None]]:
    entry = analyze_text(text, "paste")
    found = entry["findings"] or [f for p in entry.get("parts") or [] for f in p["findings"]]
    return [(f["code"], f["severity"], f.get("action")) for f in found]


@pytest.mark.parametrize(("text", "action"), [
    ("[  343.065531] NVRM kfspSendBootCommands_GH100: FSP boot cmds failed. RM cannot boot.\n", "RESTART_BM"),
    ("[   38.034696] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2330)\n"
     "[   38.034696] NVRM: installed in this system is not supported by the\n"
     "[   38.034696] NVRM: NVIDIA 550.90.07 driver release.\n", "UPDATE_SWFW"),
    ("Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: this "
     "kernel module has the version 530.30.02.\n", "UPDATE_SWFW"),
    ("[   24.302465] NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 812751949 heartbeat "
     "1899482 heartbeatWithOffsetMs 812745879 diff 6070 timeout 5200\n", "RESET_GPU"),
])
def test_a_driver_failure_without_an_xid_is_an_error_with_its_buckets_move(text, action):
    assert ("DRIVER_ERROR", "error", action) in _findings(text)
    assert not [f for f in _findings(text) if f[0] == "UNREAD_EVIDENCE" and f[1] == "error"]


def test_a_gsp_timeout_reads_as_xid_119_of_the_catalogue():
    text = "[   84.300488] NVRM: GPU6 _kgspLogRpcTimeout: ********************************* GSP Timeout ****\n"
    (finding,) = [f for f in analyze_text(text, "paste")["findings"] if f["code"] == "DRIVER_ERROR"]
    assert "Xid 119" in finding["message"] and finding["action"] == "RESET_GPU"


def test_a_gsp_core_dump_in_talos_dmesg_is_a_warning():
    line = ("192.168.11.119: kern: warning: [2026-04-22T21:27:51.291660856Z]: NVRM: kflcnCoreDumpNondestructive_IMPL: "
            "TRACE: 08 = 0x0000000004d4b1a0\n")
    entry = analyze_text(line * 3, "paste")
    assert entry["kind"] == "kernel-log" and entry["wrapper"]["form"] == "host-tags+talos-dmesg"
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("DRIVER_ERROR", "warning")]


def test_a_helper_module_that_failed_to_load_is_a_warning_and_the_core_module_rolling_back_an_error():
    uvm = ("Feb 15 12:31:57.623047 systemd-modules-load[1054]: Failed to insert module 'nvidia_uvm': Cannot allocate memory\n"
           "Feb 15 12:31:57.737822 kernel: nvidia-nvlink: Nvlink Core is being initialized, major device number 236\n")
    assert _findings(uvm) == [("DRIVER_ERROR", "warning", None)]
    rolled_back = ("2025-08-16T00:02:33.918242-04:00 localhost kernel: nvidia-nvlink: Nvlink Core is being initialized, "
                   "major device number 509\n"
                   "2025-08-16T00:02:33.918254-04:00 localhost kernel: nvidia-nvlink: Unregistered Nvlink Core, major "
                   "device number 509\n")
    assert _findings(rolled_back) == [("DRIVER_ERROR", "error", "RESTART_BM")]


def test_the_nvlink_core_registered_at_boot_and_unregistered_later_is_an_unload_not_a_failure():
    text = ("[    5.100000] nvidia-nvlink: Nvlink Core is being initialized, major device number 236\n"
            "[ 9000.200000] nvidia-nvlink: Unregistered Nvlink Core, major device number 236\n")
    assert parse_kernel_log(text).value == ()


def test_gpud_scan_quoting_xid_119_lines_reads_the_xid():
    text = ('⌛ scanning dmesg\n[XID found] (54 minutes ago) "NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, '
            'name=python, Timeout after 45s of waiting for RPC response from GPU4 GSP! Expected function 76."\n')
    assert ("XID", "error", "RESET_GPU") in _findings(text)


def test_check_reads_the_same_kernel_lines_the_same_way():
    text = "[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
    state = NodeState(host="n", kernel_events=parse_kernel_log(text).value, kernel_unread=unread_kernel_lines(text))
    assert [(f.code, f.severity.value) for f in diagnose(state).findings if f.code == "DRIVER_ERROR"] == [("DRIVER_ERROR", "error")]


OPEN_MODULE = ("[   60.058486] NVRM: The NVIDIA GPU 0000:2c:00.0 (PCI ID: 10de:1d16)\n"
               "               NVRM: installed in this system is not supported by open\n"
               "               NVRM: nvidia.ko because it does not include the required GPU\n")
PROBE = "[   60.063350] nvidia 0000:2c:00.0: probe with driver nvidia failed with error -1\n"


@pytest.mark.parametrize(("text", "found"), [
    # pop-os/cosmic-epoch#3411: a GPU the open module does not support; its probe failure is the consequence.
    (OPEN_MODULE + PROBE, [("DRIVER_ERROR", "error", "UPDATE_SWFW")]),
    # A probe failure nothing before it explains is an error of its own.
    (PROBE, [("DRIVER_ERROR", "error", "RESTART_BM")]),
    # CachyOS/CachyOS-PKGBUILDS#1769: the NVLink core unregistering as the driver hands the GPU to vfio-pci.
    ("sie 25 20:19:12 experience kernel: nvidia-modeset: Unloading\n"
     "sie 25 20:19:13 experience kernel: nvidia-nvlink: Unregistered Nvlink Core, major device number 237\n", []),
])
def test_unsupported_gpus_probe_failures_and_unloads(text, found):
    assert _findings(text) == found

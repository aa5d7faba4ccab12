"""Issue 35 item 4 (and 3): driver lines that name an ``NV_ERR_*`` status (by name, or by number in "failed with
status 0x...") or an NVLink failure without an Xid are read through the driver's status catalogue
(nvls_tui/catalogues/nv_status.csv) into a DRIVER_ERROR finding, which replaces the UNREAD_EVIDENCE those lines got.
Real public lines under tests/fixtures/public/kernel-log/; ``check`` reads the same kernel lines the same way."""

from __future__ import annotations

import pathlib

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.parsers.kernel_log import parse_kernel_log, unread_kernel_lines

KERNEL = pathlib.Path(__file__).parents[1] / "fixtures" / "public" / "kernel-log"


def _read(name: str) -> dict:
    return analyze_text((KERNEL / name).read_text(), name)


def _codes(entry: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in entry["findings"]]


def test_reset_required_status_is_an_error_whose_move_is_the_reset():
    entry = _read("nv-err-reset-required-no-xid-gb200.txt")
    assert _codes(entry) == [("DRIVER_ERROR", "error")]
    finding = entry["findings"][0]
    assert "NV_ERR_RESET_REQUIRED (0x00000062: Reset required)" in finding["message"]
    assert finding["action"] == "RESET_GPU" and "reset" in finding["next_move"]


def test_gpu_lost_status_by_name_and_by_number_is_one_error_a_reset_will_not_fix():
    entry = _read("nv-err-gpu-is-lost-rpc-status-dgx-a100.txt")
    assert _codes(entry) == [("DRIVER_ERROR", "error")]
    finding = entry["findings"][0]
    assert "NV_ERR_GPU_IS_LOST (0x0000000F: GPU lost from the bus)" in finding["message"]
    assert "5 lines" in finding["message"]  # the two by name and the three "failed with status 0x0000000f"
    assert finding["action"] == "RESTART_BM"


def test_an_nvlink_failure_without_an_xid_is_an_error_not_unread():
    entry = _read("nvlink-postrxdet-link-mask-failed-gh100.txt")
    assert _codes(entry) == [("DRIVER_ERROR", "error")]
    message = entry["findings"][0]["message"]
    assert "NVLink" in message and "postRxDetLinkMask failed" in message


def test_an_unremarkable_status_is_a_warning_with_the_drivers_text():
    line = ("[   87.352832] NVRM: nvCheckOkFailedNoLog: Check failed: Call not supported [NV_ERR_NOT_SUPPORTED] "
            "(0x00000056) returned from pEntry->pCallback(pGpu, pEntry->pCallbackParam) @ kernel_fifo.c:3021\n")
    entry = analyze_text(line, "k.txt")
    assert _codes(entry) == [("DRIVER_ERROR", "warning")]
    assert "NV_ERR_NOT_SUPPORTED (0x00000056" in entry["findings"][0]["message"]


def test_check_reads_the_same_lines_the_same_way():
    text = (KERNEL / "nv-err-reset-required-no-xid-gb200.txt").read_text().split("# ---\n", 1)[1]
    state = NodeState(host="gpu05", kernel_events=parse_kernel_log(text).value, kernel_unread=unread_kernel_lines(text))
    codes = [(f.code, f.severity.value) for f in diagnose(state).findings if f.code in ("DRIVER_ERROR", "UNREAD_EVIDENCE")]
    assert codes == [("DRIVER_ERROR", "error")]

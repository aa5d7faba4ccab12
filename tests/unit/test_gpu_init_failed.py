"""The mission's own example of silence: "a GPU failing RmInitAdapter read as nothing" (then, after the catalogue,
as a warning quoting NV_ERR_GENERIC). A GPU the driver could not initialise is unusable: an error naming the GPU,
whose move is a reboot (a reset cannot run on a GPU the driver did not bring up), in analyze and check alike."""

from __future__ import annotations

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import NodeState
from nvls_tui.parsers.kernel_log import parse_kernel_log

PI5 = """[    6.079514] NVRM: nvAssertOkFailedNoLog: Assertion failed: Failure: Generic Error [NV_ERR_GENERIC] (0x0000FFFF) returned from status @ kernel_gsp_tu102.c:482
[    6.079619] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM
[    6.080914] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0xffff:1863)
[    6.081257] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0
"""


def test_a_gpu_the_driver_could_not_initialise_is_an_error_naming_it():
    entry = analyze_text(PI5, "dmesg.txt")
    failed = [f for f in entry["findings"] if f["code"] == "DRIVER_ERROR" and f["severity"] == "error"]
    assert failed and "0000:01:00.0" in failed[0]["message"] and "failed to initialize" in failed[0]["message"]
    assert failed[0]["action"] == "RESTART_BM"


def test_check_reads_the_same_lines_the_same_way():
    state = NodeState("gpu01", reachable=True, kernel_events=parse_kernel_log(PI5).value)
    codes = {(f.code, f.severity.value) for f in diagnose(state).findings}
    assert ("DRIVER_ERROR", "error") in codes

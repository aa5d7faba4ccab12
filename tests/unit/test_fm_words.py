"""Fabric Manager's own words: its version-mismatch message (both versions, the advice that works) and
the ERROR/WARNING lines it logs after it configured the fabric (multicast team errors among them).

Every text here is a real public capture under tests/fixtures/fm/ (each file names its source).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.diagnosis.node import diagnose
from nvls_tui.model import GpuState, NodeState, Platform, ServiceState
from nvls_tui.parsers.base import strip_fixture_header
from nvls_tui.parsers.detect import detect_kind
from nvls_tui.parsers.fabricmanager_log import fm_log_errors, parse_fm_log, version_mismatch

FM = Path(__file__).parents[1] / "fixtures" / "fm"
MISMATCHES = {
    "version-mismatch-journal-line-gpu-operator-544.txt": ("530.30.02", "530.41.03"),
    "version-mismatch-systemctl-status-akash.txt": ("550.127.05", "550.120"),
    "version-mismatch-wrapped-driver-container-735.txt": ("590.48.01", "580.126.09"),
    "version-mismatch-quoted-nvtrust-55.txt": ("550.90.07", "550.107.02"),
}
# What never helps a version mismatch (field-notes.md 10): the advice must not send the operator there.
FUTILE = ("reset-failed", "restart", "nvidia-smi -r", "reset the GPU", "reset all GPUs")


def text(name: str) -> str:
    return strip_fixture_header((FM / name).read_text())


@pytest.mark.parametrize(("name", "versions"), sorted(MISMATCHES.items()))
def test_fm_s_mismatch_words_name_both_versions(name, versions):
    body = text(name)
    assert detect_kind(body) == "fabricmanager-log"
    assert version_mismatch(parse_fm_log(body).value) == versions


@pytest.mark.parametrize(("name", "versions"), sorted(MISMATCHES.items()))
def test_analyze_says_fm_version_mismatch_with_both_versions_and_the_package_move(name, versions):
    entry = analyze_text((FM / name).read_text(), name)
    fm, driver = versions
    assert entry["kind"] == "fabricmanager-log"
    assert entry["data"]["mismatch"] == {"fm_version": fm, "driver_version": driver}
    (finding,) = [f for f in entry["findings"] if f["code"] == "FM_VERSION_MISMATCH"]
    assert finding["severity"] == "error"
    message = finding["message"]
    assert f"Fabric Manager {fm}" in message and f"driver {driver}" in message
    assert f"nvidia-fabricmanager package of version {driver}" in message and "hold" in message
    assert not any(word in message for word in FUTILE)
    assert "do not help" in message  # says why the usual moves are left out


def test_check_s_mismatch_advice_is_the_same_as_analyze_s():
    # FM --version 550.127.05 against driver 550.120 on an HGX board: the words of check's finding are
    # analyze's for the same two versions.
    state = NodeState(host="gpu01", platform=Platform.HGX_H100, driver="550.120", fm_version="550.127.05",
                      gpus=(GpuState(index=0, bus_id="00000000:18:00.0", name="NVIDIA H100 80GB HBM3", uuid="GPU-0"),),
                      services=(ServiceState(name="nvidia-fabricmanager.service", active="failed", sub="failed",
                                             load="loaded", result="exit-code"),))
    found = next(f for f in diagnose(state).findings if f.code == "FM_VERSION_MISMATCH")
    analyzed = analyze_text(text("version-mismatch-systemctl-status-akash.txt"), "f")
    assert found.message == next(f["message"] for f in analyzed["findings"] if f["code"] == "FM_VERSION_MISMATCH")
    fm_down = next(f for f in diagnose(state).findings if f.code == "FM_NOT_RUNNING")
    assert "reset" not in fm_down.message  # the mismatch, not a reset, is what keeps FM down


def test_the_mismatch_journal_also_reads_the_failed_start():
    events = parse_fm_log(text("version-mismatch-systemctl-status-akash.txt")).value
    assert [e.code for e in events] == [None, "VERSION_MISMATCH", "FAILED"]


def test_multicast_team_errors_after_the_configuration_are_errors_not_silence():
    body = text("log-multicast-team-errors-nccl-1043.txt")
    errors = fm_log_errors(parse_fm_log(body).value)
    assert [(e.level, e.timestamp) for e in errors] == [("ERROR", "Oct 31 2023 20:59:37"),
                                                        ("ERROR", "Oct 31 2023 21:04:55")]
    entry = analyze_text(body, "fabricmanager.log")
    (finding,) = [f for f in entry["findings"] if f["code"] == "FM_LOG_ERROR"]
    assert finding["severity"] == "error"
    assert finding["message"].startswith("Fabric Manager logged 2 errors after it configured the fabric "
                                         "(multicast team errors: NVLS multicast setup fails)")
    assert "failed to find the GPU handle 12766911663723876521 in the multicast team" in finding["message"]
    assert "Oct 31 2023 21:04:55" in finding["message"]
    assert "reset all GPUs and NVSwitches" in finding["message"]


def test_lines_before_the_configuration_or_of_level_info_are_not_fm_log_errors():
    body = text("log-multicast-team-errors-nccl-1043.txt")
    # Everything up to the last ERROR line, then the configuration again: nothing after it is an error.
    lines = body.splitlines()
    configured = next(line for line in lines if "Successfully configured" in line)
    again = "\n".join(lines + [configured.replace("Oct 31 2023 20:45:27", "Oct 31 2023 21:30:00")])
    assert fm_log_errors(parse_fm_log(again).value) == ()
    assert not [f for f in analyze_text(again, "f")["findings"] if f["code"] == "FM_LOG_ERROR"]


def test_a_log_without_the_configured_line_cannot_say_what_came_after_it():
    body = text("log-multicast-team-errors-nccl-1043.txt")
    cut = "\n".join(line for line in body.splitlines() if "Successfully configured" not in line)
    # No configuration seen: the errors still count (unknown is not healthy), and the words say so.
    entry = analyze_text(cut, "f")
    (finding,) = [f for f in entry["findings"] if f["code"] == "FM_LOG_ERROR"]
    assert finding["severity"] == "error"
    assert "no successful configuration in this text" in finding["message"]


def test_warning_lines_alone_are_a_warning():
    body = text("log-multicast-team-errors-nccl-1043.txt").replace("[ERROR]", "[WARNING]").replace(
        "multicast team", "team")
    (finding,) = [f for f in analyze_text(body, "f")["findings"] if f["code"] == "FM_LOG_ERROR"]
    assert finding["severity"] == "warning"
    assert finding["message"].startswith("Fabric Manager logged 2 warnings after it configured the fabric")


def test_fm_s_own_prefix_inside_a_journal_line_gives_its_level():
    events = parse_fm_log(text("journal-inner-log-prefix-bottlerocket-142.txt")).value
    assert [(e.level, e.message[:25]) for e in events] == [("INFO", "GPU probe request receive"),
                                                          ("INFO", "received GPU Probe Reques")]


def test_prose_about_a_mismatch_is_not_an_fm_log():
    prose = ("We saw that the fabric manager version did not match the driver, so we upgraded both.\n"
             "Please update with matching NVIDIA driver package, the docs say.\n")
    assert detect_kind(prose) != "fabricmanager-log"

"""Issue 35 item 4: Fabric Manager that never started (its start script failed, in the GPU Operator's driver
container log or in the journal) is FM_NOT_RUNNING, and ``systemctl status nvidia-fabricmanager`` reads the journal
lines under its status block through the FM log reader too (findings of both). Real public samples under
tests/fixtures/public/fabricmanager/."""

from __future__ import annotations

import pathlib

from nvls_tui.analyze.captured import analyze_text

FM = pathlib.Path(__file__).parents[1] / "fixtures" / "public" / "fabricmanager"
FM_OWN = pathlib.Path(__file__).parents[1] / "fixtures" / "fm"


def _read(name: str) -> dict:
    return analyze_text((FM / name).read_text(), name)


def _codes(entry: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in entry["findings"]]


def test_driver_container_log_whose_fm_start_script_fails_is_fm_not_running():
    entry = _read("driver-container-fm-start-script-unknown-option.txt")
    assert entry["kind"] == "fabricmanager-log"
    assert _codes(entry) == [("FM_NOT_RUNNING", "error")]
    message = entry["findings"][0]["message"]
    assert "start script" in message and "Unknown option: /usr/share/nvidia/nvswitch/fabricmanager.cfg" in message


def test_journal_whose_start_script_reports_fm_failed_is_fm_not_running_not_unread():
    entry = _read("journal-start-script-failed-nothing-to-do.txt")
    assert entry["kind"] == "fabricmanager-log"
    codes = _codes(entry)
    assert codes[0] == ("FM_NOT_RUNNING", "error")
    message = entry["findings"][0]["message"]
    assert "Exit code: 1" in message and "NV_WARN_NOTHING_TO_DO" in message
    assert "UNREAD_EVIDENCE" not in [c for c, _ in codes]


def test_a_start_script_failure_followed_by_a_good_start_is_not_fm_not_running():
    text = (FM / "journal-start-script-failed-nothing-to-do.txt").read_text() + (
        'Sep 18 03:25:40 ubuntu2404 nvidia-fabricmanager-start.sh[5120]: Started "Nvidia Fabric Manager"\n'
        "Sep 18 03:25:40 ubuntu2404 systemd[1]: Started nvidia-fabricmanager.service - NVIDIA fabric manager service.\n")
    entry = analyze_text(text, "j.txt")
    assert "FM_NOT_RUNNING" not in [c for c, _ in _codes(entry)]


def test_status_of_a_failed_unit_reads_its_journal_lines_too():
    entry = _read("systemctl-status-failed-killed-nvsentinel.txt")
    assert entry["kind"] == "systemctl-status"
    assert _codes(entry) == [("FM_NOT_RUNNING", "error")]
    assert [e["code"] for e in entry["data"]["log"]["events"]] == ["FAILED"]


def test_status_of_an_active_unit_with_fm_errors_under_it_gives_both_findings():
    # The public B300 status block (active), with FM's own ERROR line under it in the journal's form of FM's
    # inner log (as tests/fixtures/fm/journal-inner-log-prefix-bottlerocket-142.txt shows it), the words from
    # tests/fixtures/fm/log-multicast-team-errors-nccl-1043.txt.
    status = (FM / "systemctl-status-active-b300-nvlsm.txt").read_text().replace("lines 1-22/22 (END)\n", "")
    text = status + ("Aug 27 09:40:02 dell nv-fabricmanager[31082]: [Aug 27 2026 09:40:02] [ERROR] [tid 31120] failed to "
                     "release multicast team with handle 17117060486525261364, cannot find the team\n")
    entry = analyze_text(text, "s.txt")
    assert entry["kind"] == "systemctl-status"
    assert entry["data"]["active"] == "active"
    assert ("FM_LOG_ERROR", "error") in _codes(entry) or ("FM_LOG_ERROR", "warning") in _codes(entry)
    assert "FM_NOT_RUNNING" not in [c for c, _ in _codes(entry)]
    assert any(e["code"] == "CONFIGURED" for e in entry["data"]["log"]["events"])


def test_status_with_a_version_mismatch_under_it_names_the_mismatch():
    body = (FM_OWN / "version-mismatch-systemctl-status-akash.txt").read_text()
    journal = [ln for ln in body.splitlines() if " nv-fabricmanager[" in ln or " systemd[" in ln]
    text = ("× nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
            "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)\n"
            "     Active: failed (Result: exit-code) since Tue 2024-11-05 13:55:26 UTC; 5s ago\n\n" + "\n".join(journal) + "\n")
    entry = analyze_text(text, "s.txt")
    codes = [c for c, _ in _codes(entry)]
    assert entry["kind"] == "systemctl-status"
    assert "FM_NOT_RUNNING" in codes and "FM_VERSION_MISMATCH" in codes

"""The incident report: Markdown from an audit log, whole or cut short by a kill."""

from __future__ import annotations

import argparse

from nvls_tui.headless import report as report_cmd
from nvls_tui.model import SmokeResult
from nvls_tui.records.audit import AuditLog
from nvls_tui.records.report import load_audit_log, render_report, report_from_file
from nvls_tui.runbook.events import (
    CommandFinished,
    NodeObserved,
    ProcessSignalled,
    RunFinished,
    RunStarted,
    SmokeFinished,
    SmokeRow,
    StepFinished,
    StepStarted,
)

BEFORE = {"verdict": "broken", "findings": ["FM_NOT_RUNNING", "FABRIC_OUT_OF_SYNC"],
          "units": {"nvidia-fabricmanager.service": "failed", "kubelet.service": "active"},
          "fabric": [{"index": i, "state": "Completed", "status": "Success"} for i in range(8)],
          "holders": [{"pid": 37538}], "kernel_events": ["NV_ERR_FABRIC_STATE_OUT_OF_SYNC"],
          "driver": "580.82.07", "fm_version": "580.82.07"}
AFTER = {**BEFORE, "verdict": "healthy", "findings": [], "holders": [], "kernel_events": [],
         "units": {"nvidia-fabricmanager.service": "active", "kubelet.service": "active"},
         "smoke": {"avg_busbw": 291.9, "passed": True}}


def write_run(path, *, finished: bool = True) -> None:
    with AuditLog(path, operator="kim") as log:
        log(RunStarted(host="gpu05", run_id="r1"))
        log(NodeObserved(host="gpu05", step="preflight", label="before", summary=BEFORE))
        log(StepStarted(host="gpu05", step="quiesce"))
        log(CommandFinished(host="gpu05", step="quiesce", argv=("systemctl", "stop", "kubelet.service"), exit_status=0))
        log(ProcessSignalled(host="gpu05", step="quiesce", pid=37538, signal="SIGTERM",
                             command="/usr/bin/dcgm-exporter", holder_kind="dcgm-exporter", outcome="signalled"))
        log(StepFinished(host="gpu05", step="quiesce", status="ok", duration=2.5))
        if not finished:
            return
        log(SmokeRow(host="gpu05", step="smoke-test", size=8388608, busbw=230.5, row={"oop_busbw": 230.5,
                                                                                      "ip_busbw": 231.0}))
        log(SmokeFinished(host="gpu05", step="smoke-test",
                          smoke=SmokeResult(avg_busbw=291.942, passed=True, out_of_bounds=0, nvls_used=True,
                                            completed=True, threshold=250.0)))
        log(NodeObserved(host="gpu05", step="restore", label="after", summary=AFTER))
        log(RunFinished(host="gpu05", result="repaired", message="NVLS works again"))


def test_the_report_has_timeline_before_after_holders_stopped_and_smoke_results(tmp_path):
    write_run(tmp_path / "log.jsonl")
    text = report_from_file(tmp_path / "log.jsonl")
    assert text.startswith("# NVLS repair incident report")
    assert "| gpu05 | repaired | 291.942 |" in text
    assert "| verdict | broken | healthy |" in text
    assert "| Fabric Manager | failed | active |" in text
    assert "| 37538 | dcgm-exporter | /usr/bin/dcgm-exporter | SIGTERM | signalled |" in text
    assert "Units stopped: `kubelet.service`" in text
    assert "passed: average bus bandwidth 291.942 GB/s (threshold 250.0)" in text
    assert "`systemctl stop kubelet.service` → exit 0" in text
    assert "operator: kim" in text


def test_a_log_cut_by_a_kill_reports_the_node_unfinished_and_skips_the_torn_line(tmp_path):
    path = tmp_path / "log.jsonl"
    write_run(path, finished=False)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"event": "command-sta')  # what a kill -9 mid-write leaves
    contents = load_audit_log(path)
    assert len(contents.unreadable) == 1 and len(contents.records) == 6
    text = render_report(contents, str(path))
    assert "**Unfinished**" in text and "repair --restore gpu05" in text
    assert "| gpu05 | unfinished |" in text
    assert "1 unreadable line(s) skipped" in text


def test_the_report_command_writes_the_file_or_says_why_it_cannot(tmp_path, capsys):
    write_run(tmp_path / "log.jsonl")
    out = tmp_path / "incident.md"
    assert report_cmd.run(argparse.Namespace(log=str(tmp_path / "log.jsonl"), output=str(out))) == 0
    assert "## gpu05" in out.read_text()
    assert report_cmd.run(argparse.Namespace(log=str(tmp_path / "missing.jsonl"), output=None)) == 2
    err = capsys.readouterr().err
    assert err.startswith("nvls-tui: cannot read audit log") and "Traceback" not in err

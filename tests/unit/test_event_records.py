"""The audit record is the serialized runbook event: one schema, written by ``to_record`` and read back by
``from_record`` into the same event; logs written before the format was named still read and render."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvls_tui.audit.log import AuditLog, event_record
from nvls_tui.model import Holder, HolderKind, SmokeResult
from nvls_tui.model.scheduler import Job
from nvls_tui.report.markdown import load_audit_log, render_report
from nvls_tui.runbook import events as ev
from nvls_tui.runbook.event_records import EVENT_KINDS, NotAnEvent, from_record, record_problem

FIXTURES = Path(__file__).parents[1] / "fixtures" / "audit-v1"
AT = 1_764_648_000.125  # a time the record keeps exactly (it writes milliseconds)

HOLDER = Holder(pid=4242, user="alice", command="python3 train.py", kind=HolderKind.CUDA_APP,
                devices=("/dev/nvidia0", "/dev/nvidiactl"), unit=None, pod="ns/pod", start_time="Mon Aug 10 15:45:34 2026",
                ppid=1, job=Job(id=77, user="alice", name="train|a\nb", end="2026-08-10T18:00:00", state="RUNNING"))
SMOKE = SmokeResult(avg_busbw=291.9, passed=True, out_of_bounds=0, nvls_used=True, completed=True, errors=("none",),
                    threshold=250.0, at="2026-08-15T16:20:00+00:00", boot_id="b0", uptime=12.5)
EVERY_EVENT = [
    ev.RunStarted(host="gpu05", at=AT, run_id="r1", dry_run=True, mode="repair"),
    ev.StepStarted(host="gpu05", step="quiesce", at=AT),
    ev.StepFinished(host="gpu05", step="quiesce", at=AT, status="planned", duration=1.5, message="m",
                    commands=("systemctl stop x", "fuser -v /dev/nvidia0")),
    ev.CommandStarted(host="gpu05", step="reset", at=AT, argv=("nvidia-smi", "-r"), env={"NCCL_ALGO": "NVLS"}),
    ev.CommandFinished(host="gpu05", step="reset", at=AT, argv=("nvidia-smi", "-r"), exit_status=None, output="out\n",
                       duration=0.25, error="timed out"),
    ev.OutputLine(host="gpu05", step="smoke-test", at=AT, line="#  size  count"),
    ev.NodeObserved(host="gpu05", step="preflight", at=AT, label="before",
                    summary={"reachable": True, "platform": "hgx-h100", "verdict": "broken", "findings": ["X"]}),
    ev.HoldersRemaining(host="gpu05", step="verify-no-holders", at=AT, holders=(HOLDER,), waiting=True, message="wait",
                        elapsed=3.0, limit=None),
    ev.ProcessSignalled(host="gpu05", step="quiesce", at=AT, pid=4242, signal="SIGTERM", command="dcgm-exporter",
                        holder_kind="dcgm-exporter", outcome="signalled"),
    ev.FabricProgress(host="gpu05", step="fabric-manager", at=AT, unit="active", states={"In Progress": 8},
                      elapsed=2.0, limit=300.0),
    ev.WaitStarted(host="gpu05", step="reset", at=AT, wait="reset", limit=120.0, state="resetting", command=True),
    ev.SmokeRow(host="gpu05", step="smoke-test", at=AT, size=8388608, busbw=290.5,
                row={"size": 8388608, "oop_busbw": 290.5, "ip_busbw": 291.0, "oop_time_us": 55.0}),
    ev.SmokeFinished(host="gpu05", step="smoke-test", at=AT, smoke=SMOKE),
    ev.Restored(host="gpu05", step="restore", at=AT, units=("nvidia-dcgm.service",), persistence_gpus=(0, 1),
                failed=("kubelet.service",)),
    ev.Note(host="gpu05", at=AT, message="lock taken over", level="warning"),
    ev.RunFinished(host="gpu05", at=AT, result="aborted", message="aborted at reset", duration=42.0),
    ev.ManualChanged(host="gpu05", step="unit-stop", at=AT,
                     change={"what": "stopped", "at": AT, "unit": "nvidia-dcgm.service", "before": "active", "pid": None,
                             "command": None, "holder_kind": None, "signal": None}),
    ev.ManualChanges(host="gpu05", step="preflight", at=AT, put_back=False,
                     changes=({"what": "stopped", "at": AT, "unit": "nvidia-dcgm.service", "before": "active"},)),
]


def test_every_kind_of_runbook_event_is_in_the_round_trip():
    assert {type(e) for e in EVERY_EVENT} == set(EVENT_KINDS.values())


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda e: e.kind)
def test_an_event_read_back_from_its_audit_record_is_the_same_event(event, tmp_path):
    log = AuditLog(tmp_path / "repair-r1.jsonl")
    log(event)
    log.close()
    record = json.loads((tmp_path / "repair-r1.jsonl").read_text())
    assert record["schema"] == ev.SCHEMA and record["event"] == event.kind
    assert from_record(record) == event


def test_the_audit_record_is_the_events_own_record_with_secrets_redacted():
    event = ev.CommandStarted(host="gpu05", step="smoke-test", at=AT, argv=("curl", "--token=abc123"),
                              env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123"})
    record = event_record(event)
    assert record == {**event.to_record(), "argv": ["curl", "--token=[redacted]"], "env": {"HF_TOKEN": "[redacted]"}}


def test_a_signal_is_recorded_as_the_kill_command_it_is():
    assert EVERY_EVENT[8].to_record()["argv"] == ["kill", "-TERM", "4242"]


@pytest.mark.parametrize("name", ["repair-seed-incident-gpu05", "repair-refused-gb200", "restore-hostile-record",
                                  "session-by-hand"])
def test_a_log_written_before_the_format_was_named_reads_into_events_and_renders_the_same_report(name):
    contents = load_audit_log(FIXTURES / f"{name}.jsonl")
    assert contents.unreadable == []
    events = [r.event for r in contents.records if r.kind != "audit-opened"]
    assert events and all(isinstance(e, ev.RunbookEvent) for e in events)
    assert render_report(contents, f"{name}.jsonl") == (FIXTURES / f"{name}.md").read_text(encoding="utf-8")


def test_the_old_logs_hold_every_event_the_runs_wrote_in_order():
    lines = (FIXTURES / "repair-seed-incident-gpu05.jsonl").read_text().splitlines()
    kinds = [from_record(json.loads(line)).kind for line in lines[1:]]
    assert kinds[0] == "run-started" and kinds[-1] == "run-finished"
    assert {"node-observed", "command-finished", "smoke-finished", "restored", "process-signalled"} <= set(kinds)


def first(event: str) -> dict:
    lines = (FIXTURES / "repair-seed-incident-gpu05.jsonl").read_text().splitlines()
    return next(json.loads(line) for line in lines if f'"event": "{event}"' in line)


def test_a_record_that_does_not_decode_into_its_event_is_a_bad_line_that_says_why():
    finished = {k: v for k, v in first("command-finished").items() if k != "exit_status"}
    assert record_problem(finished) == "a `command-finished` record without `exit_status`"
    signalled = {**first("process-signalled"), "pid": None}
    assert record_problem(signalled) == "a `process-signalled` record without `pid`"
    with pytest.raises(NotAnEvent, match="no runbook event"):
        from_record({"event": "audit-opened", "node": None, "kind": "repair", "run_id": "r1"})


def test_a_holder_of_a_kind_nvls_tui_does_not_know_is_a_bad_line():
    record = ev.HoldersRemaining(host="gpu05", at=AT, holders=(HOLDER,)).to_record()
    record["holders"][0]["kind"] = "quantum-daemon"
    assert record_problem(record) == "`holders` names a holder kind 'quantum-daemon' nvls-tui does not know"


def test_a_record_of_a_newer_format_is_a_bad_line_not_read_as_this_one():
    assert record_problem({**first("run-started"), "schema": 2}) == "record format 2, not the 1 this nvls-tui reads"


def test_a_record_that_is_no_runbook_event_is_read_by_its_fields_alone():
    assert record_problem({"time": "2026-12-02T04:01:28.000+00:00", "event": "audit-opened", "node": None,
                           "kind": "repair", "run_id": "r1"}) is None


def test_a_report_names_a_record_that_does_not_decode_and_renders_the_rest(tmp_path):
    lines = (FIXTURES / "repair-seed-incident-gpu05.jsonl").read_text().splitlines()
    broken = {k: v for k, v in json.loads(next(x for x in lines if '"run-finished"' in x)).items() if k != "result"}
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join([*lines, json.dumps(broken)]) + "\n")
    report = render_report(load_audit_log(path), "log")
    assert f"  - line {len(lines) + 1}: a `run-finished` record without `result`" in report

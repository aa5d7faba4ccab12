"""The audit log: append-only JSONL, one fsynced record per event, bounded output, no secrets."""

from __future__ import annotations

import json
import os
import stat

from nvls_tui.records.audit import (
    OUTPUT_LIMIT,
    AuditLog,
    default_audit_dir,
    redact_env,
    redact_text,
)
from nvls_tui.runbook.events import CommandFinished, CommandStarted, ProcessSignalled

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"


def lines(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_each_event_becomes_one_record_with_time_node_step_argv_status_output_operator_and_dry_run(tmp_path):
    with AuditLog.create(tmp_path, "run1", operator="kim") as log:
        log(CommandStarted(host="gpu05", step="reset", argv=("nvidia-smi", "-r")))
        log(CommandFinished(host="gpu05", step="reset", argv=("nvidia-smi", "-r"), exit_status=0,
                            output="All done.\n", duration=1.5))
    opened, *records = lines(tmp_path / "repair-run1.jsonl")
    assert opened["event"] == "audit-opened" and opened["run_id"] == "run1"  # the proof it can be written
    assert [r["event"] for r in records] == ["command-started", "command-finished"]
    last = records[-1]
    assert last["node"] == "gpu05" and last["step"] == "reset" and last["argv"] == ["nvidia-smi", "-r"]
    assert last["exit_status"] == 0 and last["output"] == "All done.\n"
    assert last["operator"] == "kim" and last["dry_run"] is False and last["time"].endswith("+00:00")


def test_records_are_appended_never_rewritten_and_the_file_is_private(tmp_path):
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, operator="a") as log:
        log.write({"event": "first"})
    with AuditLog(path, operator="b") as log:
        log.write({"event": "second"})
    assert [r["event"] for r in lines(path)] == ["first", "second"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_every_write_reaches_the_file_before_the_next_event(tmp_path):
    """A kill -9 right after an event must find it on disk: nothing is buffered in the process."""
    log = AuditLog(tmp_path / "a.jsonl", operator="k")
    log.write({"event": "one"})
    assert lines(tmp_path / "a.jsonl")[0]["event"] == "one"  # read back while the log is still open
    log.close()


def test_output_is_bounded_keeping_head_and_tail(tmp_path):
    with AuditLog(tmp_path / "a.jsonl", operator="k") as log:
        log(CommandFinished(host="n", step="s", argv=("x",), exit_status=0, output="A" * 50_000 + "TAIL"))
    out = lines(tmp_path / "a.jsonl")[0]["output"]
    assert len(out) < OUTPUT_LIMIT + 100 and out.startswith("AAA") and out.endswith("TAIL")
    assert "characters left out" in out


def test_secrets_in_env_output_and_argv_never_reach_the_log(tmp_path):
    with AuditLog(tmp_path / "a.jsonl", operator="k") as log:
        log(CommandStarted(host="n", step="s", argv=("tool", "--password=hunter2"),
                           env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz123456", "NCCL_ALGO": "NVLS"}))
        log(CommandFinished(host="n", step="s", argv=("cat",), exit_status=0,
                            output=f"key follows\n{KEY}\nAuthorization: Bearer abcdef0123456789abcdef\n"))
    text = (tmp_path / "a.jsonl").read_text()
    assert "hunter2" not in text and "hf_abcdef" not in text and "b3BlbnNzaC1rZXktdjEAAAAA" not in text
    assert "abcdef0123456789abcdef" not in text
    started = lines(tmp_path / "a.jsonl")[0]
    assert started["env"] == {"HF_TOKEN": "[redacted]", "NCCL_ALGO": "NVLS"}


def test_a_signal_is_recorded_as_the_kill_command_it_amounts_to(tmp_path):
    with AuditLog(tmp_path / "a.jsonl", operator="k") as log:
        log(ProcessSignalled(host="gpu05", step="quiesce", pid=37538, signal="SIGTERM",
                             command="/usr/bin/dcgm-exporter", holder_kind="dcgm-exporter", outcome="signalled"))
    record = lines(tmp_path / "a.jsonl")[0]
    assert record["argv"] == ["kill", "-TERM", "37538"] and record["outcome"] == "signalled"


def test_the_default_directory_follows_xdg_state_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_audit_dir() == tmp_path / "nvls-tui" / "audit"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert str(default_audit_dir()).endswith(".local/state/nvls-tui/audit")


def test_ordinary_words_and_values_are_left_alone():
    assert redact_text("sudo: a password is required") == "sudo: a password is required"
    assert redact_env({"NCCL_DEBUG": "INFO"}) == {"NCCL_DEBUG": "INFO"}

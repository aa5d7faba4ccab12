"""The audit log: append-only JSONL, one fsynced record per event, bounded output, no secrets."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from nvls_tui.audit.log import (
    OUTPUT_LIMIT,
    AuditLog,
    default_audit_dir,
    redact_env,
    redact_text,
)
from nvls_tui.poll.probe import STATE_DIR
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


def on_a_full_disk(log: AuditLog) -> AuditLog:
    """``log`` with its file swapped for /dev/full: the kernel answers every write with ENOSPC."""
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, log._fd)
    os.close(full)
    return log


async def test_records_the_audit_log_cannot_take_go_to_a_private_fallback_in_another_directory(tmp_path):
    from nvls_tui.audit.writer import AuditWriter

    failures: list[str] = []
    log = on_a_full_disk(AuditLog.create(tmp_path / "audit", "r1", operator="kim"))
    with AuditWriter(log, lambda exc: failures.append(str(exc))) as writer:
        writer(CommandStarted(host="gpu05", step="restore", argv=("systemctl", "start", "kubelet.service")))
        assert await writer.flush() is False  # the log failed: only the restore may still go on
        writer(CommandFinished(host="gpu05", step="restore", argv=("systemctl", "start", "kubelet.service"),
                               exit_status=0))
        assert await writer.flush() is False
    fallback = Path(os.environ["XDG_STATE_HOME"]) / "nvls-tui" / "audit-fallback" / "repair-r1.jsonl"
    assert failures == [f"the audit log {log.path} could not be written: No space left on device; "
                        f"what it could not take is in {fallback}"]
    records = lines(fallback)
    assert [r["event"] for r in records] == ["audit-fallback", "command-started", "command-finished"]
    assert records[0]["failed_log"] == str(log.path) and records[0]["run_id"] == "repair-r1"
    assert records[2]["argv"] == ["systemctl", "start", "kubelet.service"] and records[2]["exit_status"] == 0
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o600 and stat.S_IMODE(fallback.parent.stat().st_mode) == 0o700


async def test_with_no_directory_to_fall_back_to_the_records_go_to_standard_error(tmp_path, monkeypatch, capsys):
    from nvls_tui.audit import writer as audit_writer

    failures: list[str] = []
    monkeypatch.setattr(audit_writer, "fallback_dirs", lambda: [Path("/dev/null/not-a-directory")])
    log = on_a_full_disk(AuditLog.create(tmp_path / "audit", "r1", operator="kim"))
    with audit_writer.AuditWriter(log, lambda exc: failures.append(str(exc))) as writer:
        writer(CommandFinished(host="gpu05", step="restore", argv=("systemctl", "start", "kubelet.service"),
                               exit_status=0))
        assert await writer.flush() is False
    assert failures[0].endswith("; what it could not take is on standard error")
    kept = [json.loads(line.removeprefix("nvls-tui: audit record: ")) for line in capsys.readouterr().err.splitlines()]
    assert [r["event"] for r in kept] == ["audit-fallback", "command-finished"]
    assert kept[1]["argv"] == ["systemctl", "start", "kubelet.service"]


async def test_the_message_the_console_shows_when_its_session_log_fails_names_the_fallback(tmp_path):
    """The console shows ``on_audit_failure``'s message as it comes. A unit stop is refused at its first
    command, the lock's (only the restore goes on without the log); that command's records are in the fallback."""
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.runbook.session import Session
    from nvls_tui.sim.fleet import load_fleet

    messages: list[str] = []
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    session = Session({b.host: b for b in sim_backends(fleet)}, audit_dir=str(tmp_path / "audit"),
                      on_audit_failure=messages.append)
    on_a_full_disk((await session.session_log()).log)
    outcome = await session.unit("gpu05", "stop", "nvidia-dcgm.service")
    await session.close()
    fallback = next((Path(os.environ["XDG_STATE_HOME"]) / "nvls-tui" / "audit-fallback").glob("session-*.jsonl"))
    assert not outcome.ok and messages and messages[0].endswith(f"what it could not take is in {fallback}")
    records = lines(fallback)
    assert [r["argv"] for r in records if r["event"] == "command-started"] == [["mkdir", "-p", STATE_DIR]]
    assert [r["error"] for r in records if r["event"] == "command-finished"] == [
        "not sent: the audit log could not be written"]

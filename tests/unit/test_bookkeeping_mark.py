"""Issue 36: which commands are the repair's own lock, record and clock is said where they are sent (the change's
or the read's ``bookkeeping`` mark, written into each ``command-started`` record); the report's timeline folds
by that mark, never by the command's words. A log written before the mark is judged as before (its report
stays what it was: tests/fixtures/audit-v1)."""

from __future__ import annotations

from nvls_tui.audit.log import AuditLog
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.poll.fence import OWNER_FILE
from nvls_tui.poll.probe import LOCK_DIR, RECORD_FILE
from nvls_tui.report.markdown import report_from_file
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.events import CommandFinished, CommandStarted, RunbookEvent, RunFinished, RunStarted
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_plan_is_the_run import FAST, SPEED


async def repaired_gpu06() -> list[CommandStarted]:
    """The commands a repair of the seed incident's gpu06 sends (on the simulator), as their starts say them."""
    events: list[RunbookEvent] = []
    (backend,) = [b for b in sim_backends(load_fleet("sim:seed-incident", speed=SPEED)) if b.host == "gpu06"]
    outcome = await Runbook(backend, FAST, run_id="r1", on_event=events.append).run()
    assert outcome.result == "repaired", outcome.message
    return [e for e in events if isinstance(e, CommandStarted)]


async def test_a_run_marks_each_command_it_sends_and_only_its_own_lock_record_and_clock():
    started = await repaired_gpu06()
    assert started and all(isinstance(e.bookkeeping, bool) for e in started)
    marked = {e.argv for e in started if e.bookkeeping}
    assert {("mkdir", LOCK_DIR), ("mv", "-f", f"{OWNER_FILE}.tmp", OWNER_FILE), ("rmdir", LOCK_DIR),
            ("cat", OWNER_FILE), ("cat", RECORD_FILE), ("rm", "-f", RECORD_FILE)} <= marked
    assert not any(argv[0] in ("systemctl", "nvidia-smi", "kill", "all_reduce_perf") for argv in marked)


def write(path, *commands: tuple[tuple[str, ...], bool | None]) -> None:
    with AuditLog(path, operator="kim") as log:
        log(RunStarted(host="gpu05", run_id="r1"))
        for argv, mark in commands:
            log(CommandStarted(host="gpu05", step="preflight", argv=argv, bookkeeping=mark))
            log(CommandFinished(host="gpu05", step="preflight", argv=argv, exit_status=0))
        log(RunFinished(host="gpu05", result="repaired", message="ok"))


def test_the_timeline_folds_by_the_mark_not_by_the_words(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    # A `date` the run did not mark is listed; a command it marked is folded whatever its words.
    write(path, (("date", "+%s"), False), (("hostname",), True), (("uname", "-r"), True))
    report = report_from_file(path)
    assert "date +%s" in report
    assert "hostname" not in report and "| preflight | bookkeeping: 2 commands, all exit 0 |" in report


def test_a_log_written_before_the_mark_is_folded_as_before(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    write(path, (("date", "+%s"), None), (("mkdir", LOCK_DIR), None), (("hostname",), None))
    report = report_from_file(path)
    assert "| preflight | bookkeeping: 2 commands, all exit 0 |" in report and "hostname" in report

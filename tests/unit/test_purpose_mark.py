"""Issue 36 item 1: what a logged command was for (a registration poll, the node's clock, the holders' read, Fabric
Manager's start) is a typed mark of its record (``CommandStarted.purpose``), set where the command is sent and read
back through runbook/log_entries; the report reads the mark, never the command's words. A log written before the
mark is judged as those versions judged it (its report stays what it was: tests/fixtures/audit-v1)."""

from __future__ import annotations

import dataclasses

from nvls_tui.audit.log import AuditLog
from nvls_tui.report.markdown import report_from_file
from nvls_tui.runbook.events import (
    CLOCK,
    FABRIC_POLL,
    FABRIC_START,
    HOLDERS,
    CommandFinished,
    CommandStarted,
    RunbookEvent,
    RunFinished,
    RunStarted,
)
from nvls_tui.runbook.fabric import FABRIC_QUERY
from nvls_tui.runbook.log_entries import LogEntry, paired, read_entry
from nvls_tui.runbook.steps import DATE_ARGV, FM_UNIT
from tests.unit.test_bookkeeping_mark import repaired_gpu06


async def test_a_run_marks_its_polls_clock_holders_read_and_fabric_managers_start():
    started = await repaired_gpu06()
    assert started and all(isinstance(e.purpose, str) for e in started)
    marks = {e.argv: e.purpose for e in started}
    assert marks[DATE_ARGV] == CLOCK and marks[FABRIC_QUERY] == FABRIC_POLL
    assert marks[("systemctl", "is-active", FM_UNIT)] == FABRIC_POLL
    assert marks[("systemctl", "start", FM_UNIT)] == FABRIC_START
    assert {e.purpose for e in started if e.argv[0] == "fuser"} == {HOLDERS}
    # Only the commands a reader needs to know are marked: no stop, reset, signal or smoke test.
    assert all(marks[a] == "" for a in marks if a[0] in ("nvidia-smi", "systemctl", "all_reduce_perf")
               and a not in (FABRIC_QUERY, ("systemctl", "is-active", FM_UNIT), ("systemctl", "start", FM_UNIT)))


def write(path, *commands: tuple[tuple[str, ...], str | None, str]) -> None:
    """A log of one run: each command ``(argv, purpose, output)`` sent in preflight, exit 0."""
    with AuditLog(path, operator="kim") as log:
        log(RunStarted(host="gpu05", run_id="r1", at=1786810200.0))
        for argv, purpose, output in commands:
            log(CommandStarted(host="gpu05", step="preflight", argv=argv, purpose=purpose, at=1786810200.2))
            log(CommandFinished(host="gpu05", step="preflight", argv=argv, exit_status=0, output=output,
                                at=1786810200.4))
        log(RunFinished(host="gpu05", result="repaired", message="ok", at=1786810201.0))


def test_the_clock_is_measured_by_the_mark_not_by_the_words(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    # The marked read measures the node's clock (an hour ahead), whatever its words; the same words unmarked do not.
    write(path, (DATE_ARGV, "", "2026-08-15 16:10:00\n"), (("date", "+%F %T"), CLOCK, "2026-08-15 17:10:00\n"))
    report = report_from_file(path)
    assert "gpu05's clock: 1 h 0 min ahead of the bastion" in report, report


def test_a_log_written_before_the_mark_measures_its_clock_by_the_date_as_before(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    write(path, (("date", "+%F %T"), None, "2026-08-15 17:10:00\n"), (DATE_ARGV, None, "2026-08-15 16:10:00\n"))
    report = report_from_file(path)
    assert "gpu05's clock: in step with the bastion" in report, report


def _entry(event: RunbookEvent, time: str) -> LogEntry:
    """The event's record as the report reads it back, logged at ``time``."""
    return dataclasses.replace(read_entry(event.to_record()), time=time)


def test_a_result_takes_its_starts_marks_and_a_start_without_one_is_unanswered():
    argv = ("fuser", "-v", "/dev/nvidia0")
    entries = paired([
        _entry(CommandStarted(host="n", step="quiesce", argv=argv, purpose=HOLDERS, bookkeeping=False), "t1"),
        _entry(CommandFinished(host="n", step="quiesce", argv=argv, exit_status=1), "t2"),
        _entry(CommandStarted(host="n", step="quiesce", argv=argv, purpose=HOLDERS, bookkeeping=False), "t3"),
        _entry(CommandStarted(host="n", step="reset", argv=("nvidia-smi", "-r"), purpose="", bookkeeping=False), "t4"),
    ])
    assert (entries[1].purpose, entries[1].sent, entries[1].unanswered) == (HOLDERS, "t1", False)
    assert [e.unanswered for e in entries] == [False, False, True, True]


def test_a_result_with_no_start_in_the_log_is_judged_by_its_words():
    (entry,) = paired([_entry(CommandFinished(host="n", step="preflight", argv=DATE_ARGV, exit_status=0), "t")])
    assert (entry.purpose, entry.bookkeeping, entry.sent) == (CLOCK, True, None)

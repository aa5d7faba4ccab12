"""One fold from a node's runbook events to what happened, read by the console's column and the headless
progress lines alike (runbook/happened.py)."""

from __future__ import annotations

import io

from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.model import Holder, HolderKind, SmokeResult
from nvls_tui.runbook import STEPS
from nvls_tui.runbook import events as ev
from nvls_tui.runbook.happened import FAILED, OK, PENDING, SKIPPED, NodeHappened
from nvls_tui.runbook.lock import HEARTBEAT_STEP
from nvls_tui.views.runbook import NodeRun

JOB = Holder(pid=4242, user="alice", command="python3 train.py", kind=HolderKind.CUDA_APP)
SMOKE = SmokeResult(avg_busbw=291.9, passed=True, threshold=250.0)


def aborted_repair() -> list[ev.RunbookEvent]:
    """A repair of gpu05 that waits on a workload, restores and ends aborted at verify-no-holders."""
    h = "gpu05"
    return [
        ev.RunStarted(host=h, run_id="r1"),
        ev.StepStarted(host=h, step="preflight"),
        ev.CommandStarted(host=h, step="preflight", argv=("mkdir", "/var/lib/nvls-tui/lock")),
        ev.CommandFinished(host=h, step="preflight", argv=("mkdir", "/var/lib/nvls-tui/lock"), exit_status=0),
        ev.StepFinished(host=h, step="preflight", status="ok", duration=1.0, message="ready"),
        ev.StepStarted(host=h, step="verify-no-holders"),
        ev.HoldersRemaining(host=h, step="verify-no-holders", holders=(JOB,), waiting=True, message="1 holder remains"),
        ev.CommandStarted(host=h, step=HEARTBEAT_STEP, argv=("tee", "/var/lib/nvls-tui/lock/owner.json.tmp")),
        ev.CommandFinished(host=h, step=HEARTBEAT_STEP, argv=("tee", "/var/lib/nvls-tui/lock/owner.json.tmp"),
                           exit_status=0),
        ev.HoldersRemaining(host=h, step="verify-no-holders", holders=(JOB,), waiting=True, message="1 holder remains"),
        ev.StepFinished(host=h, step="verify-no-holders", status="failed", duration=60.0, message="aborted"),
        ev.StepStarted(host=h, step="restore"),
        ev.Restored(host=h, step="restore", units=("nvidia-dcgm.service",), failed=("kubelet.service",)),
        ev.StepFinished(host=h, step="restore", status="ok", duration=2.0),
        ev.RunFinished(host=h, result="aborted", message="aborted at verify-no-holders"),
    ]


def folded(events: list[ev.RunbookEvent]) -> NodeHappened:
    node = NodeHappened("gpu05")
    for event in events:
        node.fold(event)
    return node


def test_a_repair_folds_into_its_steps_its_restore_and_its_result():
    node = folded(aborted_repair())
    assert node.steps["preflight"].status == OK and node.steps["preflight"].message == "ready"
    assert node.steps["verify-no-holders"].status == FAILED and node.steps["verify-no-holders"].duration == 60.0
    assert node.steps["reset"].status == SKIPPED  # never reached
    assert (node.result, node.message) == ("aborted", "aborted at verify-no-holders")
    assert (node.restored, node.restore_failed) == (("nvidia-dcgm.service",), ("kubelet.service",))
    assert node.current == "" and not node.waiting


def test_the_locks_heartbeat_changes_nothing_in_what_happened():
    node = NodeHappened("gpu05")
    heartbeat = ev.CommandStarted(host="gpu05", step=HEARTBEAT_STEP, argv=("tee", "x"))
    assert node.fold(heartbeat) == set()
    assert HEARTBEAT_STEP not in node.steps and node.steps["preflight"].status == PENDING


def test_the_same_holders_reported_again_while_waiting_are_marked_repeated():
    node = NodeHappened("gpu05")
    wait = ev.HoldersRemaining(host="gpu05", step="verify-no-holders", holders=(JOB,), waiting=True)
    node.fold(wait)
    assert not node.holders_repeated
    node.fold(wait)
    assert node.holders_repeated
    node.fold(ev.HoldersRemaining(host="gpu05", step="verify-no-holders", holders=(), waiting=True))
    assert not node.holders_repeated and node.holders == ()


def test_a_smoke_test_folds_into_its_rows_and_result():
    rows = [ev.CommandStarted(host="gpu05", step="smoke-test", argv=("all_reduce_perf", "-g", "8")),
            ev.SmokeRow(host="gpu05", step="smoke-test", size=8, busbw=1.5, row={"oop_busbw": 1.5, "ip_busbw": 1.6}),
            ev.SmokeFinished(host="gpu05", step="smoke-test", smoke=SMOKE)]
    node = folded(rows)
    assert node.smoke is not None and node.smoke.rows == [(8, 1.5, 1.6)] and node.smoke.result == SMOKE


def test_the_console_column_and_the_progress_lines_read_the_same_fold():
    column = NodeRun("gpu05")
    printer = ProgressPrinter(io.StringIO(), clock=lambda: 0.0)
    for event in aborted_repair():
        column.apply(event, now=0.0)
        printer(event)
    fold = folded(aborted_repair())
    for reader in (column, printer.happened["gpu05"]):
        assert {n: (s.status, s.duration, s.message) for n, s in reader.steps.items()} == \
               {n: (s.status, s.duration, s.message) for n, s in fold.steps.items()}
        assert (reader.result, reader.restored, reader.holders) == (fold.result, fold.restored, fold.holders)


def test_the_progress_lines_say_the_repeated_holders_once_and_never_the_heartbeat():
    out = io.StringIO()
    printer = ProgressPrinter(out, clock=lambda: 0.0)
    for event in aborted_repair():
        printer(event)
    lines = out.getvalue().splitlines()
    assert sum("verify-no-holders ..." in line for line in lines) == 1
    # Two reports of the same holder: said once.
    assert sum("1 process still holds /dev/nvidia*: 4242 (python3, alice)" in line for line in lines) == 1
    assert not any("owner.json.tmp" in line for line in lines)


def test_the_report_reads_what_happened_from_the_same_fold_as_the_console():
    from pathlib import Path

    from nvls_tui.report.markdown import load_audit_log
    from nvls_tui.report.node_log import node_logs
    from nvls_tui.runbook.events import RunbookEvent

    contents = load_audit_log(Path(__file__).parents[1] / "fixtures" / "audit-v1" / "repair-seed-incident-gpu05.jsonl")
    (log,) = node_logs(contents.records)
    column = NodeRun("gpu05")
    for record in log.records:
        assert isinstance(record.event, RunbookEvent)
        column.apply(record.event, now=0.0)
    assert log.happened.result == column.result == "repaired"
    assert log.happened.restored == column.restored and log.happened.restored
    assert {n: s.status for n, s in log.happened.steps.items()} == {n: s.status for n, s in column.steps.items()}


def test_one_recorded_run_says_the_same_in_the_report_the_progress_lines_and_the_console_column(tmp_path, capsys,
                                                                                               monkeypatch):
    """Issue 25's acceptance: a real headless repair (the simulator, frozen clock) records its run; that one
    log, read back into events, is fed to the report, the headless progress lines and the console's column."""
    from pathlib import Path

    from nvls_tui.cli import main
    from nvls_tui.report.markdown import load_audit_log, render_report
    from nvls_tui.report.node_log import node_logs
    from nvls_tui.runbook.events import RunbookEvent

    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    assert main(["repair", "sim:seed-incident/gpu05", "--yes", "--audit-dir", str(tmp_path)]) == 0
    live = capsys.readouterr().out.splitlines()
    (path,) = Path(tmp_path).glob("repair-*.jsonl")
    contents = load_audit_log(path)
    (log,) = node_logs(contents.records)
    events = [record.event for record in log.records if isinstance(record.event, RunbookEvent)]
    assert len(events) == len(log.records)

    out = io.StringIO()
    printer = ProgressPrinter(out, clock=lambda: 0.0)
    column = NodeRun("gpu05")
    pane: list[str] = []
    for event in events:
        printer(event)
        pane += [line.text for line in column.apply(event, now=0.0)[1]]
    replayed = out.getvalue().splitlines()

    # The progress lines read back from the log are the lines the live run printed, one for one.
    assert replayed and live[:len(replayed)] == replayed
    # One fold: the report's, the progress printer's and the column's are the same.
    report, progress = log.happened, printer.happened["gpu05"]
    for reader in (progress, column):
        assert {n: (s.status, s.duration, s.message) for n, s in reader.steps.items()} == \
               {n: (s.status, s.duration, s.message) for n, s in report.steps.items()}
        assert (reader.result, reader.message, reader.restored, reader.holders) == \
               (report.result, report.message, report.restored, report.holders)
        assert reader.smoke is not None and report.smoke is not None
        assert reader.smoke.result == report.smoke.result
    # And each says it: every step and its status, the result and its message.
    assert report.result == "repaired" and list(report.steps) == list(STEPS)
    for name, step in report.steps.items():
        assert any(line.split()[1:3] == [name, step.status] for line in replayed), name
    page = render_report(contents)
    assert f"**Result: repaired** — {report.message}" in page
    assert pane[-1] == f"⇒ run finished: repaired {report.message}"

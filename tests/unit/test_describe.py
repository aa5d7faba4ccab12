"""Each runbook event worded once (issue 36 item 2): ``runbook/describe`` says it for the progress lines of a
headless repair, the console's output pane and the report's timeline.

Before, the three places worded a signalled holder each their own way: the progress line named no command
(``SIGTERM 4242 (cuda-app) -> signalled``), the pane no pid and a command cut at 60 characters, the report
``SIGTERM pid 4242 (cuda-app: python3 train.py) → signalled``. Now all three say the report's sentence.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.text import Text

from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.model import Holder, HolderKind, SmokeResult
from nvls_tui.report.markdown import load_audit_log
from nvls_tui.report.node_log import node_logs
from nvls_tui.report.timeline import timeline
from nvls_tui.runbook import events as ev
from nvls_tui.runbook.describe import describe
from nvls_tui.runbook.event_records import EVENT_KINDS
from nvls_tui.runbook.restore import RestoreReport, restored_message
from nvls_tui.views.runbook import NodeRun

AT = 1_764_648_000.125
COMMAND = "python3 /scratch/alice/experiments/llama-70b/train.py --config configs/nvls-all-reduce.yaml"


def said_everywhere(event: ev.RunbookEvent, tmp_path) -> tuple[str | None, list[str], list[str]]:
    """The progress line, the pane's lines and the report timeline's rows of one event (after its run's start)."""
    started = ev.RunStarted(host=event.host, at=AT, run_id="r1", mode="repair")
    progress = ProgressPrinter(io.StringIO()).format(event)
    column = NodeRun(event.host)
    column.apply(started, now=0.0)
    pane = [line.text for line in column.apply(event, now=0.0)[1]]
    path = tmp_path / "repair-r1.jsonl"
    path.write_text("".join(json.dumps(e.to_record()) + "\n" for e in (started, event)))
    (log,) = node_logs(load_audit_log(path).records)
    rows = [line.text for line in timeline(log)][1:]
    return progress, pane, rows


def test_a_signalled_holder_is_one_sentence_in_the_progress_line_the_pane_and_the_report(tmp_path):
    event = ev.ProcessSignalled(host="gpu05", step="quiesce", at=AT, pid=4242, signal="SIGTERM", command=COMMAND,
                                holder_kind="cuda-app", outcome="signalled")
    progress, pane, rows = said_everywhere(event, tmp_path)
    sentence = f"SIGTERM pid 4242 (cuda-app: {COMMAND})"
    assert progress == f"  {sentence} → signalled"
    assert pane == [f"{sentence} → signalled"]
    assert rows == [f"SIGTERM pid 4242 (cuda-app: {COMMAND.replace('_', chr(92) + '_')}) → signalled"]


def test_node_text_is_data_in_every_rendering(tmp_path):
    hostile = "[bold red]x[/] *y* <b>"
    event = ev.Note(host="gpu05", step="reset", at=AT, message=hostile, level="warning")
    progress, pane, rows = said_everywhere(event, tmp_path)
    assert progress == f"  warning: {hostile}"  # plain text: the printer folds it onto one line
    assert pane == [hostile]  # drawn as Text by the pane, never read as markup
    assert rows == ["_warning_: \\[bold red\\]x\\[/\\] \\*y\\* &lt;b&gt;"]


def test_a_step_and_a_run_end_say_the_reports_sentence_in_each_place(tmp_path):
    # Before, the progress line said "reset failed (2.5 s): ...", the pane "✖ reset failed: ..." (no duration)
    # and the run's end "=> failed: ..." / "⇒ failed: ...": each place its own words.
    finished = ev.StepFinished(host="gpu05", step="reset", at=AT, status="failed", duration=2.5,
                               message="nvidia-smi -r exited 255")
    progress, pane, rows = said_everywhere(finished, tmp_path)
    assert rows == ["**failed** in 2.5 s: nvidia-smi -r exited 255"]
    assert progress == "reset failed in 2.5 s: nvidia-smi -r exited 255"
    assert pane == ["✖ reset failed in 2.5 s: nvidia-smi -r exited 255"]
    run = ev.RunFinished(host="gpu05", at=AT, result="failed", message="the reset failed")
    progress, pane, rows = said_everywhere(run, tmp_path)
    assert (progress, pane, rows) == ("=> run finished: failed the reset failed",
                                      ["⇒ run finished: failed the reset failed"],
                                      ["run finished: **failed** the reset failed"])


def test_a_restore_and_a_smoke_result_say_the_reports_sentence_in_each_place(tmp_path):
    # Before: "restored a, b and persistence mode ...; FAILED c" and "could NOT restore c"; the smoke result
    # "smoke test FAILED: no average: ..." beside the report's "smoke test FAILED: avg no bandwidth".
    restored = ev.Restored(host="gpu05", step="restore", at=AT, units=("nvidia-dcgm.service",),
                           persistence_gpus=(0, 1), failed=("kubelet.service",))
    progress, pane, rows = said_everywhere(restored, tmp_path)
    sentence = ("restored nvidia-dcgm.service; persistence mode back on for 2 GPUs; "
                "could not restore kubelet.service")
    assert (progress, pane, rows) == (f"  {sentence}", [sentence], [sentence])
    smoke = SmokeResult(avg_busbw=None, passed=False, nvls_used=True, errors=("NVLS not used",), threshold=250.0)
    progress, pane, rows = said_everywhere(ev.SmokeFinished(host="gpu05", step="smoke-test", at=AT, smoke=smoke),
                                           tmp_path)
    assert rows == ["smoke test FAILED: avg no bandwidth"]
    assert progress is not None and progress.startswith("smoke test FAILED: avg no bandwidth: ")
    assert pane[0].startswith("smoke test FAILED: avg no bandwidth: ")


def test_the_pane_draws_rich_text_with_node_text_as_data():
    hostile = "[bold]x[/bold]\x1b[31m red\nnext"
    said = describe(ev.StepFinished(host="gpu05", step="reset", at=AT, status="failed", duration=1.0,
                                    message=hostile))
    (line,) = said.pane
    assert isinstance(line.text, Text) and line.tone == "err"
    # Taken as it is (not parsed as markup), cleaned of the escape and on one line.
    assert line.text.plain == "✖ reset failed in 1.0 s: [bold]x[/bold] red next"
    # Its own emphasis is a span, as the report's **failed**.
    assert [line.text.plain[s.start:s.end] for s in line.text.spans if s.style == "bold"] == ["failed"]


def test_the_output_pane_draws_the_text_describe_returns():
    from nvls_tui.console.widgets.output_pane import OutputPane, kind_style

    event = ev.RunFinished(host="gpu05", at=AT, result="repaired", message="[red]NVLS[/red] works again")
    column = NodeRun("gpu05")
    column.apply(ev.RunStarted(host="gpu05", at=AT, run_id="r1"), now=0.0)
    (line,) = column.apply(event, now=0.0)[1]
    (said,) = describe(event).pane
    drawn = OutputPane._drawn(line, line.text)
    assert drawn.plain == said.text.plain == "⇒ run finished: repaired [red]NVLS[/red] works again"
    assert drawn.style == kind_style("ok")
    assert [drawn.plain[s.start:s.end] for s in drawn.spans if s.style == "bold"] == ["repaired"]


# ---- every event kind: the three places say the same words ---------------------------------------------

HOLDER = Holder(pid=4242, user="alice", command="python3 train.py", kind=HolderKind.CUDA_APP)
PASSED = SmokeResult(avg_busbw=291.9, passed=True, nvls_used=True, threshold=250.0)

# One event of each kind that says a sentence, in the forms it takes (a kind with several cases: each one).
SAID: dict[type[ev.RunbookEvent], list[ev.RunbookEvent]] = {
    ev.StepFinished: [
        ev.StepFinished(host="gpu05", step="reset", at=AT, status="failed", duration=2.5, message="it exited 255"),
        ev.StepFinished(host="gpu05", step="reset", at=AT, status="failed", duration=2.5, message="aborted by kim"),
        ev.StepFinished(host="gpu05", step="restore", at=AT, status="ok", duration=0.5, message="restored kubelet"),
        ev.StepFinished(host="gpu05", step="reset", at=AT, status="planned", commands=("nvidia-smi -r",))],
    ev.HoldersRemaining: [
        ev.HoldersRemaining(host="gpu05", step="verify-no-holders", at=AT, holders=(HOLDER,) * 9, waiting=True,
                            elapsed=4.0, limit=120.0),
        ev.HoldersRemaining(host="gpu05", step="quiesce", at=AT, holders=(HOLDER,)),
        ev.HoldersRemaining(host="gpu05", step="verify-no-holders", at=AT, holders=(), elapsed=9.0, limit=120.0)],
    ev.ProcessSignalled: [ev.ProcessSignalled(host="gpu05", step="quiesce", at=AT, pid=4242, signal="SIGTERM",
                                              command="python3 train.py", holder_kind="cuda-app", outcome="gone")],
    ev.SmokeFinished: [ev.SmokeFinished(host="gpu05", step="smoke-test", at=AT, smoke=PASSED),
                       ev.SmokeFinished(host="gpu05", step="smoke-test", at=AT, smoke=SmokeResult(
                           avg_busbw=12.5, passed=False, nvls_used=True, threshold=250.0))],
    ev.Restored: [ev.Restored(host="gpu05", step="restore", at=AT, units=("kubelet.service",), persistence_gpus=(0,)),
                  ev.Restored(host="gpu05", step="restore", at=AT, failed=("kubelet.service",))],
    ev.Note: [ev.Note(host="gpu05", step="reset", at=AT, message="two GPUs answered late", level="warning"),
              ev.Note(host="gpu05", step="reset", at=AT, message="the node answered")],
    ev.RunFinished: [ev.RunFinished(host="gpu05", at=AT, result="repaired", message="NVLS works again"),
                     ev.RunFinished(host="gpu05", at=AT, result="aborted")],
}
# The kinds that say no sentence of their own, and why.
UNSAID: dict[type[ev.RunbookEvent], str] = {
    ev.RunStarted: "the report's row only: the progress lines and the pane begin with the node's first step",
    ev.StepStarted: "each place's heading for the step (its name: the report has it in the step column)",
    ev.CommandStarted: "a command is each place's to show: its line in the pane, folded repeats in the report",
    ev.CommandFinished: "a command is each place's to show: its line in the pane, folded repeats in the report",
    ev.OutputLine: "what a command printed: the pane folds it, the audit log keeps it",
    ev.SmokeRow: "an all_reduce_perf row: the progress line lists it, the smoke test's result sums the rows up",
    ev.NodeObserved: "a read of the node: the report's tables and findings, no sentence",
    ev.FabricProgress: "a registration poll: the pane's one updating line only (describe.fabric_progress_sentence); "
                       "the progress lines print the wait's reminder, the report folds the polls into one line",
    ev.WaitStarted: "a wait's start: the wait's line says how it stands (views/deadlines)",
    ev.ManualChanged: "the console's change by hand: the report words it with who made it (report/node_log)",
    ev.ManualChanges: "the changes by hand before a repair: the report lists them (report/node_log)",
}


def test_every_event_kind_is_said_as_one_sentence_or_says_why_not():
    assert set(SAID) | set(UNSAID) == set(EVENT_KINDS.values()) and not set(SAID) & set(UNSAID)


def _unmarked(markdown: str) -> str:
    """A report row's words: its Markdown emphasis and escapes taken off (``**failed**``, ``_warning_``, ``\\_``)."""
    return re.sub(r"\\(.)", r"\1", re.sub(r"^_(\w+)_:", r"\1:", markdown.replace("**", "")))


@pytest.mark.parametrize("event", [e for events in SAID.values() for e in events],
                         ids=lambda e: f"{e.kind}-{getattr(e, 'status', '')}{getattr(e, 'level', '')}")
def test_the_progress_line_the_pane_and_the_report_say_the_same_words(event, tmp_path):
    progress, pane, rows = said_everywhere(event, tmp_path)
    said = describe(event)
    assert said.markdown is not None and rows == [said.markdown]
    words = _unmarked(rows[0])
    if isinstance(event, ev.Note):  # the pane says the level by its tone, then the note's words
        assert pane == [event.message]
    elif pane:
        assert words in pane[0], (words, pane)
    if progress is not None:
        assert words in progress.splitlines()[0], (words, progress)
    # Where a place says nothing, another says it for it: the progress line of a smoke test that passed is the run's
    # end; the pane of a step that ended well is its step list, of a clean restore its step's own ✔ line.
    assert progress is not None or (isinstance(event, ev.SmokeFinished) and event.smoke.passed)
    assert pane or (isinstance(event, ev.StepFinished) and event.status in ("ok", "planned")) or (
        isinstance(event, ev.Restored) and not event.failed)


def test_the_restore_steps_message_says_what_its_restored_event_says():
    report = RestoreReport(units=["nvidia-dcgm.service", "kubelet.service"], persistence_gpus=[0, 1, 2])
    event = ev.Restored(host="gpu05", step="restore", at=AT, units=tuple(report.units),
                        persistence_gpus=tuple(report.persistence_gpus))
    assert restored_message(report) == describe(event).markdown == (
        "restored nvidia-dcgm.service, kubelet.service; persistence mode back on for 3 GPUs")


def test_a_registration_poll_is_the_panes_updating_line_as_describe_words_it(tmp_path):
    # Before, views/runbook built this line itself from the node's answers, markup and all.
    event = ev.FabricProgress(host="gpu05", step="fabric-manager", at=AT, unit="[red]active[/red]",
                              states={"In Progress/N/A": 6, "Completed/Success": 2}, elapsed=12.0, limit=300.0)
    progress, pane, rows = said_everywhere(event, tmp_path)
    assert pane == ["Fabric Manager [red]active[/red]; In Progress/N/A ×6, Completed/Success ×2 (0:12 of 5:00)"]
    assert progress is None  # the wait's reminder line says it, every 15 s
    (row,) = rows  # the report's one line for the registration, its polls folded
    assert row.startswith("Fabric Manager had not registered every GPU after 0.0 s: 6× In Progress, 2× Completed")
    column = NodeRun("gpu05")
    (line,) = column.apply(event, now=0.0)[1]
    assert line.key == "fabric" and line.styled is not None and line.styled.plain == pane[0]

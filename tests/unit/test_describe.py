"""Each runbook event worded once (issue 36 item 2): ``runbook/describe`` says it for the progress lines of a
headless repair, the console's output pane and the report's timeline.

Before, the three places worded a signalled holder each their own way: the progress line named no command
(``SIGTERM 4242 (cuda-app) -> signalled``), the pane no pid and a command cut at 60 characters, the report
``SIGTERM pid 4242 (cuda-app: python3 train.py) → signalled``. Now all three say the report's sentence.
"""

from __future__ import annotations

import io
import json

from rich.text import Text

from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.model import SmokeResult
from nvls_tui.report.markdown import load_audit_log
from nvls_tui.report.node_log import node_logs
from nvls_tui.report.timeline import timeline
from nvls_tui.runbook import events as ev
from nvls_tui.runbook.describe import describe
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
    assert progress == f"  {sentence} -> signalled"
    assert pane == [f"{sentence} → signalled"]
    assert rows == [f"SIGTERM pid 4242 (cuda-app: {COMMAND.replace('_', chr(92) + '_')}) → signalled"]


def test_node_text_is_data_in_every_rendering(tmp_path):
    hostile = "[bold red]x[/] *y* <b>"
    event = ev.Note(host="gpu05", step="reset", at=AT, message=hostile, level="warning")
    progress, pane, rows = said_everywhere(event, tmp_path)
    assert progress == f"  [warning] {hostile}"  # plain text: the printer folds it onto one line
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

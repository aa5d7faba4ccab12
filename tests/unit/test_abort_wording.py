"""Issue 28 item 6: an operator's abort is no failure: the step list and the output say ``■ aborted``,
in the warning colour, never ``✖ failed`` in red."""

from __future__ import annotations

from nvls_tui.console.widgets.step_list import step_lines
from nvls_tui.runbook.events import RunFinished, RunStarted, StepFinished, StepStarted
from nvls_tui.views.runbook import NodeRun


def aborted_run() -> tuple[NodeRun, list]:
    run = NodeRun("gpu05")
    lines = []
    for event in (RunStarted(host="gpu05", run_id="r1"), StepStarted(host="gpu05", step="preflight"),
                  StepFinished(host="gpu05", step="preflight", status="ok"),
                  StepStarted(host="gpu05", step="quiesce"),
                  StepFinished(host="gpu05", step="quiesce", status="failed", message="aborted by the operator"),
                  RunFinished(host="gpu05", result="aborted", message="aborted at quiesce: nothing was reset")):
        lines += run.apply(event, 0.0)[1]
    return run, lines


def test_the_aborted_step_reads_aborted_not_failed():
    run, _ = aborted_run()
    listed = step_lines(run, 1.0).plain.splitlines()
    quiesce = next(line for line in listed if "quiesce" in line)
    assert quiesce.startswith(" ■ quiesce") and "aborted" in quiesce
    assert "failed" not in quiesce and "✖" not in step_lines(run, 1.0).plain


def test_the_output_says_aborted_in_the_warning_colour():
    _, lines = aborted_run()
    said = [(line.text, line.kind) for line in lines if "abort" in line.text]
    assert ("■ quiesce aborted in 0.0 s: aborted by the operator", "warn") in said
    assert all(style != "err" for _, style in said), said

"""Issue 28 item 6: a failed smoke test keeps NCCL's lines apart. The sentences nvls-tui concluded make the
one-line message; each line NCCL printed is shown on a line of its own in the console's pane, headless
progress and the report, never glued to the next with "; "."""

from __future__ import annotations

import io

from nvls_tui.audit.log import AuditLog
from nvls_tui.headless.repair import ProgressPrinter
from nvls_tui.model import SmokeResult
from nvls_tui.report.markdown import load_audit_log, render_report
from nvls_tui.runbook.events import RunFinished, RunStarted, SmokeFinished, StepFinished, StepStarted
from nvls_tui.runbook.smoke_words import failure_words, is_nccl_line
from nvls_tui.textsafe import markdown_code, markdown_text
from nvls_tui.views.runbook import NodeRun

# The errors of sim:transient-802's failed smoke test, as its audit log holds them (three NCCL lines, then
# the parser's conclusion).
NCCL = ("gpu-t802:2214:2235 [0] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP "
        "(NVLS) Multicast memory of size 2097152 : CUDA error 802 'system not yet initialized'.",
        "gpu-t802: Test NCCL failure common.cu:1177 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '",
        ".. gpu-t802 pid 2214: Test failure common.cu:893")
HINT = "NVLS multicast bind failed: CUDA error 802 'system not yet initialized' (a Fabric Manager or NVSwitch fault)"
FAILED = SmokeResult(avg_busbw=None, passed=False, nvls_used=True, errors=(*NCCL, HINT), threshold=250.0)


def test_nccl_lines_are_told_from_conclusions():
    assert all(is_nccl_line(line) for line in NCCL)
    assert not is_nccl_line(HINT)
    assert not is_nccl_line("average bus bandwidth 120.0 GB/s is below the 250 GB/s threshold")


def test_the_one_line_message_is_the_conclusion_and_counts_nccl_lines():
    assert failure_words(FAILED.errors) == f"{HINT} (+3 NCCL lines, shown apart)"
    assert failure_words(NCCL[:2]) == f"{NCCL[0]} (+1 NCCL line, shown apart)"
    assert failure_words(()) == "no reason given"


def test_the_console_pane_shows_each_nccl_line_on_its_own():
    run = NodeRun("gpu-t802")
    run.apply(RunStarted(host="gpu-t802", run_id="r1"), 0.0)
    run.apply(StepStarted(host="gpu-t802", step="smoke-test"), 0.0)
    _, lines = run.apply(SmokeFinished(host="gpu-t802", step="smoke-test", smoke=FAILED), 1.0)
    texts = [line.text for line in lines]
    assert texts[0] == f"smoke test FAILED: avg no bandwidth: {HINT}"
    assert texts[1:] == [f"  {line}" for line in NCCL]
    assert all("; " not in t for t in texts[1:])


def test_headless_progress_prints_each_nccl_line_on_its_own():
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer(SmokeFinished(host="gpu-t802", step="smoke-test", smoke=FAILED))
    printed = stream.getvalue().splitlines()
    host = f"{'gpu-t802':<14} "
    assert printed[0] == f"{host}smoke test FAILED: avg no bandwidth: {HINT}"
    assert printed[1:] == [f"{host}| {line}" for line in NCCL]


def test_the_report_lists_nccl_lines_apart(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    with AuditLog(path, operator="kim") as log:
        log(RunStarted(host="gpu-t802", run_id="r1"))
        log(StepStarted(host="gpu-t802", step="smoke-test"))
        log(SmokeFinished(host="gpu-t802", step="smoke-test", smoke=FAILED))
        log(StepFinished(host="gpu-t802", step="smoke-test", status="failed",
                         message=f"the NVLS smoke test failed after the repair: {failure_words(FAILED.errors)}"))
        log(RunFinished(host="gpu-t802", result="failed", message="the NVLS smoke test failed after the repair"))
    report = render_report(load_audit_log(str(path)))
    assert "initialized'.; " not in report and "common.cu:893; " not in report, report  # never glued
    # The summary says the conclusion and where NCCL's own lines are.
    assert (f"smoke test failed at no bandwidth (threshold 250.0 GB/s): {markdown_text(HINT)} (NCCL's 3 lines under "
            "Smoke test)") in report, report
    # The smoke test's section lists each NCCL line as printed, one nested bullet each.
    section = report[report.index("### Smoke test"):]
    nested = [r for r in section.splitlines() if r.startswith("  - ")]
    assert nested == [f"  - {markdown_code(line)}" for line in NCCL], section

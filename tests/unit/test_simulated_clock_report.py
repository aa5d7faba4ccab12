"""Issue 28 item 6: the demo's reports said the node's clock was 108 days behind. A simulated node's clock is the
simulator's (its scenario's own date), the records' times are the bastion's: the gap is by design, not a clock
fault. The report of a simulated run says the clock is simulated and never claims a skew; a real node's report
still measures and names one."""

from __future__ import annotations

import re

from nvls_tui.audit.log import AuditLog
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.report.markdown import report_from_file
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.events import CommandFinished, CommandStarted, NodeObserved, RunFinished, RunStarted
from nvls_tui.runbook.steps import DATE_ARGV
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.runbook import repair_options

FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)
SKEW = re.compile(r"'s clock: [^\n]*(ahead of|behind) the bastion \(±")


def clock_line(report: str, host: str) -> str:
    return next(line for line in report.splitlines() if line.startswith(f"- {host}'s clock: "))


async def test_a_simulated_run_claims_no_clock_skew(tmp_path):
    # Frozen: the simulator's clock stays at the scenario's own date (the demo's, at its real-time speed, moves
    # on by the seconds a repair takes), and the repair's waits, the product's own, move it on instead of
    # passing in real time (at real time, with 0.01 s polls: 10 s, and some 2,700 fsynced audit records).
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    (backend,) = sim_backends(fleet)
    with AuditLog.create(tmp_path, "run") as audit:
        await Runbook(backend, repair_options([backend]), on_event=audit).run()
    report = report_from_file(audit.path)
    line = clock_line(report, "gpu05")
    assert not SKEW.search(report), line
    assert line.startswith("- gpu05's clock: simulated (the simulator's clock, "), line
    assert "not a clock fault" in line and "node-clock times are converted with it" in line


def test_a_real_node_still_measures_its_skew(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    with AuditLog(path, operator="kim") as log:
        log(RunStarted(host="gpu05", run_id="r1", at=1_796_200_000.0))
        log(NodeObserved(host="gpu05", step="preflight", label="before", summary={"verdict": "broken"},
                         at=1_796_200_000.1))
        log(CommandStarted(host="gpu05", step="preflight", argv=DATE_ARGV, at=1_796_200_000.2))
        # The node's clock reads 2 h 5 min behind the bastion's, less the half second `date` cannot show.
        log(CommandFinished(host="gpu05", step="preflight", argv=DATE_ARGV, exit_status=0,
                            output="2026-12-02T06:21:40+00:00\n", at=1_796_200_000.3))
        log(RunFinished(host="gpu05", result="failed", message="x", at=1_796_200_001.0))
    line = clock_line(report_from_file(path), "gpu05")
    assert SKEW.search(line) and "2 h 4 min behind the bastion" in line, line

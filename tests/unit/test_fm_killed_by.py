"""Issue 38 item 10: "what killed FM (status=9/KILL is in its journal; say so)". The poll reads systemd's
ExecMainCode and ExecMainStatus with the units (no process more), so a Fabric Manager killed by a signal says
which one, in check's finding, in the audit's summary and in the report's review."""

from __future__ import annotations

import asyncio

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.diagnosis import diagnose
from nvls_tui.parsers.systemctl import parse_show
from nvls_tui.runbook.summary import summarize
from nvls_tui.sim.fleet import load_fleet

SHOW = """Id=nvidia-fabricmanager.service
LoadState=loaded
ActiveState=failed
SubState=failed
MainPID=0
Result=signal
ExecMainCode=2
ExecMainStatus=9

Id=nvidia-dcgm.service
LoadState=loaded
ActiveState=active
SubState=running
MainPID=2033
Result=success
ExecMainCode=0
ExecMainStatus=0

Id=nvidia-persistenced.service
LoadState=loaded
ActiveState=failed
SubState=failed
MainPID=0
Result=exit-code
ExecMainCode=1
ExecMainStatus=9
"""


def test_the_signal_that_killed_a_unit_is_read_and_an_exit_status_is_not_a_signal():
    units = {u.name: u for u in parse_show(SHOW).value}
    assert units["nvidia-fabricmanager.service"].killed_by == 9
    assert units["nvidia-dcgm.service"].killed_by is None
    assert units["nvidia-persistenced.service"].killed_by is None  # exited with status 9: CLD_EXITED, no signal


def test_check_and_the_audit_summary_name_sigkill_on_the_seed_incidents_gpu05():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    state = asyncio.run(SimulatedBackend(fleet, "gpu05").snapshot())
    finding = next(f for f in diagnose(state).findings if f.code == "FM_NOT_RUNNING")
    assert "(Result: signal, killed by SIGKILL)" in finding.message, finding.message
    assert summarize(state)["unit_signals"] == {"nvidia-fabricmanager.service": 9}


def test_the_reports_review_names_the_signal_where_the_audit_log_has_it(tmp_path):
    import json
    from pathlib import Path

    from nvls_tui.report.markdown import load_audit_log, render_report

    fixture = Path(__file__).parents[1] / "fixtures" / "audit-v1" / "repair-seed-incident-gpu05.jsonl"
    lines = []
    for line in fixture.read_text().splitlines():
        record = json.loads(line)
        if record.get("event") == "node-observed" and record.get("label") == "before":
            record["summary"]["unit_signals"] = {"nvidia-fabricmanager.service": 9}
        lines.append(json.dumps(record))
    log = tmp_path / "audit.jsonl"
    log.write_text("\n".join(lines) + "\n")
    text = render_report(load_audit_log(log), "audit.jsonl")
    assert "| Fabric Manager was killed by SIGKILL (systemd: Result: signal) |" in text

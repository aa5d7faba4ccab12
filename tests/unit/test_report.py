"""The incident report: Markdown from an audit log, whole or cut short by a kill."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import replace

import pytest

from nvls_tui.audit.log import AuditLog
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.headless import report as report_cmd
from nvls_tui.model import SmokeResult
from nvls_tui.report.markdown import load_audit_log, render_report, report_from_file
from nvls_tui.runbook.events import (
    CommandFinished,
    CommandStarted,
    FabricProgress,
    NodeObserved,
    Note,
    ProcessSignalled,
    Restored,
    RunFinished,
    RunStarted,
    SmokeFinished,
    SmokeRow,
    StepFinished,
    StepStarted,
)
from nvls_tui.runbook.steps import FIXED_DEVICES
from nvls_tui.runbook.summary import summarize
from nvls_tui.settings import Settings
from nvls_tui.sim.fleet import load_fleet

BEFORE = {"verdict": "broken", "findings": ["FM_NOT_RUNNING", "FABRIC_OUT_OF_SYNC"],
          "units": {"nvidia-fabricmanager.service": "failed", "kubelet.service": "active"},
          "fabric": [{"index": i, "state": "Completed", "status": "Success"} for i in range(8)],
          "holders": [{"pid": 37538}], "kernel_events": ["NV_ERR_FABRIC_STATE_OUT_OF_SYNC"],
          "driver": "580.82.07", "fm_version": "580.82.07"}
AFTER = {**BEFORE, "verdict": "healthy", "findings": [], "holders": [], "kernel_events": [],
         "units": {"nvidia-fabricmanager.service": "active", "kubelet.service": "active"},
         "smoke": {"avg_busbw": 291.9, "passed": True}}


def write_run(path, *, finished: bool = True) -> None:
    with AuditLog(path, operator="kim") as log:
        log(RunStarted(host="gpu05", run_id="r1"))
        log(NodeObserved(host="gpu05", step="preflight", label="before", summary=BEFORE))
        log(StepStarted(host="gpu05", step="quiesce"))
        log(CommandFinished(host="gpu05", step="quiesce", argv=("systemctl", "stop", "kubelet.service"), exit_status=0))
        log(ProcessSignalled(host="gpu05", step="quiesce", pid=37538, signal="SIGTERM",
                             command="/usr/bin/dcgm-exporter", holder_kind="dcgm-exporter", outcome="signalled"))
        log(StepFinished(host="gpu05", step="quiesce", status="ok", duration=2.5))
        if not finished:
            return
        log(SmokeRow(host="gpu05", step="smoke-test", size=8388608, busbw=230.5, row={"oop_busbw": 230.5,
                                                                                      "ip_busbw": 231.0}))
        log(SmokeFinished(host="gpu05", step="smoke-test",
                          smoke=SmokeResult(avg_busbw=291.942, passed=True, out_of_bounds=0, nvls_used=True,
                                            completed=True, threshold=250.0)))
        log(NodeObserved(host="gpu05", step="restore", label="after", summary=AFTER))
        log(RunFinished(host="gpu05", result="repaired", message="NVLS works again"))


def test_the_report_has_timeline_before_after_holders_stopped_and_smoke_results(tmp_path):
    write_run(tmp_path / "log.jsonl")
    text = report_from_file(tmp_path / "log.jsonl")
    assert text.startswith("# NVLS repair incident report")
    assert "| gpu05 | repaired | 291.942 |" in text
    assert "| verdict | broken | healthy |" in text
    assert "| Fabric Manager | failed | active |" in text
    assert "| 37538 | dcgm-exporter | /usr/bin/dcgm-exporter | SIGTERM | signalled |" in text
    assert "Units stopped: `kubelet.service`" in text
    assert "passed: average bus bandwidth 291.942 GB/s (threshold 250.0)" in text
    assert "`systemctl stop kubelet.service` → exit 0" in text
    assert "operator: kim" in text


def test_a_log_cut_by_a_kill_reports_the_node_unfinished_and_skips_the_torn_line(tmp_path):
    path = tmp_path / "log.jsonl"
    write_run(path, finished=False)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"event": "command-sta')  # what a kill -9 mid-write leaves
    contents = load_audit_log(path)
    assert len(contents.unreadable) == 1 and len(contents.records) == 6
    text = render_report(contents, str(path))
    assert "**Unfinished**" in text and "repair --restore gpu05" in text
    assert "| gpu05 | unfinished |" in text
    assert "1 unreadable line(s) skipped" in text


def test_the_report_command_writes_the_file_or_says_why_it_cannot(tmp_path, capsys):
    write_run(tmp_path / "log.jsonl")
    out = tmp_path / "incident.md"
    assert report_cmd.run(Settings(command="report", log=str(tmp_path / "log.jsonl"), output=str(out))) == 0
    assert "## gpu05" in out.read_text()
    assert report_cmd.run(Settings(command="report", log=str(tmp_path / "missing.jsonl"), output=None)) == 2
    err = capsys.readouterr().err
    assert err.startswith("nvls-tui: cannot read audit log") and "Traceback" not in err


# ---- a scripted repair of gpu05, at exact bastion times ------------------------------------------------

BASTION_T0 = dt.datetime(2026, 8, 15, 16, 10, 0, tzinfo=dt.UTC).timestamp()
DEVICES = (*(f"/dev/nvidia{i}" for i in range(8)), *FIXED_DEVICES, *(f"/dev/nvidia-nvswitch{i}" for i in range(4)))
FUSER = ("fuser", "-v", *DEVICES)  # 18 device files, as the runbook names them one by one
FM = "nvidia-fabricmanager.service"
QUERY = ("nvidia-smi", "--query-gpu=index,fabric.state,fabric.status", "--format=csv")


def incident_summaries() -> tuple[dict, dict]:
    """The before/after summaries of seed-incident's gpu05, made by the real ``summarize``: FM killed,
    three NV_ERR_FABRIC_MANAGER_NOT_PRESENT lines on the node's clock (the last 15:45:00), 8 holders;
    after: FM active, no holders, a smoke test passed at 16:10:15 (node clock)."""
    # Read as a real node's (its clock is measured against the bastion's, not the simulator's by design).
    state = replace(asyncio.run(sim_backends(load_fleet("sim:seed-incident/gpu05"))[0].snapshot()), simulated=False)
    fm_up = tuple(replace(s, active="active", sub="running", result="success") if s.name == FM else s
                  for s in state.services)
    # The record as the runbook writes it (UTC with its offset, this boot, its uptime), read 5 s later.
    assert state.node_clock is not None and state.uptime is not None
    # FM started again by the repair: its unit journal since that start no longer holds the kill (a real poll
    # cuts it at systemd's Starting line; this state is made by hand, so its journal is made to say the same).
    journal = replace(state.fm_journal, unread=()) if state.fm_journal is not None else None
    fixed = replace(state, services=fm_up, holders=(), node_clock=state.node_clock + 20, uptime=state.uptime + 20,
                    fm_journal=journal,
                    smoke=SmokeResult(avg_busbw=291.864, passed=True, out_of_bounds=0, nvls_used=True,
                                      completed=True, threshold=250.0, at="2026-08-15T16:10:15+00:00",
                                      boot_id=state.boot_id, uptime=state.uptime + 15))
    return summarize(state), summarize(fixed)


class Script:
    """Writes one node's records into an audit log, each at ``BASTION_T0 + t`` seconds (the bastion's clock)."""

    def __init__(self, log: AuditLog, host: str = "gpu05") -> None:
        self.log, self.host = log, host

    def __call__(self, t: float, event: type, **fields) -> None:
        self.log(event(host=self.host, at=BASTION_T0 + t, **fields))

    def cmd(self, t: float, step: str, argv: tuple[str, ...], status: int | None = 0, output: str = "",
            started: float | None = None) -> None:
        self(t if started is None else started, CommandStarted, step=step, argv=argv)
        self(t, CommandFinished, step=step, argv=argv, exit_status=status, output=output)

    def step(self, t: float, step: str, duration: float, message: str = "", status: str = "ok") -> None:
        self(t - duration, StepStarted, step=step)
        self(t, StepFinished, step=step, status=status, duration=duration, message=message)


def write_incident(path, *, node_date: str | None = "2026-08-15 16:10:02", finished: bool = True,
                   before: dict | None = None, after: dict | None = None) -> None:
    """A whole repair of gpu05 as the runbook logs it. ``node_date``: what ``date`` printed at preflight
    (bastion 16:10:00.35-16:10:00.45, so "16:10:02" is 2.1 s ahead); None: no ``date`` anywhere in the log."""
    summaries = incident_summaries()
    before, after = before or summaries[0], after or summaries[1]
    with AuditLog(path, operator="kim") as log:
        s = Script(log)
        s(0.0, RunStarted, run_id="r1")
        s(0.001, StepStarted, step="preflight")
        s(0.02, NodeObserved, step="preflight", label="before", summary=before)
        s.cmd(0.03, "preflight", ("mkdir", "-p", "/var/lib/nvls-tui"))
        s.cmd(0.031, "preflight", ("mkdir", "/var/lib/nvls-tui/lock"))
        if node_date:
            s.cmd(0.45, "preflight", ("date", "+%Y-%m-%d %H:%M:%S"), output=node_date + "\n", started=0.35)
        s.cmd(0.46, "preflight", ("mkdir", "-p", "/var/lib/nvls-tui"))
        s.cmd(0.461, "preflight", ("tee", "/var/lib/nvls-tui/repair.json.tmp"))
        s.cmd(0.462, "preflight", ("mv", "-f", "/var/lib/nvls-tui/repair.json.tmp", "/var/lib/nvls-tui/repair.json"))
        s(0.463, StepFinished, step="preflight", status="ok", duration=0.46)
        s(0.5, StepStarted, step="quiesce")
        for t, unit in ((0.51, "nvidia-snapshot.timer"), (0.52, "nvidia-dcgm.service"), (0.53, "kubelet.service")):
            s.cmd(t, "quiesce", ("systemctl", "stop", unit))
        s.cmd(0.60, "quiesce", FUSER, output="/dev/nvidia0: root 37538 F...m dcgm-exporter\n")
        s.cmd(0.61, "quiesce", ("ps", "-ww", "-o", "pid=,cgroup=", "-p", "4242"), status=1)  # a PID gone: a real exit 1
        s(0.70, Note, step="quiesce", message="sending SIGTERM to 37538 (dcgm-exporter, root: /usr/bin/dcgm-exporter)")
        s(0.71, ProcessSignalled, step="quiesce", pid=37538, signal="SIGTERM", command="/usr/bin/dcgm-exporter",
          holder_kind="dcgm-exporter", outcome="signalled")
        s.cmd(0.80, "quiesce", FUSER)
        s.cmd(0.90, "quiesce", FUSER)
        s.cmd(1.00, "quiesce", FUSER, status=1)  # fuser's 1: nobody holds a device any more
        s(1.01, StepFinished, step="quiesce", status="ok", duration=0.51)
        s(1.02, StepStarted, step="verify-no-holders")
        s.cmd(1.03, "verify-no-holders", FUSER, status=1)
        s(1.04, StepFinished, step="verify-no-holders", status="ok", duration=0.02)
        s(1.05, StepStarted, step="reset")
        s.cmd(1.50, "reset", ("nvidia-smi", "-r"), output="GPU 00000000:0F:00.0 was successfully reset.\n")
        s(1.51, StepFinished, step="reset", status="ok", duration=0.46, message="reset 8 GPUs and NVSwitches")
        if not finished:
            s(1.52, StepStarted, step="fabric-manager")
            s.cmd(1.60, "fabric-manager", ("systemctl", "start", FM))
            return
        s(1.52, StepStarted, step="fabric-manager")
        s.cmd(1.53, "fabric-manager", FUSER, status=1)
        s.cmd(1.54, "fabric-manager", ("systemctl", "reset-failed", FM))
        s.cmd(1.60, "fabric-manager", ("systemctl", "start", FM))
        for t, state in ((1.62, "Not Started/N/A"), (3.62, "In Progress/N/A"), (5.62, "In Progress/N/A"),
                         (7.60, "Completed/Success")):
            s.cmd(t - 0.01, "fabric-manager", ("systemctl", "is-active", FM), output="active\n")
            s.cmd(t, "fabric-manager", QUERY)
            s(t, FabricProgress, step="fabric-manager", unit="active", states={state: 8})
        s(7.61, StepFinished, step="fabric-manager", status="ok", duration=6.09,
          message="Fabric Manager active; 8 GPUs Completed/Success")
        s(7.62, StepStarted, step="verify-fabric")
        s.cmd(7.65, "verify-fabric", ("journalctl", "-k", "--since", "2026-08-15 16:10:02", "--no-pager", "-o",
                                      "short-iso"))
        s(7.66, StepFinished, step="verify-fabric", status="ok", duration=0.04,
          message="no new fabric or Xid kernel lines since 2026-08-15 16:10:02")
        s(7.7, StepStarted, step="smoke-test")
        s(9.0, SmokeRow, step="smoke-test", size=8388608, busbw=238.36, row={"oop_busbw": 238.36, "ip_busbw": 238.73})
        s.cmd(12.9, "smoke-test", ("all_reduce_perf", "-b", "8M", "-e", "128M", "-f", "2", "-g", "8"), started=7.71)
        if node_date:
            s.cmd(12.95, "smoke-test", ("date", "+%Y-%m-%d %H:%M:%S"), output="2026-08-15 16:10:15\n")
        s(12.96, SmokeFinished, step="smoke-test",
          smoke=SmokeResult(avg_busbw=291.864, passed=True, out_of_bounds=0, nvls_used=True, completed=True,
                            threshold=250.0, at="2026-08-15T16:10:15"))
        s.cmd(12.97, "smoke-test", ("mkdir", "-p", "/var/lib/nvls-tui"))
        s.cmd(12.98, "smoke-test", ("tee", "/var/lib/nvls-tui/last-smoke.json.tmp"))
        s.cmd(12.99, "smoke-test", ("mv", "-f", "/var/lib/nvls-tui/last-smoke.json.tmp",
                                    "/var/lib/nvls-tui/last-smoke.json"))
        s(13.0, StepFinished, step="smoke-test", status="ok", duration=5.3)
        s(13.1, StepStarted, step="restore")
        for t, unit in ((13.11, "nvidia-dcgm.service"), (13.12, "kubelet.service"), (13.13, "nvidia-snapshot.timer")):
            s.cmd(t, "restore", ("systemctl", "start", unit))
        s.cmd(13.14, "restore", ("rm", "-f", "/var/lib/nvls-tui/repair.json"))
        s.cmd(13.15, "restore", ("rmdir", "/var/lib/nvls-tui/lock"))
        restored = ("nvidia-dcgm.service", "kubelet.service", "nvidia-snapshot.timer")
        s(13.15, Restored, step="restore", units=restored)
        s(13.16, StepFinished, step="restore", status="ok", duration=0.06, message="restored " + ", ".join(restored))
        s(13.2, NodeObserved, step="restore", label="after", summary=after)
        s(13.21, RunFinished, result="repaired", message="NVLS works again: average bus bandwidth 291.9 GB/s "
                                                          "(threshold 250)")


def section(text: str, title: str) -> str:
    """The lines of one ``##``/``###`` section of the report (up to the next heading of any level).

    ``### Timeline``: the first node's timeline, which the appendix holds under the node's name (issue 38 item 10).
    """
    if title == "### Timeline":
        text, title = text.split("## Appendix: timelines", 1)[1], "\n### "
    start = text.index(title)
    rest = text[start + len(title):]
    ends = [i for i in (rest.find("\n## "), rest.find("\n### ")) if i >= 0]
    return rest[: min(ends)] if ends else rest


def row_of(table: str, label: str) -> list[str]:
    """The cells of the table row whose first cell is ``label``."""
    line = next(line for line in table.splitlines() if line.startswith(f"| {label} |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


@pytest.fixture()
def incident(tmp_path):
    path = tmp_path / "repair-r1.jsonl"
    write_incident(path)
    return report_from_file(path)


def test_the_timeline_folds_bookkeeping_into_one_line_per_step(incident):
    timeline = section(incident, "### Timeline")
    assert "| preflight | bookkeeping: 6 commands, all exit 0 |" in timeline
    assert "| smoke-test | bookkeeping: 4 commands, all exit 0 |" in timeline
    assert "| restore | bookkeeping: 2 commands, all exit 0 |" in timeline
    assert "mkdir" not in timeline and "tee " not in timeline and "rmdir" not in timeline


def test_the_timeline_folds_repeated_commands_and_shortens_the_device_list(incident):
    timeline = section(incident, "### Timeline")
    assert "| quiesce | `fuser -v /dev/nvidia*` (18 devices) ×4, last exit 1 |" in timeline
    assert "| verify-no-holders | `fuser -v /dev/nvidia*` (18 devices) → exit 1 |" in timeline
    assert "/dev/nvidia-nvswitch3" not in incident  # the 18-device argv is never printed whole


def test_the_timeline_folds_the_fabric_polls_into_one_line(incident):
    timeline = section(incident, "### Timeline")
    assert ("| fabric-manager | Fabric Manager registered 8 GPUs in 6.0 s: Not Started → In Progress → "
            "Completed/Success (4 polls) |") in timeline
    assert "is-active" not in timeline and "--query-gpu" not in timeline


def test_the_timeline_keeps_every_failure_signal_note_and_step_result(incident):
    timeline = section(incident, "### Timeline")
    assert "| quiesce | `ps -ww -o pid=,cgroup= -p 4242` → exit 1 |" in timeline
    assert "| quiesce | SIGTERM pid 37538 (dcgm-exporter: /usr/bin/dcgm-exporter) → signalled |" in timeline
    assert "| quiesce | _info_: sending SIGTERM to 37538 (dcgm-exporter, root: /usr/bin/dcgm-exporter) |" in timeline
    assert "| reset | **ok** in 0.5 s: reset 8 GPUs and NVSwitches |" in timeline
    assert "| restore | restored nvidia-dcgm.service, kubelet.service, nvidia-snapshot.timer |" in timeline
    assert timeline.count("**ok**") == 8


def test_the_report_says_once_that_the_audit_log_holds_every_command(incident):
    assert incident.count("The audit log holds every command") == 1
    assert incident.index("The audit log holds every command") < incident.index("## gpu05")


def test_the_after_column_shows_no_kernel_line_older_than_the_repair(incident):
    table = section(incident, "### Before and after")
    kernel = row_of(table, "kernel events")
    assert kernel[1] == r"NV\_ERR\_FABRIC\_MANAGER\_NOT\_PRESENT ×3, the last at 15:44:58 UTC"
    assert kernel[2] == "none since the repair began (3 older lines left out)"


def test_an_old_log_with_kernel_codes_only_still_reads_and_trusts_verify_fabric(tmp_path):
    path = tmp_path / "log.jsonl"
    old_after = {**AFTER, "kernel_events": ["NV_ERR_FABRIC_STATE_OUT_OF_SYNC"]}  # codes only, as logs were
    write_incident(path, before=BEFORE, after=old_after)
    kernel = row_of(section(report_from_file(path), "### Before and after"), "kernel events")
    assert kernel[1] == r"NV\_ERR\_FABRIC\_STATE\_OUT\_OF\_SYNC"
    assert kernel[2] == "none new since the repair began (verify-fabric found none)"


def test_the_header_states_each_nodes_clock_offset_measured_at_preflight(incident):
    header = incident[: incident.index("## Summary")]
    assert "- gpu05's clock: 2.1 s ahead of the bastion (±0.6 s, measured with `date` at preflight)" in header
    assert "- times: the bastion's clock, UTC; node-clock times are converted" in header
    assert "- from 2026-08-15 16:10:00 to 16:10:13 UTC" in header


def test_node_clock_times_are_converted_to_the_bastions_utc(incident):
    timeline = section(incident, "### Timeline")
    # verify-fabric's T0 is the node's 16:10:02, which was 16:09:59.9 on the bastion
    assert ("| verify-fabric | **ok** in 0.0 s: no new fabric or Xid kernel lines since 2026-08-15 16:10:02 "
            "(node clock; 16:10:00 UTC) |") in timeline
    smoke = row_of(section(incident, "### Before and after"), "last smoke test")
    assert smoke[2] == "passed (291.9 GB/s) at 16:10:13 UTC"


def test_without_a_date_in_the_log_the_offset_is_not_invented_and_node_times_are_labelled(tmp_path):
    path = tmp_path / "log.jsonl"
    write_incident(path, node_date=None)
    text = report_from_file(path)
    assert "- gpu05's clock: not measured (no `date` answer in the log); node-clock times are marked (node clock)" in text
    kernel = row_of(section(text, "### Before and after"), "kernel events")
    assert kernel[1] == r"NV\_ERR\_FABRIC\_MANAGER\_NOT\_PRESENT ×3, the last at 2026-08-15 15:45:00 (node clock)"
    assert "ahead of the bastion" not in text and "behind the bastion" not in text


def test_a_file_that_is_not_an_audit_log_is_exit_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "plan.json"
    path.write_text('{"nodes": [{"host": "gpu05"}]}\n')
    assert report_cmd.run(Settings(command="report", log=str(path), output=None)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip().endswith("is not an nvls-tui audit log (no record has an event, a time and a run id)")
    assert len(captured.err.strip().splitlines()) == 1

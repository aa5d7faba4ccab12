"""The report's plain-language summary: per node what was wrong, what was done and what is left,
including what the operator did by hand and runs that were aborted or cut short."""

from __future__ import annotations

import re

import pytest

from nvls_tui.audit.log import AuditLog
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.model import HolderKind
from nvls_tui.report.markdown import report_from_file
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.events import StepStarted, fan_out
from nvls_tui.runbook.session import Session
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_report import section, write_incident

FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)
CLOCK = r"\d\d:\d\d:\d\d UTC"


def summary_of(text: str, host: str) -> str:
    """The summary's paragraph about ``host``."""
    summary = section(text, "## Summary")
    start = summary.index(f"**{host}:")
    end = summary.find("\n**", start + 1)
    return summary[start:] if end < 0 else summary[start:end]


async def repaired_log(tmp_path, spec: str, options: RepairOptions = FAST, watcher=None) -> str:
    """Repair every node of ``spec`` (simulated), one after the other, into one audit log; its report.

    ``watcher(books)`` makes an event sink for each run; ``books[0]`` is that run's Runbook.
    """
    fleet = load_fleet(spec, speed=2000.0)
    with AuditLog.create(tmp_path, "run") as audit:
        for backend in sim_backends(fleet):
            books: list[Runbook] = []
            books.append(Runbook(backend, options, on_event=fan_out(audit, watcher(books) if watcher else None)))
            await books[0].run()
    return report_from_file(audit.path)


def test_the_report_opens_with_what_was_wrong_what_was_done_and_what_is_left(tmp_path):
    path = tmp_path / "log.jsonl"
    write_incident(path)
    text = report_from_file(path)
    assert text.index("## Summary") < text.index("## gpu05")
    gpu05 = summary_of(text, "gpu05")
    assert gpu05.startswith("**gpu05: repaired** (16:10:00 to 16:10:13 UTC)")
    assert ("- Was wrong: Fabric Manager had died (failed, Result: signal) at 2026-08-10 15:45:32 UTC and the kernel "
            "said Fabric Manager was not present (`NV_ERR_FABRIC_MANAGER_NOT_PRESENT`, 3 lines, the last at "
            "15:44:58 UTC); 8 processes held /dev/nvidia\\*.") in gpu05
    assert ("- Done: 3 units stopped and started again (`nvidia-snapshot.timer`, `nvidia-dcgm.service`, "
            "`kubelet.service`); 1 holder stopped with SIGTERM; 8 GPUs and the NVSwitches reset; Fabric Manager "
            "started: 8 GPUs registered in 6.0 s; smoke test passed at 291.9 GB/s (threshold 250.0 GB/s).") in gpu05
    assert "- Left: healthy; no finding remains." in gpu05
    assert "None" not in gpu05 and "1 holders" not in gpu05


def test_a_cut_short_run_is_left_with_the_exact_restore_command(tmp_path):
    path = tmp_path / "log.jsonl"
    write_incident(path, finished=False)
    gpu05 = summary_of(report_from_file(path), "gpu05")
    assert gpu05.startswith("**gpu05: unfinished**")
    assert ("- Left: the run did not finish: the log ends at 16:10:01 UTC during `fabric-manager`, and the node "
            "keeps its repair record and lock: `nvls-tui repair --restore --force gpu05` puts back what the run stopped "
            "(`--force` takes over the lock only once its run is gone; a live run refuses it).") in gpu05


async def test_the_summary_of_the_seed_incident_says_it_in_words(tmp_path):
    text = await repaired_log(tmp_path, "sim:seed-incident/gpu05,gpu06")
    gpu05, gpu06 = summary_of(text, "gpu05"), summary_of(text, "gpu06")
    assert "- Was wrong: Fabric Manager had died (failed, Result: signal) at " in gpu05
    assert "the kernel said Fabric Manager was not present (`NV_ERR_FABRIC_MANAGER_NOT_PRESENT`, 3 lines" in gpu05
    assert ("- Was wrong: the kernel said the NVLink fabric state was out of sync "
            "(`NV_ERR_FABRIC_STATE_OUT_OF_SYNC`, 1 line at ") in gpu06
    assert re.search(r"UTC\), though every GPU showed Completed/Success; \d+ processes held /dev/nvidia\\\*\.", gpu06)
    assert "holders stopped with SIGTERM" in gpu05
    assert "Fabric Manager stopped, then started after the reset: 8 GPUs registered in " in gpu06
    for node in (gpu05, gpu06):
        assert re.search(r"smoke test passed at \d+\.\d GB/s \(threshold 250\.0 GB/s\)", node), node
        assert "- Left: healthy; no finding remains." in node
        assert "None" not in node and not re.search(r"\b1 (holders|units|GPUs)\b", node)


async def test_a_failed_smoke_test_is_what_is_left_with_the_bandwidth(tmp_path):
    strict = RepairOptions(**{**FAST.__dict__, "smoke_threshold": 400.0})
    gpu05 = summary_of(await repaired_log(tmp_path, "sim:seed-incident/gpu05", strict), "gpu05")
    assert gpu05.startswith("**gpu05: failed**")
    assert re.search(r"smoke test failed at \d+\.\d GB/s \(threshold 400\.0 GB/s\)", gpu05)
    assert re.search(r"- Left: broken: the last NVLS smoke test failed \(\d+\.\d GB/s\)", gpu05)
    # the kernel lines older than the repair are named as such, not as something the repair left
    assert ("the kernel's `NV_ERR_FABRIC_MANAGER_NOT_PRESENT` from before the repair still counts "
            "(no smoke test has passed since)") in gpu05


async def test_an_aborted_run_says_where_it_stopped_and_what_the_restore_put_back(tmp_path):
    def abort_at_fabric_manager(books):
        return lambda e: isinstance(e, StepStarted) and e.step == "fabric-manager" and books[0].abort()

    text = await repaired_log(tmp_path, "sim:seed-incident/gpu06", watcher=abort_at_fabric_manager)
    gpu06 = summary_of(text, "gpu06")
    assert gpu06.startswith("**gpu06: aborted**")
    assert ("- Aborted: aborted at fabric-manager: GPUs reset, fabric not verified — run the repair again "
            "(aborted by the operator). The restore put back 4 units (`nvidia-fabricmanager.service`, "
            "`nvidia-dcgm.service`, `kubelet.service`, `nvidia-snapshot.timer`).") in gpu06
    assert ("the restore removed the repair record and the lock (nothing for `nvls-tui repair --restore gpu06` "
            "to do); run the repair again.") in gpu06
    timeline = section(text, "### Timeline")
    # An operator's abort is said "aborted" in the report too, as in the pane and the progress line (issue 28 item 6).
    assert "| fabric-manager | **aborted** in 0.0 s: aborted by the operator |" in timeline


async def manual_then_repair(tmp_path, monkeypatch, *, put_back: bool) -> tuple[str, str]:
    """kim SIGTERMs dcgm-exporter and stops DCGM by hand, then repairs gpu05: (repair report, session report)."""
    for name in ("LOGNAME", "USER"):
        monkeypatch.setenv(name, "kim")
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    session = Session({b.host: b for b in sim_backends(fleet)}, audit_dir=str(tmp_path), options=FAST)
    backend = session.backends["gpu05"]
    exporter = [h for h in (await backend.snapshot()).holders if h.kind is HolderKind.DCGM_EXPORTER]
    assert exporter and (await session.sigterm("gpu05", exporter)).ok
    assert (await session.unit("gpu05", "stop", "nvidia-dcgm.service")).ok
    run = session.start_repair(["gpu05"])
    await session.repair(run, FAST, put_back_manual=put_back)
    await session.close()
    assert run.audit_log and session.audit_path
    return report_from_file(run.audit_log), report_from_file(session.audit_path)


@pytest.mark.parametrize("put_back", [True, False])
async def test_what_the_operator_did_by_hand_is_in_the_summary_and_the_timeline(tmp_path, monkeypatch, put_back):
    repair, session = await manual_then_repair(tmp_path, monkeypatch, put_back=put_back)
    gpu05 = summary_of(repair, "gpu05")
    assert re.search(rf"- By hand before this run: kim sent SIGTERM to pid 37538 \(dcgm-exporter: /usr/bin/dcgm-exporter\) "
                     rf"at {CLOCK}; kim stopped `nvidia-dcgm.service` at {CLOCK} \(it was active\)\.", gpu05), gpu05
    if put_back:
        assert "the restore put back `nvidia-dcgm.service`, stopped by hand" in gpu05
    else:
        assert ("stopped by hand and not put back: `nvidia-dcgm.service` (the operator chose to leave it "
                "stopped)") in gpu05
    timeline = section(repair, "### Timeline")
    assert re.search(rf"\| preflight \| by hand before this run: kim stopped `nvidia-dcgm.service` at {CLOCK} "
                     r"\(it was active\) \|", timeline), timeline
    # the session's own log: each action with who did it
    by_hand = summary_of(session, "gpu05")
    assert re.search(rf"- By hand: kim sent SIGTERM to pid 37538 \(dcgm-exporter: /usr/bin/dcgm-exporter\) at {CLOCK}; "
                     rf"kim stopped `nvidia-dcgm.service` at {CLOCK} \(it was active\)\.", by_hand), by_hand
    assert "- Left: stopped by hand and not started again in this log: `nvidia-dcgm.service`." in by_hand
    session_timeline = section(session, "### Timeline")
    assert "| unit-stop | by hand: kim stopped `nvidia-dcgm.service` (it was active) |" in session_timeline
    assert "| sigterm | by hand: kim sent SIGTERM to pid 37538 (dcgm-exporter: /usr/bin/dcgm-exporter) |" in session_timeline


def test_a_timers_oneshot_that_was_activating_and_has_run_is_not_left_down(tmp_path):
    # nvidia-snapshot.service is the timer's oneshot: "activating" when it was caught mid-run, "inactive"
    # once it has run. A loaded run of the seed incident caught it so and the report called it down.
    from tests.unit.test_report import incident_summaries

    before, after = incident_summaries()
    before = {**before, "units": {**before["units"], "nvidia-snapshot.service": "activating", "kubelet.service": "active"}}
    after = {**after, "units": {**after["units"], "nvidia-snapshot.service": "inactive", "kubelet.service": "inactive"}}
    path = tmp_path / "log.jsonl"
    write_incident(path, before=before, after=after)
    left = next(line for line in summary_of(report_from_file(path), "gpu05").splitlines() if line.startswith("- Left"))
    assert "`kubelet.service` (was active, now inactive)" in left  # a service that ran and is down is still said
    assert "nvidia-snapshot.service" not in left

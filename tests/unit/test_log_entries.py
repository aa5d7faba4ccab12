"""An audit log's records read back typed (runbook/log_entries, runbook/observed): what the report reads.

Every record reads into its event, or, when it is no runbook event (the log's own ``audit-opened``, a kind
a newer nvls-tui writes), into an OtherRecord; the record's time stays as written, and a summary's field
that was not logged stays None (never a default a report would present as read).
"""

from __future__ import annotations

from nvls_tui.runbook import events as ev
from nvls_tui.runbook.log_entries import ChangeByHand, OtherRecord, listed_changes, read_entry
from nvls_tui.runbook.observed import NOTHING_OBSERVED, KernelLine, ObservedNode

AT = 1_764_648_000.125


def test_a_runbook_event_reads_back_into_the_event_with_the_fields_the_log_added():
    event = ev.StepFinished(host="gpu05", step="reset", at=AT, status="ok", duration=2.0)
    record = {**event.to_record(), "operator": "kim", "dry_run": True}
    entry = read_entry(record)
    assert entry.event == event
    assert (entry.kind, entry.host, entry.step) == ("step-finished", "gpu05", "reset")
    assert (entry.time, entry.operator, entry.has_operator, entry.dry_run) == (record["time"], "kim", True, True)
    assert entry.run_id is None


def test_a_record_that_is_no_event_is_an_other_record_with_its_node_step_and_run():
    opened = read_entry({"time": "2026-12-02T04:01:28.000+00:00", "event": "audit-opened", "node": None,
                         "kind": "repair", "run_id": "r1"})
    assert opened.event == OtherRecord(kind="audit-opened", host=None, step="", run_id="r1")
    assert opened.run_id == "r1" and opened.operator is None and not opened.has_operator
    newer = read_entry({"event": "future-thing", "node": "gpu05", "step": "reset", "schema": 1})
    assert newer.event == OtherRecord(kind="future-thing", host="gpu05", step="reset")
    assert newer.time is None
    assert read_entry({"node": "gpu05"}).kind is None


def test_a_change_by_hand_reads_the_same_whichever_record_tells_it():
    ledger = {"what": "stopped", "at": 1_764_648_000, "unit": "nvidia-dcgm.service", "before": "active"}
    stopped = ev.ManualChanged(host="gpu05", at=AT, change=ledger)
    assert ChangeByHand.of_event(stopped) == ChangeByHand(what="stopped", at=1_764_648_000.0,
                                                          unit="nvidia-dcgm.service", before="active")
    listed = ev.ManualChanges(host="gpu05", at=AT, changes=(ledger, "not a change"))  # type: ignore[arg-type]
    assert listed_changes(listed) == [ChangeByHand.of(ledger)]
    signal = ev.ProcessSignalled(host="gpu05", at=AT, pid=42, signal="SIGTERM", command="watch", holder_kind="watch",
                                 outcome="signalled")
    said = ChangeByHand.of_event(signal)
    assert said.signalled and (said.pid, said.signal, said.command, said.outcome) == (42, "SIGTERM", "watch", "signalled")


def test_a_summary_reads_into_named_fields_and_what_was_not_logged_stays_none():
    summary = {"reachable": True, "verdict": "broken", "findings": ["FABRIC_OUT_OF_SYNC"],
               "units": {"nvidia-fabricmanager.service": "active"}, "holders": [{"pid": 1}],
               "fabric": [{"index": 0, "state": "Completed", "status": "Success"}],
               "kernel_lines": [{"code": "XID", "xid": 79, "timestamp": "2026-08-15 16:00:00", "current": True}],
               "smoke": {"passed": False, "avg_busbw": 12, "at": None}, "simulated": True}
    node = ObservedNode.read(summary)
    assert (node.reachable, node.verdict, node.findings, node.holders) == (True, "broken", ("FABRIC_OUT_OF_SYNC",), 1)
    assert node.kernel_lines == (KernelLine("XID", 79, "2026-08-15 16:00:00", True),)
    assert node.fabric[0].state == "Completed" and node.smoke is not None and node.smoke.avg_busbw == 12.0
    assert node.simulated and node.driver is None and node.unit_results is None
    older = ObservedNode.read({"kernel_events": ["XID"]})  # a log from before kernel_lines
    assert older.kernel_lines is None and older.kernel_events == ("XID",)
    assert ObservedNode.read({}) == NOTHING_OBSERVED

"""The step a crashed Kubernetes repair was in, read back from its audit log (``kube_repair.step_in_log``).

The reader reads the log's records as the events they serialize (issue 36 item 2): a line that is no record,
a record of another node, the restore's own step and a record that is no runbook event say nothing.
"""

from __future__ import annotations

import json

from nvls_tui.runbook.events import CommandStarted, StepStarted
from nvls_tui.runbook.kube_repair import step_in_log

AT = 1_764_648_000.125


def test_the_last_step_the_node_started_is_the_one_it_was_in(tmp_path):
    log = tmp_path / "repair-r1.jsonl"
    records = [
        {"time": "2026-12-02T04:00:00.000+00:00", "event": "audit-opened", "node": None, "kind": "repair",
         "run_id": "r1", "step": "reset"},
        StepStarted(host="gpu06", step="preflight", at=AT).to_record(),
        StepStarted(host="gpu06", step="quiesce", at=AT).to_record(),
        CommandStarted(host="gpu06", step="reset", at=AT, argv=("nvidia-smi", "-r")).to_record(),
        StepStarted(host="gpu07", step="reset", at=AT).to_record(),  # another node
        StepStarted(host="gpu06", step="restore", at=AT).to_record(),  # the restore's own step
    ]
    lines = [json.dumps(r) for r in records]
    lines.insert(3, '{"event": "step-started", "node": "gpu06", "step": "reset"')  # torn: no JSON
    log.write_text("\n".join(lines) + "\n")
    assert step_in_log(str(log), "gpu06") == "quiesce"
    assert step_in_log(str(log), "gpu07") == "reset"
    assert step_in_log(str(log), "gpu08") is None


def test_a_step_record_that_does_not_decode_into_its_event_says_nothing(tmp_path):
    log = tmp_path / "repair-r1.jsonl"
    good = StepStarted(host="gpu06", step="quiesce", at=AT).to_record()
    bad = {**StepStarted(host="gpu06", step="reset", at=AT).to_record(), "time": "not a time"}
    log.write_text("\n".join(json.dumps(r) for r in (good, bad)) + "\n")
    assert step_in_log(str(log), "gpu06") == "quiesce"

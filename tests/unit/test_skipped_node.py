"""A node the run leaves alone says ``skipped`` (issue item 17), never "repaired": a healthy node in a
multi-node repair gets the smoke re-check and nothing else. Headless JSON and text, the plan and the
typed confirmation; the console's columns are in tests/pilot/test_console_repair_skipped.py."""

from __future__ import annotations

import io
import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.runbook.changes import ResetGpus, RunSmoke
from nvls_tui.runbook.events import RunFinished, RunStarted, StepFinished
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import LOCK_TAKEN, fill_steps
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.plan_summary import what_it_does
from nvls_tui.views.runbook import NodeRun

SPEED = 400.0
NODES = "sim:seed-incident/gpu[05,07]"  # gpu05: FM killed; gpu07: healthy


def fleet_for():
    return load_fleet(NODES, speed=SPEED)


def on(fleet):
    """``main``'s ``connect``: the backends of ``fleet``'s nodes, whatever the targets say."""
    return lambda settings: sim_backends(fleet)


def reset_on(fleet, host: str) -> bool:
    return any(argv[:2] == ["nvidia-smi", "-r"] for _, argv in fleet.node(host).cmdlog)


class Terminal(io.StringIO):
    """A stdin that is a terminal and types ``answer`` when asked."""

    def isatty(self) -> bool:
        return True


def test_a_healthy_node_in_a_multi_node_repair_is_skipped_with_its_reason_in_the_json(monkeypatch, tmp_path, capsys):
    fleet = fleet_for()
    code = main(["repair", NODES, "--yes", "--json", "--audit-dir", str(tmp_path)], connect=on(fleet))
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert code == 0  # a node left alone is no failure
    assert nodes["gpu05"]["result"] == "repaired"
    healthy = nodes["gpu07"]
    assert healthy["result"] == "skipped"
    assert healthy["reason"].startswith("healthy: the NVLS smoke test passed") and "nothing was reset" in healthy["reason"]
    assert "repaired" not in healthy["message"]
    steps = {s["name"]: s["status"] for s in healthy["steps"]}
    assert steps["preflight"] == "ok" and steps["reset"] == steps["smoke-test"] == "skipped"
    assert healthy["smoke"]["passed"] is True
    assert reset_on(fleet, "gpu05") and not reset_on(fleet, "gpu07")


def test_a_skipped_node_reads_skipped_in_the_text_summary(monkeypatch, tmp_path, capsys):
    fleet = fleet_for()
    assert main(["repair", NODES, "--yes", "--audit-dir", str(tmp_path)], connect=on(fleet)) == 0
    out = capsys.readouterr().out
    assert "gpu07: skipped" in out and "gpu07: repaired" not in out
    assert "gpu07          => run finished: skipped healthy" in out


def test_the_dry_run_says_a_healthy_looking_node_is_skipped_if_its_smoke_test_passes(monkeypatch, tmp_path, capsys):
    fleet = fleet_for()
    assert main(["repair", NODES, "--dry-run", "--json", "--audit-dir", str(tmp_path)], connect=on(fleet)) == 0
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert nodes["gpu07"]["result"] == "planned"
    assert "skipped" in nodes["gpu07"]["message"] and "nothing is reset" in nodes["gpu07"]["message"]
    assert "skipped" not in nodes["gpu05"]["message"]


def test_the_typed_confirmation_does_not_say_it_resets_a_node_it_will_only_smoke_test(monkeypatch, tmp_path, capsys):
    fleet = fleet_for()
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr("sys.stdin", Terminal("nope\n"))  # cancelled: only the question is looked at
    assert main(["repair", NODES, "--audit-dir", str(tmp_path)], connect=on(fleet)) == 2
    err = capsys.readouterr().err
    resets = next(line for line in err.splitlines() if line.startswith("This resets"))
    assert resets == "This resets every GPU and NVSwitch of: gpu05"
    assert ("gpu07 looks healthy: it gets the NVLS smoke test first and is skipped (nothing reset) if it passes; "
            "it is reset only if the test fails twice") in err
    assert "== gpu07: planned (looks healthy" in err
    assert not reset_on(fleet, "gpu05") and not reset_on(fleet, "gpu07")


def test_the_plan_summary_of_a_healthy_looking_node_leads_with_the_smoke_test_and_the_skip():
    outcome = NodeOutcome("gpu07", dry_run=True, result="planned")
    fill_steps(outcome, {"preflight": [*LOCK_TAKEN, RunSmoke(8)], "reset": [ResetGpus()]})
    lines = what_it_does(outcome)
    assert lines[0] == "looks healthy: runs the NVLS smoke test first; if it passes, the node is skipped (nothing reset)"
    assert lines[1].startswith("only if the test fails twice:")
    assert any(line.startswith("resets") for line in lines[2:])


def test_a_skipped_run_folds_into_skipped_steps_and_a_result_line_that_is_not_an_error():
    run = NodeRun("gpu07")
    run.apply(RunStarted(host="gpu07", run_id="x"), 0.0)
    run.apply(StepFinished(host="gpu07", step="preflight", status="ok", duration=6.0), 6.0)
    run.apply(StepFinished(host="gpu07", step="restore", status="ok", duration=0.5), 6.5)
    _, lines = run.apply(RunFinished(host="gpu07", result="skipped",
                                     message="healthy: the NVLS smoke test passed (292.0 GB/s); nothing was reset"), 7.0)
    assert run.result == "skipped"
    assert [run.steps[s].status for s in ("quiesce", "reset", "smoke-test")] == ["skipped"] * 3
    assert lines[-1].text.startswith("⇒ run finished: skipped healthy") and lines[-1].kind == "ok"

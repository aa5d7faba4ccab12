"""A dry run that preflight refuses says the refusal first and plans no step (new-operator tryout, X3 item 1).

Before, ``repair sim:gpu-missing --dry-run`` printed every step "(planned)", a ``-g 7`` smoke test, "first a
smoke-test re-check of gpu-lost01 (the fabric looks healthy)" and "at most ~43 minutes", and only at the end
"=> run finished: refused ... is lost": a node with a lost GPU read as healthy-looking and as about to be repaired.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.console.screens.plan import plan_text
from nvls_tui.headless.repair import duration_lines
from nvls_tui.runbook.changes import ResetGpus, RunSmoke
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import Entry, fill_steps
from nvls_tui.runbook.steps import STEPS, RepairOptions
from nvls_tui.sim.fleet import load_fleet

REFUSED = [("sim:gpu-missing", "gpu-lost01", "is lost"),
           ("sim:vm-host-side", "gpu-vm01", "the host or provider must finish fabric initialisation"),
           ("sim:fm-in-container", "gpu-ctr01", "not in a host unit")]


def _dry_run(target: str, tmp_path, capsys, *extra: str) -> tuple[int, str]:
    fleet = load_fleet(target, speed=0)
    rc = main(["repair", target, "--dry-run", "--audit-dir", str(tmp_path), *extra],
              connect=lambda *_a, **_k: sim_backends(fleet))
    return rc, capsys.readouterr().out


@pytest.mark.parametrize(("target", "host", "why"), REFUSED)
def test_the_text_says_the_refusal_first_and_no_plan(target, host, why, tmp_path, capsys):
    rc, out = _dry_run(target, tmp_path, capsys)
    assert rc == 1
    lines = [line for line in out.splitlines() if line.startswith(host)]
    # The node's first progress line is the refusal; no step is "(planned)", no command is listed.
    assert lines[0].split(None, 1)[1].startswith("=> run finished: refused a repair would stop at preflight: ")
    assert why in lines[0]
    assert "(planned)" not in out and "$ " not in out
    assert "all_reduce_perf" not in out and "-g 7" not in out
    # Neither a duration nor a re-check is promised for a node that will not be repaired.
    assert "expected duration" not in out and "at most" not in out
    assert "looks healthy" not in out and "re-check" not in out
    assert f"{host}: refused - a repair would stop at preflight: " in out


@pytest.mark.parametrize(("target", "host", "why"), REFUSED)
def test_the_json_marks_every_step_not_run(target, host, why, tmp_path, capsys):
    rc, out = _dry_run(target, tmp_path, capsys, "--json")
    (node,) = json.loads(out)["nodes"]
    assert (rc, node["result"]) == (1, "refused") and why in node["message"]
    assert [s["name"] for s in node["steps"]] == list(STEPS)
    assert {s["status"] for s in node["steps"]} == {"skipped"}
    assert all(s["commands"] == [] for s in node["steps"])
    preflight, *rest = node["steps"]
    assert why in preflight["message"]
    assert {s["message"] for s in rest} == {"not run: the repair is refused at preflight"}


def _planned(host: str, recheck: bool) -> NodeOutcome:
    entries: dict[str, list[Entry]] = {name: [] for name in STEPS}
    entries["reset"] = [ResetGpus()]
    if recheck:
        entries["preflight"] = [RunSmoke(8)]
    return fill_steps(NodeOutcome(host, dry_run=True, result="planned"), entries)


def _refused(host: str) -> NodeOutcome:
    outcome = NodeOutcome(host, dry_run=True, result="refused", message="a repair would stop at preflight: lost")
    for name in STEPS:
        outcome.step(name)
    return outcome


def test_duration_counts_only_the_nodes_that_would_be_repaired():
    options = RepairOptions()
    assert duration_lines([_refused("lost1"), _refused("lost2")], options, "parallel") == []
    lines = duration_lines([_refused("lost1"), _planned("fine1", recheck=False)], options, "parallel")
    assert len(lines) == 2 and "re-check" not in lines[1]
    lines = duration_lines([_refused("lost1"), _planned("fine1", recheck=True)], options, "parallel")
    assert "re-check of fine1 " in lines[1] and "lost1" not in lines[1]


def _drawn(renderable) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_consoles_plan_of_a_refused_node_lists_no_step_to_run():
    text = _drawn(plan_text(_refused("gpu-lost01"), RepairOptions()))
    assert text.index("a repair would be refused") < text.index("lost")
    assert "$ " not in text and "How long" not in text and "(nothing to do)" not in text
    assert "No step runs: the repair stops at preflight" in text

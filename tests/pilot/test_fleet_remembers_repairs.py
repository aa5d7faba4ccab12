"""Issue 28 item 3: the fleet remembers what just failed.

After a repair fails at a step or is aborted, the node's story says what the last repair did and where
it stopped (never the failed step again as the next move), until a poll shows the node changed or a
new repair of it starts.
"""

from __future__ import annotations

import asyncio

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.story import LastRepair, node_story
from nvls_tui.model import Severity
from nvls_tui.runbook.outcome import NodeOutcome, StepOutcome
from nvls_tui.runbook.session import RepairRun
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.last_repair import RepairMemory, last_repair_of
from tests.pilot.test_console_repair import SIZE, start_repair
from tests.test_console_fakes import fixed_clock
from tests.waiting import wait_until


def gpu05():
    (backend,) = sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0))
    state = asyncio.run(backend.snapshot())
    return state, diagnose(state)


def failed_at_fm() -> NodeOutcome:
    return NodeOutcome("gpu05", result="failed", message="GPUs did not register within 300 s",
                       steps=[StepOutcome("preflight", "ok"), StepOutcome("reset", "ok"),
                              StepOutcome("fabric-manager", "failed"), StepOutcome("restore", "ok")])


def test_a_failed_repair_is_told_where_it_stopped_not_as_advice_to_do_it_again():
    state, diagnosis = gpu05()
    assert node_story(state, diagnosis).text.endswith("reset + FM start needed")  # the advice, before
    last = last_repair_of(failed_at_fm())
    assert last == LastRepair("failed", "fabric-manager", restored=True)
    story = node_story(state, diagnosis, last)
    assert story.text == ("repair failed at fabric-manager (FM start and registration wait), restored; "
                          "now: FM killed 5 days ago")
    assert story.severity is Severity.ERROR and "needed" not in story.text


def test_an_aborted_repair_says_so_and_where():
    state, diagnosis = gpu05()
    aborted = NodeOutcome("gpu05", result="aborted", reason="smoke-test: SIGTERM",
                          steps=[StepOutcome("reset", "ok"), StepOutcome("restore", "ok")])
    story = node_story(state, diagnosis, last_repair_of(aborted))
    assert story.text.startswith("repair aborted at smoke-test (the NVLS smoke test), restored; now: ")
    assert story.severity is Severity.WARNING
    unrestored = NodeOutcome("gpu05", result="aborted", reason="reset: interrupted",
                             steps=[StepOutcome("restore", "failed")])
    assert "NOT all restored: repair --restore" in node_story(state, diagnosis, last_repair_of(unrestored)).text
    assert last_repair_of(NodeOutcome("gpu05", result="repaired")) is None


def test_the_memory_keeps_the_repair_until_the_node_changes_or_is_repaired_again():
    state, diagnosis = gpu05()
    memory = RepairMemory()
    run = RepairRun(["gpu05"], "parallel", outcomes=[failed_at_fm()], finished=True)
    assert memory.remember([run], now=100.0) == {"gpu05"}
    assert memory.remember([run], now=101.0) == set()  # taken once
    assert memory.get("gpu05") is not None
    first = state.replace(polled_at=110.0)
    assert memory.seen(first, diagnosis) is False  # the baseline: the node as the repair left it
    assert memory.seen(state.replace(polled_at=120.0), diagnosis) is False and memory.get("gpu05") is not None
    healthy = diagnose(state.replace(polled_at=130.0, holders=()))
    assert memory.seen(state.replace(polled_at=130.0, holders=()), healthy) is True  # changed: forgotten
    assert memory.get("gpu05") is None
    memory.remember([RepairRun(["gpu05"], "parallel", outcomes=[failed_at_fm()], finished=True)], now=200.0)
    assert memory.remember([RepairRun(["gpu05"], "parallel")], now=210.0) == {"gpu05"}  # a new repair
    assert memory.get("gpu05") is None


async def test_after_a_failed_fm_registration_wait_the_fleet_row_says_where_the_repair_stopped(tmp_path):
    fleet = load_fleet("sim:stuck-in-progress", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu-stuck01"])
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end", timeout=60)
        run = screen.columns["gpu-stuck01"].run
        assert run.result == "failed", run.message
        await pilot.press("escape")

        def note() -> str:
            grids = app.screen.query(FleetGrid)
            return grids.first().get_cell("gpu-stuck01", "note").plain if grids else ""

        await wait_until(pilot, lambda: note().startswith("repair failed at "), "the fleet's story of the failure")
        assert note().startswith("repair failed at fabric-manager (FM start and registration wait)")

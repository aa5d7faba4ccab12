"""Pilot test (issue item 17): in a multi-node repair from the console, a healthy node is smoke-tested
and left alone, and every place says so: the plan, the confirmation, its column. It used to show
"✔ repaired … in 6.9 s" above "healthy, no repair needed", after a confirmation that said it would
reset it."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_console_repair import SIZE, plain
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until


async def test_a_healthy_node_repaired_beside_a_broken_one_is_planned_confirmed_and_shown_as_skipped(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        for name in ("gpu05", "gpu07"):
            grid.move_cursor(row=grid.visible_hosts.index(name))
            await pilot.press("space")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 2,
                         "the dry run of both nodes")
        await pilot.pause()
        plan = app.screen
        note = plain(plan.query_one("#plan-note"))
        assert "This resets every GPU and NVSwitch of gpu05." in note
        assert ("gpu07 looks healthy: it gets the NVLS smoke test first and is skipped (nothing reset) if it "
                "passes; it is reset only if the test fails twice.") in note
        body = plain(plan.query_one(f"#plan-body-{plan.hosts.index('gpu07')}"))
        assert "looks healthy: runs the NVLS smoke test first; if it passes, the node is skipped" in body

        await pilot.press(*"gpu05 gpu07")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen), "the runbook screen")
        screen = app.screen
        await wait_until(pilot, lambda: screen.finished_at is not None, "both runs to end")
        await pilot.pause()
        broken, healthy = screen.columns["gpu05"], screen.columns["gpu07"]
        assert broken.run.result == "repaired"
        assert healthy.run.result == "skipped", healthy.run.message
        summary = plain(healthy.query_one(".summary"))
        assert "skipped" in summary and "repaired" not in summary and "✔" not in summary
        assert "healthy: the NVLS smoke test passed" in summary and "nothing was reset" in summary
        assert healthy.border_subtitle == "skipped"
        assert {healthy.run.steps[s].status for s in ("quiesce", "reset", "fabric-manager", "smoke-test")} == {"skipped"}
        assert not any(argv[:2] == ["nvidia-smi", "-r"] for _, argv in fleet.node("gpu07").cmdlog)

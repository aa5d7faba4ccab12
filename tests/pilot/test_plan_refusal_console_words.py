"""Issue 38 item 9: the console's refused plan named `nvls-tui repair --restore` (a command for a shell) where
the console's own move is its key: open the node and press U. The plan now says the key (the keymap's, if
remapped) beside the command it stands for."""

from __future__ import annotations

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import Runbook
from nvls_tui.sim.fleet import load_fleet
from tests.unit.test_runbook_sim import FAST, SPEED, FaultBackend
from tests.waiting import first_poll, wait_until


async def plan_of_gpu05(app, pilot) -> PlanScreen:
    """The console's plan of gpu05 (space, r), once its dry run is done."""
    await first_poll(app)
    await pilot.pause()
    await pilot.press("space", "r")
    await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and "gpu05" in app.screen.outcomes,
                     "the dry run")
    assert isinstance(app.screen, PlanScreen)
    return app.screen


async def refused_plan_note(tmp_path, keymap=None) -> str:
    fleet = load_fleet("sim:seed-incident/gpu05", speed=SPEED)
    await Runbook(FaultBackend(fleet, "gpu05", die_at=("nvidia-smi", "-r")), FAST).run()
    assert fleet.node("gpu05").files.get(RECORD_FILE)
    app = NvlsApp([SimulatedBackend(fleet, "gpu05")], poll_interval=None, audit_dir=str(tmp_path), keymap=keymap)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await plan_of_gpu05(app, pilot)
        assert screen.outcomes["gpu05"].result == "refused"
        return str(screen.query_one("#plan-note").render())


async def test_the_refused_plan_of_an_interrupted_repair_names_the_consoles_key(tmp_path):
    note = await refused_plan_note(tmp_path)
    assert "To put gpu05 back from this console: Esc, Enter on gpu05, then U (Restore)" in note, note


async def test_a_remapped_restore_key_is_the_one_named(tmp_path):
    note = await refused_plan_note(tmp_path, keymap={"node.restore": "R"})
    assert "To put gpu05 back from this console: Esc, Enter on gpu05, then R (Restore)" in note, note


async def test_a_repairable_plan_still_asks_for_the_names_typed(tmp_path):
    """The note's loop once hid the typed confirmation of every plan (caught by the plan snapshot)."""
    from nvls_tui.backends.simulated import sim_backends

    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=SPEED)), poll_interval=None,
                  audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await plan_of_gpu05(app, pilot)
        await pilot.pause()
        typed = app.screen.query_one("#plan-typed")
        assert typed.display and app.focused is typed
        assert "To put" not in str(app.screen.query_one("#plan-note").render())

"""Issue 28 item 5: a key that cannot act says why, and the focused panel shows without colour.

Every key below once did nothing at all when pressed (Textual drops a binding whose ``check_action`` is
not True): ``s``/``u`` outside the Units table, ``t``/``R`` in ``--read-only``, ``t`` with nothing
selected, ``U`` with no record. Each now leaves one toast that names the reason and the way on, and
opens no dialog.
"""

from __future__ import annotations

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen, wait_until


def sim_app(read_only: bool = False) -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                   clock=fixed_clock, read_only=read_only)


def toasts(app: NvlsApp) -> list[str]:
    return [n.message for n in app._notifications]


async def said(pilot, app: NvlsApp, words: str) -> str:
    await wait_until(pilot, lambda: any(words in m for m in toasts(app)), f"a toast saying {words!r}")
    return next(m for m in toasts(app) if words in m)


async def test_s_and_u_outside_the_units_table_say_where_to_go_and_open_nothing():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        assert screen.focused is screen.query_one("#holders")
        await pilot.press("s")
        assert "move to the Units table (tab) to stop a unit" in await said(pilot, app, "Units table")
        await pilot.press("u")
        await said(pilot, app, "to start a unit")
        assert isinstance(app.screen, NodeScreen)


async def test_s_in_the_units_table_acts_on_the_unit_under_its_cursor_or_says_why_not():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        units = screen.query_one("#units")
        units.focus()
        await pilot.pause()
        # The cursor starts on nvidia-fabricmanager, which is failed on gpu05: nothing to stop.
        await pilot.press("s")
        message = await said(pilot, app, "nothing to stop")
        assert "nvidia-fabricmanager is failed" in message and "u starts it" in message
        assert isinstance(app.screen, NodeScreen)
        await pilot.press("down")  # kubelet, active
        await pilot.press("u")
        assert "kubelet is already active" in await said(pilot, app, "already active")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop confirmation")
        assert "Stop kubelet.service on gpu05?" in str(app.screen.query_one("#confirm-title").render())


@pytest.mark.parametrize("key, words", [("t", "read-only: SIGTERM"), ("R", "read-only: Reset"),
                                         ("F", "read-only: FM restart"), ("T", "read-only: Smoke test"),
                                         ("s", "read-only: Stop unit")])
async def test_read_only_refuses_node_changing_keys_in_words(key, words):
    app = sim_app(read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press(key)
        message = await said(pilot, app, words)
        assert "--read-only" in message
        assert isinstance(app.screen, NodeScreen)


async def test_t_with_nothing_selected_and_U_without_a_record_say_so():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("t")
        await said(pilot, app, "Select holders first")
        await pilot.press("U")
        await said(pilot, app, "gpu05 holds no record of an interrupted repair")
        assert isinstance(app.screen, NodeScreen)


async def test_the_focused_panel_has_a_heavy_border_that_needs_no_colour():
    # NO_COLOR strips colour, so the focused panel must differ in its line, not only its colour.
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        box, units = screen.query_one("#holders-box"), screen.query_one("#units")
        assert box.styles.border_top[0] == "heavy"
        assert units.styles.border_top[0] == "round"
        units.focus()
        await pilot.pause()
        assert units.styles.border_top[0] == "heavy"
        assert box.styles.border_top[0] == "round"
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, NodeScreen), "the fleet")
        assert app.screen.query_one("#grid").styles.border_top[0] == "heavy"


async def test_t_and_a_on_a_repair_that_has_ended_say_why_they_do_nothing():
    # Found by a new operator's tmux pass (tenth session): the footer of a finished repair still read
    # `t SIGTERM`, and t did nothing, without a word.
    from nvls_tui.console.screens.runbook import RunbookScreen

    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.fleet.get("gpu05") is not None, "the first poll")
        app.plan_repair(["gpu05"])
        from nvls_tui.console.screens.plan import PlanScreen

        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 1, "the plan")
        app.screen.query_one("#plan-typed").focus()
        await pilot.press(*"gpu05", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunbookScreen) and app.screen.finished_at is not None,
                         "the repair to end")
        await pilot.press("t")
        assert "no node waits for its holders" in await said(pilot, app, "no node waits")
        await pilot.press("a")
        assert "the repair has ended" in await said(pilot, app, "has ended")
        assert isinstance(app.screen, RunbookScreen)

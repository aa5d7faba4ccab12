"""The pickers' titles read as one sentence: no double space (X3 item 6: "Sort the fleet by  (Enter picks …")."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.pickers import ColumnPicker, SortPicker
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until


async def test_the_sort_and_column_pickers_titles_have_single_spaces():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                  clock=fixed_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await first_poll(app)
        titles = []
        for key, kind in (("O", SortPicker), ("c", ColumnPicker)):
            await pilot.press(key)
            await wait_until(pilot, lambda kind=kind: isinstance(app.screen, kind), f"the {kind.__name__}")
            titles.append(str(app.screen.query_one("#picker-title").content))
            await pilot.press("escape")
            await wait_until(pilot, lambda kind=kind: not isinstance(app.screen, kind), "the fleet again")
        assert titles[0].startswith("Sort the fleet by (Enter picks")
        assert all("  " not in t for t in titles), titles

"""Issue 38 item 9: the sort arrow was only in the top line (`sorted by hold ↓`), not on the column it sorts:
the sorted column's header carries it too, and no other header does."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.fleet_sort import SortOrder
from tests.waiting import first_poll


def headers(grid: FleetGrid) -> dict[str, str]:
    return {str(key.value): column.label.plain for key, column in grid.columns.items()}


async def test_the_sorted_column_header_shows_the_arrow_the_top_line_shows():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        screen = app.screen
        grid = screen.query_one(FleetGrid)
        plain = headers(grid)
        assert not any("↓" in h or "↑" in h for h in plain.values())  # the default verdict order: no arrow
        screen.grid_order = SortOrder("holders")
        screen.refresh_grid()
        await pilot.pause()
        marked = headers(grid)
        # "hold" fills its 4 columns: the arrow takes the last letter's place rather than widen the grid.
        assert (plain["holders"], marked["holders"]) == ("hold", "hol↓")
        assert {k: v for k, v in marked.items() if k != "holders"} == {k: v for k, v in plain.items() if k != "holders"}
        screen.grid_order = SortOrder("fm")  # words: a-z, and "FM unit" has room for its arrow
        screen.refresh_grid()
        await pilot.pause()
        assert (headers(grid)["fm"], headers(grid)["holders"]) == ("FM unit↑", "hold")
        screen.grid_order = SortOrder()
        screen.refresh_grid()
        await pilot.pause()
        assert headers(grid) == plain

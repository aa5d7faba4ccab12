"""A cell of the node screen's tables is never cut without a sign: the Units table's ``activating`` read
``activati`` once a poll changed ``active`` to it (DataTable's update_cell keeps a column's width unless
asked), so a unit in the middle of its start looked like an unknown word."""

from __future__ import annotations

from textual.widgets import DataTable

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen, wait_until

DCGM = "nvidia-dcgm.service"


def shown_row(table: DataTable, key: str) -> str:
    """The row of ``key`` as the table draws it (its header is line 0)."""
    index = table.get_row_index(key)
    return table.render_line(index + 1).text


async def test_a_unit_that_turns_activating_after_the_first_poll_shows_the_whole_word():
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu01")
        table = screen.query_one("#units", DataTable)
        assert "active" in shown_row(table, DCGM) and "running" in shown_row(table, DCGM)
        unit = fleet.node("gpu01").units[DCGM]
        unit.active, unit.sub = "activating", "auto-restart"  # systemd's longest state words
        app.poll_now("gpu01")
        await wait_until(pilot, lambda: app.fleet.get("gpu01").service(DCGM).active == "activating", "the poll")
        await wait_until(pilot, lambda: "activati" in shown_row(table, DCGM), "the table's redraw")
        row = shown_row(table, DCGM)
        assert "activating" in row and "auto-restart" in row, row

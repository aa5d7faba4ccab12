"""Issue 38 item 9: the node screen's kernel-events line was cut at the panel's edge, inside a hex code, with no
mark. A line longer than its room now ends in ``…`` at a word's end (never inside a token such as
``0x00000000``), and the whole line is under the table for the row under the cursor."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.node_text import kernel_message
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import open_node_screen


@pytest.mark.parametrize("size", [(160, 48), (80, 24)], ids=["160x48", "80x24"])
async def test_a_long_kernel_line_ends_in_an_ellipsis_at_a_word_and_is_whole_below(size):
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None,
                  clock=lambda: 1_785_000_000.0)
    async with app.run_test(size=size) as pilot:
        screen = await open_node_screen(app, pilot, "gpu06")
        await pilot.pause()
        await pilot.pause()
        table = screen.query_one("#kernel", DataTable)
        full = kernel_message(screen.state.kernel_events[0].line)
        cell = table.get_row_at(0)[2].plain
        assert cell.endswith("…") and len(full) > len(cell)
        shown = cell.removesuffix("…").rstrip()
        assert full.startswith(shown) and full[len(shown)] == " ", (shown, full)  # cut between two words
        drawn = table.render_line(1).text.rstrip()
        assert drawn.endswith(cell), (drawn, cell)  # the mark is on screen, not past the edge
        table.focus()
        table.move_cursor(row=0)
        await pilot.pause()
        assert full in str(screen.query_one("#kernel-detail", Static).render()).replace("\n", " ")

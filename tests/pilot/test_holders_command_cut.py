"""The node screen's holders table never cuts a command silently.

At 80 columns DCGM's ``/snap/dcgm/62/usr/bin/nv-hostengine`` read ``/snap/dcgm/62/usr/bin/nv-hostengi`` at
the table's edge, a different name. A command longer than the room the table has left for it now ends in
``…`` inside that room; a command that fits, and every command on a wide terminal, is shown whole.
"""

from __future__ import annotations

from textual.widgets import DataTable

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, wait_until

DCGM = "/snap/dcgm/62/usr/bin/nv-hostengine -n"


async def holders_at(size: tuple[int, int]) -> tuple[dict[str, str], list[str]]:
    """sim:seed-incident's gpu05 at ``size``: its holders' command cells by PID, and the table's lines on screen."""
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None,
                  clock=lambda: 1_785_000_000.0)
    async with app.run_test(size=size) as pilot:
        await first_poll(app, timeout=30)
        app.open_node("gpu05")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen")
        await pilot.pause()
        await pilot.pause()
        table = app.screen.query_one("#holders", DataTable)
        labels = [column.label.plain for column in table.columns.values()]
        at = labels.index("command")
        cells = {key.value: table.get_row(key)[at].plain for key in table.rows}
        return cells, [table.render_line(y).text for y in range(table.size.height)]


async def test_a_long_command_at_80_columns_ends_in_an_ellipsis_inside_the_table():
    cells, lines = await holders_at((80, 24))
    dcgm = next(cell for cell in cells.values() if cell.startswith("/snap/dcgm/"))
    assert dcgm.endswith("…") and DCGM.startswith(dcgm[:-1])
    row = next(line for line in lines if "/snap/dcgm/" in line)
    assert row.rstrip().endswith(dcgm)  # the mark is on screen, at the table's edge, not past it
    assert "watch -n 1 nvidia-smi" in cells.values()  # one that fits is whole


async def test_on_a_wide_terminal_every_command_is_whole():
    cells, _ = await holders_at((160, 48))
    assert DCGM in cells.values()
    assert not any(cell.endswith("…") for cell in cells.values())

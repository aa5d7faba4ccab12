"""The export of a narrow console holds every cell whole.

At 80 columns the grid cuts the story to fit (``fabric out of sync (30 …``) and shows its short form; the
export wrote those cut cells, so a CSV written at 80x24 lost what a CSV written at 160x48 kept. The files
keep the rows, order, filter and columns shown, but each cell is the whole text.
"""

from __future__ import annotations

import csv
import io
import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.fleet import FleetScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_export import _export_command
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll


async def test_an_export_at_80_columns_writes_the_whole_story(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await first_poll(app)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        grid = screen.query_one(FleetGrid)
        shown = list(grid.visible_hosts)
        labels = [c.label.plain for c in grid.ordered_columns]
        row = grid.get_row(grid.ordered_rows[shown.index("gpu06")].key)
        assert row[labels.index("story")].plain.endswith("…")  # the grid cuts it at this width
        paths = _export_command(screen)()
        assert paths is not None
        rows = list(csv.reader(io.StringIO(paths[0].read_text())))
        assert rows[0] == labels  # the columns shown, in order
        assert [r[0] for r in rows[1:]] == shown
        story = {r[0]: r[labels.index("story")] for r in rows[1:]}
        assert story["gpu06"] == "fabric out of sync (30 min ago); stop holders, reset, restart FM"
        assert story["gpu05"] == "FM killed 5 days ago; reset + FM start needed"
        assert not any("…" in cell for r in rows for cell in r)
        doc = json.loads(paths[1].read_text())
        assert doc["rows"][shown.index("gpu06")]["story"] == story["gpu06"]

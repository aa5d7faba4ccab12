"""Issue 28 item 14: the fleet view exported from the palette, as CSV and JSON of what the grid shows.

The console writes the grid's own rows (filter and order as shown, ``?`` kept) into the state
directory's ``exports``, private, and says where in a toast; a directory it may not use writes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.export import GridView, to_csv, to_json
from nvls_tui.console.screens.fleet import EXPORT_TITLE, FleetScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll


def _export_command(screen):
    return next(cb for title, cb, _ in screen.palette_commands() if title == EXPORT_TITLE)


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_the_palette_exports_the_rows_the_grid_shows_in_its_order_privately(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        grid = screen.query_one(FleetGrid)
        shown = list(grid.visible_hosts)
        paths = _export_command(screen)()
        await pilot.pause()
        assert paths is not None
        csv_path, json_path = paths
        assert csv_path.parent == tmp_path / "state" / "nvls-tui" / "exports"
        for path in paths:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(csv_path.parent).st_mode) == 0o700
        rows = list(csv.reader(io.StringIO(csv_path.read_text())))
        assert rows[0] == [c.label.plain for c in grid.ordered_columns]
        assert [r[0] for r in rows[1:]] == shown and shown[:2] == ["gpu05", "gpu06"]  # broken first, as shown
        story = rows[0].index("story")
        assert "FM killed" in rows[1][story]
        doc = json.loads(json_path.read_text())
        assert doc["simulated"] is True and [r["host"] for r in doc["rows"]] == shown
        assert any(str(csv_path) in t and json_path.name in t for t in _toasts(app))


async def test_a_filter_leaves_the_hidden_nodes_out_of_the_export(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.press("slash", *"gpu06", "enter")
        await pilot.pause()
        paths = _export_command(app.screen)()
        assert paths is not None
        doc = json.loads(paths[1].read_text())
        assert [r["host"] for r in doc["rows"]] == ["gpu06"]


async def test_an_exports_directory_that_is_a_link_writes_nothing_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "state" / "nvls-tui").mkdir(parents=True, mode=0o700)
    (tmp_path / "state" / "nvls-tui" / "exports").symlink_to(elsewhere)
    app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        assert _export_command(app.screen)() is None
        await pilot.pause()
        assert list(elsewhere.iterdir()) == []
        assert any(t.startswith("Export not written: refusing") and "symbolic link" in t for t in _toasts(app))


def test_node_text_in_a_cell_is_data_in_both_files():
    view = GridView(("host", "story"), (("gpu01", "=HYPERLINK(\"http://x\")\x1b[2J"), ("gpu02", "-1+1"),
                                        ("gpu03", "@SUM(A1)"), ("gpu04", "fine, \"quoted\"")))
    rows = list(csv.reader(io.StringIO(to_csv(view))))
    assert rows[1][1].startswith("'=HYPERLINK(") and "\x1b" not in rows[1][1]  # no escape reaches a terminal
    assert [r[1][:1] for r in rows[1:4]] == ["'", "'", "'"]  # never a formula in a spreadsheet
    assert rows[4][1] == "fine, \"quoted\""  # CSV quoting keeps commas and quotes whole
    doc = json.loads(to_json(view, "2026-01-01T00:00:00+0000"))
    assert doc["rows"][3] == {"host": "gpu04", "story": "fine, \"quoted\""}
    assert "\x1b" not in doc["rows"][0]["story"]

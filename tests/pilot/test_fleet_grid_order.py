"""The fleet grid reorders its rows in place when only the order changes (no rebuild of every row)."""

from __future__ import annotations

import inspect

from textual.app import App
from textual.widgets import DataTable

from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import Fleet, NodeState
from tests.waiting import wait_until

HOSTS = [f"gpu{i:02d}" for i in range(1, 7)]


class GridApp(App):
    def compose(self):
        yield FleetGrid(HOSTS, id="grid")


async def test_a_new_order_moves_the_rows_and_the_cursor_follows_its_host():
    fleet = Fleet(tuple(NodeState(host=h, reachable=False, error="down") for h in HOSTS))
    diagnoses = {n.host: diagnose(n) for n in fleet.nodes}
    app = GridApp()
    async with app.run_test() as pilot:
        grid = app.query_one(FleetGrid)
        assert grid.show(fleet, diagnoses, HOSTS, now=0.0) > 0  # first draw: every cell
        grid.move_cursor(row=2)  # gpu03
        await pilot.pause()
        rebuilt = []
        grid._rebuild = lambda *a: rebuilt.append(a)  # must not be needed for a pure reorder
        reversed_order = list(reversed(HOSTS))
        assert grid.show(fleet, diagnoses, reversed_order, now=0.0) == 0  # no cell changed
        assert rebuilt == []
        assert grid.visible_hosts == tuple(reversed_order)
        assert [grid.get_row_at(i)[0].plain for i in range(len(HOSTS))] == reversed_order
        assert grid.current_host == "gpu03" and grid.cursor_row == reversed_order.index("gpu03")


async def test_a_few_rows_in_or_out_change_only_those_rows_and_keep_the_order():
    # A filter narrowed by one key drops a few of 1,024 rows: re-adding the rest cost 300 ms a key.
    fleet = Fleet(tuple(NodeState(host=h, reachable=False, error="down") for h in HOSTS))
    diagnoses = {n.host: diagnose(n) for n in fleet.nodes}
    app = GridApp()
    async with app.run_test() as pilot:
        grid = app.query_one(FleetGrid)
        grid.show(fleet, diagnoses, HOSTS, now=0.0)
        grid.move_cursor(row=3)  # gpu04
        await pilot.pause()
        rebuilt = []
        grid._rebuild = lambda *a: rebuilt.append(a)
        narrowed = ["gpu01", "gpu03", "gpu04", "gpu06"]
        grid.show(fleet, diagnoses, narrowed, now=0.0)
        assert rebuilt == [] and grid.visible_hosts == tuple(narrowed)
        assert [grid.get_row_at(i)[0].plain for i in range(grid.row_count)] == narrowed
        assert grid.current_host == "gpu04"
        widened = ["gpu06", "gpu05", "gpu04", "gpu03", "gpu02", "gpu01"]  # back, in another order
        assert grid.show(fleet, diagnoses, widened, now=0.0) > 0  # the two rows that came back
        assert rebuilt == [] and [grid.get_row_at(i)[0].plain for i in range(grid.row_count)] == widened
        assert grid.current_host == "gpu04"


class _MeasuringGrid(FleetGrid):
    """The grid with DataTable's own measuring of new rows, cell by cell: the reference the fast
    path is held to (a subclass of the test's, so Textual's class is never patched)."""

    _update_dimensions = DataTable._update_dimensions


class _CountingGrid(FleetGrid):
    """The grid, counting the rows DataTable hands its ``_update_dimensions``."""

    measured: list[int]

    def _update_dimensions(self, new_rows) -> None:
        new_rows = list(new_rows)
        self.measured = [*getattr(self, "measured", []), len(new_rows)]
        super()._update_dimensions(new_rows)


class _OneGridApp(App):
    def __init__(self, grid: FleetGrid) -> None:
        super().__init__()
        self.grid = grid

    def compose(self):
        yield self.grid


async def test_rows_added_unmeasured_paint_as_the_measured_ones_do():
    """The grid skips DataTable's cell-by-cell measuring of new rows (its columns have widths): the
    table's size and every painted line are what DataTable's own measuring gives."""
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.sim.fleet import load_fleet

    fleet = load_fleet("sim:seed-incident", speed=0)
    states = [await b.snapshot() for b in sim_backends(fleet)]
    nodes = Fleet(tuple(states))
    diagnoses = {s.host: diagnose(s) for s in states}
    order = [s.host for s in states]

    async def painted(grid: FleetGrid) -> tuple:
        app = _OneGridApp(grid)
        async with app.run_test(size=(160, 20)) as pilot:
            grid.show(nodes, diagnoses, order, now=0.0)
            await pilot.pause()
            grid.show(nodes, diagnoses, order[:2], now=0.0)  # narrowed, then every row back
            grid.show(nodes, diagnoses, order, now=0.0)
            await pilot.pause()
            return grid.virtual_size, [grid.render_line(y).text for y in range(len(order) + 1)]

    fast = await painted(FleetGrid(HOSTS, id="grid"))
    assert fast == await painted(_MeasuringGrid(HOSTS, id="grid"))
    assert "gpu05" in "".join(fast[1])


async def test_textual_still_hands_new_rows_to_the_method_the_grid_overrides():
    """FleetGrid overrides DataTable's private ``_update_dimensions(new_rows)``: if Textual renames it,
    changes what it is given or stops calling it, the override is dead (or wrong) without a word. This
    says so, loudly: see FleetGrid._update_dimensions in nvls_tui/console/widgets/fleet_grid.py."""
    parameters = list(inspect.signature(DataTable._update_dimensions).parameters)
    assert parameters == ["self", "new_rows"], f"DataTable._update_dimensions now takes {parameters}"
    fleet = Fleet(tuple(NodeState(host=h, reachable=False, error="down") for h in HOSTS))
    diagnoses = {n.host: diagnose(n) for n in fleet.nodes}
    grid = _CountingGrid(HOSTS, id="grid")
    async with _OneGridApp(grid).run_test() as pilot:
        grid.show(fleet, diagnoses, HOSTS, now=0.0)
        await wait_until(pilot, lambda: sum(getattr(grid, "measured", ())) == len(HOSTS),
                         "DataTable to call the grid's _update_dimensions with the six new rows")


async def test_a_redraw_without_ages_writes_only_the_rows_whose_node_changed_and_new_rows_get_their_age():
    # A poll of one of 1,024 nodes must not revisit 1,023 rows; their ages move with the 5 s refresh.
    fleet = Fleet(tuple(NodeState(host=h, polled_at=0.0) for h in HOSTS))
    diagnoses = {n.host: diagnose(n) for n in fleet.nodes}
    app = GridApp()
    async with app.run_test() as pilot:
        grid = app.query_one(FleetGrid)
        grid.show(fleet, diagnoses, HOSTS[:4], now=0.0)
        await pilot.pause()
        assert grid.get_cell("gpu01", "age").plain == "<10s"
        polled = NodeState(host="gpu02", polled_at=25.0, reachable=False, error="down")
        fleet = fleet.with_node(polled)
        diagnoses["gpu02"] = diagnose(polled)
        # 30 s later: only gpu02 (polled again) is written, at its own age; gpu01's age waits.
        assert grid.show(fleet, diagnoses, HOSTS[:4], now=30.0, ages=False) > 0
        assert grid.get_cell("gpu02", "note").plain.startswith("stale: down")
        assert grid.get_cell("gpu02", "age").plain == "<10s"
        assert grid.get_cell("gpu01", "age").plain == "<10s"
        # a row that comes back (the filter widened) is drawn with its age of now
        assert grid.show(fleet, diagnoses, HOSTS, now=30.0, ages=False) > 0
        assert grid.get_cell("gpu05", "age").plain == "30s"
        assert grid.show(fleet, diagnoses, HOSTS, now=30.0, ages=False) == 0  # nothing changed since
        # the periodic refresh brings every age up to date
        assert grid.show(fleet, diagnoses, HOSTS, now=30.0) > 0
        assert grid.get_cell("gpu01", "age").plain == "30s"
        assert grid.get_cell("gpu02", "age").plain == "<10s"

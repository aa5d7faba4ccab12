"""bulk_rows: many rows in or out at once leave a DataTable exactly as the public methods do.

Two tables in one running app, one driven by ``add_row``/``remove_row``, one by ``add_rows``/
``remove_rows``: after each step their rows, keys, cells, cursor and what they paint are the same.
"""

from __future__ import annotations

import random

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, DuplicateKey, RowDoesNotExist

from nvls_tui.console.widgets.bulk_rows import add_rows, remove_rows, write_cells

COLUMNS = ("host", "verdict", "gpus")


def cells(key: str) -> list[Text]:
    return [Text(key), Text("broken" if key.endswith("7") else "healthy", style="bold"), Text("8/8")]


class Twins(App):
    def compose(self) -> ComposeResult:
        yield DataTable(id="public")
        yield DataTable(id="bulk")

    def on_mount(self) -> None:
        for table in self.query(DataTable):
            for name in COLUMNS:
                table.add_column(name, key=name)


def snapshot(table: DataTable) -> tuple:
    keys = [row.key.value for row in table.ordered_rows]
    rows = [[str(c) for c in table.get_row(k)] for k in keys]
    return keys, rows, table.cursor_coordinate, table.row_count


async def test_batches_of_adds_and_removes_match_the_public_methods_step_by_step():
    rng = random.Random(8)
    app = Twins()
    async with app.run_test(size=(80, 30)) as pilot:
        public, bulk = app.query_one("#public", DataTable), app.query_one("#bulk", DataTable)
        present: list[str] = []
        pool = [f"gpu{i:04d}" for i in range(300)]
        for step in range(12):
            absent = [k for k in pool if k not in present]
            add = rng.sample(absent, min(len(absent), rng.randint(0, 120)))
            for key in add:
                public.add_row(*cells(key), key=key)
            add_rows(bulk, [(key, cells(key)) for key in add])
            present += add
            if step % 3 == 2:  # the grid moves rows with sort (a verdict changed): indexes out of insertion order
                for table in (public, bulk):
                    table.sort("host", key=lambda cell: cell.plain[::-1], reverse=step % 2 == 0)
            public.move_cursor(row=rng.randrange(max(1, len(present))), animate=False)
            bulk.move_cursor(row=public.cursor_row, animate=False)
            gone = rng.sample(present, min(len(present), rng.randint(0, 90)))
            for key in gone:
                public.remove_row(key)
            remove_rows(bulk, gone)
            present = [k for k in present if k not in gone]
            await pilot.pause()
            assert snapshot(bulk) == snapshot(public), step
            # what they paint, line for line (the dimensions of new rows included)
            assert [bulk.render_line(y).text for y in range(12)] == [public.render_line(y).text for y in range(12)]


async def test_a_bad_batch_changes_nothing():
    app = Twins()
    async with app.run_test(size=(80, 30)) as pilot:
        bulk = app.query_one("#bulk", DataTable)
        add_rows(bulk, [("a", cells("a")), ("b", cells("b"))])
        before = snapshot(bulk)
        with pytest.raises(DuplicateKey):
            add_rows(bulk, [("c", cells("c")), ("a", cells("a"))])
        with pytest.raises(DuplicateKey):
            add_rows(bulk, [("d", cells("d")), ("d", cells("d"))])
        with pytest.raises(ValueError, match="More values"):
            add_rows(bulk, [("e", [*cells("e"), Text("extra")])])
        with pytest.raises(RowDoesNotExist):
            remove_rows(bulk, ["a", "zz"])
        await pilot.pause()
        assert snapshot(bulk) == before


def painted(table: DataTable, lines: int = 12) -> list[str]:
    return [table.render_line(y).text for y in range(lines)]


async def test_cells_written_in_a_batch_paint_as_update_cell_does_on_screen_and_after_a_scroll():
    rng = random.Random(16)
    app = Twins()
    async with app.run_test(size=(80, 30)) as pilot:
        public, bulk = app.query_one("#public", DataTable), app.query_one("#bulk", DataTable)
        keys = [f"gpu{i:04d}" for i in range(200)]
        for table in (public, bulk):
            add_rows(table, [(key, cells(key)) for key in keys])
        await pilot.pause()
        for step in range(6):
            writes = [(rng.choice(keys), rng.choice(COLUMNS), Text(f"v{step}.{i}", style="red" if i % 2 else ""))
                      for i in range(rng.randint(1, 40))]
            for row, column, value in writes:
                public.update_cell(row, column, value)
            assert write_cells(bulk, writes) == len(writes)
            await pilot.pause()
            assert snapshot(bulk) == snapshot(public), step
            assert painted(bulk) == painted(public), step
            row = rng.randrange(len(keys))  # rows written off screen paint their new cells once scrolled to
            for table in (public, bulk):
                table.move_cursor(row=row, animate=False)
            await pilot.pause()
            assert painted(bulk) == painted(public), step


async def test_a_batch_written_off_screen_does_not_repaint_the_table_and_one_on_screen_does():
    app = Twins()
    async with app.run_test(size=(80, 30)) as pilot:
        bulk = app.query_one("#bulk", DataTable)
        keys = [f"gpu{i:04d}" for i in range(200)]
        add_rows(bulk, [(key, cells(key)) for key in keys])
        await pilot.pause()
        repaints = []
        original = bulk.refresh
        bulk.refresh = lambda *regions, **k: (repaints.append(regions), original(*regions, **k))[1]
        write_cells(bulk, [("gpu0150", "verdict", Text("broken")), ("gpu0199", "gpus", Text("7/8"))])
        assert repaints == []
        assert bulk.get_cell("gpu0150", "verdict").plain == "broken"
        write_cells(bulk, [("gpu0150", "verdict", Text("healthy")), ("gpu0001", "gpus", Text("6/8"))])
        # only the line of the row on screen, not the whole table
        assert [[(r.y, r.height) for r in regions] for regions in repaints] == [[(bulk.header_height + 1, 1)]]
        await pilot.pause()
        assert "6/8" in painted(bulk)[bulk.header_height + 1]


async def test_a_batch_naming_a_cell_that_does_not_exist_writes_nothing():
    app = Twins()
    async with app.run_test(size=(80, 30)) as pilot:
        bulk = app.query_one("#bulk", DataTable)
        add_rows(bulk, [("a", cells("a")), ("b", cells("b"))])
        before = snapshot(bulk)
        with pytest.raises(CellDoesNotExist):
            write_cells(bulk, [("a", "verdict", Text("broken")), ("zz", "verdict", Text("x"))])
        with pytest.raises(CellDoesNotExist):
            write_cells(bulk, [("a", "verdict", Text("broken")), ("b", "nope", Text("x"))])
        await pilot.pause()
        assert snapshot(bulk) == before

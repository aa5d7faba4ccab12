"""A node-screen table draws its rows at the column widths it settled on, never at the ones it had before.

DataTable measures a column again only when idle (``update_cell(update_width=True)``, what ``sync_rows``
writes with) and keeps the rows it drew in between under the same cache key. A row drawn between the
write and that measure kept the old widths until the next change: with a column narrowed, the columns
right of it stayed where they were (the holders' devices after a shorter command), and the kernel table's
last line was drawn wider than the table and cut, which left the 160x48 node-screen snapshots depending on
how many frames the screen happened to draw (zero-width ``<rect>``s at the kernel table's right edge)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from nvls_tui.console.widgets.tables import SettledTable, sync_rows
from tests.waiting import wait_until


class OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield SettledTable(id="t")


def drawn(table: SettledTable) -> str:
    """Line 1 (the row under the header) as the table draws it now."""
    return table.render_line(1).text


async def test_a_row_drawn_before_a_column_narrows_is_drawn_again_at_the_new_width():
    app = OneTable()
    async with app.run_test(size=(60, 6)) as pilot:
        table = app.query_one(SettledTable)
        table.add_columns("command", "devices")
        sync_rows(table, [("1", ("a-very-long-command-line", "0-7"))])
        await wait_until(pilot, lambda: table.columns[table.ordered_columns[0].key].content_width == 24,
                         "the command column measured at its long cell")
        assert drawn(table).startswith(" a-very-long-command-line  0-7 "), drawn(table)

        sync_rows(table, [("1", ("short", "0-7"))])
        # A frame between the write and the idle measure (the screen's refresh timer may come first).
        assert drawn(table).startswith(" short ")
        await wait_until(pilot, lambda: table.ordered_columns[0].content_width == 7,
                         "the command column measured at its short cell (its label, 7)")
        await pilot.pause()
        # The devices sit right after the narrowed column, as a table drawn from scratch has them.
        assert drawn(table).startswith(" short    0-7 "), repr(drawn(table))
        fresh = drawn(table)
        table._clear_caches()
        assert drawn(table) == fresh

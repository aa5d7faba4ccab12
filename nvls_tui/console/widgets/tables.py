"""Keep a DataTable in step with new rows without losing the cursor: the node screen's tables."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

Cell = Text | str
Row = tuple[str, Sequence[Cell]]


def _sig(cell: Cell) -> tuple:
    if isinstance(cell, Text):
        return cell.plain, str(cell.style), tuple(cell.spans)
    return (cell,)


def plain(cell: Cell) -> Text:
    """A cell as plain text: a DataTable parses a ``str`` cell as markup, and node text is data
    (a process named ``x [/x]`` would raise, ``[@click=app.quit]`` would be a live link)."""
    return cell if isinstance(cell, Text) else Text(str(cell))


def sync_rows(table: DataTable, rows: Sequence[Row]) -> int:
    """Make ``table`` show ``rows`` (``(key, cells)`` in order), touching only what changed.

    ``str`` cells are shown as plain text (see :func:`plain`).

    The columns must already exist, in the order of the cells. When the row keys (or their order)
    change, the rows are rebuilt and the cursor follows the key it was on; otherwise changed cells
    are written with ``update_cell`` so the cursor and the scroll position stay put (a column widens
    to a longer cell, never cuts it).

    Returns:
        The number of cells written.
    """
    rows = [(key, [plain(c) for c in cells]) for key, cells in rows]
    keys = [k for k, _ in rows]
    old_keys = [rk.value for rk in table.rows]
    columns = list(table.columns)
    if keys != old_keys:
        keep = old_keys[table.cursor_row] if 0 <= table.cursor_row < len(old_keys) else None
        table.clear()
        for key, cells in rows:
            table.add_row(*cells, key=key)
        if keep in keys:
            table.move_cursor(row=keys.index(keep), animate=False)
        return sum(len(c) for _, c in rows)
    written = 0
    for key, cells in rows:
        for col, cell in zip(columns, cells, strict=False):
            if _sig(table.get_cell(key, col)) != _sig(cell):
                # update_width: DataTable keeps a column's width otherwise, and a longer word is cut with
                # no sign (a unit's `activating` read `activati`).
                table.update_cell(key, col, cell, update_width=True)
                written += 1
    return written


def room_for(table: DataTable, labels: Sequence[str], rows: Sequence[Sequence[Cell]], column: str) -> int | None:
    """The cells ``column`` has before the table's visible edge, after the columns left of it.

    Args:
        table: the table (its width and cell padding).
        labels: the columns' labels in order.
        rows: the cells of every row, in the order of ``labels``.
        column: the label of the column to fit.

    Returns:
        The room (may be small or negative on a tiny table), or None while the table has no width yet.
    """
    width = table.scrollable_content_region.width
    if width <= 0:
        return None
    pad = 2 * table.cell_padding
    shown = list(table.columns.values())
    used = 0
    for i, label in enumerate(labels[: labels.index(column)]):
        content = max([Text(label).cell_len] + [plain(row[i]).cell_len for row in rows])
        if i < len(shown):  # a DataTable column never narrows by itself: it may be wider than its cells
            content = max(content, shown[i].content_width)
        used += content + pad
    return width - used - pad


def cursor_key(table: DataTable) -> str | None:
    """The key of the row under the cursor, or None when the table is empty."""
    keys = [rk.value for rk in table.rows]
    if 0 <= table.cursor_row < len(keys):
        return keys[table.cursor_row]
    return None


class SettledTable(DataTable):
    """A DataTable whose rows are drawn again once its columns' widths settle.

    ``update_cell(update_width=True)`` (what :func:`sync_rows` writes with) changes the cell at once but
    measures its column only when the table is idle, and the rows drawn in between stay cached under the
    same key: until the next change they kept the old widths (a narrowed column's right-hand neighbours
    stayed where they were; the last column was drawn past the table's edge and cut). The node screen's
    snapshots then depended on whether a frame fell in between. Here a measure that changed a width
    invalidates those rows, so what is drawn follows the widths, whatever the frames.
    """

    def _update_column_widths(self, updated_cells: set) -> None:
        before = [column.content_width for column in self.ordered_columns]
        super()._update_column_widths(updated_cells)
        if [column.content_width for column in self.ordered_columns] != before:
            self._update_count += 1  # the key of DataTable's row and line caches: the old rows are not reused
            self.refresh()

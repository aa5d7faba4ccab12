"""Many DataTable rows in or out at once, and many cells written, for the fleet grid at a thousand nodes.

``DataTable.add_row`` re-validates the cursor and re-sorts the columns for every row (~0.12 ms each:
clearing a filter over 1,024 nodes took a key press 125 ms of adding), and ``remove_row`` rebuilds
the whole row index for every row it removes (25 rows of 1,024: 130 ms), and ``update_cell``
repaints the whole table for every cell, wherever its row is (one poll of a node 900 rows down
re-rendered the 46 rows on screen). These do the same work once per batch, and repaint only when a
row on screen changed. They use DataTable's own bookkeeping (``_row_locations``, ``_data``, ``rows``,
``_new_rows``), which is why Textual is pinned to 8.2.*; ``tests/pilot/test_bulk_rows.py`` holds them to
what the public methods give, row for row, cell for cell, cursor included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import zip_longest
from typing import Any

from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import (
    CellDoesNotExist,
    CellKey,
    ColumnKey,
    DuplicateKey,
    Row,
    RowDoesNotExist,
    RowKey,
)


def add_rows(table: DataTable, rows: Sequence[tuple[str, Sequence[Text]]]) -> None:
    """``table.add_row(*cells, key=key)`` for each ``(key, cells)``, the cursor checked once.

    Raises:
        DuplicateKey: a key is in the table already (nothing is added then).
        ValueError: a row has more cells than the table has columns.
    """
    if not rows:
        return
    columns = table.ordered_columns
    keys = [RowKey(key) for key, _ in rows]
    if len(set(keys)) != len(keys) or any(k in table._row_locations for k in keys):
        raise DuplicateKey("a row key of the batch already exists")
    if any(len(cells) > len(columns) for _, cells in rows):
        raise ValueError("More values provided than there are columns.")
    was_empty = table.row_count == 0
    for row_key, (_, cells) in zip(keys, rows, strict=True):
        table._row_locations[row_key] = table.row_count
        table._data[row_key] = {column.key: cell for column, cell in zip_longest(columns, cells)}
        table.rows[row_key] = Row(row_key, 1, None, False)
        table._new_rows.add(row_key)
    table._require_update_dimensions = True
    table.cursor_coordinate = table.cursor_coordinate
    if was_empty and len(table.columns) > 0 and table.show_cursor and table.cursor_type != "none":
        table._highlight_cursor()  # as add_row does when a first cell becomes available
    table._update_count += 1
    table.check_idle()


def remove_rows(table: DataTable, keys: Iterable[str]) -> None:
    """``table.remove_row(key)`` for each key, the row index rebuilt once.

    Raises:
        RowDoesNotExist: a key is not in the table (nothing is removed then).
    """
    doomed = {RowKey(key) for key in keys}
    if not doomed:
        return
    if any(k not in table._row_locations for k in doomed):
        raise RowDoesNotExist("a row key of the batch is not valid")
    index = {key: table._row_locations.get(key) or 0 for key in table._row_locations}
    kept = sorted((k for k in index if k not in doomed), key=index.__getitem__)
    table._row_locations = TwoWayDict({key: index for index, key in enumerate(kept)})
    for row_key in doomed:
        for column_key in table._data[row_key]:
            table._updated_cells.discard(CellKey(row_key, column_key))
        del table.rows[row_key]
        del table._data[row_key]
    table._require_update_dimensions = True
    table.check_idle()
    table.cursor_coordinate = table.cursor_coordinate
    table.hover_coordinate = table.hover_coordinate
    table._update_count += 1
    table.refresh(layout=True)


def write_cells(table: DataTable, cells: Sequence[tuple[str, str, Text]]) -> int:
    """``table.update_cell(row, column, value)`` for each ``(row, column, value)``; only the rows
    written are rendered again.

    ``update_cell`` bumps the table's update count, which every render cache keys on, so one changed
    cell renders every line on screen again (at 1,024 nodes, a repaint of the whole grid several
    times a second). Here the cached renders of the written rows are dropped instead, and only the
    lines of those rows that are on screen are repainted; a row off screen paints its new cells when
    it is scrolled to. A table with a row taller than one line is repainted as ``update_cell`` does.

    Returns:
        How many cells were written.

    Raises:
        CellDoesNotExist: a row or column is not in the table (nothing is written then).
    """
    keyed = [(RowKey(row), ColumnKey(column), value) for row, column, value in cells]
    for row_key, column_key, _ in keyed:
        if row_key not in table._row_locations or column_key not in table._column_locations:
            raise CellDoesNotExist(f"No cell exists for row_key={row_key!r}, column_key={column_key!r}.")
    if not keyed:
        return 0
    for row_key, column_key, value in keyed:
        table._data[row_key][column_key] = value
    rows = {row_key for row_key, _, _ in keyed}
    if any(table.rows[key].height != 1 for key in rows) or table.fixed_rows:
        table._update_count += 1
        table.refresh()
        return len(keyed)
    _forget_renders(table, rows)
    # Rows of height 1 sit at the line of their index: repaint those in view (a margin of a few lines
    # covers a scroll in progress).
    first, last = int(table.scroll_y) - 4, int(table.scroll_y) + table.size.height + 4
    for key in rows:
        index = table._row_locations.get(key)
        if index is not None and first <= index <= last:
            table.refresh_row(index)
    return len(keyed)


def _forget_renders(table: DataTable, rows: set[RowKey]) -> None:
    """Drop every cached render of ``rows`` (cells, rows, row renderables and lines)."""
    indexes = {table._row_locations.get(key) for key in rows}
    header = table.header_height if table.show_header else 0
    offsets = table._y_offsets

    def line_of_rows(key: Any) -> bool:
        line = key[0] - header
        return 0 <= line < len(offsets) and offsets[line][0] in rows

    _discard_where(table._cell_render_cache, lambda key: key[0] in rows)
    _discard_where(table._row_render_cache, lambda key: key[0] in rows)
    _discard_where(table._row_renderable_cache, lambda key: key[1] in indexes)
    _discard_where(table._line_cache, line_of_rows)


def _discard_where(cache: LRUCache[Any, Any], doomed: Callable[[Any], bool]) -> None:
    for key in [k for k in cache.keys() if doomed(k)]:
        cache.discard(key)


__all__ = ["add_rows", "remove_rows", "write_cells"]

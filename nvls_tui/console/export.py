"""Export what the fleet grid shows: the same rows, in the same order, as CSV and as JSON.

The rows and columns are the grid's own (their plain text), so the file says what the operator saw: a filter
leaves nodes out, a sort orders them, ``?`` stays ``?`` (unknown is never written as 0 or empty); a cell the
grid cut to the terminal's width is written whole (the console passes the uncut row). Text
from a node is data: control characters are taken out, and a CSV cell that a spreadsheet would run as
a formula (``=``, ``+``, ``-``, ``@``, tab, carriage return first) is quoted with a leading ``'``. Both
files are written private (0600, in a 0700 directory of the operator's own): host names and findings
describe the fleet.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nvls_tui.console.widgets.fleet_grid import host_of
from nvls_tui.localfiles import private_dir, write_private
from nvls_tui.textsafe import one_line

# What a spreadsheet takes for the start of a formula (OWASP's CSV injection list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class GridView:
    """What the grid shows: its column headers and, in the order shown, each row's cells (plain text).

    Attributes:
        columns: the headers, left to right.
        rows: one tuple of cells per node shown, as many as ``columns``.
        simulated: some node is simulated (the files say so, as the console's bar does).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    simulated: bool = False


def grid_view(grid, *, simulated: bool = False,
              whole: Callable[[str], Mapping[str, object] | None] | None = None) -> GridView:
    """The :class:`GridView` of a Textual ``DataTable`` (the fleet grid), its rows in the order shown.

    The selection mark of a host cell (``● gpu05``) is the console's, not the node's: it is dropped.

    Args:
        grid: the table.
        simulated: some node is simulated.
        whole: a row's cells uncut, by column key, from its host (the row's key); the grid cuts its
            cells to the terminal's width, a file should not. None, or None for a host, keeps the cells shown.
    """
    columns = tuple(one_line(_plain(c.label)) for c in grid.ordered_columns)
    keys = [c.key.value for c in grid.ordered_columns]
    rows = []
    for row in grid.ordered_rows:
        shown = grid.get_row(row.key)
        uncut = whole(str(row.key.value)) if whole is not None else None  # the grid's rows are keyed by host
        cells = [one_line(_plain(uncut[k] if uncut is not None and k in uncut else cell))
                 for k, cell in zip(keys, shown, strict=False)]
        if cells:
            cells[0] = host_of(cells[0])  # the grid's marks (picked, proposed) are not part of the host
        rows.append(tuple(cells))
    return GridView(columns, tuple(rows), simulated)


def _plain(value: object) -> str:
    plain = getattr(value, "plain", None)
    return plain if isinstance(plain, str) else str(value)


def _csv_cell(text: str) -> str:
    text = one_line(text)  # a view built by hand is cleaned too: node text is data
    return "'" + text if text.startswith(FORMULA_START) else text


def to_csv(view: GridView) -> str:
    """The view as CSV: a header row, then one row per node (formula-looking cells quoted with ``'``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_csv_cell(c) for c in view.columns])
    writer.writerows([_csv_cell(c) for c in row] for row in view.rows)
    return out.getvalue()


def to_json(view: GridView, exported_at: str) -> str:
    """The view as one JSON document: ``{"exported_at", "simulated", "columns", "rows": [{column: cell}]}``."""
    doc = {"exported_at": exported_at, "simulated": view.simulated, "columns": list(view.columns),
           "rows": [{c: one_line(cell) for c, cell in zip(view.columns, row, strict=False)} for row in view.rows]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_export(view: GridView, folder: str | Path, now: float | None = None) -> tuple[Path, Path]:
    """Write ``fleet-STAMP.csv`` and ``fleet-STAMP.json`` into ``folder`` (private); their paths.

    Raises:
        OSError: the folder cannot be made or written (``UnsafeLocation`` when it is not the operator's own).
    """
    now = time.time() if now is None else now
    where = private_dir(folder)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
    exported_at = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now))
    base = where / f"fleet-{stamp}"
    for n in range(1, 100):  # two exports in one second keep both
        if not base.with_suffix(".csv").exists() and not base.with_suffix(".json").exists():
            break
        base = where / f"fleet-{stamp}-{n}"
    csv_path = write_private(base.with_suffix(".csv"), to_csv(view))
    json_path = write_private(base.with_suffix(".json"), to_json(view, exported_at))
    return csv_path, json_path


def export_dir() -> Path:
    """Where the console writes exports: the state directory's ``exports``."""
    from nvls_tui.paths import state_dir

    return state_dir() / "exports"


__all__ = ["FORMULA_START", "GridView", "export_dir", "grid_view", "to_csv", "to_json", "write_export"]


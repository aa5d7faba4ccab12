"""The fleet grid: one row per node, one compact cell per GPU and per NVSwitch.

Updates are diffs: :meth:`FleetGrid.show` compares the cells of the rows whose node changed with
what is on screen and writes only the ones that changed, in one batch that repaints the table only
when a row on screen changed (``bulk_rows.write_cells``), so the cursor and the scroll position stay
put while polls stream in. Rows are rebuilt only when the set or order of visible hosts changes
(a filter, a sort, a verdict that moved a node), and the cursor follows its host then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from nvls_tui.console.bindings import spec
from nvls_tui.console.widgets import cells
from nvls_tui.console.widgets.bulk_rows import add_rows, remove_rows, write_cells
from nvls_tui.console.widgets.grid_layout import GridLayout, grid_layout
from nvls_tui.diagnosis import current_kernel_events
from nvls_tui.diagnosis.story import LastRepair, node_story
from nvls_tui.model import Fleet, NodeState, Severity, Verdict
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.probe import SECTIONS

# A node never read (before its first poll, or that never answered): every section is unknown ("?").
EVERY_SECTION = frozenset(s.name for s in SECTIONS)

GPU_COLUMNS = 8
# Up to this many rows in or out are added and removed one by one; more rebuild the grid (removing
# a row renumbers every row after it).
FEW_ROWS = 64
SWITCH_COLUMNS = 4
# Rows whose rendering the grid keeps (DataTable's own caches): two screens of a tall terminal.
CACHED_LINES = 256
FM_UNIT = "nvidia-fabricmanager"


def _sig(t: Text) -> tuple[str, str, tuple]:
    # Text.__eq__ ignores the base style, and a colour change is exactly what must repaint.
    return t.plain, str(t.style), tuple(t.spans)


#: The marks a host cell may start with: picked for a repair (``● ``), proposed by the autopilot (``⚑ ``, ask mode).
HOST_MARKS = ("● ", "⚑ ")


def host_of(cell: object) -> str:
    """The host a host cell names, without its mark (:data:`HOST_MARKS`)."""
    plain = cell.plain if isinstance(cell, Text) else str(cell)
    for mark in HOST_MARKS:
        plain = plain.removeprefix(mark)
    return plain


def note_for(state: NodeState, diagnosis: Diagnosis | None, width: int | None = None,
             last: LastRepair | None = None) -> Text:
    """The last column: the node's story (the cause and the next move), coloured by its severity; after a
    failed or aborted repair (``last``), where that repair stopped."""
    story = node_story(state, diagnosis, last)
    text = story.fitted(width) if width else story.text
    if not state.reachable:
        return Text(f"stale: {state.error or 'unreachable'}", style=cells.STYLE["unreachable"])
    if not text:
        return Text("")
    style = {Severity.ERROR: "bad", Severity.WARNING: "warn", None: "idle"}[story.severity]
    return Text(text, style=cells.STYLE[style] if story.severity else "")


def versions_differ(fleet: Fleet) -> bool:
    """True when the driver or FM version is not the same everywhere (or FM differs from its driver)."""
    drivers, fms = set(), set()
    for state in fleet.nodes:
        if not state.reachable:
            continue
        if state.driver:
            drivers.add(state.driver)
        if state.fm_version:
            fms.add(state.fm_version)
            if state.driver and state.fm_version != state.driver:
                return True
    return len(drivers) > 1 or len(fms) > 1


def versions_line(fleet: Fleet, differ: bool | None = None) -> str:
    """The grid's title when every node runs the same versions: ``driver 580.82.07 · FM 580.82.07``.

    Args:
        differ: ``versions_differ(fleet)`` when the caller has it already (a walk of the whole fleet).
    """
    states = [s for s in fleet.nodes if s.reachable]
    driver = next((s.driver for s in states if s.driver), None)
    fm = next((s.fm_version for s in states if s.fm_version), None)
    if versions_differ(fleet) if differ is None else differ:
        return "versions differ between nodes (driver / FM ver columns)"
    if driver is None:
        return ""
    return f"driver {driver}" + (f" · FM {fm}" if fm else "") + " on every node"


class FleetGrid(DataTable):
    """A DataTable of nodes keyed by host.

    Args:
        hosts: every host (sizes the host column once, so it never jumps).
        compact: all GPUs in one cell and all NVSwitches in another (narrow terminals).
        gpus: GPU columns (one per GPU index).
        switches: NVSwitch columns.
    """

    # Enter belongs to the DataTable (it selects the row, and the screen opens the node on that);
    # re-declaring it from the binding table shows "Open" in the footer and honours the keymap.
    _open = spec("fleet.open")
    BINDINGS = [Binding(_open.key, "select_cursor", _open.description, tooltip=_open.tooltip, id=_open.id)]

    def __init__(self, hosts: Sequence[str] = (), gpus: int = GPU_COLUMNS, switches: int = SWITCH_COLUMNS,
                 *, width: int = 160, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        # DataTable keeps 10,000 rendered cells and 1,000 rendered rows and lines. Its caches key on the
        # table's update count, so after a poll's write everything in them is dead weight until it is
        # pushed out: ~65,000 objects the garbage collector walked on every full collection at 1,024
        # nodes. A screen's worth, twice over, is all a redraw reads again.
        self._cell_render_cache = LRUCache(CACHED_LINES * 24)
        self._row_render_cache = LRUCache(CACHED_LINES)
        self._row_renderable_cache = LRUCache(CACHED_LINES)
        self._line_cache = LRUCache(CACHED_LINES)
        self._hosts = tuple(hosts)
        self.gpu_columns = gpus
        self.switch_columns = switches
        self.screen_width = width
        self.show_versions = False
        self.show_scheduler = False
        self.show_kube = False
        self.hidden_columns: frozenset[str] = frozenset()  # optional columns the operator hid (c)
        self.layout_now = self._layout()
        self._order: list[str] = []
        # What the grid last wrote to each cell (the Text itself: its signature is taken only when a new
        # cell is not the very same object, so a thousand rows added back compare nothing).
        self._shown: dict[str, dict[str, Text]] = {}
        self._baseline: dict[str, frozenset[str]] = {}
        self._cache: dict[str, tuple[NodeState, Diagnosis | None, dict[str, Text]]] = {}
        self._keep: str | None = None  # the host under the cursor across a change of columns
        self._sort_mark: tuple[str, str] | None = None  # (column, arrow) its header shows (mark_sorted)
        self.marked: set[str] = set()  # hosts the screen marked as picked for a repair (mark_selected)
        self._title: str | None = None  # the border title last set (show_title)
        # The console's last failed or aborted repair of a host, while still the news (the screen's memory).
        self.last_repair: Callable[[str], LastRepair | None] = lambda _host: None

    def show_title(self, title: str) -> None:
        """Put ``title`` on the grid's border. Textual repaints the whole grid at every set of ``border_title``, even
        to the words it shows: every redraw after a poll and every pick set it again."""
        if title != self._title:
            self._title = title
            self.border_title = title

    @property
    def compact(self) -> bool:
        """All GPUs share one cell (and all NVSwitches another)."""
        return self.layout_now.compact

    @property
    def widths(self) -> dict[str, int]:
        """The content width of every column shown: cells wider than it are cut with a mark."""
        return {c.key: c.width for c in self.layout_now.columns}

    def _layout(self) -> GridLayout:
        # The host column leaves room for the selection mark ("● ").
        host = 2 + max(6, max((len(h) for h in self._hosts), default=0))
        return grid_layout(self.screen_width, host, gpus=self.gpu_columns, switches=self.switch_columns,
                           versions=self.show_versions, scheduler=self.show_scheduler, kube=self.show_kube,
                           hidden=self.hidden_columns)

    def on_mount(self) -> None:
        """Create the columns for the width the screen has."""
        self._add_columns()

    def _add_columns(self) -> None:
        for column in self.layout_now.columns:
            self.add_column(column.label, width=column.width, key=column.key)

    def mark_sorted(self, column: str, arrow: str) -> None:
        """Put the sort's arrow (``↓``/``↑``; ``""`` for none) on ``column``'s header and take it off every other,
        as the top line's ``sorted by hold ↓`` says; the arrow replaces the label's last letter where the column
        has no room for both."""
        if self._sort_mark == (column, arrow):
            return
        self._sort_mark = (column, arrow)
        for col in self.layout_now.columns:
            key = ColumnKey(col.key)
            if key not in self.columns:
                continue
            label = col.label
            if col.key == column and arrow:
                label = label + arrow if len(label) < col.width else label[: max(col.width - 1, 0)] + arrow
            self.columns[key].label = Text(label)
        self.refresh()

    def _update_dimensions(self, new_rows) -> None:
        """DataTable measures every cell of every new row for its columns' widths (20,000 cells when a
        cleared filter brings 1,024 rows back: ~200 ms before the grid paints). This grid's columns
        all have a width and its cells are cut to it (``cells.fit``), so only the table's size is
        brought up to date; a column without a width is measured as DataTable does."""
        if any(column.auto_width for column in self.columns.values()) or any(
                self.rows[key].auto_height or self.rows[key].label is not None for key in new_rows if key in self.rows):
            super()._update_dimensions(new_rows)
        else:
            super()._update_dimensions(())

    def relayout(self, width: int | None = None, show_versions: bool | None = None,
                 show_scheduler: bool | None = None, show_kube: bool | None = None,
                 hidden: frozenset[str] | None = None) -> bool:
        """Fit the columns to a new screen width, version spread, scheduler or cluster; True when they changed."""
        self.screen_width = width if width is not None else self.screen_width
        self.show_versions = show_versions if show_versions is not None else self.show_versions
        self.show_scheduler = show_scheduler if show_scheduler is not None else self.show_scheduler
        self.show_kube = show_kube if show_kube is not None else self.show_kube
        self.hidden_columns = hidden if hidden is not None else self.hidden_columns
        layout = self._layout()
        if layout == self.layout_now:
            return False
        self.layout_now = layout
        # The cursor follows its host, except at the top: there it stays on the worst node.
        keep = self.current_host if self.cursor_row > 0 else None
        self.clear(columns=True)
        self._add_columns()
        self._sort_mark = None  # new headers: the sort's arrow is put back by the next mark_sorted
        self._order, self._shown, self._cache = [], {}, {}
        self._keep = keep
        return True

    # Home/End are the table's horizontal scroll; in a grid of nodes they mean the first/last node.
    def action_scroll_home(self) -> None:
        """Home: the first node."""
        self.move_cursor(row=0)

    def action_scroll_end(self) -> None:
        """End: the last node."""
        self.move_cursor(row=max(0, self.row_count - 1))

    @property
    def current_host(self) -> str | None:
        """The host under the cursor, or None when the grid is empty."""
        if not self._order or self.cursor_row < 0 or self.cursor_row >= len(self._order):
            return None
        return self._order[self.cursor_row]

    @property
    def visible_hosts(self) -> tuple[str, ...]:
        """Hosts in the order shown."""
        return tuple(self._order)

    def new_kernel_events(self, state: NodeState) -> int:
        """Kernel fabric events that appeared since the console first read this node."""
        lines = frozenset(e.line for e in current_kernel_events(state))
        if state.polled_at is None and state.host not in self._baseline:
            return 0  # a placeholder before the first poll is not a baseline
        base = self._baseline.setdefault(state.host, lines)
        return len(lines - base)

    def row_cells(self, state: NodeState, diagnosis: Diagnosis | None, now: float, *,
                  whole: bool = False) -> dict[str, Text]:
        """Every cell of one node's row, keyed by column key: cut to the columns' widths, or ``whole`` (the
        story's long form, nothing cut: what an export writes)."""
        stale = not state.reachable
        host_style = cells.STYLE["stale"] if stale else "bold"
        if stale:
            verdict = cells.verdict_text(Verdict.UNREACHABLE)
        else:
            verdict = cells.verdict_text(diagnosis.verdict if diagnosis else None)
        driver, fmver = cells.version_texts(state, stale)
        # What a poll could not read shows as "?" (unknown), never as a reassuring 0 or blank.
        unread = {m.section for m in state.missing} if state.read_anything else EVERY_SECTION
        fm_cell = (cells.unknown_text(stale) if "units" in unread else
                   cells.unit_text(state.service(FM_UNIT), stale) if state.services else Text("–"))
        row: dict[str, Text] = {
            "host": Text(state.host, style=host_style),
            "verdict": verdict,
            "fm": fm_cell,
            "driver": driver,
            "fmver": fmver,
            "sched": cells.scheduler_text(state.scheduler, stale),
            "k8s": cells.kube_text(state.k8s, stale),
        }
        gpus = {g.index: g for g in state.gpus}
        gpu_cells = ([cells.unknown_text(stale)] * self.gpu_columns if "gpus" in unread else
                     [cells.gpu_cell(gpus.get(i), stale) for i in range(self.gpu_columns)])
        switch_cells = ([cells.unknown_text(stale)] * self.switch_columns if "nvswitches" in unread else
                        [cells.switch_cell(i < len(state.nvswitches), stale) for i in range(self.switch_columns)])
        if self.compact:
            row["gpus"] = Text("").join(c if c.plain else Text(" ") for c in gpu_cells)
            row["switches"] = Text("").join(switch_cells)
        else:
            row.update({f"g{i}": c for i, c in enumerate(gpu_cells)})
            row.update({f"s{i}": c for i, c in enumerate(switch_cells)})
        new = self.new_kernel_events(state)
        kern = cells.count_text(len(current_kernel_events(state)), "bad", stale)
        if new:
            kern.append(f" +{new}", style=cells.STYLE["bad"])
        if "kernel" in unread:
            kern = cells.unknown_text(stale)
        holders_unread = "holders" in unread
        row["holders"] = cells.unknown_text(stale) if holders_unread else cells.count_text(len(state.holders), "warn",
                                                                                              stale)
        row["kernel"] = kern
        row["smoke"] = (cells.unknown_text(stale) if "smoke" in unread else
                        cells.smoke_text(state.smoke, stale, diagnosis.smoke_distrust if diagnosis else None))
        row["age"] = cells.age_text(None if state.polled_at is None else now - state.polled_at)
        widths = self.widths
        row["note"] = note_for(state, diagnosis, None if whole else widths.get("note"), self.last_repair(state.host))
        if whole:
            return {key: row[key] for key in self.layout_now.keys}
        return {key: cells.fit(row[key], widths[key]) for key in self.layout_now.keys}

    def show(
        self,
        fleet: Fleet,
        diagnoses: Mapping[str, Diagnosis],
        order: Sequence[str],
        now: float,
        *,
        ages: bool = True,
    ) -> int:
        """Bring the grid up to date with ``fleet``, showing ``order`` (already filtered and sorted).

        Args:
            ages: also bring the age of every unchanged row up to date. Without it a row whose state
                and diagnosis are the very objects it was drawn from is not visited at all (a redraw
                after one poll of 1,024 nodes touches one row, not 1,024); rows that are new on the
                grid and rows that changed always get their age of ``now``.

        Returns:
            How many cells were written (0 when nothing changed).
        """
        self.relayout(show_versions=versions_differ(fleet),
                      show_scheduler=any(n.scheduler is not None for n in fleet.nodes),
                      show_kube=any(n.k8s is not None for n in fleet.nodes))
        states = {h: s for h in order if (s := fleet.get(h)) is not None}
        order = list(states)
        rows: dict[str, tuple[dict[str, Text], bool]] = {}

        def row(host: str) -> dict[str, Text]:
            if host not in rows:
                rows[host] = self._row(states[host], diagnoses.get(host), now)
            return rows[host][0]

        written = 0
        added: set[str] = set()
        if order != self._order:
            before, after = set(self._order), set(order)
            if before != after:
                if not before or len(after - before) > FEW_ROWS:
                    # Many rows back (a filter cleared): adding them all in order beats adding the new
                    # ones at the end and sorting the table into order.
                    return self._rebuild(order, {h: row(h) for h in order})
                added = after - before
                written = self._add_and_remove(order, {h: row(h) for h in added}, before, after)
            else:
                self._reorder(order)  # the same rows in another order: move them, do not rebuild 256 rows
        writes: list[tuple[str, str, Text]] = []
        for host in order:
            if host in added:
                continue  # written whole just now
            if not ages and self._drawn_from(host, states[host], diagnoses.get(host)):
                continue
            cells_now = row(host)
            shown = self._shown[host]
            # A row rebuilt from the cache differs at most in its age: compare only that cell.
            items = (cells_now.items() if rows[host][1] else
                     (("age", cells_now["age"]),) if "age" in cells_now else ())
            for key, text in items:
                old = shown.get(key)
                if old is not text and (old is None or _sig(old) != _sig(text)):
                    writes.append((host, key, text))
                shown[key] = text
        # One repaint for the lot, and none when every row that changed is off screen.
        return written + write_cells(self, writes)

    def cell_plain(self, state: NodeState, diagnosis: Diagnosis | None, now: float, column: str) -> str:
        """The text of one cell of ``state``'s row as the grid shows it (empty for a column not shown);
        from the grid's own row cache, so sorting a thousand unchanged rows renders none. The cache is
        only read here: a row built for sorting is not stored, or ``show`` would take it as drawn."""
        cached = self._cache.get(state.host)
        row = cached[2] if cached and cached[0] is state and cached[1] is diagnosis else \
            self.row_cells(state, diagnosis, now)
        cell = row.get(column)
        return cell.plain if cell is not None else ""

    def forget_row(self, host: str) -> None:
        """Draw ``host``'s row anew at the next :meth:`show` (what it shows changed beyond its state)."""
        self._cache.pop(host, None)

    def _drawn_from(self, host: str, state: NodeState, diagnosis: Diagnosis | None) -> bool:
        """True when the row of ``host`` was drawn from this very state and diagnosis."""
        cached = self._cache.get(host)
        return cached is not None and cached[0] is state and cached[1] is diagnosis

    def _row(self, state: NodeState, diagnosis: Diagnosis | None, now: float) -> tuple[dict[str, Text], bool]:
        # A poll of one node must not re-render 255 others: reuse rows whose state and diagnosis are
        # the very same objects as last time, refreshing only their age. Returns (row, rebuilt).
        cached = self._cache.get(state.host)
        if cached and cached[0] is state and cached[1] is diagnosis:
            row = dict(cached[2])
            if "age" in row:
                row["age"] = cells.age_text(None if state.polled_at is None else now - state.polled_at)
            return row, False
        row = self.row_cells(state, diagnosis, now)
        self._cache[state.host] = (state, diagnosis, row)
        return row, True

    def _add_and_remove(self, order: list[str], rows: dict[str, dict[str, Text]], before: set[str],
                        after: set[str]) -> int:
        """Rows in or out (a filter narrowed or cleared, a node added): only those rows change, in
        one batch each (``bulk_rows``); the rows that stay are not added again.

        Returns:
            How many cells were written.
        """
        # The cursor follows its host, except at the top: there it stays on the worst node.
        keep = self.current_host if self.cursor_row > 0 else None
        gone = before - after
        remove_rows(self, gone)
        for host in gone:
            del self._shown[host]
        added = [h for h in order if h not in before]
        add_rows(self, [(host, list(rows[host].values())) for host in added])
        for host in added:
            self._shown[host] = dict(rows[host])
        now = [h for h in self._order if h in after] + added
        self._order = now
        if now != order:
            self._reorder(order)
        if keep in after:
            self.move_cursor(row=order.index(keep), animate=False)
        return sum(len(rows[h]) for h in added)

    def _reorder(self, order: list[str]) -> None:
        # The cursor follows its host, except at the top: there it stays on the worst node.
        keep = self.current_host if self.cursor_row > 0 else None
        rank = {host: i for i, host in enumerate(order)}
        self.sort("host", key=lambda cell: rank[host_of(cell)])
        self._order = order
        if keep in rank:
            self.move_cursor(row=rank[keep], animate=False)

    def _rebuild(self, order: list[str], rows: dict[str, dict[str, Text]]) -> int:
        # The cursor follows its host, except at the top: there it stays on the worst node.
        keep = self.current_host if self.cursor_row > 0 else self._keep
        self._keep = None
        self.clear()
        self._order = order
        self._shown = {}
        written = 0
        add_rows(self, [(host, list(rows[host].values())) for host in order])
        for host in order:
            row = rows[host]
            self._shown[host] = dict(row)
            written += len(row)
        if keep in order:
            self.move_cursor(row=order.index(keep), animate=False)
        return written

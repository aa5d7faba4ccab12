"""The fleet grid: one row per node, one compact cell per GPU and per NVSwitch.

Updates are diffs: :meth:`FleetGrid.show` compares every cell with what is on screen and calls
``update_cell`` only for the ones that changed, so the cursor and the scroll position stay put
while polls stream in. Rows are rebuilt only when the set or order of visible hosts changes
(a filter, a sort, a verdict that moved a node), and the cursor follows its host then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from nvls_tui.bindings import spec
from nvls_tui.diagnosis import current_kernel_events
from nvls_tui.model import Fleet, NodeState, Severity, Verdict
from nvls_tui.model.node import Diagnosis
from nvls_tui.widgets import cells

GPU_COLUMNS = 8
SWITCH_COLUMNS = 4
FM_UNIT = "nvidia-fabricmanager"


def _sig(t: Text) -> tuple[str, str, tuple]:
    # Text.__eq__ ignores the base style, and a colour change is exactly what must repaint.
    return t.plain, str(t.style), tuple(t.spans)


def host_of(cell: object) -> str:
    """The host a host cell names (a selected node's cell starts with the mark ``● ``)."""
    plain = cell.plain if isinstance(cell, Text) else str(cell)
    return plain.removeprefix("● ")


def note_for(state: NodeState, diagnosis: Diagnosis | None) -> Text:
    """The last column: why a node is unreachable, or its most severe finding codes."""
    if not state.reachable:
        return Text(f"stale: {state.error or 'unreachable'}", style=cells.STYLE["unreachable"])
    if diagnosis is None:
        return Text("")
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    found = sorted(diagnosis.findings, key=lambda f: order[f.severity])
    codes: list[str] = []
    for f in found:
        if f.code not in codes:
            codes.append(f.code)
    if not codes:
        return Text("no findings", style=cells.STYLE["idle"])
    style = {Severity.ERROR: "bad", Severity.WARNING: "warn", Severity.INFO: "idle"}[found[0].severity]
    return Text(" ".join(codes), style=cells.STYLE[style])


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
                 *, compact: bool = False, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._hosts = tuple(hosts)
        self.compact = compact
        self.gpu_columns = gpus
        self.switch_columns = switches
        self._order: list[str] = []
        self._shown: dict[str, dict[str, tuple]] = {}
        self._baseline: dict[str, frozenset[str]] = {}
        self._cache: dict[str, tuple[NodeState, Diagnosis | None, dict[str, Text]]] = {}
        self.widths: dict[str, int | None] = {}

    def add_column(self, label, *, width=None, key=None, **kwargs):
        """DataTable.add_column, remembering each fixed width: cells wider than it are cut with a mark."""
        if key is not None:
            self.widths[key] = width
        return super().add_column(label, width=width, key=key, **kwargs)

    def on_mount(self) -> None:
        """Create the columns once; their keys are what ``update_cell`` addresses."""
        # The host column leaves room for the selection mark ("● ").
        self.add_column("host", key="host", width=2 + max(6, max((len(h) for h in self._hosts), default=0)))
        self.add_column("verdict", key="verdict", width=13)
        self.add_column("FM unit", key="fm", width=8)
        self.add_column("driver", key="driver", width=10)  # 580.159.04: a driver version is 9-10 wide
        self.add_column("FM ver", key="fmver", width=11)  # with the mismatch sign: ≠580.159.04
        if self.compact:
            self.add_column("GPUs", key="gpus", width=self.gpu_columns)
            self.add_column("NVSw", key="switches", width=max(4, self.switch_columns))
        else:
            for i in range(self.gpu_columns):
                self.add_column(f"g{i}", key=f"g{i}", width=2)
            for i in range(self.switch_columns):
                self.add_column(f"s{i}", key=f"s{i}", width=2)
        self.add_column("hold", key="holders", width=4)
        self.add_column("kern", key="kernel", width=5)
        self.add_column("smoke GB/s", key="smoke", width=10)
        self.add_column("age", key="age", width=4)
        self.add_column("findings", key="note", width=22)

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

    def row_cells(self, state: NodeState, diagnosis: Diagnosis | None, now: float) -> dict[str, Text]:
        """Every cell of one node's row, keyed by column key."""
        stale = not state.reachable
        host_style = cells.STYLE["stale"] if stale else "bold"
        if stale:
            verdict = cells.verdict_text(Verdict.UNREACHABLE)
        else:
            verdict = cells.verdict_text(diagnosis.verdict if diagnosis else None)
        driver, fmver = cells.version_texts(state, stale)
        # What a poll could not read shows as "?" (unknown), never as a reassuring 0 or blank.
        unread = {m.section for m in state.missing}
        fm_cell = (cells.unknown_text(stale) if "units" in unread else
                   cells.unit_text(state.service(FM_UNIT), stale) if state.services else Text("–"))
        row: dict[str, Text] = {
            "host": Text(state.host, style=host_style),
            "verdict": verdict,
            "fm": fm_cell,
            "driver": driver,
            "fmver": fmver,
        }
        gpus = {g.index: g for g in state.gpus}
        gpu_cells = [cells.gpu_cell(gpus.get(i), stale) for i in range(self.gpu_columns)]
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
        row["smoke"] = cells.smoke_text(state.smoke, stale)
        row["age"] = cells.age_text(None if state.polled_at is None else now - state.polled_at)
        row["note"] = note_for(state, diagnosis)
        return {key: cells.fit(text, self.widths.get(key)) for key, text in row.items()}

    def show(
        self,
        fleet: Fleet,
        diagnoses: Mapping[str, Diagnosis],
        order: Sequence[str],
        now: float,
    ) -> int:
        """Bring the grid up to date with ``fleet``, showing ``order`` (already filtered and sorted).

        Returns:
            How many cells were written (0 when nothing changed).
        """
        states = {h: s for h in order if (s := fleet.get(h)) is not None}
        order = list(states)
        fresh: set[str] = set()
        rows = {}
        for h in order:
            rows[h], is_fresh = self._row(states[h], diagnoses.get(h), now)
            if is_fresh:
                fresh.add(h)
        if order != self._order:
            if set(order) != set(self._order):
                return self._rebuild(order, rows)
            self._reorder(order)  # the same rows in another order: move them, do not rebuild 256 rows
        written = 0
        for host in order:
            shown = self._shown[host]
            # A row rebuilt from the cache differs at most in its age: compare only that cell.
            items = rows[host].items() if host in fresh else (("age", rows[host]["age"]),)
            for key, text in items:
                sig = _sig(text)
                if shown.get(key) != sig:
                    self.update_cell(host, key, text)
                    shown[key] = sig
                    written += 1
        return written

    def _row(self, state: NodeState, diagnosis: Diagnosis | None, now: float) -> tuple[dict[str, Text], bool]:
        # A poll of one node must not re-render 255 others: reuse rows whose state and diagnosis are
        # the very same objects as last time, refreshing only their age. Returns (row, rebuilt).
        cached = self._cache.get(state.host)
        if cached and cached[0] is state and cached[1] is diagnosis:
            row = dict(cached[2])
            row["age"] = cells.age_text(None if state.polled_at is None else now - state.polled_at)
            return row, False
        row = self.row_cells(state, diagnosis, now)
        self._cache[state.host] = (state, diagnosis, row)
        return row, True

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
        keep = self.current_host if self.cursor_row > 0 else None
        self.clear()
        self._order = order
        self._shown = {}
        written = 0
        for host in order:
            row = rows[host]
            self.add_row(*row.values(), key=host)
            self._shown[host] = {k: _sig(v) for k, v in row.items()}
            written += len(row)
        if keep in order:
            self.move_cursor(row=order.index(keep), animate=False)
        return written

"""The fleet grid: one row per node, one compact cell per GPU and per NVSwitch.

Updates are diffs: :meth:`FleetGrid.show` compares every cell with what is on screen and calls
``update_cell`` only for the ones that changed, so the cursor and the scroll position stay put
while polls stream in. Rows are rebuilt only when the set or order of visible hosts changes
(a filter, a sort, a verdict that moved a node), and the cursor follows its host then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import DataTable

from nvls_tui.model import Fleet, NodeState, Severity, Verdict
from nvls_tui.model.node import Diagnosis
from nvls_tui.widgets import cells

GPU_COLUMNS = 8
SWITCH_COLUMNS = 4
FM_UNIT = "nvidia-fabricmanager"


def _sig(t: Text) -> tuple[str, str, tuple]:
    # Text.__eq__ ignores the base style, and a colour change is exactly what must repaint.
    return t.plain, str(t.style), tuple(t.spans)


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
        gpus: GPU columns (one per GPU index).
        switches: NVSwitch columns.
    """

    DEFAULT_CSS = """
    FleetGrid { height: 1fr; }
    """

    def __init__(self, gpus: int = GPU_COLUMNS, switches: int = SWITCH_COLUMNS, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.gpu_columns = gpus
        self.switch_columns = switches
        self._order: list[str] = []
        self._shown: dict[str, dict[str, tuple]] = {}
        self._baseline: dict[str, frozenset[str]] = {}

    def on_mount(self) -> None:
        """Create the columns once; their keys are what ``update_cell`` addresses."""
        self.add_column("host", key="host")
        self.add_column("verdict", key="verdict", width=13)
        self.add_column("FM unit", key="fm", width=10)
        self.add_column("driver", key="driver")
        self.add_column("FM ver", key="fmver")
        for i in range(self.gpu_columns):
            self.add_column(f"g{i}", key=f"g{i}", width=2)
        for i in range(self.switch_columns):
            self.add_column(f"s{i}", key=f"s{i}", width=2)
        self.add_column("hold", key="holders", width=4)
        self.add_column("kern", key="kernel", width=6)
        self.add_column("smoke", key="smoke", width=12)
        self.add_column("age", key="age", width=4)
        self.add_column("findings", key="note")

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
        lines = frozenset(e.line for e in state.kernel_events)
        if not state.reachable and state.host not in self._baseline:
            return 0
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
        row: dict[str, Text] = {
            "host": Text(state.host, style=host_style),
            "verdict": verdict,
            "fm": cells.unit_text(state.service(FM_UNIT), stale) if state.services else Text("–"),
            "driver": driver,
            "fmver": fmver,
        }
        gpus = {g.index: g for g in state.gpus}
        for i in range(self.gpu_columns):
            row[f"g{i}"] = cells.gpu_cell(gpus.get(i), stale)
        for i in range(self.switch_columns):
            row[f"s{i}"] = cells.switch_cell(i < len(state.nvswitches), stale)
        new = self.new_kernel_events(state)
        kern = cells.count_text(len(state.kernel_events), "bad", stale)
        if new:
            kern.append(f" +{new}", style=cells.STYLE["bad"])
        row["holders"] = cells.count_text(len(state.holders), "warn", stale)
        row["kernel"] = kern
        row["smoke"] = cells.smoke_text(state.smoke, stale)
        row["age"] = cells.age_text(None if state.polled_at is None else now - state.polled_at)
        row["note"] = note_for(state, diagnosis)
        return row

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
        order = list(order)
        rows = {h: self.row_cells(fleet.get(h), diagnoses.get(h), now) for h in order if fleet.get(h)}
        order = [h for h in order if h in rows]
        if order != self._order:
            return self._rebuild(order, rows)
        written = 0
        for host in order:
            shown = self._shown[host]
            for key, text in rows[host].items():
                sig = _sig(text)
                if shown.get(key) != sig:
                    self.update_cell(host, key, text)
                    shown[key] = sig
                    written += 1
        return written

    def _rebuild(self, order: list[str], rows: dict[str, dict[str, Text]]) -> int:
        keep = self.current_host
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

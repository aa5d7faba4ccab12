"""The fleet screen: every node at a glance, worst first, live."""

from __future__ import annotations

from collections import Counter

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from nvls_tui.bindings import bindings_for
from nvls_tui.model import Fleet, Verdict
from nvls_tui.screens.node import header_text
from nvls_tui.widgets import cells
from nvls_tui.widgets.banner import FleetSummary, ModeBanner
from nvls_tui.widgets.fleet_grid import FleetGrid


# Below this width the GPU and NVSwitch cells fold into one column each, so a 100-column terminal
# still shows every column that matters without scrolling sideways.
COMPACT_BELOW = 140


def matches(query: str, host: str, verdict: Verdict | None, codes: list[str]) -> bool:
    """True when ``query`` (case-insensitive, words ANDed) is in the host, verdict or a finding code."""
    hay = " ".join([host, verdict.value if verdict else "polling", *codes]).lower()
    return all(word in hay for word in query.lower().split())


class FleetScreen(Screen[None]):
    """One row per node; Enter opens it, ``/`` filters, ``v`` toggles verdict order."""

    BINDINGS = [*bindings_for("fleet"), Binding("escape", "clear_filter", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self.sort_by_verdict = True
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        """Summary, banner, filter (hidden until ``/``), the grid, the footer."""
        yield FleetSummary(id="summary")
        yield ModeBanner(simulated=self.app.simulated, read_only=self.app.read_only, id="banner")
        yield Input(placeholder="filter: host, verdict or finding code (Enter keeps it, Esc clears)",
                    id="filter")
        yield FleetGrid(self.app.fleet.hosts, compact=self.app.size.width < COMPACT_BELOW, id="grid")
        yield Static(id="empty")
        yield Static(id="preview", classes="panel")
        yield Footer()

    def on_mount(self) -> None:
        """Draw what is known and follow every change of the app's fleet."""
        self.query_one("#filter").display = False
        self.watch(self.app, "fleet", self.refresh_grid, init=False)
        self.refresh_grid()
        self.query_one(FleetGrid).focus()
        if self.app.periodic:
            self.set_interval(1.0, self.refresh_grid)  # poll ages move even when nothing else does

    def order(self, fleet: Fleet) -> list[str]:
        """Visible hosts: filtered, then sorted by verdict (broken first) if asked, else fleet order."""
        diagnoses = self.app.diagnoses
        hosts = list(fleet.hosts)
        if self.filter_text:
            hosts = [h for h in hosts if matches(
                self.filter_text, h, self.app.verdict(h),
                [f.code for f in diagnoses[h].findings] if h in diagnoses else [])]
        if self.sort_by_verdict:
            rank = {h: i for i, h in enumerate(fleet.hosts)}

            def key(h: str) -> tuple[int, int]:
                v = self.app.verdict(h)
                return (v.rank if v else len(Verdict), rank[h])

            hosts.sort(key=key)
        return hosts

    def refresh_grid(self, *_: object) -> None:
        """Diff the grid against the app's fleet (only changed cells are written)."""
        fleet = self.app.fleet
        order = self.order(fleet)
        self.query_one(FleetGrid).show(fleet, self.app.diagnoses, order, self.app.clock())
        verdicts = [self.app.verdict(h) for h in fleet.hosts]
        extra = ("sorted by verdict" if self.sort_by_verdict else "fleet order")
        if self.filter_text:
            extra += f" · filter “{self.filter_text}”: {len(order)} of {len(fleet)} shown"
        self.query_one(FleetSummary).show(verdicts, extra=extra)
        self.draw_preview()
        empty = self.query_one("#empty", Static)
        empty.display = not order
        if not order:
            empty.update("No node matches the filter. Esc clears it." if self.filter_text
                         else "No targets. Start with `nvls-tui --demo`, or name hosts: `nvls-tui gpu[01-08]`.")

    def action_open_node(self) -> None:
        """Open the node under the cursor."""
        host = self.query_one(FleetGrid).current_host
        if host:
            self.app.open_node(host)

    def draw_preview(self) -> None:
        """The findings of the node under the cursor, under the grid."""
        preview = self.query_one("#preview", Static)
        host = self.query_one(FleetGrid).current_host
        state = self.app.fleet.get(host) if host else None
        preview.display = state is not None
        if state is None:
            return
        diagnosis = self.app.diagnoses.get(host)
        age = None if state.polled_at is None else self.app.clock() - state.polled_at
        preview.border_title = f"{host}: findings"
        preview.border_subtitle = "Enter: GPUs, units, holders"
        text = header_text(state, diagnosis, age)
        text.append("\n")
        text.append_text(cells.findings_text(diagnosis.findings if diagnosis else None, limit=8))
        if state.holders:
            kinds = Counter(h.kind.value for h in state.holders)
            text.append("\nholders  ", style="bold")
            text.append("  ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(kinds.items())))
        preview.update(text)

    def on_data_table_row_highlighted(self, _: FleetGrid.RowHighlighted) -> None:
        """Follow the cursor with the preview."""
        self.draw_preview()

    def on_data_table_row_selected(self, event: FleetGrid.RowSelected) -> None:
        """Enter on a row: the grid consumes the key itself, so its selection opens the node."""
        event.stop()
        self.action_open_node()

    def action_filter(self) -> None:
        """Show the filter box and type into it."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.refresh_grid()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = bool(self.filter_text)
        self.query_one(FleetGrid).focus()

    def action_clear_filter(self) -> None:
        """Esc: clear the filter and go back to the grid."""
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.filter_text = ""
        self.refresh_grid()
        self.query_one(FleetGrid).focus()

    def action_toggle_sort(self) -> None:
        """Switch between verdict order (broken first) and fleet order."""
        self.sort_by_verdict = not self.sort_by_verdict
        self.refresh_grid()

    def action_poll_all(self) -> None:
        """Poll every node now."""
        self.app.poll_now()
        self.notify(f"Polling {len(self.app.fleet)} nodes now.", timeout=2)

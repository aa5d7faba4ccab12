"""The node screen: one node in full, and the holders an operator may SIGTERM."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from nvls_tui.console.bindings import back_shown, bindings_for, destructive_actions, help_first, spec_of_action
from nvls_tui.console.commands import Command, ScreenCommands, scope_commands
from nvls_tui.console.messages import ActionFailed, ActionFinished
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.searching import SEARCH_ACTIONS, Searching
from nvls_tui.console.screens.typed import OnConsole
from nvls_tui.console.screens.yanking import copy, yank_commands
from nvls_tui.console.widgets import cells, palette
from nvls_tui.console.widgets.banner import ModeBanner
from nvls_tui.console.widgets.hanging import Hanging
from nvls_tui.console.widgets.node_text import (
    compact_devices,
    coverage_line,
    gpu_summary,
    header_text,
    holder_detail,
    kernel_message,
    owner_text,
    short_cluster,
    short_start,
    unread_subtitle,
    versions_line,
)
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.console.widgets.tables import SettledTable, cursor_key, room_for, sync_rows
from nvls_tui.diagnosis import current_kernel_events
from nvls_tui.diagnosis.story import kernel_when
from nvls_tui.model import Holder, NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.runbook.actions import holder_label
from nvls_tui.views.consequences import sigterm_consequences

if TYPE_CHECKING:
    from nvls_tui.console.services import ConsoleServices

# What a restore refused for a stale lock says next; the node screen's next U then offers the take-over.
TAKE_OVER = "Press U again to take the stale lock over."

# What every action refused in read-only mode says (the console hides them; a key or the palette may still ask).
READ_ONLY_REFUSAL = "Read-only mode: this action would change the node, so it is refused."

# Units (54) and NVSwitches (34) side by side, with room for the GPU table's columns, need this many.
NARROW_BELOW = 120

# The holders' columns. Below HOLDERS_NARROW_BELOW columns the command comes right after the kind, so
# pid, kind and command (what decides a SIGTERM) are on screen at 80 columns; the owner and start time
# follow, reachable by scrolling. Wider, the owner and start time come first, as the fleet's habit is.
HOLDERS_NARROW_BELOW = 100
HOLDER_COLUMNS_WIDE = (" ", "pid", "user", "kind", "unit / pod", "started", "command", "devices")
HOLDER_COLUMNS_NARROW = (" ", "pid", "user", "kind", "command", "devices", "unit / pod", "started")
# A command longer than the room left to it on screen ends in "…" there (never cut at the edge with no
# mark); on a table too narrow even for this many cells it keeps this many and scrolls.
HOLDER_COMMAND_MIN = 12

# The panels' titles; what a key would do is said only where the key may act (never in read-only).
UNITS_TITLE, UNITS_KEYS = "Units", "  (s stop · u start)"
HOLDERS_TITLE, HOLDERS_KEYS = "Holders of /dev/nvidia*", "  (space select · a all · t SIGTERM)"


class NodeScreen(Searching, OnConsole, Screen[None]):
    """GPUs, NVSwitches, units, findings, kernel events and holders of one host.

    Args:
        host: the node to show (its state comes from the services' live fleet and follows every poll).
        services: the fleet, the session, the clock and the settings (:class:`ConsoleServices`).
    """

    # The search keys first: while a search is on, n is its next match (the smoke test is T, on no search key).
    BINDINGS = [help_first(), *bindings_for("search"), *bindings_for("node"), back_shown()]
    COMMANDS = {ScreenCommands}
    # No focus of Textual's choosing: it would scroll the body to its first panel; the mount focuses the holders
    # without scrolling (the findings stay on the first screen).
    AUTO_FOCUS = ""

    def __init__(self, host: str, services: ConsoleServices) -> None:
        super().__init__()
        self.host = host
        self.services = services
        self.selected: dict[int, Holder] = {}
        # The last restore was refused for a stale lock (its words): the next U offers the take-over.
        self.stale_lock: str | None = None

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """Header, banner, the GPU table, findings/units/switches side by side, kernel, holders."""
        # The header, the banner and the footer stay put; only the body between them scrolls, so a
        # short terminal (80x24) never scrolls away the node's name, SIMULATED or the keys.
        yield Static(id="node-header")
        yield ModeBanner(simulated=self.services.settings.simulated, read_only=self.services.settings.read_only,
                         id="banner")
        # Not a tab stop of its own: it has no frame or title to show the focus (its panels are the stops, and
        # it scrolls to the one that has the focus).
        with VerticalScroll(id="node-body", can_focus=False):
            yield SettledTable(id="gpus", cursor_type="row", classes="panel")
            # The findings take the body's whole width (a third of it hid two of gpu05's three at
            # 120x40) and scroll, with a scrollbar, where they are taller than their box.
            with VerticalScroll(id="findings-box", classes="panel"):
                yield Static(id="findings")
            with Horizontal(id="node-mid"):
                yield SettledTable(id="units", cursor_type="row", classes="panel")
                yield SettledTable(id="switches", cursor_type="none", classes="panel")
            # Where the kernel log falls short of the boot (rotated, vacuumed, no journal): from when it covers.
            coverage = Static(id="kernel-coverage")
            coverage.display = False  # until a poll says the log falls short
            yield coverage
            yield SettledTable(id="kernel", cursor_type="row", classes="panel")
            # The kernel line under the cursor in full, where the table had to cut it.
            yield Static(id="kernel-detail")
            with Vertical(id="holders-box"):
                yield SettledTable(id="holders", cursor_type="row", classes="panel")
                # The holder under the cursor in full: its pod's container and owner, its whole command.
                yield Static(id="holder-detail")
        yield SettledFooter(compact=True)

    def on_mount(self) -> None:
        """Create the columns, draw the node, follow the app's fleet."""
        self._arrange(self.app.size.width)
        t = self.query_one
        # The fabric state first: on a narrow terminal the columns to its right scroll off, it must not.
        t("#gpus", DataTable).add_columns("#", "fabric", "health", "bus id", "name", "persist", "clique",
                                          "cluster uuid", "uuid")
        t("#units", DataTable).add_columns("unit", "state", "sub")
        t("#switches", DataTable).add_columns("nvswitch", "bus id")
        t("#kernel", DataTable).add_columns("code", "when", "line")
        # The command before the devices: what a process is decides whether to stop it; its device
        # files (compressed) rarely do, and a long list took the command's room. The holders' columns
        # were made by _arrange above, in the order the width asks for.
        read_only = self.services.settings.read_only
        titles = {"#gpus": "GPUs", "#findings-box": "Findings",
                  "#units": UNITS_TITLE + ("" if read_only else UNITS_KEYS),
                  "#switches": "NVSwitches", "#kernel": "Kernel fabric events (this boot)"}
        for sel, title in titles.items():
            self.query_one(sel).border_title = title
        self.services.live.follow(self, self.refresh_node)
        self.refresh_node()
        if self.services.settings.periodic:
            self.set_interval(1.0, self._draw_header)  # the poll age moves even when nothing else does
        # Focus the holders without scrolling the body to them: the node's findings come first (and on
        # a narrow terminal the holders come right after them, on the same first screen).
        t("#holders", DataTable).focus(scroll_visible=False)
        self.watch(t("#findings-box"), "scroll_y", self._findings_scrolled, init=False)

    def on_resize(self, event: events.Resize) -> None:
        """Stack the findings, units and switches when they cannot stand side by side."""
        self._arrange(event.size.width)
        self.call_after_refresh(self._refit_holders)  # once the table has its new width
        self.call_after_refresh(self._draw_header)  # the header's width decides where the versions go

    def _arrange(self, width: int) -> None:
        # Narrow: the findings first, then the holders (the focused table), then units and switches
        # stacked, the GPU table and the kernel, so what is wrong and what holds the devices are on the
        # first screen of an 80x24 terminal; wide: the GPUs on top, the findings, units beside switches,
        # the kernel, the holders.
        narrow = width < NARROW_BELOW
        self.set_class(narrow, "-narrow")
        self._order_holder_columns(width)
        body = self.query_one("#node-body")
        wide_order = ["#gpus", "#findings-box", "#node-mid", "#kernel-coverage", "#kernel", "#holders-box"]
        narrow_order = ["#findings-box", "#holders-box", "#node-mid", "#gpus", "#kernel-coverage", "#kernel"]
        order = [self.query_one(sel) for sel in (narrow_order if narrow else wide_order)]
        if body.children.index(order[0]) != 0:
            body.move_child(order[0], before=body.children[0])
        for before, after in zip(order, order[1:], strict=False):
            if body.children.index(after) != body.children.index(before) + 1:
                body.move_child(after, after=before)
        self.call_after_refresh(self._findings_scrolled)

    def _order_holder_columns(self, width: int) -> None:
        """Give the holders table the column order of ``width``, its rows redrawn and its cursor kept."""
        order = HOLDER_COLUMNS_NARROW if width < HOLDERS_NARROW_BELOW else HOLDER_COLUMNS_WIDE
        table = self.query_one("#holders", DataTable)
        if [c.label.plain for c in table.columns.values()] == list(order):
            return
        keep = cursor_key(table)
        table.clear(columns=True)
        table.add_columns(*order)
        state = self.state
        if state is not None:
            self._draw_holders(state)
        keys = [r.value for r in table.rows]
        if keep in keys:
            table.move_cursor(row=keys.index(keep), animate=False)

    def _findings_scrolled(self, *_: object) -> None:
        """Say on the findings' border how much lies below, while some does (the scrollbar alone is thin)."""
        box = self.query_one("#findings-box")
        below = int(box.max_scroll_y - box.scroll_y)
        box.border_subtitle = f"↓ {below} more line{'s' if below != 1 else ''} (scroll)" if below > 0 else ""

    @property
    def state(self) -> NodeState | None:
        """This node's latest state."""
        return self.services.live.fleet.get(self.host)

    def refresh_node(self, *_: object) -> None:
        """Redraw from the latest state; the tables keep their cursors."""
        state = self.state
        if state is None:
            return
        diagnosis = self.services.live.diagnoses.get(self.host)
        self._draw_header()
        self._draw_gpus(state)
        self._draw_findings(diagnosis)
        self._draw_units(state)
        sync_rows(self.query_one("#switches", DataTable),
                  [(s.device, (s.device.removeprefix("/dev/"), s.bus_id or "–")) for s in state.nvswitches])
        self.query_one("#switches").border_subtitle = unread_subtitle(state, "nvswitches", f"{len(state.nvswitches)}")
        # Dated on the node's clock and against FM's start: an old line beside an active FM is history.
        current = set(map(id, current_kernel_events(state)))
        kernel = [(f"{i}", (Text(e.code, style=cells.STYLE["bad" if id(e) in current else "muted"]),
                            Text(kernel_when(e, state), style=cells.STYLE["muted"]), kernel_message(e.line)))
                  for i, e in enumerate(state.kernel_events)]
        table = self.query_one("#kernel", DataTable)
        room = room_for(table, ["code", "when", "line"], [row for _, row in kernel], "line")
        # Cut at a word's end where the line is longer than its room (never inside a hex code), marked with "…".
        sync_rows(table, [(key, (code, when, cells.fit_words(line, None if room is None else max(room, 20))))
                          for key, (code, when, line) in kernel])
        self._draw_kernel_detail()
        self.query_one("#kernel").border_subtitle = unread_subtitle(state, "kernel",
                                                                    f"{len(kernel)}" if kernel else "none")
        coverage = coverage_line(state)
        shown = self.query_one("#kernel-coverage", Static)
        shown.display = coverage is not None
        shown.update(Text(f" {coverage}", style=cells.STYLE["degraded"]) if coverage else "")
        self._draw_holders(state)
        self.refresh_bindings()

    def _draw_header(self) -> None:
        state = self.state
        if state is None:
            return
        age = None if state.polled_at is None else self.services.clock() - state.polled_at
        diagnosis = self.services.live.diagnoses.get(self.host)
        header = header_text(state, diagnosis, age)
        # Where the whole header would wrap (80 columns), the versions go to the GPUs panel's title.
        width = self.query_one("#node-header").size.width or self.app.size.width
        narrow = header.cell_len > width
        if narrow:
            header = header_text(state, diagnosis, age, versions=False)
        self.query_one("#node-header", Static).update(header)
        self.query_one("#gpus").border_title = f"GPUs · {versions_line(state)}" if narrow else "GPUs"

    def _draw_gpus(self, state: NodeState) -> None:
        rows = []
        for g in state.gpus:
            f = g.fabric
            health = (f.health.summary if f.health and f.health.summary else "–")
            rows.append((str(g.index), (str(g.index), cells.fabric_words(f), health, g.bus_id, g.name,
                                        g.persistence_mode or "–", f.clique_id or "–",
                                        short_cluster(f.cluster_uuid), g.uuid)))
        sync_rows(self.query_one("#gpus", DataTable), rows)
        self.query_one("#gpus").border_subtitle = gpu_summary(state, self.services.live.diagnoses.get(state.host))

    def _draw_findings(self, diagnosis: Diagnosis | None) -> None:
        # Wrapped under their words: a code never runs into the words that follow it.
        self.query_one("#findings", Static).update(
            Hanging(cells.findings_text(diagnosis.findings if diagnosis else None, nccl=True)))
        self.call_after_refresh(self._findings_scrolled)

    def _draw_units(self, state: NodeState) -> None:
        rows = [(s.name, (s.name.removesuffix(".service"), cells.unit_text(s), s.sub or "–"))
                for s in state.services if s.exists]
        if state.k8s is not None:  # the cluster's word for the node, and the GPU Operator's operand labels
            k8s = state.k8s
            rows.append(("k8s:node", (f"k8s {k8s.node}", cells.kube_text(k8s),
                                      "not read" if k8s.error else "cordoned" if k8s.cordoned else "schedulable")))
            rows += [(f"k8s:{key}", (key.removeprefix("nvidia.com/gpu."), Text(value), "label"))
                     for key, value in k8s.operand_labels.items()]
        sync_rows(self.query_one("#units", DataTable), rows)
        self.query_one("#units").border_subtitle = unread_subtitle(state, "units", "")

    def _draw_holders(self, state: NodeState) -> None:
        # A selection survives polls only while the PID is still the same process.
        live = {(h.pid, h.start_time) for h in state.holders}
        self.selected = {p: h for p, h in self.selected.items() if (h.pid, h.start_time) in live}
        rows = []
        order = [c.label.plain for c in self.query_one("#holders", DataTable).columns.values()]
        for h in state.holders:
            mark = Text("●", style=palette.bold("accent")) if h.pid in self.selected else Text(" ")
            cells: dict[str, Text | str] = {" ": mark, "pid": str(h.pid), "user": h.user, "kind": h.kind.value, "unit / pod": owner_text(h),
                     "started": short_start(h.start_time), "command": h.command,
                     "devices": compact_devices(h.devices)}
            rows.append((str(h.pid), tuple(cells[label] for label in order)))
        table = self.query_one("#holders", DataTable)
        rows = self._fit_commands(table, order, rows)
        sync_rows(table, rows)
        self._draw_holder_detail()
        box = self.query_one("#holders-box")
        box.border_title = HOLDERS_TITLE + ("" if self.services.settings.read_only else HOLDERS_KEYS)
        box.border_subtitle = unread_subtitle(state, "holders", f"{len(self.selected)} selected of {len(rows)}"
                                              if rows else "none: a reset would not be refused")

    @staticmethod
    def _fit_commands(table: DataTable, order: list[str], rows: list[tuple[str, tuple[Text | str, ...]]]
                      ) -> list[tuple[str, tuple[Text | str, ...]]]:
        """``rows`` with each command cut to the room the table has left for it, ending in ``…``."""
        if "command" not in order:
            return rows
        room = room_for(table, order, [row for _, row in rows], "command")
        if room is None:
            return rows  # no width yet: the redraw after the layout fits them
        at, width = order.index("command"), max(room, HOLDER_COMMAND_MIN)
        return [(key, (*row[:at], cells.fit(Text(str(row[at])), width), *row[at + 1:])) for key, row in rows]

    def _refit_holders(self) -> None:
        """Draw the holders and the kernel lines again at the tables' new width (their commands and lines are
        fitted to it)."""
        if self.state is not None and self.is_mounted:
            self.refresh_node()

    # ---- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide what changes a node in read-only mode; grey out what has nothing to act on (its key
        then says why: :meth:`why_not`)."""
        if action in SEARCH_ACTIONS:
            return self.search_allows(action)
        if action in destructive_actions("node") and self.services.settings.read_only:
            return False
        return None if self.why_not(action) else True

    def why_not(self, action: str) -> str | None:
        """Why the key of ``action`` cannot act now, as the toast says it (None when it can act).

        The app shows these words when a greyed or hidden key is pressed: a key never does nothing
        without a word (issue 28 item 5).
        """
        host, state = self.host, self.state
        if action in destructive_actions("node") and self.services.settings.read_only:
            bound = spec_of_action("node", action)
            what = bound.description if bound else action
            if action in ("stop_unit", "start_unit"):  # the footer's short "Stop"/"Start" (room at 160 columns)
                what += " unit"
            return f"read-only: {what} would change {host}; the console was started with --read-only."
        if action == "sigterm" and not self.selected:
            return "Select holders first (space, or a for all)."
        if action in ("toggle_holder", "select_all") and not (state and state.holders):
            return f"{host} shows no holder of /dev/nvidia* to select."
        if action == "restore_repair" and not (state and state.repair_record):
            return f"{host} holds no record of an interrupted repair: there is nothing to restore."
        if action in ("stop_unit", "start_unit"):
            return self._why_not_unit("stop" if action == "stop_unit" else "start")
        return None

    def _why_not_unit(self, verb: str) -> str | None:
        # `s`/`u` act on the Units table's cursor only while that table has the focus: a unit picked by a
        # cursor the operator is not looking at is not what they meant.
        units = self.query_one("#units", DataTable)
        if self.focused is not units:
            return f"move to the Units table (tab) to {verb} a unit."
        unit, state = self.cursor_unit(), self.state
        if unit is None or state is None:
            return f"The Units table lists no unit of {self.host} to {verb}."
        short = unit.removesuffix(".service")
        active = next((s.active for s in state.services if s.name == unit), None)
        if verb == "stop" and active != "active":
            return f"{short} is {active or 'in an unknown state'}: nothing to stop (u starts it)."
        if verb == "start" and active == "active":
            return f"{short} is already active: nothing to start (s stops it)."
        return None

    def cursor_unit(self) -> str | None:
        """The unit under the units table's cursor."""
        return cursor_key(self.query_one("#units", DataTable))

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        """The unit or holder under the cursor decides which actions apply; the holder's and the kernel line's
        detail follow it."""
        self.refresh_bindings()
        self._draw_holder_detail()
        self._draw_kernel_detail()

    def _draw_kernel_detail(self) -> None:
        """Under the kernel table: the line under its cursor in full, where the table cut it (else nothing)."""
        table = self.query_one("#kernel", DataTable)
        key, state = cursor_key(table), self.state
        detail = self.query_one("#kernel-detail", Static)
        whole = None
        if state is not None and key is not None and key.isdecimal() and int(key) < len(state.kernel_events):
            line = kernel_message(state.kernel_events[int(key)].line)
            shown = table.get_row(key)[2] if key in {k.value for k in table.rows} else None
            whole = line if shown is not None and str(shown).endswith("…") else None
        detail.display = whole is not None
        detail.update(Text(whole or "", style=palette.STYLE["muted"]))

    def _draw_holder_detail(self) -> None:
        """The line under the holders table: the holder under the cursor in full (nothing without one)."""
        key = cursor_key(self.query_one("#holders", DataTable))
        state = self.state
        holder = next((h for h in state.holders if str(h.pid) == key), None) if state is not None else None
        detail = self.query_one("#holder-detail", Static)
        detail.display = holder is not None
        detail.update(Text(holder_detail(holder), style=palette.STYLE["muted"]) if holder is not None else Text(""))

    def action_toggle_holder(self) -> None:
        """Select or unselect the holder under the cursor."""
        state, key = self.state, cursor_key(self.query_one("#holders", DataTable))
        if state is None or key is None:
            return
        pid = int(key)
        if pid in self.selected:
            del self.selected[pid]
        else:
            self.selected[pid] = next(h for h in state.holders if h.pid == pid)
        self._draw_holders(state)
        self.refresh_bindings()

    def action_select_all(self) -> None:
        """Select every holder, or clear the selection when all are already selected."""
        state = self.state
        if state is None:
            return
        if len(self.selected) == len(state.holders):
            self.selected = {}
        else:
            self.selected = {h.pid: h for h in state.holders}
        self._draw_holders(state)
        self.refresh_bindings()

    def _refuse_read_only(self, description: str) -> bool:
        if self.services.settings.read_only:
            self.refuse(description, READ_ONLY_REFUSAL)
            return True
        return False

    def refuse(self, description: str, reason: str) -> None:
        """Say that ``description`` was refused up front, and why (nothing ran: :class:`ActionFailed`)."""
        self.tell(ActionFailed(description, reason, [self.host], refused=True))

    def action_sigterm(self) -> None:
        """Confirm, then SIGTERM the selected holders (each PID re-checked by the backend)."""
        if self._refuse_read_only(f"SIGTERM on {self.host}"):
            return
        holders = list(self.selected.values())
        if not holders:
            self.notify("Select holders first (space, or a for all).", severity="warning")
            return
        # A Slurm job's processes end through Slurm (scancel), never by a signal from here.
        in_jobs = [h for h in holders if h.job is not None]
        if in_jobs:
            jobs = sorted({h.job.id for h in in_jobs if h.job is not None})
            self.refuse(f"SIGTERM on {self.host}",
                        f"PID {', '.join(str(h.pid) for h in in_jobs)} belong{'s' if len(in_jobs) == 1 else ''} to "
                        f"Slurm job {', '.join(map(str, jobs))}: nvls-tui never signals a job's processes; "
                        f"scancel {' '.join(map(str, jobs))} (or let it end), or repair: it drains the node first.")
            return
        host = self.host

        def done(ok: bool | None) -> None:
            if ok:
                self.selected = {}
                self.services.actions.start_action(f"SIGTERM on {host}", self._sigterm(host, holders), hosts=[host])

        consequences = sigterm_consequences(holders, self.services.live.fleet.get(host))
        self.app.push_screen(ConfirmScreen(
            f"Send SIGTERM to {len(holders)} process{'es' if len(holders) != 1 else ''} on {host}?",
            [holder_label(h, 90) for h in holders] + [f"⚠ {line}" for line in consequences],
            confirm_label=f"SIGTERM {len(holders)}",
            note="Each PID's start time and command line are re-checked just before the signal; "
                 "a PID that changed is refused and reported."), done)

    async def _sigterm(self, host: str, holders: list[Holder]) -> None:
        self.tell(ActionFinished(await self.services.session.sigterm(host, holders)))

    def action_stop_unit(self, unit: str | None = None) -> None:
        """Confirm, then ``systemctl stop`` the unit (default: the one under the units cursor)."""
        self._unit("stop", unit)

    def action_start_unit(self, unit: str | None = None) -> None:
        """Confirm, then ``systemctl start`` the unit (default: the one under the units cursor)."""
        self._unit("start", unit)

    def _unit(self, verb: str, unit: str | None) -> None:
        unit = unit or self.cursor_unit()
        if self._refuse_read_only(f"{verb} {unit or 'a unit'} on {self.host}"):
            return
        if unit is None:
            self.notify("Pick a unit in the units table first (Tab moves there).", severity="warning")
            return
        host = self.host

        def done(ok: bool | None) -> None:
            if ok:
                self.services.actions.start_action(f"{verb} {unit} on {host}", self._run_unit(host, verb, unit), hosts=[host])

        self.app.push_screen(ConfirmScreen(
            f"{verb.capitalize()} {unit} on {host}?", [f"systemctl {verb} {unit}"],
            confirm_label=f"{verb.capitalize()} {unit.removesuffix('.service')}"), done)

    async def _run_unit(self, host: str, verb: str, unit: str) -> None:
        state = self.state
        seen = next((s.active for s in state.services if s.name == unit), None) if state else None
        self.tell(ActionFinished(await self.services.session.unit(host, verb, unit, seen=seen)))

    def action_poll_node(self) -> None:
        """Poll this node now."""
        self.services.actions.poll_now(self.host)

    def action_restore_repair(self) -> None:
        """Confirm, then put the node back from an interrupted repair's record (repair --restore)."""
        if self._refuse_read_only(f"restore on {self.host}"):
            return
        state, host = self.state, self.host
        if state is None or not state.repair_record:
            self.notify(f"{host} holds no record of an interrupted repair.", severity="warning")
            return
        record = state.repair_record
        units = [f"{u}: was {a}" for u, a in sorted((record.get("units") or {}).items())]
        force = self.stale_lock is not None

        def done(ok: bool | None) -> None:
            if ok:
                self.services.actions.start_action(f"restore on {host}", self._restore(host, force=force), hosts=[host])

        started = f"Started {record.get('started', '?')} by {record.get('operator', '?')}. "
        if force:
            self.app.push_screen(ConfirmScreen(
                f"Take over the stale lock of {host} and restore it?", [self.stale_lock or "", *units],
                confirm_label="Take over and restore",
                note=started + "Only a stale lock is taken over (no heartbeat for 5 minutes, or its nvls-tui gone "
                     "from this bastion): a live run's lock refuses the restore whatever is chosen here. The "
                     "take-over is written to the audit log."), done)
            return
        self.app.push_screen(ConfirmScreen(
            f"Restore {host} from the interrupted repair's record?",
            units or ["(the record names no unit)"], confirm_label="Restore",
            note=started + "Every unit and persistence setting goes back as recorded; the record and the lock "
                 "are removed. A repair still running on the node (its lock alive) refuses this."), done)

    async def _restore(self, host: str, *, force: bool = False) -> None:
        done = await self.services.session.restore(host, force=force)
        stale = done.outcome is not None and done.outcome.lock_stale and not force
        self.tell(ActionFinished(done, TAKE_OVER if stale else ""))

    @on(ActionFinished)
    def _restore_finished(self, message: ActionFinished) -> None:
        # A restore refused for a stale lock arms the take-over: the next U offers it (and only that U).
        done = message.outcome
        if done.action == "restore" and done.host == self.host:
            self.stale_lock = done.outcome.message if message.hint == TAKE_OVER and done.outcome else None

    # ---- yank (copy to the clipboard) -----------------------------------------------------------
    def _holder_under_cursor(self) -> int | None:
        key = cursor_key(self.query_one("#holders", DataTable))
        return int(key) if key is not None and key.isdecimal() else None

    def action_yank(self) -> None:
        """``y``: the holder's command where the holders table has the focus, else the host (OSC 52)."""
        from nvls_tui.console.yank import host_yank, node_yanks

        pid = self._holder_under_cursor() if self.focused is self.query_one("#holders", DataTable) else None
        if pid is not None:
            held = node_yanks(self.host, self.state, None, holder_pid=pid)
            if len(held) > 2:  # the host, the holder, the --restore command
                copy(self, held[1])
                return
        copy(self, host_yank(self.host))

    # ---- the node's logs and an ssh to it (read-only mode keeps both: neither changes the node) -----
    def action_describe(self) -> None:
        """``d``: the node's Kubernetes and Slurm sides in full."""
        from nvls_tui.console.screens.describe import DescribeScreen

        self.app.push_screen(DescribeScreen(self.host, self.services))

    def action_xray(self) -> None:
        """``x``: node → GPU → holder → pod, job or unit."""
        from nvls_tui.console.screens.describe import XrayScreen

        self.app.push_screen(XrayScreen(self.host, self.services))

    def action_logs(self) -> None:
        """``l``: FM's journal, the kernel log and the past repairs of this node, in tabs."""
        from nvls_tui.console.screens.logs import LogsScreen

        self.app.push_screen(LogsScreen(self.host, self.services))

    def action_ssh(self) -> None:
        """``S``: suspend the console and ssh to this node with the console's SSH options."""
        from nvls_tui.console.screens.shell import open_shell

        open_shell(self, self.services, self.host)

    # ---- the palette ----------------------------------------------------------------------------
    def palette_commands(self) -> Iterator[Command]:
        """The node's bound actions that apply now, then a stop or start of each unit it has."""
        yield from scope_commands(self, "node", self.host)
        yield from yank_commands(self, self.services, self.host, self._holder_under_cursor())
        state = self.state
        if self.services.settings.read_only or state is None:
            return
        for s in state.services:
            if not s.exists:
                continue
            short = s.name.removesuffix(".service")
            if s.active == "active":
                yield (f"unit: Stop {short} on {self.host}", partial(self.action_stop_unit, s.name),
                       f"systemctl stop {s.name} (confirmed first)")
            else:
                yield (f"unit: Start {short} on {self.host}", partial(self.action_start_unit, s.name),
                       f"systemctl start {s.name} (confirmed first; now {s.active})")

    # ---- single actions, streamed into a side pane (console part 2) -----------------------------
    def action_reset_gpus(self) -> None:
        """Confirm (type the node name), then ``nvidia-smi -r`` in the side pane."""
        from nvls_tui.console.screens.stream_pane import open_single_action

        open_single_action(self, "reset")

    def action_restart_fm(self) -> None:
        """Confirm (type the node name), then restart Fabric Manager in the side pane."""
        from nvls_tui.console.screens.stream_pane import open_single_action

        open_single_action(self, "fm-restart")

    def action_smoke_test(self) -> None:
        """Confirm, then run the NVLS smoke test in the side pane, with its live bandwidth plot."""
        from nvls_tui.console.screens.stream_pane import open_single_action

        open_single_action(self, "smoke")

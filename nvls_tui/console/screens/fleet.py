"""The fleet screen: every node at a glance, worst first, live."""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from nvls_tui.console.bindings import bindings_for, current_key, destructive_actions, help_first, relabel
from nvls_tui.console.commands import Command, ScreenCommands, scope_commands
from nvls_tui.console.messages import PlanApproved
from nvls_tui.console.screens.typed import OnConsole
from nvls_tui.console.widgets import cells, palette
from nvls_tui.console.widgets.banner import FleetSummary, ModeBanner, summary_text
from nvls_tui.console.widgets.bulk_rows import write_cells
from nvls_tui.console.widgets.fleet_grid import FleetGrid, versions_line
from nvls_tui.console.widgets.hanging import Hanging
from nvls_tui.console.widgets.node_text import header_text
from nvls_tui.console.widgets.ordered_input import OrderedInput
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.model import Fleet, Verdict
from nvls_tui.views.fleet_sort import SortOrder, cell_value, ordered
from nvls_tui.views.fleet_top import AnswerTimes, hosts_within, late_words
from nvls_tui.views.last_repair import RepairMemory

if TYPE_CHECKING:
    from rich.text import Text

    from nvls_tui.console.ask import AskMode
    from nvls_tui.console.services import ConsoleServices, LiveFleet

EXPORT_TITLE = "fleet: Export the fleet view (CSV and JSON)"

# Seconds between two redraws of the grid when polls arrive in bursts.
REDRAW_EVERY = 0.1


def matches(query: str, host: str, verdict: Verdict | None, codes: list[str]) -> bool:
    """True when every word of ``query`` matches: a node set (``gpu[120-125]``) must name the host, any
    other word must be in the host, verdict or a finding code (case-insensitive)."""
    hay = " ".join([host, verdict.value if verdict else "polling", *codes]).lower()
    for word in query.split():
        if "[" in word:
            if host not in _nodeset(word):
                return False
        elif word.lower() not in hay:
            return False
    return True


# The selection on the top line (``hosts`` shortened to fit by views.fleet_top.hosts_within).
SELECTED = " · selected for repair: {hosts} (r repairs)"
# Where that does not fit beside the counts (120 columns), the same in fewer words.
SELECTED_SHORT = " · selected: {hosts} (r)"


@functools.lru_cache(maxsize=64)
def _nodeset(word: str) -> frozenset[str]:
    """The hosts a node-set word names; a half-typed one (``gpu[12``) names none yet."""
    from ClusterShell.NodeSet import NodeSet, NodeSetParseError

    from nvls_tui.backends.nodesets import MAX_TARGETS, nodeset_size

    size = nodeset_size(word)
    if size is not None and size > MAX_TARGETS:
        return frozenset()  # NodeSet would build every name first (gpu[1-30000000]: a minute, gigabytes)
    try:
        return frozenset(NodeSet(word))
    except (NodeSetParseError, ValueError):
        return frozenset()


class FleetScreen(OnConsole, Screen[None]):
    """One row per node; Enter opens it, ``/`` filters, ``v`` toggles verdict order.

    Args:
        services: the fleet, the session, the clock and the settings (:class:`ConsoleServices`).
    """

    BINDINGS = [help_first(), *bindings_for("fleet"), Binding("escape", "clear_filter", show=False)]
    COMMANDS = {ScreenCommands}
    # No widget is focused by Textual on mount (it gives the focus to the first focusable one, the filter
    # box, and keys typed while the console started, a `q`, went into that hidden box): until on_mount
    # gives the grid the focus, keys go to the screen's own bindings. (AUTO_FOCUS "#grid" would scroll the
    # screen to the grid at 80x24.)
    AUTO_FOCUS = ""

    def __init__(self, services: ConsoleServices) -> None:
        super().__init__()
        self.services = services
        self.grid_order = SortOrder()  # verdict order (broken first); O picks any column, v toggles fleet order
        self.filter_text = ""
        self.selected: list[str] = []  # nodes picked for a repair (space), in the order picked
        self.answer_times = AnswerTimes()  # each node's own interval, so that only a late answer is named
        self._last_draw = 0.0
        self._draw_pending = False
        self.repair_memory = RepairMemory()  # the last failed or aborted repair of each node, while news
        self.proposal_marks: set[str] = set()  # hosts whose host cell carries the autopilot's ⚑ (ask mode)
        if services.settings.read_only:  # r shows the dry-run plan there, and nothing can start
            relabel(self._bindings, "repair", "Dry run")

    def compose(self) -> ComposeResult:
        """Summary, banner, filter (hidden until ``/``), the grid, the footer."""
        yield FleetSummary(id="summary")
        yield ModeBanner(simulated=self.services.settings.simulated, read_only=self.services.settings.read_only,
                         ask=self.services.ask is not None, id="banner")
        box = OrderedInput(placeholder="filter: host, verdict or finding code (Enter keeps it, Esc clears)",
                           id="filter")
        box.display = False  # hidden (and so never focused) from the start, not from on_mount on
        yield box
        yield FleetGrid(self.services.live.fleet.hosts, width=self.app.size.width, id="grid")
        yield Static(id="empty")
        yield Static(id="preview", classes="panel")
        yield SettledFooter(compact=True)

    def on_mount(self) -> None:
        """Draw what is known and follow every change of the app's fleet."""
        self.services.live.follow(self, self.on_fleet_changed)
        self.refresh_grid()
        self.set_focus(self.query_one(FleetGrid), scroll_visible=False)
        if self.services.settings.periodic:
            self.set_interval(5.0, self.refresh_grid)  # poll ages (in 10 s steps) move even when nothing else does

    def order(self, fleet: Fleet) -> list[str]:
        """Visible hosts: filtered, then sorted by verdict (broken first) if asked, else fleet order."""
        diagnoses = self.services.live.diagnoses
        hosts = list(fleet.hosts)
        if self.filter_text:
            hosts = [h for h in hosts if matches(
                self.filter_text, h, self.services.live.verdict(h),
                [f.code for f in diagnoses[h].findings] if h in diagnoses else [])]
        return ordered(hosts, self.grid_order, functools.partial(self._sort_value, self.grid_order.column,
                                                                 self.services.clock()))

    @property
    def sort_by_verdict(self) -> bool:
        """The fleet is in verdict order (broken first), the default."""
        return self.grid_order == SortOrder()

    def _sort_value(self, column: str, now: float, host: str) -> tuple[object, ...] | None:
        # None: unknown (never read, or the section unread) or absent: sorted after every known value.
        live = self.services.live
        if column == "verdict":
            verdict = live.verdict(host)
            return (verdict.rank,) if verdict else None
        state = live.fleet.get(host)
        if state is None:
            return None
        if column == "age":
            return None if state.polled_at is None else (now - state.polled_at,)
        if column == "gpus":  # how many GPUs are not registered with the fabric, the worst first
            unread = not state.read_anything or any(m.section == "gpus" for m in state.missing)
            return None if unread or not state.gpus else (sum(not g.fabric.completed_ok for g in state.gpus),)
        grid = self.query_one(FleetGrid)
        return cell_value(column, grid.cell_plain(state, live.diagnoses.get(host), now, column))

    def sortable_columns(self) -> list[tuple[str, str]]:
        """``(key, label)`` of the orders the sort picker offers: the fleet's own, then every column shown."""
        layout = self.query_one(FleetGrid).layout_now
        columns: list[tuple[str, str]] = [("", "fleet order")]
        for column in layout.columns:
            key = column.key
            if key[:1] in "gs" and key[1:].isdecimal():
                if key == "g0":
                    columns.append(("gpus", "GPUs (not registered)"))
                continue
            columns.append((key, {"note": "story", "gpus": "GPUs (not registered)"}.get(key, column.label)))
        return columns

    def on_fleet_changed(self, *_: object) -> None:
        """Redraw at most every REDRAW_EVERY seconds: 256 nodes polled every 2 s change the fleet
        128 times a second, and redrawing the grid for each starved the keyboard (bench/ui_bench.py)."""
        since = time.monotonic() - self._last_draw
        if since >= REDRAW_EVERY:
            self.redraw_changed()
        elif not self._draw_pending:
            self._draw_pending = True
            self.set_timer(REDRAW_EVERY - since, self.redraw_changed)

    def redraw_changed(self) -> None:
        """Redraw the rows whose node changed; the ages of the others move with the 5 s refresh (they
        are shown in 10 s steps). At 1,024 nodes a redraw of every row took ~25 ms, ten times a second."""
        self.refresh_grid(ages=False)

    def refresh_grid(self, *_: object, ages: bool = True) -> None:
        """Diff the grid against the app's fleet (only changed cells are written).

        Args:
            ages: also bring every row's poll age up to date (``FleetGrid.show``).
        """
        self._last_draw = time.monotonic()
        self._draw_pending = False
        fleet = self.services.live.fleet
        order = self.order(fleet)
        grid = self.query_one(FleetGrid)
        self._follow_repairs(grid)
        grid.show(fleet, self.services.live.diagnoses, order, self.services.clock(), ages=ages)
        grid.mark_sorted(self.grid_order.column, self.grid_order.arrow())
        grid.show_title(versions_line(fleet, grid.show_versions))
        mark_selected(grid, self.selected, self.services.live, self.services.clock)
        ask = self.services.ask
        self.proposal_marks = mark_proposed(grid, ask.proposed if ask is not None else [], self.selected,
                                            self.proposal_marks, self.services.live, self.services.clock)
        verdicts = [self.services.live.verdict(h) for h in fleet.hosts]
        labels = dict(self.sortable_columns())
        extra = self.grid_order.words(labels.get(self.grid_order.column))
        if self.filter_text:
            extra += f" · filter “{self.filter_text}”: {len(order)} of {len(fleet)} shown"
        if ask is not None:
            extra += ask_words(ask, current_key("fleet.approve", self.app.keymap))  # type: ignore[attr-defined]
            self.query_one(ModeBanner).ask_alarms(" · ".join(ask_alarms(ask)))
        # Late only past the node's own interval (calm nodes are polled less often on purpose: views/fleet_top).
        self.answer_times.note(fleet)
        late = late_words(self.answer_times.late(fleet, self.services.clock()))
        tail = f" · {late}" if late else ""
        if self.selected:
            extra = self._with_selection(verdicts, extra, tail)
        extra += tail
        self.query_one(FleetSummary).show(verdicts, extra=extra)
        self.draw_preview()
        empty = self.query_one("#empty", Static)
        empty.display = not order
        if not order:
            empty.update("No node matches the filter. Esc clears it." if self.filter_text
                         else "No targets. Start with `nvls-tui --demo`, or name hosts: `nvls-tui gpu[01-08]`.")

    def _with_selection(self, verdicts: list, extra: str, tail: str) -> str:
        """The top line's words after the counts, with the selection named whole where it can be: the hosts give
        way to ``+N more`` first, then the sort's words (the sorted column's header has the arrow), then the long
        wording; as a last resort the hosts are counted (``2 nodes``)."""
        summary = self.query_one(FleetSummary)
        width = summary.size.width or self.app.size.width
        free = width - summary_text(verdicts).cell_len - len(tail)
        sort_words = self.grid_order.words(dict(self.sortable_columns()).get(self.grid_order.column))
        rest = extra.removeprefix(sort_words)  # the filter's words stay
        # The counts end in their own blanks: a selection right after them needs no " · " before it.
        lead = "" if not rest else " · "
        tries = [(extra, SELECTED), (rest, lead + SELECTED.removeprefix(" · ")),
                 (rest, lead + SELECTED_SHORT.removeprefix(" · "))]
        for before, template in tries:
            room = free - len(before) - len(template.format(hosts=""))
            hosts = hosts_within(self.selected, room)
            if len(hosts) <= room and not hosts.endswith(" nodes"):
                return before + template.format(hosts=hosts)
        before, template = tries[-1]
        return before + template.format(hosts=hosts_within(self.selected, free - len(before) - len(template.format(hosts=""))))

    def _follow_repairs(self, grid: FleetGrid) -> None:
        # A failed or aborted repair stays in the node's story until a poll shows the node changed.
        memory = self.repair_memory
        changed = memory.remember(self.services.session.repairs, self.services.clock())
        diagnoses = self.services.live.diagnoses
        for host in memory.hosts:
            state = self.services.live.fleet.get(host)
            if state is not None and memory.seen(state, diagnoses.get(host)):
                changed.add(host)
        for host in changed:
            grid.forget_row(host)
        grid.last_repair = memory.get

    def on_resize(self, event: events.Resize) -> None:
        """Fit the grid's columns to the new width (the story column takes what is left)."""
        if self.query_one(FleetGrid).relayout(width=event.size.width):
            self.refresh_grid()

    def action_open_node(self) -> None:
        """Open the node under the cursor."""
        host = self.query_one(FleetGrid).current_host
        if host:
            self.services.actions.open_node(host)

    def draw_preview(self) -> None:
        """The findings of the node under the cursor, under the grid."""
        preview = self.query_one("#preview", Static)
        host = self.query_one(FleetGrid).current_host
        state = self.services.live.fleet.get(host) if host else None
        preview.display = state is not None
        if state is None or host is None:
            return
        diagnosis = self.services.live.diagnoses.get(host)
        age = None if state.polled_at is None else self.services.clock() - state.polled_at
        preview.border_title = f"{host}: findings"
        preview.border_subtitle = "Enter: GPUs, units, holders"
        text = header_text(state, diagnosis, age)
        text.append("\n")
        if self.services.ask is not None:
            text.append_text(ask_text(self.services.ask, host, current_key("fleet.approve",
                                                                          self.app.keymap)))  # type: ignore[attr-defined]
        text.append_text(cells.findings_text(diagnosis.findings if diagnosis else None, limit=8))
        if state.holders:
            kinds = Counter(h.kind.value for h in state.holders)
            text.append("\nholders  ", style="bold")
            text.append("  ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(kinds.items())))
        # Its height is fixed by the layout (1fr): skip the relayout, which repaints the whole grid.
        # Wrapped under their words (a code never runs into them); a cut last line ends in "…".
        preview.update(Hanging(text), layout=False)

    def on_data_table_row_highlighted(self, _: FleetGrid.RowHighlighted) -> None:
        """Follow the cursor with the preview."""
        self.draw_preview()

    def on_data_table_row_selected(self, event: FleetGrid.RowSelected) -> None:
        """Enter on a row: the grid consumes the key itself, so its selection opens the node."""
        event.stop()
        self.action_open_node()

    def action_filter(self) -> None:
        """Show the filter box and type into it.

        ``/`` is a priority binding, run as the key arrives, and the focus moves at once (``set_focus``,
        not ``focus()``, which waits for the keys already queued): the keys typed with it land in the box.
        """
        if isinstance(self.focused, Input):
            raise SkipAction  # typing in the box: a `/` is text
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        text = event.value.strip()
        if text == self.filter_text:
            # Nothing to refilter: Esc clears the box after it has refiltered itself (its Changed comes
            # after), and a space typed adds nothing. At 1,024 rows that second pass cost 6-14 ms on Esc.
            return
        self.filter_text = text
        self.refresh_grid()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = bool(self.filter_text)
        self.set_focus(self.query_one(FleetGrid))  # at once: the keys typed after Enter are the grid's

    def action_clear_filter(self) -> None:
        """Esc: clear the filter and go back to the grid."""
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.filter_text = ""
        self.refresh_grid()
        self.query_one(FleetGrid).focus()

    def action_command(self) -> None:
        """``:``: the command line (``views.commands``); what it runs is said, or why it cannot run."""
        from nvls_tui.console.screens.command_bar import CommandBar
        from nvls_tui.views.commands import completions

        if isinstance(self.focused, Input):
            raise SkipAction  # a priority binding (binding_table.py): in the filter box, `:` is text
        hosts = list(self.services.live.fleet.hosts)
        bar = CommandBar(completions(hosts, self.sortable_columns()))
        self.app.push_screen(bar, self.run_command)
        # `:node gpu06⏎` in one burst: the keys behind `:` wait for the line instead of reaching the fleet
        # (n: next broken, p: poll ...)
        self.services.actions.hold_keys_for(bar.line_ready, "the command line")

    def run_command(self, text: str | None) -> None:
        """Run a command typed on the command line (None: it was left with Esc)."""
        from nvls_tui.views.commands import parse_command

        if not text or not text.strip():
            return
        command = parse_command(text, list(self.services.live.fleet.hosts), self.sortable_columns())
        if isinstance(command, str):
            self.notify(command, severity="warning")
        elif command.name == "node":
            self.app.open_node(command.arg)  # type: ignore[attr-defined]
        elif command.name == "logs":
            from nvls_tui.console.screens.logs import LogsScreen

            self.app.push_screen(LogsScreen(command.arg, self.services))
        elif command.name == "sort":
            self.grid_order = SortOrder(command.arg)
            self.refresh_grid()
        elif command.name == "filter":
            box = self.query_one("#filter", Input)
            box.value = command.arg
            box.display = bool(command.arg)
            self.filter_text = command.arg
            self.refresh_grid()
        elif command.name == "help":
            self.app.action_help()  # type: ignore[attr-defined]
        elif command.name == "quit":
            self.app.run_worker(self.app.action_quit(), exclusive=True)

    def action_toggle_sort(self) -> None:
        """Switch between verdict order (broken first) and fleet order (from any other order: verdict)."""
        self.grid_order = SortOrder("") if self.sort_by_verdict else SortOrder()
        self.refresh_grid()

    def action_sort_by(self) -> None:
        """Pick the column to sort by; the current one again reverses it (k9s)."""
        from nvls_tui.console.screens.pickers import SortPicker

        current = self.grid_order
        marker = current.words().rsplit(" ", 1)[-1] if current.column not in ("", "verdict") else (
            "(reversed)" if current.reverse else "(current)")

        def picked(column: str | None) -> None:
            if column is not None:
                self.grid_order = self.grid_order.picked(column)
                self.refresh_grid()

        self.app.push_screen(SortPicker(self.sortable_columns(), current.column, marker), picked)

    def action_choose_columns(self) -> None:
        """Show or hide the grid's optional columns (for the rest of the session)."""
        from nvls_tui.console.screens.pickers import ColumnPicker
        from nvls_tui.console.widgets.grid_layout import OPTIONAL

        grid = self.query_one(FleetGrid)

        def apply(hidden: frozenset[str]) -> None:
            if grid.relayout(hidden=hidden):
                self.refresh_grid()

        self.app.push_screen(ColumnPicker([(key, label) for key, label, _ in OPTIONAL], grid.hidden_columns, apply))

    def action_poll_all(self) -> None:
        """Poll every node now."""
        self.services.actions.poll_now()
        self.notify(f"Polling {len(self.services.live.fleet)} nodes now.", timeout=2)

    # ---- repair (console part 2) ----------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only mode hides what changes nodes; ``r`` stays: it shows the dry-run plan there. ``a`` is there
        only in the autopilot's ask mode (read-only keeps it, to refuse it in one line)."""
        if action in ("approve", "proposals"):
            return self.services.ask is not None
        if action in destructive_actions("fleet") and self.services.settings.read_only and action != "repair":
            return False
        return True

    # ---- k9s/lazygit motions ------------------------------------------------------------------------
    def action_cursor_down(self) -> None:
        """j: the next node."""
        self.query_one(FleetGrid).action_cursor_down()

    def action_cursor_up(self) -> None:
        """k: the previous node."""
        self.query_one(FleetGrid).action_cursor_up()

    def action_cursor_top(self) -> None:
        """g / Home: the first node."""
        self.query_one(FleetGrid).move_cursor(row=0)

    def action_cursor_bottom(self) -> None:
        """G / End: the last node."""
        grid = self.query_one(FleetGrid)
        grid.move_cursor(row=max(0, grid.row_count - 1))

    def action_next_broken(self) -> None:
        """n: the next broken or unreachable node below the cursor, wrapping around."""
        self._jump_broken(+1)

    def action_prev_broken(self) -> None:
        """N: the previous broken or unreachable node, wrapping around."""
        self._jump_broken(-1)

    def _jump_broken(self, step: int) -> None:
        grid = self.query_one(FleetGrid)
        hosts = grid.visible_hosts
        bad = {Verdict.BROKEN, Verdict.UNREACHABLE}
        for offset in range(1, len(hosts) + 1):
            row = (grid.cursor_row + step * offset) % len(hosts)
            if self.services.live.verdict(hosts[row]) in bad:
                grid.move_cursor(row=row)
                return
        self.notify("No broken or unreachable node is shown.", timeout=3)

    def action_toggle_node(self) -> None:
        """Select or unselect the node under the cursor for a repair."""
        grid = self.query_one(FleetGrid)
        host = grid.current_host
        if host is None:
            return
        if host in self.selected:
            self.selected.remove(host)
        else:
            self.selected.append(host)
        self.refresh_grid()
        if grid.cursor_row < grid.row_count - 1:
            grid.move_cursor(row=grid.cursor_row + 1)  # space, space, space walks down the fleet

    def action_repair(self) -> None:
        """Plan the repair of the selected nodes (or the one under the cursor), then run it."""
        if isinstance(self.focused, Input):
            raise SkipAction  # a priority binding (bindings.py): in the filter box, `r` is text
        hosts = list(self.selected) or [h for h in [self.query_one(FleetGrid).current_host] if h]
        if not hosts:
            self.notify("Select nodes first (space).", severity="warning")
            return
        if self.services.settings.read_only:
            from nvls_tui.console.screens.plan import PlanScreen

            screen = PlanScreen(hosts, self.services, dry_run_only=True)
            self.app.push_screen(screen)  # the plan, and nothing to start
            self.services.actions.hold_for_plan(screen)  # keys typed with `r` must not reach the fleet
            return
        self.services.actions.plan_repair(hosts, reply_to=self)

    def action_approve(self) -> None:
        """Ask mode: open the plan of the repair the autopilot proposes for the node under the cursor; typing
        its name approves it (recorded, counted in the autopilot's state) and the repair runs as ``r``'s."""
        from nvls_tui.console.messages import ActionFailed
        from nvls_tui.console.screens.ask_plan import AskPlanScreen

        ask = self.services.ask
        host = self.query_one(FleetGrid).current_host
        if ask is None or host is None:
            return
        if self.services.settings.read_only:
            self.tell(ActionFailed(f"approve the repair of {host}", "Read-only mode: the autopilot's proposals are "
                                   "shown, none can be approved.", [host], refused=True))
            return
        proposal = ask.proposals.get(host)
        if proposal is None or not proposal.proposed:
            held = f" (held: {proposal.limit}, {proposal.message})" if proposal is not None else ""
            others = f"; proposed: {' '.join(ask.proposed)}" if ask.proposed else ""
            self.notify(f"The autopilot proposes no repair of {host}{held}{others}.", severity="warning", timeout=8)
            return
        # No reply_to: the approval goes to the app alone, so the nodes picked with space for r stay picked.
        screen = AskPlanScreen(host, self.services)
        self.app.push_screen(screen)
        self.services.actions.hold_for_plan(screen)  # the names typed with `a` belong to the plan

    def action_proposals(self) -> None:
        """Ask mode: the list of the autopilot's proposals; the node picked gets the cursor."""
        from nvls_tui.console.screens.pickers import ProposalsPicker

        ask = self.services.ask
        if ask is None:
            return

        def go(host: str | None) -> None:
            grid = self.query_one(FleetGrid)
            if host is not None and host in grid.visible_hosts:
                grid.move_cursor(row=grid.visible_hosts.index(host))
            elif host is not None:
                self.notify(f"{host} is not shown (the filter): Esc clears it.", severity="warning", timeout=5)

        key = current_key("fleet.approve", self.app.keymap)  # type: ignore[attr-defined]
        self.app.push_screen(ProposalsPicker(proposals_title(ask, key), proposals_rows(ask)), go)

    @on(PlanApproved)
    def _plan_approved(self) -> None:
        # The repair takes the selection: the next one starts empty (the message goes on to the app).
        self.selected = []
        self.refresh_grid()

    def action_yank(self) -> None:
        """Copy the host under the cursor (OSC 52) and say so."""
        from nvls_tui.console.screens.yanking import yank_host

        yank_host(self, self.query_one(FleetGrid).current_host)

    def action_ssh(self) -> None:
        """``S``: suspend the console and ssh to the node under the cursor (read-only mode keeps it)."""
        from nvls_tui.console.screens.shell import open_shell

        open_shell(self, self.services, self.query_one(FleetGrid).current_host)

    def palette_commands(self) -> Iterator[Command]:
        """The fleet's bound actions that apply now (the palette asks; nodes are the app's), and the export."""
        yield from scope_commands(self, "fleet")
        yield (EXPORT_TITLE, self.export_view, "Write the rows the grid shows (filter and order as shown) "
               "to a CSV and a JSON file in the state directory's exports (private).")

    def export_view(self) -> tuple[Path, Path] | None:
        """Write what the grid shows as CSV and JSON (nvls_tui.console.export); a toast names both files."""
        from nvls_tui.console.export import export_dir, grid_view, write_export

        grid = self.query_one(FleetGrid)
        live, now = self.services.live, self.services.clock()
        states = {h: s for h in grid.visible_hosts if (s := live.fleet.get(h)) is not None}
        # Each cell whole (the story's long form, nothing cut to a narrow terminal's width); rows, order and
        # columns as shown.
        view = grid_view(grid, simulated=self.services.settings.simulated,
                         whole=lambda host: grid.row_cells(states[host], live.diagnoses.get(host), now, whole=True)
                         if host in states else None)
        try:
            paths = write_export(view, export_dir(), self.services.clock())
        except OSError as exc:  # UnsafeLocation too: one sentence, nothing written
            self.notify(f"Export not written: {exc}", severity="error", timeout=10)
            return None
        self.notify(f"Exported {len(view.rows)} nodes as shown: {paths[0]} and {paths[1].name}", timeout=10)
        return paths


def mark_selected(grid: FleetGrid, selected: list[str], live: LiveFleet, clock: Callable[[], float]) -> None:
    """Show the nodes picked for a repair in the host column (reversed blue), others as the grid drew them.

    Only the host cell changes, written as the grid's polls write (``bulk_rows.write_cells``: the rows that
    changed paint again, not the whole grid, as DataTable's ``update_cell`` would at every pick): the grid's
    diff keeps its own idea of the cell, so a later poll that changes nothing leaves the mark in place.
    """
    from rich.text import Text

    selected_style = palette.STYLE["selected"]
    if not selected and not grid.marked:
        return  # nothing picked and nothing marked: no need to read 1,024 host cells
    grid.marked = set(selected)
    writes: list[tuple[str, str, Text]] = []
    for host in grid.visible_hosts:
        cell = grid.get_cell(host, "host")
        want_mark = host in selected
        has_mark = isinstance(cell, Text) and cell.style == selected_style
        if want_mark and not has_mark:
            writes.append((host, "host", Text(f"● {host}", style=selected_style)))
        elif has_mark and not want_mark:
            state = live.fleet.get(host)
            if state is not None:
                writes.append((host, "host", grid.row_cells(state, live.diagnoses.get(host), clock())["host"]))
    write_cells(grid, writes)


def mark_proposed(grid: FleetGrid, proposed: list[str], selected: list[str], marked: set[str], live: LiveFleet,
                  clock: Callable[[], float]) -> set[str]:
    """Mark the nodes whose repair the autopilot proposes (ask mode) in the host column, ``⚑ host``; a node also
    picked for a repair keeps the pick's mark. Returns the hosts marked now (``marked``: those marked before)."""
    from rich.text import Text

    if not proposed and not marked:
        return marked
    want = {h for h in proposed if h not in selected} & set(grid.visible_hosts)
    style = palette.bold("note")
    writes: list[tuple[str, str, Text]] = []  # written as mark_selected writes: only these rows paint again
    for host in want:  # the cell itself is read: a row the grid wrote afresh (forget_row) lost its mark
        cell = grid.get_cell(host, "host")
        if not (isinstance(cell, Text) and cell.style == style and cell.plain.startswith("⚑")):
            writes.append((host, "host", Text(f"⚑ {host}", style=style)))
    for host in marked - want:
        state = live.fleet.get(host)
        if host not in selected and state is not None and host in grid.visible_hosts:
            writes.append((host, "host", grid.row_cells(state, live.diagnoses.get(host), clock())["host"]))
    write_cells(grid, writes)
    return want


def ask_alarms(ask: AskMode) -> list[str]:
    """What stops every new proposal now: a tripped breaker, a pause (the top line and the banner name them)."""
    return [word for word, holds in (("BREAKER TRIPPED", ask.tripped), ("PAUSED", ask.pilot.paused())) if holds]


def ask_words(ask: AskMode, key: str) -> str:
    """The top line's words on the autopilot (ask mode): a tripped breaker or a pause first (a line cut at the
    terminal's edge must keep them), then what it proposes."""
    parts = ask_alarms(ask)
    parts.append(f"⚑ {' '.join(ask.proposed)} proposed ({key} approves)" if ask.proposed else "nothing proposed")
    return " · autopilot ask: " + " · ".join(parts)


def ask_text(ask: AskMode, host: str, key: str) -> Text:
    """The preview's lines on what the autopilot makes of ``host``: proposed (why it is safe, the limits as they
    stand), held by a limit (which), or left to a person; always that nothing runs without approval."""
    from rich.text import Text

    from nvls_tui.console.ask import NOTHING_RUNS

    text = Text()
    proposal = ask.proposals.get(host)
    if host in ask.approved:
        text.append("autopilot: the repair you approved runs\n", style=palette.bold("accent"))
    elif proposal is not None and proposal.proposed:
        text.append("⚑ autopilot proposes a repair", style=palette.bold("note"))
        text.append(f" — {NOTHING_RUNS}: {key} opens the plan, the typed name runs it\n", style="bold")
    elif proposal is not None:
        text.append(f"autopilot holds its repair: {proposal.limit}", style=palette.bold("warn"))
        text.append(f" ({proposal.message}); {NOTHING_RUNS}\n", style=palette.STYLE["muted"])
    elif host in ask.unsafe:
        text.append("autopilot: not proposed, for a person", style=palette.bold("warn"))
        text.append(f" ({', '.join(ask.unsafe[host])}: not safe to repair unattended)\n",
                    style=palette.STYLE["muted"])
        return text
    else:
        return text
    text.append("  why safe: ", style="bold")
    text.append(f"{', '.join(proposal.findings if proposal else ())} (the policy's safe codes and NVIDIA buckets, "
                f"{ask.policy.source})\n")
    if proposal is not None and proposal.proposed:  # first: on a short pane, which limit binds is what counts
        text.append("  approving it binds: ", style="bold")
        text.append(" · ".join(ask.binds_next(host)) + "\n", style=palette.STYLE["warn"])
    text.append("  limits: ", style="bold")
    text.append(" · ".join(ask.limits_words(host)) + "\n", style=palette.STYLE["muted"])
    return text


def proposals_title(ask: AskMode, key: str) -> Text:
    """The proposals list's first lines: what it is, the breaker, a pause, and that nothing runs unapproved."""
    from rich.text import Text

    from nvls_tui.console.ask import NOTHING_RUNS

    text = Text("Autopilot proposals", style="bold")
    text.append(f" — {NOTHING_RUNS}: Enter goes to the node, {key} there opens its plan\n", style="bold")
    breaker = ask.autopilot.state.breaker
    if breaker.tripped:
        text.append(f"BREAKER TRIPPED ({breaker.reason}): nothing new is proposed until an operator closes it "
                    "(docs/autopilot.md)\n", style=palette.bold("bad"))
    if ask.pilot.paused():
        text.append(f"PAUSED ({ask.pilot.pause_path}): nothing new is proposed\n", style=palette.bold("warn"))
    text.append(f"round {ask.pilot.number} · policy {ask.policy.source}", style=palette.STYLE["muted"])
    return text


def proposals_rows(ask: AskMode) -> list[tuple[str, Text]]:
    """One line per node the last round proposed, held by a limit, or left to a person; proposed first."""
    from rich.text import Text

    rows: list[tuple[str, Text]] = []
    order = sorted(ask.proposals.values(), key=lambda p: not p.proposed)
    for p in order:
        line = Text()
        if p.proposed:
            line.append(f"⚑ {p.host:<12} proposed      ", style=palette.bold("note"))
        else:
            line.append(f"  {p.host:<12} held: {p.limit:<8}", style=palette.STYLE["warn"])
        line.append(f"{', '.join(p.findings)}  ")
        line.append(" · ".join(ask.binds_next(p.host)) if p.proposed else p.message, style=palette.STYLE["muted"])
        rows.append((p.host, line))
    for host, why in ask.unsafe.items():
        line = Text(f"  {host:<12} for a person   ", style=palette.STYLE["bad"])
        line.append(f"{', '.join(why)}: not safe to repair unattended", style=palette.STYLE["muted"])
        rows.append((host, line))
    return rows

"""The plan screen: the dry run of each selected node, and the typed confirmation that starts the repair.

Each node is read once (the runbook's own dry run: ``backend.snapshot()`` only) and its plan shown as
the exact command lines, step by step, in the order a repair would run them, under what was
changed by hand on it in this console (the session's ledger). A node the preflight would refuse says
why and is left out. The operator picks the strategy (parallel, serial, canary) and whether the
restore puts back what was stopped by hand; each plan and the confirmation say how long the repair
takes (usually, and at most: every wait to its deadline, times the nodes for serial and canary); the
repair starts only once the names of the nodes it will touch are typed. The screen then posts
:class:`~nvls_tui.console.messages.PlanApproved` with an :class:`Approval` that holds each node's plan basis
(the repair refuses a node that changed since) to the screen that asked, from where it bubbles to the
app, and dismisses with the same approval.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Input, Select, Static

from nvls_tui.binding_table import current_key
from nvls_tui.console.messages import PlanApproved
from nvls_tui.console.screens.typed import OnConsole
from nvls_tui.console.widgets import palette
from nvls_tui.console.widgets.banner import ModeBanner
from nvls_tui.console.widgets.ordered_input import OrderedInput
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.console.widgets.step_list import duration_text, spinner
from nvls_tui.runbook.multi import STRATEGIES
from nvls_tui.runbook.outcome import NodeOutcome, StepOutcome
from nvls_tui.runbook.steps import RepairOptions
from nvls_tui.textsafe import one_line
from nvls_tui.views.deadlines import deadlines_line, duration_line, rechecks_first
from nvls_tui.views.plan_summary import evictions, evictions_sentence, recheck_sentence, what_it_does
from nvls_tui.views.runbook import Approval, repair_options

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from nvls_tui.console.services import ConsoleServices


def how_long(outcome: NodeOutcome, options: RepairOptions) -> list[Text]:
    """How long this node's repair takes, and each wait's deadline (so the operator knows when to worry)."""
    recheck = rechecks_first(outcome)
    head = Text("How long: ", style="bold")
    head.append(duration_line(options, "parallel", [recheck]))
    deadlines = deadlines_line(options, [outcome.host] if recheck else [])
    return [head, Text(f"  deadlines: {deadlines}", style=palette.STYLE["muted"])]


def _lines(step: StepOutcome) -> list[tuple[str, bool]]:
    """``(line, bookkeeping)`` for each line of a planned step: whether it is the repair's own lock, record or
    clock is its change's or read's field (``bookkeeping``), never read back from the line's words."""
    out = []
    for entry in step.entries:
        if isinstance(entry, str):
            out.append((entry, False))
        else:
            out += [(line, entry.bookkeeping) for line in entry.lines]
    return out


def plan_text(outcome: NodeOutcome, options: RepairOptions | None = None) -> Group:
    """One node's plan: what it does first and how long it takes (with ``options``, its deadlines),
    then each step with its exact command lines (bookkeeping folded)."""
    parts: list = []
    warn, muted = palette.STYLE["warn"], palette.STYLE["muted"]
    summary = what_it_does(outcome) if outcome.result != "refused" else []
    if summary:
        parts.append(Text("What this repair does:", style="bold"))
        # A grid, not "  • words" as one Text: a wrapped bullet goes on under its words, not at column 0.
        bullets = Table.grid()
        bullets.add_column(width=4, no_wrap=True)
        bullets.add_column(ratio=1, overflow="fold")
        for line in summary:
            bullets.add_row("  • ", Text(line))
        parts.append(bullets)
        if options is not None:
            parts += how_long(outcome, options)
        parts.append(Text(""))
    if outcome.manual:
        parts.append(Text("Changed by hand in this console:", style=palette.bold("warn")))
        for line in outcome.manual:
            parts.append(Text(f"  {line}", style=warn))
        parts.append(Text(""))
    if outcome.result == "refused":
        parts.append(Text("⊘ a repair would be refused", style=palette.bold("warn")))
        parts.append(Text(f"{outcome.message}\n", style=warn))
        if not any(step.commands for step in outcome.steps):
            # Preflight refuses it: no step is planned, so none is listed as if it would run.
            parts.append(Text("No step runs: the repair stops at preflight.", style=muted))
            return Group(*parts)
    n = 0
    for i, step in enumerate(outcome.steps, 1):
        parts.append(Text(f"{i}. {step.name}", style="bold"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(justify="right", width=4, style=muted)
        grid.add_column(ratio=1, overflow="fold")
        if not step.commands:
            grid.add_row("", Text("(nothing to do)", style=muted))
        folded = 0
        for command, bookkeeping in _lines(step):
            if command.startswith("#"):
                grid.add_row("", Text(command, style=muted))
                continue
            if bookkeeping:
                folded += 1
                continue
            n += 1
            cmd, _, why = command.partition("  # ")
            shown = Text(f"$ {cmd.rstrip()}", style=palette.STYLE["command"])
            if why:
                shown.append(f"  # {why}", style=muted)
            grid.add_row(str(n), shown)
        if folded:
            grid.add_row("", Text(f"(+ {folded} bookkeeping: the repair's lock, record and clock on the node; "
                                  "all in the audit log)", style=muted))
        parts.append(grid)
    return Group(*parts)


# Below this width the confirmation row (strategy, names, buttons) would cut the typed names.
NARROW_BELOW = 120
# Below this height the controls lose their tall borders.
SHORT_BELOW = 32

STRATEGY_WORDS = {"parallel": "parallel: every node at once", "serial": "serial: one node after another",
                  "canary": "canary: the first alone, stop at a failure"}


def _typed_names(value: str) -> list[str]:
    """The node names typed in the confirmation (spaces or commas between them)."""
    return value.replace(",", " ").split()


class PlanScreen(OnConsole, Screen[Approval]):
    """The dry run of ``hosts`` and the typed confirmation; posts :class:`PlanApproved` once approved.

    Args:
        hosts: the selected nodes, in the operator's order.
        services: the session, the backends and the settings (:class:`ConsoleServices`).
        dry_run_only: show the plan and offer nothing to start (read-only mode).
        reply_to: the screen that asked for the plan: :class:`PlanApproved` goes to it first (then
            bubbles to the app); None posts it to the app.
    """

    # The typed names keep the focus, so the plans scroll from the keyboard with these.
    BINDINGS = [Binding("pagedown", "scroll_plans(1)", "Scroll", tooltip="Scroll every plan down a page."),
                Binding("pageup", "scroll_plans(-1)", "Scroll up", show=False, tooltip="Scroll every plan up.")]

    def __init__(self, hosts: Sequence[str], services: ConsoleServices, *, dry_run_only: bool = False,
                 reply_to: MessagePump | None = None) -> None:
        super().__init__()
        self.services = services
        self.reply_to = reply_to
        self.hosts = list(hosts)
        # Read-only consoles show the plan a repair would run and offer nothing to start.
        self.dry_run_only = dry_run_only
        self.outcomes: dict[str, NodeOutcome] = {}
        self.options: RepairOptions | None = None  # the dry run's, whose deadlines the repair's share
        self.began = time.monotonic()

    def compose(self) -> ComposeResult:
        """Header, banner, one plan per node side by side, the confirmation row, the footer."""
        yield Static(id="plan-header")
        yield ModeBanner(simulated=self.services.settings.simulated, read_only=self.services.settings.read_only,
                         id="banner")
        with Horizontal(id="plan-columns"):
            for i in range(len(self.hosts)):
                with VerticalScroll(id=f"plan-{i}", classes="plan-column panel"):
                    yield Static(id=f"plan-body-{i}", classes="plan-body")
        with Vertical(id="plan-confirm"):
            yield Static(id="plan-note")
            yield Static(id="plan-duration")
            yield Checkbox("put back what was stopped by hand", value=True, id="plan-put-back")
            with Horizontal(id="plan-confirm-row"):
                yield Select([(STRATEGY_WORDS[s], s) for s in STRATEGIES], value="parallel", allow_blank=False,
                             id="plan-strategy")
                yield OrderedInput(placeholder="type the node names to confirm", id="plan-typed")
                yield Button("Cancel", id="plan-cancel")
                yield Button("Repair", id="plan-go", variant="error", disabled=True)
        yield SettledFooter(compact=True)

    def on_resize(self, event: events.Resize) -> None:
        """Fit the confirmation to the new size."""
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        # Narrow: the confirmation takes two rows (styles/runbook.tcss) so the typed names keep their
        # room; narrow or short: one-line controls, so the plans above keep rows to be read in.
        self.set_class(width < NARROW_BELOW, "-narrow")
        compact = width < NARROW_BELOW or height < SHORT_BELOW
        for widget in self.query("#plan-confirm-row > *"):
            if isinstance(widget, Select | Input | Button):
                widget.compact = compact

    def on_mount(self) -> None:
        """Read every node (the dry run) in a worker; show progress meanwhile."""
        self._fit(self.app.size.width, self.app.size.height)
        for i, host in enumerate(self.hosts):
            self.query_one(f"#plan-{i}").border_title = host
        self.query_one("#plan-confirm").display = False
        self.query_one("#plan-put-back").display = False
        self.query_one("#plan-strategy").display = len(self.hosts) > 1
        self._timer = self.set_interval(0.1, self.draw_progress)
        self.draw_progress()
        self.replan()

    def replan(self) -> None:
        """Start a dry run with the choices as they are now; one still running is cancelled.

        Exclusive: the newest request wins. Two quick toggles of "put back" used to run two dry runs
        side by side, and the stale one, finishing last, drew its plan under the opposite choice.
        """
        self.run_worker(self.plan(), group="plan", name="dry run", exclusive=True, exit_on_error=False)

    async def plan(self) -> None:
        """The runbook's dry run of every node at once (read-only), through the session's ledger."""
        backends = [self.services.backend_for(h) for h in self.hosts]
        options = self.options = repair_options(backends, self.services.settings.timeout, dry_run=True,
                                                      **self.services.settings.repair)
        ledger = self.services.session.ledger
        if any(ledger.changes(h) for h in self.hosts):
            self.query_one("#plan-put-back").display = True
        put_back = self.query_one("#plan-put-back", Checkbox).value
        self.outcomes.update(await self.services.session.plan(self.hosts, options, put_back_manual=put_back))
        self._timer.stop()
        self.draw_plans()

    @property
    def approval(self) -> Approval:
        """What typing the names approves: the repairable nodes, the strategy, each plan's basis."""
        names = self.repairable
        strategy = self.query_one("#plan-strategy", Select).value
        return Approval(tuple(names), str(strategy) if strategy in STRATEGIES else "parallel",
                        {h: self.outcomes[h].basis or {} for h in names},
                        put_back_manual=self.query_one("#plan-put-back", Checkbox).value)

    @property
    def repairable(self) -> list[str]:
        """The nodes whose plan was not refused, in order."""
        return [h for h in self.hosts if h in self.outcomes and self.outcomes[h].result == "planned"]

    def draw_progress(self) -> None:
        """While the dry run reads the nodes: a spinner and the elapsed time per node."""
        elapsed = time.monotonic() - self.began
        header = Text()
        header.append(" Repair plan ", style="bold reverse")
        header.append(f"  {' '.join(self.hosts)}  ", style="bold")
        header.append(f"{spinner(elapsed)} dry run: reading the nodes ({duration_text(elapsed)})",
                      style=palette.STYLE["accent"])
        self.query_one("#plan-header", Static).update(header)
        for i, host in enumerate(self.hosts):
            if host not in self.outcomes:
                self.query_one(f"#plan-body-{i}", Static).update(
                    Text(f"{spinner(elapsed)} reading {host} (read-only poll) {duration_text(elapsed)}",
                         style=palette.STYLE["accent"]))

    def draw_plans(self) -> None:
        """Every node's commands, then the confirmation for the repairable ones."""
        header = Text()
        header.append(" Repair plan ", style="bold reverse")
        header.append(f"  {' '.join(self.hosts)}  ", style="bold")
        header.append("dry run: nothing was changed. These are the exact commands a repair runs, in order.",
                      style=palette.STYLE["muted"])
        self.query_one("#plan-header", Static).update(header)
        for i, host in enumerate(self.hosts):
            outcome = self.outcomes[host]
            self.query_one(f"#plan-body-{i}", Static).update(plan_text(outcome, self.options))
            column = self.query_one(f"#plan-{i}")
            column.border_subtitle = outcome.result
            column.set_class(outcome.result == "refused", "-refused")
        box = self.query_one("#plan-confirm")
        box.display = True
        names = self.repairable
        note = Text()
        if self.dry_run_only:
            note.append("Read-only mode: this is the plan a repair would run; nothing can be started from here. "
                        "Esc goes back.", style=palette.bold("warn"))
            for widget in ("#plan-typed", "#plan-go", "#plan-strategy", "#plan-put-back"):
                self.query_one(widget).display = False
            self.query_one("#plan-cancel").focus()
        elif names:
            # A healthy-looking node is smoke-tested first and skipped when that passes: no reset promised.
            rechecked = [h for h in names if rechecks_first(self.outcomes[h])]
            resets = [h for h in names if h not in rechecked]
            if resets:
                note.append(f"This resets every GPU and NVSwitch of {' '.join(resets)}. ", style=palette.bold("bad"))
            if pods := evictions_sentence({h: evictions(self.outcomes[h]) for h in names}):
                # The cluster's side of the decision: whose workloads go, named before the names are typed.
                note.append(f"It {pods}. ", style=palette.bold("bad"))
            for host in rechecked:
                note.append(f"{recheck_sentence(host)}. ", style=palette.STYLE["note"])
            note.append(f"Type {' '.join(names)} to go on; Esc cancels.", style="bold")
            skipped = [h for h in self.hosts if h not in names]
            if skipped:
                note.append(f"  Left out (refused): {' '.join(skipped)}.", style=palette.STYLE["warn"])
            self.query_one("#plan-go", Button).label = f"Repair {len(names)} node{'s' if len(names) != 1 else ''}"
            self.query_one("#plan-typed", Input).placeholder = f"type {' '.join(names)} to confirm"
            self.query_one("#plan-typed").focus()
        else:
            note.append("No selected node can be repaired (see why above). Esc goes back.", style=palette.bold("warn"))
            self.query_one("#plan-typed").display = False
            self.query_one("#plan-cancel").focus()
        for host in self.hosts:
            state = self.services.live.fleet.get(host)
            if self.outcomes[host].result == "refused" and state is not None and state.repair_record:
                # The refusal names the shell's command; in the console the move is a key of the node screen.
                key = current_key("node.restore", getattr(self.app, "keymap", {}))
                note.append(f"\nTo put {host} back from this console: Esc, Enter on {host}, then {key} (Restore), "
                            "the console's own `repair --restore`.", style=palette.STYLE["note"])
        self.query_one("#plan-note", Static).update(note)
        self.draw_duration()

    def draw_duration(self) -> None:
        """How long the repair of the repairable nodes takes with the strategy picked (what typing commits to)."""
        names = self.repairable
        text = Text()
        if names and self.options is not None and not self.dry_run_only:
            rechecks = [rechecks_first(self.outcomes[h]) for h in names]
            text.append(f"It takes {duration_line(self.options, self.approval.strategy, rechecks)}.")
        self.query_one("#plan-duration", Static).update(text)

    def typed_ok(self, value: str) -> bool:
        """True when ``value`` names exactly the repairable nodes (any order)."""
        names = self.repairable
        if self.dry_run_only:
            return False
        return bool(names) and sorted(_typed_names(value)) == sorted(names)

    @on(Checkbox.Changed, "#plan-put-back")
    def _put_back(self) -> None:
        # The restore's commands differ: plan again so that what is shown is what will run (a dry run
        # still reading the nodes, the first one too, read the old choice: it is cancelled).
        self.replan()

    @on(Select.Changed, "#plan-strategy")
    def _strategy(self) -> None:
        # Serial and canary add the nodes' times up: say what the new choice commits to.
        if len(self.outcomes) == len(self.hosts):
            self.draw_duration()

    @on(Input.Changed, "#plan-typed")
    def _typed(self, event: Input.Changed) -> None:
        self.query_one("#plan-go", Button).disabled = not self.typed_ok(event.value)

    @on(Input.Submitted, "#plan-typed")
    def _submitted(self, event: Input.Submitted) -> None:
        if self.typed_ok(event.value):
            self.approve()
        elif self.repairable and not self.dry_run_only and len(self.outcomes) == len(self.hosts):
            # Enter with other words typed: say what to type rather than nothing (the names are the approval).
            typed = one_line(" ".join(_typed_names(event.value)), 60) or "nothing"
            self.notify(f"{typed} is not what this plan repairs: type {' '.join(self.repairable)} to go on "
                        "(Esc cancels).", severity="warning", timeout=8)

    @on(Button.Pressed, "#plan-go")
    def _go(self) -> None:
        if self.typed_ok(self.query_one("#plan-typed", Input).value):
            self.approve()

    def approve(self) -> None:
        """The names were typed: tell the screen that asked (:class:`PlanApproved`), then leave."""
        approval = self.approval
        message = PlanApproved(approval)
        reply_to = self.reply_to
        if reply_to is None or not (reply_to.is_attached and reply_to.post_message(message)):
            self.app.post_message(message)
        self.dismiss(approval)

    @on(Button.Pressed, "#plan-cancel")
    def _cancel(self) -> None:
        self.app.pop_screen()

    def action_scroll_plans(self, pages: int) -> None:
        """Scroll every node's plan together, a page at a time."""
        for column in self.query(".plan-column"):
            if pages > 0:
                column.scroll_page_down(animate=False)
            else:
                column.scroll_page_up(animate=False)

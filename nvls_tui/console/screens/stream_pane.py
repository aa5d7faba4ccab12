"""Single actions from the node screen (reset, Fabric Manager restart, smoke test), streamed into a side pane.

The action itself is :mod:`nvls_tui.runbook.single`, run through the app's session (audited, the
node's polls paused); the pane only shows its events. It is a column of the runbook screen (steps,
plot, output) sliding over the right of the node screen.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from nvls_tui.console.bindings import bindings_for
from nvls_tui.console.messages import ActionFailed, ActionFinished
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.runbook_column import RunbookColumn
from nvls_tui.console.screens.searching import SEARCH_ACTIONS, Searching
from nvls_tui.console.screens.typed import OnConsole
from nvls_tui.console.widgets import palette
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.console.widgets.step_list import duration_text
from nvls_tui.runbook.events import RunbookEvent
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.single import ACTIONS, SingleAction
from nvls_tui.runbook.steps import DEFAULT_THRESHOLDS, RepairOptions, threshold_for
from nvls_tui.views.runbook import repair_options
from nvls_tui.words import count, verb

if TYPE_CHECKING:
    from nvls_tui.console.screens.node import NodeScreen
    from nvls_tui.console.services import ConsoleServices


class StreamPane(Searching, OnConsole, ModalScreen[None]):
    """The side pane of one single action on one node; the action starts when the pane opens.

    Searched as the repair screen is (``/``, ``n``/``N``, Esc ends the search before it closes the pane).

    Args:
        host: the node.
        action: what to run.
        services: the session, the fleet and the settings (:class:`ConsoleServices`).
        options: tunables (default: :func:`repair_options` for the node's backend).
    """

    # The search keys first: while a search is on, Esc ends it rather than closing the pane.
    BINDINGS = [*bindings_for("search"),
                Binding("escape", "close", "Close", tooltip="Close the pane (a running action carries on).")]

    def __init__(self, host: str, action: SingleAction, services: ConsoleServices, *,
                 options: RepairOptions | None = None) -> None:
        super().__init__()
        self.services = services
        self.host = host
        self.action_spec = action
        self.options = options
        self.outcome: NodeOutcome | None = None

    def compose(self) -> ComposeResult:
        """A header line and the column (steps, plot for a smoke test, output)."""
        with Vertical(id="stream-box"):
            yield Static(id="stream-header")
            state = self.services.live.fleet.get(self.host)
            threshold = threshold_for(state.gpus if state else (), DEFAULT_THRESHOLDS, None)
            yield RunbookColumn(self.host, threshold=threshold, step_names=self.action_spec.steps, id="stream-column")
            yield SettledFooter(compact=True)

    def on_mount(self) -> None:
        """Start the action in a worker and tick the spinner."""
        self.options = self.options or repair_options([self.services.backend_for(self.host)],
                                                      self.services.settings.timeout, **self.services.settings.repair)
        self.set_interval(0.2, self.tick)
        self.draw_header()
        self.services.actions.start_action(f"{self.action_spec.title} on {self.host}", self.run_single_action(),
                                           hosts=[self.host])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The search keys answer as :class:`Searching` says; the rest always."""
        if action in SEARCH_ACTIONS:
            return self.search_allows(action)
        return True

    @property
    def column(self) -> RunbookColumn:
        """The pane's column."""
        return self.query_one(RunbookColumn)

    def tick(self) -> None:
        """Spinner and elapsed times."""
        if self.is_attached:
            self.column.tick(self.now())
            self.draw_header()

    def draw_header(self) -> None:
        """`` Reset every GPU and NVSwitch · gpu05 · running 3.2 s``."""
        run = self.column.run
        text = Text()
        text.append(f" {self.action_spec.title} ", style="bold reverse")
        text.append(f"  {self.host}  ", style="bold")
        if run.result is None:
            text.append(f"running {duration_text(run.elapsed(self.now()))}", style=palette.bold("accent"))
        else:
            text.append(run.result, style=palette.bold("ok" if run.result == "ok" else "bad"))
        self.query_one("#stream-header", Static).update(text)

    def apply(self, event: RunbookEvent) -> None:
        """One event into the column (ignored once the pane was closed)."""
        if self.is_attached:
            self.column.apply(event, self.now())

    def now(self) -> float:
        """The action's clock (the simulated one for a simulated fleet)."""
        return self.options.clock() if self.options is not None else time.monotonic()

    async def run_single_action(self) -> None:
        """Run the action through the session (audited, polls paused); then tell how it ended (the app
        says it and polls the node again)."""
        done = await self.services.session.single(self.host, self.action_spec.kind, options=self.options,
                                                  on_event=self.apply)
        self.tell(ActionFinished(done))

    @on(ActionFinished)
    def _finished(self, message: ActionFinished) -> None:
        self.outcome = message.outcome.outcome
        if self.outcome is None:  # refused before it began: nothing to show here
            self.dismiss()

    def action_close(self) -> None:
        """Close the pane; a running action carries on (its end is notified)."""
        self.dismiss()


def reset_refusal(state) -> str | None:
    """Why a reset cannot work now, from the last poll (holders left, or holders unknown), or None."""
    if state is None:
        return "Reset refused: gpu state unknown; poll the node first (p)."
    if any(m.section == "holders" for m in state.missing):
        return ("Reset refused: the processes holding /dev/nvidia* could not be read, so nothing shows the GPUs "
                "are free; fix that first (see the findings).")
    if state.holders:
        named = ", ".join(f"{h.kind} {h.pid}" for h in state.holders[:6]) + (" ..." if len(state.holders) > 6 else "")
        return (f"Reset refused: {count(len(state.holders), 'process')} still {verb(len(state.holders), 'holds')} "
                f"/dev/nvidia* ({named}). Stop them first (select, t; or s on their unit), or run the whole "
                "repair (r on the fleet).")
    return None


def open_single_action(screen: NodeScreen, kind: str) -> None:
    """What the node screen's keys call: confirm (typing the node name for reset and FM restart), then run.

    A refusal up front (read-only, holders left before a reset) is told as :class:`ActionFailed`.
    """
    from nvls_tui.console.screens.node import READ_ONLY_REFUSAL

    services, host, app = screen.services, screen.host, screen.app
    action = ACTIONS[kind]
    description = f"{action.title} on {host}"
    if services.settings.read_only:
        screen.tell(ActionFailed(description, READ_ONLY_REFUSAL, [host], refused=True))
        return
    if kind == "reset":
        refusal = reset_refusal(services.live.fleet.get(host))
        if refusal:  # said before any dialog: nvidia-smi -r would only refuse it on the node
            screen.tell(ActionFailed(description, refusal, [host], refused=True))
            return

    def done(ok: bool | None) -> None:
        if ok:
            app.push_screen(StreamPane(host, action, services))

    app.push_screen(ConfirmScreen(
        f"{action.title} on {host}?", list(action.commands),
        confirm_label=action.title.split(" ")[0] if kind != "fm-restart" else "Restart FM",
        type_to_confirm=host if action.typed else None, note=action.note), done)


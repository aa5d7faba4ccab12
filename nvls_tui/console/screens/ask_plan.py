"""The plan of a repair the autopilot proposes (``--autopilot ask``): the ``r`` plan screen, with the approval
recorded as the autopilot's.

The same dry run, the same typed names and the same repair as ``r`` (the plan the operator approves is the
run). What differs is the bookkeeping around it: typing the names is the operator's approval of the
autopilot's proposal, recorded in its audit log (by whom) and counted against the node's budget and the
breaker before the repair starts; closing the plan without typing them is a decline, recorded too. A
proposal that no longer stands when the names are typed (the breaker tripped, a pause, another round held
it) starts nothing, and says so in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from nvls_tui.console.ask import NOTHING_RUNS
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.widgets import palette

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from nvls_tui.console.services import ConsoleServices


class AskPlanScreen(PlanScreen):
    """The plan of ``host``'s proposed repair; typing its name approves the proposal (recorded, counted)."""

    def __init__(self, host: str, services: ConsoleServices, *, reply_to: MessagePump | None = None) -> None:
        super().__init__([host], services, reply_to=reply_to)
        self.host = host
        self.decided = False  # approved, or refused at the approval: not a decline

    def draw_plans(self) -> None:
        """The plan as ``r`` shows it, its header naming the proposal and what it is for."""
        super().draw_plans()
        ask = self.services.ask
        proposal = ask.proposals.get(self.host) if ask is not None else None
        header = Text()
        header.append(" Autopilot proposal ", style="bold reverse")
        header.append(f"  {self.host}  ", style="bold")
        if proposal is not None:
            header.append(f"for {', '.join(proposal.findings)}  ", style=palette.STYLE["note"])
        header.append(f"dry run: nothing was changed; {NOTHING_RUNS} (type the name).", style=palette.STYLE["muted"])
        self.query_one("#plan-header", Static).update(header)

    def approve(self) -> None:
        """The name was typed: the autopilot records the approval and counts it, then the repair runs as ``r``'s."""
        ask = self.services.ask
        try:
            refusal = ask.approve(self.host) if ask is not None else "The autopilot's ask mode is off."
        except (OSError, ValueError) as exc:  # the audit log or the state file: nothing starts unrecorded
            refusal = f"The approval could not be recorded ({exc}): {self.host} was not started."
        self.decided = True
        if refusal is not None:
            self.notify(refusal, severity="warning", timeout=12)
            self.app.pop_screen()
            return
        super().approve()

    def on_unmount(self) -> None:
        """Closed without the names typed: the operator declined the proposal (recorded)."""
        ask = self.services.ask
        if not self.decided and ask is not None:
            try:
                ask.declined(self.host)
            except OSError as exc:
                self.app.notify(f"The decline could not be recorded: {exc}", severity="error", timeout=12)
            else:
                if not ask.closed:  # the console going is no decline, and says nothing
                    self.app.notify(f"Declined: {self.host}'s repair did not run (recorded in the autopilot's audit "
                                    "log); while the node stays repairable, the next round proposes it again.", markup=False)


__all__ = ["AskPlanScreen"]

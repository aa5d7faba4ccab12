"""The fleet screen's command line (``:``): one line with completion; Enter runs it, Esc leaves it."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from nvls_tui.views.commands import KNOWN


class CommandBar(ModalScreen[str | None]):
    """``:`` and a command (``views.commands``); the completion shown is taken with Tab or →.

    Args:
        offered: the whole commands it completes to (``views.commands.completions``).
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Leave the command line, running nothing."),
                Binding("tab", "complete", "Complete", tooltip="Take the completion shown.")]

    def __init__(self, offered: Sequence[str]) -> None:
        super().__init__()
        self.offered = list(offered)

    def compose(self) -> ComposeResult:
        """The known commands, then the line."""
        with Vertical(id="command-box"):
            yield Static(f"{KNOWN} · Tab completes · Enter runs · Esc leaves", id="command-help")
            yield Input(placeholder=":", id="command-line",
                        suggester=SuggestFromList(self.offered, case_sensitive=False))

    def on_mount(self) -> None:
        """The line has the focus."""
        self.query_one(Input).focus()

    @property
    def value(self) -> str:
        """What is typed so far."""
        return self.query_one(Input).value

    def action_complete(self) -> None:
        """Tab: take the completion shown (as → at the line's end does)."""
        line = self.query_one(Input)
        line.cursor_position = len(line.value)
        line.action_cursor_right()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: run it (the fleet screen reads it)."""
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        """Esc: nothing runs."""
        self.dismiss(None)


__all__ = ["CommandBar"]

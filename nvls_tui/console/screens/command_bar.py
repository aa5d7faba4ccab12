"""The fleet screen's command line (``:``): one line with completion; Enter runs it, Esc leaves it."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from nvls_tui.console.widgets.ordered_input import OrderedInput
from nvls_tui.views.commands import KNOWN


class CommandLine(OrderedInput):
    """The line: its editing keys, Tab and Enter apply in the order typed (a burst such as ``node gpu05``,
    Backspace, ``6``, Enter ran ``node gpu05`` with a plain Input: docs/textual-key-order.md)."""

    KEY_ACTIONS = {**OrderedInput.KEY_ACTIONS, "tab": "complete"}

    def action_complete(self) -> None:
        """Tab: take the completion shown (as → at the line's end does)."""
        self.cursor_position = len(self.value)
        self.action_cursor_right()


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
        self.closed = False

    def line_ready(self) -> bool | None:
        """For the keys typed with ``:`` (widgets/key_hold.py): True once the line has the focus, False once the
        command line is gone without it, None until then."""
        if self.closed:
            return False
        if self.is_mounted and self.app.screen is self and isinstance(self.app.focused, CommandLine):
            return True
        return None

    def compose(self) -> ComposeResult:
        """The known commands, then the line."""
        with Vertical(id="command-box"):
            yield Static(f"{KNOWN} · Tab completes · Enter runs · Esc leaves", id="command-help")
            yield CommandLine(placeholder=":", id="command-line",
                              suggester=SuggestFromList(self.offered, case_sensitive=False))

    def on_mount(self) -> None:
        """The line has the focus."""
        self.query_one(Input).focus()

    @property
    def value(self) -> str:
        """What is typed so far."""
        return self.query_one(Input).value

    def action_complete(self) -> None:
        """Tab (where the line does not have the focus): take the completion shown."""
        self.query_one(CommandLine).action_complete()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: run it (the fleet screen reads it)."""
        event.stop()
        self.closed = True
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        """Esc: nothing runs."""
        self.closed = True
        self.dismiss(None)


__all__ = ["CommandBar", "CommandLine"]

"""Confirmation modals. The default is always Cancel: Enter or Esc on arrival changes nothing.

``ConfirmScreen`` asks yes/no for an action that changes a node and lists exactly what it will do
(``pid(user) command`` per process). With ``type_to_confirm`` set (reset, FM restart, repairs) the
confirm button stays disabled until the operator types that text (the node names).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from nvls_tui.console.widgets.ordered_input import OrderedInput


class ConfirmScreen(ModalScreen[bool]):
    """Ask before a destructive action; dismisses with True only on the confirm button.

    Args:
        title: the question (``Send SIGTERM to 3 processes on gpu05?``).
        lines: what exactly will happen, one line each.
        confirm_label: the confirm button's words (``SIGTERM 3``).
        type_to_confirm: text the operator must type before the confirm button works.
        note: a last sentence under the list (what happens after, what is re-checked).
        cancel_label: the cancel button's words (``Stay``).
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close without doing anything.")]

    def __init__(
        self,
        title: str,
        lines: Sequence[str],
        *,
        confirm_label: str = "Confirm",
        type_to_confirm: str | None = None,
        note: str = "",
        cancel_label: str = "Cancel",
    ) -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)
        self.confirm_label = confirm_label
        self.type_to_confirm = type_to_confirm
        self.note = note
        self.cancel_label = cancel_label

    def compose(self) -> ComposeResult:
        """The question, the list, the optional typed check, Cancel first."""
        with Vertical(id="confirm-box"):
            yield Label(Text(self.title_text), id="confirm-title")  # node text: plain, never markup
            with VerticalScroll(id="confirm-list"):
                body = Text()
                for i, line in enumerate(self.lines):
                    body.append(("\n" if i else "") + "• " + line)
                yield Static(body, id="confirm-lines")
            if self.note:
                yield Static(Text(self.note), id="confirm-note")
            if self.type_to_confirm:
                yield OrderedInput(placeholder=f"type {self.type_to_confirm} to confirm", id="confirm-typed")
            with Horizontal(id="confirm-buttons"):
                yield Button(self.cancel_label, id="cancel", variant="default")
                yield Button(self.confirm_label, id="confirm", variant="error",
                             disabled=bool(self.type_to_confirm))

    def on_mount(self) -> None:
        """Focus Cancel (or the typed check): a stray Enter must not confirm."""
        target = "#confirm-typed" if self.type_to_confirm else "#cancel"
        self.query_one(target).focus()

    @on(Input.Changed, "#confirm-typed")
    def _typed(self, event: Input.Changed) -> None:
        self.query_one("#confirm", Button).disabled = event.value.strip() != self.type_to_confirm

    @on(Input.Submitted, "#confirm-typed")
    def _submitted(self, event: Input.Submitted) -> None:
        """Enter in the typed check confirms once the text matches (as the repair plan's does)."""
        if event.value.strip() == self.type_to_confirm:
            self.dismiss(True)
        else:
            self.notify(f"Type {self.type_to_confirm} exactly to confirm; Esc cancels.", severity="warning",
                        timeout=4)

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(False)

    def action_cancel(self) -> None:
        """Esc: dismiss without doing anything."""
        self.dismiss(False)

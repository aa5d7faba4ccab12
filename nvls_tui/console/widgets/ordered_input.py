"""An ``Input`` that applies a burst of keys in the order they were typed.

Textual 8.2 hands each key to the focused Input first and runs the Input's *bindings* (Backspace,
Delete, Home, End, the arrows, Enter ...) only when the key comes back unhandled to the App, after the
keys queued behind it. Keys that arrive together (a paste, typing over a laggy SSH link) therefore
lose their order: ``gpu12`` + 5 Backspaces + ``broken`` leaves "gpu12b", a typo fixed inside a typed
confirmation stays. docs/textual-key-order.md has the upstream-ready reproduction.

:class:`OrderedInput` runs its own bindings from its key handler, as each key arrives, and stops the
key there, so it never reaches the App's late binding pass.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import Input


def _own_bindings() -> dict[str, str]:
    """``{key: action}`` of Input's own bindings (the keys that edit, move or submit)."""
    table: dict[str, str] = {}
    for binding in Input.BINDINGS:
        if isinstance(binding, Binding):
            for key in binding.key.split(","):
                table.setdefault(key.strip(), binding.action)
    return table


class OrderedInput(Input):
    """Input whose editing keys take effect in the order typed (see the module docstring)."""

    KEY_ACTIONS = _own_bindings()

    async def _on_key(self, event: events.Key) -> None:
        action = self.KEY_ACTIONS.get(event.key)
        if action is None or event.is_printable:
            await super()._on_key(event)
            return
        event.stop()
        event.prevent_default()
        await self.run_action(action)

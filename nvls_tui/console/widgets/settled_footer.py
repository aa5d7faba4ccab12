"""A footer that rebuilds its keys once per refresh, however many binding changes that refresh carried.

Textual's Footer answers every ``bindings_updated`` signal of its screen by scheduling a whole recompose
(every FooterKey removed and mounted again) after the next refresh. Opening a node screen signals about
fifteen of them (focus moves, the tables' cursors, each redraw's ``refresh_bindings``), and every one of
those recomposes ran, each reading the same bindings and building the same keys: a third of the CPU of
opening the screen. Only the last one decides what is shown, so this footer schedules one and lets the
others join it; and a rebuild that would build the keys already shown (most signals change nothing the
footer shows: a poll's redraw, a cursor move between two rows that allow the same actions) is skipped. The
keys it shows are those of the screen's bindings when the rebuild runs, as Textual's are.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.screen import Screen
from textual.widgets import Footer


class SettledFooter(Footer):
    """:class:`~textual.widgets.Footer`, with the rebuilds asked for before the next refresh folded into one."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        # A rebuild is scheduled and has not started: later changes are read by it, they need none of their own.
        self._rebuild_pending = False
        # What the keys on show were built from (None: nothing built yet).
        self._built_from: Hashable | None = None

    def bindings_changed(self, screen: Screen) -> None:
        """Schedule the rebuild Textual's Footer would, unless one is already waiting for the refresh."""
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    def _keys_shown(self) -> Hashable:
        """Everything :meth:`Footer.compose` reads to build the keys, in the order it reads it."""
        bindings = tuple((binding.key, binding.action, binding.description, binding.show, binding.group, enabled,
                          tooltip, binding.tooltip) for (_, binding, enabled, tooltip)
                         in self.screen.active_bindings.values())
        return (bindings, self._bindings_ready, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE,
                self.app.COMMAND_PALETTE_BINDING)

    async def _rebuild(self) -> None:
        # Cleared before the keys are read: a change that arrives while they are built asks for a rebuild again.
        self._rebuild_pending = False
        if not self.is_attached:
            return
        keys = self._keys_shown()
        if keys == self._built_from:
            return
        self._built_from = keys
        await self.recompose()


__all__ = ["SettledFooter"]

"""A footer that rebuilds its keys once per refresh, however many binding changes that refresh carried.

Textual's Footer answers every ``bindings_updated`` signal of its screen by scheduling a whole recompose
(every FooterKey removed and mounted again) after the next refresh. Opening a node screen signals about
fifteen of them (focus moves, the tables' cursors, each redraw's ``refresh_bindings``), and every one of
those recomposes ran, each reading the same bindings and building the same keys: a third of the CPU of
opening the screen. Only the last one decides what is shown, so this footer schedules one and lets the
others join it. The keys it shows are those of the screen's bindings when the rebuild runs, as Textual's are.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class SettledFooter(Footer):
    """:class:`~textual.widgets.Footer`, with the rebuilds asked for before the next refresh folded into one."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        # A rebuild is scheduled and has not started: later changes are read by it, they need none of their own.
        self._rebuild_pending = False

    def bindings_changed(self, screen: Screen) -> None:
        """Schedule the rebuild Textual's Footer would, unless one is already waiting for the refresh."""
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        # Cleared before the keys are read: a change that arrives while they are built asks for a rebuild again.
        self._rebuild_pending = False
        await self.recompose()


__all__ = ["SettledFooter"]

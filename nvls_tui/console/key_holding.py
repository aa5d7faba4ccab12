"""Keys typed ahead of the widget they are meant for: the App holds them, then replays them in order.

An operator types ``r`` and the gpu names of the typed confirmation at once, before the plan's dry run is
read and its input exists: without a hold, Textual would hand those keys to whatever has the focus then
(the fleet grid, whose keys act). The App keeps every key while a hold (``console/widgets/key_hold.py``)
waits, and replays them to the widget once it has the focus, or drops them with a notice when it never
will. An Enter among keys held for a plan is never replayed: it would approve a plan nobody has seen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from textual import events
from textual.app import App
from textual.screen import Screen
from textual.timer import Timer

from nvls_tui.console.widgets.key_hold import KeyHold, after_cancel, dropped_notice, split_replay


def plan_confirmation_ready(app: App[Any], screen: Screen[Any]) -> bool | None:
    """Where the keys typed after ``r`` go: ``True`` once the plan's typed confirmation has the focus,
    ``False`` when it never will (the plan was left, read-only, or no node can be repaired), else ``None``."""
    from textual.css.query import NoMatches

    from nvls_tui.console.screens.plan import PlanScreen

    if screen not in app.screen_stack:
        return False
    try:
        typed = screen.query_one("#plan-typed")
    except NoMatches:
        return None  # not composed yet
    if app.focused is typed:
        return True
    if isinstance(screen, PlanScreen) and len(screen.outcomes) == len(screen.hosts) \
            and (screen.dry_run_only or not screen.repairable):
        return False
    return None


class KeyHolding(App[int]):
    """The console's App, as far as holding keys goes (NvlsApp is one)."""

    _hold: KeyHold | None = None
    _hold_timer: Timer | None = None

    def hold_keys(self, hold: KeyHold) -> None:
        """Keep every key from now on until ``hold.ready()`` says where they go (an opener calls this).

        It is asked again whenever the focus moves and, as long as it holds, every 50 ms: a plan that ends
        without a typed confirmation may leave the focus where it already was.
        """
        self._hold = hold
        self._hold_timer = self.set_interval(0.05, self._settle_hold)

    async def on_event(self, event: events.Event) -> None:
        """Hold the keys that arrive while a hold waits; see whether it is over when the focus moves."""
        if isinstance(event, events.Key) and not event.is_forwarded and self._hold is not None:
            await self._settle_hold()  # the widget may have come: what was held goes before this key
            if self._hold is not None:
                self._hold.keys.append(event)
                await self._settle_hold()  # a cancel key (Esc) may go on at once
                return
        await super().on_event(event)

    async def on_descendant_focus(self, _: events.DescendantFocus) -> None:
        """The focus moved: the widget a hold waits for may have it now."""
        if self._hold is not None:
            await self._settle_hold()

    async def _settle_hold(self) -> None:
        """End the hold once its widget has the focus (replay, in order) or will never come (drop)."""
        hold = self._hold
        if hold is None:
            return
        if hold.cancelled:
            self._end_hold()  # Esc: what was typed for the widget goes with it, unannounced
            replay, _ = after_cancel(hold.keys, hold.cancel)
        else:
            state = hold.ready()
            if state is None:
                return
            self._end_hold()
            replay, dropped = split_replay(hold.keys, hold.stop_at) if state else ([], hold.keys)
            if dropped:
                self.notify(dropped_notice(hold, dropped, delivered=state), severity="warning", timeout=10)
        for key in replay:
            await self.on_event(key)  # through the holds again: a replayed key may open something too

    def _end_hold(self) -> None:
        self._hold = None
        if self._hold_timer is not None:
            self._hold_timer.stop()
            self._hold_timer = None

    def hold_keys_for(self, ready: Callable[[], bool | None], what: str) -> None:
        """Hold the keys typed after a key that opens ``what`` until it has the focus (``:``'s command line)."""
        self.hold_keys(KeyHold(ready, what))

    def hold_for_plan(self, screen: Screen[Any]) -> None:
        """Hold the keys typed after ``r`` for the plan's typed confirmation (shown once the dry run is read).

        An Enter among them is not used: it would approve a plan the operator has not seen.
        """
        self.hold_keys(KeyHold(functools.partial(plan_confirmation_ready, self, screen), "the plan's typed confirmation",
                               stop_at=frozenset({"enter"})))


__all__ = ["KeyHolding", "plan_confirmation_ready"]

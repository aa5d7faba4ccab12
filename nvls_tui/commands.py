"""Command palette providers: ``topic: verb object`` titles that call the same methods as the keys.

Commands depend on where the palette was opened, and the screen says which: the app's provider
(:class:`ConsoleCommands`) offers the keys bound anywhere and ``node: Open HOST`` for each node; a
screen that offers more names :class:`ScreenCommands` in its ``COMMANDS`` and answers
``palette_commands()`` (the fleet and the runbook their bound actions, the node screen also its units:
``unit: Stop kubelet on gpu05``). The palette never tests which screen it is on. Read-only mode
leaves out everything that changes a node, and a command whose action does not apply right now
(``check_action`` says so) is not offered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from nvls_tui.bindings import specs_for

if TYPE_CHECKING:
    from textual.screen import Screen

    from nvls_tui.app import NvlsApp

Command = tuple[str, Callable[[], object], str]
"""(title, callback, help) of one palette entry."""


class OffersCommands(Protocol):
    """A screen whose ``COMMANDS`` names :class:`ScreenCommands`."""

    def palette_commands(self) -> Iterator[Command]:
        """Every command the screen offers where it stands now."""
        ...


def scope_commands(screen: Screen[Any], scope: str, host: str | None = None) -> Iterator[Command]:
    """The palette entries of the keys bound on ``screen`` (binding-table ``scope``) that apply now.

    Args:
        screen: runs the action, and says through ``check_action`` whether it applies (read-only
            mode hides what changes a node; an action with nothing to act on is left out).
        scope: the binding table's scope of the screen (``fleet``, ``node``, ``runbook``).
        host: fills ``{host}`` in the titles (the node screen's node).
    """
    for spec in specs_for(scope):
        if spec.palette and screen.check_action(spec.action, ()) is True:
            yield spec.palette.format(host=host), partial(screen.run_action, spec.action), spec.tooltip


class _Listed(Provider):
    """A provider over a list of :data:`Command` (discovery lists them, search fuzzy-matches titles)."""

    def commands(self) -> Iterator[Command]:
        """Every command that applies where the palette was opened: (title, callback, help)."""
        raise NotImplementedError

    async def discover(self) -> Hits:
        """What the palette lists before anything is typed."""
        for title, callback, help_text in self.commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Fuzzy-match every command title against ``query``."""
        matcher = self.matcher(query)
        for title, callback, help_text in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)


class ConsoleCommands(_Listed):
    """What applies on every screen: the keys bound anywhere, and opening any node."""

    def commands(self) -> Iterator[Command]:
        """The app's bound actions, then ``node: Open HOST`` for each node."""
        app = cast("NvlsApp", self.app)
        for spec in specs_for("app"):
            if spec.palette:
                yield spec.palette, partial(app.run_action, spec.action), spec.tooltip
        live, actions = app.services.live, app.services.actions
        for h in live.fleet.hosts:
            verdict = live.verdict(h)
            yield (f"node: Open {h}", partial(actions.open_node, h),
                   f"{verdict.value if verdict else 'not polled yet'}: GPUs, units, holders, findings")


class ScreenCommands(_Listed):
    """What the screen the palette was opened on offers (it answers ``palette_commands``)."""

    def commands(self) -> Iterator[Command]:
        """The screen's own commands."""
        return cast(OffersCommands, self.screen).palette_commands()


__all__ = ["Command", "ConsoleCommands", "OffersCommands", "ScreenCommands", "scope_commands"]

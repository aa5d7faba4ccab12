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

import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider

from nvls_tui.console.bindings import specs_for
from nvls_tui.console.services import services_of

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

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
        app = self.app
        for spec in specs_for("app"):
            if spec.palette:
                yield spec.palette, partial(app.run_action, spec.action), spec.tooltip
        services = services_of(app)
        live, actions = services.live, services.actions
        for h in live.fleet.hosts:
            verdict = live.verdict(h)
            yield (f"node: Open {h}", partial(actions.open_node, h),
                   f"{verdict.value if verdict else 'not polled yet'}: GPUs, units, holders, findings")


class ScreenCommands(_Listed):
    """What the screen the palette was opened on offers (it answers ``palette_commands``)."""

    def commands(self) -> Iterator[Command]:
        """The screen's own commands."""
        return cast(OffersCommands, self.screen).palette_commands()


# Textual's own palette entries the console keeps (docs/console.md lists them): the others are left
# out on purpose. Keys: Textual's panel of the focused widget's keys, beside `?`, which knows the ids
# and read-only. Theme: the cells' colours are read once from the stylesheet, so a theme recoloured
# the frames but not the states. Quit: `app: Quit` is the same action under the console's own title.
KEPT_SYSTEM_COMMANDS = ("Maximize", "Minimize")


def system_commands(app: App[Any], inherited: Iterable[SystemCommand]) -> Iterator[SystemCommand]:
    """The palette's entries that are not the console's own: Textual's that are kept, and a screenshot.

    The screenshot (an SVG of the screen as it is) goes where the fleet's exports go, private (0600 in a
    0700 directory of the operator's own): a screen shows host names, users and command lines.
    """
    for command in inherited:
        if command.title in KEPT_SYSTEM_COMMANDS:
            yield command
    yield SystemCommand("app: Save a screenshot (SVG)",
                        "An SVG of this screen in the exports directory, for a ticket or a hand-over.",
                        lambda: app.set_timer(0.1, partial(save_screenshot, app)))  # once the palette is gone


def save_screenshot(app: App[Any]) -> None:
    """Write the screen as SVG next to the fleet's exports and say where (one line when it cannot)."""
    from nvls_tui.console.export import export_dir
    from nvls_tui.localfiles import private_dir, write_private

    try:
        folder = private_dir(export_dir())
        path = write_private(folder / time.strftime("screen-%Y%m%dT%H%M%S.svg"), app.export_screenshot())
    except OSError as exc:
        app.notify(f"Screenshot not saved: {exc}", severity="error", timeout=10)
        return
    app.notify(f"Screenshot saved: {path}", timeout=8)


__all__ = ["KEPT_SYSTEM_COMMANDS", "Command", "ConsoleCommands", "OffersCommands", "ScreenCommands", "save_screenshot",
           "scope_commands", "system_commands"]

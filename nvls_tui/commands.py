"""Command palette providers: ``topic: verb object`` titles that call the same methods as the keys.

Commands depend on where the palette was opened: every screen offers ``node: Open HOST`` for each
node; the node screen adds its holders and units (``holders: SIGTERM selected on gpu05``,
``unit: Stop kubelet on gpu05``). Read-only mode leaves out everything that changes a node, and a
command whose action does not apply right now (``check_action`` says so) is not offered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from nvls_tui.bindings import specs_for

if TYPE_CHECKING:
    from nvls_tui.app import NvlsApp

Command = tuple[str, Callable[[], object], str]


class ConsoleCommands(Provider):
    """Nodes, the current screen's bound actions, and (on a node screen) its holders and units."""

    def commands(self) -> Iterator[Command]:
        """Every command that applies where the palette was opened: (title, callback, help)."""
        # Imported here: the screens import this module's neighbours.
        from nvls_tui.screens.node import NodeScreen

        app, screen = cast("NvlsApp", self.app), self.screen
        # Base screen of a modal (the palette itself is a modal over the screen it was opened on).
        host = getattr(screen, "host", None)
        for spec in specs_for("app"):
            if spec.palette:
                yield spec.palette, partial(app.run_action, spec.action), spec.tooltip
        from nvls_tui.screens.runbook import RunbookScreen

        scope = "node" if isinstance(screen, NodeScreen) else "runbook" if isinstance(screen, RunbookScreen) else "fleet"
        for spec in specs_for(scope):
            if spec.palette and screen.check_action(spec.action, ()) is True:
                title = spec.palette.format(host=host)
                yield title, partial(screen.run_action, spec.action), spec.tooltip
        for h in app.fleet.hosts:
            verdict = app.verdict(h)
            yield (f"node: Open {h}", partial(app.open_node, h),
                   f"{verdict.value if verdict else 'not polled yet'}: GPUs, units, holders, findings")
        if isinstance(screen, NodeScreen) and not app.read_only and screen.state is not None:
            for s in screen.state.services:
                if not s.exists:
                    continue
                short = s.name.removesuffix(".service")
                if s.active == "active":
                    yield (f"unit: Stop {short} on {host}", partial(screen.action_stop_unit, s.name),
                           f"systemctl stop {s.name} (confirmed first)")
                else:
                    yield (f"unit: Start {short} on {host}", partial(screen.action_start_unit, s.name),
                           f"systemctl start {s.name} (confirmed first; now {s.active})")

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

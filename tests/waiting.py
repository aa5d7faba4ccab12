"""The one way tests wait: poll a condition until it holds or a generous deadline passes.

No test sleeps for a fixed time hoping something happened; each waits for the thing itself and
fails naming it. The deadlines are long because CI is two shared cores (the suite must pass with
``-n 4`` there): they bound a hang, they do not measure speed (benchmarks do that). Each is stretched by
the busiest load per core seen while it waits (:class:`Deadline`), as the lab's are.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable

DEFAULT_TIMEOUT = 30.0

SCALE_ENV = "NVLS_TEST_TIMEOUT_SCALE"
"""A factor an operator of a slow or busy machine can stretch every :func:`scaled` deadline by."""


def scaled(seconds: float) -> float:
    """``seconds`` stretched for the machine the suite runs on: by ``$NVLS_TEST_TIMEOUT_SCALE`` (default 1)
    and by the load per core when there is more work than cores (other processes busy on the 2 CI cores
    made a command over SSH take longer than the product's default 20 s just to start).

    For bounds on a hang only, never for a claim about speed.
    """
    factor = float(os.environ.get(SCALE_ENV) or 1.0)
    try:
        busy = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform: the operator's factor alone
        busy = 1.0
    return seconds * max(factor, 1.0) * max(busy, 1.0)


def _stretch() -> float:
    """What :func:`scaled` multiplies by now: the operator's factor times the load per core (at least 1)."""
    return scaled(1.0)


class Deadline:
    """A wait's bound on a hang: ``timeout`` seconds on an idle machine, stretched by the busiest load per core
    seen while waiting (and ``$NVLS_TEST_TIMEOUT_SCALE``), so a machine that gets busy mid-wait gives the
    slowed work its time, and one that calms down does not take back what it gave."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.start = time.monotonic()
        self.stretch = _stretch()

    def passed(self) -> bool:
        self.stretch = max(self.stretch, _stretch())
        return time.monotonic() - self.start > self.timeout * self.stretch

    def words(self) -> str:
        """How long it waited, for the failure's message."""
        waited = time.monotonic() - self.start
        return f"{self.timeout:g}s" if self.stretch <= 1.0 else f"{waited:.0f}s ({self.timeout:g}s stretched by load)"


def give_up_on(app, hung: Iterable[str], after: float) -> None:
    """Set the poll deadlines of a console ``app`` that a test means to see give up on the nodes ``hung``.

    Those nodes' polls hang (a wedged nvidia-smi), so they are cut off at ``after`` seconds whatever the
    machine's speed: that deadline is the one the test shows (``no answer within 0.5 s``) and stays as given.
    Every other node must answer, and on a loaded machine a short deadline cut a healthy node off too (its
    in-process poll took longer than 0.5 s under two spinners): it gets a bound on a hang instead, scaled.
    The console takes one deadline for every node; its pollers hold it each, read at every poll.
    """
    cut = set(hung)
    assert cut <= set(app.pollers), f"no poller of {sorted(cut - set(app.pollers))} in this console"
    for host, poller in app.pollers.items():
        poller.timeout = after if host in cut else scaled(DEFAULT_TIMEOUT)


def waits_recorded(monkeypatch) -> list[float]:
    """Make the simulator record each wait for a hung command (one ``--timeout`` waited out) instead of sleeping it,
    and return the list it appends to: a test holds "one timeout, not two" by what was waited out, not by a clock."""
    from nvls_tui.backends import simulated

    seen: list[float] = []

    async def record(seconds: float) -> None:
        seen.append(seconds)
        await asyncio.sleep(0)

    monkeypatch.setattr(simulated, "wait_out", record)
    return seen


async def wait_until(pilot, condition: Callable[[], object], what: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Let a Textual app run (``pilot.pause``) until ``condition()`` holds; fail naming ``what``."""
    deadline = Deadline(timeout)
    while not condition():
        assert not deadline.passed(), f"timed out after {deadline.words()} waiting for {what}"
        await pilot.pause(0.02)


async def first_poll(app, timeout: float = 10.0) -> None:
    """Wait until every node of the console ``app`` answered (or failed) once, then draw the fleet grid.

    The grid's redraws are coalesced (at most 10 a second): the last poll's may still be waiting on its
    timer, and a test reads the grid right after this.
    """
    from nvls_tui.console.screens.fleet import FleetScreen

    await app.wait_for_first_poll(scaled(timeout))
    for screen in app.screen_stack:
        if isinstance(screen, FleetScreen):
            screen.refresh_grid()


async def open_node_screen(app, pilot, host: str, timeout: float = DEFAULT_TIMEOUT):
    """The node screen of ``host``, opened the one way tests open it: after the fleet's first poll,
    pushed, mounted and laid out (its header placed, its footer showing the screen's keys).

    Returns:
        The NodeScreen.
    """
    from nvls_tui.console.screens.node import NodeScreen

    await first_poll(app, timeout)
    await pilot.pause()
    app.open_node(host)

    def drawn() -> bool:
        screen = app.screen
        return (isinstance(screen, NodeScreen) and screen.host == host and screen.is_mounted
                and screen.query_one("#node-header").region.height > 0 and bool(screen.query("FooterKey")))

    await wait_until(pilot, drawn, f"the node screen of {host}", timeout)
    await pilot.pause()
    return app.screen


async def palette_settled(pilot, typed: str, command: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Wait until the command palette has searched all of ``typed`` and highlights ``command``.

    The palette searches in a worker, restarted by each key: Enter before the last search ended
    would pick whatever an earlier, shorter search put first.
    """
    from textual.command import CommandInput, CommandList, CommandPalette

    def settled() -> bool:
        palette = pilot.app.screen
        if not isinstance(palette, CommandPalette) or palette.query_one(CommandInput).value != typed:
            return False
        if any(w.group == CommandPalette._GATHER_COMMANDS_GROUP and not w.is_finished for w in pilot.app.workers):
            return False
        option = palette.query_one(CommandList).highlighted_option
        return option is not None and command in str(option.prompt)

    await wait_until(pilot, settled, f"the palette to search “{typed}” and offer “{command}”", timeout)


async def click_shown(pilot, selector: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Click the widget ``selector`` once it is laid out on the screen, and fail if the click reached another.

    Pilot.click aims at the widget's region as it is when called: on a screen pushed but not laid out yet
    that region is empty and the click lands at 0,0 (a confirmation's button then was never pressed, and the
    test waited out its deadline for what the button starts). Fewer frames make that window wider.
    """

    def shown() -> bool:
        found = pilot.app.screen.query(selector)
        return bool(found) and found.first().region.area > 0

    await wait_until(pilot, shown, f"{selector} laid out on the screen", timeout)
    assert await pilot.click(selector), f"the click on {selector} reached another widget"


async def until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Wait (outside an app) until ``predicate()`` holds; fail naming ``what``."""
    deadline = Deadline(timeout)
    while not predicate():
        if deadline.passed():
            raise AssertionError(f"gave up after {deadline.words()} waiting until {what}")
        await asyncio.sleep(0.05)


def until_sync(predicate: Callable[[], object], timeout: float, what: str, every: float = 0.1) -> object:
    """:func:`until` for a test that drives other processes (no event loop): block until ``predicate()``
    returns something true, and return it; fail naming ``what``."""
    deadline = Deadline(timeout)
    while not (value := predicate()):
        if deadline.passed():
            raise AssertionError(f"gave up after {deadline.words()} waiting until {what}")
        time.sleep(every)
    return value


__all__ = ["DEFAULT_TIMEOUT", "SCALE_ENV", "Deadline", "click_shown", "first_poll", "give_up_on", "open_node_screen", "palette_settled", "scaled", "until",
           "until_sync", "wait_until", "waits_recorded"]

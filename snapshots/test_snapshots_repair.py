"""Snapshots of the repair console: the plan, the runbook mid-smoke-test, the finished summary.

Deterministic by construction: the simulated fleets are frozen (speed 0), and the runbook screens
replay a fixed script of events, recorded from a real run of the runbook against a second, identical
frozen fleet, each event shown at the simulated time it happened.
"""

from __future__ import annotations

from unittest import mock

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.console.screens.runbook import RunbookScreen
from nvls_tui.runbook import Runbook
from nvls_tui.runbook.events import RunbookEvent, SmokeRow
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.runbook import repair_options
from tests.waiting import first_poll, wait_until

FIXED_NOW = 1_785_000_000.0
# Every snapshot test on one worker (tests/unit/test_snapshot_group.py says why).
pytestmark = pytest.mark.xdist_group("snapshots")
# Every screen at the two sizes operators use: a wide terminal and the 80x24 of a console over a jump host.
SIZES = pytest.mark.parametrize("size", [(160, 48), (80, 24)], ids=["160x48", "80x24"])
HOSTS = ["gpu05", "gpu06"]


def sim_app() -> NvlsApp:
    """The console on the frozen seed-incident fleet, polling each node once."""
    return NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None, clock=lambda: FIXED_NOW)




async def recorded_run() -> list[tuple[float, RunbookEvent]]:
    """Every event of a real repair of gpu05 and gpu06 with the simulated time it happened at."""
    import asyncio

    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=0)
    backends = sim_backends(fleet)
    options = repair_options(backends)
    events: list[tuple[float, RunbookEvent]] = []
    books = [Runbook(b, options, on_event=lambda e: events.append((fleet.clock.now(), e)), run_id="snapshot")
             for b in backends]
    # What the run writes about the bastion (its PID in the record, the lock's owner file) is the test
    # machine's, not the simulated fleet's: fixed here so that every machine draws the same screen.
    with mock.patch("os.getpid", return_value=4242), mock.patch("socket.gethostname", return_value="bastion"), \
            mock.patch("nvls_tui.runbook.lock._utc", return_value="2026-08-15T16:09:00+00:00"), \
            mock.patch("nvls_tui.runbook.lock.bastion_id", return_value="boot-0/pidns-0"):
        await asyncio.gather(*(book.run() for book in books))
    return events


async def replay(pilot, stop_after_rows: int | None = None) -> None:
    """Show the recorded run on a runbook screen; stop once each node has ``stop_after_rows`` smoke rows."""
    await first_poll(pilot.app, timeout=30)
    events = await recorded_run()
    now = [events[0][0]]
    screen = RunbookScreen(HOSTS, start=False, clock=lambda: now[0])
    pilot.app.push_screen(screen)
    await wait_until(pilot, lambda: pilot.app.screen is screen and len(screen.columns) == 2, "the runbook screen")
    cut = {h: len(events) for h in HOSTS}
    if stop_after_rows is not None:
        for host in HOSTS:
            rows = [i for i, (_, e) in enumerate(events)
                    if e.host == host and isinstance(e, SmokeRow) and e.step == "smoke-test"]
            cut[host] = rows[stop_after_rows - 1]
    for i, (at, event) in enumerate(events):
        if i <= cut[event.host]:
            now[0] = at
            screen.apply(event)
    if stop_after_rows is None:
        screen.finished_at = now[0]
    screen.tick()
    await pilot.pause()
    await pilot.pause(0.1)


async def plan(pilot) -> None:
    await first_poll(pilot.app, timeout=30)
    await pilot.pause()
    await pilot.press("space", "space", "r")
    # The outcomes are in before the plans are drawn (draw_plans runs after them): wait for what it draws last,
    # the typed confirmation with the focus, then for the layout it causes (the bodies' scrollbars).
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, PlanScreen) and len(pilot.app.screen.outcomes) == 2
                     and pilot.app.screen.query_one("#plan-confirm").display
                     and pilot.app.focused is pilot.app.screen.query_one("#plan-typed"), "the drawn plan")
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def mid_smoke(pilot) -> None:
    await replay(pilot, stop_after_rows=3)


async def finished(pilot) -> None:
    await replay(pilot)


@SIZES
def test_the_plan_screen_of_gpu05_and_gpu06(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=plan)


@SIZES
def test_the_runbook_mid_smoke_test(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=mid_smoke)


@SIZES
def test_the_finished_repair_summary(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=finished)

"""Console faults: a node whose backend raises, hangs or drops mid-poll never takes the console down.

The console is driven through its public API only (NvlsApp, Pilot). Each test ends by checking that
the app is still answering keys and that no exception escaped (``return_code`` stays clean).
"""

from __future__ import annotations

import asyncio

import pytest

from nvls_tui.backends.base import Unreachable
from nvls_tui.console.app import NvlsApp
from nvls_tui.model import Verdict
from tests.sshd_rig import backend_for
from tests.test_console_fakes import FakeBackend, fixed_clock, make_node
from tests.waiting import give_up_on, wait_until

SIZE = (160, 48)


class RaisingBackend(FakeBackend):
    """``snapshot()`` raises an error no backend should raise (a bug in it)."""

    async def snapshot(self):
        self.snapshots += 1
        raise RuntimeError("backend bug: list index out of range")


class DroppingBackend(FakeBackend):
    """The first poll answers; every later one loses the link half-way through."""

    async def snapshot(self):
        self.snapshots += 1
        if self.snapshots > 1:
            await asyncio.sleep(0)  # the poll had started when the link went
            raise Unreachable(f"the connection to {self.host} dropped during the poll")
        return self.state




async def assert_keys_answer(app, pilot) -> None:
    """``v`` (sort by verdict) still flips the fleet screen's sort: the UI is usable."""
    screen = app.screen
    before = screen.sort_by_verdict
    await pilot.press("v")
    await wait_until(pilot, lambda: screen.sort_by_verdict is not before, "the key to be answered", 2.0)


async def test_nodes_whose_backend_raises_hangs_or_drops_mid_poll_leave_the_console_usable():
    good = FakeBackend(make_node("gpu01"))
    raising = RaisingBackend(make_node("gpu02"))
    hanging = FakeBackend(make_node("gpu03"), hang=True)
    dropping = DroppingBackend(make_node("gpu04"))
    app = NvlsApp([good, raising, hanging, dropping], poll_interval=None, clock=fixed_clock)
    give_up_on(app, ["gpu03"], 0.5)  # only the hanging node is cut off at 0.5 s, however busy the machine is
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: all(app.verdict(h) is not None for h in app.backends),
                         "every node to have a verdict")
        assert app.verdict("gpu01") is Verdict.HEALTHY
        assert app.verdict("gpu02") is Verdict.UNREACHABLE
        assert "backend bug" in app.fleet.get("gpu02").error
        assert app.verdict("gpu03") is Verdict.UNREACHABLE  # given up after poll_timeout, still hanging
        assert app.verdict("gpu04") is Verdict.HEALTHY
        await assert_keys_answer(app, pilot)

        app.poll_now("gpu04")  # the link drops half-way through this poll
        await wait_until(pilot, lambda: app.verdict("gpu04") is Verdict.UNREACHABLE, "the dropped poll")
        stale = app.fleet.get("gpu04")
        assert "dropped during the poll" in stale.error
        assert len(stale.gpus) == 8  # what was last known is kept (greyed), not thrown away
        app.poll_now()  # everyone again, the hanging node included: nothing stacks up or escapes
        await wait_until(pilot, lambda: raising.snapshots >= 2 and dropping.snapshots >= 3, "the second round")
        await assert_keys_answer(app, pilot)
        assert app.is_running
    assert app.return_code is None
    assert app._exception is None  # noqa: SLF001 - the one way to see that nothing escaped the app


@pytest.mark.ssh
async def test_two_consoles_on_one_shimmed_node_both_poll_it_and_both_answer_keys(sshd_fleet):
    rig = sshd_fleet(["gpu05"], scenario="seed-incident", static=True)
    first = NvlsApp([backend_for(rig, "gpu05")], poll_interval=0.5, clock=fixed_clock)
    second = NvlsApp([backend_for(rig, "gpu05")], poll_interval=0.5, clock=fixed_clock)
    host = rig.target("gpu05")
    async with first.run_test(size=SIZE) as one, second.run_test(size=SIZE) as two:
        await wait_until(one, lambda: first.verdict(host) is Verdict.BROKEN, "the first console's poll", 20)
        await wait_until(two, lambda: second.verdict(host) is Verdict.BROKEN, "the second console's poll", 20)
        polls = (first.pollers[host].polls, second.pollers[host].polls)
        await wait_until(one, lambda: first.pollers[host].polls > polls[0] and second.pollers[host].polls > polls[1],
                         "both consoles to poll again", 20)
        assert first.fleet.get(host).holders and first.fleet.get(host).holders == second.fleet.get(host).holders
        await assert_keys_answer(first, one)
        await assert_keys_answer(second, two)
    for app in (first, second):
        assert app.return_code is None and app._exception is None  # noqa: SLF001
    for app in (first, second):
        for backend in app.backends.values():
            await backend.close()

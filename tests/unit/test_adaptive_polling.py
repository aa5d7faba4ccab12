"""Adaptive polling (issue 16): a healthy node that stays the same is polled less often, up to a bound;
a broken or changing node, and one that stops answering, is not; the fleet header names an answer older
than its node's own interval allows."""

from __future__ import annotations

import asyncio
import random

from nvls_tui.model import Verdict
from nvls_tui.poll.poller import CALM_FACTOR_MAX, NodePoller, next_interval, pause_factor, same_facts
from tests.test_console_fakes import FakeBackend, fixed_clock, make_node


def test_calm_polls_stretch_the_interval_up_to_the_bound_and_nothing_else_does():
    assert [next_interval(5.0, Verdict.HEALTHY, n) for n in range(6)] == [5.0, 10.0, 20.0, 30.0, 30.0, 30.0]
    assert next_interval(5.0, Verdict.HEALTHY, 50) == 5.0 * CALM_FACTOR_MAX
    for verdict in (Verdict.BROKEN, Verdict.DEGRADED, Verdict.UNREACHABLE, None):
        assert next_interval(5.0, verdict, 9) == 5.0


def test_the_second_polls_of_a_fleet_spread_over_the_interval_and_later_ones_keep_near_it():
    rng = random.Random(16)
    second = [pause_factor(1, rng) for _ in range(400)]
    later = [pause_factor(n, rng) for n in range(2, 402)]
    assert 0.2 <= min(second) < 0.3 and 0.9 < max(second) <= 1.0  # the whole interval, not one wave
    assert 0.8 <= min(later) and max(later) <= 1.2
    # a quarter of the fleet's second polls in each quarter of the interval (a wave would fill one)
    quarters = [sum(0.2 + 0.2 * q <= f < 0.4 + 0.2 * q for f in second) for q in range(4)]
    assert all(60 < n < 140 for n in quarters), quarters


def test_two_polls_of_the_same_node_are_the_same_facts_whenever_they_were_taken():
    a = make_node("gpu01").replace(polled_at=1.0, node_clock=100.0)
    assert same_facts(a, a.replace(polled_at=2.0, node_clock=101.0))
    assert not same_facts(a, a.replace(holders=a.holders[:1]))
    assert not same_facts(None, a)


class RecordingPoller(NodePoller):
    """A poll loop that notes each pause it would take (before jitter) and goes on at once."""

    def __init__(self, backend: FakeBackend, rounds: int, change_at: int | None) -> None:
        super().__init__(backend, interval=5.0, timeout=5, clock=fixed_clock)
        self.waits: list[float] = []
        self.rounds, self.change_at, self.done = rounds, change_at, asyncio.Event()

    async def pause(self, delay: float) -> None:
        self.waits.append(self.next_delay())
        if len(self.waits) >= self.rounds - 1:
            self.done.set()
            await asyncio.Event().wait()  # the test cancels the loop here

    def post(self, _result) -> None:
        if self.change_at is not None and self.polls == self.change_at:
            backend = self.backend
            backend.state = backend.state.replace(holders=backend.state.holders[:1])


async def waits_of(backend: FakeBackend, rounds: int, change_at: int | None = None) -> list[float]:
    """The pauses a poll loop asks for between ``rounds`` polls."""
    poller = RecordingPoller(backend, rounds, change_at)
    task = asyncio.create_task(poller.run(poller.post))
    try:
        await asyncio.wait_for(poller.done.wait(), 10)
    finally:
        task.cancel()
    return poller.waits


async def test_a_healthy_quiet_node_is_polled_less_often_and_a_change_brings_it_back():
    healthy = FakeBackend(make_node("gpu01"))
    assert await waits_of(healthy, 6) == [5.0, 10.0, 20.0, 30.0, 30.0]
    changing = FakeBackend(make_node("gpu02"))
    # Changed after the third poll: the fourth sees it, and the interval is back to 5 s.
    assert await waits_of(changing, 6, change_at=3) == [5.0, 10.0, 20.0, 5.0, 10.0]


async def test_a_broken_node_keeps_the_base_interval():
    broken = FakeBackend(make_node("gpu05", broken=True))
    assert await waits_of(broken, 5) == [5.0, 5.0, 5.0, 5.0]


def test_the_fleet_header_names_an_answer_only_once_it_is_late_for_its_node():
    from nvls_tui.model import Fleet
    from nvls_tui.views.fleet_top import AnswerTimes, late_words

    times = AnswerTimes()
    times.note(Fleet((make_node("gpu01").replace(polled_at=95.0), make_node("gpu02").replace(polled_at=40.0))))
    fleet = Fleet((make_node("gpu01").replace(polled_at=100.0), make_node("gpu02").replace(polled_at=70.0),
                   make_node("gpu03")))  # gpu03: not answered yet
    times.note(fleet)
    assert late_words(times.late(fleet, 110.0)) == ""  # gpu02's 40 s after a 30 s interval is its back-off
    # gpu01 answered every 5 s: 60 s of silence is late too.
    assert late_words(times.late(fleet, 160.0)) == "late: gpu02 answered 1m30s ago (every ~30s before), +1 more"

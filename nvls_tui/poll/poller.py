"""Poll workers: one loop per node, never two polls of one node at once, timeout and backoff.

Each :class:`NodePoller` owns one backend. Its :meth:`NodePoller.run` loop polls, hands a
:class:`PollResult` to its caller (the console wraps it in a message), then sleeps for the poll
interval (longer after failures). Nothing here knows Textual.
Each poll is :func:`nvls_tui.poll.once.poll_once`, as ``check``'s. A wedged command costs its node
one command timeout (its section reads timed out); a node stuck past the whole poll's ``timeout`` only
ever blocks its own loop: the poll is cancelled and the node shown unreachable with its last known state.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from nvls_tui.diagnosis import diagnose, diagnose_guarded
from nvls_tui.model import NodeState, Verdict
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.after_poll import carry_across
from nvls_tui.poll.once import poll_once
from nvls_tui.poll.transport import Transport

Clock = Callable[[], float]
Diagnose = Callable[[NodeState], Diagnosis]


@dataclass(frozen=True, slots=True)
class PollResult:
    """A poll of one node finished (or failed: then ``state.reachable`` is False).

    Attributes:
        state: the node's state to show; after a failure, the last known state with the reason.
        diagnosis: findings and verdict of ``state``.
        ok: True when this poll read the node.
    """

    state: NodeState
    diagnosis: Diagnosis
    ok: bool


def default_diagnose(state: NodeState) -> Diagnosis:
    """The diagnosis of contract.md."""
    return diagnose(state)


def backoff_delay(interval: float, failures: int, ceiling: float = 60.0) -> float:
    """Seconds to wait after ``failures`` failed polls in a row: doubling, capped at ``ceiling``."""
    if failures <= 0:
        return interval
    return min(max(interval, 1.0) * (2 ** min(failures, 16)), max(ceiling, interval))


# A healthy node that stays the same is polled less often, up to this many intervals apart: a fleet
# left polling costs its quiet nodes less (issue 16), while a broken, degraded or changing node, and
# one that fails to answer, keeps the base interval (or backs off as before).
CALM_FACTOR_MAX = 6


def same_facts(a: NodeState | None, b: NodeState) -> bool:
    """True when two polls read the same node state (apart from when they were taken)."""
    if a is None:
        return False
    moment = {"polled_at": None, "node_clock": None, "fabric_since": None}
    return a.replace(**moment) == b.replace(**moment)


def next_interval(base: float, verdict: Verdict | None, calm: int) -> float:
    """Seconds until the next poll: ``base`` doubled per calm poll in a row (healthy and unchanged),
    at most ``CALM_FACTOR_MAX`` times ``base``; any other node keeps ``base``."""
    if verdict is not Verdict.HEALTHY or calm <= 0:
        return base
    return base * min(2 ** min(calm, 8), CALM_FACTOR_MAX)


def pause_factor(polls: int, rng: random.Random | None = None) -> float:
    """The jitter of the pause after a node's ``polls``-th poll, times the interval.

    A fleet's pollers start together, so their first answers come together; spread over the whole
    interval, the second polls do not arrive as one wave (at 1,024 nodes each wave held the console's
    keys for half a second, bench/ui_bench.py), and the jitter of later pauses keeps them apart.
    """
    uniform = rng.uniform if rng is not None else random.uniform
    return uniform(0.2, 1.0) if polls <= 1 else uniform(0.8, 1.2)


class NodePoller:
    """Polls one node, one poll at a time.

    Args:
        backend: how to reach the node.
        interval: seconds between polls; None polls once and then only when poked.
        timeout: seconds a whole poll may take before the node counts as unreachable.
        clock: the time source that stamps ``polled_at`` (tests fix it).
        diagnose: NodeState -> Diagnosis.
    """

    def __init__(
        self,
        backend: Transport,
        *,
        interval: float | None,
        timeout: float,
        clock: Clock = time.time,
        diagnose: Diagnose = default_diagnose,
    ) -> None:
        self.backend = backend
        self.host = backend.host
        self.interval = interval
        self.timeout = timeout
        self.clock = clock
        self.diagnose = diagnose
        self.failures = 0
        self.last_good: NodeState | None = None
        self.polls = 0
        self.calm = 0  # healthy, unchanged polls in a row (they stretch the interval)
        self.last_verdict: Verdict | None = None
        self._lock = asyncio.Lock()
        self._poke = asyncio.Event()

    @property
    def busy(self) -> bool:
        """True while a poll of this node is in flight."""
        return self._lock.locked()

    @contextlib.asynccontextmanager
    async def paused(self):
        """Hold every poll of this node for the duration (a repair: a poll's nvidia-smi opens the
        devices and could make the reset refuse). A poll in flight is waited for first."""
        async with self._lock:
            yield

    def poke(self) -> None:
        """Ask for a poll now (after an action), without waiting for the interval."""
        self._poke.set()

    async def poll_once(self) -> PollResult:
        """Poll the node once; never raises. A poll already in flight is waited for, not doubled."""
        if self._lock.locked():
            async with self._lock:  # someone else polled meanwhile: report what they got
                pass
            if self.last_good is not None and self.failures == 0:
                return self._message(self.last_good, ok=True)
        async with self._lock:
            self.polls += 1
            state = await poll_once(self.backend, self.timeout)  # never raises: a bug reads unreachable
            if state.reachable:
                self.failures = 0
                now = self.clock()
                prev = self.last_good
                elapsed = now - prev.polled_at if prev and prev.polled_at is not None else 0.0
                state = carry_across(prev, state, elapsed)  # the fabric's wait; FM's NRestarts climbing
                unchanged = same_facts(self.last_good, state)
                self.last_good = state.replace(polled_at=now)
                result = self._message(self.last_good, ok=True)
                healthy = result.diagnosis.verdict is Verdict.HEALTHY
                self.calm = self.calm + 1 if healthy and unchanged else 0
                self.last_verdict = result.diagnosis.verdict
                return result
            self.failures += 1
            self.calm = 0
            if self.last_good is not None:
                # Keep what we last knew, greyed out by the screens, with the reason it is stale.
                state = self.last_good.replace(reachable=False, error=state.error)
            return self._message(state, ok=False)

    def _message(self, state: NodeState, *, ok: bool) -> PollResult:
        return PollResult(state, diagnose_guarded(state, self.diagnose), ok)

    async def run(self, post: Callable[[PollResult], object]) -> None:
        """Poll forever (until cancelled), posting each result with ``post``."""
        while True:
            self._poke.clear()
            post(await self.poll_once())
            if self.interval is None:
                await self._poke.wait()
                continue
            # Jitter: pollers started together would otherwise stay in step, and 256 polls landing in
            # the same instant every interval stall the keyboard (bench/ui_bench.py).
            await self.pause(self.next_delay() * pause_factor(self.polls))

    def next_delay(self) -> float:
        """Seconds until the next poll, before jitter: stretched while calm, backed off after failures."""
        assert self.interval is not None
        return backoff_delay(next_interval(self.interval, self.last_verdict, self.calm), self.failures)

    async def pause(self, delay: float) -> None:
        """Wait ``delay`` seconds, or less when poked (an action just changed the node)."""
        try:
            async with asyncio.timeout(delay):
                await self._poke.wait()
        except TimeoutError:
            pass

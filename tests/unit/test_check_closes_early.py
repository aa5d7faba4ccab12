"""``check`` closes each node's connection as soon as that node has answered, not after the slowest node.

A one-shot check kept every connection open until the last node answered: at 1,024 loopback nodes the
closes were a serial second after the last answer (38.85 s -> 39.84 s, then the JSON), and on a real fleet
1,023 idle sessions stayed open for as long as one hung node took to reach its deadline.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from nvls_tui.backends.recorded import RecordedBackend
from nvls_tui.headless.check import poll_all
from nvls_tui.poll.once import poll_deadline
from tests.waiting import until

CAPTURE = Path(__file__).parents[1] / "fixtures" / "real" / "nvidia-h200" / "probe-output-after-fix.txt"


class Counted(RecordedBackend):
    """A recorded node that notes when it is closed; ``gate`` (when given) holds its answer back."""

    def __init__(self, host: str, gate: asyncio.Event | None = None) -> None:
        super().__init__(host, CAPTURE.read_text())
        self.gate = gate
        self.closed = 0

    async def read_probe(self):
        if self.gate is not None:
            await self.gate.wait()
        return await super().read_probe()

    async def close(self) -> None:
        self.closed += 1
        await super().close()


async def test_a_node_that_answered_is_closed_while_a_slow_one_is_still_polled():
    gate = asyncio.Event()
    quick, slow = Counted("gpu01"), Counted("gpu02", gate)
    check = asyncio.ensure_future(poll_all([quick, slow], poll_deadline(20.0)))
    await until(lambda: quick.closed, 10, "the node that answered to be closed")
    assert not check.done() and slow.closed == 0  # the slow node is still being polled, its link open
    gate.set()
    states = await check
    assert [s.host for s in states] == ["gpu01", "gpu02"] and all(s.reachable for s in states)
    assert slow.closed >= 1  # every node is closed by the time the check returns


async def test_a_check_cut_short_still_closes_every_node():
    gate = asyncio.Event()
    quick, slow = Counted("gpu01"), Counted("gpu02", gate)
    check = asyncio.ensure_future(poll_all([quick, slow], poll_deadline(20.0)))
    await until(lambda: quick.closed, 10, "the node that answered to be closed")
    check.cancel()
    await asyncio.gather(check, return_exceptions=True)
    assert check.cancelled() and quick.closed >= 1 and slow.closed >= 1

"""Rounds of every node polled by one poller process: ``check --watch`` and the autopilot read their rounds so.

The process (``nvls_tui.poller``, the console's own) keeps each node's connection and kernel-log cursor from one
round to the next: a round after the first is a re-poll (no handshake, no sshd started on the node, the kernel log
read from where the last round ended) rather than a fresh ``check``. What a round shows is what a single ``check``
shows: the cluster's views read after the poll and folded in, each node diagnosed.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, TextIO

from nvls_tui.backends.base import Activity
from nvls_tui.headless.check import QUIET_S, ProgressLine, pending_text, read_kube_view, read_scheduler_view
from nvls_tui.model import NodeState
from nvls_tui.model.node import Diagnosis
from nvls_tui.poll.after_poll import AfterPoll
from nvls_tui.poll.once import poll_deadline
from nvls_tui.settings import Settings
from nvls_tui.targets import kube_from_settings, resolve_backends

if TYPE_CHECKING:
    from nvls_tui.poll.client import PollerClient, Rounds


class Remote:
    """A node of the poller process as ``check.pending_text`` reads one: its host and what it waits on."""

    def __init__(self, host: str, activity: Activity | None) -> None:
        self.host = host
        self.activity = activity


def not_read(state: NodeState) -> NodeState:
    """A node this round could not read, as a single ``check`` shows it: unreachable with the reason and
    nothing else (the poller keeps the last state it read, which this round did not see)."""
    return NodeState(host=state.host, reachable=False, simulated=state.simulated, error=state.error)


async def next_round(rounds, client, deadline: float, progress: TextIO) -> list:
    """One round of ``rounds``, saying on ``progress`` which nodes it still waits for, as ``check`` does."""
    started = time.monotonic()
    line = ProgressLine(progress)
    task = asyncio.ensure_future(rounds.next())
    try:
        done, _ = await asyncio.wait({task}, timeout=min(QUIET_S, deadline / 2))
        while not done:
            pending = rounds.pending()
            doing = await client.activities(pending)
            waiting = [Remote(h, doing.get(h)) for h in pending]
            if waiting:
                line.show(pending_text(waiting, len(client.hosts), time.monotonic(), started,
                                       whole_hosts=not line.tty))
            done, _ = await asyncio.wait({task}, timeout=line.every)
        return task.result()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        line.clear()


class PolledRounds:
    """The rounds of one command over one poller process: :meth:`start`, :meth:`next` each round, :meth:`close`.

    Args:
        settings: the command's (its targets already read: the process polls exactly these nodes).
        slurm: the Slurm cluster whose view is folded in (None: none).
        after: what each round is shown through (the cluster's views, the diagnosis); the process carries
            each node across rounds itself.
    """

    def __init__(self, settings: Settings, slurm, after: AfterPoll | None = None) -> None:
        self.settings = settings
        self.slurm = slurm
        self.after = after or AfterPoll()
        self.deadline = poll_deadline(settings.timeout)
        self._backends: list[Any] = []
        self._kube: Any = None
        self._client: PollerClient | None = None
        self._rounds: Rounds | None = None

    async def start(self) -> None:
        """Start the poller process (nothing connects here; a bad kubeconfig is refused before any poll).

        Raises:
            PollerFailed: the process could not start.
        """
        from nvls_tui.poll.client import Rounds
        from nvls_tui.poller.process import poller_client

        self._backends = resolve_backends(self.settings)  # the order, and the nodes kube maps
        self._kube = kube_from_settings(self.settings, self._backends)
        client = self._client = poller_client(self.settings, self._backends, interval=None,
                                              poll_timeout=self.deadline)
        self._rounds = Rounds(client)
        await client.start(self._rounds)

    async def next(self, progress: TextIO) -> list[tuple[NodeState, Diagnosis]]:
        """The next round, as a single ``check`` shows it; ``progress`` hears which nodes it waits for.

        Raises:
            PollerGone: the process ended before every node answered.
        """
        assert self._client is not None and self._rounds is not None, "start() first"
        polled = await next_round(self._rounds, self._client, self.deadline, progress)
        states = [r.state if r.ok else not_read(r.state) for r in polled]
        if self._kube is not None:
            await read_kube_view(self._kube, self.after)
        if self.slurm is not None:
            await read_scheduler_view(self.slurm, self.after, states)
        return self.after.read_round(states, carry=False)

    async def close(self) -> None:
        """End the process and close what was resolved here."""
        if self._client is not None:
            await self._client.close()
        await asyncio.gather(*(b.close() for b in self._backends), return_exceptions=True)


__all__ = ["PolledRounds", "Remote", "next_round", "not_read"]

"""A consumer that stops reading must not make its poller process grow (issue 34, item 8).

A console whose terminal stalled (or whose laptop went to sleep) stops reading its poller process's
pipe while the process keeps polling. The process keeps at most the newest unread poll of each node
(a newer poll replaces it) and holds no more than one batch written ahead, so what it holds is bounded
by the node count however long the stall lasts; when the consumer reads again it gets each node's
newest poll, numbered in order (the client refuses a gap or a reordering).

The stall here is the consumer's whole event loop blocked (as a console stuck writing to a stopped
terminal), poking the nodes between its naps so that the process polls them again and again. The
process's own counts (``wire.Backlog``) say what it held; bench/poller_backlog.py prints the memory.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict

from nvls_tui.poll import wire
from nvls_tui.poll.client import PollerClient
from nvls_tui.poll.poller import NodePoller, PollResult
from nvls_tui.poll.worker import STREAM_AHEAD, STREAM_LINES, PollWorker
from nvls_tui.poller.process import SIM_CMDLOG_KEEP, PollerSpec, build
from nvls_tui.settings import Settings
from tests.waiting import scaled

NODES = 64
TARGET = f"sim:fleet-256/gpu[001-{NODES:03d}]"
ROUNDS = 4  # polls of every node, at least, while the consumer reads nothing


class Collected:
    """Every poll the client hands on, per node, in the order it came."""

    def __init__(self) -> None:
        self.by_host: dict[str, list[PollResult]] = defaultdict(list)

    def __call__(self, results: list[PollResult]) -> None:
        for result in results:
            self.by_host[result.state.host].append(result)


def stall(client: PollerClient, pokes: int) -> None:
    """Block the consumer's loop (nothing is read), asking for a poll of every node now and then.

    A poke is written straight into the pipe (the transport's buffer is empty), so it reaches the
    process while this loop reads nothing.
    """
    for _ in range(pokes):
        client.poke()
        time.sleep(0.1)


async def settled(client: PollerClient, deadline: float):
    """The process's backlog once no poll runs and everything it held was written to the pipe: every
    poll it made was read by the consumer before this answer (the pipe keeps order)."""
    while time.monotonic() < deadline:
        if not await client.activities():
            backlog = await client.backlog()
            if backlog.queued == 0 and backlog.writing == 0:
                return backlog
        await asyncio.sleep(0.05)
    raise AssertionError("the poller process never caught up after the consumer read again")


async def test_a_consumer_that_stops_reading_leaves_at_most_the_newest_poll_of_each_node_queued():
    client = PollerClient(PollerSpec(Settings(command="console", targets=(TARGET,)), interval=None,
                                     poll_timeout=30.0))
    got = Collected()
    await client.start(got)
    deadline = time.monotonic() + scaled(120)
    try:
        assert len(client.hosts) == NODES
        # Stalled from the first round on: its full states overfill the pipe, so the process must hold
        # the rest itself. A slow machine polls less in a nap: stall again until enough polls came.
        pokes = 20
        while True:
            before = (await client.backlog()).polls
            stall(client, pokes)
            after = await settled(client, deadline)
            if after.polls - before >= ROUNDS * NODES:
                break
            assert time.monotonic() < deadline, f"only {after.polls - before} polls during the stall"
            pokes *= 2
        assert after.peak_buffered > 0  # the pipe was full: the process held bytes of its own
        assert after.peak_queued <= NODES, after  # at most one unread poll per node, never a queue
        assert after.peak_writing <= NODES, after  # one batch written ahead at most
        assert after.coalesced > 0  # polls the consumer never read were replaced, not kept
        for host in client.hosts:
            # Read again, the consumer has each node's newest poll (and every update came in order:
            # resolve() would have refused a gap and ended the process).
            assert got.by_host[host][-1].state.polled_at == after.newest[host], host
        assert client.alive
    finally:
        await client.close()


class EndlessOutput:
    """A node held by the poller process whose streamed command prints ``lines`` lines of 1 KB."""

    simulated = True
    last_exit_status = 0

    def __init__(self, lines: int) -> None:
        self.lines = lines
        self.printed = 0

    async def stream(self, argv, **kwargs):
        for n in range(self.lines):
            await asyncio.sleep(0)  # a command's output comes over time, not in one go
            self.printed += 1
            yield f"{n:09d} " + "x" * 990


async def test_a_stream_nobody_reads_holds_its_command_not_its_output_in_the_process():
    node = EndlessOutput(20_000)  # 20 MB of output
    worker = PollWorker({}, {"gpu01": node})
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    reader, writer = await wire.open_pipes(to_worker_r, from_worker_w)
    serving = asyncio.create_task(worker.serve(reader, writer))
    try:
        os.write(to_worker_w, wire.encode(wire.OpenStream(1, "gpu01", ("all_reduce_perf",))))
        # Nobody reads from_worker_r: the command must come to a stop, its output not piling up here.
        still, last = 0, -1
        while still < 50:
            assert not serving.done() and node.printed < node.lines, (
                f"the whole output was taken in: {worker.backlog().buffered} bytes held")
            still = still + 1 if node.printed == last else 0
            last = node.printed
            await asyncio.sleep(0)
        message = len(wire.encode(wire.Lines(1, ("x" * 1000,) * STREAM_LINES)))
        assert worker.backlog().buffered <= STREAM_AHEAD + message
        # Read again: every line arrives, in order, and the stream ends.
        console = asyncio.StreamReader(limit=wire.MAX_MESSAGE)
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(console), os.fdopen(from_worker_r, "rb", 0))
        from_worker_r = -1
        received: list[str] = []
        while True:
            got = await asyncio.wait_for(wire.receive(console), scaled(60))
            if isinstance(got, wire.Lines):
                received.extend(got.lines)
            elif isinstance(got, wire.StreamEnd):
                break
        assert len(received) == node.lines and received[-1].startswith(f"{node.lines - 1:09d} ")
        assert [int(line[:9]) for line in received] == list(range(node.lines))
    finally:
        os.write(to_worker_w, wire.encode(wire.Stop()))
        await asyncio.wait_for(serving, scaled(30))
        os.close(to_worker_w)
        if from_worker_r >= 0:
            os.close(from_worker_r)


async def test_the_simulated_nodes_of_the_poller_process_keep_a_bounded_command_log():
    # The simulator logs every command a node ran (tests read what a run did); in the poller process
    # nothing reads it, and at sim:fleet-256 polled every 5 s it grew the process 0.28 MB/s for ever.
    spec = PollerSpec(Settings(command="console", targets=("sim:fleet-256/gpu[001-002]",)), None, 30.0)
    backends = build(spec)
    pollers = [NodePoller(b, interval=None, timeout=30.0) for b in backends]
    for _ in range(100):  # ~1,500 commands a node
        mark = backends[0].fleet.clock.now()
        await asyncio.gather(*(p.poll_once() for p in pollers))
    for backend in backends:
        log = backend.node.cmdlog
        assert len(log) <= 2 * SIM_CMDLOG_KEEP, len(log)
        assert log[-1][0] >= mark  # the newest commands are the ones kept

"""The poller process's side: every node's :class:`NodePoller`, off the console's event loop.

:class:`PollWorker` runs one poll loop per node, as the console did in its own loop before, and
sends what they read over a pipe (``nvls_tui.poll.wire``): a batch at most every ``BATCH_SECONDS``,
each node's updates numbered, and a node that read the same as last time (but for its clock and
the like) as the fields that moved alone. What waits for a console that reads slowly or not at all
is bounded by the node count: each node's newest unsent poll (it replaces an older one), one batch
written ahead, and a stream's command held once ``STREAM_AHEAD`` bytes of its lines wait. It answers the console's requests: poll now, hold a
node's polls (acknowledged once no poll of it runs), and, for nodes whose simulator lives here,
an action's commands (the console's session audits them first: this is only the transport).

Nothing here builds a backend: the entry point (``nvls_tui.poller.process``) builds them from the
console's settings and hands them in. It ends when the console says so or its pipe ends (the console
is gone, however it went).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

from nvls_tui.model import NodeState
from nvls_tui.poll import wire
from nvls_tui.poll.poller import NodePoller, PollResult

# What a Call may ask of a node held here (the session has audited it in the console).
OPS = ("run", "deliver", "read_probe", "snapshot")
STATE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeState))
MAX_DIFF_FIELDS = 6
# A stream's lines go out in messages of at most this many, and its command waits while this many
# bytes are written ahead of a console that does not read them.
STREAM_LINES = 1000
STREAM_AHEAD = 1 << 20


def state_changes(last: NodeState, new: NodeState) -> dict[str, Any]:
    """The fields of ``new`` that differ from ``last`` (``last.replace(**changes) == new``)."""
    return {name: getattr(new, name) for name in STATE_FIELDS if getattr(new, name) != getattr(last, name)}


class UpdateEncoder:
    """Numbers each node's polls and sends an unchanged node's moved fields alone."""

    def __init__(self) -> None:
        self.seq: dict[str, int] = {}
        self.last: dict[str, PollResult] = {}

    def encode(self, result: PollResult) -> wire.Update:
        """The update for ``result``, the next of its node."""
        host = result.state.host
        seq = self.seq[host] = self.seq.get(host, 0) + 1
        last = self.last.get(host)
        self.last[host] = result
        if last is not None and last.diagnosis == result.diagnosis:
            changes = state_changes(last.state, result.state)
            # A diff where a few fields moved (the clock, the uptime, when it was read); a poll that
            # moved many travels whole: a diff would be no smaller.
            if len(changes) <= MAX_DIFF_FIELDS:
                return wire.Update(host, seq, None, changes, result.ok)
        return wire.Update(host, seq, result, None, result.ok)


class PollWorker:
    """Polls every node and serves the console's requests over a pipe.

    Args:
        pollers: one per node, in the console's order.
        nodes: the backends of nodes whose actions run here (simulated ones), by host.
    """

    def __init__(self, pollers: Mapping[str, NodePoller], nodes: Mapping[str, Any] | None = None) -> None:
        self.pollers = dict(pollers)
        self.nodes = dict(nodes or {})
        self.encoder = UpdateEncoder()
        self._pending: dict[str, PollResult] = {}  # each node's newest poll not sent yet
        self._have = asyncio.Event()
        self._resume: dict[int, asyncio.Event] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self.polls = 0
        self.coalesced = 0
        self.peak_queued = 0
        self._writing = 0
        self.peak_writing = 0
        self.peak_buffered = 0
        self._newest: dict[str, float | None] = dict.fromkeys(self.pollers)

    def send(self, message: object) -> None:
        """Write one message now (replies and acknowledgements do not wait for a batch)."""
        assert self._writer is not None
        self._writer.write(wire.encode(message))
        self.peak_buffered = max(self.peak_buffered, self._buffered())

    async def _room(self) -> None:
        """Wait while more than :data:`STREAM_AHEAD` bytes wait for the pipe: a console that reads
        nothing holds a stream's command where it is, not its output in this process's memory."""
        if self._writer is not None and self._buffered() > STREAM_AHEAD:
            await self._writer.drain()

    def _buffered(self) -> int:
        """Bytes written that the pipe has not taken yet."""
        transport = self._writer.transport if self._writer is not None else None
        return transport.get_write_buffer_size() if transport is not None else 0

    def post(self, result: PollResult) -> None:
        """Hold one poll for the next batch, in place of its node's older poll not sent yet.

        A console that stops reading (a stalled terminal, a laptop asleep) blocks the batches
        (``_send_batches`` waits for the pipe), not the polls: each node's unsent poll is replaced by its
        newer one, so what waits here is at most one poll per node however long the stall lasts. Each
        poll's state is whole (the kernel lines kept since the boot, not those new since the last poll),
        so the newest says all an older one did. It is numbered and diffed when it is sent, against the
        last one sent: the console sees no gap in the numbers.
        """
        host = result.state.host
        self.polls += 1
        self._newest[host] = result.state.polled_at
        if self._pending.pop(host, None) is not None:
            self.coalesced += 1
        self._pending[host] = result  # at the end: a batch lists its polls in the order they finished
        self.peak_queued = max(self.peak_queued, len(self._pending))
        self._have.set()

    def backlog(self) -> wire.Backlog:
        """What this process holds for the console now (``wire.AskBacklog``)."""
        return wire.Backlog(queued=len(self._pending), peak_queued=self.peak_queued, writing=self._writing,
                            peak_writing=self.peak_writing, buffered=self._buffered(),
                            peak_buffered=self.peak_buffered, polls=self.polls, coalesced=self.coalesced,
                            newest=dict(self._newest))

    async def _flush(self) -> None:
        """Send a batch at most every BATCH_SECONDS (the console folds and draws once per batch).

        Returns when the console is gone; any other failure is raised, and ends the process (serve):
        a poller that polls and cannot tell the console would leave old states looking current.
        """
        assert self._writer is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self._send_batches()

    async def _send_batches(self) -> None:
        assert self._writer is not None
        while True:
            await self._have.wait()
            await asyncio.sleep(wire.BATCH_SECONDS)
            pending, self._pending = self._pending, {}
            self._have.clear()
            batch = [self.encoder.encode(result) for result in pending.values()]
            # In frames of at most FRAME_UPDATES: the console reads one frame in one go, and a first
            # round of 1,024 full states in one frame held its keys for half a second.
            for start in range(0, len(batch), wire.FRAME_UPDATES):
                self.send(wire.Polled(tuple(batch[start:start + wire.FRAME_UPDATES])))
            self._writing = len(batch)
            self.peak_writing = max(self.peak_writing, self._writing)
            await self._writer.drain()  # a console that reads slowly slows the batches, not the polls
            self._writing = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Poll until the console says stop or its pipe ends."""
        import os

        self._writer = writer
        self.send(wire.Hello(tuple(self.pollers), os.getpid()))
        loops = [asyncio.create_task(p.run(self.post), name=f"poll {h}") for h, p in self.pollers.items()]
        flusher = asyncio.create_task(self._flush(), name="flush")
        reading = asyncio.create_task(self._read(reader), name="requests")
        try:
            done, _ = await asyncio.wait({reading, flusher}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # a failure ends the process, its traceback on stderr: the console says why
        finally:
            for task in [*loops, flusher, reading, *self._tasks.values()]:
                task.cancel()
            await asyncio.gather(*loops, flusher, reading, *self._tasks.values(), return_exceptions=True)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        """Act on the console's requests until it says stop or its pipe ends."""
        while True:
            message = await wire.receive(reader)
            if message is None or isinstance(message, wire.Stop):
                return
            self.dispatch(message)

    def dispatch(self, message: object) -> None:
        """Act on one request of the console."""
        if isinstance(message, wire.Poke):
            for host, poller in self.pollers.items():
                if message.host is None or host == message.host:
                    poller.poke()
        elif isinstance(message, wire.Pause):
            self._resume[message.token] = asyncio.Event()
            self._start(message.token, self._hold(message))
        elif isinstance(message, wire.Resume):
            event = self._resume.get(message.token)
            if event is not None:
                event.set()
        elif isinstance(message, wire.Call):
            self._start(message.id, self._call(message))
        elif isinstance(message, wire.OpenStream):
            self._start(message.id, self._stream(message))
        elif isinstance(message, wire.AskActivity):
            self.send(wire.Reply(message.id, self.activities(message.hosts)))
        elif isinstance(message, wire.AskBacklog):
            self.send(wire.Reply(message.id, self.backlog()))
        elif isinstance(message, wire.Cancel):
            task = self._tasks.get(message.id)
            if task is not None:
                task.cancel()

    def activities(self, hosts: tuple[str, ...] | None) -> dict[str, Any]:
        """What each of ``hosts`` (None: every node) whose poll runs now waits on (its transport's
        ``activity``: the command, or a step such as connecting; None where it says nothing)."""
        return {host: getattr(poller.backend, "activity", None) for host, poller in self.pollers.items()
                if poller.busy and (hosts is None or host in hosts)}

    def _start(self, key: int, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks[key] = task
        task.add_done_callback(lambda _: self._tasks.pop(key, None))

    async def _hold(self, message: wire.Pause) -> None:
        """Hold ``message.host``'s polls from the acknowledgement until the console resumes them."""
        event = self._resume[message.token]
        poller = self.pollers.get(message.host)
        try:
            if poller is None:  # not a node of this poller: nothing of it polls here
                self.send(wire.Paused(message.token))
                return
            async with poller.paused():
                self.send(wire.Paused(message.token))
                await event.wait()
        finally:
            self._resume.pop(message.token, None)

    def _clock(self, host: str, offset: float) -> float:
        """Move the node's simulated clock to at least the console's (a frozen clock the runbook moved)."""
        clock = getattr(getattr(self.nodes.get(host), "fleet", None), "clock", None)
        if clock is None:
            return 0.0
        clock.offset = max(clock.offset, offset)
        return float(clock.offset)

    async def _call(self, message: wire.Call) -> None:
        backend = self.nodes.get(message.host)
        self._clock(message.host, message.clock_offset)
        try:
            if backend is None or message.op not in OPS:
                raise LookupError(f"{message.host}: no {message.op!r} here (not a node of the poller process)")
            if message.op == "run":
                value = await backend.run(*message.args, **message.kwargs)
            elif message.op == "deliver":
                value = await backend._deliver(*message.args)  # noqa: SLF001 - the console's signal() checked first
            elif message.op == "snapshot":  # the runbook's own reads: through this node's poll state, as in process
                value = await backend.snapshot()
            else:
                value = await backend.read_probe()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the console raises it where the action waits
            self.send(wire.Reply(message.id, error=wire.error_for_wire(exc),
                                 clock_offset=self._clock(message.host, 0.0)))
            return
        self.send(wire.Reply(message.id, value, clock_offset=self._clock(message.host, 0.0)))

    async def _stream(self, message: wire.OpenStream) -> None:
        backend = self.nodes.get(message.host)
        self._clock(message.host, message.clock_offset)
        lines: list[str] = []
        loop = asyncio.get_running_loop()

        def flush() -> None:
            if lines:
                self.send(wire.Lines(message.id, tuple(lines)))
                lines.clear()

        try:
            if backend is None:
                raise LookupError(f"{message.host}: not a node of the poller process")
            generator = backend.stream(message.argv, **message.kwargs)
            try:
                async for line in generator:
                    if not lines:
                        loop.call_soon(flush)  # the lines that came without a wait travel together
                    lines.append(line)
                    if len(lines) >= STREAM_LINES or self._buffered() > STREAM_AHEAD:
                        flush()
                        await self._room()
            finally:
                await generator.aclose()  # a cancelled stream ends its command (a smoke test's process)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - raised where the console reads the stream
            flush()
            self.send(wire.StreamEnd(message.id, None, wire.error_for_wire(exc), self._clock(message.host, 0.0)))
            return
        flush()
        self.send(wire.StreamEnd(message.id, getattr(backend, "last_exit_status", None),
                                 clock_offset=self._clock(message.host, 0.0)))


__all__ = ["OPS", "PollWorker", "UpdateEncoder", "state_changes"]

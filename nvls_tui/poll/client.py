"""The console's side of its poller process: start it, own it, hear its polls, ask it things.

:class:`PollerClient` starts ``python -m <module>`` (``nvls_tui.poller``) with two private
pipes, hands it the spec of what to poll, and from then on turns its batches back into
``PollResult`` s, in order, checking each node's sequence numbers. It asks the process to poll a node
now, to hold a node's polls (``paused``: the action starts only after the process acknowledged that
no poll of that node runs), and to run an action's commands on nodes whose simulator lives there.

The process never outlives the console: it reads the console's pipe and ends at its end (the console
quit, crashed, or was killed, even with SIGKILL), and on Linux it also asks the kernel to end it when
its parent dies (``PR_SET_PDEATHSIG``). What cannot be asked of a process that is gone refuses
(:class:`PollerGone`): an action whose polls cannot be held does not start.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import IO, Any

from nvls_tui.poll import wire
from nvls_tui.poll.poller import PollResult
from nvls_tui.textsafe import one_line

DEFAULT_MODULE = "nvls_tui.poller"
START_TIMEOUT = 60.0  # seconds for the process to import, build its nodes and say Hello (a loaded machine)
STOP_TIMEOUT = 3.0
REASON_CHARS = 200


class PollerGone(ConnectionError):
    """The poller process is not running (never started, or ended): ``str()`` says why."""


class PollerFailed(PollerGone):
    """The poller process could not start (its own one line, or how it ended)."""


class PollerClient:
    """Starts and owns one poller process.

    Args:
        spec: what the process polls (pickled to it; ``nvls_tui.poller.process.PollerSpec``).
        module: the module the process runs (``python -m``).
        python: the interpreter.
        expect: the nodes the consumer shows, in order; a process that polls others is refused.

    Attributes:
        pid: the process's id once started.
        hosts: its nodes, in order (from its Hello).
        polls: updates received (every node's polls, counted once each).
        reason: why it ended (None while it runs).
    """

    def __init__(self, spec: object, *, module: str = DEFAULT_MODULE, python: str = sys.executable,
                 expect: Sequence[str] | None = None) -> None:
        self.spec = spec
        self.expect = tuple(expect) if expect is not None else None
        self.module = module
        self.python = python
        self.pid: int | None = None
        self.hosts: tuple[str, ...] = ()
        self.polls = 0
        self.reason: str | None = None
        self.seq: dict[str, int] = {}
        self.last: dict[str, PollResult] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._streams: dict[int, asyncio.Queue[object]] = {}
        self._closing = False

    @property
    def stopped(self) -> bool:
        """True once the console asked the process to end (``close``)."""
        return self._closing

    @property
    def alive(self) -> bool:
        """True while the process runs and its pipe is open."""
        return self._writer is not None and self.reason is None

    def _spawn(self) -> tuple[int, int]:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent.parent)  # the checkout or site-packages holding nvls_tui
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                [self.python, "-m", self.module, str(to_child_r), str(from_child_w), str(os.getpid())],
                pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self._stderr, env=env, close_fds=True,
                # A session of its own: the terminal's Ctrl-C and hang-up go to the console, which decides;
                # the process ends by its own means (the pipe's end, the parent-death signal), never by luck.
                start_new_session=True)
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.pid = self._proc.pid
        return from_child_r, to_child_w

    async def start(self, on_results: Callable[[list[PollResult]], None]) -> tuple[str, ...]:
        """Start the process and wait for its Hello; from then on ``on_results`` gets each batch.

        Raises:
            PollerFailed: it could not start (its own line, or how it ended).
        """
        try:
            read_fd, write_fd = self._spawn()
            reader, self._writer = await wire.open_pipes(read_fd, write_fd)
            self._send(self.spec)
        except Exception as exc:  # noqa: BLE001 - no interpreter, no pipe, a spec that cannot travel: one line
            await self._ended(f"the poller process did not start: {one_line(str(exc) or type(exc).__name__)}")
            raise PollerFailed(self.reason or "the poller process did not start") from None
        try:
            async with asyncio.timeout(START_TIMEOUT):
                hello = await wire.receive(reader)
        except (TimeoutError, wire.WireError, EOFError, OSError) as exc:
            await self._ended(f"the poller process did not start: {exc or type(exc).__name__}")
            raise PollerFailed(self.reason or "the poller process did not start") from None
        if isinstance(hello, wire.Failed):
            await self._ended(hello.error)
            raise PollerFailed(hello.error)
        if not isinstance(hello, wire.Hello):
            await self._ended(None)
            raise PollerFailed(self.reason or "the poller process did not start")
        if self.expect is not None and hello.hosts != self.expect:
            # Fail closed: states of other nodes (or in another order) must never be shown as these.
            with contextlib.suppress(PollerGone, OSError):
                self._send(wire.Stop())
            await self._ended("the poller process polls other nodes than the console shows")
            raise PollerFailed(self.reason or "")
        self.hosts = hello.hosts
        self._reader_task = asyncio.create_task(self._read(reader, on_results), name="poller process")
        return self.hosts

    async def wait_closed(self) -> str:
        """Wait until the process has ended; why it did."""
        if self._reader_task is not None:
            await asyncio.wait({self._reader_task})  # not gather: a cancelled waiter must not cancel the reader
        return self.reason or "the poller process ended"

    def _send(self, message: object) -> None:
        if self._writer is None or self._writer.is_closing():
            raise PollerGone(self.reason or "the poller process is not running")
        self._writer.write(wire.encode(message))

    def resolve(self, update: wire.Update) -> PollResult:
        """The poll an update stands for (an unchanged node's is its last poll with the moved fields).

        Raises:
            WireError: an update out of its node's order, or a diff with nothing before it.
        """
        expected = self.seq.get(update.host, 0) + 1
        if update.seq != expected:
            raise wire.WireError(f"{update.host}: poll {update.seq} came after poll {expected - 1}")
        self.seq[update.host] = update.seq
        if update.result is not None:
            result = update.result
        else:
            last = self.last.get(update.host)
            if last is None:
                raise wire.WireError(f"{update.host}: a change came before any poll")
            result = PollResult(last.state.replace(**(update.changes or {})), last.diagnosis, update.ok)
        self.last[update.host] = result
        return result

    async def _read(self, reader: asyncio.StreamReader, on_results: Callable[[list[PollResult]], None]) -> None:
        reason = None
        try:
            while True:
                message = await wire.receive(reader)
                if message is None:
                    break
                self._dispatch(message, on_results)
                await asyncio.sleep(0)  # a read from a full buffer does not yield: let keys in between frames
        except Exception as exc:  # noqa: BLE001 - whatever broke, the console hears the poller is gone
            reason = f"the poller process's pipe broke: {one_line(str(exc) or type(exc).__name__, REASON_CHARS)}"
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()  # out of step with it: nothing it sends can be trusted any more
        await self._ended(reason)

    def _dispatch(self, message: object, on_results: Callable[[list[PollResult]], None]) -> None:
        if isinstance(message, wire.Polled):
            results = [self.resolve(u) for u in message.updates]
            self.polls += len(results)
            on_results(results)
        elif isinstance(message, wire.Paused | wire.Reply):
            future = self._waiting.pop(message.token if isinstance(message, wire.Paused) else message.id, None)
            if future is not None and not future.done():
                future.set_result(message)
        elif isinstance(message, wire.Lines | wire.StreamEnd):
            queue = self._streams.get(message.id)
            if queue is not None:
                queue.put_nowait(message)

    async def _ended(self, reason: str | None) -> None:
        """The pipe ended: reap the process, say why, and fail whatever still waited on it."""
        if self._writer is not None:
            self._writer.close()
        status = await self._reap(STOP_TIMEOUT if self._closing else 1.0)
        if reason is None:
            if self._closing:
                reason = "the poller process was stopped"
            else:
                tail = self._stderr_tail()
                reason = f"the poller process ended (exit status {status})" + (f": {tail}" if tail else "")
        self.reason = reason
        gone = PollerGone(reason)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(gone)
        self._waiting.clear()
        for queue in self._streams.values():
            queue.put_nowait(gone)

    async def _reap(self, timeout: float) -> int | None:
        """Wait (bounded) for the process to exit; kill it if it does not."""
        proc = self._proc
        if proc is None:
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while proc.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)
        return proc.returncode

    def _stderr_tail(self) -> str:
        """The last line the process wrote to stderr (a traceback's last line says what broke)."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            lines = [line for line in self._stderr.read().decode("utf-8", "replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return one_line(lines[-1], REASON_CHARS) if lines else ""

    async def close(self) -> None:
        """End the process (Stop, then the pipe closes; killed if it lingers) and wait for it."""
        self._closing = True
        if self.alive:
            with contextlib.suppress(PollerGone, OSError):
                self._send(wire.Stop())
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None and not self._reader_task.done():
            await asyncio.wait({self._reader_task}, timeout=STOP_TIMEOUT)
        await self._reap(STOP_TIMEOUT)  # ended by now, or killed
        if self.reason is None:
            self.reason = "the poller process was stopped"
        if self._stderr is not None:
            self._stderr.close()

    # ---- requests -----------------------------------------------------------------------------
    def poke(self, host: str | None = None) -> None:
        """Poll ``host`` (every node: None) now; nothing when the process is gone."""
        if self.alive:
            with contextlib.suppress(PollerGone, OSError):
                self._send(wire.Poke(host))

    def _request(self) -> tuple[int, asyncio.Future[Any]]:
        if not self.alive:
            raise PollerGone(self.reason or "the poller process is not running")
        number = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[number] = future
        return number, future

    @contextlib.asynccontextmanager
    async def paused(self, host: str) -> AsyncIterator[None]:
        """Hold every poll of ``host`` for the duration; entered only once the process acknowledged.

        Raises:
            PollerGone: the process is not running, or ended before it acknowledged: the polls
                cannot be known to be held, so the caller must not act.
        """
        token, future = self._request()
        self._send(wire.Pause(host, token))
        try:
            await future
        except asyncio.CancelledError:
            self._resume(token)
            raise
        try:
            yield
        finally:
            self._resume(token)

    def _resume(self, token: int) -> None:
        """End hold ``token`` (nothing when the process is gone: nothing polls then)."""
        self._waiting.pop(token, None)
        if self.alive:
            with contextlib.suppress(PollerGone, OSError):
                self._send(wire.Resume(token))

    async def call(self, host: str, op: str, *args: Any, clock: Any = None, **kwargs: Any) -> Any:
        """Run ``op`` on ``host`` in the process and return its value (or raise its error).

        ``clock``: the node's simulated clock here; it and the process's move to the later of the two.
        """
        number, future = self._request()
        self._send(wire.Call(number, host, op, args, kwargs, clock.offset if clock is not None else 0.0))
        try:
            reply: wire.Reply = await future
        except asyncio.CancelledError:
            self._cancel(number)
            raise
        if clock is not None:
            clock.offset = max(clock.offset, reply.clock_offset)
        if reply.error is not None:
            raise reply.error
        return reply.value

    async def activities(self, hosts: Sequence[str] | None = None) -> dict[str, Any]:
        """What each node of ``hosts`` (None: every node) whose poll runs now waits on, by host
        (``poll.transport.Activity`` or None). Its ``since`` is ``time.monotonic()`` in the process,
        which on Linux is the same clock as this one's (CLOCK_MONOTONIC is system-wide).

        Raises:
            PollerGone: the process is not running.
        """
        number, future = self._request()
        self._send(wire.AskActivity(number, tuple(hosts) if hosts is not None else None))
        try:
            reply: wire.Reply = await future
        except asyncio.CancelledError:
            self._waiting.pop(number, None)
            raise
        return dict(reply.value or {})

    async def backlog(self) -> wire.Backlog:
        """What the process holds for this console and has not handed over yet (``wire.Backlog``).

        Raises:
            PollerGone: the process is not running.
        """
        number, future = self._request()
        self._send(wire.AskBacklog(number))
        try:
            reply: wire.Reply = await future
        except asyncio.CancelledError:
            self._waiting.pop(number, None)
            raise
        assert isinstance(reply.value, wire.Backlog)
        return reply.value

    def _cancel(self, number: int) -> None:
        self._waiting.pop(number, None)
        if self.alive:
            with contextlib.suppress(PollerGone, OSError):
                self._send(wire.Cancel(number))

    async def stream(self, host: str, argv: Sequence[str], *, clock: Any = None,
                     on_end: Callable[[int | None], None] | None = None,
                     **kwargs: Any) -> AsyncGenerator[str, None]:
        """Yield a command's output lines as the process sends them; ``on_end(exit status)`` at its end.

        Closing the generator (or cancelling its reader) stops the command in the process.
        """
        if not self.alive:
            raise PollerGone(self.reason or "the poller process is not running")
        number = next(self._ids)
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._streams[number] = queue
        self._send(wire.OpenStream(number, host, tuple(argv), kwargs, clock.offset if clock is not None else 0.0))
        ended = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, wire.Lines):
                    for line in item.lines:
                        yield line
                    continue
                if isinstance(item, BaseException):
                    ended = True
                    raise item
                assert isinstance(item, wire.StreamEnd)
                ended = True
                if clock is not None:
                    clock.offset = max(clock.offset, item.clock_offset)
                if item.error is not None:
                    raise item.error
                if on_end is not None:
                    on_end(item.exit_status)
                return
        finally:
            self._streams.pop(number, None)
            if not ended:
                self._cancel(number)

    def peak_rss_mb(self) -> float | None:
        """The process's peak resident memory (VmHWM), in MB; None when it cannot be read."""
        if self.pid is None:
            return None
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            return None
        return None


class Rounds:
    """A consumer that reads the fleet in rounds (``check --watch``, an exporter's scrape), not as a stream.

    Hand it to :meth:`PollerClient.start` as the callback; :meth:`next` pokes every node and returns
    once each has answered after the poke. With ``PollerSpec(interval=None)`` the process polls each
    node once at the start and then only when poked, so a round is exactly one poll of every node, over
    the connections (and the kernel-log cursors) the process kept from the round before.
    """

    def __init__(self, client: PollerClient) -> None:
        self.client = client
        self.latest: dict[str, PollResult] = {}
        self._count: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._first = True
        self._marks: dict[str, int] = {}

    def __call__(self, results: list[PollResult]) -> None:
        for result in results:
            host = result.state.host
            self.latest[host] = result
            self._count[host] = self._count.get(host, 0) + 1
        self._changed.set()

    async def next(self) -> list[PollResult]:
        """The next round: every node's poll, in the process's node order.

        Raises:
            PollerGone: the process ended before every node answered.
        """
        marks = {h: self._count.get(h, 0) for h in self.client.hosts}
        if self._first:
            marks = dict.fromkeys(self.client.hosts, 0)  # the first polls run by themselves at the start
        else:
            self.client.poke()
        self._first = False
        self._marks = marks
        while self.pending():
            if not self.client.alive:
                raise PollerGone(self.client.reason or "the poller process is not running")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):  # wakes to see a process that ended
                    await self._changed.wait()
        return [self.latest[h] for h in self.client.hosts]

    def pending(self) -> list[str]:
        """The nodes the round in progress still waits for, in the process's node order."""
        return [h for h, n in self._marks.items() if self._count.get(h, 0) <= n]


__all__ = ["DEFAULT_MODULE", "PollerClient", "PollerFailed", "PollerGone", "Rounds"]

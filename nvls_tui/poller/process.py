"""The console's poller process: ``python -m nvls_tui.poller READ_FD WRITE_FD PARENT_PID``.

The console (``NvlsApp.from_settings``) starts it with :func:`console_poller`; it reads a
:class:`PollerSpec` from its pipe, builds the nodes from the console's own ``Settings`` (the same
targets, SSH options and host-key checks: it holds its own SSH connections), and polls them with
``poll.worker.PollWorker``. Simulated nodes live here only: the console's backends for them send an
action's commands here (``backends.via_poller``), so the node the polls read is the node the action
changed. SSH, local and replayed nodes keep their actions in the console, on its own connections:
an action streams its output to the console's panes, and a second hop would only add a failure mode.

It ends with the console, whatever way the console ends: at the end of its pipe (quit, crash,
SIGTERM, SIGHUP, SIGKILL of the console all close it), and on Linux through ``PR_SET_PDEATHSIG``.
It ignores SIGINT: a Ctrl-C to the terminal's process group is the console's to act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.backends.base import Backend
from nvls_tui.poll import wire
from nvls_tui.poll.client import PollerClient
from nvls_tui.poll.poller import NodePoller
from nvls_tui.poll.worker import PollWorker
from nvls_tui.settings import Settings
from nvls_tui.textsafe import one_line

PR_SET_PDEATHSIG = 1
NICENESS = 5
# The process's stderr is a file the console holds (it quotes the last line when the process ends): a
# node that makes something log at every poll must not fill the bastion's disk over a week-long console.
STDERR_CAP = 1 << 20  # bytes: past this the file is cut to its newest STDERR_KEEP bytes
STDERR_KEEP = 256 << 10
STDERR_CHECK_S = 1.0  # how often writes that bypass sys.stderr (a C library's, faulthandler's) are caught
# The simulator logs every command a node runs (tests read what a run did); here nothing reads it, and
# kept whole it grew the process 0.28 MB/s at sim:fleet-256 polled every 5 s. About a poll's are kept.
SIM_CMDLOG_KEEP = 16


@dataclass(frozen=True, slots=True)
class PollerSpec:
    """What the poller process polls, as the console would.

    Attributes:
        settings: the console's settings (targets, SSH options, timeouts); never a ``connect`` hook.
        interval: seconds between polls of a node (None: once, then when poked).
        poll_timeout: seconds a whole poll may take.
        clocks: the console's simulated clock of each simulated node (``SimClock.to_dict``), so both
            processes read the same simulated time.
    """

    settings: Settings
    interval: float | None
    poll_timeout: float
    clocks: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def die_with_parent(parent: int) -> None:
    """Ask Linux to send SIGTERM when the parent dies; end now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the console died before the request took: nothing to poll for
        os._exit(0)


def trim_file(fd: int, cap: int = STDERR_CAP, keep: int = STDERR_KEEP) -> int:
    """Cut the file open at ``fd`` to its newest ``keep`` bytes (from a line's start) once it is over
    ``cap``, with a line that says how much was dropped; the offset ends at its new end.

    The newest lines are the ones kept: the console quotes the last line (a traceback's) when the
    process ends. Returns the bytes dropped (0: under the cap, or not a file that can be cut).
    """
    try:
        size = os.fstat(fd).st_size
        if size <= cap:
            return 0
        tail = os.pread(fd, keep, size - keep)
        start = tail.find(b"\n") + 1  # a whole first line, where there is one
        tail = tail[start:] if 0 < start < len(tail) else tail
        dropped = size - len(tail)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"[nvls-tui poller: {dropped} earlier bytes of this log dropped]\n".encode() + tail)
    except OSError:
        return 0  # a pipe or a terminal: nothing grows here
    return dropped


class CappedStderr:
    """``sys.stderr``, cut back with :func:`trim_file` after any write that took the file over the cap."""

    def __init__(self, stream: Any, fd: int = 2) -> None:
        self._stream = stream
        self._fd = fd

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._stream.flush()
        trim_file(self._fd)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def cap_stderr() -> None:
    """Hold this process's stderr to :data:`STDERR_CAP`: Python's writes at once (``sys.stderr``)."""
    if not isinstance(sys.stderr, CappedStderr) and sys.stderr is not None:
        sys.stderr = CappedStderr(sys.stderr)


async def keep_stderr_capped(every: float = STDERR_CHECK_S) -> None:
    """Cut stderr back now and then: what bypasses ``sys.stderr`` (a C library, faulthandler)."""
    while True:
        trim_file(2)
        await asyncio.sleep(every)


def build(spec: PollerSpec) -> list[Backend]:
    """The nodes of ``spec``, their simulated clocks set to the console's, their command logs bounded."""
    from nvls_tui.sim.clock import SimClock
    from nvls_tui.targets import resolve_backends

    backends = resolve_backends(spec.settings)
    for backend in backends:
        clock = spec.clocks.get(backend.host)
        fleet = getattr(backend, "fleet", None)
        if clock is not None and fleet is not None:
            fleet.clock = SimClock.from_dict(dict(clock))
        node = getattr(backend, "node", None) if backend.simulated else None
        if node is not None:
            node.cmdlog_keep = SIM_CMDLOG_KEEP
    return backends


async def serve(read_fd: int, write_fd: int) -> int:
    """Read the spec, build the nodes, poll until the console goes."""
    reader, writer = await wire.open_pipes(read_fd, write_fd)
    spec = await wire.receive(reader)
    if not isinstance(spec, PollerSpec):
        return 2
    try:
        backends = build(spec)
    except Exception as exc:  # noqa: BLE001 - one line for the console, never a traceback
        writer.write(wire.encode(wire.Failed(one_line(str(exc) or type(exc).__name__))))
        with contextlib.suppress(OSError):
            await writer.drain()
        return 2
    pollers = {b.host: NodePoller(b, interval=spec.interval, timeout=spec.poll_timeout) for b in backends}
    capper = asyncio.create_task(keep_stderr_capped(), name="stderr cap")
    try:
        await PollWorker(pollers, {b.host: b for b in backends if b.simulated}).serve(reader, writer)
    finally:
        # All at once and bounded: the console waits for this process when it quits.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2.0):
                await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)
        capper.cancel()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The process's entry point: ``READ_FD WRITE_FD PARENT_PID``."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        read_fd, write_fd, parent = (int(a) for a in args)
    except ValueError:
        print("usage: python -m nvls_tui.poller READ_FD WRITE_FD PARENT_PID (the console starts it)",
              file=sys.stderr)
        return 2
    die_with_parent(parent)
    cap_stderr()
    from nvls_tui.quiet import quiet_asyncssh_imports

    quiet_asyncssh_imports()  # its SSH nodes import asyncssh here too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        # The console's keys come first: on a busy bastion the polls wait a little, the operator does not.
        os.nice(NICENESS)
    os.set_inheritable(read_fd, False)  # a node command run from here must not hold the console's pipes
    os.set_inheritable(write_fd, False)
    try:
        return asyncio.run(serve(read_fd, write_fd))
    except (BrokenPipeError, ConnectionResetError):
        return 0  # the console went while we wrote to it


def console_poller(settings: Settings, backends: Sequence[Backend], *, interval: float | None,
                   poll_timeout: float) -> tuple[list[Backend], PollerClient]:
    """The console's backends (``backends``, built from ``settings``) and the client of its poller
    process (started by the console).

    Simulated nodes become :class:`~nvls_tui.backends.via_poller.PollerHeldBackend` s: their simulator
    runs in the poller process only.
    """
    from nvls_tui.backends.via_poller import PollerHeldBackend

    client = poller_client(settings, backends, interval=interval, poll_timeout=poll_timeout)
    held = client.spec.clocks if isinstance(client.spec, PollerSpec) else {}
    return [PollerHeldBackend(b, client) if b.host in held else b for b in backends], client


def poller_client(settings: Settings, backends: Sequence[Backend], *, interval: float | None,
                  poll_timeout: float) -> PollerClient:
    """A client (not started) of a poller process that polls exactly ``backends``' nodes, in order, as
    ``settings`` reach them; each simulated node's clock set to the one here.

    The console and ``check --watch`` (``interval=None``: a round when poked) both start theirs so.
    """
    from nvls_tui.targets import target_words

    # The words the caller read, not where it read them: a hosts file may be gone, changed or a pipe
    # (``--hosts-file <(...)``) by the time the process starts; it must poll the caller's nodes.
    settings = dataclasses.replace(settings, targets=tuple(target_words(settings)), hosts_file=None, demo=False)
    clocks: dict[str, Any] = {}
    for backend in backends:
        fleet = getattr(backend, "fleet", None)
        if backend.simulated and fleet is not None:
            clocks[backend.host] = fleet.clock.to_dict()
    return PollerClient(PollerSpec(settings, interval, poll_timeout, clocks), expect=tuple(b.host for b in backends))


__all__ = ["SIM_CMDLOG_KEEP", "STDERR_CAP", "CappedStderr", "PollerSpec", "build", "cap_stderr", "keep_stderr_capped", "trim_file", "console_poller", "die_with_parent", "main", "poller_client", "serve"]


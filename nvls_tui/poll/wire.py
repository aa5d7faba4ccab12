"""What the console and its poller process say to each other, and how a message travels.

The poller process (``nvls_tui.poll.worker``) polls every node off the console's event loop and
sends back what changed; the console asks it to poll now, to hold a node's polls while an action
runs (and waits for the acknowledgement), and, for simulated nodes (whose simulator lives in the
poller process), to run an action's commands there. Each message is a frozen dataclass, pickled,
behind a 4-byte length: both ends are this same program, started by the console, over a pipe only
the two of them hold (a pipe is no trust boundary: nothing from elsewhere is ever unpickled).

Node states travel in :class:`Polled` batches (at most one every :data:`BATCH_SECONDS`), each update
numbered per node (:attr:`Update.seq`, from 1) so the console can see that none was lost or reordered.
A batch carries each node's newest poll since the last one: a poll that a newer poll of its node
replaced before it was sent (the console read slowly or not at all) is never sent, nor numbered.
A state whose diagnosis equals the last one sent for its node travels as the few fields that moved
(its clock, when it was read: :attr:`Update.changes`; :attr:`Update.result` None).
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.poll.poller import PollResult

# A batch of node states goes out at most this often: the console folds and draws per batch.
BATCH_SECONDS = 0.1
# Updates per message: the console unpickles and folds one message at a time, between its keys.
FRAME_UPDATES = 64
HEADER = struct.Struct(">I")
# A message larger than this is a bug on the other end (a batch of 1,024 full states is ~6 MB).
MAX_MESSAGE = 256 << 20


class WireError(Exception):
    """The other end sent something that is not a message of this protocol (or ended mid-message)."""


# ---- console -> poller ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Poke:
    """Poll ``host`` now (None: every node)."""

    host: str | None = None


@dataclass(frozen=True, slots=True)
class Pause:
    """Hold every poll of ``host`` (a poll in flight finishes first); answered by :class:`Paused`."""

    host: str
    token: int


@dataclass(frozen=True, slots=True)
class Resume:
    """End the hold :class:`Pause` ``token`` began."""

    token: int


@dataclass(frozen=True, slots=True)
class Call:
    """Run one backend operation of a node held by the poller (a simulated node's action).

    Attributes:
        id: the request's number; the :class:`Reply` carries it.
        host: the node.
        op: ``run``, ``deliver`` or ``read_probe``.
        args, kwargs: the operation's arguments.
        clock_offset: the console's simulated-clock offset (a frozen clock moved by the runbook).
    """

    id: int
    host: str
    op: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    clock_offset: float = 0.0


@dataclass(frozen=True, slots=True)
class OpenStream:
    """Stream a command's lines on a node held by the poller; answered by :class:`Lines` and :class:`StreamEnd`."""

    id: int
    host: str
    argv: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    clock_offset: float = 0.0


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop request ``id`` (a call or a stream): the console stopped waiting for it."""

    id: int


@dataclass(frozen=True, slots=True)
class AskActivity:
    """Say what each node whose poll runs now waits on (``check --watch``'s progress line); answered by
    :class:`Reply` ``id`` whose value is ``{host: Activity or None}``, busy nodes only."""

    id: int
    hosts: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class AskBacklog:
    """Say what the process holds for the console and has not handed over (a consumer that stopped
    reading must not make it grow); answered by :class:`Reply` ``id`` whose value is a :class:`Backlog`."""

    id: int


@dataclass(frozen=True, slots=True)
class Stop:
    """End the poller process (the console is closing)."""


# ---- poller -> console ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Hello:
    """The poller is up: its nodes, in order, and its process id."""

    hosts: tuple[str, ...]
    pid: int


@dataclass(frozen=True, slots=True)
class Failed:
    """The poller could not start (one line, for the operator)."""

    error: str


@dataclass(frozen=True, slots=True)
class Update:
    """One poll of one node.

    Attributes:
        host: the node.
        seq: this node's update number, 1, 2, 3... (a poll replaced before it was sent has none)
        result: the poll; None when only ``changes`` moved since this node's last update.
        changes: with ``result`` None, the state's fields that differ from the last update's (the
            diagnosis is the same).
        ok: the poll read the node.
    """

    host: str
    seq: int
    result: PollResult | None
    changes: dict[str, Any] | None = None
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Polled:
    """Each node's newest poll since the last batch, in the order they finished."""

    updates: tuple[Update, ...]


@dataclass(frozen=True, slots=True)
class Backlog:
    """What the poller process holds for the console, as :class:`AskBacklog` found it.

    Attributes:
        queued: polls waiting for the next batch.
        peak_queued: the most ever waiting at once.
        writing: updates of the batch handed to the pipe that the console has not taken in yet.
        peak_writing: the most ever so.
        buffered: bytes written that the pipe has not taken yet (in the process's own buffer).
        peak_buffered: the most ever so.
        polls: polls finished since the process started.
        coalesced: polls replaced by a newer poll of their node before they were sent.
        newest: each node's newest poll (``polled_at`` of its state; None: not read yet).
    """

    queued: int
    peak_queued: int
    writing: int
    peak_writing: int
    buffered: int
    peak_buffered: int
    polls: int
    coalesced: int
    newest: dict[str, float | None]


@dataclass(frozen=True, slots=True)
class Paused:
    """The hold :class:`Pause` ``token`` asked for is in place: no poll of that node runs until it is resumed."""

    token: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The end of :class:`Call` ``id``: its ``value``, or the ``error`` it raised."""

    id: int
    value: Any = None
    error: BaseException | None = None
    clock_offset: float = 0.0


@dataclass(frozen=True, slots=True)
class Lines:
    """Output lines of stream ``id``."""

    id: int
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """Stream ``id`` ended with ``exit_status`` (None: cut off), or raised ``error``."""

    id: int
    exit_status: int | None
    error: BaseException | None = None
    clock_offset: float = 0.0


def encode(message: object) -> bytes:
    """``message`` framed for the pipe."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def error_for_wire(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a plain ``RuntimeError`` with its words."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception type may refuse to pickle
        return RuntimeError(str(exc) or type(exc).__name__)
    return exc


async def receive(reader: asyncio.StreamReader) -> object | None:
    """The next message, or None at a clean end of the pipe (the other process ended).

    Raises:
        WireError: the pipe ended inside a message, or carried something too large to be one.
    """
    try:
        head = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise WireError("the pipe ended inside a message header") from exc
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes is larger than any this protocol sends")
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise WireError("the pipe ended inside a message") from exc
    return pickle.loads(body)  # noqa: S301 - our own child over a private pipe (module docstring)


async def open_pipes(read_fd: int, write_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Asyncio streams over two pipe file descriptors (one to read, one to write)."""
    import os

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


__all__ = ["BATCH_SECONDS", "FRAME_UPDATES", "AskActivity", "AskBacklog", "Backlog", "Call", "Cancel", "Failed", "Hello", "Lines", "OpenStream", "Pause", "Paused", "Poke",
           "Polled", "Reply", "Resume", "Stop", "StreamEnd", "Update", "WireError", "encode", "error_for_wire",
           "open_pipes", "receive"]

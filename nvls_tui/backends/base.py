"""The one interface every way of reaching a node implements, and the errors it raises.

Backends never touch the UI: they return results or raise the typed errors below, and only screens
or the CLI turn those into words for the operator.
"""

from __future__ import annotations

import abc
import re
import shlex
import signal as _signal
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field

from nvls_tui.model import CommandResult, NodeState
from nvls_tui.poll import fence as fences
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.once import ProbeReading, build_state
from nvls_tui.poll.transport import Activity  # the poll's type: each backend sets it around its steps


class BackendError(Exception):
    """Base of every error a backend raises; ``str()`` is one sentence for the operator."""


class Unreachable(BackendError):
    """The node could not be reached (connection refused, DNS, auth, host key, dropped link)."""


class HostKeyRejected(Unreachable):
    """The node's host key is unknown or differs from known_hosts: never connect anyway."""


class CommandTimeout(BackendError):
    """A command did not finish within its timeout (a wedged nvidia-smi, a hung link)."""


class CommandFailed(BackendError):
    """A command exited non-zero where success was required."""

    def __init__(self, message: str, result: CommandResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class ProcessGone(BackendError):
    """The PID to signal no longer exists (not an error dialog: it is what the operator wanted)."""


class ProcessChanged(BackendError):
    """The PID now belongs to another process (start time or command line differ): refused."""


class Fenced(BackendError):
    """The node's lock no longer names the run that sent a fenced command: the node did not run it."""


class InvalidArgument(BackendError):
    """A host, unit name or PID that could smuggle shell syntax into a command: refused."""


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """What a PID must still be before it may be signalled (nvitop's ``(pid, create_time)`` idea).

    Attributes:
        pid: the process id.
        start_time: the start time as the snapshot read it (Holder.start_time).
        command: the command line as the snapshot read it (Holder.command).
    """

    pid: int
    start_time: str | None
    command: str


def identity_text(start_time: str | None, command: str | None) -> str:
    """``lstart`` + args with runs of blanks collapsed: the form two identities are compared in
    (ps pads the day of the month, ``Mar  4``; a parser may not)."""
    return " ".join(f"{start_time or ''} {command or ''}".split())


def require_identity(host: str, pid: int, expected: ProcessIdentity) -> None:
    """Refuse a signal whose target cannot be verified (every backend calls this first).

    Raises:
        InvalidArgument: ``expected`` is for another PID.
        ProcessChanged: no start time or command line was recorded, so a reused PID could not be told
            apart (fail closed: poll again, with the processes section readable).
    """
    if expected.pid != pid:
        raise InvalidArgument(f"refusing to signal PID {pid}: the expected identity is for PID {expected.pid}")
    if not expected.start_time or not (expected.command or "").strip():
        raise ProcessChanged(f"PID {pid} on {host} has no recorded start time or command line, so it cannot be "
                             f"verified: poll again before signalling it")


@dataclass(frozen=True, slots=True)
class SignalOutcome:
    """What happened to one signalled PID."""

    pid: int
    signalled: bool
    reason: str = ""


# The signals a backend sends (by number), and their names for kill(1).
SIGNALS = {s.value: s.name.removeprefix("SIG") for s in (
    _signal.SIGTERM, _signal.SIGKILL, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT,
    _signal.SIGUSR1, _signal.SIGUSR2, _signal.SIGCONT, _signal.SIGSTOP,
)}

# Unit names: systemd's allowed characters only, so no quoting trick can reach a shell.
_UNIT_RE = re.compile(r"^[A-Za-z0-9:_.\\@-]{1,255}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9_.:\[\]-]{1,253}$")


def validate_unit(name: str) -> str:
    """Return ``name`` if it is a plausible systemd unit name, else raise InvalidArgument."""
    if not _UNIT_RE.match(name) or name.startswith("-"):
        raise InvalidArgument(f"refusing unit name {name!r}: only letters, digits and :_.@- are allowed")
    return name


def validate_host(name: str) -> str:
    """Return ``name`` if it is a plausible host name or address, else raise InvalidArgument."""
    if not _HOST_RE.match(name) or name.startswith("-"):
        raise InvalidArgument(f"refusing host name {name!r}: it contains characters a host name cannot have")
    return name


def validate_pid(pid: object) -> int:
    """Return ``pid`` as an int if it is a positive integer (and not 1), else raise InvalidArgument."""
    if isinstance(pid, bool) or not isinstance(pid, int | str):
        raise InvalidArgument(f"refusing PID {pid!r}: not a number")
    text = str(pid)
    if not text.isdecimal() or int(text) <= 1:
        raise InvalidArgument(f"refusing PID {pid!r}: not a positive process id")
    return int(text)


def behind_fence(argv: Sequence[str], fence: str | None) -> Sequence[str]:
    """``argv`` as it goes out behind the lock's fence of run ``fence`` (``argv`` itself when None).

    Raises:
        InvalidArgument: ``argv`` is a string or empty (a shell string must never be split into words here).
    """
    if isinstance(argv, str | bytes) or not argv:
        raise InvalidArgument("refusing a command that is not a non-empty argv list")
    return fences.fenced(fence, argv) if fence else argv


def check_fence(host: str, fence: str | None, exit_status: int | None, output: str) -> None:
    """Raise :class:`Fenced` when a fenced command's result is the fence's refusal.

    Raises:
        Fenced: the node did not run the command: its lock no longer names run ``fence``.
    """
    if fence and fences.refused(exit_status, output):
        raise Fenced(f"{host}: the node's lock no longer names run {fence}: the command was not run")


def join_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """One shell-safe command line from an argv list (and ``env`` as ``VAR=value`` assignments)."""
    parts = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items() if re.match(r"^[A-Z_][A-Z0-9_]*$", k)]
    return " ".join(parts + [shlex.join(argv)])


# Characters one command may print (stdout and stderr each) before it is stopped: generous for any
# real tool (nvidia-smi -q -x of 8 GPUs is ~250 KB), small enough that 64 nodes in flight stay bounded.
DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024


class CappedText:
    """Text gathered up to a cap; what comes past it is dropped, and :meth:`add` says stop."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.size = 0
        self.parts: list[str] = []

    def add(self, chunk: str) -> bool:
        """Keep ``chunk`` (its head, at the cap). False once the cap is reached."""
        room = self.cap - self.size
        if len(chunk) > room:
            self.parts.append(chunk[: max(0, room)])
            self.size = self.cap
            return False
        self.parts.append(chunk)
        self.size += len(chunk)
        return True

    def text(self) -> str:
        """What was kept."""
        return "".join(self.parts)


class OutputTooLarge(BackendError):
    """A streamed command printed more than the byte cap; it was stopped."""


# A streamed line longer than this is cut into pieces (nccl-tests lines are ~120 characters).
STREAM_LINE_CAP = 64 * 1024


class LineSplitter:
    """Chunks of a stream -> lines, never holding more than one capped line, counting the total."""

    def __init__(self, total_cap: int, line_cap: int = STREAM_LINE_CAP) -> None:
        self.total_cap = total_cap
        self.line_cap = line_cap
        self.total = 0
        self._partial = ""

    def feed(self, chunk: str) -> list[str]:
        """The complete lines ``chunk`` ends (without their newline).

        Raises:
            OutputTooLarge: the stream passed ``total_cap`` characters.
        """
        self.total += len(chunk)
        if self.total > self.total_cap:
            raise OutputTooLarge(f"the command printed more than {self.total_cap} characters and was stopped")
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()
        while len(self._partial) > self.line_cap:
            lines.append(self._partial[: self.line_cap])
            self._partial = self._partial[self.line_cap:]
        return lines

    def finish(self) -> list[str]:
        """The last line, if the stream did not end with a newline."""
        rest, self._partial = self._partial, ""
        return [rest] if rest else []


@dataclass
class BackendOptions:
    """Options shared by the commands that reach nodes (contract.md).

    Attributes:
        max_output: characters a command may print (stdout and stderr each) before it is stopped.
    """

    timeout: float = 20.0
    sudo: bool = False
    read_only: bool = False
    concurrency: int = 64
    ssh_config: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    user: str | None = None
    jump: str | None = None
    max_output: int = DEFAULT_MAX_OUTPUT
    extra: dict = field(default_factory=dict)


class Backend(abc.ABC):
    """How nvls-tui reaches one node. One instance per node; safe to share between workers.

    Implements the poll's ``nvls_tui.poll.transport.Transport`` (host, simulated, activity, snapshot)
    and adds what the runbook needs: run, stream and signal.

    Attributes:
        host: the target as shown to the operator.
        simulated: True when the node is simulated.
    """

    host: str
    simulated: bool = False
    # The last poll's sections and state (an unchanged node is not parsed again); each backend its own.
    last_assembly: LastAssembly
    # Written by the backend's own poll loop (one attribute write per step) and read by whoever
    # waits on it (`check`'s progress line): no lock, no remote command, nothing on the hot path.
    _activity: Activity | None = None

    @property
    def activity(self) -> Activity | None:
        """The step this backend began most recently and has not finished (None when idle).

        Set around each command of :meth:`snapshot` (over SSH, from the poll script's section markers
        as its output streams), so it names the command a hung poll is stuck in. With several commands
        in flight on one backend it is the latest one begun.
        """
        return self._activity

    def _begin(self, argv: Sequence[str] = (), phase: str = "") -> None:
        """Note that the backend now waits on ``argv`` (or on ``phase``, a step without a command)."""
        self._activity = Activity(tuple(argv), phase, time.monotonic())

    def _idle(self) -> None:
        """Note that the backend waits on nothing (its poll finished or was stopped)."""
        self._activity = None

    @abc.abstractmethod
    async def run(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        *,
        privileged: bool = False,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        fence: str | None = None,
    ) -> CommandResult:
        """Run one command to completion.

        Args:
            argv: the command as a list; never a shell string.
            timeout: seconds before CommandTimeout (None: the backend's default).
            privileged: prefix with ``sudo -n`` where the backend was asked to.
            env: extra environment variables for the command.
            stdin: text fed to the command's standard input.
            fence: a run id: the node runs the command only while its lock names that run, checked
                in the same remote command (:mod:`nvls_tui.poll.fence`; :func:`behind_fence`).

        Returns:
            The finished command, whatever its exit status.

        Raises:
            Unreachable, CommandTimeout, InvalidArgument.
            Fenced: the lock does not name ``fence``: the command was not run.
        """

    @abc.abstractmethod
    def stream(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        pty: bool = False,
        privileged: bool = False,
        fence: str | None = None,
    ) -> AsyncGenerator[str, None]:
        """Yield the command's output lines (stdout and stderr merged) as they arrive.

        Closing the iterator (``contextlib.aclosing``) or cancelling the consumer ends the command.
        When the stream ends the last exit status is available as ``self.last_exit_status``.
        ``fence``: as for :meth:`run`; a refusal is the fence's line and its exit status
        (:func:`nvls_tui.poll.fence.refused` tells them).
        """

    @property
    def read_only(self) -> bool:
        """True for a session that must change nothing (``--read-only``)."""
        options = getattr(self, "options", None)
        return bool(getattr(options, "read_only", False) or getattr(self, "_read_only", False))

    async def signal(self, pid: int, sig: int, expected: ProcessIdentity, fence: str | None = None) -> SignalOutcome:
        """Send ``sig`` to ``pid`` only if it is still the process the operator selected.

        The guards every backend shares live here, in one place: a real PID (not 0 or 1), the
        identity recorded for exactly that PID with a start time and a command line, a signal from
        the short list, and a session that may change the node. Only then does the backend re-read
        the identity on the node and deliver (:meth:`_deliver`). Nothing here escalates to SIGKILL.
        ``fence``: the re-read and the signal go out behind that run's lock (as for :meth:`run`).

        Raises:
            InvalidArgument: a bad PID or signal, an identity for another PID, a read-only session.
            ProcessGone: the PID no longer exists.
            ProcessChanged: no identity was recorded, or start time or command line differ.
            Fenced: the node's lock no longer names run ``fence``: nothing was sent.
        """
        pid = validate_pid(pid)
        require_identity(self.host, pid, expected)
        if isinstance(sig, bool) or sig not in SIGNALS:
            raise InvalidArgument(f"refusing signal {sig!r}: only TERM, KILL, INT, HUP, QUIT, USR1, USR2, "
                                  f"CONT and STOP are sent")
        if self.read_only:
            raise InvalidArgument(f"{self.host}: read-only session, not signalling PID {pid}")
        return await self._deliver(pid, sig, expected, fence)

    @abc.abstractmethod
    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity,
                       fence: str | None = None) -> SignalOutcome:
        """Re-read ``pid``'s identity on the node and, only if it matches ``expected``, signal it; both
        behind the lock's fence of run ``fence`` where one is given.

        Raises:
            Fenced: the fence refused: nothing was read or sent.
            ProcessGone: the PID no longer exists.
            ProcessChanged: start time or command line differ from ``expected``.
        """

    async def read_probe(self) -> ProbeReading:
        """Read the probe's sections of the node once: what a transport does for a poll.

        Raises:
            BackendError: the node could not be reached or read (it is then unreachable).
        """
        raise NotImplementedError(f"{type(self).__name__} reads no probe")

    async def snapshot(self) -> NodeState:
        """Read the node once and return its state (``reachable=False`` with ``error`` on failure).

        The same for every transport: :meth:`read_probe`, then ``poll.once.build_state`` (through
        this backend's ``last_assembly``). While it runs, :attr:`activity` names the step in flight.
        """
        try:
            reading = await self.read_probe()
        except BackendError as exc:
            return NodeState(host=self.host, reachable=False, simulated=self.simulated, error=str(exc),
                             polled_at=time.time())
        finally:
            self._idle()
        return build_state(self.host, reading, self.last_assembly)

    async def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release connections; the backend can still be used again afterwards."""

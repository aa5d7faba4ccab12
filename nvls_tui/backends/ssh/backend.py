"""The SSH backend: a node reached from a bastion over one pooled asyncssh connection.

Every command is an argv list joined with ``shlex.join``; the poll travels as one ``sh -c`` script
(``nvls_tui.poll.probe``). Each command line first prints the session's process-group id (sshd makes
every session a process-group leader), so stopping a command (timeout, cancelled stream) can kill
the whole group from a second session: OpenSSH refuses ``signal`` channel requests for root logins
(no post-auth privilege separation), and closing a pipe channel alone would leave a ``sleep`` or an
``all_reduce_perf`` running. A PTY session is also hung up when its channel closes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shlex
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence

import asyncssh

from nvls_tui.backends.base import (
    SIGNALS,
    Backend,
    BackendOptions,
    CappedText,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    InvalidArgument,
    LineSplitter,
    OutputTooLarge,
    ProcessChanged,
    ProcessGone,
    ProcessIdentity,
    SignalOutcome,
    Unreachable,
    behind_fence,
    check_fence,
    identity_text,
    join_argv,
    validate_host,
)
from nvls_tui.backends.ssh.pool import SshConnector
from nvls_tui.backends.ssh.targets import SshTarget
from nvls_tui.poll.assemble import LastAssembly
from nvls_tui.poll.config_cache import ConfigCache
from nvls_tui.poll.evidence import TIMED_OUT_STATUS
from nvls_tui.poll.kernel_tail import KernelTail
from nvls_tui.poll.once import ProbeReading
from nvls_tui.poll.probe import DERIVED_SECTIONS, SECTION_NAMES, journal_hung, new_nonce, section_argv
from nvls_tui.poll.probe_output import SectionReader
from nvls_tui.poll.probe_script import probe_script
from nvls_tui.textsafe import clean_line

# sshd's default MaxSessions is 10 channels per connection; stay under it.
MAX_SESSIONS = 8
_ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_SUDO_PASSWORD = ("a password is required", "a terminal is required")
_PGID_MARK = "@@nvls-tui-pgid"
STOP_TIMEOUT = 5.0
SHELL_WAIT = 1.5
"""Timeouts a second shell is given to start once a command did not (how long the node's shells take)."""
CHUNK = 64 * 1024
# Exit codes of the signal script (distinct from anything kill(1) returns).
_GONE, _CHANGED = 3, 4
# The steps of a poll before (and between) its sections, as `activity` names them.
QUEUED = "waiting for a connection slot (--concurrency)"
CONNECTING = "connecting"
OPENING = "opening a session"
IN_SCRIPT = "running the poll script"


def _short(argv: Sequence[str]) -> str:
    text = shlex.join(argv)
    return f"`{text[:60]}…`" if len(text) > 60 else f"`{text}`"


def signal_script(pid: int, signame: str, expected: ProcessIdentity, sudo: bool = False) -> str:
    """One POSIX sh script: re-read the PID's identity, compare it, and only then signal it.

    Exits 3 when the PID is gone, 4 (printing the current identity) when it changed, else kill's
    own status with kill's messages on stdout.
    """
    want = identity_text(expected.start_time or "", expected.command)
    # `env kill`, not the shell's builtin: the builtin always signals a PID of the machine running
    # the shell, so a `kill` installed on PATH (the simulator's shim, serving a simulated node from
    # a real sshd) would be bypassed and a real process with that number hit. sudo already execs.
    kill = f"{'sudo -n ' if sudo else 'env '}kill -s {signame} {pid}"
    return "\n".join([
        "export LC_ALL=C",
        "set -f",  # the command line is split into words below: never glob it
        f"cur=$(ps -ww -o lstart=,args= -p {pid} 2>/dev/null) || exit {_GONE}",
        f'[ -n "$cur" ] || exit {_GONE}',
        f'case "$cur" in *"<defunct>") exit {_GONE};; esac',  # a zombie has already exited
        "set -- $cur",
        f'[ "$*" = {shlex.quote(want)} ] || {{ printf "%s\\n" "$*"; exit {_CHANGED}; }}',
        f"{kill} 2>&1",
    ]) + "\n"


class SshBackend(Backend):
    """One node over SSH.

    Args:
        target: the node (validated again here).
        options: reach options; ``options.timeout`` is the default per-command timeout.
        limiter: a semaphore shared by every backend of a fleet: it bounds connection attempts and
            running commands in flight (``--concurrency``). Streams hold it only while opening.

    Attributes:
        host: the target as the operator wrote it (``root@gpu05:2222``).
        last_exit_status: exit status of the last finished stream (negative: killed by that signal).
    """

    def __init__(self, target: SshTarget, options: BackendOptions, limiter: asyncio.Semaphore | None = None):
        validate_host(target.host)
        self.target = target
        self.options = options
        self.host = str(target)
        self.simulated = False
        self.last_exit_status: int | None = None
        self._limiter = limiter if limiter is not None else asyncio.Semaphore(max(1, options.concurrency))
        self._sessions = asyncio.Semaphore(MAX_SESSIONS)
        self._connector = SshConnector(target, options)
        self._cleanups: set[asyncio.Task] = set()
        self.kernel_tail = KernelTail()  # the node's kernel log between polls (read incrementally)
        self.config_cache = ConfigCache()  # needrestart's and apt's sections, read again when their files change
        self.last_assembly = LastAssembly()  # an unchanged node is not parsed again
        self._section_limit: asyncio.Timeout | None = None  # the poll script's deadline, moved per section

    @property
    def connector(self) -> SshConnector:
        """The pooled connection (exposed for the console's connection indicator and tests)."""
        return self._connector

    # ----- building command lines ------------------------------------------------------------
    def command_line(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
                     privileged: bool = False) -> str:
        """The remote command line for ``argv``: shlex-joined, ``sudo -n`` when asked.

        Raises:
            InvalidArgument: argv is a string or empty, holds NUL bytes, or env has odd names.
        """
        if isinstance(argv, str | bytes) or not argv:
            raise InvalidArgument("refusing a command that is not a non-empty argv list")
        if any(not isinstance(a, str) or "\0" in a for a in argv):
            raise InvalidArgument("refusing a command argument that is not text or holds a NUL byte")
        env = dict(env or {})
        for key, value in env.items():
            if not _ENV_RE.match(key) or "\0" in str(value):
                raise InvalidArgument(f"refusing environment variable {key!r}: not a plain NAME")
        if privileged and self.options.sudo:
            words = ["env", *(f"{k}={v}" for k, v in env.items()), *argv] if env else list(argv)
            return "sudo -n " + shlex.join(words)
        return join_argv(argv, env)

    # ----- sessions --------------------------------------------------------------------------
    async def _open_process(self, line: str, timeout: float, *, poll: bool = False,
                            **kwargs) -> asyncssh.SSHClientProcess:
        """A started remote process; a stale pooled connection is replaced once (nothing ran yet).

        ``poll``: note the steps in :attr:`activity` (the poll does; other commands leave it alone).
        """
        for attempt in (1, 2):
            if poll:
                self._begin(phase=OPENING if self._connector.connected else CONNECTING)
            conn = await self._connector.get(timeout)
            if poll:
                self._begin(phase=OPENING)
            try:
                async with asyncio.timeout(timeout):
                    return await conn.create_process(line, encoding="utf-8", errors="replace", **kwargs)
            except TimeoutError:
                raise CommandTimeout(f"{self.host}: no session opened within {timeout:g}s") from None
            except asyncssh.ChannelOpenError as exc:
                if not conn.is_closed():
                    raise CommandFailed(f"{self.host}: the server refused a new session ({exc.reason})") from None
                self._connector.discard(conn)
            except (asyncssh.Error, OSError):
                self._connector.discard(conn)
            if attempt == 2:
                raise Unreachable(self._connector.lost_reason or f"{self.host}: the connection dropped")
        raise AssertionError("unreachable")  # pragma: no cover

    async def _start(self, line: str, timeout: float, *, poll: bool = False,
                     **kwargs) -> tuple[asyncssh.SSHClientProcess, int | None, str]:
        """Start ``line`` and read its process-group marker (``poll``: see :meth:`_open_process`).

        Returns:
            The process, its process-group id (None if the marker did not come) and any output
            that arrived in place of the marker.
        """
        proc = await self._open_process(f"echo {_PGID_MARK} $$; {line}", timeout, poll=poll, **kwargs)
        try:
            async with asyncio.timeout(timeout):
                first = await proc.stdout.readline()
        except TimeoutError:
            # Stopped before it ran: the shell that starts late dies writing the marker to a closed channel.
            self._stop(proc, None, False)
            raise CommandTimeout(await self._not_started(timeout)) from None
        except (asyncssh.Error, OSError):
            raise self._dropped("the start of a command") from None
        parts = first.split()
        if len(parts) == 2 and parts[0] == _PGID_MARK and parts[1].isdecimal():
            return proc, int(parts[1]), ""
        return proc, None, first

    async def _not_started(self, timeout: float) -> str:
        """Why a command did not start within ``timeout``: what a second shell on the node shows.

        The login shell runs its start-up files (``~/.bashrc``, ``/etc/profile``, a module system, conda
        init, a home on a hung NFS server) before it prints the command's first byte. The command itself is
        already stopped (it never runs late); a second session that runs nothing but ``echo`` is given
        :data:`SHELL_WAIT` timeouts more (a poll's deadline is three), and the time to its first byte is how
        long the node's shell takes to start.
        """
        said = f"{self.host}: the command did not start within {timeout:g}s and was not run"
        wait = timeout * SHELL_WAIT
        started = time.monotonic()
        proc: asyncssh.SSHClientProcess | None = None
        try:
            conn = self._connector.current
            if conn is None:
                return said
            async with asyncio.timeout(wait):
                proc = await conn.create_process(f"echo {_PGID_MARK}", encoding="utf-8", errors="replace",
                                                 stdin=asyncssh.DEVNULL)
                first = await proc.stdout.readline()
            if not first:
                return said
            took = time.monotonic() - started
            return f"{said}: the node's shell took {took:.0f} s to start: its start-up files? (~/.bashrc, ~/.profile, " \
                   "/etc/profile.d, a slow home directory)"
        except TimeoutError:
            return (f"{said}: the node's shell did not start at all (a second one printed nothing in "
                    f"{wait:g}s more: start-up files that hang? a home directory on a hung file server?)")
        except (asyncssh.Error, OSError):
            return said
        finally:
            if proc is not None:
                proc.close()

    def _stop(self, proc: asyncssh.SSHClientProcess, pgid: int | None, privileged: bool) -> None:
        """End a remote command and everything it started, without waiting for it."""
        try:
            proc.send_signal("TERM")  # honoured for non-root logins (sshd killpg's the session)
        except (OSError, asyncssh.Error, ValueError):
            pass
        proc.close()
        if pgid is not None:
            # A task of its own: a cancelled consumer must not cancel the clean-up with it.
            task = asyncio.get_running_loop().create_task(self._kill_group(pgid, privileged))
            self._cleanups.add(task)
            task.add_done_callback(self._cleanups.discard)

    async def _kill_group(self, pgid: int, privileged: bool) -> None:
        """``kill -s TERM -- -PGID`` in a second session (best effort: the link may be gone)."""
        conn = self._connector.current
        if conn is None:
            return
        prefix = "sudo -n " if privileged and self.options.sudo else ""
        line = prefix + shlex.join(["kill", "-s", "TERM", "--", f"-{int(pgid)}"]) + " 2>/dev/null"
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await conn.run(line, stdin=asyncssh.DEVNULL)
        except (TimeoutError, asyncssh.Error, OSError):
            pass

    def _dropped(self, what: str) -> Unreachable:
        reason = self._connector.lost_reason or f"the connection to {self.host} dropped"
        return Unreachable(f"{reason} during {what}")

    def _check_sudo(self, argv: Sequence[str], privileged: bool, result: CommandResult) -> None:
        if privileged and self.options.sudo and not result.ok and any(
            p in result.stderr or p in result.stdout for p in _SUDO_PASSWORD
        ):
            raise CommandFailed(
                f"{self.host}: sudo wants a password for {_short(argv)}; `sudo -n` never prompts, so allow "
                f"these commands without a password (NOPASSWD) or connect as root",
                result,
            )

    # ----- the Backend interface -------------------------------------------------------------
    async def _collect(self, proc: asyncssh.SSHClientProcess, on_stdout: Callable[[str], bool],
                       stderr_cap: int) -> tuple[str, bool]:
        """Read a command's two streams as they come, without ever holding more than the caps.

        Args:
            proc: the started command.
            on_stdout: called with each stdout chunk; returns False to stop the command (cap reached).
            stderr_cap: characters of stderr kept (and the stderr cap of the command).

        Returns:
            (stderr, stopped): stopped is True when a cap was reached (the caller stops the command).
        """
        err: list[str] = []
        size = 0

        async def read_out() -> bool:
            while chunk := await proc.stdout.read(CHUNK):
                if not on_stdout(chunk):
                    return True
            return False

        async def read_err() -> bool:
            nonlocal size
            while chunk := await proc.stderr.read(CHUNK):
                if size + len(chunk) > stderr_cap:
                    err.append(chunk[: stderr_cap - size])
                    return True
                err.append(chunk)
                size += len(chunk)
            return False

        tasks = [asyncio.ensure_future(read_out()), asyncio.ensure_future(read_err())]
        try:
            while tasks:
                done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                if any(t.result() for t in done):
                    return "".join(err), True
                tasks = list(pending)
        finally:
            for task in tasks:
                task.cancel()
        return "".join(err), False

    async def _execute(self, argv: Sequence[str], line: str, timeout: float, privileged: bool, stdin: str | None,
                       on_stdout: Callable[[str], bool], *, poll: bool = False) -> tuple[int, str, bool, float]:
        """Run ``line`` with capped reading: (exit status or -1, stderr, stopped at a cap, seconds).

        ``poll``: note the steps before the command runs in :attr:`activity` (queued, connecting).
        """
        started = time.monotonic()
        if poll and self._limiter.locked():
            self._begin(phase=QUEUED)
        async with self._limiter, self._sessions:
            kwargs = {"input": stdin} if stdin is not None else {"stdin": asyncssh.DEVNULL}
            proc, pgid, early = await self._start(line, timeout, poll=poll, **kwargs)
            if poll:
                self._begin(phase=IN_SCRIPT)
            if early and not on_stdout(early):
                self._stop(proc, pgid, privileged)
                return -1, "", True, time.monotonic() - started
            try:
                async with asyncio.timeout(timeout) as limit:
                    if poll:
                        self._section_limit = limit  # each section of the script gets the whole timeout
                    stderr, stopped = await self._collect(proc, on_stdout, self.options.max_output)
                    if stopped:
                        # Past the cap: the command is stopped, not read to its end (a broken lspci that
                        # prints without end grew the bastion by 1.5 GB in 10 s).
                        self._stop(proc, pgid, privileged)
                        return -1, stderr, True, time.monotonic() - started
                    completed = await proc.wait()
            except TimeoutError:
                self._stop(proc, pgid, privileged)
                raise CommandTimeout(
                    f"{self.host}: {_short(argv)} did not finish within {timeout:g}s and was stopped"
                ) from None
            except (asyncssh.Error, OSError):
                raise self._dropped(_short(argv)) from None
            except asyncio.CancelledError:
                self._stop(proc, pgid, privileged)
                raise
            finally:
                if poll:
                    self._section_limit = None
        if completed.returncode is None:
            raise self._dropped(_short(argv))
        return completed.returncode, stderr, False, time.monotonic() - started

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
        """Run one command to completion (see Backend.run; ``fence``: behind the lock's fence, in the same
        remote command).

        Output past ``options.max_output`` characters (stdout and stderr each) stops the command: the
        result then has ``truncated=True``, exit status -1 and the head of the output.

        Raises:
            Unreachable: connecting failed or the link dropped while the command ran.
            CommandTimeout: the command outlived ``timeout``; it was stopped on the node.
            CommandFailed: sudo wanted a password.
            InvalidArgument: argv or env would not make a safe command line.
            Fenced: the node's lock does not name run ``fence``: the command was not run.
        """
        timeout = self.options.timeout if timeout is None else timeout
        line = self.command_line(behind_fence(argv, fence), env, privileged)
        sink = CappedText(self.options.max_output)
        status, stderr, stopped, took = await self._execute(argv, line, timeout, privileged, stdin, sink.add)
        result = CommandResult(argv=tuple(argv), exit_status=status, stdout=sink.text(), stderr=stderr,
                               duration=took, truncated=stopped)
        self._check_sudo(argv, privileged, result)
        check_fence(self.host, fence, result.exit_status, result.output)
        return result

    async def stream(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        pty: bool = False,
        privileged: bool = False,
        fence: str | None = None,
    ) -> AsyncGenerator[str, None]:
        """Yield output lines (stdout and stderr merged) as the node prints them (``fence``: see Backend.run).

        A privileged command under ``sudo`` always gets a PTY: the login user cannot signal root's
        processes, but hanging up the terminal reaches them. Closing or cancelling the iterator
        stops the remote command.

        Raises:
            Unreachable: the connection dropped before the command finished.
        """
        # Merge on the node (not client side): stdout and stderr travel as two SSH streams, and
        # only one pipe keeps the lines in the order the tool printed them.
        line = "exec 2>&1; " + self.command_line(behind_fence(argv, fence), env, privileged)
        use_pty = pty or (privileged and self.options.sudo)
        self.last_exit_status = None
        timeout = self.options.timeout
        async with self._sessions:
            async with self._limiter:
                if use_pty:
                    proc, pgid, early = await self._start(line, timeout, term_type="dumb", term_size=(200, 50),
                                                          stderr=asyncssh.STDOUT)
                else:
                    proc, pgid, early = await self._start(line, timeout, stdin=asyncssh.DEVNULL,
                                                          stderr=asyncssh.STDOUT)
            finished = False
            try:
                if early:
                    yield clean_line(early)
                # Chunks, not readline: one line that never ends must not grow the bastion without bound.
                splitter = LineSplitter(self.options.max_output)
                try:
                    while chunk := await proc.stdout.read(CHUNK):
                        for text in splitter.feed(chunk):
                            yield clean_line(text)
                    for text in splitter.finish():
                        yield clean_line(text)
                    await proc.wait_closed()
                except (asyncssh.Error, OSError):
                    raise self._dropped(f"the stream of {_short(argv)}") from None
                except OutputTooLarge as exc:
                    raise OutputTooLarge(f"{self.host}: {_short(argv)}: {exc}") from None
                if proc.returncode is None:
                    raise self._dropped(f"the stream of {_short(argv)}")
                self.last_exit_status = proc.returncode
                finished = True
            finally:
                if not finished:
                    self._stop(proc, pgid, privileged)

    async def _deliver(self, pid: int, sig: int, expected: ProcessIdentity,
                       fence: str | None = None) -> SignalOutcome:
        """Re-read the PID's identity and signal it in one remote command (see Backend.signal), behind the
        lock's fence of run ``fence`` where one is given.

        Raises:
            ProcessGone, ProcessChanged, CommandFailed: kill was refused (permissions, sudo password).
            Fenced: the fence refused: nothing was read or sent.
        """
        name = SIGNALS[sig]
        script = signal_script(pid, name, expected, sudo=self.options.sudo)
        result = await self.run(["sh", "-c", script], fence=fence)
        text = result.stdout.strip()
        if result.exit_status == _GONE or "no such process" in text.lower():
            raise ProcessGone(f"PID {pid} on {self.host} has already exited")
        if result.exit_status == _CHANGED:
            raise ProcessChanged(
                f"PID {pid} on {self.host} is now {text[:120]!r}, not the process that was selected: refused"
            )
        if not result.ok:
            if any(p in text for p in _SUDO_PASSWORD):
                raise CommandFailed(f"{self.host}: sudo wants a password to signal PID {pid}; allow kill "
                                    f"without a password (NOPASSWD) or connect as root", result)
            raise CommandFailed(f"{self.host}: kill -s {name} {pid} failed: {text or result.exit_status}", result)
        return SignalOutcome(pid=pid, signalled=True, reason=f"SIG{name} sent")

    async def read_sections(self) -> dict[str, CommandResult]:
        """Run the whole poll in one remote ``sh -c`` and split it back into per-section results.

        Each section may print ``options.max_output`` characters; past that the script is stopped,
        the section is kept as truncated (EVIDENCE_MISSING, over the cap), and the sections it had not
        reached yet are read by a second script, so one flooding tool hides nothing else. Each section
        may take ``options.timeout`` (the deadline moves as each section begins): a command that hangs
        past it is stopped the same way, its section kept with exit status 124 (EVIDENCE_MISSING, timed
        out), and the rest read by a second script. This needs nothing of the node (no ``timeout``
        command), and a hung command costs the poll one timeout, as on every other transport. A
        section whose end marker never arrived otherwise has exit status -1.

        Raises:
            Unreachable, CommandTimeout: the script never started, or stalled between sections.
        """
        pending = list(SECTION_NAMES)
        sections: dict[str, CommandResult] = {}
        asked = self.kernel_tail.cursor
        unchanged: set[str] = set()
        for _attempt in SECTION_NAMES:  # each round settles at least the section that overflowed or hung
            if not pending:
                break
            nonce = new_nonce()
            reader = SectionReader(nonce, self.options.max_output)
            script = probe_script(self.options.sudo, nonce, only=tuple(pending), kernel_cursor=asked,
                                  cap=self.options.max_output, journal_hung=journal_hung(sections),
                                  config_stamp=self.config_cache.stamp)
            argv = ["sh", "-c", script]
            hung: str | None = None
            try:
                await self._execute(argv, self.command_line(argv), self.options.timeout, False, None,
                                    self._tracking(reader), poll=True)
            except CommandTimeout:
                if reader.current is None:
                    raise  # it never started (no session, no answer), or stalled between sections
                hung = reader.current
            for name, (status, text) in reader.finish().items():
                sections[name] = CommandResult(argv=section_argv(name), exit_status=-1 if status is None else status,
                                               stdout=text, truncated=reader.over_cap(name))
            unchanged |= reader.unchanged
            if hung is not None:
                sections[hung] = dataclasses.replace(sections[hung], exit_status=TIMED_OUT_STATUS)
            elif reader.overflow is None:
                break
            pending = [n for n in pending if n not in sections]
            if any(n in pending for n in DERIVED_SECTIONS):
                holders = sections.get("holders")
                if holders is not None and (holders.truncated or holders.exit_status == TIMED_OUT_STATUS):
                    pending = [n for n in pending if n not in DERIVED_SECTIONS]  # no PID list to read them by
                else:
                    pending.append("holders")  # the ps reads take their PIDs from the same script's fuser
        sections = self.config_cache.take(sections, unchanged)
        if (kernel := sections.get("kernel")) is not None:
            sections["kernel"] = self.kernel_tail.take(kernel, asked)
        # Without this, a `sudo -n` that wants a password only empties the privileged sections: the
        # node then looks as if nothing held a device and the kernel log were clean. The holders
        # section keeps its stderr, so sudo's refusal shows there; make it the poll's one clear error.
        holders = sections.get("holders")
        if self.options.sudo and holders is not None and holders.exit_status != 0 and any(
                p in holders.stdout for p in _SUDO_PASSWORD):
            raise CommandFailed(f"{self.host}: sudo wants a password for the privileged reads (fuser, journalctl); "
                                f"`sudo -n` never prompts, so allow them without a password (NOPASSWD) or "
                                f"connect as root", holders)
        return sections

    def _tracking(self, reader: SectionReader) -> Callable[[str], bool]:
        """``reader.feed`` that also notes in :attr:`activity` each section as its marker arrives.

        The markers stream in as the node runs the script, so while a command hangs its section is
        the one begun and not ended. One comparison per chunk; a write only when the section changes.
        """
        shown: list[str | None] = [None]

        def feed(chunk: str) -> bool:
            going = reader.feed(chunk)
            name = reader.current
            if name != shown[0]:
                shown[0] = name
                if self._section_limit is not None:  # a new section (or the steps between): a new timeout
                    self._section_limit.reschedule(asyncio.get_running_loop().time() + self.options.timeout)
                if name is None:
                    self._begin(phase=IN_SCRIPT)  # between sections: the script's own ps of the holders
                else:
                    self._begin(section_argv(name))
            return going

        return feed

    async def read_probe(self) -> ProbeReading:
        """Read the node's sections once (see :meth:`read_sections`).

        While it runs, :attr:`activity` names the step in flight: queued, connecting, or the section
        of the poll script whose command the node is running.
        """
        return ProbeReading(await self.read_sections(), sudo=self.options.sudo)

    async def close(self) -> None:
        """Close the pooled connection (after any pending clean-up); the next command opens a new one."""
        if self._cleanups:
            await asyncio.wait(list(self._cleanups), timeout=STOP_TIMEOUT)
        await self._connector.close()

"""The console's answer to SIGINT, SIGTERM and SIGHUP: abort every running repair, restore, then exit.

A console that simply died on SIGTERM or SIGHUP (the SSH session to the bastion dropped, ``tmux
kill-server``) left the node it was repairing quiesced: FM, DCGM, persistenced, kubelet and the timers
stopped, the record and the lock on the node, no abort in the audit log. Here the console does what headless
``repair`` does (``headless/repair.py``): the first such signal interrupts every running repair (each node
restores what it changed; the abort is in the run's audit log), the console waits for every action still
running, then exits with each node's result; a later signal only says that the restore goes on. With nothing
running it exits at once.

After a hang-up the terminal is gone: a write to it fails (EIO) and a read says end of file at once. The
console must neither crash nor stall on that while it restores, so

* :class:`ConsoleDriver` writes the screen through :class:`TerminalStream`, which drops what the terminal no
  longer takes: Textual's writer thread would otherwise die on the first EIO, and with it gone the screen's
  next 30 writes fill its queue and block the event loop, the restore with it;
* it resumes nothing on the SIGCONT the kernel sends with the SIGHUP (Textual would start a second screen on
  the dead terminal);
* on the signal, descriptors that were the terminal and are no longer one are pointed at ``/dev/null`` (so
  the exit summary and any print after the hang-up are harmless), and the input thread, which would spin on
  the end of file, is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import IO, Any, Protocol

from textual.drivers.linux_driver import LinuxDriver

# The signals headless `repair` turns into an orderly abort (headless/repair.INTERRUPTS): the same here.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TERMINAL_FDS = (0, 1, 2)


class TerminalStream:
    """A text stream that drops writes once the terminal behind it is gone (EIO after a hang-up).

    Textual's writer thread writes the screen to it; a write that fails marks it ``gone`` and nothing after
    is attempted: there is nobody to draw for.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except (OSError, ValueError):
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self.gone = True

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return not self.gone and self.stream.isatty()


class ConsoleDriver(LinuxDriver):
    """Textual's Linux driver, safe on a terminal that hung up (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The driver keeps its output stream here and hands it to its writer thread when the screen starts.
        file = getattr(self, "_file", None)
        if file is not None:
            setattr(self, "_file", TerminalStream(file))  # noqa: B010 - Textual types it as a TextIOWrapper

    def resume_application_mode(self) -> None:
        """Resume the screen after a suspend (SIGCONT), but not on a terminal that hung up: the kernel sends
        SIGCONT with the SIGHUP, and there is no terminal to draw on any more."""
        if self.input_tty and not os.isatty(self.fileno):
            return
        super().resume_application_mode()


def terminals() -> frozenset[int]:
    """The descriptors among stdin, stdout and stderr that are a terminal now."""
    return frozenset(fd for fd in TERMINAL_FDS if os.isatty(fd))


def hung_up(was: frozenset[int]) -> frozenset[int]:
    """The descriptors that were a terminal (``was``) and no longer are one: it hung up."""
    return frozenset(fd for fd in was if not os.isatty(fd))


def to_devnull(fds: frozenset[int]) -> None:
    """Point ``fds`` at ``/dev/null``: what is written there after a hang-up is dropped, never an error."""
    if not fds:
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in fds:
            os.dup2(null, fd)
    finally:
        os.close(null)


class Stoppable(Protocol):
    """What the console must offer for a signal to end it in order (the App)."""

    def interrupted(self, name: str, *, first: bool, terminal_gone: bool) -> None:
        """Abort and restore what runs, then exit (``first``), or say that the restore goes on."""
        ...


class SignalExit:
    """The handlers of :data:`INTERRUPTS` on the console's event loop, while it runs.

    Args:
        console: told of each signal (:meth:`Stoppable.interrupted`).
        stop_input: stops the driver's input thread (called once the terminal is found gone).
    """

    def __init__(self, console: Stoppable, stop_input: Callable[[], None]) -> None:
        self.console = console
        self.stop_input = stop_input
        self.terminals = terminals()
        self.seen: list[str] = []
        self.gone = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        """Take the signals on the running loop (the main thread's: the console's)."""
        self._loop = asyncio.get_running_loop()
        for sig in INTERRUPTS:
            self._loop.add_signal_handler(sig, self.received, sig.name)

    def remove(self) -> None:
        """Give the signals back (the console is ending)."""
        if self._loop is None:
            return
        for sig in INTERRUPTS:
            with contextlib.suppress(ValueError, RuntimeError):  # the loop may be closing already
                self._loop.remove_signal_handler(sig)
        self._loop = None

    def received(self, name: str) -> None:
        """One signal: find out whether the terminal is gone (and quiet it), then tell the console."""
        self.seen.append(name)
        gone = hung_up(self.terminals)
        if gone and not self.gone:
            self.gone = True
            to_devnull(gone - {0})  # stdin stays: the input thread is stopped instead of reading /dev/null
            self.stop_input()
        self.console.interrupted(name, first=len(self.seen) == 1, terminal_gone=self.gone)


__all__ = ["INTERRUPTS", "ConsoleDriver", "SignalExit", "TerminalStream", "hung_up", "terminals", "to_devnull"]

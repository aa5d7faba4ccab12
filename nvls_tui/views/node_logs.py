"""The node's logs on a key (``l`` in the node screen): what each tab reads, and how a read becomes lines.

The failure messages tell the operator to read three things: Fabric Manager's journal of this boot, the
kernel log since the boot, and the node's past repairs. The logs screen reads the first two with the
read-only commands named here, through the node's own transport (over SSH the node's tools; on a
simulated node the simulator answers), and hands each result back to :func:`read_result`. Pure: no
command runs here.

Bounded: ``journalctl -n`` bounds the lines on the node, the transport bounds the bytes
(``--max-output``), and :func:`bounded_lines` keeps the last :data:`LINES` lines, each cut at
:data:`LINE_CHARS`. What could not be read is one line saying why, never an empty log that reads as calm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nvls_tui.backends.base import join_argv
from nvls_tui.model import CommandResult
from nvls_tui.model.node import KernelCoverage
from nvls_tui.poll.probe import FM_UNIT_NAME
from nvls_tui.textsafe import one_line

TABS = ("fm", "kernel", "past")
TAB_TITLES = {"fm": "FM journal", "kernel": "Kernel log", "past": "Past repairs"}

LINES = 2000  # lines a tab keeps (the last ones: the newest matter most)
LINE_CHARS = 2000  # characters one line keeps; a longer line is cut with an ellipsis
NOT_FOUND = 127  # the shell's exit status for a command it cannot find

FM_ARGV = ("journalctl", "-u", FM_UNIT_NAME, "-b", "-o", "short-iso", "--no-pager", "-n", str(LINES))
KERNEL_ARGV = ("journalctl", "-k", "-b", "-o", "short-iso", "--no-pager", "-n", str(LINES))
# util-linux dmesg without options: the ring buffer as the poll's ring section reads it.
RING_ARGV = ("dmesg",)


@dataclass(frozen=True, slots=True)
class LogRead:
    """What one read gives a tab.

    Attributes:
        lines: the lines to show (node text, cleaned by the transport; shown as data).
        error: one line saying why the read failed or fell short (None: it did not).
        missing_tool: the command is not on the node (the shell's 127): the kernel tab reads the ring
            buffer instead of the journal.
        left_out: how many earlier lines were left out to stay within :data:`LINES`.
    """

    lines: tuple[str, ...] = ()
    error: str | None = None
    missing_tool: bool = False
    left_out: int = 0


def command_words(argv: Sequence[str]) -> str:
    """The command as the operator would type it (``journalctl -k -b ...``)."""
    return join_argv(argv)


def bounded_lines(text: str, limit: int = LINES) -> tuple[tuple[str, ...], int]:
    """The last ``limit`` lines of ``text`` (each cut at :data:`LINE_CHARS`), and how many were left out."""
    lines = text.splitlines()
    left_out = max(0, len(lines) - limit)
    return tuple(line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
                 for line in lines[left_out:]), left_out


def _said(result: CommandResult) -> str:
    """The first line the command said on stderr (else stdout), on one line, or ``no words``."""
    for text in (result.stderr, result.stdout):
        for line in text.splitlines():
            if line.strip():
                return one_line(line.strip(), 200)
    return "no words"


def read_result(host: str, argv: Sequence[str], result: CommandResult) -> LogRead:
    """A finished read as a tab shows it.

    A command that is not on the node, exited non-zero, was stopped, or printed more than the transport
    keeps, says so in one line; what it printed before that is still shown (bounded).
    """
    command = command_words(argv)
    lines, left_out = bounded_lines(result.stdout)
    if result.exit_status == NOT_FOUND:
        return LogRead(error=f"{argv[0]} is not installed on {host}: `{command}` exited 127 ({_said(result)})",
                       missing_tool=True)
    if result.truncated:
        return LogRead(lines, f"`{command}` printed more than the console keeps and was stopped; its first "
                              f"lines are shown", left_out=left_out)
    if result.exit_status < 0:
        return LogRead(lines, f"`{command}` on {host} was stopped before it ended ({_said(result)})", left_out=left_out)
    if result.exit_status != 0:
        return LogRead(lines, f"`{command}` exited {result.exit_status} on {host}: {_said(result)}", left_out=left_out)
    # journalctl's hints (a user outside the systemd-journal group sees only their own entries) come on
    # stderr with exit 0: they say the log is partial, so they are shown as the read's one line.
    hint = next((one_line(s.strip(), 200) for s in result.stderr.splitlines() if s.strip()), None)
    return LogRead(lines, hint, left_out=left_out)


def failed_read(host: str, argv: Sequence[str], reason: str) -> LogRead:
    """A read the transport could not make (unreachable, timed out, refused): one line."""
    return LogRead(error=f"`{command_words(argv)}` could not be run on {host}: {one_line(reason, 300)}")


def ring_reason(coverage: KernelCoverage | None, journal: LogRead) -> str | None:
    """Why the kernel tab reads the ring buffer (``dmesg``) too, in words; None when the journal is enough.

    Fail closed: where the last poll could not say how far the journal reaches, it is not taken to reach
    the boot.
    """
    if journal.missing_tool:
        return "journalctl is not on this node: the kernel ring buffer (dmesg) is read instead"
    if journal.error is not None and not journal.lines:
        return "the journal could not be read: the kernel ring buffer (dmesg) is read instead"
    if coverage is None:
        return ("the last poll did not say how far the journal reaches back: the kernel ring buffer (dmesg) "
                "is read as well")
    if not coverage.complete_since_boot:
        return "the journal does not reach back to the boot: the kernel ring buffer (dmesg) is read as well"
    if "dmesg" in coverage.sources:
        return "the last poll read the kernel ring buffer as well: so does this tab (dmesg)"
    return None


def coverage_words(coverage: KernelCoverage | None) -> str:
    """The kernel log's coverage as the last poll read it, in one line (unknown is said, never implied)."""
    if coverage is None:
        return "coverage unknown: the last poll did not read the kernel log"
    if coverage.complete_since_boot:
        reach = "the lines read reach back to the boot"
    elif coverage.since is not None:
        reach = f"the lines read reach back to {coverage.since}, not to the boot"
    else:
        reach = "how far back the lines read reach is unknown"
    sources = " and ".join({"journal": "the journal", "dmesg": "the ring buffer"}.get(s, s) for s in coverage.sources)
    notes = "; ".join(coverage.notes)
    return "; ".join(part for part in (f"coverage (last poll): {reach}", f"read from {sources}" if sources else "",
                                       notes) if part)


__all__ = ["FM_ARGV", "KERNEL_ARGV", "LINES", "LINE_CHARS", "RING_ARGV", "TABS", "TAB_TITLES", "LogRead",
           "bounded_lines", "command_words", "coverage_words", "failed_read", "read_result", "ring_reason"]

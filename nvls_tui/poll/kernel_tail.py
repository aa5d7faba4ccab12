"""The kernel log read once per boot, then only what is new: a journal cursor kept per node on the bastion.

The first poll of a node reads the boot's whole kernel log (``journalctl -k -b``), filtered and bounded
on the node to the last ``KERNEL_LINES`` fabric lines. Every later poll asks journalctl to start at the
entry it visited last (``--cursor``) and to say where it stopped (``--show-cursor``), so a poll reads
the few entries logged since, whatever the uptime. :class:`KernelTail` keeps the node's lines and
hands the parsers the same text a full read would give.

Why ``--cursor`` and not ``--after-cursor``: systemd 252 steps over one entry more than asked when the
cursor's entry is gone (a rotated journal, vacuumed), so the first line logged after it would be lost.
``--cursor`` starts at that entry when it still exists, and the tail drops it again by knowing whether
it was a line it kept (the node's filter says so: ``-- nvls-tui visited N first F last L``).

A cursor from another boot (``b=``) means the node rebooted: the old boot's lines are let go. Any
failed read lets the cursor go too, so the next poll reads the boot again. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from nvls_tui.model import CommandResult

KERNEL_PATTERN = "NVRM|nvidia-nvswitch|Xid|SXid|FABRIC"
KERNEL_LINES = 300
NOTE_LINES = 20
# journalctl's own form (sd_journal_get_cursor); anything else is never put on a command line.
CURSOR = re.compile(r"s=[0-9a-f]{32};i=[0-9a-f]{1,16};b=[0-9a-f]{32};m=[0-9a-f]{1,16};t=[0-9a-f]{1,16};"
                    r"x=[0-9a-f]{1,16}")
CURSOR_LINE = "-- cursor: "
VISITED_LINE = "-- nvls-tui visited "
_ENTRY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T")
_PATTERN = re.compile(KERNEL_PATTERN)
_VISITED = re.compile(r"^-- nvls-tui visited (\d+) first ([01]) last ([01])$")


def kernel_argv(cursor: str | None = None) -> tuple[str, ...]:
    """The kernel section's journalctl, from ``cursor`` when there is one (checked: journalctl's own form)."""
    argv: tuple[str, ...] = ("journalctl", "-k", "-b", "--no-pager", "-o", "short-iso", "--show-cursor")
    if cursor is not None and CURSOR.fullmatch(cursor):
        argv += (f"--cursor={cursor}",)
    return argv


def last_cursor(text: str) -> str | None:
    """The journal cursor a kernel section printed last (``-- cursor: ...``), or None."""
    cursors = [line[len(CURSOR_LINE):] for line in text.splitlines() if line.startswith(CURSOR_LINE)]
    return cursors[-1] if cursors else None


def _whole_boot(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` without its ``--cursor=``: the whole-boot read a merged section stands for."""
    return tuple(a for a in argv if not a.startswith("--cursor="))


def filter_journal(text: str) -> str:
    """What the probe's awk makes of journalctl's output, for the backends that run it one command at a time.

    Kept: journalctl's own messages (errors and hints, the first ``NOTE_LINES``), the last
    ``KERNEL_LINES`` entries that match the pattern, the cursor line, and the visited line.
    """
    notes: list[str] = []
    kept: list[str] = []
    cursor = ""
    visited = first = last = 0
    for line in text.splitlines():
        if _ENTRY.match(line):
            visited += 1
            hit = 1 if _PATTERN.search(line) else 0
            first = hit if visited == 1 else first
            last = hit
            if hit:
                kept.append(line)
        elif line.startswith(CURSOR_LINE):
            cursor = line
        elif line.startswith("-- "):
            continue
        elif len(notes) < NOTE_LINES:
            notes.append(line)
    lines = notes + kept[-KERNEL_LINES:] + ([cursor] if cursor else []) + [
        f"{VISITED_LINE}{visited} first {first} last {last}"]
    return "".join(line + "\n" for line in lines)


def _boot(cursor: str) -> str:
    return cursor.split(";b=", 1)[1].split(";", 1)[0]


@dataclass
class KernelTail:
    """One node's kernel log between polls: its cursor, and the lines read so far this boot.

    Attributes:
        cursor: where the last read stopped (None: the next read is a whole boot's).
        lines: the fabric lines kept (the last ``KERNEL_LINES``), oldest first.
        last_kept: the entry at ``cursor`` is ``lines[-1]`` (it matched the pattern).
        reads: how many reads began at a cursor (for tests and the bench).
    """

    cursor: str | None = None
    lines: list[str] = field(default_factory=list)
    last_kept: bool = False
    reads: int = 0

    def argv(self) -> tuple[str, ...]:
        """The journalctl of this node's next poll."""
        return kernel_argv(self.cursor)

    def reset(self) -> None:
        """Forget the cursor and the lines: the next poll reads the boot again."""
        self.cursor, self.lines, self.last_kept = None, [], False

    def take_unfiltered(self, result: CommandResult, asked: str | None) -> CommandResult:
        """:meth:`take` for journalctl's own output (stderr merged), filtered here as the probe's awk does."""
        text = filter_journal(result.stdout + result.stderr)
        return self.take(dataclasses.replace(result, stdout=text, stderr=""), asked)

    def take(self, result: CommandResult, asked: str | None) -> CommandResult:
        """Fold one poll's filtered kernel section into the node's lines.

        Args:
            result: the section as the probe printed it (see :func:`filter_journal`).
            asked: the cursor that poll started at (None: it read the whole boot).

        Returns:
            The section as a whole-boot read would have printed it: journalctl's messages of this
            poll, then the kept lines, under the whole-boot command line (so a node whose log did
            not move answers the same section poll after poll, whichever cursor it started at). A
            failed read is passed on as it came (the cursor let go).
        """
        notes, entries, cursor, visited = [], [], None, None
        for line in result.stdout.splitlines():
            if line.startswith(CURSOR_LINE):
                cursor = line[len(CURSOR_LINE):].strip()
            elif (m := _VISITED.match(line)) is not None:
                visited = (int(m.group(1)), m.group(2) == "1", m.group(3) == "1")
            elif _ENTRY.match(line):
                entries.append(line)
            else:
                notes.append(line)
        if not result.ok or result.truncated or visited is None:
            self.reset()
            return dataclasses.replace(result, stdout="".join(n + "\n" for n in notes + entries))
        if cursor is not None and not CURSOR.fullmatch(cursor):
            cursor = None  # never handed back to the node's shell
        count, first_kept, last_kept = visited
        if asked is not None and asked == self.cursor:
            self.reads += 1
            if cursor is not None and _boot(cursor) != _boot(asked):
                self.lines = []  # the node rebooted: -b read only the new boot
            elif self.last_kept and first_kept and entries and self.lines and entries[0] == self.lines[-1]:
                entries = entries[1:]  # the cursor's own entry, which the last poll kept already
            merged = (self.lines + entries)[-KERNEL_LINES:]
        else:
            merged = entries[-KERNEL_LINES:]
        if cursor is not None:
            self.cursor = cursor
            if count:
                self.last_kept = last_kept
        elif asked is None:
            self.cursor, self.last_kept = None, False  # nothing visited: no kernel line this boot yet
        # (From a cursor with nothing visited, the cursor's entry is gone and nothing came since: keep it.)
        self.lines = merged
        return dataclasses.replace(result, argv=_whole_boot(result.argv),
                                   stdout="".join(n + "\n" for n in notes + merged))

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

Coverage: a whole-boot read notes the first entry it visited (``-- nvls-tui first TIME BOOT``; BOOT 1 when
it is the kernel's own first line, ``Linux version ...``). A journal that does not reach back to the boot
(rotated, vacuumed, volatile) or cannot be read makes the node's script read the kernel ring buffer too
(:func:`filter_ring`, the ``ring`` section), and the tail lets its cursor go, so every poll of such a node
reads the boot whole and decides again. The section the tail hands on says what the journal covers
(``-- nvls-tui journal since TIME boot BOOT``, or ``since none``).

A kernel message of several lines is one journal entry whose later lines journalctl indents: they stay
with their entry (kept or dropped with it), so the parser can join them.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from nvls_tui.model import CommandResult

# The driver (NVRM) and every nvidia-* kernel module by its tag ("nvidia-nvswitch0:", "nvidia-nvlink:",
# "nvidia-uvm:", "nvidia-modeset:", "nvidia 0000:18:00.0:"): the lines the analyze side reads (kernel-log's rule,
# UNREAD_EVIDENCE's sources), so that check reads what a pasted log gives. POSIX ERE without intervals (mawk).
KERNEL_PATTERN = "NVRM|nvidia[-a-z0-9]*( [0-9a-fA-F:.]+)?:|Xid|SXid|FABRIC"
KERNEL_LINES = 300
NOTE_LINES = 20
# journalctl's own form (sd_journal_get_cursor); anything else is never put on a command line.
CURSOR = re.compile(r"s=[0-9a-f]{32};i=[0-9a-f]{1,16};b=[0-9a-f]{32};m=[0-9a-f]{1,16};t=[0-9a-f]{1,16};"
                    r"x=[0-9a-f]{1,16}")
CURSOR_LINE = "-- cursor: "
VISITED_LINE = "-- nvls-tui visited "
FIRST_LINE = "-- nvls-tui first "
JOURNAL_SINCE = "-- nvls-tui journal since "
RING_FIRST = "-- nvls-tui ring first "
RING_SKIPPED = "-- nvls-tui ring buffer not read: the journal covers this boot"
# The kernel's first line of every boot: a log whose first line of this boot is it reaches back to the boot.
BOOT_WORDS = "Linux version "
# The kernel awk's exit status when the ring buffer must be read as well (the journal does not cover the boot).
RING_NEEDED = 3
_ENTRY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T")
_PATTERN = re.compile(KERNEL_PATTERN)
_VISITED = re.compile(r"^-- nvls-tui visited (\d+) first ([01]) last ([01])$")
_FIRST = re.compile(r"^-- nvls-tui first (\S+) ([01])$")
_SINCE = re.compile(r"^-- nvls-tui journal since (\S+)(?: boot ([01]))?$")
_RING_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\] ")
# What ends a line for str.splitlines.
_LINE_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_RING_FIRST = re.compile(r"^-- nvls-tui ring first (\S+) ([01])$")


def starts_boot(entry: str) -> bool:
    """Whether a journal entry (short-iso) or a dmesg line is the kernel's first line of a boot."""
    return f"kernel: {BOOT_WORDS}" in entry.split("\n", 1)[0] or bool(
        (m := _RING_STAMP.match(entry)) and entry[m.end():].startswith(BOOT_WORDS))


def journal_coverage(text: str) -> tuple[str | None, bool] | None:
    """What a kernel section (as the tail hands it on) says the journal covers: (the time of its first
    entry this boot, whether that entry is the boot's first line); (None, False) when it holds no entry
    of this boot; None when the section does not say (an older probe's capture)."""
    # The lines before the first that holds the words cannot say it: read from that line's start (the tail
    # writes it last, after the 300 kernel lines, and every poll of a node reads it).
    at = text.find(JOURNAL_SINCE)
    if at < 0:
        return None
    start = max(text.rfind(b, 0, at) for b in _LINE_BREAKS) + 1  # where str.splitlines starts that line
    for line in text[start:].splitlines():
        if (m := _SINCE.match(line)) is not None:
            return (None, False) if m.group(1) == "none" else (m.group(1), m.group(2) == "1")
    return None


def filter_ring(text: str) -> str:
    """What the probe's ring awk makes of ``dmesg``'s output (for the backends that run it themselves).

    Kept: dmesg's own messages (errors, at most ``NOTE_LINES``), where the ring buffer starts (``-- nvls-tui
    ring first SECONDS BOOT``), and the last ``KERNEL_LINES`` lines that match the pattern, each with the
    indented lines of its record. Already filtered text is returned as it is.
    """
    if any(line.startswith(RING_FIRST) or line == RING_SKIPPED for line in text.splitlines()):
        return text
    notes: list[str] = []
    kept: list[str] = []
    first: str | None = None
    keep = False
    for line in text.splitlines():
        if (m := _RING_STAMP.match(line)) is not None:
            if first is None:
                first = f"{RING_FIRST}{m.group(1)} {1 if starts_boot(line) else 0}"
            keep = bool(_PATTERN.search(line))
            if keep:
                kept.append(line)
        elif line[:1] in (" ", "\t") and line.strip():
            if keep and kept:
                kept[-1] += "\n" + line
        elif line.strip():
            keep = False
            if len(notes) < NOTE_LINES:
                notes.append(line)
    lines = notes + ([first] if first else []) + kept[-KERNEL_LINES:]
    return "".join(line + "\n" for line in lines)


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
    cursor = head = ""
    visited = first = last = 0
    entry = False  # the line before was an entry (or one of its indented lines)
    for line in text.splitlines():
        if _ENTRY.match(line):
            visited += 1
            hit = 1 if _PATTERN.search(line) else 0
            if visited == 1:
                first = hit
                head = f"{FIRST_LINE}{line.split(' ', 1)[0]} {1 if starts_boot(line) else 0}"
            last = hit
            if hit:
                kept.append(line)
            entry = True
        elif entry and line[:1] in (" ", "\t"):
            if last and kept:
                kept[-1] += "\n" + line
        elif line.startswith(CURSOR_LINE):
            cursor, entry = line, False
        elif line.startswith("-- "):
            entry = False
        else:
            entry = False
            if len(notes) < NOTE_LINES:
                notes.append(line)
    lines = notes + kept[-KERNEL_LINES:] + ([cursor] if cursor else []) + ([head] if head else []) + [
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
        since: what the journal covers this boot, from the last whole-boot read: (the first entry's time,
            whether it is the boot's first line); None before a whole read.
    """

    cursor: str | None = None
    lines: list[str] = field(default_factory=list)
    last_kept: bool = False
    reads: int = 0
    since: tuple[str | None, bool] | None = None

    def argv(self) -> tuple[str, ...]:
        """The journalctl of this node's next poll."""
        return kernel_argv(self.cursor)

    def reset(self) -> None:
        """Forget the cursor and the lines: the next poll reads the boot again."""
        self.cursor, self.lines, self.last_kept, self.since = None, [], False, None

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
        notes, entries, cursor, visited, head = [], [], None, None, None
        entry = False
        for line in result.stdout.splitlines():
            # An entry first (most lines are): its date never starts the filter's own lines ("-- ...").
            if _ENTRY.match(line):
                entries.append(line)
                entry = True
            elif line.startswith(CURSOR_LINE):
                cursor, entry = line[len(CURSOR_LINE):].strip(), False
            elif (m := _VISITED.match(line)) is not None:
                visited, entry = (int(m.group(1)), m.group(2) == "1", m.group(3) == "1"), False
            elif (m := _FIRST.match(line)) is not None:
                head, entry = (m.group(1), m.group(2) == "1"), False
            elif entry and line[:1] in (" ", "\t"):
                entries[-1] += "\n" + line  # an indented line of the entry's message
            else:
                notes.append(line)
                entry = False
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
        if asked is None:
            self.since = head if head is not None else (None, False)
        if self.since is None or not self.since[1]:
            # The journal does not reach back to the boot: the next poll reads the boot whole again, so
            # the node's script decides again whether to read the ring buffer as well.
            self.cursor, self.last_kept = None, False
        said = (f"{JOURNAL_SINCE}none" if self.since is None or self.since[0] is None
                else f"{JOURNAL_SINCE}{self.since[0]} boot {1 if self.since[1] else 0}")
        return dataclasses.replace(result, argv=_whole_boot(result.argv),
                                   stdout="\n".join([*notes, *merged, said]) + "\n")

"""``ps -ww -o pid=,ppid=,user:32=,lstart=[,cgroup=],args=`` lines, ``ps -o pid=,cgroup=`` lines and
``/proc/PID/stat`` records.

They give a process's identity: the start time (``lstart`` text, or field 22 of ``stat`` in clock
ticks since boot) re-read just before a signal to make sure the PID was not reused. procps cuts every
column but the last to its width, so a ``cgroup`` column before ``args`` holds at most 27 characters
(tests/fixtures/real/nvidia-h200/ps-holder-identity.txt): the probe reads cgroups with the cgroup last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed

# pid ppid user  Www Mmm dd hh:mm:ss yyyy  [cgroup]  args...
_PS_LINE = re.compile(
    r"^\s*(?P<pid>\d{1,12})\s+(?P<ppid>\d{1,12})\s+(?P<user>\S+)\s+"
    r"(?P<lstart>[A-Z][a-z]{2}\s+[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d\s+\d{4})(?:\s+(?P<args>.*))?$"
)
# What ps prints in a cgroup column: "0::/system.slice/x.service", "4:memory:/a,1:name=systemd:/a", "-".
_CGROUP = re.compile(r"^(?:\d+:[^\s:]*:/\S*|-)$")


@dataclass(frozen=True, slots=True)
class PsEntry:
    """One process as ``ps`` printed it.

    Attributes:
        lstart: the start time as printed (``Mon Nov 30 07:51:12 2026``), whitespace collapsed.
        cgroup: ``0::/system.slice/nvidia-dcgm.service`` and the like; None when ps printed ``-``.
        args: the full command line.
    """

    pid: int
    ppid: int
    user: str
    lstart: str
    cgroup: str | None
    args: str


def parse_ps(text: str) -> Parsed[tuple[PsEntry, ...]]:
    """Parse ``ps -ww -o pid=,ppid=,user:32=,lstart=,cgroup=,args= -p PIDS`` output (a header is skipped)."""
    entries: list[PsEntry] = []
    warnings: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _PS_LINE.match(line)
        if m is None:
            first = line.split()[0]
            if first.isdecimal():
                warnings.append(f"unreadable ps line: {line.strip()[:200]}")
            continue  # a header line (PID PPID USER ...) or noise
        args = (m.group("args") or "").strip()
        cgroup = None
        first, _, rest = args.partition(" ")
        if _CGROUP.match(first):  # the older format, with the (cut) cgroup before the command line
            cgroup, args = (None if first == "-" else first), rest.strip()
        entries.append(
            PsEntry(
                pid=int(m.group("pid")),
                ppid=int(m.group("ppid")),
                user=m.group("user"),
                lstart=" ".join(m.group("lstart").split()),
                cgroup=cgroup,
                args=args,
            )
        )
    return Parsed(tuple(entries), tuple(warnings))


def parse_ps_cgroups(text: str) -> Parsed[dict[int, str]]:
    """``ps -ww -o pid=,cgroup= -p PIDS`` -> ``{pid: cgroup}`` (``-`` and unreadable lines left out)."""
    found: dict[int, str] = {}
    warnings: list[str] = []
    for raw in text.splitlines():
        words = raw.split(None, 1)
        if not words:
            continue
        if len(words) == 2 and words[0].isdecimal() and len(words[0]) <= 12 and _CGROUP.match(words[1].strip()):
            if words[1].strip() != "-":
                found[int(words[0])] = words[1].strip()
        elif words[0].isdecimal():
            warnings.append(f"unreadable ps cgroup line: {raw.strip()[:200]}")
    return Parsed(found, tuple(warnings))


def cgroup_column(proc_cgroup: str) -> str:
    """``/proc/PID/cgroup`` as procps's ``cgroup`` column prints it: the entries whose path is not
    the root, joined by commas (``-`` when every entry is the root)."""
    entries = [line.strip() for line in proc_cgroup.splitlines() if line.strip()]
    kept = [e for e in entries if not e.endswith(":/")]
    return ",".join(kept) if kept else "-"


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The identity fields of one ``/proc/PID/stat`` record.

    Attributes:
        comm: the process name between the parentheses (may itself hold spaces and parentheses).
        state: one letter (``S``, ``R``, ``Z``, ...).
        starttime: field 22, clock ticks after boot at which the process started.
    """

    pid: int
    comm: str
    state: str
    ppid: int
    starttime: int


def _small_int(text: str) -> bool:
    return text.isdecimal() and len(text) <= 20


def parse_proc_stat(text: str) -> Parsed[dict[int, ProcStat]]:
    """Parse one or more ``/proc/PID/stat`` lines into ``{pid: ProcStat}``."""
    found: dict[int, ProcStat] = {}
    warnings: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        open_at, close_at = line.find("("), line.rfind(")")
        head = line[:open_at].strip() if open_at > 0 else ""
        if open_at <= 0 or close_at < open_at or not head.isdecimal() or len(head) > 12:
            warnings.append(f"not a /proc/PID/stat line: {line[:120]}")
            continue
        # comm is whatever lies between the first "(" and the LAST ")": a name may contain ") (".
        rest = line[close_at + 1:].split()
        if len(rest) < 20 or not _small_int(rest[1].lstrip("-")) or not _small_int(rest[19]):
            warnings.append(f"truncated /proc/{head}/stat line")
            continue
        pid = int(head)
        found[pid] = ProcStat(pid, line[open_at + 1:close_at], rest[0], int(rest[1]), int(rest[19]))
    return Parsed(found, tuple(warnings))


__all__ = ["ProcStat", "PsEntry", "cgroup_column", "parse_proc_stat", "parse_ps", "parse_ps_cgroups"]

"""``ps`` as procps-ng 4.0 prints it, down to its errors, widths and exit status.

A simulator that is laxer than the real tool hides bugs: the first probe joined padded PIDs into
``516,  429``, which this simulator used to accept and procps rejects (``error: improper list``).
Every rule here was read off procps-ng 4.0.2 and 4.0.4 and is checked against the real ``ps`` by
``tests/unit/test_sim_tools_vs_real.py`` wherever the machine running the tests has one:

- ``-p`` takes items separated by exactly one comma, space or tab; an empty item is an improper
  list; each item is a C ``strtol`` number (``0x1f`` and octal ``017`` included) from 1 to 2^31-1.
- Every column but the last is cut to its width (``cgroup`` and ``args`` to 27 characters, ``user``
  to its width with a ``+`` mark); numbers overflow instead. The PID columns are as wide as the
  digits of the node's ``pid_max`` (5 for 32768, 7 for 4194304).
- Exit status 1 when no process was selected, 1 with ``error: ...`` and the usage text on stderr for
  bad arguments.
- ``-q`` (quick pid) reads only the listed PIDs and prints them in the list's order, repeats
  included; it takes the same list syntax, overrides ``-e``, and refuses ``-p`` and a second ``-q``
  (one sentence on stderr, no usage text).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from nvls_tui.sim.state import Node, Proc

USAGE = (
    "\n"
    "Usage:\n"
    " ps [options]\n"
    "\n"
    " Try 'ps --help <simple|list|output|threads|misc|all>'\n"
    "  or 'ps --help <s|l|o|t|m|a>'\n"
    " for additional help text.\n"
    "\n"
    "For more details see ps(1).\n"
)
PID_LIMIT = 0x7FFFFFFF

# name: (header, width, right-aligned, numeric). A width of None means "as wide as pid_max".
FIELDS: dict[str, tuple[str, int | None, bool, bool]] = {
    "pid": ("PID", None, True, True),
    "ppid": ("PPID", None, True, True),
    "user": ("USER", 8, False, False),
    "uid": ("UID", 5, True, True),
    "lstart": ("STARTED", 24, True, False),
    "cgroup": ("CGROUP", 27, False, False),
    "comm": ("COMMAND", 15, False, False),
    "etimes": ("ELAPSED", 7, True, True),
    "stat": ("STAT", 4, False, False),
    "tty": ("TT", 8, False, False),
    "args": ("COMMAND", 27, False, False),
    "cmd": ("CMD", 27, False, False),
    "command": ("COMMAND", 27, False, False),
}
ALIASES = {"stime": "lstart", "start_time": "lstart"}


class PsError(Exception):
    """A command line procps refuses; ``str()`` is its ``error:`` sentence."""


def lstart(ts: float) -> str:
    """ps's ``lstart``: ``Mon Aug 10 15:45:34 2026`` (day of month space-padded), in UTC."""
    t = time.gmtime(ts)
    return time.strftime("%a %b ", t) + f"{t.tm_mday:>2}" + time.strftime(" %H:%M:%S %Y", t)


def _strtol(item: str) -> int:
    """C ``strtol(item, &end, 0)`` that must consume the whole item."""
    m = re.fullmatch(r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", item)
    if m is None:
        raise PsError("process ID list syntax error")
    sign, digits = m.groups()
    if digits[:2].lower() == "0x":
        value = int(digits, 16)
    elif digits.startswith("0"):
        value = int(digits, 8)
    else:
        value = int(digits)
    return -value if sign == "-" else value


def parse_pid_list(text: str) -> list[int]:
    """procps's ``-p`` list: items separated by one ``,``, space or tab each.

    Raises:
        PsError: ``improper list``, ``process ID list syntax error`` or ``process ID out of range``.
    """
    items = re.split(r"[ ,\t]", text)
    if any(not item for item in items):
        raise PsError("improper list")
    pids = []
    for item in items:
        value = _strtol(item)
        if value < 1 or value > PID_LIMIT:
            raise PsError("process ID out of range")
        pids.append(value)
    return pids


def _columns(specs: list[str]) -> list[tuple[str, str, int | None]]:
    columns = []
    for spec in ",".join(specs).split(","):
        if not spec:
            continue
        name, has_header, header = spec.partition("=")
        name, colon, width = name.partition(":")
        name = ALIASES.get(name, name)
        if name not in FIELDS:
            raise PsError(f'unknown user-defined format specifier "{name}"')
        if colon and not width.isdecimal():
            raise PsError("column widths must be unsigned decimal numbers")
        base = FIELDS[name]
        columns.append((name, header if has_header else base[0], int(width) if colon else base[1]))
    return columns


# Each column's value, computed only when asked for (formatting every field of every row, lstart's
# strftime included, was most of a simulated poll's ps reads).
_VALUES: dict[str, Callable[[Proc, float], str]] = {
    "pid": lambda proc, _now: str(proc.pid),
    "ppid": lambda proc, _now: str(proc.ppid),
    "user": lambda proc, _now: proc.user,
    "uid": lambda proc, _now: "0" if proc.user == "root" else "1000",
    "lstart": lambda proc, _now: lstart(proc.start),
    "cgroup": lambda proc, _now: proc.cgroup or "-",
    "comm": lambda proc, _now: proc.comm,
    "etimes": lambda proc, now: str(int(now - proc.start)),
    "stat": lambda proc, _now: "Ssl" if proc.ppid == 1 else "S",
    "args": lambda proc, _now: proc.args,
    "cmd": lambda proc, _now: proc.args,
    "command": lambda proc, _now: proc.args,
    "tty": lambda _proc, _now: "?",
}


def _value(proc: Proc, name: str, now: float) -> str:
    return _VALUES[name](proc, now)


def _cell(name: str, text: str, width: int, last: bool) -> str:
    _header, _w, right, numeric = FIELDS[name]
    if last:
        return text.rjust(width) if right else text
    if len(text) > width and not numeric:
        # procps marks a cut user name with "+"; other text columns are simply cut.
        text = text[:width - 1] + "+" if name == "user" and width > 1 else text[:width]
    return text.rjust(width) if right else text.ljust(width)


class QuickPidError(PsError):
    """A ``-q`` misuse: procps prints only the sentence (no ``error:``, no usage)."""


def _parse(args: list[str]) -> tuple[list[str], list[int] | None, bool, bool, list[int] | None]:
    fmt: list[str] = []
    pids: list[int] | None = None
    quick: list[int] | None = None
    every = full = False
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-o", "--format", "-eo", "-Ao"):
            if nxt is None:
                raise PsError("format specification must follow -o")
            fmt.append(nxt)
            every |= a in ("-eo", "-Ao")
            i += 1
        elif a in ("-p", "--pid"):
            if nxt is None or nxt == "":
                raise PsError("list of process IDs must follow -p")
            pids = (pids or []) + parse_pid_list(nxt)
            i += 1
        elif a in ("-q", "--quick-pid"):
            if nxt is None or nxt == "":
                raise PsError("List of process IDs must follow -q.")
            if quick is not None:
                raise QuickPidError("q/-q/--quick-pid can only be used once.")
            quick = parse_pid_list(nxt)
            i += 1
        elif a in ("-e", "-A"):
            every = True
        elif a in ("-ef", "-fe"):
            every = full = True
        elif a == "-f":
            full = True
        elif a in ("-w", "-ww"):
            pass  # without a terminal (and COLUMNS unset) procps never cuts the last column anyway
        elif a.isdecimal():
            pids = (pids or []) + [int(a)]
        elif a.startswith("--"):
            raise PsError("unknown gnu long option")
        elif a.startswith("-"):
            raise PsError("unsupported SysV option")
        else:
            raise PsError("TTY could not be found")
        i += 1
    if quick is not None and pids is not None:
        raise QuickPidError("q/-q/--quick-pid cannot be combined with other selection options.")
    return fmt, pids, every, full, quick


def ps(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """``ps [-ww] [-e] -o FMT [-p PIDS | -q PIDS]`` (also ``-eo``, ``-ef``): (exit status, stdout, stderr)."""
    try:
        fmt, pids, every, full, quick = _parse(args)
        if full and not fmt:
            fmt = ["user=UID,pid,ppid,stime=STIME,tty,etimes=TIME,cmd"]
        columns = _columns(fmt or ["pid,tty,etimes,cmd"])
    except QuickPidError as exc:
        return 1, "", f"{exc}\n"
    except PsError as exc:
        return 1, "", f"error: {exc}\n{USAGE}"
    pid_width = len(str(node.pid_max))
    widths = [pid_width if width is None else width for _n, _h, width in columns]
    alive = {p.pid: p for p in node.alive()}
    # ps lists each selected process once, in PID order, whatever the -p list repeats.
    if quick is not None:  # only these, as listed
        procs = [alive[p] for p in quick if p in alive]
    else:
        procs = list(alive.values()) if every or pids is None else [alive[p] for p in sorted(set(pids)) if p in alive]

    def row(cells: list[str]) -> str:
        last = len(cells) - 1
        return " ".join(_cell(columns[i][0], cell, widths[i], i == last) for i, cell in enumerate(cells)).rstrip()

    lines = []
    if any(header for _n, header, _w in columns):
        lines.append(row([header or "" for _n, header, _w in columns]))
    lines += [row([_value(p, name, now) for name, _h, _w in columns]) for p in procs]
    return (0 if procs else 1), "".join(line + "\n" for line in lines), ""


__all__ = ["PsError", "USAGE", "lstart", "parse_pid_list", "ps"]

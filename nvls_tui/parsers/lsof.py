"""``lsof /dev/nvidia*`` (the table, or ``-F`` field output) as holders of the device files.

lsof is the other tool operators reach for when ``nvidia-smi -r`` is refused. What it prints, as the
real lsof 4.95 does (tests/unit/test_parsers_lsof.py runs it):

- one row per open file descriptor, so a process appears once per fd: ``3u`` and ``6r`` on the same
  ``/dev/nvidia0``, a ``mem`` row for a mapping; every row of a PID makes one holder;
- COMMAND cut to 9 characters (``nvidia-pe`` for nvidia-persistenced) and a space in it written
  ``\\x20``; ``-F`` output carries the kernel's comm (up to 15 characters) in its ``c`` field;
- its own complaints on stderr (``lsof: WARNING: can't stat() ...``, ``Output information may be
  incomplete.``, ``lsof: status error on /dev/nvidia*: No such file or directory``), kept as warnings;
- ``lsof | grep nvidia`` also lists the NVIDIA libraries a process mapped: they are not device files,
  and a process that only maps them holds no GPU.

The access letters are fuser's (``F...m``: open for writing, mmapped), so both sources read alike.
"""

from __future__ import annotations

import re

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.fuser import FuserHolder

# A device file this tool cares about; anything else (libnvidia-ml.so mapped by a process) is not a holder.
_DEVICE = re.compile(r"^/dev/nvidia[\w.-]*$")
HEADER = re.compile(r"^\s*COMMAND\s+PID\s+(?:TID\s+)?(?:TASKCMD\s+)?USER\s+FD\s+TYPE\s+DEVICE\s+SIZE/OFF\s+NODE\s+NAME\s*$")
# FD: a number with its mode (u, r, w; a lock letter may follow) or a name (mem, txt, cwd, rtd, DEL, ...).
_FD = re.compile(r"^(?:(?P<num>\d{1,9})(?P<mode>[urw]?)[A-Za-z]?|(?P<name>[a-zA-Z]{2,5})(?:-\S+)?)$")
_TYPE = re.compile(r"^(?:[A-Z][A-Z0-9_]{1,7}|unknown|a_inode|unix)$")
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _unescape(command: str) -> str:
    """lsof's ``a\\x20b`` -> ``a b``; escapes of other than printable ASCII stay as printed (no control
    character is made here: the text was cleaned before it was parsed)."""
    def one(m: re.Match[str]) -> str:
        code = int(m.group(1), 16)
        return chr(code) if 0x20 <= code < 0x7F else m.group(0)
    return _ESCAPE.sub(one, command)


class _Holders:
    """Rows folded into one holder per PID, in the order lsof first listed each PID."""

    def __init__(self) -> None:
        self.found: dict[int, list] = {}  # pid -> [user, access flags, command, devices]

    def add(self, pid: int, user: str, command: str, fd: str, mode: str, device: str) -> None:
        entry = self.found.setdefault(pid, [user, set(), command, []])
        if device not in entry[3]:
            entry[3].append(device)
        entry[1].update(_access(fd, mode))
        if not entry[2]:
            entry[2] = command

    def holders(self) -> tuple[FuserHolder, ...]:
        return tuple(FuserHolder(pid, user, _letters(flags), command, tuple(devices))
                     for pid, (user, flags, command, devices) in self.found.items())


def _access(fd: str, mode: str) -> set[str]:
    """fuser's access flags of one lsof descriptor: ``F`` written, ``f`` read, ``m`` mapped, ``r``/``c``/``e``."""
    if fd.isdecimal():
        return {"F"} if mode in ("u", "w") else {"f"}
    return {"mem": {"m"}, "rtd": {"r"}, "cwd": {"c"}, "txt": {"e"}}.get(fd.lower(), set())


def _letters(flags: set[str]) -> str:
    """psmisc's five columns, in its order: file (F written, f read), root, cwd, executable, mmap."""
    file = "F" if "F" in flags else ("f" if "f" in flags else ".")
    return file + "".join(c if c in flags else "." for c in "rcem")


def _table_row(line: str) -> tuple[int, str, str, str, str, str] | None:
    """``(pid, user, command, fd, mode, name)`` of one table row, or None when it is not one."""
    tokens = line.split()
    if len(tokens) < 5 or not tokens[1].isdecimal() or len(tokens[1]) > 10:
        return None
    # The FD column is the first token after the PID that reads as an FD and is followed by a TYPE; the
    # USER is the token before it (a TID and TASKCMD may sit between PID and USER).
    for i in range(3, min(len(tokens) - 1, 6)):
        m = _FD.match(tokens[i])
        if m and _TYPE.match(tokens[i + 1]):
            name = next((t for t in tokens[i + 2:] if t.startswith("/")), None)
            if name is None:
                return None
            fd = m.group("num") or m.group("name")
            return int(tokens[1]), tokens[i - 1], _unescape(tokens[0]), fd, m.group("mode") or "", name
    return None


def _is_complaint(line: str) -> bool:
    return line.startswith("lsof:") or line.strip() == "Output information may be incomplete."


def parse_lsof(text: str) -> Parsed[tuple[FuserHolder, ...]]:
    """Parse ``lsof /dev/nvidia*`` in its table form or its ``-F`` field form: one holder per PID.

    Returns:
        The holders (pid, user, fuser's access letters, command, every device file), and a warning per
        thing lsof complained about or a line that could not be read.
    """
    if not isinstance(text, str):
        return Parsed((), (f"Expected text, got {type(text).__name__}.",))
    lines = text.splitlines()
    if any(re.match(r"^p\d{1,10}$", line) for line in lines[:200]) and not any(HEADER.match(line) for line in lines):
        return _parse_fields(lines)
    found = _Holders()
    warnings: list[str] = []
    not_devices = 0
    for raw in lines:
        line = raw.rstrip()
        if not line.strip() or HEADER.match(line):
            continue
        if _is_complaint(line):
            _complain(warnings, line)
            continue
        row = _table_row(line)
        if row is None:
            warnings.append(f"unreadable lsof line: {line.strip()[:200]}")
            continue
        pid, user, command, fd, mode, name = row
        if not _DEVICE.match(name):
            not_devices += 1
            continue
        found.add(pid, user, command, fd, mode, name)
    if not_devices:
        warnings.append(f"{not_devices} lsof {'lines name' if not_devices > 1 else 'line names'} no /dev/nvidia* "
                        "file (a mapped library is not a device held): left out")
    return Parsed(found.holders(), tuple(warnings))


def _complain(warnings: list[str], line: str) -> None:
    said = line.strip()[:200]
    if said not in warnings:
        warnings.append(said)


def _parse_fields(lines: list[str]) -> Parsed[tuple[FuserHolder, ...]]:
    """``lsof -F`` output: a ``p`` line starts a process (``c`` command, ``u`` uid, ``L`` login name),
    then ``f`` starts a file (``a`` access mode, ``n`` name)."""
    found = _Holders()
    warnings: list[str] = []
    pid: int | None = None
    user = command = fd = mode = ""
    for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            continue
        if _is_complaint(line):
            _complain(warnings, line)
            continue
        tag, value = line[0], line[1:]
        if tag == "p":
            if not value.isdecimal() or len(value) > 10:
                warnings.append(f"unreadable lsof field: {line[:200]}")
                pid = None
                continue
            pid, user, command, fd, mode = int(value), "", "", "", ""
        elif tag == "c":
            command = value
        elif tag == "L":
            user = value
        elif tag == "u" and not user:
            user = value
        elif tag == "f":
            fd, mode = value, ""
        elif tag == "a":
            mode = value.strip()
        elif tag == "n" and pid is not None and _DEVICE.match(value):
            found.add(pid, user, command, fd, mode, value)
    return Parsed(found.holders(), tuple(warnings))


__all__ = ["HEADER", "parse_lsof"]

"""``fuser -v /dev/nvidia*`` (the holders table) and terse ``fuser FILE ...`` output.

``nvidia-smi`` lists only processes with a CUDA context; fuser sees every process with a device file
open, which is what decides whether ``nvidia-smi -r`` will be refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed

# psmisc prints the file name only on the first line of its group; a name wider than the column
# is printed alone on its line and the entries follow indented.
_NAMED = re.compile(r"^(?P<name>\S[^:]*):(?:\s+(?P<rest>.*))?$")
_STDERR_NAME = re.compile(r"^(?P<name>[^\s:][^:]*):")
_ERRORS = ("Cannot stat", "does not exist", "No such file", "Permission denied", "Usage:")
_ERROR = re.compile("|".join(re.escape(marker) for marker in _ERRORS))


@dataclass(frozen=True, slots=True)
class FuserHolder:
    """One process holding one or more device files.

    Attributes:
        access: psmisc's access letters (``F...m``: open for writing, mmapped), merged across files.
        command: the process name as fuser prints it (the kernel's comm, at most 15 characters).
        devices: every file this PID holds, in the order fuser listed them.
    """

    pid: int
    user: str
    access: str
    command: str
    devices: tuple[str, ...]


def _merge_access(a: str, b: str) -> str:
    """Combine two access strings letter by letter (``F....`` + ``....m`` -> ``F...m``)."""
    if len(a) != len(b):
        return a
    return "".join(x if x != "." else y for x, y in zip(a, b, strict=True))


def _table_lines(text: str, warnings: list[str]):
    """The lines of a ``-v`` table as ``(file name or None, the rest)``; errors and junk go to warnings.

    psmisc prints the file name only on the first line of its group (a name wider than the column
    stands alone on its line); the other lines are indented.
    """
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        if line[0].isspace():
            yield None, line
            continue
        if _ERROR.search(line):
            warnings.append(line.strip()[:200])
            continue
        m = _NAMED.match(line)
        if m is None:
            warnings.append(f"unreadable fuser line: {line[:200]}")
            continue
        yield m.group("name").strip(), m.group("rest") or ""


def parse_fuser_v(text: str) -> Parsed[tuple[FuserHolder, ...]]:
    """Parse ``fuser -v FILE ...`` (stderr merged): one holder per PID, devices merged.

    ``kernel`` entries (a mount point on the file system) have no PID and are skipped.
    """
    # pid -> [user, access, command, devices], in the order fuser first listed each PID. A holder of
    # all eight GPUs appears on ten rows: its entry is merged in place, the holder built once.
    found: dict[int, list] = {}
    warnings: list[str] = []
    device: str | None = None
    for name, rest in _table_lines(text, warnings):
        if name is not None:
            device = name
        line = rest
        tokens = rest.split(None, 3)
        if not tokens or tokens[:2] == ["USER", "PID"]:
            continue
        if len(tokens) >= 2 and tokens[1] == "kernel":
            continue
        if device is None or len(tokens) < 3 or not tokens[1].isdecimal() or len(tokens[1]) > 12:
            warnings.append(f"unreadable fuser entry: {line.strip()[:200]}")
            continue
        user, pid, access = tokens[0], int(tokens[1]), tokens[2]
        command = tokens[3].strip() if len(tokens) > 3 else ""
        entry = found.get(pid)
        if entry is None:
            found[pid] = [user, access, command, [device]]
            continue
        if device not in entry[3]:
            entry[3].append(device)
        if access != entry[1]:
            entry[1] = _merge_access(entry[1], access)
        if not entry[2]:
            entry[2] = command
    holders = tuple(FuserHolder(pid, user, access, command, tuple(devices))
                    for pid, (user, access, command, devices) in found.items())
    return Parsed(holders, tuple(warnings))




def parse_fuser_streams(stdout: str, stderr: str = "") -> Parsed[tuple[FuserHolder, ...]]:
    """``fuser -v FILE ...`` as a program reads it: stdout and stderr apart, or merged into one.

    psmisc writes each PID to stdout and the rest of its ``-v`` table (user, access, command) to
    stderr, so only a merged stream (``2>&1``, a terminal) has the PID inside its row. Read apart
    (an SSH exec, a subprocess), the rows of stderr take the PIDs of stdout in order.
    """
    words = stdout.split()
    if not words or not all(_TERSE_PID.match(w) for w in words):
        return parse_fuser_v(stdout + ("" if not stdout or stdout.endswith("\n") else "\n") + stderr)
    pids = [int(m.group(1)) for token in words if (m := _TERSE_PID.match(token))]
    rows: list[str] = []
    warnings: list[str] = []
    for name, rest in _table_lines(stderr, warnings):
        label, line = (f"{name}:" if name is not None else ""), rest
        tokens = rest.split(None, 2)
        if not tokens and label:
            rows.append(label)  # a long file name stands alone; its rows follow indented
            continue
        if not tokens or tokens[:2] == ["USER", "PID"]:
            continue
        if len(tokens) >= 2 and tokens[1] == "kernel":
            continue
        if not pids:
            warnings.append(f"a fuser row without a PID on stdout: {line.strip()[:200]}")
            continue
        user, access, command = (tokens + ["", ""])[:3]
        rows.append(f"{label:<20} {user} {pids.pop(0)} {access} {command}")
    if pids:
        warnings.append(f"{len(pids)} PIDs on fuser's stdout had no row on stderr")
    parsed = parse_fuser_v("\n".join(rows) + "\n")
    return Parsed(parsed.value, tuple(warnings) + parsed.warnings)


_TERSE_PID = re.compile(r"^(\d{1,12})[a-zA-Z]*$")


def _pids(tokens: list[str]) -> tuple[int, ...]:
    got: list[int] = []
    for token in tokens:
        m = _TERSE_PID.match(token)
        if m and int(m.group(1)) not in got:
            got.append(int(m.group(1)))
    return tuple(got)


def parse_fuser_terse(stdout: str, stderr: str = "") -> Parsed[dict[str, tuple[int, ...]]]:
    """Parse terse ``fuser FILE ...``: ``{file: (pid, ...)}``.

    fuser writes the PIDs to stdout and the file names and access letters to stderr. When both went
    to one stream (``2>&1``, a terminal) each line reads ``/dev/nvidia0:   560m   561m``. When they
    were captured apart, PIDs cannot be tied to files unless there was one file; otherwise every
    PID is filed under the key ``"*"`` (some device) with a warning.
    """
    result: dict[str, tuple[int, ...]] = {}
    loose: list[str] = []
    warnings: list[str] = []
    for raw in stdout.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _ERROR.search(line):
            warnings.append(line[:200])
            continue
        m = _NAMED.match(line)
        if m is not None:
            pids = _pids((m.group("rest") or "").split())
            result[m.group("name").strip()] = tuple(dict.fromkeys(result.get(m.group("name").strip(), ()) + pids))
        else:
            loose.extend(line.split())
    names = [m.group("name").strip() for raw in stderr.splitlines() if (m := _STDERR_NAME.match(raw.strip()))]
    pids = _pids(loose)
    if pids:
        if len(names) == 1:
            result[names[0]] = tuple(dict.fromkeys(result.get(names[0], ()) + pids))
        else:
            result["*"] = pids
            if len(names) > 1:
                warnings.append("fuser's PIDs and file names were captured apart; PIDs are not tied to files")
    return Parsed(result, tuple(warnings))


__all__ = ["FuserHolder", "parse_fuser_streams", "parse_fuser_terse", "parse_fuser_v"]

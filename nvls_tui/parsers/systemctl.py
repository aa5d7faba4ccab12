"""``systemctl status UNIT`` and ``systemctl show -p ... UNIT ...`` output.

``show`` is what a poll runs (stable key=value output); ``status`` is what operators paste into
``analyze`` and what the incident write-up quotes, so both end up as :class:`ServiceState`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.model import ServiceState
from nvls_tui.parsers.base import Parsed

# The first line: a state bullet (●, ×, ○, ↻, * on non-UTF-8 terminals, or a mangled byte), the unit
# name and its description.
_HEAD = re.compile(r"^\s*(?:\S{1,4}\s+)?(?P<unit>[\w@:.\\-]+\.(?:service|timer|socket|scope|slice|target|mount|path))"
                   r"(?:\s+-\s+(?P<desc>.*))?$")
_NOT_FOUND = re.compile(r"Unit (?P<unit>\S+?)\.? could not be found")
_LOADED = re.compile(r"^\s*Loaded:\s*(?P<load>[\w-]+)(?:\s*\((?P<inner>[^)]*)\)?)?")
_ACTIVE = re.compile(
    r"^\s*Active:\s*(?P<active>[\w-]+)(?:\s*\((?P<sub>[^)]*)\))?(?:\s*\((?P<res>Result:[^)]*)\))?"
    r"(?:\s*since\s+(?P<since>[^;]+))?"
)
_MAIN_PID = re.compile(r"^\s*Main PID:\s*(?P<pid>\d{1,12})(?:\s*\((?P<inner>[^)]*)\))?")


@dataclass(frozen=True, slots=True)
class UnitStatus:
    """What ``systemctl status`` says beyond :class:`ServiceState`.

    Attributes:
        service: the unit's state (main_pid is None when the main process has exited).
        description: the text after the unit name on the first line.
        path: the unit file from the ``Loaded:`` line.
        enablement: ``enabled``, ``disabled``, ``masked``, ... from the ``Loaded:`` line.
        exited_pid: the PID of a main process that has exited (``9946 (code=killed, signal=KILL)``).
        exit_status: the parenthesised exit details of that process (``code=killed, signal=KILL``).
        process_name: the running main process's name (``nv-fabricmanage``, truncated by the kernel).
    """

    service: ServiceState
    description: str | None = None
    path: str | None = None
    enablement: str | None = None
    exited_pid: int | None = None
    exit_status: str | None = None
    process_name: str | None = None


def parse_status_details(text: str) -> Parsed[UnitStatus]:
    """Parse ``systemctl status UNIT`` into a :class:`UnitStatus` (the first unit in the text)."""
    name: str | None = None
    desc = path = enablement = active = sub = result = since = None
    load: str | None = None
    main_pid = exited_pid = None
    exit_status = process_name = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            if name is not None and active is not None:
                break  # the journal tail follows the blank line
            continue
        if name is None:
            if m := _NOT_FOUND.search(line):
                name, load, active = m.group("unit"), "not-found", "inactive"
                break
            if m := _HEAD.match(line):
                name, desc = m.group("unit"), (m.group("desc") or None)
            continue
        if m := _LOADED.match(line):
            load = m.group("load")
            parts = [p.strip() for p in (m.group("inner") or "").split(";")]
            path = parts[0] or None if parts else None
            enablement = parts[1] if len(parts) > 1 and parts[1] else None
        elif m := _ACTIVE.match(line):
            active = m.group("active")
            inner = m.group("sub")
            res = m.group("res")
            if inner and inner.startswith("Result:"):
                res, inner = inner, None
            sub = inner.strip() if inner else (active if active == "failed" else None)
            result = res.split(":", 1)[1].strip() if res else None
            since = m.group("since").strip() if m.group("since") else None
        elif m := _MAIN_PID.match(line):
            pid = int(m.group("pid"))
            inner = m.group("inner")
            if inner and "code=" in inner:
                exited_pid, exit_status = pid, inner.strip()
            else:
                main_pid, process_name = pid, (inner.strip() if inner else None)
    if name is None:
        return Parsed(
            UnitStatus(ServiceState(name="", active="unknown")),
            ("no unit header line (● UNIT - DESCRIPTION) was found",),
        )
    warnings: tuple[str, ...] = ()
    if active is None:
        warnings = (f"no Active: line for {name}",)
    state = ServiceState(
        name=name,
        active=active or "unknown",
        sub=sub,
        load=load,
        main_pid=main_pid,
        result=result,
        since=since,
    )
    return Parsed(UnitStatus(state, desc, path, enablement, exited_pid, exit_status, process_name), warnings)


def parse_status(text: str) -> Parsed[ServiceState]:
    """Parse ``systemctl status UNIT`` (either bullet form) into a :class:`ServiceState`."""
    parsed = parse_status_details(text)
    return Parsed(parsed.value.service, parsed.warnings)


_SHOW_KEYS = {"Id", "LoadState", "ActiveState", "SubState", "MainPID", "Result", "ActiveEnterTimestamp",
              "InactiveEnterTimestamp", "NRestarts", "ExecMainCode", "ExecMainStatus"}


def parse_show(text: str) -> Parsed[tuple[ServiceState, ...]]:
    """Parse ``systemctl show -p Id,LoadState,ActiveState,SubState,MainPID,Result,ActiveEnterTimestamp u1 u2``.

    Units are separated by blank lines; systemd prints the properties in its own order (not the
    order asked for), so a repeated key also starts a new unit.
    """
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    warnings: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if not sep or not key or " " in key:
            warnings.append(f"not a key=value line: {line[:120]}")
            continue
        if key in current:
            blocks.append(current)
            current = {}
        current[key] = value.strip()
    if current:
        blocks.append(current)
    states: list[ServiceState] = []
    for block in blocks:
        name = block.get("Id")
        if not name:
            warnings.append("a unit block without Id= was skipped")
            continue
        pid_text = block.get("MainPID", "")
        main_pid = int(pid_text) if pid_text.isdecimal() and len(pid_text) <= 12 and int(pid_text) > 0 else None
        states.append(
            ServiceState(
                name=name,
                active=block.get("ActiveState") or "unknown",
                sub=block.get("SubState") or None,
                load=block.get("LoadState") or None,
                main_pid=main_pid,
                result=block.get("Result") or None,
                since=_since(block.get(_SINCE_KEY.get(block.get("ActiveState", ""), "ActiveEnterTimestamp"))),
                restarts=_count(block.get("NRestarts")),
                killed_by=_signal(block.get("ExecMainCode"), block.get("ExecMainStatus")),
            )
        )
    return Parsed(tuple(states), tuple(warnings))


# The time of the unit's current state, as `systemctl status` says "since": a failed or stopped unit
# since it went down (when FM was killed), a running one since it started.
_SINCE_KEY = {"failed": "InactiveEnterTimestamp", "inactive": "InactiveEnterTimestamp"}


# ExecMainCode is the main process's si_code: CLD_KILLED (2) and CLD_DUMPED (3) mean ExecMainStatus is a signal.
_KILLED_CODES = frozenset({"2", "3"})


def _signal(code: str | None, status: str | None) -> int | None:
    """The signal that ended the main process, or None (it exited, or the properties were not read)."""
    if code not in _KILLED_CODES or not status or not status.isdecimal() or len(status) > 3:
        return None
    return int(status) or None


def _count(value: str | None) -> int | None:
    """``NRestarts``: a service's automatic restarts; None where not printed (timers, older systemd) or odd."""
    if value is None or not value.isdecimal() or len(value) > 9:
        return None
    return int(value)


def _since(value: str | None) -> str | None:
    """``ActiveEnterTimestamp``: empty or ``n/a`` when the unit never became active."""
    if not value or value.lower() == "n/a":
        return None
    return value


__all__ = ["UnitStatus", "parse_show", "parse_status", "parse_status_details"]

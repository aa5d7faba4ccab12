"""What an audit record may hold: the kind of every field a runbook event writes, checked once.

An audit record is a serialized runbook event (:meth:`RunbookEvent.to_record`), and
:func:`nvls_tui.runbook.event_records.from_record` reads one back through these checks before it
builds the event. A line of an audit log is trusted only as far as this module says. Each field a run writes has its
kind (text, a whole number, a number, true/false, a list or an object of known fields), numbers are
finite and no larger than a run writes, times are times, and no record nests deeper than a run's
own. A record that breaks any of it is a bad line: :func:`record_problem` says why in one phrase,
the report names the line and renders every other one, so the code that renders reads each field
knowing its kind. Fields this module does not name may hold anything (a newer nvls-tui may add
some); the report never reads them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from typing import Any

# A check gets a value and where it is (``summary.fabric[3].state``); it returns None or the problem.
Check = Callable[[Any, str], str | None]

# The deepest a run's record nests (record, summary, fabric, one GPU: 4) with room to grow.
MAX_DEPTH = 16
# No count, PID, size or duration a run writes comes near 2**63; JSON's exponent form can write 1e300.
MAX_NUMBER = 2**63
# Epoch seconds up to the end of year 9999: datetime cannot show a later one.
MAX_EPOCH = 253_402_300_000


def _kind_of(value: Any) -> str:
    """The JSON kind of ``value``, as a problem phrase names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number out of range" if not _finite(value) else "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def _finite(value: int | float) -> bool:
    return (isinstance(value, int) or math.isfinite(value)) and abs(value) <= MAX_NUMBER


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)


def _is_time(value: Any) -> bool:
    """An ISO 8601 time with a zone that converts to UTC (what :func:`audit._iso` writes)."""
    if not isinstance(value, str):
        return False
    try:
        moment = dt.datetime.fromisoformat(value)
        if moment.tzinfo is not None:
            moment.astimezone(dt.UTC)
    except (ValueError, OverflowError):
        return False
    return True


def scalar(name: str, test: Callable[[Any], bool]) -> Check:
    """A check of one value: ``test`` passes, else "``where`` is <kind>, not <name>"."""
    def check(value: Any, where: str) -> str | None:
        return None if test(value) else f"`{where}` is {_kind_of(value)}, not {name}"

    return check


TEXT = scalar("text", lambda v: isinstance(v, str))
FLAG = scalar("true/false", lambda v: isinstance(v, bool))
NUMBER = scalar("a number", _is_number)
WHOLE = scalar("a whole number", lambda v: _is_number(v) and isinstance(v, int))
EPOCH = scalar("a time in epoch seconds", lambda v: _is_number(v) and 0 <= v <= MAX_EPOCH)
TIME = scalar("an ISO time", _is_time)


def optional(check: Check) -> Check:
    """``check``, or null."""
    def optional_check(value: Any, where: str) -> str | None:
        return None if value is None else check(value, where)

    return optional_check


def list_of(item: Check) -> Check:
    """A list whose every item passes ``item``."""
    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, list):
            return f"`{where}` is {_kind_of(value)}, not a list"
        return next((p for i, v in enumerate(value) if (p := item(v, f"{where}[{i}]"))), None)

    return check


def map_of(item: Check) -> Check:
    """An object whose keys are free (unit names, states) and whose every value passes ``item``.

    A key named in a problem is cut to 40 characters and loses its backticks (they mark the path).
    """
    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"`{where}` is {_kind_of(value)}, not an object"
        return next((p for k, v in value.items() if (p := item(v, f"{where}.{_key(k)}"))), None)

    return check


def _key(key: Any) -> str:
    return str(key)[:40].replace("`", "'")


def fields(spec: Mapping[str, Check]) -> Check:
    """An object whose named fields, where present, pass their checks (other fields are not read)."""
    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"`{where}` is {_kind_of(value)}, not an object"
        return next((p for name, field_check in spec.items() if name in value
                     and (p := field_check(value[name], f"{where}.{name}" if where else name))), None)

    return check


TEXTS = list_of(TEXT)
MAYBE_TEXT = optional(TEXT)

SMOKE = fields({"avg_busbw": optional(NUMBER), "passed": FLAG, "out_of_bounds": optional(WHOLE),
                "nvls_used": FLAG, "completed": FLAG, "errors": TEXTS, "threshold": optional(NUMBER),
                "at": MAYBE_TEXT, "boot_id": MAYBE_TEXT, "uptime": optional(NUMBER)})
HOLDER = fields({"pid": WHOLE, "user": MAYBE_TEXT, "command": MAYBE_TEXT, "kind": MAYBE_TEXT, "devices": TEXTS,
                 "unit": MAYBE_TEXT, "pod": MAYBE_TEXT, "start_time": MAYBE_TEXT, "ppid": optional(WHOLE),
                 "job": optional(fields({"id": WHOLE, "user": TEXT, "name": TEXT, "end": MAYBE_TEXT,
                                         "state": MAYBE_TEXT}))})
SUMMARY = fields({
    "reachable": FLAG, "error": MAYBE_TEXT, "platform": TEXT, "driver": MAYBE_TEXT, "fm_version": MAYBE_TEXT,
    "verdict": TEXT, "findings": TEXTS,
    "finding_details": list_of(fields({"code": TEXT, "severity": TEXT, "message": TEXT})),
    "units": map_of(TEXT), "unit_results": map_of(TEXT), "unit_since": map_of(TEXT), "unit_signals": map_of(WHOLE),
    "fabric": list_of(fields({"index": WHOLE, "state": MAYBE_TEXT, "status": MAYBE_TEXT,
                              "persistence_mode": MAYBE_TEXT})),
    "holders": list_of(HOLDER), "kernel_events": TEXTS,
    "kernel_lines": list_of(fields({"code": TEXT, "xid": optional(WHOLE), "timestamp": MAYBE_TEXT,
                                    "current": FLAG})),
    "kernel_lines_left_out": WHOLE, "smoke": optional(SMOKE), "repair_record": FLAG,
})
CHANGE = fields({"what": TEXT, "at": EPOCH, "unit": MAYBE_TEXT, "before": MAYBE_TEXT, "pid": optional(WHOLE),
                 "command": MAYBE_TEXT, "holder_kind": MAYBE_TEXT, "signal": MAYBE_TEXT})

# Every field a run writes at the top of a record (RunbookEvent.to_record, audit.AuditLog.encode); a name
# two events use means the same there, but for those in _BY_EVENT.
RECORD: dict[str, Check] = {
    "schema": WHOLE, "time": TIME, "operator": MAYBE_TEXT, "dry_run": FLAG, "node": MAYBE_TEXT, "step": MAYBE_TEXT,
    "event": TEXT, "argv": optional(TEXTS), "env": map_of(TEXT), "fence": TEXT, "bookkeeping": optional(FLAG), "purpose": MAYBE_TEXT, "kind": TEXT, "run_id": TEXT, "mode": TEXT,
    "exit_status": optional(WHOLE), "output": TEXT, "error": MAYBE_TEXT, "duration": NUMBER, "line": TEXT,
    "status": TEXT, "message": TEXT, "commands": TEXTS, "label": TEXT, "summary": SUMMARY,
    "holders": list_of(HOLDER), "waiting": FLAG, "elapsed": NUMBER, "limit": optional(NUMBER),
    "pid": optional(WHOLE), "signal": MAYBE_TEXT, "command": MAYBE_TEXT, "holder_kind": MAYBE_TEXT,
    "outcome": MAYBE_TEXT, "unit": MAYBE_TEXT, "states": map_of(WHOLE), "wait": TEXT, "state": TEXT,
    "size": optional(WHOLE), "busbw": optional(NUMBER),
    "row": fields({"size": optional(WHOLE), "oop_busbw": optional(NUMBER), "ip_busbw": optional(NUMBER),
                   "oop_time_us": optional(NUMBER)}),
    "smoke": SMOKE, "units": TEXTS, "persistence_gpus": list_of(WHOLE), "failed": TEXTS, "level": TEXT,
    "result": TEXT, "what": TEXT, "before": MAYBE_TEXT, "changes": list_of(CHANGE), "put_back": FLAG,
}
# A wait's ``command`` says whether the wait is one command (WaitStarted); elsewhere it is a command line.
_BY_EVENT: dict[str, Check] = {"wait-started": fields({**RECORD, "command": FLAG})}
_ANY_EVENT = fields(RECORD)


def _too_deep(value: Any) -> bool:
    """True when ``value`` nests deeper than :data:`MAX_DEPTH` (walked without recursion; only the containers
    are stacked, a record's many scalars are passed over where they are)."""
    stack = [(value, 0)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_DEPTH:
            return True
        for inner in item.values() if isinstance(item, dict) else item:
            if isinstance(inner, dict | list):
                stack.append((inner, depth + 1))
    return False


def shape_problem(value: Any) -> str | None:
    """Why a decoded JSONL line cannot be a record at all (not an object, or nested past :data:`MAX_DEPTH`), or
    None. A line that passes may be walked recursively (cleaned, say) before its fields are checked."""
    if not isinstance(value, dict):
        return f"{_kind_of(value)}, not a record"
    if _too_deep(value):
        return "nested deeper than any audit record"
    return None


def fields_problem(record: dict[str, Any]) -> str | None:
    """Why a record of a sound shape (:func:`shape_problem` passed it) holds a field of the wrong kind, or None."""
    check = _BY_EVENT.get(record["event"]) if isinstance(record.get("event"), str) else None
    return (check or _ANY_EVENT)(record, "")


def record_problem(value: Any) -> str | None:
    """Why a decoded JSONL line is no audit record the report may read (None: it is one)."""
    return shape_problem(value) or fields_problem(value)


__all__ = ["HOLDER", "MAX_DEPTH", "SMOKE", "fields_problem", "record_problem", "shape_problem"]

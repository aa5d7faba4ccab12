"""An audit record read back into the runbook event it serializes (the inverse of ``to_record``).

One vocabulary: the audit log holds the events the run emitted (:meth:`RunbookEvent.to_record`), and
:func:`from_record` turns a record into the same frozen event again. Every field is type-checked first
(:mod:`nvls_tui.runbook.record_schema`); a record that does not decode into its event (a field of
another kind, a field the event cannot do without, a format newer than this nvls-tui reads) is no
record at all, and :func:`record_problem` says why in one phrase. Records that are no runbook event
(the log's own ``audit-opened``, or a kind a newer nvls-tui adds) are checked field by field only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from typing import Any

from nvls_tui.model import Holder, HolderKind, SmokeResult
from nvls_tui.model.scheduler import Job
from nvls_tui.runbook import events as ev
from nvls_tui.runbook.record_schema import record_problem as field_problem

# Every event by the name its record carries in ``event``.
EVENT_KINDS: dict[str, type[ev.RunbookEvent]] = {
    cls.kind: cls for cls in (
        ev.RunStarted, ev.StepStarted, ev.StepFinished, ev.CommandStarted, ev.CommandFinished, ev.OutputLine,
        ev.NodeObserved, ev.HoldersRemaining, ev.ProcessSignalled, ev.FabricProgress, ev.WaitStarted, ev.SmokeRow,
        ev.SmokeFinished, ev.Restored, ev.Note, ev.RunFinished, ev.ManualChanged, ev.ManualChanges)
}
# Each event's field types, read once (whether a record's null is a value or a field left out).
_HINTS = {kind: typing.get_type_hints(cls) for kind, cls in EVENT_KINDS.items()}
# A record's own fields that are not the event's (the log adds them, or they stand for a field).
_RECORD_ONLY = frozenset({"schema", "time", "node", "step", "event", "operator", "dry_run"})


class NotAnEvent(ValueError):
    """A record that does not decode into the runbook event it names; ``str()`` says why."""


def from_record(record: dict[str, Any]) -> ev.RunbookEvent:
    """The runbook event ``record`` serializes (redacted where the log redacted it).

    Raises:
        NotAnEvent: the record is no runbook event's, or does not decode into it.
    """
    problem = field_problem(record)
    if problem is not None:
        raise NotAnEvent(problem)
    return decoded(record)


def decoded(record: dict[str, Any]) -> ev.RunbookEvent:
    """The runbook event of a record whose fields :mod:`record_schema` already passed (:func:`from_record`
    without that check again: a reader that checked the record decodes it once).

    Raises:
        NotAnEvent: the record is no runbook event's, or does not decode into it.
    """
    schema = record.get("schema", ev.SCHEMA)
    if schema != ev.SCHEMA:
        raise NotAnEvent(f"record format {schema}, not the {ev.SCHEMA} this nvls-tui reads")
    cls = EVENT_KINDS.get(record["event"]) if isinstance(record.get("event"), str) else None
    if cls is None:
        raise NotAnEvent(f"`event` {str(record.get('event'))[:40]!r} is no runbook event")
    if not isinstance(record.get("node"), str):
        raise NotAnEvent("a runbook event's record without `node`")
    if "time" not in record:
        raise NotAnEvent("a runbook event's record without `time`")
    at = dt.datetime.fromisoformat(record["time"])
    at = at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)
    values: dict[str, Any] = {"host": record["node"], "step": record.get("step") or "", "at": at.timestamp()}
    if cls is ev.ManualChanged:
        # The change's fields ride at the top of the record and its time is the record's.
        change = {k: v for k, v in record.items() if k not in _RECORD_ONLY and k != "argv"}
        return ev.ManualChanged(**values, change={**change, "at": values["at"]})
    hints = _HINTS[cls.kind]
    for f in dataclasses.fields(cls):
        if f.name in values:
            continue
        if record.get(f.name) is None and (f.name not in record or not _nullable(hints[f.name])):
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise NotAnEvent(f"a `{cls.kind}` record without `{f.name}`")
            continue  # the event's default (a record may leave out a field a run always writes)
        values[f.name] = _decoded(f.name, record[f.name])
    return cls(**values)


def record_problem(record: Any) -> str | None:
    """Why a decoded JSONL line is no audit record the report may read (None: it is one).

    A record naming a runbook event must decode into it; any other record (``audit-opened``, a kind a
    newer nvls-tui writes) need only hold fields of the kinds :mod:`record_schema` names.
    """
    problem = field_problem(record)
    if problem is not None or record.get("event") not in EVENT_KINDS:
        return problem
    try:
        from_record(record)
    except NotAnEvent as exc:
        return str(exc)
    return None


def _nullable(hint: Any) -> bool:
    """True when a field's type allows None (``int | None``)."""
    return isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)


def _decoded(name: str, value: Any) -> Any:
    """One field's JSON value as the event holds it: lists as tuples, holders and results as models."""
    if name == "holders":
        return tuple(_holder(h) for h in value)
    if name == "smoke":
        return _smoke(value)
    if name in ("argv", "commands", "units", "failed", "persistence_gpus", "changes"):
        return tuple(value)
    return value


def _smoke(value: dict[str, Any]) -> SmokeResult:
    """A smoke result as the record wrote it (its fields were checked)."""
    if not isinstance(value.get("passed"), bool) or "avg_busbw" not in value:
        raise NotAnEvent("a smoke result without `passed` or `avg_busbw`")
    known = {f.name for f in dataclasses.fields(SmokeResult)}
    return SmokeResult(**{**{k: v for k, v in value.items() if k in known}, "errors": tuple(value.get("errors") or ())})


def _holder(value: dict[str, Any]) -> Holder:
    """A holder as the record wrote it (its fields were checked; a kind this nvls-tui does not know is refused)."""
    try:
        kind = HolderKind(value.get("kind") or HolderKind.OTHER)
    except ValueError:
        raise NotAnEvent(f"`holders` names a holder kind {str(value.get('kind'))[:40]!r} nvls-tui does not know") from None
    for needed in ("pid", "user", "command"):
        if value.get(needed) is None:
            raise NotAnEvent(f"a holder without `{needed}`")
    job = value.get("job")
    if job is not None and any(job.get(k) is None for k in ("id", "user", "name")):
        raise NotAnEvent("a holder's `job` without its id, user or name")
    known = {f.name for f in dataclasses.fields(Holder)}
    fields = {k: v for k, v in value.items() if k in known}
    return Holder(**{**fields, "kind": kind, "devices": tuple(value.get("devices") or ()),
                     "job": Job(**{k: v for k, v in job.items() if k in ("id", "user", "name", "end", "state")})
                     if job is not None else None})


__all__ = ["EVENT_KINDS", "NotAnEvent", "decoded", "from_record", "record_problem"]

"""An audit log's records read back once, typed: what the report (and anything else that reads a log) reads.

A record of a runbook event reads back into that event (:func:`event_records.from_record`); the log's own
records (``audit-opened``) and kinds a newer nvls-tui writes are no event, and read back into an
:class:`OtherRecord` holding the few fields a reader may use. Either way the record's time as written, its
operator and its dry-run flag (the log adds them to every record) ride beside it in a :class:`LogEntry`, so a
reader never goes back to the raw JSON. A change made by hand reads into a :class:`ChangeByHand`, whichever
record tells it (a ``manual-change``, an item of ``manual-changes``, a signal sent from the console).

A command's records carry what the command was (:attr:`LogEntry.purpose`, :attr:`LogEntry.bookkeeping`): its
start's marks, written where it was sent, and the result takes its start's (:func:`paired`). A log written before
a mark is judged here as those versions judged it, by the command's words (:mod:`nvls_tui.runbook.bookkeeping`),
so no reader of an entry ever looks at an argv's words to know what a command was.

Every reader here takes a record :func:`event_records.record_problem` passed: each field is of its kind, so
these only choose between a value and its absence (the report shows an absent field as it always has).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nvls_tui.runbook import events as ev
from nvls_tui.runbook.bookkeeping import legacy_bookkeeping, legacy_purpose
from nvls_tui.runbook.changes import Change
from nvls_tui.runbook.event_records import EVENT_KINDS, decoded
from nvls_tui.runbook.logged_changes import change_made


@dataclass(frozen=True, slots=True)
class OtherRecord:
    """A record that is no runbook event: the log's own ``audit-opened``, or a kind a newer nvls-tui writes.

    Attributes:
        kind: the record's ``event`` (None when it has none).
        host: its ``node`` (None for the log's own records).
        step: its ``step`` ("" outside any step).
        run_id: its ``run_id`` (the log's own record names the run).
    """

    kind: str | None
    host: str | None
    step: str = ""
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One audit record read back: its event, and what the log wrote beside every record.

    Attributes:
        event: the runbook event the record serializes, or an :class:`OtherRecord`.
        time: the record's ``time`` as written (ISO 8601, the bastion's UTC; None when it has none): the
            report shows its milliseconds as written, never a float read back and rounded.
        operator: who ran it (None when the record names no one).
        has_operator: the record has an ``operator`` field at all (a log's header says "?" where it has none).
        dry_run: the log was a dry run's.
        purpose: for a command's start or result, what the command was for (one of ``events.PURPOSES``; "" for
            any other command and every other record).
        bookkeeping: for a command's start or result, one of the repair's own lock, record or clock commands.
        sent: for a command's result, when its start was logged (None: the log holds no start for it).
        unanswered: for a command's start, the log holds no result for it.
        change: for a command's start or result, the change it made, read back from its argv
            (:func:`nvls_tui.runbook.logged_changes.change_made`; None for a read and what a report does not tell).

    A result's marks and ``sent``, and a start's ``unanswered``, are its pair's: :func:`paired` sets them.
    """

    event: ev.RunbookEvent | OtherRecord
    time: str | None = None
    operator: str | None = None
    has_operator: bool = False
    dry_run: bool = False
    purpose: str = ""
    bookkeeping: bool = False
    sent: str | None = None
    unanswered: bool = False
    change: Change | None = None

    @property
    def kind(self) -> str | None:
        """The record's ``event``: the event's kind."""
        return self.event.kind

    @property
    def host(self) -> str | None:
        """The node the record is about (None for the log's own records)."""
        return self.event.host

    @property
    def step(self) -> str:
        """The step it belongs to ("" outside any step)."""
        return self.event.step

    @property
    def run_id(self) -> str | None:
        """The run it names: a ``run-started`` event's, or the log's own record's."""
        if isinstance(self.event, ev.RunStarted | OtherRecord):
            return self.event.run_id
        return None


def read_entry(record: Mapping[str, Any]) -> LogEntry:
    """A checked record (:func:`event_records.record_problem` or :func:`record_schema.fields_problem` passed it)
    as its :class:`LogEntry`. Its fields are not checked again here: the reader checked them once.

    Raises:
        event_records.NotAnEvent: a record naming a runbook event that does not decode into it.
    """
    kind = record.get("event")
    event: ev.RunbookEvent | OtherRecord
    if isinstance(kind, str) and kind in EVENT_KINDS:
        event = decoded(dict(record))
    else:
        event = OtherRecord(kind=kind if isinstance(kind, str) else None, host=_text(record.get("node")),
                            step=_text(record.get("step")) or "", run_id=_text(record.get("run_id")))
    entry = LogEntry(event=event, time=_text(record.get("time")), operator=_text(record.get("operator")),
                     has_operator="operator" in record, dry_run=record.get("dry_run") is True)
    if isinstance(event, ev.CommandStarted | ev.CommandFinished):
        return replace(entry, change=change_made(event.argv),
                       **_marks(event if isinstance(event, ev.CommandStarted) else None, event.argv))
    return entry


def _marks(started: ev.CommandStarted | None, argv: tuple[str, ...]) -> dict[str, Any]:
    """A command's marks: its start's where the start wrote them, else (a log written before the marks, a result
    whose start is not in the log) as the versions that wrote it judged the command by its words."""
    bookkeeping = started.bookkeeping if started is not None and started.bookkeeping is not None else None
    purpose = started.purpose if started is not None and started.purpose is not None else None
    return {"bookkeeping": legacy_bookkeeping(argv) if bookkeeping is None else bookkeeping,
            "purpose": legacy_purpose(argv) if purpose is None else purpose}


def paired(entries: Sequence[LogEntry]) -> list[LogEntry]:
    """One node's entries, each command's result paired with its start: the result takes the start's marks and
    when it was sent; a start with no result is marked :attr:`LogEntry.unanswered`.

    A result pairs with the oldest unanswered start of the same command line in the same stretch of the log (a
    stretch ends where the step changes or a run starts), as the report's timeline always folded them.
    """
    out = list(entries)
    pending: dict[tuple[str, ...], list[int]] = {}
    for i, entry in enumerate(out):
        event = entry.event
        if i and (isinstance(event, ev.RunStarted) or entry.step != out[i - 1].step):
            _unanswered(out, pending)
        if isinstance(event, ev.CommandStarted):
            pending.setdefault(event.argv, []).append(i)
        elif isinstance(event, ev.CommandFinished) and pending.get(event.argv):
            start = out[pending[event.argv].pop(0)]
            assert isinstance(start.event, ev.CommandStarted)
            out[i] = replace(entry, sent=start.time, **_marks(start.event, event.argv))
    _unanswered(out, pending)
    return out


def _unanswered(out: list[LogEntry], pending: dict[tuple[str, ...], list[int]]) -> None:
    """The starts still waiting for a result marked unanswered (their stretch of the log ended), and forgotten."""
    for starts in pending.values():
        for i in starts:
            out[i] = replace(out[i], unanswered=True)
    pending.clear()


@dataclass(frozen=True, slots=True)
class ChangeByHand:
    """One change the operator made by hand, whichever record tells it.

    Attributes:
        what: ``stopped``, ``started`` or ``signalled`` (None when the record says not).
        signalled: a signal sent from the console (its ``process-signalled`` record has no ``what``).
        at: when, in epoch seconds on the bastion (a ledger entry's own time; None when not logged).
        unit, before: the unit stopped or started and its state before.
        pid, command, holder_kind, signal, outcome: the process signalled, and what became of it.
    """

    what: str | None = None
    signalled: bool = False
    at: float | None = None
    unit: str | None = None
    before: str | None = None
    pid: int | None = None
    command: str | None = None
    holder_kind: str | None = None
    signal: str | None = None
    outcome: str | None = None

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> ChangeByHand:
        """A ledger entry's fields (a ``manual-change`` record's, an item of ``manual-changes``)."""
        at = fields.get("at")
        pid = fields.get("pid")
        return cls(what=_text(fields.get("what")), at=float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None,
                   unit=_text(fields.get("unit")), before=_text(fields.get("before")),
                   pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                   command=_text(fields.get("command")), holder_kind=_text(fields.get("holder_kind")),
                   signal=_text(fields.get("signal")), outcome=_text(fields.get("outcome")))

    @classmethod
    def of_event(cls, event: ev.ManualChanged | ev.ProcessSignalled) -> ChangeByHand:
        """The change a ``manual-change`` event records, or a signal the console sent."""
        if isinstance(event, ev.ManualChanged):
            return cls.of(event.change)
        return cls(signalled=True, at=event.at, pid=event.pid, command=event.command,
                   holder_kind=event.holder_kind, signal=event.signal, outcome=event.outcome)


def listed_changes(event: ev.ManualChanges) -> list[ChangeByHand]:
    """The changes a ``manual-changes`` event lists (an item that is no object is left out)."""
    return [ChangeByHand.of(c) for c in event.changes if isinstance(c, Mapping)]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


__all__ = ["ChangeByHand", "LogEntry", "OtherRecord", "listed_changes", "paired", "read_entry"]

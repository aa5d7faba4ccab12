"""What the runbook tells the outside world while it works: one frozen dataclass per kind of event.

The engine hands every event to a plain callback (``on_event``). The console turns them into pane
updates, the headless command into progress lines, and the audit log into JSONL records, so each
event carries the host and, where it applies, the step it belongs to.

The audit record of an event is the event serialized: :meth:`RunbookEvent.to_record` writes it (format
:data:`SCHEMA`, named in the record) and :func:`nvls_tui.runbook.event_records.from_record` reads it
back into the same event, so the report reads the events the run emitted, not a second vocabulary.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from nvls_tui.model import Holder, SmokeResult


@dataclass(frozen=True, slots=True, kw_only=True)
class RunbookEvent:
    """Base of every runbook event.

    Attributes:
        host: the node the event is about.
        step: the runbook step it belongs to ("" outside any step).
        at: wall-clock time (``time.time()``) when it happened, on the operator's machine.
    """

    kind: ClassVar[str] = "event"
    host: str
    step: str = ""
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``event`` names the kind; holders and results become plain dicts."""
        data: dict[str, Any] = {"event": self.kind}
        for f in dataclasses.fields(self):
            data[f.name] = _plain(getattr(self, f.name))
        return data

    def to_record(self) -> dict[str, Any]:
        """The event as its audit record (JSON-ready), in record format :data:`SCHEMA`.

        ``time`` (UTC, ISO 8601 to the millisecond), ``node``, ``step`` (null outside a step), ``event``
        and ``argv`` come first, a command's ``exit_status`` and ``output`` next, then the event's other
        fields by name. The log adds who ran it and the dry-run flag, and redacts secrets
        (``audit/log.py``); :func:`nvls_tui.runbook.event_records.from_record` reads it back.
        """
        data = self.to_dict()
        record: dict[str, Any] = {
            "time": record_time(data.pop("at", None)),
            "node": data.pop("host", None),
            "step": data.pop("step", "") or None,
            "event": data.pop("event", "event"),
            "argv": data.pop("argv", None),
        }
        for first in ("exit_status", "output"):
            if first in data:
                record[first] = data.pop(first)
        record.update(data)
        record["schema"] = SCHEMA
        return record


# The audit record's format. 1: the fields of these events as named here; logs written before the
# format was named carry no ``schema`` field and are read as 1 (the same fields).
SCHEMA = 1


def record_time(at: float | None) -> str:
    """A record's ``time``: epoch seconds (now when None) as ISO 8601 in UTC, to the millisecond."""
    moment = dt.datetime.fromtimestamp(at, dt.UTC) if at is not None else dt.datetime.now(dt.UTC)
    return moment.isoformat(timespec="milliseconds")


def _plain(value: Any) -> Any:
    """Dataclasses, enums and tuples to JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(RunbookEvent):
    """A repair (or a dry run, or a restore) of one node begins."""

    kind: ClassVar[str] = "run-started"
    run_id: str
    dry_run: bool = False
    mode: str = "repair"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStarted(RunbookEvent):
    """One step begins."""

    kind: ClassVar[str] = "step-started"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepFinished(RunbookEvent):
    """One step ended with ``status`` (ok, failed, skipped, planned) after ``duration`` seconds."""

    kind: ClassVar[str] = "step-finished"
    status: str
    duration: float = 0.0
    message: str = ""
    commands: tuple[str, ...] = ()  # the plan's command lines (dry runs only)


# What a command is for, where a reader of the log needs to know it (``CommandStarted.purpose``): the report
# times Fabric Manager's registration from its start and folds its polls into one line, measures the node's clock
# by its ``date``, and takes the holders' read's exit 1 ("nobody holds a device") as the answer it waits for.
FABRIC_POLL = "fabric-poll"
"""One of Fabric Manager's registration polls (the unit's state, the GPUs' fabric state)."""
CLOCK = "clock"
"""The node's clock read (``date``, to the second), which the report measures the node's offset by."""
HOLDERS = "holders"
"""The read of who holds /dev/nvidia* (``fuser``): its exit 1 says nobody does, the answer the runbook waits for."""
FABRIC_START = "fabric-start"
"""Fabric Manager's start: its registration is timed from it."""
PURPOSES = frozenset({FABRIC_POLL, CLOCK, HOLDERS, FABRIC_START})


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandStarted(RunbookEvent):
    """A command was sent to the node (``env`` holds the extra variables, already redacted).

    ``fence``: the run id whose lock fenced it on the node ("" when it went out unfenced: no lock held,
    or one of the lock's own commands); ``argv`` is the command itself, without the fence's words.
    ``bookkeeping``: one of the repair's own lock, record or clock commands (the runbook says so where it sends
    it: a change's or a read's mark); None in records written before nvls-tui wrote the mark.
    ``purpose``: what the command is for where a reader of the log needs to know it (one of :data:`PURPOSES`:
    a registration poll, the node's clock, the holders' read, Fabric Manager's start), said where the command is
    sent; "" for any other command; None in records written before nvls-tui wrote the mark.
    """

    kind: ClassVar[str] = "command-started"
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    fence: str = ""
    bookkeeping: bool | None = None
    purpose: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandFinished(RunbookEvent):
    """A command ended. ``exit_status`` is None when it never finished (timeout, dropped link)."""

    kind: ClassVar[str] = "command-finished"
    argv: tuple[str, ...]
    exit_status: int | None
    output: str = ""
    duration: float = 0.0
    error: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputLine(RunbookEvent):
    """One line of a streamed command (the smoke test)."""

    kind: ClassVar[str] = "output-line"
    line: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeObserved(RunbookEvent):
    """A summary of a fresh read of the node (``label``: before, after, ...), for the report."""

    kind: ClassVar[str] = "node-observed"
    label: str
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldersRemaining(RunbookEvent):
    """Processes still hold /dev/nvidia*; ``waiting`` is True when the runbook waits for the operator.

    While it waits, ``elapsed`` is how long it has waited so far and ``limit`` its deadline (seconds of
    the runbook's clock; ``limit`` is None outside a bounded wait). An empty ``holders`` after a wait
    says they are all gone. It is worded from these fields (``runbook/describe.holders_sentence``); ``message`` is
    the sentence records written before that carry (read back, never said).
    """

    kind: ClassVar[str] = "holders-remaining"
    holders: tuple[Holder, ...]
    waiting: bool = False
    message: str = ""
    elapsed: float = 0.0
    limit: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSignalled(RunbookEvent):
    """A verified holder was sent ``signal`` (or was found gone / changed: ``outcome`` says which)."""

    kind: ClassVar[str] = "process-signalled"
    pid: int
    signal: str
    command: str
    holder_kind: str
    outcome: str

    def to_record(self) -> dict[str, Any]:
        """The record names the signal as the command it is (``kill -TERM PID``) in ``argv``."""
        record = RunbookEvent.to_record(self)
        record["argv"] = ["kill", f"-{self.signal.removeprefix('SIG')}", str(self.pid)]
        return record


@dataclass(frozen=True, slots=True, kw_only=True)
class FabricProgress(RunbookEvent):
    """One poll while Fabric Manager registers the GPUs: ``states`` counts GPUs per state/status.

    ``elapsed`` is how long the registration has been waited for, ``limit`` its deadline (seconds of
    the runbook's clock; None when no deadline was given).
    """

    kind: ClassVar[str] = "fabric-progress"
    unit: str
    states: dict[str, int] = field(default_factory=dict)
    elapsed: float = 0.0
    limit: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitStarted(RunbookEvent):
    """A bounded wait began: the step gives up after ``limit`` seconds (the runbook's clock).

    Attributes:
        wait: which wait (``reset``, ``smoke-test``): a later event of the same wait updates it.
        state: what it waits on, in words (``resetting every GPU and NVSwitch``).
        command: True when the wait is one command, so it ends when that command does.

    The waits that poll (Fabric Manager's registration, the holders) report each poll instead, in
    :class:`FabricProgress` and :class:`HoldersRemaining`.
    """

    kind: ClassVar[str] = "wait-started"
    wait: str
    limit: float
    state: str = ""
    command: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SmokeRow(RunbookEvent):
    """One parsed all_reduce_perf row (size in bytes, out-of-place/in-place bus bandwidth in GB/s)."""

    kind: ClassVar[str] = "smoke-row"
    size: int | None
    busbw: float | None
    row: dict[str, Any] = field(default_factory=dict)

    @property
    def out_of_place(self) -> float | None:
        """The row's out-of-place bus bandwidth (GB/s) as parsed; None when the row has none."""
        return self.row.get("oop_busbw")

    @property
    def in_place(self) -> float | None:
        """The row's in-place bus bandwidth (GB/s) as parsed; None when the row has none."""
        return self.row.get("ip_busbw")


@dataclass(frozen=True, slots=True, kw_only=True)
class SmokeFinished(RunbookEvent):
    """The smoke test ended and was judged."""

    kind: ClassVar[str] = "smoke-finished"
    smoke: SmokeResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored(RunbookEvent):
    """The restore put ``units`` back (and persistence mode on ``persistence_gpus``); ``failed`` did not."""

    kind: ClassVar[str] = "restored"
    units: tuple[str, ...] = ()
    persistence_gpus: tuple[int, ...] = ()
    failed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Note(RunbookEvent):
    """A sentence for the operator (``level``: info, warning, error)."""

    kind: ClassVar[str] = "note"
    message: str
    level: str = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(RunbookEvent):
    """The run of one node ended with ``result`` (repaired, failed, refused, planned)."""

    kind: ClassVar[str] = "run-finished"
    result: str
    message: str = ""
    duration: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ManualChanged(RunbookEvent):
    """The operator changed the node by hand (a unit stopped or started): one ledger entry."""

    kind: ClassVar[str] = "manual-change"
    change: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The change's fields at the top level of the record (``what``, ``unit``, ``before``, ...)."""
        return {"event": self.kind, "host": self.host, "step": self.step, "at": self.at, **self.change}


@dataclass(frozen=True, slots=True, kw_only=True)
class ManualChanges(RunbookEvent):
    """What was changed by hand on the node before this repair, and whether the restore puts it back."""

    kind: ClassVar[str] = "manual-changes"
    changes: tuple[dict[str, Any], ...] = ()
    put_back: bool = True


EventSink = Callable[[RunbookEvent], None]


def fan_out(*sinks: EventSink | None) -> EventSink:
    """One sink that hands each event to every given sink, in order (None entries are skipped)."""
    live = [s for s in sinks if s is not None]

    def sink(event: RunbookEvent) -> None:
        for s in live:
            s(event)

    return sink


__all__ = [
    "CLOCK",
    "FABRIC_POLL",
    "FABRIC_START",
    "HOLDERS",
    "PURPOSES",
    "CommandFinished",
    "CommandStarted",
    "EventSink",
    "FabricProgress",
    "HoldersRemaining",
    "ManualChanged",
    "ManualChanges",
    "NodeObserved",
    "Note",
    "OutputLine",
    "ProcessSignalled",
    "Restored",
    "RunFinished",
    "RunStarted",
    "RunbookEvent",
    "SCHEMA",
    "SmokeFinished",
    "SmokeRow",
    "StepFinished",
    "StepStarted",
    "WaitStarted",
    "fan_out",
    "record_time",
]

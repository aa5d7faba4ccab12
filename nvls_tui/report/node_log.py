"""One node's records, read back into events once (:class:`NodeLog`), and the operator's changes by hand in words."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TypeVar

from nvls_tui.model import SmokeResult
from nvls_tui.report.clock import NodeClock, measure_clock, utc_moment
from nvls_tui.report.text import code_span, prose
from nvls_tui.runbook.changes import Change, UnitChange
from nvls_tui.runbook.events import (
    CommandFinished,
    ManualChanged,
    ManualChanges,
    NodeObserved,
    ProcessSignalled,
    RunbookEvent,
    RunStarted,
    SmokeFinished,
    StepFinished,
)
from nvls_tui.runbook.happened import NodeHappened
from nvls_tui.runbook.log_entries import ChangeByHand, LogEntry, listed_changes, paired
from nvls_tui.runbook.observed import ObservedNode

E = TypeVar("E", bound=RunbookEvent)

# Console actions whose signals and unit changes are the operator's own hand, not the runbook's.
BY_HAND_MODES = frozenset({"sigterm", "unit-stop", "unit-start"})


@dataclass
class NodeLog:
    """The records of one node, read back into events, and what the report reads from them more than once."""

    host: str
    records: list[LogEntry]
    clock: NodeClock

    def entries(self, *kinds: str) -> list[LogEntry]:
        """The node's records of these kinds, in order."""
        return [r for r in self.records if r.kind in kinds]

    def events(self, kind: type[E]) -> list[E]:
        """The node's events of this kind, in order."""
        return [r.event for r in self.records if isinstance(r.event, kind)]

    def observed(self, label: str) -> ObservedNode | None:
        """The summary of the node read ``before`` or ``after`` (the first before, the last after); None
        where there is none, or it is empty."""
        found = [e.summary for e in self.events(NodeObserved) if e.label == label]
        summary = (found[0] if label == "before" else found[-1]) if found else None
        return ObservedNode.read(summary) if summary else None

    @functools.cached_property
    def happened(self) -> NodeHappened:
        """What happened to the node: its records read back as events, through the runbook's one fold (the
        console's columns and the progress lines read the same), e.g. the result and what the restore put back."""
        node = NodeHappened(self.host)
        for entry in self.records:
            if isinstance(entry.event, RunbookEvent):
                node.fold(entry.event)
        return node

    @property
    def dry_run(self) -> bool:
        """True when a record of this node says it was a dry run (nothing was changed)."""
        return any(r.dry_run for r in self.records)

    def step(self, name: str) -> StepFinished | None:
        """How step ``name`` last ended (its last ``step-finished``)."""
        return next((e for e in reversed(self.events(StepFinished)) if e.step == name), None)

    def changes_made(self, step: str | None = None) -> list[Change]:
        """The change of every command that exited 0 (in ``step``, when given), in order: each read back once by
        runbook/log_entries (``LogEntry.change``), never from the command's words here."""
        return [r.change for r in self.records if isinstance(r.event, CommandFinished) and r.event.exit_status == 0
                and r.change is not None and (step is None or r.step == step)]

    def smokes(self) -> list[SmokeResult]:
        """Every smoke test's judged result, in order."""
        return [e.smoke for e in self.events(SmokeFinished)]

    def stopped_units(self) -> list[str]:
        """The units quiesce stopped, in order."""
        return [c.unit for c in self.changes_made("quiesce") if isinstance(c, UnitChange) and c.verb == "stop"]

    def by_hand(self) -> list[LogEntry]:
        """The console's own actions in this log: ``manual-change`` records and signals sent by hand."""
        mode, out = "", []
        for r in self.records:
            if isinstance(r.event, RunStarted):
                mode = r.event.mode
            elif isinstance(r.event, ManualChanged) or (isinstance(r.event, ProcessSignalled) and mode in BY_HAND_MODES):
                out.append(r)
        return out

    def manual_list(self) -> tuple[LogEntry, ManualChanges] | None:
        """The ``manual-changes`` record: what was changed by hand before this repair (its entry and event)."""
        found = [(r, r.event) for r in self.records if isinstance(r.event, ManualChanges)]
        return found[-1] if found else None

    def manual_changes(self) -> list[ChangeByHand]:
        """The changes the ``manual-changes`` record lists (none without one)."""
        listed = self.manual_list()
        return listed_changes(listed[1]) if listed else []


def change_of(entry: LogEntry) -> ChangeByHand:
    """The change a by-hand record tells (:meth:`NodeLog.by_hand`'s entries)."""
    event = entry.event
    return ChangeByHand.of_event(event) if isinstance(event, ManualChanged | ProcessSignalled) else ChangeByHand()


def operator_of(entry: LogEntry) -> str:
    """Who made a change (Markdown): the record's operator, or "the operator" where it names none."""
    return prose(entry.operator or "the operator")


def change_words(change: ChangeByHand, who: str, at: str | None) -> str:
    """``kim stopped `nvidia-dcgm.service` at 16:01:02 UTC (it was active)`` (Markdown)."""
    when = f" at {at}" if at else ""
    if change.what == "signalled" or change.signalled:
        outcome = change.outcome
        tail = f" → {prose(outcome)}" if outcome and outcome != "signalled" else ""
        return (f"{who} sent {prose(change.signal or 'SIGTERM')} to pid {prose(change.pid)} "
                f"({prose(change.holder_kind or 'process')}: {prose(change.command)}){when}{tail}")
    was = f" (it was {prose(change.before)})" if change.before else ""
    return f"{who} {prose(change.what)} {code_span(change.unit)}{when}{was}"


def node_logs(records: list[LogEntry]) -> list[NodeLog]:
    """One :class:`NodeLog` per node, in the order the nodes first appear, each with its clock."""
    first = utc_moment(records[0].time) if records else None
    day = first.date() if first else None
    hosts: dict[str, list[LogEntry]] = {}
    for r in records:
        if r.host:
            hosts.setdefault(r.host, []).append(r)
    logs = [(host, paired(mine)) for host, mine in hosts.items()]  # each command's result with its start's marks
    return [NodeLog(host, mine, measure_clock(mine, day)) for host, mine in logs]

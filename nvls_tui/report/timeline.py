"""The condensed timeline of one node: bookkeeping, repeated commands and Fabric Manager's polls
folded into one line each; every failure, signal, note and step result kept."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nvls_tui.report.clock import NodeClock, epoch_utc, time_of_day, utc_moment
from nvls_tui.report.node_log import BY_HAND_MODES, NodeLog, change_words, operator_of
from nvls_tui.report.text import (
    command_line,
    prose,
    shown_command,
    table_cell,
)
from nvls_tui.runbook.describe import describe
from nvls_tui.runbook.events import (
    FABRIC_POLL,
    FABRIC_START,
    HOLDERS,
    CommandFinished,
    CommandStarted,
    FabricProgress,
    ManualChanged,
    ManualChanges,
    ProcessSignalled,
    RunbookEvent,
    RunStarted,
)
from nvls_tui.runbook.log_entries import ChangeByHand, LogEntry, listed_changes
from nvls_tui.words import count

# Non-zero exits that are the answer the runbook waits for: the holders' read's 1 (fuser's) is "nobody holds a
# device".
EXPECTED_EXITS = {HOLDERS: frozenset({1})}


@dataclass
class _Line:
    """One timeline row: ``order`` places it (the index of the record it stands for)."""

    order: int
    time: Any
    step: str
    text: str


def _exit_words(e: CommandFinished) -> str:
    status = e.exit_status
    return f"exit {prose(status)}" if status is not None else f"did not finish ({prose(e.error or 'no status')})"


def _succeeded(r: LogEntry, e: CommandFinished) -> bool:
    """Exit 0, or the non-zero answer a command gives when all is as the runbook wants (the holders' read's 1)."""
    status = e.exit_status
    return status == 0 or status in EXPECTED_EXITS.get(r.purpose, ())


def _poll_states(states: Mapping[str, int]) -> str:
    """``Completed/Success`` or ``4× In Progress, 4× Completed/Success`` (``/N/A`` dropped)."""
    items = [(str(k).removesuffix("/N/A"), v) for k, v in states.items()]
    if len(items) == 1:
        return prose(items[0][0])
    return ", ".join(f"{prose(n)}× {prose(k)}" for k, n in items) or "no GPU answered"


def _dedupe(items: Iterable[str]) -> list[str]:
    """Consecutive repeats dropped: ``a, a, b, a`` → ``a, b, a``."""
    out: list[str] = []
    for item in items:
        if not out or out[-1] != item:
            out.append(item)
    return out


@dataclass(frozen=True)
class FabricWait:
    """Fabric Manager's registration as its polls saw it."""

    done: bool
    gpus: int
    seconds: float
    states: list[str]
    units: list[str]
    polls: int

    def words(self) -> str:
        """``Fabric Manager registered 8 GPUs in 6.0 s: Not Started → In Progress → Completed/Success (4 polls)``."""
        head = (f"Fabric Manager registered {count(self.gpus, 'GPU')} in {self.seconds:.1f} s" if self.done else
                f"Fabric Manager had not registered every GPU after {self.seconds:.1f} s")
        unit = f"; the unit {' → '.join(self.units)}" if self.units != ["active"] else ""
        return f"{head}: {' → '.join(self.states)} ({count(self.polls, 'poll')}){unit}"


def fabric_wait(polls: list[LogEntry], segment: list[LogEntry]) -> FabricWait | None:
    """The registration from its ``fabric-progress`` polls, timed from Fabric Manager's start."""
    progress = [p.event for p in polls if isinstance(p.event, FabricProgress)]
    if not progress:
        return None
    last = progress[-1].states
    starts = [r for r in segment if isinstance(r.event, CommandFinished) and r.event.exit_status == 0
              and r.purpose == FABRIC_START]
    began = utc_moment((starts or polls)[0].time)
    ended = utc_moment(polls[-1].time)
    seconds = (ended - began).total_seconds() if began and ended else 0.0
    gpus = sum(int(n) for n in last.values() if isinstance(n, int))
    return FabricWait(done=bool(last) and set(last) == {"Completed/Success"}, gpus=gpus, seconds=seconds,
                      states=_dedupe(_poll_states(p.states) for p in progress),
                      units=_dedupe(prose(p.unit) for p in progress), polls=len(progress))


def _segments(records: list[LogEntry]) -> list[list[tuple[int, LogEntry]]]:
    """The node's records cut where the step changes or a run starts: repeats fold within one only."""
    out: list[list[tuple[int, LogEntry]]] = []
    for i, r in enumerate(records):
        if not out or isinstance(r.event, RunStarted) or r.step != out[-1][-1][1].step:
            out.append([])
        out[-1].append((i, r))
    return out


# A command's record in the timeline: its place among the node's records, when it was logged, its event.
_Command = tuple[int, str | None, CommandFinished]


def _fold_commands(segment: list[tuple[int, LogEntry]], polling: bool) -> list[_Line]:
    """The segment's commands: bookkeeping as one line, identical commands as one line with a count,
    the fabric polls left to the fabric line; a failure is never folded into a success. What each command was
    is its record's mark (read back by runbook/log_entries), never its words."""
    bookkeeping: list[_Command] = []
    groups: dict[tuple, list[_Command]] = {}
    unanswered: list[tuple[int, LogEntry, CommandStarted]] = []
    for i, r in segment:
        event = r.event
        if isinstance(event, CommandStarted):
            if r.unanswered:
                unanswered.append((i, r, event))
            continue
        if not isinstance(event, CommandFinished):
            continue
        key = command_line(event.argv)  # identical commands: the same line
        if not _succeeded(r, event):
            groups.setdefault((key, "failed", event.exit_status, event.error), []).append((i, r.time, event))
        elif r.bookkeeping:
            bookkeeping.append((i, r.time, event))
        elif not (polling and r.purpose == FABRIC_POLL):
            groups.setdefault((key, "ok"), []).append((i, r.time, event))
    lines = [_group_line(runs, failed=key[1] == "failed") for key, runs in groups.items()]
    if bookkeeping:
        i, time, e = bookkeeping[0]
        lines.append(_Line(i, time, e.step, f"bookkeeping: {count(len(bookkeeping), 'command')}, all exit 0"))
    lines += [_Line(i, r.time, s.step, f"{shown_command(s.argv)} sent; the log holds no result for it")
              for i, r, s in unanswered]
    return lines


def _group_line(runs: list[_Command], *, failed: bool) -> _Line:
    """One line for the same command run ``len(runs)`` times, at the first of them."""
    i, time, first = runs[0]
    last = runs[-1][2]
    shown = shown_command(first.argv)
    if len(runs) == 1:
        text = f"{shown} → {_exit_words(first)}"
    elif failed:
        text = f"{shown} → {_exit_words(first)}, ×{len(runs)}"
    else:
        text = f"{shown} ×{len(runs)}, last {_exit_words(last)}"
    return _Line(i, time, first.step, text)


def _record_lines(r: LogEntry, mode: str, clock: NodeClock) -> list[str]:
    """The timeline text (Markdown, node text escaped) of one record that is not a command."""
    event = r.event
    if isinstance(event, ManualChanged) or (isinstance(event, ProcessSignalled) and mode in BY_HAND_MODES):
        return [f"by hand: {change_words(ChangeByHand.of_event(event), operator_of(r), None)}"]
    if isinstance(event, ManualChanges):
        day = clock.day
        return [f"by hand before this run: {change_words(c, operator_of(r), epoch_utc(c.at, day))}"
                for c in listed_changes(event)]
    if not isinstance(event, RunbookEvent):
        return []  # the log's own records, kinds of a newer nvls-tui: nothing that happened on the node
    # The event's words as it says them everywhere (runbook/describe), node-clock times annotated.
    text = describe(event, clock.annotate).markdown
    return [text] if text else []


def timeline(log: NodeLog) -> list[_Line]:
    """The node's timeline, condensed: what happened, with every failure, signal, note and step result."""
    lines: list[_Line] = []
    mode = ""
    for segment in _segments(log.records):
        plain = [r for _, r in segment]
        polls = [r for r in plain if isinstance(r.event, FabricProgress)]
        lines += _fold_commands(segment, polling=bool(polls))
        wait = fabric_wait(polls, plain)
        if wait is not None:
            index = max(i for i, r in segment if isinstance(r.event, FabricProgress))
            lines.append(_Line(index, polls[-1].time, polls[-1].step, wait.words()))
        for i, r in segment:
            if isinstance(r.event, RunStarted):
                mode = r.event.mode
            if isinstance(r.event, CommandStarted | CommandFinished | FabricProgress):
                continue
            lines += [_Line(i, r.time, r.step, text) for text in _record_lines(r, mode, log.clock)]
    return sorted(lines, key=lambda line: line.order)


def timeline_table(log: NodeLog) -> list[str]:
    """The node's :func:`timeline` as a Markdown table, on the bastion's clock (the date is in the header)."""
    out = ["| time (UTC) | step | what happened |", "| --- | --- | --- |"]
    out += [f"| {time_of_day(line.time)} | {table_cell(prose(line.step))} | {table_cell(line.text)} |"
            for line in timeline(log)]
    return out

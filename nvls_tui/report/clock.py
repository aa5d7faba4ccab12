"""The one clock of the report: the bastion's UTC, and the node's clock converted to it.

Every record carries the bastion's time; kernel lines, systemd's times and smoke tests are on the
node's clock. The ``date`` the preflight runs on the node gives its offset (:func:`measure_clock`);
without it node times are shown as logged and marked "(node clock)", never guessed.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Any

from nvls_tui.report.text import as_number, prose
from nvls_tui.runbook.events import CLOCK, CommandFinished, NodeObserved
from nvls_tui.runbook.log_entries import LogEntry
from nvls_tui.runbook.observed import ObservedNode
from nvls_tui.words import count

# A node time as `date` and journalctl print it (the zone, if any, is the node's: ignored, like the
# diagnosis does, so every time of one node is read the same way).
_NODE_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)")
# A node-clock time inside a runbook sentence ("since 2026-08-15 16:10:00"): the bastion's own times
# are ISO with a "T" and a zone, so they never match.
_NODE_STAMP = re.compile(r"(?<![\d:T.-])(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?![\d.:]|[+-]\d\d|Z)")


def utc_moment(iso: Any) -> dt.datetime | None:
    """A record's ISO time as an aware UTC datetime (None when it is not one)."""
    try:
        moment = dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return None
    return moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def time_of_day(iso: Any) -> str:
    """``HH:MM:SS.mmm`` of a record's time (the date is in the header)."""
    if not iso:
        return ""
    moment = utc_moment(iso)
    return moment.strftime("%H:%M:%S.%f")[:-3] if moment else prose(iso)


def _utc(moment: dt.datetime, day: dt.date | None) -> str:
    """``16:10:00 UTC`` on the report's first day, ``2026-08-10 15:45:32 UTC`` on another."""
    return moment.strftime("%H:%M:%S UTC" if moment.date() == day else "%Y-%m-%d %H:%M:%S UTC")


def record_utc(iso: Any, day: dt.date | None) -> str:
    """A record's ISO time as UTC text (no date on the report's first day); one that is no time, escaped."""
    moment = utc_moment(iso)
    return _utc(moment, day) if moment else prose(iso or "?")


def duration_words(seconds: float) -> str:
    """How long, as people say it (``4 min 12 s``, ``5 days 0 h``): :func:`_span`."""
    return _span(seconds)


def _span(seconds: float) -> str:
    """An offset as people say it: ``2.1 s``, ``4 min 12 s``, ``3 h 5 min``, ``107 days 22 h``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{count(whole // 86400, 'day')} {whole % 86400 // 3600} h"


def _node_time(text: Any) -> dt.datetime | None:
    """A node's timestamp as a naive datetime on the node's clock (None when it carries no date)."""
    match = _NODE_TIME.search(str(text or ""))
    if not match:
        return None
    try:
        return dt.datetime.fromisoformat(f"{match.group(1)} {match.group(2)}")
    except ValueError:
        return None


@dataclass(frozen=True)
class NodeClock:
    """How one node's clock relates to the bastion's, as measured by ``date`` on the node.

    Attributes:
        offset: node minus bastion, seconds (None: not measured, so never invented).
        error: the half-width of what the measurement allows (``date`` prints whole seconds, and the
            answer came some time between the command's start and its end on the bastion).
        where: the step whose ``date`` gave the offset.
        start: the node's clock when the repair began (preflight's ``date``): kernel lines older than
            it were there before the repair.
        day: the report's first day (times on it are shown without their date).
        simulated: the node is simulated: its clock is the simulator's (the scenario's date), so the offset
            is by design, never a clock fault to report.
    """

    offset: float | None = None
    error: float = 0.0
    where: str = ""
    start: dt.datetime | None = None
    day: dt.date | None = None
    simulated: bool = False

    def plain(self, text: Any) -> str:
        """A node-clock time as plain text: converted to the bastion's UTC, or marked "(node clock)"."""
        node = _node_time(text)
        if node is None:
            return f"{text} (node clock)"
        try:
            if self.offset is not None:
                bastion = node.replace(tzinfo=dt.UTC) - dt.timedelta(seconds=self.offset)
                return _utc(_whole_second(bastion), self.day)
        except OverflowError:
            pass  # a node time that converts past year 9999 (or before year 1): shown as the node logged it
        return f"{node:%Y-%m-%d %H:%M:%S} (node clock)"

    def to_bastion(self, text: Any) -> dt.datetime | None:
        """A node-clock time as a moment on the bastion's UTC clock; None where the time or the offset is unknown."""
        node = _node_time(text)
        if node is None or self.offset is None:
            return None
        try:
            return _whole_second(node.replace(tzinfo=dt.UTC) - dt.timedelta(seconds=self.offset))
        except OverflowError:
            return None

    def show(self, text: Any) -> str:
        """:meth:`plain`, escaped for Markdown (the time came from the node)."""
        return prose(self.plain(text))

    def before_start(self, text: Any) -> bool | None:
        """True when a node time is older than the repair's start; None when either is unknown."""
        node = _node_time(text)
        return None if node is None or self.start is None else node < self.start

    def annotate(self, sentence: str) -> str:
        """Raw text with each node-clock time followed by what it was on the bastion."""
        def note(match: re.Match[str]) -> str:
            stamp = match.group(1)
            return f"{stamp} (node clock)" if self.offset is None else f"{stamp} (node clock; {self.plain(stamp)})"

        return _NODE_STAMP.sub(note, sentence)

    def header(self, host: str) -> str:
        """The header line about this node's clock."""
        if self.offset is None:
            return (f"- {prose(host)}'s clock: not measured (no `date` answer in the log); node-clock times are "
                    "marked (node clock)")
        within = f"±{math.ceil(self.error * 10 - 1e-9) / 10:.1f} s, measured with `date` at {prose(self.where)}"
        if self.simulated:
            gap = ("in step with the bastion" if abs(self.offset) <= self.error else
                   f"{_span(abs(self.offset))} {'ahead of' if self.offset > 0 else 'behind'} the bastion's")
            return (f"- {prose(host)}'s clock: simulated (the simulator's clock, {gap} by design: not a clock fault; "
                    f"node-clock times are converted with it, {within})")
        if abs(self.offset) <= self.error:
            return f"- {prose(host)}'s clock: in step with the bastion ({within})"
        side = "ahead of" if self.offset > 0 else "behind"
        return f"- {prose(host)}'s clock: {_span(abs(self.offset))} {side} the bastion ({within})"


def _whole_second(moment: dt.datetime) -> dt.datetime:
    return (moment + dt.timedelta(microseconds=500_000)).replace(microsecond=0)


def measure_clock(records: list[LogEntry], day: dt.date | None = None) -> NodeClock:
    """The node's clock offset from its ``date`` answers (preflight's first), or an unmeasured clock.

    ``records``: one node's entries, each command's result paired with its start
    (:func:`nvls_tui.runbook.log_entries.paired`): the clock's read is its record's mark, and when it was sent its
    start's time.
    """
    answers = [(i, r.event, r.time) for i, r in enumerate(records) if isinstance(r.event, CommandFinished)
               and r.purpose == CLOCK and r.event.exit_status == 0]
    preflight = [a for a in answers if a[1].step == "preflight"]
    simulated = any(isinstance(r.event, NodeObserved) and ObservedNode.read(r.event.summary).simulated for r in records)
    if not (preflight or answers):
        return NodeClock(day=day, simulated=simulated)
    index, answer, time = (preflight or answers)[0]
    node, ended = _node_time(answer.output), utc_moment(time)
    if node is None or ended is None:
        return NodeClock(day=day, simulated=simulated)
    began = utc_moment(records[index].sent) or ended - dt.timedelta(seconds=answer.duration or 0.0)
    # `date` printed whole seconds: the node's clock was in [node, node + 1) at some moment of [began, ended].
    middle = began + (ended - began) / 2
    offset = (node.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=0.5) - middle).total_seconds()
    error = 0.5 + (ended - began).total_seconds() / 2
    step = answer.step
    return NodeClock(offset, error, step or "an unnamed step", node if step == "preflight" else None, day, simulated)


def epoch_utc(at: Any, day: dt.date | None) -> str | None:
    """A ledger time (epoch seconds on the bastion) as UTC text."""
    number = as_number(at)
    return _utc(_whole_second(dt.datetime.fromtimestamp(number, dt.UTC)), day) if number is not None else None

"""An incident report (Markdown) from an audit log: a summary in words, then per node the before and
after, the holders stopped, the smoke results and a condensed timeline.

The log may end mid-run (nvls-tui was killed): every complete record still counts, a torn last line
is skipped and mentioned, and a node without a ``run-finished`` record is reported as unfinished.

One clock: every record carries the bastion's time (UTC); kernel lines, systemd's times and smoke
tests are on the node's clock. The ``date`` the preflight runs on the node gives its offset, and
node times are converted with it; without it they are shown as logged and marked "(node clock)".
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.poll.probe import LOCK_DIR, RECORD_FILE
from nvls_tui.runbook.steps import DATE_ARGV, FM_UNIT, is_running
from nvls_tui.textsafe import clean_deep, markdown_code, markdown_text
from nvls_tui.views.plan_summary import is_bookkeeping
from nvls_tui.words import count, gbps, verb

# Console actions whose signals and unit changes are the operator's own hand, not the runbook's.
BY_HAND_MODES = frozenset({"sigterm", "unit-stop", "unit-start"})
# Non-zero exits that are the answer the runbook waits for: fuser's 1 is "nobody holds a device".
EXPECTED_EXITS = {"fuser": frozenset({1})}
# A node time as `date` and journalctl print it (the zone, if any, is the node's: ignored, like the
# diagnosis does, so every time of one node is read the same way).
_NODE_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)")
# A node-clock time inside a runbook sentence ("since 2026-08-15 16:10:00"): the bastion's own times
# are ISO with a "T" and a zone, so they never match.
_NODE_STAMP = re.compile(r"(?<![\d:T.-])(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?![\d.:]|[+-]\d\d|Z)")
CIRCUMSTANCES = frozenset({"HOLDERS_PRESENT"})
# systemd's Result of a unit that was killed or crashed (``exit-code`` is a unit that exited with an error).
CRASHES = frozenset({"signal", "core-dump", "watchdog"})
KERNEL_FINDINGS = {"FABRIC_MANAGER_NOT_PRESENT": "NV_ERR_FABRIC_MANAGER_NOT_PRESENT",
                   "FABRIC_OUT_OF_SYNC": "NV_ERR_FABRIC_STATE_OUT_OF_SYNC"}


@dataclass
class AuditLogContents:
    """The records of one audit log and the lines that could not be read."""

    records: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[int] = field(default_factory=list)


def load_audit_log(path: str | os.PathLike[str]) -> AuditLogContents:
    """Read a JSONL audit log, skipping lines that are not JSON objects (a torn last line after a kill).

    Raises:
        OSError: the file cannot be read.
    """
    contents = AuditLogContents()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = clean_deep(json.loads(line))
            except ValueError:
                contents.unreadable.append(number)
                continue
            if isinstance(record, dict):
                contents.records.append(record)
            else:
                contents.unreadable.append(number)
    return contents


# ---- escaping and small words ---------------------------------------------------------------------


def _t(value: Any) -> str:
    """A value from the log as Markdown prose: escaped (the log holds node text, which is data)."""
    return markdown_text(value)


def _code(value: Any) -> str:
    """A value from the log as a Markdown code span (a command line, a unit name)."""
    return markdown_code(value)


def _cell(markdown: str) -> str:
    """Already-escaped Markdown made safe inside a table cell (``|`` splits cells, even in code)."""
    return markdown.replace("|", "\\|").replace("\n", " ").strip()


def _codes(values: Iterable[Any]) -> str:
    """``a``, ``b``: names as code spans, comma-separated."""
    return ", ".join(_code(v) for v in values)


def _and(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) < 2:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _sentence(parts: list[str]) -> str:
    """Parts joined with semicolons, ending in one full stop."""
    text = "; ".join(p for p in parts if p)
    return text if text.endswith(".") else text + "."


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _bandwidth(value: Any) -> str:
    number = _number(value)
    return gbps(number) if number is not None else "no bandwidth"


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _cmd(argv: Any) -> str:
    if not isinstance(argv, list | tuple) or not argv:
        return ""
    return shlex.join([str(a) for a in argv])


# ---- the one clock ----------------------------------------------------------------------------------


def _moment(iso: Any) -> dt.datetime | None:
    """A record's ISO time as an aware UTC datetime (None when it is not one)."""
    try:
        moment = dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return None
    return moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _clock(iso: Any) -> str:
    """``HH:MM:SS.mmm`` of a record's time (the date is in the header)."""
    if not iso:
        return ""
    moment = _moment(iso)
    return moment.strftime("%H:%M:%S.%f")[:-3] if moment else _t(iso)


def _utc(moment: dt.datetime, day: dt.date | None) -> str:
    """``16:10:00 UTC`` on the report's first day, ``2026-08-10 15:45:32 UTC`` on another."""
    return moment.strftime("%H:%M:%S UTC" if moment.date() == day else "%Y-%m-%d %H:%M:%S UTC")


def _record_utc(iso: Any, day: dt.date | None) -> str:
    moment = _moment(iso)
    return _utc(moment, day) if moment else _t(iso or "?")


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
    """

    offset: float | None = None
    error: float = 0.0
    where: str = ""
    start: dt.datetime | None = None
    day: dt.date | None = None

    def plain(self, text: Any) -> str:
        """A node-clock time as plain text: converted to the bastion's UTC, or marked "(node clock)"."""
        node = _node_time(text)
        if node is None:
            return f"{text} (node clock)"
        if self.offset is None:
            return f"{node:%Y-%m-%d %H:%M:%S} (node clock)"
        bastion = node.replace(tzinfo=dt.UTC) - dt.timedelta(seconds=self.offset)
        return _utc(_whole_second(bastion), self.day)

    def show(self, text: Any) -> str:
        """:meth:`plain`, escaped for Markdown (the time came from the node)."""
        return _t(self.plain(text))

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
            return (f"- {_t(host)}'s clock: not measured (no `date` answer in the log); node-clock times are "
                    "marked (node clock)")
        within = f"±{math.ceil(self.error * 10 - 1e-9) / 10:.1f} s, measured with `date` at {_t(self.where)}"
        if abs(self.offset) <= self.error:
            return f"- {_t(host)}'s clock: in step with the bastion ({within})"
        side = "ahead of" if self.offset > 0 else "behind"
        return f"- {_t(host)}'s clock: {_span(abs(self.offset))} {side} the bastion ({within})"


def _whole_second(moment: dt.datetime) -> dt.datetime:
    return (moment + dt.timedelta(microseconds=500_000)).replace(microsecond=0)


def measure_clock(records: list[dict[str, Any]], day: dt.date | None = None) -> NodeClock:
    """The node's clock offset from its ``date`` answers (preflight's first), or an unmeasured clock."""
    answers = [(i, r) for i, r in enumerate(records) if r.get("event") == "command-finished"
               and r.get("argv") == list(DATE_ARGV) and r.get("exit_status") == 0]
    preflight = [(i, r) for i, r in answers if r.get("step") == "preflight"]
    index, answer = (preflight or answers or [(0, {})])[0]
    node, ended = _node_time(answer.get("output")), _moment(answer.get("time"))
    if node is None or ended is None:
        return NodeClock(day=day)
    began = _sent_at(records, index) or ended - dt.timedelta(seconds=_number(answer.get("duration")) or 0.0)
    # `date` printed whole seconds: the node's clock was in [node, node + 1) at some moment of [began, ended].
    middle = began + (ended - began) / 2
    offset = (node.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=0.5) - middle).total_seconds()
    error = 0.5 + (ended - began).total_seconds() / 2
    step = str(answer.get("step") or "")
    return NodeClock(offset, error, step or "an unnamed step", node if step == "preflight" else None, day)


def _sent_at(records: list[dict[str, Any]], finished: int) -> dt.datetime | None:
    """When the command that finished at ``records[finished]`` was sent (its ``command-started``)."""
    argv, step = records[finished].get("argv"), records[finished].get("step")
    for r in reversed(records[:finished]):
        if r.get("event") == "command-started" and r.get("argv") == argv and r.get("step") == step:
            return _moment(r.get("time"))
    return None


# ---- one node's log, read once ------------------------------------------------------------------------


@dataclass
class NodeLog:
    """The records of one node and what the report reads from them more than once."""

    host: str
    records: list[dict[str, Any]]
    clock: NodeClock

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        """The node's records of these kinds, in order."""
        return [r for r in self.records if r.get("event") in kinds]

    def observed(self, label: str) -> dict[str, Any] | None:
        """The summary of the node read ``before`` or ``after`` (the first before, the last after)."""
        found = [_dict(r.get("summary")) for r in self.events("node-observed") if r.get("label") == label]
        found = [s for s in found if s is not None]
        return (found[0] if label == "before" else found[-1]) if found else None

    @property
    def finished(self) -> dict[str, Any] | None:
        """The last ``run-finished`` record (None: the run did not finish)."""
        return next((r for r in reversed(self.records) if r.get("event") == "run-finished"), None)

    @property
    def dry_run(self) -> bool:
        return any(r.get("dry_run") for r in self.records)

    def step(self, name: str) -> dict[str, Any] | None:
        """The last ``step-finished`` record of step ``name``."""
        return next((r for r in reversed(self.events("step-finished")) if r.get("step") == name), None)

    def ok_commands(self, step: str | None = None) -> list[list[str]]:
        """The argv of every command that exited 0 (in ``step``, when given)."""
        return [[str(a) for a in r["argv"]] for r in self.events("command-finished")
                if r.get("exit_status") == 0 and isinstance(r.get("argv"), list)
                and (step is None or r.get("step") == step)]

    def restored(self) -> dict[str, Any]:
        """The last ``restored`` record ({} when the run restored nothing)."""
        found = self.events("restored")
        return found[-1] if found else {}

    def stopped_units(self) -> list[str]:
        """The units quiesce stopped, in order."""
        return [a[2] for a in self.ok_commands("quiesce") if a[:2] == ["systemctl", "stop"] and len(a) > 2]

    def by_hand(self) -> list[dict[str, Any]]:
        """The console's own actions in this log: ``manual-change`` records and signals sent by hand."""
        mode, out = "", []
        for r in self.records:
            if r.get("event") == "run-started":
                mode = str(r.get("mode") or "")
            elif r.get("event") == "manual-change" or (r.get("event") == "process-signalled" and mode in BY_HAND_MODES):
                out.append(r)
        return out

    def manual_list(self) -> dict[str, Any] | None:
        """The ``manual-changes`` record: what was changed by hand before this repair."""
        found = self.events("manual-changes")
        return found[-1] if found else None


def _who(record: dict[str, Any]) -> str:
    return _t(record.get("operator") or "the operator")


def _change_words(change: dict[str, Any], who: str, at: str | None) -> str:
    """``kim stopped `nvidia-dcgm.service` at 16:01:02 UTC (it was active)`` (Markdown)."""
    when = f" at {at}" if at else ""
    if change.get("what") == "signalled" or change.get("event") == "process-signalled":
        outcome = change.get("outcome")
        tail = f" → {_t(outcome)}" if outcome and outcome != "signalled" else ""
        return (f"{who} sent {_t(change.get('signal') or 'SIGTERM')} to pid {_t(change.get('pid'))} "
                f"({_t(change.get('holder_kind') or 'process')}: {_t(change.get('command'))}){when}{tail}")
    was = f" (it was {_t(change.get('before'))})" if change.get("before") else ""
    return f"{who} {_t(change.get('what'))} {_code(change.get('unit'))}{when}{was}"


def _epoch_utc(at: Any, day: dt.date | None) -> str | None:
    """A ledger time (epoch seconds on the bastion) as UTC text."""
    number = _number(at)
    return _utc(_whole_second(dt.datetime.fromtimestamp(number, dt.UTC)), day) if number is not None else None


# ---- the condensed timeline ------------------------------------------------------------------------------


@dataclass
class _Line:
    """One timeline row: ``order`` places it (the index of the record it stands for)."""

    order: int
    time: Any
    step: str
    text: str


def _exit_words(r: dict[str, Any]) -> str:
    status = r.get("exit_status")
    return f"exit {_t(status)}" if status is not None else f"did not finish ({_t(r.get('error') or 'no status')})"


def _succeeded(r: dict[str, Any]) -> bool:
    """Exit 0, or the non-zero answer a command gives when all is as the runbook wants (fuser's 1)."""
    argv, status = _list(r.get("argv")), r.get("exit_status")
    return status == 0 or (bool(argv) and status in EXPECTED_EXITS.get(str(argv[0]), ()))


def _shown(argv: list[Any]) -> str:
    """A command as the timeline shows it (Markdown): a long /dev/nvidia* list becomes its glob and a count."""
    args = [str(a) for a in argv]
    devices = [a for a in args if a.startswith("/dev/nvidia")]
    if len(devices) <= 3:
        return _code(shlex.join(args))
    first = args.index(devices[0])
    rest = [a for a in args[first:] if not a.startswith("/dev/nvidia")]
    text = " ".join(p for p in (shlex.join(args[:first]), "/dev/nvidia*", shlex.join(rest)) if p)
    return f"{_code(text)} ({count(len(devices), 'device')})"


def _is_poll(argv: list[Any]) -> bool:
    """One of Fabric Manager's registration polls (``systemctl is-active``, ``nvidia-smi --query-gpu``)."""
    args = [str(a) for a in argv]
    return args[:2] == ["systemctl", "is-active"] or (args[:1] == ["nvidia-smi"] and
                                                       any(a.startswith("--query-gpu") for a in args))


def _poll_states(states: Any) -> str:
    """``Completed/Success`` or ``4× In Progress, 4× Completed/Success`` (``/N/A`` dropped)."""
    items = [(str(k).removesuffix("/N/A"), v) for k, v in (_dict(states) or {}).items()]
    if len(items) == 1:
        return _t(items[0][0])
    return ", ".join(f"{_t(n)}× {_t(k)}" for k, n in items) or "no GPU answered"


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


def fabric_wait(polls: list[dict[str, Any]], segment: list[dict[str, Any]]) -> FabricWait | None:
    """The registration from its ``fabric-progress`` polls, timed from Fabric Manager's start."""
    if not polls:
        return None
    last = _dict(polls[-1].get("states")) or {}
    starts = [r for r in segment if r.get("event") == "command-finished" and r.get("exit_status") == 0
              and r.get("argv") == ["systemctl", "start", FM_UNIT]]
    began = _moment((starts or polls)[0].get("time"))
    ended = _moment(polls[-1].get("time"))
    seconds = (ended - began).total_seconds() if began and ended else 0.0
    gpus = sum(int(n) for n in last.values() if isinstance(n, int))
    return FabricWait(done=bool(last) and set(last) == {"Completed/Success"}, gpus=gpus, seconds=seconds,
                      states=_dedupe(_poll_states(p.get("states")) for p in polls),
                      units=_dedupe(_t(p.get("unit")) for p in polls), polls=len(polls))


def _segments(records: list[dict[str, Any]]) -> list[list[tuple[int, dict[str, Any]]]]:
    """The node's records cut where the step changes or a run starts: repeats fold within one only."""
    out: list[list[tuple[int, dict[str, Any]]]] = []
    for i, r in enumerate(records):
        if not out or r.get("event") == "run-started" or r.get("step") != out[-1][-1][1].get("step"):
            out.append([])
        out[-1].append((i, r))
    return out


def _fold_commands(segment: list[tuple[int, dict[str, Any]]], polling: bool) -> list[_Line]:
    """The segment's commands: bookkeeping as one line, identical commands as one line with a count,
    the fabric polls left to the fabric line; a failure is never folded into a success."""
    bookkeeping: list[tuple[int, dict[str, Any]]] = []
    groups: dict[tuple, list[tuple[int, dict[str, Any]]]] = {}
    pending: dict[tuple, list[tuple[int, dict[str, Any]]]] = {}
    for i, r in segment:
        argv = _list(r.get("argv"))
        key = tuple(str(a) for a in argv)
        if r.get("event") == "command-started":
            pending.setdefault(key, []).append((i, r))
            continue
        if r.get("event") != "command-finished":
            continue
        if pending.get(key):
            pending[key].pop(0)
        if not _succeeded(r):
            groups.setdefault((key, "failed", r.get("exit_status"), r.get("error")), []).append((i, r))
        elif is_bookkeeping(_cmd(argv)):
            bookkeeping.append((i, r))
        elif not (polling and _is_poll(argv)):
            groups.setdefault((key, "ok"), []).append((i, r))
    lines = [_group_line(runs, failed=key[1] == "failed") for key, runs in groups.items()]
    if bookkeeping:
        i, r = bookkeeping[0]
        lines.append(_Line(i, r.get("time"), str(r.get("step") or ""),
                           f"bookkeeping: {count(len(bookkeeping), 'command')}, all exit 0"))
    for runs in pending.values():
        lines += [_Line(i, r.get("time"), str(r.get("step") or ""),
                        f"{_shown(_list(r.get('argv')))} sent; the log holds no result for it") for i, r in runs]
    return lines


def _group_line(runs: list[tuple[int, dict[str, Any]]], *, failed: bool) -> _Line:
    """One line for the same command run ``len(runs)`` times, at the first of them."""
    i, first = runs[0]
    last = runs[-1][1]
    shown = _shown(_list(first.get("argv")))
    if len(runs) == 1:
        text = f"{shown} → {_exit_words(first)}"
    elif failed:
        text = f"{shown} → {_exit_words(first)}, ×{len(runs)}"
    else:
        text = f"{shown} ×{len(runs)}, last {_exit_words(last)}"
    return _Line(i, first.get("time"), str(first.get("step") or ""), text)


def _record_lines(r: dict[str, Any], mode: str, clock: NodeClock) -> list[str]:
    """The timeline text (Markdown, node text escaped) of one record that is not a command."""
    kind = r.get("event")
    if kind == "manual-change" or (kind == "process-signalled" and mode in BY_HAND_MODES):
        return [f"by hand: {_change_words(r, _who(r), None)}"]
    if kind == "manual-changes":
        day = clock.day
        return [f"by hand before this run: {_change_words(c, _who(r), _epoch_utc(c.get('at'), day))}"
                for c in _list(r.get("changes")) if isinstance(c, dict)]
    render = _RENDERERS.get(str(kind))
    text = render(r, clock) if render else None
    return [text] if text else []


def _step_finished(r: dict[str, Any], clock: NodeClock) -> str:
    duration = _number(r.get("duration"))
    dur = f" in {duration:.1f} s" if duration is not None else ""
    msg = f": {_t(clock.annotate(str(r['message'])))}" if r.get("message") else ""
    return f"**{_t(r.get('status'))}**{dur}{msg}"


def _signalled(r: dict[str, Any], _: NodeClock) -> str:
    who = f"({_t(r.get('holder_kind'))}: {_t(r.get('command'))})"  # a process's words: prose, escaped
    return f"{_t(r.get('signal'))} pid {_t(r.get('pid'))} {who} → {_t(r.get('outcome'))}"


def _holders_remaining(r: dict[str, Any], _: NodeClock) -> str:
    n = len(_list(r.get("holders")))
    waiting = " (waiting for the operator)" if r.get("waiting") else ""
    return f"{count(n, 'holder')} {verb(n, 'remains')}{waiting}"


def _smoke_finished(r: dict[str, Any], _: NodeClock) -> str:
    smoke = _dict(r.get("smoke")) or {}
    return f"smoke test {'passed' if smoke.get('passed') else 'FAILED'}: avg {_bandwidth(smoke.get('avg_busbw'))}"


def _restored(r: dict[str, Any], _: NodeClock) -> str:
    failed = f"; could not restore {_t(', '.join(map(str, _list(r.get('failed')))))}" if r.get("failed") else ""
    gpus = _list(r.get("persistence_gpus"))
    pm = f"; persistence mode back on for {count(len(gpus), 'GPU')}" if gpus else ""
    return f"restored {_t(', '.join(map(str, _list(r.get('units')))) or 'no unit')}{pm}{failed}"


def _note(r: dict[str, Any], clock: NodeClock) -> str:
    return f"_{_t(r.get('level', 'info'))}_: {_t(clock.annotate(str(r.get('message'))))}"


def _run_started(r: dict[str, Any], _: NodeClock) -> str:
    return (f"run {_t(r.get('run_id'))} started ({_t(r.get('mode', 'repair'))}"
            f"{', dry run' if r.get('dry_run') else ''})")


def _run_finished(r: dict[str, Any], clock: NodeClock) -> str:
    message = _t(clock.annotate(str(r.get("message") or "")))
    return f"run finished: **{_t(r.get('result'))}** {message}".rstrip()


_RENDERERS: dict[str, Callable[[dict[str, Any], NodeClock], str]] = {
    "step-started": lambda r, _: "step started",
    "step-finished": _step_finished,
    "process-signalled": _signalled,
    "holders-remaining": _holders_remaining,
    "smoke-finished": _smoke_finished,
    "restored": _restored,
    "note": _note,
    "run-started": _run_started,
    "run-finished": _run_finished,
}


def timeline(log: NodeLog) -> list[_Line]:
    """The node's timeline, condensed: what happened, with every failure, signal, note and step result."""
    lines: list[_Line] = []
    mode = ""
    for segment in _segments(log.records):
        plain = [r for _, r in segment]
        polls = [r for r in plain if r.get("event") == "fabric-progress"]
        lines += _fold_commands(segment, polling=bool(polls))
        wait = fabric_wait(polls, plain)
        if wait is not None:
            index = max(i for i, r in segment if r.get("event") == "fabric-progress")
            lines.append(_Line(index, polls[-1].get("time"), str(polls[-1].get("step") or ""), wait.words()))
        for i, r in segment:
            if r.get("event") == "run-started":
                mode = str(r.get("mode") or "")
            if r.get("event") in ("command-started", "command-finished", "fabric-progress"):
                continue
            lines += [_Line(i, r.get("time"), str(r.get("step") or ""), text) for text in _record_lines(r, mode, log.clock)]
    return sorted(lines, key=lambda line: line.order)


# ---- before and after ----------------------------------------------------------------------------------


def _kernel_label(line: dict[str, Any]) -> str:
    code = str(line.get("code"))
    if code in ("XID", "SXID") and line.get("xid") is not None:
        return f"{'Xid' if code == 'XID' else 'SXid'} {line.get('xid')}"
    return code


def kernel_listing(lines: list[dict[str, Any]], clock: NodeClock) -> list[str]:
    """``NV_ERR_X ×3, the last at 15:44:58 UTC`` per code (Markdown), in the order first logged."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_label.setdefault(_kernel_label(line), []).append(line)
    out = []
    for label, same in by_label.items():
        name = _t(label)
        stamp = same[-1].get("timestamp")
        if len(same) == 1:
            out.append(f"{name}, at {clock.show(stamp)}" if stamp else name)
        else:
            out.append(f"{name} ×{len(same)}" + (f", the last at {clock.show(stamp)}" if stamp else ""))
    return out


def _kernel_lines(summary: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The summary's kernel lines with their times (None: an older log, which has the codes only)."""
    lines = summary.get("kernel_lines")
    return [line for line in lines if isinstance(line, dict)] if isinstance(lines, list) else None


def since_repair(lines: list[dict[str, Any]], clock: NodeClock) -> list[dict[str, Any]]:
    """The lines logged after the repair began (where a line's time cannot say: those that still count)."""
    def new(line: dict[str, Any]) -> bool:
        older = clock.before_start(line.get("timestamp"))
        return bool(line.get("current")) if older is None else not older

    return [line for line in lines if new(line)]


def _kernel_cell(summary: dict[str, Any], clock: NodeClock, *, after: bool, verify_ok: bool) -> str:
    """The kernel row: every line before; after, only the lines the repair did not find already there."""
    lines = _kernel_lines(summary)
    if lines is None:
        codes = [str(c) for c in _list(summary.get("kernel_events"))]
        if after and codes and verify_ok:
            return "none new since the repair began (verify-fabric found none)"
        return _t(", ".join(codes)) or "none"
    left_out = int(_number(summary.get("kernel_lines_left_out")) or 0)
    if not after:
        text = "; ".join(kernel_listing(lines, clock)) or "none"
        return text + (f" (and {count(left_out, 'older line')})" if left_out else "")
    shown = since_repair(lines, clock)
    older = len(lines) - len(shown) + left_out
    text = "; ".join(kernel_listing(shown, clock)) or ("none since the repair began" if clock.start else
                                                       "none that still count")
    return text + (f" ({count(older, 'older line')} left out)" if older else "")


def _before_after(log: NodeLog) -> list[str]:
    before, after = log.observed("before"), log.observed("after")
    if not before and not after:
        return ["No node state was recorded."]
    verify = log.step("verify-fabric")
    verify_ok = bool(verify and verify.get("status") == "ok")

    def row(label: str, fn: Callable[[dict[str, Any], bool], str]) -> str:
        cells = [_cell(fn(s, side == "after")) if s else "–" for side, s in (("before", before), ("after", after))]
        return f"| {label} | {cells[0]} | {cells[1]} |"

    def fabric(s: dict[str, Any], _: bool) -> str:
        counts: dict[str, int] = {}
        for g in _list(s.get("fabric")):
            key = f"{g.get('state')}/{g.get('status')}" if isinstance(g, dict) else str(g)
            counts[key] = counts.get(key, 0) + 1
        return _t(", ".join(f"{n}× {k}" for k, n in counts.items()) or "–")

    def units(s: dict[str, Any], _: bool) -> str:
        return _t(", ".join(f"{u} {a}" for u, a in (_dict(s.get("units")) or {}).items()) or "–")

    def smoke(s: dict[str, Any], _: bool) -> str:
        sm = _dict(s.get("smoke"))
        if sm is None:
            return "–"
        at = f" at {log.clock.show(sm['at'])}" if sm.get("at") else ""
        return f"{'passed' if sm.get('passed') else 'failed'} ({_bandwidth(sm.get('avg_busbw'))}){at}"

    return [
        "| | before | after |",
        "| --- | --- | --- |",
        row("verdict", lambda s, _: _t(s.get("verdict"))),
        row("findings", lambda s, _: _t(", ".join(map(str, _list(s.get("findings")))) or "none")),
        row("Fabric Manager", lambda s, _: _t((_dict(s.get("units")) or {}).get(FM_UNIT, "?"))),
        row("fabric (per GPU)", fabric),
        row("units", units),
        row("holders of /dev/nvidia*", lambda s, _: _t(len(_list(s.get("holders"))))),
        row("kernel events", lambda s, later: _kernel_cell(s, log.clock, after=later, verify_ok=verify_ok)),
        row("last smoke test", smoke),
        row("driver / FM", lambda s, _: _t(f"{s.get('driver')} / {s.get('fm_version')}")),
    ]


# ---- the summary in words --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Said:
    """What a summary says about findings: the node's state, its clock, the tense, which lines count."""

    summary: dict[str, Any]
    clock: NodeClock
    past: bool
    kernel: list[dict[str, Any]] | None

    def be(self) -> str:
        return "was" if self.past else "is"

    def say(self) -> str:
        return "said" if self.past else "says"


def _kernel_detail(said: _Said, code: str) -> str:
    """``(`NV_ERR_X`, 3 lines, the last at 15:44:58 UTC)``: the lines behind a kernel finding."""
    lines = [line for line in said.kernel or [] if line.get("code") == code]
    if not lines:
        return f"({_code(code)})"
    stamp = lines[-1].get("timestamp")
    if not stamp:
        when = ""
    elif len(lines) == 1:
        when = f" at {said.clock.show(stamp)}"
    else:
        when = f", the last at {said.clock.show(stamp)}"
    return f"({_code(code)}, {count(len(lines), 'line')}{when})"


def _fm_words(said: _Said) -> str:
    s = said.summary
    state = (_dict(s.get("units")) or {}).get(FM_UNIT)
    if state is None:
        return f"there {said.be()} no Fabric Manager unit"
    result = (_dict(s.get("unit_results")) or {}).get(FM_UNIT)
    since = (_dict(s.get("unit_since")) or {}).get(FM_UNIT)
    why = f"{_t(state)}, Result: {_t(result)}" if result and result != "success" else _t(state)
    if state == "failed":
        at = f" at {said.clock.show(since)}" if since else ""  # systemd's time of the failure
        died = result in CRASHES or not result
        return f"Fabric Manager {('had died' if died else 'had failed') if said.past else 'is down'} ({why}){at}"
    down = f" since {said.clock.show(since)}" if since else ""
    return f"Fabric Manager {said.be()} not running ({why}){down}"


def _fabric_words(said: _Said, completed: bool) -> str:
    gpus = [g for g in _list(said.summary.get("fabric")) if isinstance(g, dict)]
    if completed:
        bad = [g for g in gpus if g.get("state") == "Completed" and g.get("status") != "Success"]
        statuses = _t(", ".join(dict.fromkeys(str(g.get("status")) for g in bad)) or "an error")
        return (f"fabric registration of {count(len(bad) or None, 'GPU')} "
                f"{'ended' if said.past else 'ends'} in {statuses}, which a reset does not fix (escalate)")
    bad = [g for g in gpus if g.get("state") != "Completed"]
    states = _t(", ".join(dict.fromkeys(str(g.get("state")) for g in bad)) or "not Completed")
    n = len(bad) or None
    have = "had" if said.past else verb(n or 2, "has")
    return f"{count(n, 'GPU')} {have} not finished fabric registration ({states})"


def _all_registered(summary: dict[str, Any]) -> bool:
    gpus = [g for g in _list(summary.get("fabric")) if isinstance(g, dict)]
    return bool(gpus) and all(g.get("state") == "Completed" and g.get("status") == "Success" for g in gpus)


def _details(summary: dict[str, Any], code: str) -> list[str]:
    return [str(d.get("message")) for d in _list(summary.get("finding_details"))
            if isinstance(d, dict) and d.get("code") == code and d.get("message")]


def _not_present_words(said: _Said) -> str:
    code = KERNEL_FINDINGS["FABRIC_MANAGER_NOT_PRESENT"]
    return f"the kernel {said.say()} Fabric Manager {said.be()} not present {_kernel_detail(said, code)}"


def _out_of_sync_words(said: _Said) -> str:
    # Completed/Success beside this line is the incident's trap: the fabric looks registered and is not.
    though = ""
    if _all_registered(said.summary):
        though = f", though every GPU {'showed' if said.past else 'shows'} Completed/Success"
    code = KERNEL_FINDINGS["FABRIC_OUT_OF_SYNC"]
    return f"the kernel {said.say()} the NVLink fabric state {said.be()} out of sync {_kernel_detail(said, code)}{though}"


def _mismatch_words(said: _Said) -> str:
    s = said.summary
    return (f"Fabric Manager {_t(s.get('fm_version'))} {'did' if said.past else 'does'} not match driver "
            f"{_t(s.get('driver'))}")


def _xid_words(said: _Said) -> str:
    xids = [line for line in said.kernel or [] if line.get("code") in ("XID", "SXID")]
    return f"the kernel logged {_and(kernel_listing(xids, said.clock)) if xids else 'Xid lines'}"


def _holders_words(said: _Said) -> str:
    n = len(_list(said.summary.get("holders")))
    return f"{count(n, 'process')} {'held' if said.past else verb(n, 'holds')} {_t('/dev/nvidia*')}"


def _smoke_failed_words(said: _Said) -> str:
    smoke = _dict(said.summary.get("smoke")) or {}
    return f"the last NVLS smoke test {'had failed' if said.past else 'failed'} ({_bandwidth(smoke.get('avg_busbw'))})"


def _interrupted_words(said: _Said) -> str:
    return ("an earlier repair had not finished (its record was on the node)" if said.past else
            "an interrupted repair's record is on the node")


def _platform_words(said: _Said) -> str:
    return f"the board ({_t(said.summary.get('platform'))}) {said.be()} not one this H100/H200 playbook repairs"


def _evidence_words(said: _Said) -> str:
    what = "; ".join(_t(m) for m in _details(said.summary, "EVIDENCE_MISSING")) or "a section"
    return f"part of the node {'could not' if said.past else 'cannot'} be read: {what}"


_FINDING_WORDS: dict[str, Callable[[_Said], str]] = {
    "FM_NOT_RUNNING": _fm_words,
    "FABRIC_MANAGER_NOT_PRESENT": _not_present_words,
    "FABRIC_OUT_OF_SYNC": _out_of_sync_words,
    "FM_VERSION_MISMATCH": _mismatch_words,
    "FABRIC_NOT_COMPLETED": lambda said: _fabric_words(said, completed=False),
    "FABRIC_STATUS_ERROR": lambda said: _fabric_words(said, completed=True),
    "XID": _xid_words,
    "HOLDERS_PRESENT": _holders_words,
    "NVLS_SMOKE_FAILED": _smoke_failed_words,
    "INTERRUPTED_REPAIR": _interrupted_words,
    "PLATFORM_UNSUPPORTED": _platform_words,
    "EVIDENCE_MISSING": _evidence_words,
}


def finding_words(code: str, said: _Said) -> str:
    """One finding as a phrase (Markdown), in the summary's tense, from the logged state (not the code);
    a code this report has no words for is named, with the diagnosis's own sentence when logged."""
    words = _FINDING_WORDS.get(code)
    if words is not None:
        return words(said)
    detail = _details(said.summary, code)
    return _code(code) + (f": {_t(detail[0])}" if detail else "")


def _findings_sentence(summary: dict[str, Any], clock: NodeClock, *, past: bool,
                       kernel: list[dict[str, Any]] | None, older: frozenset[str] = frozenset()) -> str:
    """The findings as one phrase: the faults, then what only older kernel lines say, then the circumstances.

    Args:
        kernel: the kernel lines the words may cite (None: an older log without them).
        older: kernel findings whose every line was logged before the repair began.
    """
    if summary.get("reachable") is False:
        return f"the node could not be reached ({_t(summary.get('error') or 'no answer')})"
    said = _Said(summary, clock, past, kernel)
    codes = list(dict.fromkeys(str(c) for c in _list(summary.get("findings"))))
    faults = [finding_words(c, said) for c in codes if c not in CIRCUMSTANCES and c not in older]
    faults += [f"the kernel's {_code(KERNEL_FINDINGS[c])} from before the repair still counts "
               "(no smoke test has passed since)" for c in codes if c in older]
    # Holders are the circumstance, not a fault: after the faults, so "and" never joins them to a fault's clause.
    rest = [finding_words(c, said) for c in codes if c in CIRCUMSTANCES]
    return "; ".join(p for p in (_and(faults), *rest) if p)


def _was_wrong(log: NodeLog) -> str | None:
    before = log.observed("before")
    if before is None:
        return None
    lines = _kernel_lines(before)
    counting = [line for line in lines if line.get("current")] if lines is not None else None
    words = _findings_sentence(before, log.clock, past=True, kernel=counting)
    return f"- Was wrong: {words or 'nothing: the node was ' + _t(before.get('verdict'))}."


def _by_hand(log: NodeLog) -> list[str]:
    """The bullets about the operator's own hand: before this repair (its list), and in this log."""
    day, out = log.clock.day, []
    listed = log.manual_list()
    changes = [c for c in _list((listed or {}).get("changes")) if isinstance(c, dict)]
    if listed and changes:
        words = [_change_words(c, _who(listed), _epoch_utc(c.get("at"), day)) for c in changes]
        out.append(f"- By hand before this run: {'; '.join(words)}.")
    done = log.by_hand()
    if done:
        words = [_change_words(r, _who(r), _record_utc(r.get("time"), day)) for r in done]
        out.append(f"- By hand: {'; '.join(words)}.")
    return out


def _stopped_by_hand(log: NodeLog) -> list[str]:
    """Units stopped by hand before this repair (its ``manual-changes`` list)."""
    listed = log.manual_list() or {}
    return [str(c.get("unit")) for c in _list(listed.get("changes"))
            if isinstance(c, dict) and c.get("what") == "stopped" and c.get("unit")]


def _fm_started(log: NodeLog) -> bool:
    """The repair's fabric-manager step started Fabric Manager (its stop in quiesce is then told with it)."""
    return ["systemctl", "start", FM_UNIT] in log.ok_commands("fabric-manager")


def _units_done(log: NodeLog) -> list[str]:
    stopped = [u for u in log.stopped_units() if u != FM_UNIT or not _fm_started(log)]
    restored = [str(u) for u in _list(log.restored().get("units"))]
    by_hand = [u for u in _stopped_by_hand(log) if u in restored]
    parts = []
    if stopped and set(stopped) <= set(restored):
        parts.append(f"{count(len(stopped), 'unit')} stopped and started again ({_codes(stopped)})")
    elif stopped:
        parts.append(f"{count(len(stopped), 'unit')} stopped ({_codes(stopped)})")
        again = [u for u in restored if u not in by_hand]
        if again and not _aborted(log):
            parts.append(f"the restore started {_codes(again)} again")
    if by_hand:
        parts.append(f"the restore put back {_codes(by_hand)}, stopped by hand")
    return parts


def _signals_done(log: NodeLog) -> list[str]:
    """The runbook's own signals (those sent by hand are told with the operator's name)."""
    by_hand = {id(r) for r in log.by_hand()}
    mine = [r for r in log.events("process-signalled") if id(r) not in by_hand]
    sent = Counter(str(r.get("signal") or "SIGTERM") for r in mine if r.get("outcome") == "signalled")
    other = Counter(str(r.get("outcome")) for r in mine if r.get("outcome") != "signalled")
    words = {"gone": "already gone", "changed": "left alone (changed since the check)"}
    return ([f"{count(n, 'holder')} stopped with {_t(sig)}" for sig, n in sent.items()] +
            [f"{count(n, 'holder')} {words.get(what, _t(what))}" for what, n in other.items()])


def _fabric_done(log: NodeLog) -> list[str]:
    parts = []
    reset = log.step("reset")
    if reset and reset.get("status") == "ok":
        gpus = len(_list((log.observed("before") or {}).get("fabric"))) or None
        parts.append(f"{count(gpus, 'GPU')} and the NVSwitches reset")
    elif reset:
        parts.append(f"the reset failed: {_t(log.clock.annotate(str(reset.get('message') or 'no reason given')))}")
    if _fm_started(log):
        head = ("Fabric Manager stopped, then started after the reset" if FM_UNIT in log.stopped_units() else
                "Fabric Manager started")
        segment = [r for r in log.records if r.get("step") == "fabric-manager"]
        wait = fabric_wait([r for r in segment if r.get("event") == "fabric-progress"], segment)
        step = log.step("fabric-manager")
        if wait and wait.done:
            parts.append(f"{head}: {count(wait.gpus, 'GPU')} registered in {wait.seconds:.1f} s")
        elif step and step.get("status") != "ok" and step.get("message"):
            parts.append(f"{head}, but {_t(log.clock.annotate(str(step['message'])))}")
        else:
            parts.append(head)
    verify = log.step("verify-fabric")
    if verify and verify.get("status") != "ok" and verify.get("message"):
        parts.append(f"verify-fabric failed: {_t(log.clock.annotate(str(verify['message'])))}")
    return parts


def _smoke_done(log: NodeLog) -> list[str]:
    smokes = [s for s in (_dict(r.get("smoke")) for r in log.events("smoke-finished")) if s]
    if not smokes:
        return []
    last = smokes[-1]
    verdict = "passed" if last.get("passed") else "failed"
    threshold = _number(last.get("threshold"))
    limit = f" (threshold {gbps(threshold)})" if threshold is not None else ""
    errors = [str(e) for e in _list(last.get("errors"))] if not last.get("passed") else []
    why = f": {_t('; '.join(errors))}" if errors else ""
    head = f"{count(len(smokes), 'smoke test')}, the last" if len(smokes) > 1 else "smoke test"
    return [f"{head} {verdict} at {_bandwidth(last.get('avg_busbw'))}{limit}{why}"]


def _persistence_done(log: NodeLog) -> list[str]:
    if not any(a[:3] == ["nvidia-smi", "-pm", "0"] for a in log.ok_commands("quiesce")):
        return []
    gpus = _list(log.restored().get("persistence_gpus"))
    back = f", back on for {count(len(gpus), 'GPU')} by the restore" if gpus else ""
    return [f"persistence mode turned off{back}"]


def _done(log: NodeLog) -> str | None:
    finished = log.finished or {}
    if log.dry_run:
        return "- Done: nothing (a dry run: the plan was read, nothing was changed)."
    if finished.get("result") == "refused":
        why = f": {_t(log.clock.annotate(str(finished['message'])))}" if finished.get("message") else ""
        return f"- Done: nothing, the run was refused{why}".rstrip(".") + "."
    parts = (_units_done(log) + _persistence_done(log) + _signals_done(log) + _fabric_done(log) +
             _smoke_done(log))
    if not parts:
        return None if log.by_hand() else "- Done: nothing was changed."
    return f"- Done: {_sentence(parts)}"


def _aborted(log: NodeLog) -> bool:
    return (log.finished or {}).get("result") == "aborted"


def _abort_bullet(log: NodeLog) -> str | None:
    """Where an aborted run stopped (the runbook's own sentence names the step) and what the restore did."""
    if not _aborted(log):
        return None
    message = str((log.finished or {}).get("message") or "aborted")
    if "aborted at " not in message:
        failed = next((r for r in reversed(log.events("step-finished")) if r.get("status") == "failed"), None)
        message += f" (during {failed.get('step')})" if failed else ""
    restored = log.restored()
    units = [str(u) for u in _list(restored.get("units"))]
    failed_units = [str(u) for u in _list(restored.get("failed"))]
    restore = log.step("restore")
    if failed_units:
        then = f" The restore could not put back: {_t(', '.join(failed_units))}."
    elif units:
        then = f" The restore put back {count(len(units), 'unit')} ({_codes(units)})."
    elif restore and restore.get("status") == "ok":
        then = " The restore had nothing to put back."
    else:
        then = ""
    return f"- Aborted: {_t(log.clock.annotate(message)).rstrip('.')}.{then}"


def _left_on_node(log: NodeLog) -> tuple[bool, bool]:
    """(repair record still on the node, lock still held), as far as the log's commands show."""
    record = lock = False
    for argv in log.ok_commands():
        if argv[:1] == ["mv"] and argv[-1:] == [RECORD_FILE]:
            record = True
        elif argv[:1] == ["rm"] and argv[-1:] == [RECORD_FILE]:
            record = False
        elif argv == ["mkdir", LOCK_DIR]:
            lock = True
        elif argv == ["rmdir", LOCK_DIR]:
            lock = False
    return record, lock


def _restore_command(host: str) -> str:
    return _code(f"nvls-tui repair --restore {shlex.quote(host)}")


def _log_ends(log: NodeLog) -> str:
    last = log.records[-1] if log.records else {}
    return f"the log ends at {_record_utc(last.get('time'), log.clock.day)} during {_code(last.get('step') or '?')}"


def _restore_advice(log: NodeLog) -> str:
    """What a run that did not finish left on the node, and the exact command that puts the node back."""
    record, lock = _left_on_node(log)
    command = _restore_command(log.host)
    if record:
        keeps = "its repair record and lock" if lock else "its repair record"
        return f", and the node keeps {keeps}: {command} puts back what the run stopped"
    if lock:
        return f", and the node keeps its lock: {command} clears it"
    return f": {command} checks the node and puts back anything left"


def _verdict_words(log: NodeLog) -> list[str]:
    """The node after the run: verdict and remaining findings; kernel lines older than the repair are
    named as such, not as something the repair left."""
    after, before = log.observed("after"), log.observed("before")
    if after is None:
        if before is None:
            return []
        if ["mkdir", LOCK_DIR] not in log.ok_commands():  # no lock, no change: the before still stands
            return [f"nothing was changed, so the node is as it was ({_t(before.get('verdict'))})"]
        return ["no read of the node after the run"]
    lines = _kernel_lines(after)
    new = since_repair(lines, log.clock) if lines is not None else None
    older = frozenset(c for c in map(str, _list(after.get("findings"))) if c in KERNEL_FINDINGS and new is not None
                      and not any(line.get("code") == KERNEL_FINDINGS[c] for line in new))
    words = _findings_sentence(after, log.clock, past=False, kernel=new, older=older)
    verdict = _t(after.get("verdict"))
    return [f"{verdict}: {words}" if words else f"{verdict}; no finding remains"]


def _units_left(log: NodeLog) -> list[str]:
    before, after = log.observed("before") or {}, log.observed("after") or {}
    was, now = _dict(before.get("units")) or {}, _dict(after.get("units"))
    parts = []
    if now is not None:
        down = [u for u, state in was.items() if is_running(state) and not is_running(now.get(u))]
        if down:
            parts.append("not running as before the repair: " + ", ".join(
                f"{_code(u)} (was {_t(was[u])}, now {_t(now.get(u, 'gone'))})" for u in down))
    failed = [str(u) for u in _list(log.restored().get("failed"))]
    if failed:
        parts.append(f"could not put back: {_t(', '.join(failed))}")
    return parts


def _manual_left(log: NodeLog) -> list[str]:
    """Units stopped by hand that nothing put back."""
    parts = []
    listed = log.manual_list()
    restored = [str(u) for u in _list(log.restored().get("units"))]
    now = _dict((log.observed("after") or {}).get("units")) or {}
    stays = [u for u in _stopped_by_hand(log) if u not in restored and not is_running(now.get(u))]
    if stays:
        chose = ""
        if listed and listed.get("put_back") is False:
            chose = f" (the operator chose to leave {'it' if len(stays) == 1 else 'them'} stopped)"
        parts.append(f"stopped by hand and not put back: {_codes(stays)}{chose}")
    open_stops: dict[str, None] = {}
    for r in log.events("manual-change"):
        unit = str(r.get("unit"))
        if r.get("what") == "stopped":
            open_stops[unit] = None
        elif r.get("what") == "started":
            open_stops.pop(unit, None)
    if open_stops:
        parts.append(f"stopped by hand and not started again in this log: {_codes(open_stops)}")
    return parts


def _record_left(log: NodeLog) -> list[str]:
    """What the run left of its own on the node: the record and lock, or, after an abort, the advice."""
    record, lock = _left_on_node(log)
    command = _restore_command(log.host)
    if record:
        return [f"the node keeps its repair record: {command} puts back what the run stopped"]
    if lock:
        return [f"the node keeps the repair's lock: {command} clears it"]
    if _aborted(log):
        took = any(a == ["mkdir", LOCK_DIR] for a in log.ok_commands())
        cleaned = (f"the restore removed the repair record and the lock (nothing for {command} to do)" if took else
                   "nothing was changed")
        return [f"{cleaned}; run the repair again"]
    return []


def _left(log: NodeLog) -> str:
    if log.finished is None and not log.by_hand():
        parts = [f"the run did not finish: {_log_ends(log)}{_restore_advice(log)}"]
    else:
        parts = _verdict_words(log) + _units_left(log)
    parts += _manual_left(log)
    if log.finished is not None:
        parts += _record_left(log)
    return f"- Left: {_sentence(parts) if parts else 'nothing, as far as this log shows.'}"


def node_summary(log: NodeLog) -> list[str]:
    """A few bullets about one node: what was wrong, what was done (by hand too), what is left."""
    first, last = (log.records[0], log.records[-1]) if log.records else ({}, {})
    result = _t((log.finished or {}).get("result") or "unfinished")
    span = f"{_record_utc(first.get('time'), log.clock.day).removesuffix(' UTC')} to " \
           f"{_record_utc(last.get('time'), log.clock.day)}"
    bullets = [_was_wrong(log), *_by_hand(log), _done(log), _abort_bullet(log), _left(log)]
    return [f"**{_t(log.host)}: {result}** ({span})", "", *[b for b in bullets if b], ""]


# ---- the node's sections ------------------------------------------------------------------------------


def _node_section(log: NodeLog) -> list[str]:
    host = log.host
    out = [f"## {_t(host)}", ""]
    finished = log.finished
    if finished:
        message = f" — {_t(log.clock.annotate(str(finished['message'])))}" if finished.get("message") else ""
        out += [f"**Result: {_t(finished.get('result'))}**{message}", ""]
    else:
        out += [f"**Unfinished**: {_log_ends(log)} (nvls-tui stopped mid-run?){_restore_advice(log)}.", ""]
    out += _manual_section(log)
    out += ["### Before and after", "", *_before_after(log), ""]
    out += _holders_section(log)
    out += _smoke_section(log)
    out += ["### Timeline", "", "| time (UTC) | step | what happened |", "| --- | --- | --- |"]
    out += [f"| {_clock(line.time)} | {_cell(_t(line.step))} | {_cell(line.text)} |" for line in timeline(log)]
    out.append("")
    return out


def _holders_section(log: NodeLog) -> list[str]:
    signals = log.events("process-signalled")
    out = ["### Holders stopped", ""]
    if signals:
        out += ["| pid | kind | command | signal | outcome |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {_cell(_t(r.get('pid')))} | {_cell(_t(r.get('holder_kind')))} | {_cell(_t(r.get('command')))} | "
                f"{_cell(_t(r.get('signal')))} | {_cell(_t(r.get('outcome')))} |" for r in signals]
    else:
        out.append("No process was signalled.")
    stopped = log.stopped_units()
    if stopped:
        out += ["", "Units stopped: " + _codes(stopped)]
    out.append("")
    return out


def _smoke_section(log: NodeLog) -> list[str]:
    out = ["### Smoke test", ""]
    rows = log.events("smoke-row")
    results = [r["smoke"] for r in log.events("smoke-finished") if isinstance(r.get("smoke"), dict)]
    if rows:
        out += ["| size (B) | out-of-place busbw (GB/s) | in-place busbw (GB/s) |", "| ---: | ---: | ---: |"]
        for r in rows:
            row = _dict(r.get("row")) or {}
            out.append(f"| {_cell(_t(r.get('size')))} | {_cell(_t(row.get('oop_busbw')))} | "
                       f"{_cell(_t(row.get('ip_busbw')))} |")
        out.append("")
    for smoke in results:
        verdict = "passed" if smoke.get("passed") else "FAILED"
        errors = _list(smoke.get("errors"))
        out.append(f"- {verdict}: average bus bandwidth {_t(smoke.get('avg_busbw'))} GB/s (threshold "
                   f"{_t(smoke.get('threshold'))}), out of bounds {_t(smoke.get('out_of_bounds'))}, NVLS used "
                   f"{_t(smoke.get('nvls_used'))}" + (f"; {_t('; '.join(map(str, errors)))}" if errors else ""))
    if not rows and not results:
        out.append("No smoke test ran.")
    out.append("")
    return out


def _manual_section(log: NodeLog) -> list[str]:
    """What the operator changed by hand before the repair (the console's ledger), if anything."""
    listed = log.manual_list()
    changes = [c for c in _list((listed or {}).get("changes")) if isinstance(c, dict)]
    if not listed or not changes:
        return []
    out = ["### Changed by hand before the repair", ""]
    out += [f"- {_change_words(c, _who(listed), _epoch_utc(c.get('at'), log.clock.day))}" for c in changes]
    put_back = listed.get("put_back")
    out += ["", "The restore put the units stopped by hand back." if put_back else
            "The operator chose to leave the units stopped by hand as they were.", ""]
    return out


# ---- the whole report -----------------------------------------------------------------------------------


def _header(contents: AuditLogContents, source: str | None, logs: list[NodeLog]) -> list[str]:
    records = contents.records
    first, last = (records[0], records[-1]) if records else ({}, {})
    start = _moment(first.get("time"))
    day = start.date() if start else None
    dry = any(log.dry_run for log in logs)
    span = (f"{start:%Y-%m-%d %H:%M:%S} to {_record_utc(last.get('time'), day)}" if start else
            f"{_t(first.get('time', '?'))} to {_t(last.get('time', '?'))}")
    measured = all(log.clock.offset is not None for log in logs)
    out = ["# NVLS repair incident report", ""]
    out += [f"- audit log: {_code(source)}" if source else "- audit log: (stdin)",
            f"- operator: {_t(first.get('operator', '?'))}",
            f"- from {span}",
            "- times: the bastion's clock, UTC; node-clock times are converted" +
            ("" if measured else " where the node's offset was measured"),
            *[log.clock.header(log.host) for log in logs],
            f"- nodes: {', '.join(_t(log.host) for log in logs) or 'none'}" +
            (" (dry run: nothing was changed)" if dry else ""),
            "- The audit log holds every command with its exit status and output; the timelines below fold "
            "bookkeeping, repeated commands and Fabric Manager's polls"]
    if contents.unreadable:
        where = ", ".join(map(str, contents.unreadable[:5]))
        out.append(f"- {len(contents.unreadable)} unreadable line(s) skipped (line {where}); "
                   "a torn last line is what a killed run leaves")
    out.append("")
    return out


def _results_table(logs: list[NodeLog]) -> list[str]:
    if not logs:
        return []
    out = ["| node | result | smoke avg (GB/s) | message |", "| --- | --- | ---: | --- |"]
    for log in logs:
        fin = log.finished or {}
        smoke: dict[str, Any] = next((r["smoke"] for r in reversed(log.events("smoke-finished"))
                                      if isinstance(r.get("smoke"), dict)), {})
        out.append(f"| {_cell(_t(log.host))} | {_cell(_t(fin.get('result', 'unfinished')))} | "
                   f"{_cell(_t(smoke.get('avg_busbw', '–')))} | {_cell(_t(fin.get('message', '')))} |")
    out.append("")
    return out


def node_logs(records: list[dict[str, Any]]) -> list[NodeLog]:
    """One :class:`NodeLog` per node, in the order the nodes first appear, each with its clock."""
    first = _moment(records[0].get("time")) if records else None
    day = first.date() if first else None
    hosts: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        node = r.get("node")
        if node and isinstance(node, str):
            hosts.setdefault(node, []).append(r)
    return [NodeLog(host, mine, measure_clock(mine, day)) for host, mine in hosts.items()]


def render_report(contents: AuditLogContents, source: str | None = None) -> str:
    """The Markdown incident report of one audit log; every value from the log is escaped."""
    logs = node_logs(contents.records)
    out = _header(contents, source, logs)
    if logs:
        out += ["## Summary", "", *_results_table(logs)]
        for log in logs:
            out += node_summary(log)
    for log in logs:
        out += _node_section(log)
    return "\n".join(out).rstrip() + "\n"


class NotAnAuditLog(ValueError):
    """The file is readable but is no nvls-tui audit log (no record with an event, a time and a run id)."""


def is_audit_log(contents: AuditLogContents) -> bool:
    """True when at least one record looks like nvls-tui's: ``event``, ``time`` and ``run_id``."""
    return any(isinstance(r.get("event"), str) and "time" in r and "run_id" in r for r in contents.records)


def report_from_file(path: str | os.PathLike[str]) -> str:
    """Read ``path`` and render its report.

    Raises:
        OSError: it cannot be read.
        NotAnAuditLog: it holds no audit record (a report of it would be all question marks).
    """
    contents = load_audit_log(path)
    if not is_audit_log(contents):
        raise NotAnAuditLog(f"{path} is not an nvls-tui audit log (no record has an event, a time and a run id)")
    return render_report(contents, str(path))


__all__ = ["AuditLogContents", "NodeClock", "NotAnAuditLog", "is_audit_log", "load_audit_log", "measure_clock",
           "render_report", "report_from_file"]

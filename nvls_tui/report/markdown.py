"""An incident report (Markdown) from an audit log: a summary in words, then per node the before and
after, the holders stopped, the smoke results and a condensed timeline.

The log may end mid-run (nvls-tui was killed): every complete record still counts, a torn last line
is skipped and mentioned, and a node without a ``run-finished`` record is reported as unfinished.

One clock: every record carries the bastion's time (UTC); node-clock times are converted with the
offset the node's ``date`` gave, or shown as logged and marked "(node clock)" (``report_clock``).

This module reads the log and assembles the document; the parts are written by ``report_summary``
(the summary in words), ``report_tables`` (the tables and lists) and ``report_timeline``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from nvls_tui.report.clock import NodeClock, measure_clock, record_utc, utc_moment
from nvls_tui.report.node_log import NodeLog, node_logs
from nvls_tui.report.review import review_section
from nvls_tui.report.summary import log_ends, node_summary, restore_advice
from nvls_tui.report.tables import before_after, holders_section, manual_section, results_table, smoke_section
from nvls_tui.report.text import code_span, prose
from nvls_tui.report.timeline import timeline_table
from nvls_tui.runbook.event_records import NotAnEvent
from nvls_tui.runbook.log_entries import LogEntry, read_entry
from nvls_tui.runbook.record_schema import fields_problem, shape_problem
from nvls_tui.textsafe import clean_deep, json_is_plain


@dataclass
class AuditLogContents:
    """The records of one audit log and the lines that could not be read.

    Attributes:
        records: every line that is a whole audit record, each field of the kind a run writes, read back
            into its event (:mod:`nvls_tui.runbook.log_entries`).
        unreadable: the numbers of the other lines, in order.
        problems: why each of those lines was skipped (one phrase per line number).
    """

    records: list[LogEntry] = field(default_factory=list)
    unreadable: list[int] = field(default_factory=list)
    problems: dict[int, str] = field(default_factory=dict)


def read_record(line: str) -> LogEntry | str:
    """One line of the log as a record read back into its event (node text cleaned), or why it is none.

    Any failure is the line's (a torn write, a hand edit, a line nested past Python's recursion limit):
    it is named in the report, never the end of it. The record is checked as the report reads it, cleaned
    (a key that only cleaning makes a field's name is that field), and checked and decoded once.
    """
    try:
        value = json.loads(line)
    except RecursionError:
        return "nested deeper than any audit record"
    except ValueError as exc:
        return "not JSON" if isinstance(exc, json.JSONDecodeError) else f"not JSON ({exc})"
    problem = shape_problem(value)  # first: cleaning walks the record recursively
    if problem is not None:
        return problem
    record = value if json_is_plain(line) else clean_deep(value)  # plain: cleaning would change nothing
    problem = fields_problem(record)
    if problem is not None:
        return problem
    try:
        return read_entry(record)
    except NotAnEvent as exc:
        return str(exc)


def load_audit_log(path: str | os.PathLike[str]) -> AuditLogContents:
    """Read a JSONL audit log, skipping (and noting) every line that is no whole, well-typed record.

    Raises:
        OSError: the file cannot be read.
    """
    contents = AuditLogContents()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = read_record(line)
            if isinstance(record, LogEntry):
                contents.records.append(record)
            else:
                contents.unreadable.append(number)
                contents.problems[number] = record
    return contents


def _numbers(numbers: list[int]) -> str:
    """``line 4``, ``lines 4, 6-9``: line numbers, runs folded."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    words = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return f"{'line' if len(numbers) == 1 else 'lines'} {words}"


# Bad lines whose reason the header spells out (every one is named by number).
REASONS_SHOWN = 10


def _node_section(log: NodeLog) -> list[str]:
    """One node's section: its result, then what was changed by hand, before and after, holders, smoke, timeline."""
    host = log.host
    out = [f"## {prose(host)}", ""]
    happened = log.happened
    if happened.result is not None:
        message = f" — {prose(log.clock.annotate(happened.message))}" if happened.message else ""
        out += [f"**Result: {prose(happened.result)}**{message}", ""]
    else:
        out += [f"**Unfinished**: {log_ends(log)} (nvls-tui stopped mid-run?){restore_advice(log)}.", ""]
    out += manual_section(log)
    out += ["### Before and after", "", *before_after(log), ""]
    out += holders_section(log)
    out += smoke_section(log)
    out += ["The timeline is in the appendix.", ""]
    return out


def _header(contents: AuditLogContents, source: str | None, logs: list[NodeLog]) -> list[str]:
    records = contents.records
    first, last = (records[0], records[-1]) if records else (None, None)
    start = utc_moment(first.time if first else None)
    day = start.date() if start else None
    dry = any(log.dry_run for log in logs)
    span = (f"{start:%Y-%m-%d %H:%M:%S} to {record_utc(last.time if last else None, day)}" if start else
            f"{prose(_time_or_mark(first))} to {prose(_time_or_mark(last))}")
    measured = all(log.clock.offset is not None for log in logs)
    out = ["# NVLS repair incident report", ""]
    out += [f"- audit log: {code_span(source)}" if source else "- audit log: (stdin)",
            f"- operator: {prose(_operator_or_mark(first))}",
            f"- from {span}",
            "- times: the bastion's clock, UTC; node-clock times are converted" +
            ("" if measured else " where the node's offset was measured"),
            *[log.clock.header(log.host) for log in logs],
            f"- nodes: {', '.join(prose(log.host) for log in logs) or 'none'}" +
            (" (dry run: nothing was changed)" if dry else ""),
            "- The audit log holds every command with its exit status and output; the timelines (in the "
            "appendix) fold bookkeeping, repeated commands and Fabric Manager's polls"]
    if contents.unreadable:
        out.append(f"- {len(contents.unreadable)} unreadable line(s) skipped ({_numbers(contents.unreadable)}); "
                   "a torn last line is what a killed run leaves")
        out += [f"  - line {n}: {_problem_words(contents.problems.get(n, 'unreadable'))}"
                for n in contents.unreadable[:REASONS_SHOWN]]
    out.append("")
    return out


def _time_or_mark(entry: LogEntry | None) -> str | None:
    """A record's time as written, ``?`` where there is no record or it has no time."""
    return "?" if entry is None or entry.time is None else entry.time


def _operator_or_mark(entry: LogEntry | None) -> str | None:
    """The first record's operator: ``?`` where there is no record or it has no ``operator`` field."""
    return "?" if entry is None or not entry.has_operator else entry.operator


def _problem_words(problem: str) -> str:
    """A bad line's reason as Markdown: the field names in it are code spans, the rest escaped."""
    parts = problem.split("`")
    return "".join(code_span(p) if i % 2 else _spaced(p) for i, p in enumerate(parts))


def _spaced(text: str) -> str:
    """:func:`prose` that keeps the spaces around ``text`` (it sits between code spans)."""
    return (" " if text.startswith(" ") else "") + prose(text) + (" " if text.endswith(" ") and text.strip() else "")


def render_report(contents: AuditLogContents, source: str | None = None) -> str:
    """The Markdown incident report of one audit log; every value from the log is escaped."""
    logs = node_logs(contents.records)
    out = _header(contents, source, logs)
    out += review_section(logs)  # what a review asks first: down time, cause, impact, follow-ups
    if logs:
        out += ["## Summary", "", *results_table(logs)]
        for log in logs:
            out += node_summary(log)
    for log in logs:
        out += _node_section(log)
    if logs:  # the long step-by-step tables last, out of a reader's way
        out += ["## Appendix: timelines", ""]
        for log in logs:
            out += [f"### {prose(log.host)}", "", *timeline_table(log), ""]
    return "\n".join(out).rstrip() + "\n"


class NotAnAuditLog(ValueError):
    """The file is readable but is no nvls-tui audit log (no record with an event, a time and a run id)."""


def is_audit_log(contents: AuditLogContents) -> bool:
    """True when at least one record looks like nvls-tui's: ``event``, ``time`` and ``run_id``."""
    return any(r.kind is not None and r.time is not None and r.run_id is not None for r in contents.records)


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


# NodeClock and measure_clock live in report_clock; they are named here too, where callers first found them.
__all__ = ["AuditLogContents", "NodeClock", "NotAnAuditLog", "is_audit_log", "load_audit_log", "measure_clock",
           "render_report", "report_from_file"]

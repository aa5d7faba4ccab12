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
from typing import Any

from nvls_tui.records.report_clock import NodeClock, measure_clock, record_utc, utc_moment
from nvls_tui.records.report_node_log import NodeLog, node_logs
from nvls_tui.records.report_summary import log_ends, node_summary, restore_advice
from nvls_tui.records.report_tables import before_after, holders_section, manual_section, results_table, smoke_section
from nvls_tui.records.report_text import code_span, prose
from nvls_tui.records.report_timeline import timeline_table
from nvls_tui.textsafe import clean_deep


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


def _node_section(log: NodeLog) -> list[str]:
    """One node's section: its result, then what was changed by hand, before and after, holders, smoke, timeline."""
    host = log.host
    out = [f"## {prose(host)}", ""]
    finished = log.finished
    if finished:
        message = f" — {prose(log.clock.annotate(str(finished['message'])))}" if finished.get("message") else ""
        out += [f"**Result: {prose(finished.get('result'))}**{message}", ""]
    else:
        out += [f"**Unfinished**: {log_ends(log)} (nvls-tui stopped mid-run?){restore_advice(log)}.", ""]
    out += manual_section(log)
    out += ["### Before and after", "", *before_after(log), ""]
    out += holders_section(log)
    out += smoke_section(log)
    out += ["### Timeline", "", *timeline_table(log), ""]
    return out


def _header(contents: AuditLogContents, source: str | None, logs: list[NodeLog]) -> list[str]:
    records = contents.records
    first, last = (records[0], records[-1]) if records else ({}, {})
    start = utc_moment(first.get("time"))
    day = start.date() if start else None
    dry = any(log.dry_run for log in logs)
    span = (f"{start:%Y-%m-%d %H:%M:%S} to {record_utc(last.get('time'), day)}" if start else
            f"{prose(first.get('time', '?'))} to {prose(last.get('time', '?'))}")
    measured = all(log.clock.offset is not None for log in logs)
    out = ["# NVLS repair incident report", ""]
    out += [f"- audit log: {code_span(source)}" if source else "- audit log: (stdin)",
            f"- operator: {prose(first.get('operator', '?'))}",
            f"- from {span}",
            "- times: the bastion's clock, UTC; node-clock times are converted" +
            ("" if measured else " where the node's offset was measured"),
            *[log.clock.header(log.host) for log in logs],
            f"- nodes: {', '.join(prose(log.host) for log in logs) or 'none'}" +
            (" (dry run: nothing was changed)" if dry else ""),
            "- The audit log holds every command with its exit status and output; the timelines below fold "
            "bookkeeping, repeated commands and Fabric Manager's polls"]
    if contents.unreadable:
        where = ", ".join(map(str, contents.unreadable[:5]))
        out.append(f"- {len(contents.unreadable)} unreadable line(s) skipped (line {where}); "
                   "a torn last line is what a killed run leaves")
    out.append("")
    return out


def render_report(contents: AuditLogContents, source: str | None = None) -> str:
    """The Markdown incident report of one audit log; every value from the log is escaped."""
    logs = node_logs(contents.records)
    out = _header(contents, source, logs)
    if logs:
        out += ["## Summary", "", *results_table(logs)]
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


# NodeClock and measure_clock live in report_clock; they are named here too, where callers first found them.
__all__ = ["AuditLogContents", "NodeClock", "NotAnAuditLog", "is_audit_log", "load_audit_log", "measure_clock",
           "render_report", "report_from_file"]

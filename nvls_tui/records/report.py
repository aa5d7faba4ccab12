"""An incident report (Markdown) from an audit log: timeline, before/after, holders stopped, smoke results.

The log may end mid-run (nvls-tui was killed): every complete record still counts, a torn last line
is skipped and mentioned, and a node without a ``run-finished`` record is reported as unfinished.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

from nvls_tui.textsafe import clean_deep, markdown_code, markdown_text
from nvls_tui.words import count, verb


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


def _t(value: Any) -> str:
    """A value from the log as Markdown prose: escaped (the log holds node text, which is data)."""
    return markdown_text(value)


def _code(value: Any) -> str:
    """A value from the log as a Markdown code span (a command line, a unit name)."""
    return markdown_code(value)


def _cell(markdown: str) -> str:
    """Already-escaped Markdown made safe inside a table cell (``|`` splits cells, even in code)."""
    return markdown.replace("|", "\\|").replace("\n", " ").strip()


def _clock(iso: Any) -> str:
    """``HH:MM:SS.mmm`` of an ISO time (the date is in the header)."""
    if not iso:
        return ""
    try:
        return dt.datetime.fromisoformat(str(iso)).strftime("%H:%M:%S.%f")[:-3]
    except ValueError:
        return _t(iso)


def _cmd(argv: Any) -> str:
    if not isinstance(argv, list | tuple) or not argv:
        return ""
    return shlex.join([str(a) for a in argv])


def _number(value: Any, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, int | float) and not isinstance(value, bool) else _t(value)


def _timeline_entry(r: dict[str, Any]) -> str | None:
    """One timeline line (Markdown, node text escaped) for a record, or None for records the
    timeline leaves out (output lines)."""
    kind = r.get("event")
    if kind == "step-started":
        return "step started"
    if kind == "step-finished":
        dur = f" in {r['duration']:.1f} s" if isinstance(r.get("duration"), int | float) else ""
        msg = f": {_t(r['message'])}" if r.get("message") else ""
        return f"**{_t(r.get('status'))}**{dur}{msg}"
    if kind == "command-finished":
        status = r.get("exit_status")
        end = f"exit {_t(status)}" if status is not None else f"did not finish ({_t(r.get('error') or 'no status')})"
        return f"{_code(_cmd(r.get('argv')))} → {end}"
    if kind == "process-signalled":
        who = f"({_t(r.get('holder_kind'))}: {_t(r.get('command'))})"  # a process's words: prose, escaped
        return f"{_t(r.get('signal'))} pid {_t(r.get('pid'))} {who} → {_t(r.get('outcome'))}"
    if kind == "holders-remaining":
        waiting = " (waiting for the operator)" if r.get("waiting") else ""
        holders = r.get("holders")
        return f"{count(len(holders) if isinstance(holders, list) else 0, 'holder')} {verb(len(holders) if isinstance(holders, list) else 0, 'remains')}{waiting}"
    if kind == "fabric-progress":
        states = _dict(r.get("states")) or {}
        return f"Fabric Manager {_t(r.get('unit'))}; " + ", ".join(f"{_t(k)} ×{_t(v)}" for k, v in states.items())
    if kind == "smoke-finished":
        smoke = _dict(r.get("smoke")) or {}
        return f"smoke test {'passed' if smoke.get('passed') else 'FAILED'}: avg {_t(smoke.get('avg_busbw'))} GB/s"
    if kind == "restored":
        failed = f"; could not restore {_t(', '.join(map(str, r.get('failed') or [])))}" if r.get("failed") else ""
        return f"restored {_t(', '.join(map(str, r.get('units') or [])) or 'no unit')}{failed}"
    if kind == "note":
        return f"_{_t(r.get('level', 'info'))}_: {_t(r.get('message'))}"
    if kind == "run-started":
        return (f"run {_t(r.get('run_id'))} started ({_t(r.get('mode', 'repair'))}"
                f"{', dry run' if r.get('dry_run') else ''})")
    if kind == "manual-changes":
        return f"{len(r.get('changes') or [])} change(s) made by hand before this run"
    if kind == "run-finished":
        return f"run finished: **{_t(r.get('result'))}** {_t(r.get('message') or '')}".rstrip()
    return None


def _before_after(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    if not before and not after:
        return ["No node state was recorded."]

    def row(label: str, fn) -> str:
        return f"| {label} | {_cell(_t(fn(before)) if before else '–')} | {_cell(_t(fn(after)) if after else '–')} |"

    def fabric(s: dict[str, Any]) -> str:
        counts: dict[str, int] = {}
        for g in s.get("fabric") or []:
            key = f"{g.get('state')}/{g.get('status')}" if isinstance(g, dict) else str(g)
            counts[key] = counts.get(key, 0) + 1
        return ", ".join(f"{n}× {k}" for k, n in counts.items()) or "–"

    def units(s: dict[str, Any]) -> str:
        items = (s.get("units") or {}).items() if isinstance(s.get("units"), dict) else ()
        return ", ".join(f"{u} {a}" for u, a in items) or "–"

    def smoke(s: dict[str, Any]) -> str:
        sm = s.get("smoke")
        return "–" if not isinstance(sm, dict) else f"{'passed' if sm.get('passed') else 'failed'} ({sm.get('avg_busbw')} GB/s)"

    def listed(key: str, empty: str):
        return lambda s: ", ".join(map(str, s.get(key) or [])) or empty

    return [
        "| | before | after |",
        "| --- | --- | --- |",
        row("verdict", lambda s: s.get("verdict")),
        row("findings", listed("findings", "none")),
        row("Fabric Manager", lambda s: (s.get("units") or {}).get("nvidia-fabricmanager.service", "?")
            if isinstance(s.get("units"), dict) else "?"),
        row("fabric (per GPU)", fabric),
        row("units", units),
        row("holders of /dev/nvidia*", lambda s: len(s.get("holders") or [])),
        row("kernel events", listed("kernel_events", "none")),
        row("last smoke test", smoke),
        row("driver / FM", lambda s: f"{s.get('driver')} / {s.get('fm_version')}"),
    ]


def _node_section(host: str, records: list[dict[str, Any]]) -> list[str]:
    out = [f"## {_t(host)}", ""]
    finished = next((r for r in reversed(records) if r.get("event") == "run-finished"), None)
    if finished:
        message = f" — {_t(finished.get('message'))}" if finished.get("message") else ""
        out += [f"**Result: {_t(finished.get('result'))}**{message}", ""]
    else:
        last = records[-1] if records else {}
        out += [f"**Unfinished**: the log ends at {_t(last.get('time', '?'))} during step "
                f"{_code(last.get('step') or '?')} (nvls-tui stopped mid-run?). The node keeps its repair record: "
                f"{_code(f'nvls-tui repair --restore {host}')} puts its units back.", ""]
    out += _manual_section(records)
    observed = {r.get("label"): r.get("summary") for r in records if r.get("event") == "node-observed"}
    out += ["### Before and after", "", *_before_after(_dict(observed.get("before")), _dict(observed.get("after"))), ""]

    signals = [r for r in records if r.get("event") == "process-signalled"]
    out += ["### Holders stopped", ""]
    if signals:
        out += ["| pid | kind | command | signal | outcome |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {_cell(_t(r.get('pid')))} | {_cell(_t(r.get('holder_kind')))} | {_cell(_t(r.get('command')))} | "
                f"{_cell(_t(r.get('signal')))} | {_cell(_t(r.get('outcome')))} |" for r in signals]
    else:
        out.append("No process was signalled.")
    stopped = [r for r in records if r.get("event") == "command-finished" and r.get("step") == "quiesce"
               and isinstance(r.get("argv"), list) and r["argv"][:2] == ["systemctl", "stop"]]
    if stopped:
        out += ["", "Units stopped: " + ", ".join(_code(r["argv"][2]) for r in stopped if len(r["argv"]) > 2)]
    out.append("")

    out += ["### Smoke test", ""]
    rows = [r for r in records if r.get("event") == "smoke-row"]
    results = [r["smoke"] for r in records if r.get("event") == "smoke-finished" and isinstance(r.get("smoke"), dict)]
    if rows:
        out += ["| size (B) | out-of-place busbw (GB/s) | in-place busbw (GB/s) |", "| ---: | ---: | ---: |"]
        for r in rows:
            row = _dict(r.get("row")) or {}
            out.append(f"| {_cell(_t(r.get('size')))} | {_cell(_t(row.get('oop_busbw')))} | "
                       f"{_cell(_t(row.get('ip_busbw')))} |")
        out.append("")
    for smoke in results:
        verdict = "passed" if smoke.get("passed") else "FAILED"
        errors = smoke.get("errors") if isinstance(smoke.get("errors"), list) else []
        out.append(f"- {verdict}: average bus bandwidth {_t(smoke.get('avg_busbw'))} GB/s (threshold "
                   f"{_t(smoke.get('threshold'))}), out of bounds {_t(smoke.get('out_of_bounds'))}, NVLS used "
                   f"{_t(smoke.get('nvls_used'))}" + (f"; {_t('; '.join(map(str, errors)))}" if errors else ""))
    if not rows and not results:
        out.append("No smoke test ran.")
    out.append("")

    out += ["### Timeline", "", "| time (UTC) | step | what happened |", "| --- | --- | --- |"]
    for r in records:
        entry = _timeline_entry(r)
        if entry is not None:
            out.append(f"| {_clock(r.get('time'))} | {_cell(_t(r.get('step') or ''))} | {_cell(entry)} |")
    out.append("")
    return out


def _manual_section(records: list[dict[str, Any]]) -> list[str]:
    """What the operator changed by hand before the repair (the console's ledger), if anything."""
    listed = next((r for r in records if r.get("event") == "manual-changes"), None)
    changes = [c for c in (listed or {}).get("changes") or [] if isinstance(c, dict)]
    if not changes:
        return []
    out = ["### Changed by hand before the repair", ""]
    for c in changes:
        if c.get("what") == "signalled":
            out.append(f"- {_t(c.get('signal') or 'SIGTERM')} pid {_t(c.get('pid'))} "
                       f"({_t(c.get('holder_kind'))}: {_t(c.get('command'))}) at {_clock(_iso_of(c.get('at')))}")
        else:
            was = f" (it was {_t(c.get('before'))})" if c.get("before") else ""
            out.append(f"- {_t(c.get('what'))} {_code(c.get('unit'))} at {_clock(_iso_of(c.get('at')))}{was}")
    put_back = listed.get("put_back") if listed else None
    out += ["", "The restore put the stopped units back." if put_back else
            "The operator chose to leave the units stopped by hand as they were.", ""]
    return out


def _iso_of(at: Any) -> str:
    if isinstance(at, int | float) and not isinstance(at, bool):
        return dt.datetime.fromtimestamp(at, dt.UTC).isoformat()
    return str(at or "")


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def render_report(contents: AuditLogContents, source: str | None = None) -> str:
    """The Markdown incident report of one audit log; every value from the log is escaped."""
    records = contents.records
    first = records[0] if records else {}
    last = records[-1] if records else {}
    hosts: list[str] = []
    for r in records:
        node = r.get("node")
        if node and isinstance(node, str) and node not in hosts:
            hosts.append(node)
    dry = any(r.get("dry_run") for r in records)
    out = ["# NVLS repair incident report", ""]
    out += [f"- audit log: {_code(source)}" if source else "- audit log: (stdin)",
            f"- operator: {_t(first.get('operator', '?'))}",
            f"- from {_t(first.get('time', '?'))} to {_t(last.get('time', '?'))}",
            f"- nodes: {', '.join(_t(h) for h in hosts) or 'none'}" + (" (dry run: nothing was changed)" if dry else "")]
    if contents.unreadable:
        where = ", ".join(map(str, contents.unreadable[:5]))
        out.append(f"- {len(contents.unreadable)} unreadable line(s) skipped (line {where}); "
                   "a torn last line is what a killed run leaves")
    out.append("")
    if hosts:
        out += ["| node | result | smoke avg (GB/s) | message |", "| --- | --- | ---: | --- |"]
        for host in hosts:
            mine = [r for r in records if r.get("node") == host]
            fin: dict[str, Any] = next((r for r in reversed(mine) if r.get("event") == "run-finished"), {})
            smoke: dict[str, Any] = next((r["smoke"] for r in reversed(mine)
                          if r.get("event") == "smoke-finished" and isinstance(r.get("smoke"), dict)), {})
            out.append(f"| {_cell(_t(host))} | {_cell(_t(fin.get('result', 'unfinished')))} | "
                       f"{_cell(_t(smoke.get('avg_busbw', '–')))} | {_cell(_t(fin.get('message', '')))} |")
        out.append("")
    for host in hosts:
        out += _node_section(host, [r for r in records if r.get("node") == host])
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


__all__ = ["AuditLogContents", "NotAnAuditLog", "is_audit_log", "load_audit_log", "render_report", "report_from_file"]

"""An incident report (Markdown) from an audit log: timeline, before/after, holders stopped, smoke results.

The log may end mid-run (nvls-tui was killed): every complete record still counts, a torn last line
is skipped and mentioned, and a node without a ``run-finished`` record is reported as unfinished.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


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
                record = json.loads(line)
            except ValueError:
                contents.unreadable.append(number)
                continue
            if isinstance(record, dict):
                contents.records.append(record)
            else:
                contents.unreadable.append(number)
    return contents


def _cell(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ").strip()


def _clock(iso: str | None) -> str:
    """``HH:MM:SS.mmm`` of an ISO time (the date is in the header)."""
    if not iso:
        return ""
    try:
        return dt.datetime.fromisoformat(iso).strftime("%H:%M:%S.%f")[:-3]
    except ValueError:
        return iso


def _cmd(argv: Iterable[str] | None) -> str:
    return shlex.join([str(a) for a in argv]) if argv else ""


def _timeline_entry(r: dict[str, Any]) -> str | None:
    """One timeline line for a record, or None for records the timeline leaves out (output lines)."""
    kind = r.get("event")
    if kind == "step-started":
        return "step started"
    if kind == "step-finished":
        dur = f" in {r.get('duration', 0):.1f} s" if isinstance(r.get("duration"), int | float) else ""
        msg = f": {r['message']}" if r.get("message") else ""
        return f"**{r.get('status')}**{dur}{msg}"
    if kind == "command-finished":
        status = r.get("exit_status")
        end = f"exit {status}" if status is not None else f"did not finish ({r.get('error') or 'no status'})"
        return f"`{_cmd(r.get('argv'))}` → {end}"
    if kind == "process-signalled":
        who = f"({r.get('holder_kind')}: {r.get('command')})"
        return f"{r.get('signal')} pid {r.get('pid')} {who} → {r.get('outcome')}"
    if kind == "holders-remaining":
        waiting = " (waiting for the operator)" if r.get("waiting") else ""
        return f"{len(r.get('holders') or [])} holders remain{waiting}"
    if kind == "fabric-progress":
        states = ", ".join(f"{k} ×{v}" for k, v in (r.get("states") or {}).items())
        return f"Fabric Manager {r.get('unit')}; {states}"
    if kind == "smoke-finished":
        smoke = r.get("smoke") or {}
        return f"smoke test {'passed' if smoke.get('passed') else 'FAILED'}: avg {smoke.get('avg_busbw')} GB/s"
    if kind == "restored":
        failed = f"; could not restore {', '.join(r.get('failed') or [])}" if r.get("failed") else ""
        return f"restored {', '.join(r.get('units') or []) or 'no unit'}{failed}"
    if kind == "note":
        return f"_{r.get('level', 'info')}_: {r.get('message')}"
    if kind == "run-started":
        return f"run {r.get('run_id')} started ({r.get('mode', 'repair')}{', dry run' if r.get('dry_run') else ''})"
    if kind == "run-finished":
        return f"run finished: **{r.get('result')}** {r.get('message') or ''}".rstrip()
    return None


def _before_after(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    if not before and not after:
        return ["No node state was recorded."]

    def row(label: str, fn) -> str:
        return f"| {label} | {_cell(fn(before) if before else '–')} | {_cell(fn(after) if after else '–')} |"

    def fabric(s: dict[str, Any]) -> str:
        counts: dict[str, int] = {}
        for g in s.get("fabric") or []:
            key = f"{g.get('state')}/{g.get('status')}"
            counts[key] = counts.get(key, 0) + 1
        return ", ".join(f"{n}× {k}" for k, n in counts.items()) or "–"

    def units(s: dict[str, Any]) -> str:
        return ", ".join(f"{u} {a}" for u, a in (s.get("units") or {}).items()) or "–"

    def smoke(s: dict[str, Any]) -> str:
        sm = s.get("smoke")
        return "–" if not sm else f"{'passed' if sm.get('passed') else 'failed'} ({sm.get('avg_busbw')} GB/s)"

    return [
        "| | before | after |",
        "| --- | --- | --- |",
        row("verdict", lambda s: s.get("verdict")),
        row("findings", lambda s: ", ".join(s.get("findings") or []) or "none"),
        row("Fabric Manager", lambda s: (s.get("units") or {}).get("nvidia-fabricmanager.service", "?")),
        row("fabric (per GPU)", fabric),
        row("units", units),
        row("holders of /dev/nvidia*", lambda s: len(s.get("holders") or [])),
        row("kernel events", lambda s: ", ".join(s.get("kernel_events") or []) or "none"),
        row("last smoke test", smoke),
        row("driver / FM", lambda s: f"{s.get('driver')} / {s.get('fm_version')}"),
    ]


def _node_section(host: str, records: list[dict[str, Any]]) -> list[str]:
    out = [f"## {host}", ""]
    finished = next((r for r in reversed(records) if r.get("event") == "run-finished"), None)
    if finished:
        out += [f"**Result: {finished.get('result')}** — {finished.get('message') or ''}".rstrip(" —"), ""]
    else:
        last = records[-1] if records else {}
        out += [f"**Unfinished**: the log ends at {last.get('time', '?')} during step "
                f"`{last.get('step') or '?'}` (nvls-tui stopped mid-run?). The node keeps its repair record: "
                f"`nvls-tui repair --restore {host}` puts its units back.", ""]
    observed = {r.get("label"): r.get("summary") for r in records if r.get("event") == "node-observed"}
    out += ["### Before and after", "", *_before_after(observed.get("before"), observed.get("after")), ""]

    signals = [r for r in records if r.get("event") == "process-signalled"]
    out += ["### Holders stopped", ""]
    if signals:
        out += ["| pid | kind | command | signal | outcome |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {r.get('pid')} | {_cell(r.get('holder_kind'))} | {_cell(r.get('command'))} | {r.get('signal')} | "
                f"{_cell(r.get('outcome'))} |" for r in signals]
    else:
        out.append("No process was signalled.")
    stopped = [r for r in records if r.get("event") == "command-finished" and r.get("step") == "quiesce"
               and (r.get("argv") or [])[:2] == ["systemctl", "stop"]]
    if stopped:
        out += ["", "Units stopped: " + ", ".join(f"`{r['argv'][2]}`" for r in stopped if len(r["argv"]) > 2)]
    out.append("")

    out += ["### Smoke test", ""]
    rows = [r for r in records if r.get("event") == "smoke-row"]
    results = [r.get("smoke") or {} for r in records if r.get("event") == "smoke-finished"]
    if rows:
        out += ["| size (B) | out-of-place busbw (GB/s) | in-place busbw (GB/s) |", "| ---: | ---: | ---: |"]
        for r in rows:
            row = r.get("row") or {}
            out.append(f"| {r.get('size')} | {row.get('oop_busbw')} | {row.get('ip_busbw')} |")
        out.append("")
    for smoke in results:
        verdict = "passed" if smoke.get("passed") else "FAILED"
        out.append(f"- {verdict}: average bus bandwidth {smoke.get('avg_busbw')} GB/s (threshold "
                   f"{smoke.get('threshold')}), out of bounds {smoke.get('out_of_bounds')}, NVLS used "
                   f"{smoke.get('nvls_used')}" + (f"; {'; '.join(smoke.get('errors') or [])}" if smoke.get("errors")
                                                  else ""))
    if not rows and not results:
        out.append("No smoke test ran.")
    out.append("")

    out += ["### Timeline", "", "| time (UTC) | step | what happened |", "| --- | --- | --- |"]
    for r in records:
        entry = _timeline_entry(r)
        if entry is not None:
            out.append(f"| {_clock(r.get('time'))} | {_cell(r.get('step') or '')} | {_cell(entry)} |")
    out.append("")
    return out


def render_report(contents: AuditLogContents, source: str | None = None) -> str:
    """The Markdown incident report of one audit log."""
    records = contents.records
    first = records[0] if records else {}
    last = records[-1] if records else {}
    hosts: list[str] = []
    for r in records:
        if r.get("node") and r["node"] not in hosts:
            hosts.append(r["node"])
    dry = any(r.get("dry_run") for r in records)
    out = ["# NVLS repair incident report", ""]
    out += [f"- audit log: `{source}`" if source else "- audit log: (stdin)",
            f"- operator: {first.get('operator', '?')}",
            f"- from {first.get('time', '?')} to {last.get('time', '?')}",
            f"- nodes: {', '.join(hosts) or 'none'}" + (" (dry run: nothing was changed)" if dry else "")]
    if contents.unreadable:
        where = ", ".join(map(str, contents.unreadable[:5]))
        out.append(f"- {len(contents.unreadable)} unreadable line(s) skipped (line {where}); "
                   "a torn last line is what a killed run leaves")
    out.append("")
    if hosts:
        out += ["| node | result | smoke avg (GB/s) | message |", "| --- | --- | ---: | --- |"]
        for host in hosts:
            mine = [r for r in records if r.get("node") == host]
            fin = next((r for r in reversed(mine) if r.get("event") == "run-finished"), {})
            smoke = next((r.get("smoke") or {} for r in reversed(mine) if r.get("event") == "smoke-finished"), {})
            out.append(f"| {host} | {fin.get('result', 'unfinished')} | {smoke.get('avg_busbw', '–')} | "
                       f"{_cell(fin.get('message', ''))} |")
        out.append("")
    for host in hosts:
        out += _node_section(host, [r for r in records if r.get("node") == host])
    return "\n".join(out).rstrip() + "\n"


def report_from_file(path: str | os.PathLike[str]) -> str:
    """Read ``path`` and render its report (raises OSError when it cannot be read)."""
    return render_report(load_audit_log(path), str(path))


__all__ = ["AuditLogContents", "load_audit_log", "render_report", "report_from_file"]

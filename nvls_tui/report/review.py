"""The report's first section, for whoever reviews the incident (a manager, the next shift). Pure.

Issue 38 item 10: the report's answers to a review's questions were spread over a long per-node section and
a 60-row timeline. This section says them first, per node: how long NVLS was down (from the first evidence the
log holds to the passing smoke test), what took Fabric Manager down (systemd's ``Result:`` word; ``signal``
means something killed it, which a repair does not stop), the impact (the processes stopped, the workload
pods evicted, the Slurm drain), and the follow-ups (who kills FM, what still holds the node out of service).
Every time is the bastion's UTC; a node time is converted only where the node's clock offset was measured.
"""

from __future__ import annotations

import datetime as dt

from nvls_tui.diagnosis.fabric_manager import signal_name
from nvls_tui.report.clock import duration_words, record_utc, utc_moment
from nvls_tui.report.cluster import cluster_left
from nvls_tui.report.node_log import NodeLog
from nvls_tui.report.text import code_span, prose
from nvls_tui.runbook.changes import DrainNode, EvictPod
from nvls_tui.runbook.events import ProcessSignalled, RunStarted, SmokeFinished
from nvls_tui.runbook.observed import NOTHING_OBSERVED
from nvls_tui.runbook.steps import FM_UNIT
from nvls_tui.words import count

# systemd's Result words for a unit that went down, in the review's words.
FM_RESULTS = {
    "signal": "Fabric Manager was killed by a signal (systemd: Result: signal)",
    "exit-code": "Fabric Manager exited with an error (systemd: Result: exit-code)",
    "core-dump": "Fabric Manager crashed and dumped core (systemd: Result: core-dump)",
    "watchdog": "Fabric Manager stopped answering its watchdog (systemd: Result: watchdog)",
    "oom-kill": "Fabric Manager was killed by the kernel's OOM killer (systemd: Result: oom-kill)",
}


def first_evidence(log: NodeLog) -> tuple[dt.datetime, str] | None:
    """The earliest moment the log shows NVLS broken on the node, and what said so (None: no dated evidence)."""
    before = log.observed("before") or NOTHING_OBSERVED
    found: list[tuple[dt.datetime, str]] = []
    units = before.units or {}
    if units.get(FM_UNIT) in ("failed", "inactive"):
        at = log.clock.to_bastion((before.unit_since or {}).get(FM_UNIT))
        if at is not None:
            found.append((at, "Fabric Manager went down"))
    for line in before.kernel_lines or ():
        if line.current and line.code:
            at = log.clock.to_bastion(line.timestamp)
            if at is not None:
                found.append((at, f"the kernel's first {line.code} line"))
    return min(found, key=lambda pair: pair[0]) if found else None


def _smoke_passed_at(log: NodeLog) -> dt.datetime | None:
    """When the run's last passing smoke test ended (the record's time on the bastion)."""
    for entry in reversed(log.entries("smoke-finished")):
        if isinstance(entry.event, SmokeFinished) and entry.event.smoke.passed:
            return utc_moment(entry.time)
    return None


def _cause(log: NodeLog) -> str:
    before = log.observed("before") or NOTHING_OBSERVED
    result = (before.unit_results or {}).get(FM_UNIT)
    if (before.units or {}).get(FM_UNIT) in ("failed", "inactive") and result in FM_RESULTS:
        killed = (before.unit_signals or {}).get(FM_UNIT)  # ExecMainStatus: which signal (polls since 2026-12)
        # A record is anyone's file: only a signal's number (1-64 on Linux) is named, anything else is not read.
        if result == "signal" and isinstance(killed, int) and not isinstance(killed, bool) and 0 < killed < 65:
            return f"Fabric Manager was killed by {signal_name(killed)} (systemd: " \
                   "Result: signal)"
        return FM_RESULTS[str(result)]
    errors = [d.code for d in before.finding_details if d.severity == "error"]
    return ", ".join(code_span(c) for c in errors if c) or "no error finding before the repair"


def _down_row(log: NodeLog) -> str:
    began = first_evidence(log)
    ended = _smoke_passed_at(log)
    day = log.clock.day
    start = f"{record_utc(began[0].isoformat(), day)} ({began[1]})" if began else "not dated in the log"
    if ended is not None:
        end = f"{record_utc(ended.isoformat(), day)} (the smoke test passed)"
    else:
        end = "not up at the log's end (no smoke test passed)"
    took = duration_words((ended - began[0]).total_seconds()) if began and ended and ended >= began[0] else "–"
    return f"| {prose(log.host)} | {took} | {prose(start)} | {prose(end)} | {_cause(log)} |"


def _impact(log: NodeLog) -> list[str]:
    """What the repair did to what ran on the node: processes stopped, pods evicted, the Slurm drain."""
    parts: list[str] = []
    signalled = [e for e in log.events(ProcessSignalled) if e.outcome in ("signalled", "exited", "gone")]
    if signalled:
        kinds = sorted({str(e.holder_kind or "process") for e in signalled})
        parts.append(f"{count(len(signalled), 'process')} stopped with SIGTERM ({prose(', '.join(kinds))})")
    changes = log.changes_made()  # read back from the log once (runbook/log_entries)
    evicted = [f"{c.namespace}/{c.pod}" for c in changes if isinstance(c, EvictPod)]
    if evicted:
        parts.append(f"{count(len(evicted), 'workload pod')} evicted ({', '.join(code_span(p) for p in evicted)})")
    if any(isinstance(c, DrainNode) for c in changes):
        parts.append("drained in Slurm for the repair (its jobs ended or were waited for first)")
    return parts


def _follow_ups(log: NodeLog) -> list[str]:
    before = log.observed("before") or NOTHING_OBSERVED
    host = prose(log.host)
    out = []
    result = (before.unit_results or {}).get(FM_UNIT)
    if (before.units or {}).get(FM_UNIT) in ("failed", "inactive") and result in ("signal", "oom-kill"):
        out.append(f"{host}: find what killed Fabric Manager (systemd: Result: {prose(result)}): an operator's "
                   "`kill -9`, a script, the OOM killer; a repair brings it back but does not stop it happening again")
    if "FM_RESTARTER" in before.findings:
        out.append(f"{host}: something restarts Fabric Manager behind the operator (`FM_RESTARTER`: needrestart, "
                   "unattended upgrades): a restart without a GPU reset breaks NVLS again")
    out += [f"{host}: {words}" for words in cluster_left(log)]
    if log.happened.result not in (None, "repaired", "skipped"):
        out.append(f"{host}: not repaired ({prose(log.happened.result)}): {prose(log.happened.message or '')}")
    elif log.happened.result is None:
        out.append(f"{host}: the run did not finish: see the node's section")
    return out


def review_section(logs: list[NodeLog]) -> list[str]:
    """``## For the review``: the down time, the cause, the impact and the follow-ups of every node."""
    # Only repairs: a dry run changed nothing, a restore (`repair --restore`) put a node back and the console's
    # single actions (a SIGTERM, a unit stopped by hand) repair nothing: none is an outage to review.
    logs = [log for log in logs if not log.dry_run and any(e.mode == "repair" for e in log.events(RunStarted))]
    if not logs:
        return []
    out = ["## For the review", "", "| node | NVLS down | from | to | cause |", "| --- | --- | --- | --- | --- |"]
    out += [_down_row(log) for log in logs]
    out.append("")
    impact = [f"{prose(log.host)}: {', '.join(parts)}" for log in logs if (parts := _impact(log))]
    out.append(f"- Impact: {'; '.join(impact)}." if impact else "- Impact: nothing that ran on the nodes was stopped.")
    follow = [f for log in logs for f in _follow_ups(log)]
    out += ["- Follow-ups:" if follow else "- Follow-ups: none.", *[f"  - {f}" for f in follow], ""]
    return out


__all__ = ["first_evidence", "review_section"]

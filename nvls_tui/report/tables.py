"""The report's tables and lists: the results of all nodes, and per node its before and after, the
holders stopped, the smoke test and what was changed by hand before the repair."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from nvls_tui.report.clock import NodeClock, epoch_utc
from nvls_tui.report.kernel import kernel_lines, kernel_listing, since_repair
from nvls_tui.report.node_log import NodeLog, change_words, operator_of
from nvls_tui.report.text import bandwidth, code_span, code_spans, prose, table_cell
from nvls_tui.runbook.events import ProcessSignalled, SmokeRow
from nvls_tui.runbook.observed import ObservedNode
from nvls_tui.runbook.smoke_words import nccl_lines, reasons
from nvls_tui.runbook.steps import FM_UNIT
from nvls_tui.words import count


def results_table(logs: list[NodeLog]) -> list[str]:
    """One row per node: its result, its last smoke test's average and the run's last word."""
    if not logs:
        return []
    out = ["| node | result | smoke avg (GB/s) | message |", "| --- | --- | ---: | --- |"]
    for log in logs:
        ended = log.happened.result is not None
        smokes = log.smokes()
        out.append(f"| {table_cell(prose(log.host))} | {table_cell(prose(log.happened.result if ended else 'unfinished'))} | "
                   f"{table_cell(prose(smokes[-1].avg_busbw if smokes else '–'))} | {table_cell(prose(log.happened.message if ended else ''))} |")
    out.append("")
    return out


def manual_section(log: NodeLog) -> list[str]:
    """What the operator changed by hand before the repair (the console's ledger), if anything."""
    listed = log.manual_list()
    changes = log.manual_changes()
    if not listed or not changes:
        return []
    entry, event = listed
    out = ["### Changed by hand before the repair", ""]
    out += [f"- {change_words(c, operator_of(entry), epoch_utc(c.at, log.clock.day))}" for c in changes]
    put_back = event.put_back
    out += ["", "The restore put the units stopped by hand back." if put_back else
            "The operator chose to leave the units stopped by hand as they were.", ""]
    return out


def _kernel_cell(summary: ObservedNode, clock: NodeClock, *, after: bool, verify_ok: bool) -> str:
    """The kernel row: every line before; after, only the lines the repair did not find already there."""
    lines = kernel_lines(summary)
    if lines is None:
        codes = list(summary.kernel_events)
        if after and codes and verify_ok:
            return "none new since the repair began (verify-fabric found none)"
        return prose(", ".join(codes)) or "none"
    left_out = summary.kernel_lines_left_out or 0
    if not after:
        text = "; ".join(kernel_listing(lines, clock)) or "none"
        return text + (f" (and {count(left_out, 'older line')})" if left_out else "")
    shown = since_repair(lines, clock)
    older = len(lines) - len(shown) + left_out
    text = "; ".join(kernel_listing(shown, clock)) or ("none since the repair began" if clock.start else
                                                       "none that still count")
    return text + (f" ({count(older, 'older line')} left out)" if older else "")


def before_after(log: NodeLog) -> list[str]:
    """The node as read before the repair and after it, side by side (a table, or a sentence when unread)."""
    before, after = log.observed("before"), log.observed("after")
    if not before and not after:
        return ["No node state was recorded."]
    verify = log.step("verify-fabric")
    verify_ok = verify is not None and verify.status == "ok"

    def row(label: str, fn: Callable[[ObservedNode, bool], str]) -> str:
        # A node that did not answer was read for nothing: unknown, never "0" holders or "none".
        cells = [("? (unreachable)" if s.reachable is False and label != "verdict" else
                  table_cell(fn(s, side == "after"))) if s else "–"
                 for side, s in (("before", before), ("after", after))]
        return f"| {label} | {cells[0]} | {cells[1]} |"

    def fabric(s: ObservedNode, _: bool) -> str:
        counts: Counter[str] = Counter(f"{g.state}/{g.status}" for g in s.fabric)
        return prose(", ".join(f"{n}× {k}" for k, n in counts.items()) or "–")

    def units(s: ObservedNode, _: bool) -> str:
        return prose(", ".join(f"{u} {a}" for u, a in (s.units or {}).items()) or "–")

    def smoke(s: ObservedNode, _: bool) -> str:
        sm = s.smoke
        if sm is None:
            return "–"
        at = f" at {log.clock.show(sm.at)}" if sm.at else ""
        return f"{'passed' if sm.passed else 'failed'} ({bandwidth(sm.avg_busbw)}){at}"

    return [
        "| | before | after |",
        "| --- | --- | --- |",
        row("verdict", lambda s, _: prose(s.verdict)),
        row("findings", lambda s, _: prose(", ".join(s.findings) or "none")),
        row("Fabric Manager", lambda s, _: prose((s.units or {}).get(FM_UNIT, "?"))),
        row("fabric (per GPU)", fabric),
        row("units", units),
        row("holders of /dev/nvidia*", lambda s, _: prose(s.holders)),
        row("kernel events", lambda s, later: _kernel_cell(s, log.clock, after=later, verify_ok=verify_ok)),
        row("last smoke test", smoke),
        row("driver / FM", lambda s, _: prose(f"{s.driver} / {s.fm_version}")),
    ]


def holders_section(log: NodeLog) -> list[str]:
    """Every process signalled, with its outcome, and the units quiesce stopped."""
    signals = log.events(ProcessSignalled)
    out = ["### Holders stopped", ""]
    if signals:
        out += ["| pid | kind | command | signal | outcome |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {table_cell(prose(e.pid))} | {table_cell(prose(e.holder_kind))} | "
                f"{table_cell(prose(e.command))} | {table_cell(prose(e.signal))} | "
                f"{table_cell(prose(e.outcome))} |" for e in signals]
    else:
        out.append("No process was signalled.")
    stopped = log.stopped_units()
    if stopped:
        out += ["", "Units stopped: " + code_spans(stopped)]
    out.append("")
    return out


def smoke_section(log: NodeLog) -> list[str]:
    """The smoke test's rows as logged, then each result against its threshold."""
    out = ["### Smoke test", ""]
    rows = log.events(SmokeRow)
    results = log.smokes()
    if rows:
        out += ["| size (B) | out-of-place busbw (GB/s) | in-place busbw (GB/s) |", "| ---: | ---: | ---: |"]
        for r in rows:
            out.append(f"| {table_cell(prose(r.size))} | {table_cell(prose(r.out_of_place))} | "
                       f"{table_cell(prose(r.in_place))} |")
        out.append("")
    for smoke in results:
        verdict = "passed" if smoke.passed else "FAILED"
        said = reasons(smoke.errors)
        out.append(f"- {verdict}: average bus bandwidth {prose(smoke.avg_busbw)} GB/s (threshold "
                   f"{prose(smoke.threshold)}), out of bounds {prose(smoke.out_of_bounds)}, NVLS used "
                   f"{prose(smoke.nvls_used)}" + (f"; {prose('; '.join(said))}" if said else ""))
        # Each line NCCL printed, as printed, on a bullet of its own.
        out += [f"  - {code_span(line)}" for line in nccl_lines(smoke.errors)]
    if not rows and not results:
        out.append("No smoke test ran.")
    out.append("")
    return out

"""A malformed audit record never sinks the report: the bad line is named, every other line rendered.

Before: one line nested a thousand deep raised RecursionError and `report` wrote nothing; a field of the
wrong type (``argv`` an object, ``exit_status`` a list, a change's ``at`` 1e300) raised TypeError,
OverflowError or ValueError deep in the timeline. Every field is now type-checked once, where the log
is read (``runbook/record_schema``, through ``runbook/event_records``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvls_tui.report.markdown import load_audit_log, render_report
from tests.unit.test_report import write_incident


@functools.cache
def base_lines() -> tuple[str, ...]:
    """The JSONL lines of a whole repair of gpu05, as the runbook writes them (real summaries)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "repair-r1.jsonl"
        write_incident(path)
        return tuple(path.read_text(encoding="utf-8").splitlines())


@functools.cache
def base_report() -> str:
    return render_report(load_audit_log_from(list(base_lines())), "log")


def load_audit_log_from(lines: list[str]):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return load_audit_log(path)


def kind(value: Any) -> str:
    """A JSON value's kind (an int and a float are both numbers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "text", list: "list", dict: "object"}[type(value)]


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every field and item of a record, at any depth, as a key path."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found.append((*prefix, key))
        found += paths(inner, (*prefix, key))
    return found


def replaced(record: Any, path: tuple, new: Any) -> Any:
    """``record`` with the value at ``path`` replaced (a copy)."""
    if not path:
        return new
    copy = dict(record) if isinstance(record, dict) else list(record)
    copy[path[0]] = replaced(record[path[0]], path[1:], new)
    return copy


def value_at(record: Any, path: tuple) -> Any:
    for key in path:
        record = record[key]
    return record


HUGE = st.sampled_from([10**300, -(10**300), 2**64, math.inf, -math.inf, math.nan, 1e300])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | HUGE | st.text(max_size=12)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) |
                    st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=10)


@st.composite
def wrong_type(draw) -> str:
    """A line of the real log with one field, at any depth, given a value of another kind (never null)."""
    lines = base_lines()
    record = json.loads(draw(st.sampled_from(lines)))
    # A null stands for "none" in many fields (a step, a smoke result): only a present value is made wrong.
    path = draw(st.sampled_from([p for p in paths(record) if value_at(record, p) is not None]))
    old = value_at(record, path)
    new = draw(JSON.filter(lambda v: kind(v) not in (kind(old), "null")))
    return json.dumps(replaced(record, path, new))


@functools.cache
def lines_with_numbers() -> list[str]:
    """The real log's lines that hold a number somewhere (worked out once: each draw of :func:`huge_number`
    read every line again, once per field of it, a third of this file's CPU)."""
    def has_number(record: Any) -> bool:
        return any(kind(value_at(record, p)) == "number" for p in paths(record))

    return [line for line in base_lines() if has_number(json.loads(line))]


@st.composite
def huge_number(draw) -> str:
    """A line of the real log with one of its numbers made one no run writes: huge, infinite or NaN."""
    record = json.loads(draw(st.sampled_from(lines_with_numbers())))
    path = draw(st.sampled_from([p for p in paths(record) if kind(value_at(record, p)) == "number"]))
    return json.dumps(replaced(record, path, draw(HUGE)))


@st.composite
def deeply_nested(draw) -> str:
    """A record (or a bare array) nested far deeper than any record a run writes; deep enough, Python's
    own JSON reader gives up with RecursionError."""
    depth = draw(st.integers(min_value=100, max_value=20_000))
    inner = "[" * depth + "]" * depth
    if draw(st.booleans()):
        return inner
    record = json.loads(draw(st.sampled_from(base_lines())))
    field = draw(st.sampled_from(sorted(record)))
    return json.dumps({**record, field: None}).replace(f'"{field}": null', f'"{field}": {inner}', 1)


NOT_AN_OBJECT = JSON.filter(lambda v: not isinstance(v, dict)).map(json.dumps)
BAD_LINES = wrong_type() | huge_number() | deeply_nested() | NOT_AN_OBJECT


def without_bad_line_bullets(report: str) -> str:
    return "\n".join(line for line in report.splitlines()
                     if not re.match(r"- \d+ unreadable line|  - line \d+", line))


def named_lines(report: str) -> list[int]:
    """The line numbers the report's header names as skipped."""
    bullet = next(line for line in report.splitlines() if re.match(r"- \d+ unreadable line", line))
    numbers: list[int] = []
    for part in re.search(r"\(lines? ([\d, -]+)\)", bullet).group(1).split(", "):
        first, _, last = part.partition("-")
        numbers += range(int(first), int(last or first) + 1)
    return numbers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=len(base_lines())), BAD_LINES), min_size=1, max_size=4))
def test_bad_lines_anywhere_in_a_real_log_are_named_and_every_other_line_is_rendered(insertions):
    lines = list(base_lines())
    for position, bad in sorted(insertions, key=lambda pair: pair[0], reverse=True):
        lines.insert(position, bad)
    bad_numbers = sorted(n for n, line in enumerate(lines, 1) if line not in base_lines())
    contents = load_audit_log_from(lines)
    assert contents.unreadable == bad_numbers
    report = render_report(contents, "log")
    assert named_lines(report) == bad_numbers
    assert without_bad_line_bullets(report) == without_bad_line_bullets(base_report())


EVENTS = ["run-started", "step-started", "step-finished", "command-started", "command-finished", "node-observed",
          "holders-remaining", "process-signalled", "fabric-progress", "smoke-row", "smoke-finished", "restored",
          "note", "run-finished", "manual-change", "manual-changes", "wait-started", "output-line"]
FIELDS = ["time", "node", "step", "operator", "dry_run", "run_id", "mode", "argv", "exit_status", "output", "error",
          "duration", "message", "result", "status", "label", "summary", "holders", "waiting", "pid", "signal",
          "command", "holder_kind", "outcome", "unit", "states", "size", "busbw", "row", "smoke", "units",
          "persistence_gpus", "failed", "level", "what", "before", "changes", "put_back", "commands"]


@st.composite
def arbitrary_record(draw) -> str:
    """A record of a real event kind, on the real node, whose fields hold anything JSON can."""
    record = {"event": draw(st.sampled_from(EVENTS)), "node": "gpu05"}
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=8, unique=True)):
        record[field] = draw(JSON)
    return json.dumps(record)


@pytest.mark.long  # seconds: handed out first of its tier (tests/conftest.py)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=len(base_lines())), arbitrary_record() | BAD_LINES),
                min_size=1, max_size=6))
def test_a_report_of_a_log_with_arbitrary_records_mixed_in_is_written_and_accounts_for_every_line(insertions):
    lines = list(base_lines())
    for position, extra in sorted(insertions, key=lambda pair: pair[0], reverse=True):
        lines.insert(position, extra)
    contents = load_audit_log_from(lines)
    report = render_report(contents, "log")
    assert report.startswith("# NVLS repair incident report") and "## gpu05" in report
    assert len(contents.records) + len(contents.unreadable) == len(lines)
    assert set(contents.unreadable).isdisjoint(n for n, line in enumerate(lines, 1) if line in base_lines())
    if contents.unreadable:
        assert named_lines(report) == contents.unreadable


def test_a_bad_line_is_named_with_what_is_wrong_with_it(tmp_path):
    lines = list(base_lines())
    record = json.loads(next(line for line in lines if '"command-finished"' in line))
    lines.insert(3, json.dumps({**record, "exit_status": [0]}))
    lines.insert(5, "[" * 5000 + "]" * 5000)
    report = render_report(load_audit_log_from(lines), "log")
    assert "- 2 unreadable line(s) skipped (lines 4, 6)" in report
    assert "  - line 4: `exit_status` is a list, not a whole number" in report
    assert "  - line 6: nested deeper than any audit record" in report


def test_a_record_nested_as_deep_as_a_run_may_is_read_and_one_level_deeper_is_not():
    from nvls_tui.runbook.record_schema import MAX_DEPTH, shape_problem

    def nested(levels: int) -> dict:
        """A record whose deepest container is ``levels`` below it, in a field no check reads."""
        inner: Any = []
        for _ in range(levels - 1):
            inner = [1, "a", inner, {"k": None}]
        return {"event": "note", "extra": inner}

    assert shape_problem(nested(MAX_DEPTH - 1)) is None
    assert shape_problem(nested(MAX_DEPTH)) == "nested deeper than any audit record"
    assert shape_problem({"event": "note", "extra": {"k": nested(MAX_DEPTH - 1)}}) == "nested deeper than any audit record"


def test_a_field_whose_name_is_whole_only_once_cleaned_is_checked_as_the_report_reads_it():
    """The record is checked as it is read: cleaned. A key with a control character in it named no field
    when the raw line was checked and then, cleaned, the field itself, unchecked: a list where the report
    reads a whole number sank the whole report (NotAnEvent out of ``load_audit_log``)."""
    lines = list(base_lines())
    record = json.loads(next(line for line in lines if '"command-finished"' in line))
    lines.insert(3, json.dumps({**record, "exit_st\u0000atus": [0]}))
    contents = load_audit_log_from(lines)
    assert contents.unreadable == [4]
    assert contents.problems == {4: "`exit_status` is a list, not a whole number"}
    assert without_bad_line_bullets(render_report(contents, "log")) == without_bad_line_bullets(base_report())


NODE_TIMES = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)).map(
    lambda moment: moment.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0"))


def with_node_times(node_date: str, stamp: str) -> list[str]:
    """The real log with ``date`` answering ``node_date`` and every kernel line and unit time at ``stamp``."""
    lines = []
    for line in base_lines():
        record = json.loads(line)
        if record.get("argv") == ["date", "+%Y-%m-%d %H:%M:%S"]:
            record["output"] = node_date + "\n"
        if record.get("event") == "node-observed":
            for kernel_line in record["summary"].get("kernel_lines", []):
                kernel_line["timestamp"] = stamp
            record["summary"]["unit_since"] = {"nvidia-fabricmanager.service": stamp}
        lines.append(json.dumps(record))
    return lines


@settings(max_examples=100, deadline=None)
@given(NODE_TIMES, NODE_TIMES)
def test_node_clock_times_anywhere_in_the_calendar_are_reported(node_date, stamp):
    contents = load_audit_log_from(with_node_times(node_date, stamp))
    assert contents.unreadable == []
    assert "## gpu05" in render_report(contents, "log")


def test_a_node_time_the_bastions_clock_cannot_reach_is_shown_as_the_node_logged_it():
    """Node text is the node's: a ``date`` of year 1 and kernel lines of year 9999 convert past what
    datetime can hold; the node's own time is shown, marked (node clock)."""
    report = render_report(load_audit_log_from(with_node_times("0001-01-01 00:00:00", "9999-12-31 23:59:59")), "log")
    kernel = next(line for line in report.splitlines() if line.startswith("| kernel events |"))
    assert "the last at 9999-12-31 23:59:59 (node clock)" in kernel


async def test_every_record_a_real_session_writes_is_one_the_report_reads(tmp_path):
    """The schema is no stricter than nvls-tui: by-hand actions, a repair and a restore of the seed
    incident write only records it accepts, of every kind the report renders."""
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.model import HolderKind
    from nvls_tui.runbook.session import Session
    from nvls_tui.sim.fleet import load_fleet
    from tests.unit.test_report_summary import FAST

    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000.0)
    session = Session({b.host: b for b in sim_backends(fleet)}, audit_dir=str(tmp_path), options=FAST)
    exporter = [h for h in (await session.backends["gpu05"].snapshot()).holders if h.kind is HolderKind.DCGM_EXPORTER]
    assert (await session.sigterm("gpu05", exporter)).ok
    assert (await session.unit("gpu05", "stop", "nvidia-dcgm.service")).ok
    await session.repair(session.start_repair(["gpu05"]), FAST)
    await session.restore_nodes(["gpu05"])
    await session.close()
    events: set[str] = set()
    for path in sorted(tmp_path.glob("*.jsonl")):
        contents = load_audit_log(path)
        assert contents.problems == {} and contents.records, path.name
        events |= {r.kind for r in contents.records}
    assert events >= {"audit-opened", "run-started", "node-observed", "manual-change", "manual-changes",
                      "process-signalled", "command-started", "command-finished", "wait-started", "fabric-progress",
                      "smoke-row", "smoke-finished", "restored", "note", "step-finished", "run-finished"}, events

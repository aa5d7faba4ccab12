"""The node's clock is read by slicing `date -u`'s fixed form, and reads exactly what strptime read
(docs/performance.md, 2026-12-07: strptime was about 50 us of every poll, an unchanged node's re-poll included)."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.model import CommandResult
from nvls_tui.poll.assemble import _node_clock


def _strptime_reading(text: str) -> float | None:
    """The reading before the fast path: strptime of the whole (stripped) output, None where it refuses."""
    try:
        return dt.datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


def _clock(text: str) -> CommandResult:
    return CommandResult(argv=("date", "-u", "+%Y-%m-%dT%H:%M:%SZ"), exit_status=0, stdout=text)


@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)))
@settings(max_examples=300)
def test_what_date_prints_reads_as_strptime_read_it(when):
    text = when.strftime("%Y-%m-%dT%H:%M:%SZ").rjust(20, "0") + "\n"
    assert _node_clock(_clock(text)) == _strptime_reading(text)
    assert _node_clock(_clock(text)) is not None


@given(st.lists(st.sampled_from("0123456789"), min_size=14, max_size=14), st.sampled_from(["Z", "z", "", "Z\n", " Z"]))
@settings(max_examples=500)
def test_any_digits_in_the_form_read_as_strptime_read_them(digits, end):
    d = "".join(digits)
    text = f"{d[:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}{end}"  # month 13, second 61, day 31 of Feb ...
    assert _node_clock(_clock(text)) == _strptime_reading(text)


def test_other_forms_strptime_takes_are_still_taken():
    for text in ("2026-1-7T6:0:0Z", "2026-12-07T06:00:00Z", " 2026-12-07T06:00:00Z \n"):
        assert _node_clock(_clock(text)) == _strptime_reading(text) is not None
    for text in ("", "garbage", "2026-12-07 06:00:00", "２０２６-12-07T06:00:00Z"):
        assert _node_clock(_clock(text)) == _strptime_reading(text)

"""The probe script is written once per kind of poll and this poll's nonce, journal cursor and configuration stamp
are put into it: the result is exactly the script written out for those values (docs/performance.md, 2026-12-07:
writing it was about 110 us of every node's every poll)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.poll.probe import CONFIG_STAMP_MAX, SECTION_NAMES
from nvls_tui.poll.probe_script import _CURSOR_STAND_IN, _NONCE_STAND_IN, _STAMP_STAND_IN, probe_script, written_script

HEX = "0123456789abcdef"
_CURSORS = st.one_of(
    st.none(),
    st.builds(lambda s, i, b, m, t, x: f"s={s};i={i};b={b};m={m};t={t};x={x}",
              *(st.text(HEX, min_size=n, max_size=n) for n in (32,)), st.text(HEX, min_size=1, max_size=16),
              st.text(HEX, min_size=32, max_size=32), *(st.text(HEX, min_size=1, max_size=16) for _ in range(3))),
    st.text(max_size=80),  # not journalctl's form: never put on the command line
    st.just(_CURSOR_STAND_IN),
)
_STAMPS = st.one_of(st.none(), st.just(""), st.text(max_size=200), st.just("x" * (CONFIG_STAMP_MAX + 1)),
                    st.sampled_from([_STAMP_STAND_IN, _NONCE_STAND_IN, _CURSOR_STAND_IN, "it's", "$(reboot)"]))
_ONLY = st.one_of(st.none(), st.lists(st.sampled_from(SECTION_NAMES), unique=True, min_size=1).map(tuple))


@given(sudo=st.booleans(), nonce=st.one_of(st.text(HEX, min_size=1, max_size=16), st.just(_NONCE_STAND_IN)),
       only=_ONLY, cursor=_CURSORS, cap=st.sampled_from([1 << 20, 4096, 1]),
       timeout=st.sampled_from([None, 20.0, 2.5]), hung=st.sampled_from([None, "kernel", "fm_log"]), stamp=_STAMPS)
@settings(max_examples=300, deadline=None)
def test_the_script_is_the_one_written_out_for_this_poll(sudo, nonce, only, cursor, cap, timeout, hung, stamp):
    args = (sudo, nonce, only, cursor, cap, timeout, hung, stamp)
    assert probe_script(*args) == written_script(*args)


def test_a_second_node_gets_its_own_values_not_the_first_ones():
    first = probe_script(nonce="a1", kernel_cursor=f"s={'1' * 32};i=1;b={'2' * 32};m=3;t=4;x=5", config_stamp="f 1 2")
    second = probe_script(nonce="b2", kernel_cursor=f"s={'6' * 32};i=7;b={'8' * 32};m=9;t=a;x=b", config_stamp="f 3 4")
    assert "a1" not in second and "1" * 32 not in second and "f 1 2" not in second
    assert second == written_script(nonce="b2", kernel_cursor=f"s={'6' * 32};i=7;b={'8' * 32};m=9;t=a;x=b",
                                    config_stamp="f 3 4")
    assert first != second


def test_a_bad_nonce_or_section_is_refused_as_before():
    for kwargs in ({"nonce": "a;b"}, {"journal_hung": "nope"}):
        for write in (probe_script, written_script):
            try:
                write(**kwargs)
            except ValueError:
                continue
            raise AssertionError(f"{write.__name__} took {kwargs}")

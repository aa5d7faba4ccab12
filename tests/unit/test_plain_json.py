"""A JSON line that cannot decode into anything :func:`clean` would change is read without the walk that cleans it.

An audit log's lines are JSON the bastion wrote; almost every one is printable ASCII with no escape that
decodes into a control character, and cleaning such a record string by string (``clean_deep``) was a third of
what reading a log cost (``load_audit_log``). :func:`textsafe.json_is_plain` says when that walk would change
nothing; these tests hold that it never says so of a line the walk would change.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.report.markdown import read_record
from nvls_tui.textsafe import clean_deep, json_is_plain

# Mostly printable ASCII (the plain case must come up often), with the characters and escapes that are not.
CHARACTERS = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.sampled_from(["\t", "\n", "\r", "\b", "\f", "\x00", "\x1b", "\x7f", "\x9b", "\u200b", "\u2028", "é", "\\"]),
)
TEXT = st.text(alphabet=CHARACTERS, max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans())
def test_what_json_is_plain_passes_decodes_into_what_cleaning_leaves_as_it_is(value, ascii_only):
    line = json.dumps(value, ensure_ascii=ascii_only)
    if json_is_plain(line):
        assert clean_deep(json.loads(line)) == json.loads(line)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(['"', "\\", "b", "f", "n", "r", "t", "u", "0", "1", "b", "/", "x", " "]),
               max_size=14))
def test_any_escape_sequence_that_json_is_plain_passes_decodes_into_clean_text(body):
    """Escapes written by hand, not by ``json.dumps``: ``\\b``, ``\\f``, ``\\r`` and ``\\u`` are never passed."""
    line = f'"{body}"'
    try:
        decoded = json.loads(line)
    except ValueError:
        return
    if json_is_plain(line):
        assert clean_deep(decoded) == decoded


def test_a_line_of_printable_ascii_is_plain_and_escapes_of_controls_are_not():
    assert json_is_plain('{"event": "command-finished", "output": "ok\\n\\ttab \\"quoted\\" a\\\\z \\/"}\n')
    for line in ('{"output": "\\u001b[2J"}', '{"output": "a\\rb"}', '{"output": "a\\bb"}', '{"output": "a\\fb"}',
                 '{"output": "caf\u00e9"}', '{"output": "a\x7fb"}', '{"out\\u0000put": 1}'):
        assert not json_is_plain(line), line


def test_a_record_line_with_escaped_control_characters_is_still_read_cleaned():
    line = json.dumps({"schema": 1, "time": "2026-12-07T09:00:00.000+00:00", "event": "note", "node": "gpu\u001b[31m05",
                       "step": "", "message": "a\u001b]0;title\u0007b\rc", "level": "info"})
    entry = read_record(line)
    assert not isinstance(entry, str), entry
    assert entry.host == "gpu05"
    assert entry.event.message == "abc"

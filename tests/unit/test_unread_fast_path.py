"""The fast path of the unread-line reader reads exactly what the plain one did (docs/performance.md, 2026-12-07).

A fresh poll's kernel text is read for NVIDIA lines no rule reads (:func:`nvls_tui.parsers.kernel_log.unread_kernel_lines`).
It used to run every rule on every line, and that was most of a fresh poll's bastion CPU. Now a line is first
tested for a word that says something went wrong (:func:`nvls_tui.parsers.unread.might_say_wrong` before the
case-blind pattern), and a record's first line is classified only when one of its later lines needs it. These tests
hold that nothing changed in what is read: each word's literal is in every match of the word, and the new reader
gives the old reader's events on texts built from real kernel lines. Since the second cut (same day, branch
cold1024) both readers look only at the lines one search of the lower-cased log finds (``worth_lines``): that
search must find every line either quick test passes, and the readers must still read what the plain ones did,
records of many indented lines and texts that are not ASCII included.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.parsers import kernel_log
from nvls_tui.parsers.base import literals_pattern
from nvls_tui.parsers.kernel_log import (
    SCAN_LITERALS,
    UNREAD,
    KernelEvent,
    _each_line,
    _timestamp,
    classify_kernel_line,
    parse_kernel_log,
    read_kernel_text,
    unread_kernel_lines,
    worth_lines,
)
from nvls_tui.parsers.unread import ANCHORS, ERROR_CODES, ERROR_WORDS, might_say_wrong, nvidia_error_line, says_wrong

TESTS = Path(__file__).parents[1]


def _reference(text: str) -> tuple[KernelEvent, ...]:
    """The reader as it was before the fast path: every rule on every line, in the same order."""
    out: list[KernelEvent] = []
    head_read = False
    for raw in _each_line(text):
        line = raw.strip()
        if not line:
            continue
        if raw[:1] in (" ", "\t") and _timestamp(line) is None:
            if head_read:
                continue
        else:
            head_read = classify_kernel_line(line) is not None
            if head_read:
                continue
        if nvidia_error_line(line) and classify_kernel_line(line) is None:
            out.append(KernelEvent(code=UNREAD, line=line, timestamp=_timestamp(line)))
    return tuple(out)


def _real_lines() -> list[str]:
    """Kernel lines from the real outputs the tests keep (the corpus's kernel logs and the kernel fixtures)."""
    lines: list[str] = []
    for path in sorted([*(TESTS / "corpus" / "kernel").rglob("*.txt"), *(TESTS / "fixtures" / "kernel").glob("*.txt")]):
        lines.extend(ln for ln in path.read_text(errors="replace").splitlines() if ln.strip())
    return lines


REAL = _real_lines()


@given(st.sampled_from([*ERROR_WORDS, *ERROR_CODES]).flatmap(
    lambda pair: st.tuples(st.just(pair[0]), st.from_regex(re.compile(pair[1], re.IGNORECASE), fullmatch=True))))
@settings(max_examples=300)
def test_every_ascii_match_of_a_word_holds_its_literal(anchor_and_match):
    anchor, match = anchor_and_match
    if match.isascii():
        assert anchor in match.lower()
        assert might_say_wrong(f"NVRM: {match} here")


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2200), max_size=60),
       st.sampled_from([*REAL, "NVRM: GPU at PCI:0000:18:00: fine"]), st.text(max_size=20))
@settings(max_examples=300)
def test_the_quick_test_never_drops_a_line_the_pattern_reads(noise, line, tail):
    for candidate in (noise, f"{line}{noise}", f"{noise} {line} {tail}", noise.upper()):
        if says_wrong(candidate):
            assert might_say_wrong(candidate)


def test_the_real_lines_are_plenty():
    assert len(REAL) > 200 and any(nvidia_error_line(ln) for ln in REAL)


_INDENTS = st.sampled_from(["", "", "", " ", "\t", "    "])


@given(st.lists(st.tuples(_INDENTS, st.sampled_from(REAL)), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_fast_reader_reads_what_the_plain_one_read(rows):
    text = "\n".join(indent + line for indent, line in rows) + "\n"
    assert unread_kernel_lines(text) == _reference(text)


def test_the_fast_reader_reads_what_the_plain_one_read_on_every_real_log():
    for path in sorted([*(TESTS / "corpus").rglob("*.txt"), *(TESTS / "fixtures").rglob("*.txt")]):
        text = path.read_text(errors="replace")
        assert unread_kernel_lines(text) == _reference(text), path


def _reference_candidates(text: str) -> list[str]:
    """The records the rules are run on, found as before the fast path: the pattern over the whole log."""
    out, done = [], -1
    for m in kernel_log._SCAN.finditer(text):  # the plain pattern over the whole log
        if m.start() < done:
            continue
        start, end = kernel_log._record_bounds(text, text.rfind("\n", 0, m.start()) + 1)
        done = end
        body = text[start:min(end, len(text))].rstrip("\n")
        out.append(body if "\n" not in body else kernel_log.join_record(body.split("\n")))
    return out


@given(st.from_regex(kernel_log._SCAN))
@settings(max_examples=500)
def test_every_match_of_the_scan_holds_one_of_its_literals(text):
    match = kernel_log._SCAN.search(text)
    assert match is not None
    assert kernel_log._SCAN_ANCHORS.search(match.group(0).lower())


@given(st.lists(st.tuples(_INDENTS, st.sampled_from(REAL)), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_scan_finds_the_records_the_whole_log_pattern_found(rows):
    text = "\n".join(indent + line for indent, line in rows) + "\n"
    assert list(kernel_log._candidate_lines(text)) == _reference_candidates(text)


def test_the_scan_finds_the_records_the_whole_log_pattern_found_on_every_real_log():
    for path in sorted([*(TESTS / "corpus").rglob("*.txt"), *(TESTS / "fixtures").rglob("*.txt")]):
        text = path.read_text(errors="replace")
        assert list(kernel_log._candidate_lines(text)) == _reference_candidates(text), path


# The one search for both readers (worth_lines) ------------------------------------------------------------------

def _plain_worth(text: str) -> list[tuple[int, int]]:
    """The lines either quick test passes, found line by line: the scan's literals, or the unread words'."""
    out, start = [], 0
    for line in text.split("\n"):
        low = line.lower()
        if kernel_log._SCAN_ANCHORS.search(low) or might_say_wrong(line):
            out.append((start, start + len(line)))
        start += len(line) + 1
    return out


@given(st.lists(st.tuples(_INDENTS, st.sampled_from(REAL)), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_one_search_finds_every_line_either_quick_test_passes(rows):
    text = "\n".join(indent + line for indent, line in rows) + "\n"
    if text.isascii():
        assert set(_plain_worth(text)) <= set(worth_lines(text) or ())


def test_every_literal_of_either_reader_is_found_by_the_one_search():
    for literal in (*SCAN_LITERALS, *ANCHORS):
        assert worth_lines(f"x {literal} y") == [(0, len(literal) + 4)], literal


@given(st.lists(st.text(alphabet="abcdefghijklmnop ", max_size=5), min_size=1, max_size=8), st.text(max_size=40))
@settings(max_examples=300)
def test_the_literals_tree_finds_where_the_plain_alternation_finds(words, text):
    words = [w for w in words if w]
    if words:
        plain = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
        tree = literals_pattern(words)
        assert [m.span() for m in tree.finditer(text)] == [m.span() for m in plain.finditer(text)]


_RECORD_LINES = st.sampled_from([ln for ln in REAL if nvidia_error_line(ln)] + REAL[:50] + [
    "", "   ", "NVRM: GPU at PCI:0000:18:00: fine", "continued words of the record", "timeout waiting here"])


@given(st.lists(st.tuples(st.sampled_from(["", "", " ", "\t", "  ", "\r"]), _RECORD_LINES, st.sampled_from(["", "\r"])),
                min_size=1, max_size=60), st.booleans())
@settings(max_examples=300, deadline=None)
def test_records_of_many_indented_lines_read_as_the_plain_reader_read_them(rows, newline_at_end):
    text = "\n".join(indent + line + cr for indent, line, cr in rows) + ("\n" if newline_at_end else "")
    assert unread_kernel_lines(text) == _reference(text)
    assert read_kernel_text(text) == (parse_kernel_log(text).value, _reference(text))
    assert list(kernel_log._candidate_lines(text)) == _reference_candidates(text)


def test_a_text_that_is_not_ascii_is_read_line_by_line_as_before():
    text = "2026-01-01T00:00:00+0000 h kernel: NVRM: GPU 0000:01:00.0: Falló \u0130 timeout\n    NVRM: more failed\n"
    assert worth_lines(text) is None
    assert unread_kernel_lines(text) == _reference(text)
    assert read_kernel_text(text) == (parse_kernel_log(text).value, _reference(text))


def test_one_log_read_both_ways_on_every_real_log():
    for path in sorted([*(TESTS / "corpus").rglob("*.txt"), *(TESTS / "fixtures").rglob("*.txt")]):
        text = path.read_text(errors="replace")
        assert read_kernel_text(text) == (parse_kernel_log(text).value, _reference(text)), path


def test_an_indented_line_belongs_to_the_line_above_it_not_to_the_last_line_worth_a_look():
    read_head = "2026-01-01T00:00:01+0000 h kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus."
    quiet_head = "2026-01-01T00:00:02+0000 h kernel: nvidia-nvswitch0: using MSI"
    said = "    NVRM: nvswitch link training failed on link 3"
    text = "\n".join([read_head, quiet_head, "", said, read_head, "   ", said]) + "\n"
    (event,) = unread_kernel_lines(text)  # the first `said` is quiet_head's record; the second read_head's
    assert event.line == said.strip()
    assert unread_kernel_lines(text) == _reference(text)

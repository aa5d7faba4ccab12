"""The fast path of the unread-line reader reads exactly what the plain one did (docs/performance.md, 2026-12-07).

A fresh poll's kernel text is read for NVIDIA lines no rule reads (:func:`nvls_tui.parsers.kernel_log.unread_kernel_lines`).
It used to run every rule on every line, and that was most of a fresh poll's bastion CPU. Now a line is first
tested for a word that says something went wrong (:func:`nvls_tui.parsers.unread.might_say_wrong` before the
case-blind pattern), and a record's first line is classified only when one of its later lines needs it. These tests
hold that nothing changed in what is read: each word's literal is in every match of the word, and the new reader
gives the old reader's events on texts built from real kernel lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.parsers import kernel_log
from nvls_tui.parsers.kernel_log import (
    UNREAD,
    KernelEvent,
    _each_line,
    _timestamp,
    classify_kernel_line,
    unread_kernel_lines,
)
from nvls_tui.parsers.unread import ERROR_CODES, ERROR_WORDS, might_say_wrong, nvidia_error_line, says_wrong

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
    for m in kernel_log._SCAN.finditer(text):
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

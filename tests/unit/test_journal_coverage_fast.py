"""What a kernel section says the journal covers is found from the first line that holds the words, not by a
pattern on each of its 300 lines (docs/performance.md, 2026-12-07); the answer is what the line-by-line reading gave,
whatever ends the section's lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvls_tui.poll import kernel_tail


def _coverage_read_line_by_line(text: str):
    """journal_coverage as it was: every line of the section tested."""
    for line in text.splitlines():
        if (m := kernel_tail._SINCE.match(line)) is not None:
            return (None, False) if m.group(1) == "none" else (m.group(1), m.group(2) == "1")
    return None


@given(st.lists(st.sampled_from([
    "-- nvls-tui journal since 2026-08-03T16:10:00+0000 boot 1", "-- nvls-tui journal since none",
    "-- nvls-tui journal since 2026-08-03T16:10:00+0000", "x -- nvls-tui journal since none",
    "-- nvls-tui journal since", "2026-08-03T16:10:00+0000 gpu001 kernel: NVRM: GPU at PCI:0000:18:00",
    "-- nvls-tui journal since 2026 boot 0 -- nvls-tui journal since none", "-- cursor: s=1", ""]), max_size=8),
    st.lists(st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\u2028", "\u2029", "\x85"]),
             min_size=8, max_size=8))
@settings(max_examples=400)
def test_the_coverage_line_is_found_as_when_every_line_was_read(lines, breaks):
    text = "".join(line + brk for line, brk in zip(lines, breaks, strict=False))
    assert kernel_tail.journal_coverage(text) == _coverage_read_line_by_line(text)


def test_a_section_without_the_line_says_nothing_and_the_tails_line_is_read():
    kept = "".join(f"2026-08-03T16:10:{i:02d}+0000 gpu001 kernel: NVRM: line {i}\n" for i in range(60))
    assert kernel_tail.journal_coverage(kept) is None
    assert kernel_tail.journal_coverage(kept + "-- nvls-tui journal since 2026-08-03T16:10:00+0000 boot 0\n") == (
        "2026-08-03T16:10:00+0000", False)

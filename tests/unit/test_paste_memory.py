"""The paste reader's memory is a small multiple of the paste (issue 34, item 9b).

``analyze`` takes pastes up to 64 MiB. A logger's line that kept its newlines escaped (``\\n``) is
unwrapped into one line per escape, and every line was an object with room for what a wrapper said
(host, rank, time...), plus lists the passes made of them: ~50 times the paste for short lines (a 64 MiB
paste would have taken ~3.4 GB), ~80 times for short lines never escaped. Now a line no wrapper said
anything of is its bare text, so the floor is CPython's own: a str per line (~50 bytes and its
characters) and the list's pointer to it. Peak memory measured with tracemalloc, as a multiple of the
paste; bench/paste_memory.py prints the numbers for larger pastes (the multiple does not grow with size).
"""

from __future__ import annotations

import random
import tracemalloc
from typing import Any

import pytest

from nvls_tui.analyze.captured import analyze_text
from nvls_tui.parsers.unwrap import _UNESCAPE, _UNESCAPED, _unescape, unwrap

# Generous: two-character lines cost ~11 times their size as one str each, the floor of any reader
# that holds a paste's lines; a kernel log's events (the result) cost about as much.
MULTIPLE = 16
XID = "NVRM: Xid (PCI:0000:97:00): 45, pid=4242, name=python, Ch 00000008"

# 128 KiB each: no shape's multiple grows with the paste's size (2026-12-07, tracemalloc, 128 / 256 KiB: 5.6 / 4.7,
# 11.5 / 11.3, 5.3 / 5.4, 11.1 / 11.1; the kernel lines 11.0 at 256 and 512 KiB, 2026-12-06), and a traced read
# costs CPU in proportion (1.6 / 3.0 s for the one-character escapes); bench/paste_memory.py measures the larger
# pastes. The kernel lines' read grew faster than its size once (the diagnosis weighed one GPU's n Xid lines n x n
# times: 1.45 s of CPU at 256 KiB, 0.38 s since, 2026-12-07).
PASTE = 128 << 10
PASTES = {
    # shape: (one line of it, size): the shortest lines take the longest to read, their multiple is the same
    "escaped, one-character lines": ("x\\n", PASTE),
    "escaped CRLF, two-character lines": ("ab\\r\\n", PASTE),
    "one-character lines": ("x\n", PASTE),
    "escaped, kernel lines": (f"{XID}\\n", PASTE),
}


def peak_multiple(read, text: str) -> tuple[float, Any]:
    """The most memory ``read(text)`` held at once, as a multiple of the text's size, and what it read (one
    read serves both: the tests' assertions on the result are on the read whose memory was measured)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = read(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / len(text), result


@pytest.mark.long  # seconds: handed out first of its tier (tests/conftest.py)
@pytest.mark.parametrize(("unit", "size"), PASTES.values(), ids=PASTES.keys())
def test_reading_a_paste_holds_a_small_multiple_of_it(unit, size):
    text = XID + "\n" + unit * (size // len(unit))
    assert len(unwrap(text).text) > size // 3  # read inside, not refused
    multiple, entry = peak_multiple(lambda t: analyze_text(t, "paste.txt"), text)
    assert entry["kind"] == "kernel-log" and entry["data"]["events"]  # and the Xid found in it
    assert multiple <= MULTIPLE


def test_escapes_read_with_plain_replaces_read_as_the_regex_reads_them():
    rng = random.Random(34)
    alphabet = ["\\", "n", "r", "t", '"', "x", " ", "\n"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert _unescape(text) == _UNESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), text), text


def test_a_mixed_paste_read_part_by_part_holds_a_small_multiple_of_it():
    # Issue 35, item 1: the driver's lines then mpirun-tagged NCCL lines are two parts, each unwrapped on its
    # own; the lines are classified one at a time (no list of every line's kind), each part's text cut once.
    kernel = f"[ 1234.567890] {XID}\n"
    nccl = "[1,0]<stdout>:gpu05:22:28 [0] NCCL INFO Channel 00/02 :    0   1\n"
    text = kernel * ((128 << 10) // len(kernel)) + nccl * ((128 << 10) // len(nccl))
    multiple, entry = peak_multiple(lambda t: analyze_text(t, "paste.txt"), text)
    assert [p["kind"] for p in entry["parts"]] == ["kernel-log", "nccl-tests"]
    assert multiple <= MULTIPLE

"""A paste's lines grouped into runs of one kind (issue 35, item 1). Pure.

Each line says what it is by its own words (:func:`nvls_tui.parsers.detect.line_kind`: the driver's,
Fabric Manager's or systemd's about FM's unit, NCCL's, fuser's, lsof's, nvidia-smi -r's or -mig's), or
nothing (prose, a tool's table rows, another unit's journal lines). Consecutive lines of one kind are a
run; lines that say nothing between two lines of one kind stay in that run (an nccl-tests table between its
header and footer, a traceback's frames, another unit's journal lines between two kernel lines), so prose
never splits a run needlessly. Between runs of different kinds such lines go with the run before them
(a tool's output goes on after its last line that names it), unless NVIDIA's stack says something went
wrong in them: then they are a run of their own, of kind ``unknown``, so that the text is read, never
dropped (:mod:`nvls_tui.parsers.unread`). Lines before the first run go with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvls_tui.analyze.transcript import iter_lines
from nvls_tui.parsers.detect import line_kind, line_kinds_in
from nvls_tui.parsers.unread import nvidia_error_line

UNKNOWN = "unknown"


@dataclass(slots=True)
class Run:
    """Lines ``start`` to ``end`` (0-based, end included) of one kind."""

    kind: str
    start: int
    end: int


def line_runs(text: str) -> list[Run] | None:
    """The runs of ``text``'s lines (module doc), or None where it holds lines of fewer than two kinds (one
    reader reads it all, as before). Only the runs are kept, never a list of every line."""
    if len(line_kinds_in(text)) < 2:  # one search per kind over the text: most pastes stop here
        return None
    runs: list[Run] = []
    gap_start: int | None = None  # the first line since the last kind's line
    gap_unread = False  # whether NVIDIA's error text is among those lines
    last = -1
    for index, line in enumerate(iter_lines(text)):
        last = index
        kind = line_kind(line)
        if kind is None:
            if gap_start is None:
                gap_start = index
            gap_unread = gap_unread or nvidia_error_line(line)
            continue
        if runs and runs[-1].kind == kind:
            runs[-1].end = index
        elif not runs:
            runs.append(Run(kind, 0, index))  # lines before the first run go with it
        else:
            if gap_start is not None and gap_unread:
                runs.append(Run(UNKNOWN, gap_start, index - 1))
            elif gap_start is not None:
                runs[-1].end = index - 1
            runs.append(Run(kind, index, index))
        gap_start, gap_unread = None, False
    if gap_start is not None and runs:
        if gap_unread:
            runs.append(Run(UNKNOWN, gap_start, last))
        else:
            runs[-1].end = last
    if len({r.kind for r in runs if r.kind != UNKNOWN}) < 2:
        return None
    return runs


__all__ = ["UNKNOWN", "Run", "line_runs"]

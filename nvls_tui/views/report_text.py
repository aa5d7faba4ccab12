"""An incident report's Markdown as text to read in a terminal pane (the logs screen's past repairs). Pure.

The report (``nvls_tui.report``) is Markdown for a ticket or a wiki; in a pane its marks are noise (``##``,
``| --- |``, ``**``, backticks, ``FM\\_NOT\\_RUNNING``). Each line becomes ``(text, kind)``: headings are
``heading``, a table's rows are lined up in columns (``table-head`` for its header row, ``table`` for the
others), everything else is ``text``, with list items as bullets and the inline marks taken off. Only the
constructs the report writes are read; any other line is kept as it is, less its inline marks. The result is
plain text for a ``Text``, never markup: the report quotes node text.
"""

from __future__ import annotations

import re

_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_SEPARATOR = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+\s*$")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_PIPE = re.compile(r"(?<!\\)\|")
GAP = "  "  # between two table columns


def inline(text: str) -> str:
    """``text`` without Markdown's inline marks: strong emphasis, code spans' backticks, backslash escapes."""
    return _ESCAPED.sub(r"\1", text.replace("**", "").replace("`", ""))


def _cells(row: str) -> list[str]:
    return [inline(cell.strip()) for cell in _PIPE.split(row.strip())[1:-1]]


def _table(block: list[str]) -> list[tuple[str, str]]:
    """A table's rows lined up: each column as wide as its widest cell, right-aligned where the report says so."""
    separator = next((row for row in block if _SEPARATOR.match(row)), None)
    right = [cell.strip().endswith(":") for cell in separator.strip().strip("|").split("|")] if separator else []
    rows = [_cells(row) for row in block if not _SEPARATOR.match(row)]
    columns = max((len(r) for r in rows), default=0)
    widths = [max((len(r[i]) for r in rows if i < len(r)), default=0) for i in range(columns)]

    def line(cells: list[str]) -> str:
        fitted = [cell.rjust(widths[i]) if i < len(right) and right[i] else cell.ljust(widths[i])
                  for i, cell in enumerate(cells)]
        return GAP.join(fitted).rstrip()

    head = separator is not None and len(block) > 1 and block[1] is separator
    return [(line(cells), "table-head" if head and i == 0 else "table") for i, cells in enumerate(rows)]


def readable_lines(markdown: str) -> list[tuple[str, str]]:
    """The report as ``(text, kind)`` lines (kinds: ``heading``, ``table-head``, ``table``, ``text``)."""
    lines = markdown.splitlines()
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out += _table(block)
            continue
        line = lines[i]
        heading = _HEADING.match(line)
        if heading:
            out.append((inline(heading.group(1)), "heading"))
        elif line.startswith("- "):
            out.append(("• " + inline(line[2:]), "text"))
        else:
            out.append((inline(line), "text"))
        i += 1
    return out


__all__ = ["readable_lines"]

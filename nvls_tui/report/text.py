"""The report's small words: values from the audit log escaped for Markdown, numbers and command lines.

Any value in the log may hold a node's text, which is data: it reaches the report only through
:func:`prose` or :func:`code_span`. The records themselves are read back into their events before the
report sees them (:mod:`nvls_tui.runbook.log_entries`), so the report reads named fields, never raw JSON.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from nvls_tui.textsafe import markdown_code, markdown_text
from nvls_tui.words import count, gbps


def prose(value: Any) -> str:
    """A value from the log as Markdown prose: escaped (the log holds node text, which is data)."""
    return markdown_text(value)


def code_span(value: Any) -> str:
    """A value from the log as a Markdown code span (a command line, a unit name)."""
    return markdown_code(value)


def table_cell(markdown: str) -> str:
    """Already-escaped Markdown made safe inside a table cell (``|`` splits cells, even in code)."""
    return markdown.replace("|", "\\|").replace("\n", " ").strip()


def code_spans(values: Iterable[Any]) -> str:
    """``a``, ``b``: names as code spans, comma-separated."""
    return ", ".join(code_span(v) for v in values)


def and_list(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) < 2:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def one_sentence(parts: list[str]) -> str:
    """Parts joined with semicolons, ending in one full stop."""
    text = "; ".join(p for p in parts if p)
    return text if text.endswith(".") else text + "."


def as_number(value: Any) -> float | None:
    """A JSON number as a float (None for anything else; a bool is no number)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def bandwidth(value: Any) -> str:
    """A bus bandwidth in GB/s as operators read it (``235.2 GB/s``), or ``no bandwidth`` when none was logged."""
    number = as_number(value)
    return gbps(number) if number is not None else "no bandwidth"


def command_line(argv: Any) -> str:
    """An argv as one shell-quoted line (empty when it is no argv)."""
    if not isinstance(argv, list | tuple) or not argv:
        return ""
    return shlex.join([str(a) for a in argv])


def shown_command(argv: Any) -> str:
    """A logged command as the report's timeline shows it (Markdown): a long /dev/nvidia* list becomes its glob
    and a count (``fuser -v /dev/nvidia*`` (12 devices))."""
    args = [str(a) for a in argv] if isinstance(argv, list | tuple) else []
    devices = [a for a in args if a.startswith("/dev/nvidia")]
    if len(devices) <= 3:
        return code_span(command_line(args))
    first = args.index(devices[0])
    rest = [a for a in args[first:] if not a.startswith("/dev/nvidia")]
    text = " ".join(p for p in (command_line(args[:first]), "/dev/nvidia*", command_line(rest)) if p)
    return f"{code_span(text)} ({count(len(devices), 'device')})"

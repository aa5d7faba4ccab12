"""The output pane: the commands a run sends and what they print, streamed as it arrives.

A ``RichLog`` with ``max_lines``, so a chatty command cannot eat the memory of a long session; the
audit log keeps everything. Commands, notes and errors are styled by kind.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import RichLog

from nvls_tui.views.runbook import PaneLine

MAX_LINES = 2000

KIND_STYLE = {
    "cmd": "bold #87d7ff",
    "out": "",
    "ok": "bold #5fd75f",
    "err": "bold #ff5f5f",
    "warn": "#ffaf00",
    "note": "#afafaf",
    "step": "bold #8a8a8a",
}


class OutputPane(RichLog):
    """The streamed output of one run (commands in blue, errors in red)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_lines", MAX_LINES)
        kwargs.setdefault("wrap", False)
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        super().__init__(**kwargs)
        self.lines_written = 0

    def add(self, lines: Iterable[PaneLine]) -> None:
        """Append ``lines`` and follow the end."""
        for line in lines:
            self.write(Text(line.text, style=KIND_STYLE.get(line.kind, "")), scroll_end=True)
            self.lines_written += 1

"""The output pane: the commands a run sends and what they print, streamed as it arrives.

A ``RichLog`` with ``max_lines``, so a chatty command cannot eat the memory of a long session; the
audit log keeps everything. Commands, notes and errors are styled by kind. Lines do not wrap: a command
too wide for the pane is shortened in the middle to its width (never cut silently at the edge: the lock's
``rm -f owner.json owner.json.tmp`` read as the same path twice); other lines scroll sideways.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.style import Style
from rich.text import Text
from textual.events import Resize
from textual.geometry import Size
from textual.widgets import RichLog

from nvls_tui.console.widgets import palette
from nvls_tui.views.runbook import PaneLine, middle_cut

MAX_LINES = 2000

# The colour role of each kind of line (a command's own output, "out", is left as it is).
KIND_ROLE = {"cmd": "command", "ok": "ok", "err": "bad", "warn": "warn", "note": "note", "step": "muted"}
# The kinds that mark where a run is and how it went, in bold among the output.
BOLD_KINDS = {"cmd", "ok", "err", "step"}


def kind_style(kind: str) -> Style:
    """How a line of ``kind`` looks (the null style for output and unknown kinds)."""
    role = KIND_ROLE.get(kind)
    if role is None:
        return Style.null()
    return palette.bold(role) if kind in BOLD_KINDS else palette.STYLE[role]


class OutputPane(RichLog):
    """The streamed output of one run (commands in blue, errors in red)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_lines", MAX_LINES)
        kwargs.setdefault("wrap", False)
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        super().__init__(**kwargs)
        self._last_key = ""
        self._last_height = 0
        # Lines given before the pane knew its width: a command is shortened to that width, so they wait.
        self._early: list[PaneLine] = []

    def add(self, lines: Iterable[PaneLine]) -> None:
        """Append ``lines`` and follow the end; a keyed line replaces the last line if that has its key."""
        if not self._size_known or self._early:
            for line in lines:
                if line.key and self._early and self._early[-1].key == line.key:
                    self._early[-1] = line
                else:
                    self._early.append(line)
            return
        for line in lines:
            if not (line.key and line.key == self._last_key and self._drop_last()):
                self._last_key = ""
            text = middle_cut(line.text, self._text_width()) if line.kind == "cmd" else line.text
            self.write(self._drawn(line, text), scroll_end=True)
            self._last_key = line.key
            self._last_height = text.count("\n") + 1  # no wrapping: one strip per text line

    @staticmethod
    def _drawn(line: PaneLine, text: str) -> Text:
        """What the pane draws for ``line``: an event's line as runbook/describe gave it (its bold parts kept)
        under the kind's style, else the text as plain ``Text`` (never markup)."""
        drawn = Text(style=kind_style(line.kind))
        drawn.append_text(line.styled if line.styled is not None and line.kind != "cmd" else Text(text))
        return drawn

    def _text_width(self) -> int:
        """The columns a line has (the vertical scrollbar's counted as taken: it appears as lines come)."""
        return max(1, self.content_region.width - self.styles.scrollbar_size_vertical)

    def on_resize(self, event: Resize) -> None:
        """Once the pane has a width (RichLog's own handler runs next and learns it), add the early lines."""
        if event.size.width and self._early:
            self.call_later(self._add_early)

    def _add_early(self) -> None:
        early, self._early = self._early, []
        self.add(early)

    def _drop_last(self) -> bool:
        """Take back the last write (to rewrite it in place). False when it cannot be (already scrolled off).

        RichLog offers no way to change a line, so this reaches into it: a write made before the pane knew
        its size waits in ``_deferred_renders``; one rendered is the last strips of ``lines``, whose
        rendered copies in ``_line_cache`` go with it.
        """
        if self._deferred_renders:
            self._deferred_renders.pop()
            return True
        if len(self.lines) < self._last_height:
            return False
        del self.lines[-self._last_height:]
        self._line_cache.clear()
        self.virtual_size = Size(self.virtual_size.width, len(self.lines))
        self.refresh()
        return True

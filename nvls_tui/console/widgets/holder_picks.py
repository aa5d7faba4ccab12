"""The holders a repair waits on, each with a mark that differs in shape when picked.

Textual's SelectionList draws ``▐X▌`` for every option and tells picked from not by colour alone:
under NO_COLOR (or on a monochrome console) every holder looked picked. Here ``[✔]`` is picked and
``[ ]`` is not, whatever the colours.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import SelectionList

PICKED, NOT_PICKED = "✔", " "


class HolderPicks(SelectionList[int]):
    """A SelectionList of PIDs whose mark says picked or not in its shape, and whose ``space`` picks at once."""

    def action_select(self) -> None:
        """``space`` (and a click): pick or unpick the highlighted holder now.

        SelectionList's own ``space`` only posts OptionSelected and toggles when that message is handled: a ``t``
        typed right behind the ``space`` (in the same read from the terminal) was checked first, found nothing
        picked and was dropped, about one time in two in a real terminal (issue 38 item 4).
        """
        highlighted = self.highlighted
        if highlighted is not None and not self.get_option_at_index(highlighted).disabled:
            self._toggle_highlighted_selection()

    def render_line(self, y: int) -> Strip:
        """The option's line with ``[✔]`` or ``[ ]`` in place of the toggle button."""
        line = super().render_line(y)
        segments = list(line)
        index = self.scroll_offset.y + y
        if len(segments) < 3 or not 0 <= index < self.option_count:
            return line
        picked = self.get_option_at_index(index).value in self.selected
        left, inner, right = segments[:3]
        return Strip([Segment("[", left.style), Segment(PICKED if picked else NOT_PICKED, inner.style),
                      Segment("]", right.style), *segments[3:]], line.cell_length)


__all__ = ["HolderPicks"]

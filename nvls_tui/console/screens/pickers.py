"""Small pickers over the fleet: the column to sort by (``O``) and the columns to show (``c``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import OptionList, SelectionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist


class SortPicker(ModalScreen[str | None]):
    """Pick the column the fleet is sorted by; the current one is marked, and picking it again reverses.

    Args:
        columns: ``(key, label)`` of every column that can be sorted by, ``("", "fleet order")`` first.
        current: the key of the current order's column.
        marker: how the current column is marked (``↑``, ``↓``).
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close without changing the order.")]

    def __init__(self, columns: Sequence[tuple[str, str]], current: str, marker: str) -> None:
        super().__init__()
        self.columns = list(columns)
        self.current = current
        self.marker = marker

    def compose(self) -> ComposeResult:
        """A title and the columns."""
        with Vertical(id="picker-box"):
            yield Static(Text("Sort the fleet by (Enter picks; the current column again reverses it)"),
                         id="picker-title")
            yield OptionList(*[Option(Text(f"{label}  {self.marker}" if key == self.current else label), id=key or "-")
                               for key, label in self.columns], id="picker-list")

    def on_mount(self) -> None:
        """Start on the current column."""
        options = self.query_one(OptionList)
        keys = [key for key, _ in self.columns]
        options.highlighted = keys.index(self.current) if self.current in keys else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a column: that order."""
        event.stop()
        chosen = event.option.id or ""
        self.dismiss("" if chosen == "-" else chosen)

    def action_cancel(self) -> None:
        """Esc: leave the order as it is."""
        self.dismiss(None)


class ProposalsPicker(ModalScreen[str | None]):
    """The autopilot's proposals (ask mode, ``P``): each node the last round proposed, held by a limit, or left to a
    person, one line each; Enter goes to the node on the fleet (where ``a`` approves). Nothing is approved here.

    Args:
        title: the first line (the breaker, a pause, that nothing runs without approval).
        rows: ``(host, line)`` for each node, proposed first.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; the cursor stays where it was.")]

    def __init__(self, title: Text, rows: Sequence[tuple[str, Text]]) -> None:
        super().__init__()
        self.title_text = title
        self.rows = list(rows)

    def compose(self) -> ComposeResult:
        """The title and one line per node (or a line saying there is none)."""
        with Vertical(id="picker-box"):
            yield Static(self.title_text, id="picker-title")
            if self.rows:
                yield OptionList(*[Option(line, id=host) for host, line in self.rows], id="picker-list")
            else:
                yield Static("No node is proposed or held: every node is healthy, unknown, or was not judged yet.")

    def on_mount(self) -> None:
        """The list has the keys."""
        for options in self.query(OptionList):
            options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a node: go to it on the fleet."""
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Esc: back to the fleet as it was."""
        self.dismiss(None)


class MarkedSelectionList(SelectionList[str]):
    """A SelectionList whose box is marked only when its option is on (``▐X▌``) and empty when off (``▐ ▌``):
    Textual draws ``▐X▌`` for both and tells them apart by colour alone, which a monochrome terminal or
    ``NO_COLOR`` does not show."""

    def render_line(self, y: int) -> Strip:
        """The option's line with its box's inner cell blank when the option is off."""
        strip = super().render_line(y)
        segments = list(strip)
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        # SelectionList draws [left side, inner cell, right side, " ", prompt...]: only the inner cell changes.
        if len(segments) > 3 and selection.value not in self.selected:
            segments[1] = Segment(" ", segments[1].style)
            return Strip(segments, strip.cell_length)
        return strip


class ColumnPicker(ModalScreen[None]):
    """Choose which of the grid's optional columns show; each change applies at once (space toggles).

    Args:
        columns: ``(key, label)`` of every optional column.
        hidden: the keys hidden now.
        apply: called with the hidden keys after each change.
    """

    BINDINGS = [Binding("escape", "close", "Close", tooltip="Close the column picker (the choice stays).")]

    def __init__(self, columns: Sequence[tuple[str, str]], hidden: frozenset[str],
                 apply: Callable[[frozenset[str]], None]) -> None:
        super().__init__()
        self.columns = list(columns)
        self.hidden = hidden
        self.apply = apply

    def compose(self) -> ComposeResult:
        """A title and a check box per column."""
        with Vertical(id="picker-box"):
            yield Static(Text("Columns of the fleet grid (space shows or hides; host, verdict, GPUs and the story "
                              "always show; a column shows only where the width allows)"), id="picker-title")
            yield MarkedSelectionList(*[(label, key, key not in self.hidden) for key, label in self.columns],
                                      id="picker-list")

    def on_mount(self) -> None:
        """The list has the focus."""
        self.query_one(SelectionList).focus()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        """Apply the new choice at once."""
        event.stop()
        shown = set(event.selection_list.selected)
        self.hidden = frozenset(key for key, _ in self.columns if key not in shown)
        self.apply(self.hidden)

    def action_close(self) -> None:
        """Esc: close (the columns stay as chosen)."""
        self.dismiss(None)


__all__ = ["ColumnPicker", "SortPicker"]

"""The search box of a screen (``/``): the query, and on its border where the current match is ("3/7")."""

from __future__ import annotations

from rich.text import Text

from nvls_tui.console.widgets.ordered_input import OrderedInput
from nvls_tui.textsafe import one_line
from nvls_tui.views.search import Search

SEARCH_ID = "search"


class SearchBar(OrderedInput):
    """An input box, hidden until ``/``; its border says the count and the current match's line."""

    DEFAULT_CSS = """
    SearchBar {
        dock: bottom;
        height: 3;
        margin: 0 0 1 0;
        border: heavy $accent;
    }
    """

    def __init__(self) -> None:
        super().__init__(placeholder="search (Enter keeps it, n/N next/previous, Esc ends)", id=SEARCH_ID)
        self.display = False  # hidden (so never focused) until `/`
        self.border_title = "search"

    def show(self, search: Search, line: str = "") -> None:
        """Put the count (``3/7``, ``no match``) and the current match's line (node text: made safe) on the border."""
        label = search.label()
        self.border_title = f"search {label}" if label else "search"
        # Node text is data: control sequences never reach the terminal, and a Text is never read as markup.
        self.border_subtitle = Text(one_line(line, 120)) if search.hits and line else ""


__all__ = ["SEARCH_ID", "SearchBar"]

"""Search inside a screen, as in less and k9s: ``/`` types a query, ``n``/``N`` step, Esc ends.

:class:`Searching` is a mixin for a Screen: it mounts a hidden :class:`SearchBar`, searches what the
screen shows (every row of its tables, every line of its output panes, every line of a ``.searchable``
Static), moves the focus and the cursor (or the pane's scroll) to the current match, and says ``3/7``
on the bar's border with the matched line. The matching itself is pure (:mod:`nvls_tui.views.search`).

Its keys are the binding table's ``search`` scope: they come first in the screen's bindings, so while a
search is on, ``n`` is the next match; without one, ``n`` and ``N`` are the screen's own again (the
node screen's smoke test). A screen's ``check_action`` asks :meth:`Searching.search_allows` for them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, RichLog, Static

from nvls_tui.console.widgets.search_bar import SEARCH_ID, SearchBar
from nvls_tui.views.search import Search

if TYPE_CHECKING:
    from textual.screen import Screen

SEARCH_ACTIONS = frozenset({"search", "search_next", "search_prev", "search_end"})

Where = tuple[str, int]
"""A match's place: the widget's key (its id, or ``@`` and its object id for a widget without one, as the
repair screen's output panes) and the row (table) or line (pane, Static) in it."""


def _key(widget: Widget) -> str:
    return widget.id or f"@{id(widget)}"


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _static_text(widget: Static) -> str:
    content: Any = widget.content
    plain = getattr(content, "plain", None)
    if isinstance(plain, str):
        return plain
    text = getattr(content, "text", None)  # a wrapper of Text (widgets.hanging.Hanging)
    return _plain(text) if text is not None else str(content)


class Searching:
    """Mixin for a Screen that can be searched (see the module docstring).

    Attributes:
        search_state: the current search (an empty query when none is on).
    """

    search_state: Search = Search()

    def _on_mount(self, _: events.Mount) -> None:
        screen = self._screen()
        footers = screen.query(Footer)
        bar = SearchBar()
        if footers:
            screen.mount(bar, before=footers.first())
        else:
            screen.mount(bar)

    def _screen(self) -> Screen[Any]:
        return self  # type: ignore[return-value]

    # ---- what is searched ---------------------------------------------------------------------
    def search_lines(self) -> Iterator[tuple[Where, str]]:
        """Every line the screen shows, in screen order: table rows, output lines, ``.searchable`` text."""
        screen = self._screen()
        self._searched: dict[str, Widget] = {}
        for widget in screen.query("DataTable, RichLog, Static.searchable"):
            if not widget.display or widget.id == SEARCH_ID:
                continue
            key = _key(widget)
            self._searched[key] = widget
            if isinstance(widget, DataTable):
                for i in range(widget.row_count):
                    yield (key, i), "  ".join(_plain(c) for c in widget.get_row_at(i))
            elif isinstance(widget, RichLog):
                for i, strip in enumerate(widget.lines):
                    yield (key, i), strip.text
            elif isinstance(widget, Static):
                for i, line in enumerate(_static_text(widget).splitlines()):
                    yield (key, i), line

    def show_match(self, where: Where, focus: bool = True) -> None:
        """Bring the match at ``where`` into view: a table's cursor on its row, a pane scrolled to it;
        with ``focus``, the widget takes the focus (so the next ``n`` is a key, not text in the box)."""
        key, index = where
        found = getattr(self, "_searched", {}).get(key)
        if found is None or not found.is_attached:
            return  # gone since it was searched (a column closed): nothing to show
        widget: Widget = found
        if focus and widget.focusable:
            widget.focus(scroll_visible=False)
        elif focus:
            self._focus_back()
        if isinstance(widget, DataTable):
            widget.move_cursor(row=index, animate=False, scroll=True)
            widget.scroll_visible(animate=False)
        elif isinstance(widget, RichLog):
            widget.auto_scroll = False  # the pane would jump back to the end with the next line
            widget.scroll_to(y=max(0, index - 2), animate=False)
            widget.scroll_visible(animate=False)
        else:
            widget.scroll_visible(animate=False)

    # ---- keys ---------------------------------------------------------------------------------
    def search_allows(self, action: str) -> bool:
        """Whether a search key applies now: ``/`` always, ``n``/``N``/Esc only while a search is on."""
        if action == "search":
            return True
        shown = self._bar().display
        if action == "search_end":
            return shown
        return shown and bool(self.search_state.query.strip())

    def _bar(self) -> SearchBar:
        return self._screen().query_one(f"#{SEARCH_ID}", SearchBar)

    def action_search(self) -> None:
        """``/``: show the search box and type into it (at once: the keys typed with ``/`` land there)."""
        screen = self._screen()
        if isinstance(screen.focused, Input):
            raise SkipAction  # typing in a box: a `/` is text
        bar = self._bar()
        self._search_from = screen.focused
        bar.display = True
        screen.set_focus(bar)

    def action_search_next(self) -> None:
        """``n``: the next match, wrapping around."""
        self._step(1)

    def action_search_prev(self) -> None:
        """``N``: the previous match, wrapping around."""
        self._step(-1)

    def action_search_end(self) -> None:
        """Esc: end the search; the focus goes back where it was."""
        bar = self._bar()
        self.search_state = Search()
        bar.value = ""
        bar.show(self.search_state)
        bar.display = False
        self._focus_back()

    def _focus_back(self) -> None:
        back = getattr(self, "_search_from", None)
        if back is not None and back.is_attached and back.focusable:
            back.focus(scroll_visible=False)
        else:
            self._screen().focus_next()

    def _step(self, by: int) -> None:
        # The lines may have changed since the query was typed (a poll, new output): search again.
        current = self.search_state.current
        search = Search.over(self.search_lines(), self.search_state.query, near=current)
        self._go(search.step(by) if current in search.hits else search)

    def _go(self, search: Search, focus: bool = True) -> None:
        self.search_state = search
        where = search.current
        lines: dict[Hashable, str] = dict(self.search_lines())
        self._bar().show(search, lines.get(where, "") if where is not None else "")
        if where is not None:
            self.show_match(where, focus=focus)  # type: ignore[arg-type]

    # ---- the box --------------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        """Search as the query is typed: the match comes into view, the focus stays in the box."""
        if event.input.id != SEARCH_ID:
            return
        event.stop()
        self._go(Search.over(self.search_lines(), event.value), focus=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter keeps the search (``n``/``N`` step) and gives the focus to the match."""
        if event.input.id != SEARCH_ID:
            return
        event.stop()
        where = self.search_state.current
        if not self.search_state.query.strip():
            self.action_search_end()
            return
        if where is not None:
            self.show_match(where)  # type: ignore[arg-type]
        else:
            self._focus_back()


__all__ = ["SEARCH_ACTIONS", "Searching", "Where"]

"""The ``?`` help screen, generated from the binding table (so it can never disagree with the keys).

The keys of the screen it was opened on come first (then those that work anywhere, then the rest), and
``/`` filters the rows as you type (a search: ``n``/``N`` step through what is left, Esc shows all again).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Input, Label, Static

from nvls_tui.console.bindings import SCOPES, bindings_for, specs_for
from nvls_tui.console.screens.searching import SEARCH_ACTIONS, Searching
from nvls_tui.console.widgets import palette
from nvls_tui.paths import config_file
from nvls_tui.views.search import find

SCOPE_TITLES = {"app": "anywhere", "fleet": "fleet", "node": "node", "runbook": "repair", "search": "search",
                "logs": "logs"}
# The words for "the keys of the screen you are on" in the help's title.
SCREEN_NAMES = {"fleet": "the fleet", "node": "the node screen", "runbook": "the repair screen",
                "logs": "the logs screen"}

GLYPHS = ("✔ Completed/Success   … In Progress   ○ Not Started   ✖ error status   – not supported   "
          "◆ NVSwitch present")


# At least this many columns show the binding ids and the "changes a node" column.
WIDE = 120


def screen_scope(screen: Screen[object]) -> str | None:
    """The binding table's scope of ``screen`` (``fleet``, ``node``, ``runbook``), from the ids of its
    bindings; None for a screen with no keys of its own in the table (a dialog)."""
    for binding in type(screen).BINDINGS:
        scope = (getattr(binding, "id", None) or "").partition(".")[0]
        if scope in SCOPES and scope not in ("app", "search"):
            return scope
    return None


def scope_order(scope: str | None) -> list[str]:
    """The scopes in the help's order: the screen's own first, then ``app`` (anywhere), then the rest."""
    first = [s for s in (scope, "app") if s in SCOPES]
    return first + [s for s in SCOPES if s not in first]


def _tilde(path: Path) -> str:
    """``path`` with the home directory as ``~`` (as an operator types it)."""
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) and path != home else str(path)


class HelpScreen(Searching, ModalScreen[None]):
    """Every binding: scope, key (after the user's keymap), id, what it does; the screen's own first.

    Args:
        keymap: binding id -> key from the config file.
        read_only: mark the actions that read-only mode refuses.
        scope: the binding scope of the screen the help was opened on (its keys come first).
        config_path: the config file the keymap is read from (None: the XDG default's, read when shown).
    """

    BINDINGS = [*bindings_for("search"),
                Binding("escape,question_mark,q", "close", "Close", tooltip="Close the help.")]

    def __init__(self, keymap: dict[str, str] | None = None, read_only: bool = False,
                 scope: str | None = None, config_path: Path | None = None) -> None:
        super().__init__()
        self.config_path = config_path
        self.keymap = dict(keymap or {})
        self.read_only = read_only
        self.scope = scope
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        """A title, the key table, the legend of the fleet glyphs."""
        with Vertical(id="help-box"):
            here = f"{SCREEN_NAMES[self.scope]}'s keys first · " if self.scope in SCREEN_NAMES else ""
            yield Label(Text(f"Keys  ({here}/ filters · remap in {_tilde(self.config_path or config_file())}: "
                             "[keymap] id = \"key\")"), id="help-title")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)
            yield Static(Text("GPU cells: " + GLYPHS, style="dim"), id="help-legend")
            yield Static(Text("ctrl+p opens the command palette: every action below as "
                              "`topic: verb object`.", style="dim"), id="help-palette")

    def on_mount(self) -> None:
        """Fill the table from the binding table, for the width the terminal has."""
        self._fill(self.app.size.width)
        self.query_one(DataTable).focus()

    def on_resize(self, event: events.Resize) -> None:
        """Refill for the new width (the descriptions wrap to it)."""
        self._fill(event.size.width)

    def _fill(self, width: int) -> None:
        # Descriptions wrap in their column rather than run off the box; below WIDE the binding ids
        # give way (they are for the keymap file) and the "changes a node" mark joins the description.
        table = self.query_one(DataTable)
        table.clear(columns=True)
        wide = width >= WIDE
        fixed = {"where": 8, "key": 7, "id": 24, "flag": 18} if wide else {"where": 8, "key": 7}
        # The box is 96% wide with a border and padding; each DataTable column pads by one each side.
        room = int(width * 0.96) - 4 - 1 - sum(w + 2 for w in fixed.values()) - 2
        table.add_column("where", width=fixed["where"])
        table.add_column("key", width=fixed["key"])
        table.add_column("does", width=max(20, room))
        if wide:
            table.add_column("id", width=fixed["id"])
            table.add_column("", width=fixed["flag"])
        rows: list[list[Text]] = []
        for scope in scope_order(self.scope):
            for s in specs_for(scope):
                key = self.keymap.get(s.id, s.key).replace("question_mark", "?").replace("slash", "/")
                flag = Text("")
                if s.destructive:
                    flag = Text("refused: read-only" if self.read_only else "changes a node",
                                style=palette.STYLE["muted" if self.read_only else "warn"])
                does = Text(f"{s.description}: {s.tooltip}")
                where = Text(SCOPE_TITLES.get(scope, scope), style="bold" if scope == self.scope else "")
                cells = [where, Text(key, style="bold"), does]
                if wide:
                    cells += [Text(s.id, style="dim"), flag]
                elif flag.plain:
                    does.append(f" ({flag.plain})", style=flag.style)
                rows.append(cells)
        # `/` filters: only the rows that hold what was typed (the search then steps through them).
        shown = set(find(((i, "  ".join(c.plain for c in row)) for i, row in enumerate(rows)), self.filter_text))
        for i, row in enumerate(rows):
            if not self.filter_text.strip() or i in shown:
                table.add_row(*row, height=None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The search keys apply while a search is on (``/`` always); Esc ends a search before it closes."""
        if action in SEARCH_ACTIONS:
            return self.search_allows(action)
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        """Keep only the rows that hold what is typed (the search that follows counts them)."""
        if event.input.id == "search":
            self.filter_text = event.value
            self._fill(self.app.size.width)

    def action_search_end(self) -> None:
        """Esc in a search: every row again, then the search ends."""
        self.filter_text = ""
        self._fill(self.app.size.width)
        super().action_search_end()

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)

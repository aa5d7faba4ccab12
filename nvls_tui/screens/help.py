"""The ``?`` help screen, generated from the binding table (so it can never disagree with the keys)."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from nvls_tui.bindings import SCOPES, specs_for
from nvls_tui.widgets import palette

SCOPE_TITLES = {"app": "anywhere", "fleet": "fleet", "node": "node", "runbook": "repair"}

GLYPHS = ("✔ Completed/Success   … In Progress   ○ Not Started   ✖ error status   – not supported   "
          "◆ NVSwitch present")


# At least this many columns show the binding ids and the "changes a node" column.
WIDE = 120


class HelpScreen(ModalScreen[None]):
    """Every binding: scope, key (after the user's keymap), id, what it does.

    Args:
        keymap: binding id -> key from the config file.
        read_only: mark the actions that read-only mode refuses.
    """

    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", tooltip="Close the help.")]

    def __init__(self, keymap: dict[str, str] | None = None, read_only: bool = False) -> None:
        super().__init__()
        self.keymap = dict(keymap or {})
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        """A title, the key table, the legend of the fleet glyphs."""
        with Vertical(id="help-box"):
            yield Label(Text("Keys  (remap in ~/.config/nvls-tui/config.toml: [keymap] id = \"key\")"),
                        id="help-title")
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
        for scope in SCOPES:
            for s in specs_for(scope):
                key = self.keymap.get(s.id, s.key).replace("question_mark", "?").replace("slash", "/")
                flag = Text("")
                if s.destructive:
                    flag = Text("refused: read-only" if self.read_only else "changes a node",
                                style=palette.STYLE["muted" if self.read_only else "warn"])
                does = Text(f"{s.description}: {s.tooltip}")
                cells = [Text(SCOPE_TITLES[scope]), Text(key, style="bold"), does]
                if wide:
                    cells += [Text(s.id, style="dim"), flag]
                elif flag.plain:
                    does.append(f" ({flag.plain})", style=flag.style)
                table.add_row(*cells, height=None)

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)

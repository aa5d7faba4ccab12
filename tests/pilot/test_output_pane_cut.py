"""The output pane never cuts a line silently.

A repair column's pane does not wrap, so a line wider than the pane was cut at its edge with no mark: at
160x48 (two columns side by side) the lock's release read ``$ rm -f /var/lib/nvls-tui/lock/owner.json
/var/lib/nvls-tui/lock/owner.json``, the same path twice, its ``.tmp`` cut away. A command line too wide is
now shortened in the middle to the pane's width (its end, often the path it acts on, stays in view); a
node's output stays whole, to scroll to sideways.
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from nvls_tui.console.widgets.output_pane import OutputPane
from nvls_tui.views.runbook import PaneLine

RELEASE = "$ rm -f /var/lib/nvls-tui/lock/owner.json /var/lib/nvls-tui/lock/owner.json.tmp"
WIDTH = 60


class PaneApp(App):
    """One pane of ``WIDTH`` columns; ``early`` lines are written before the pane knows its size."""

    CSS = f"OutputPane {{ width: {WIDTH}; scrollbar-size-vertical: 0; }}"

    def __init__(self, early: list[PaneLine] | None = None) -> None:
        super().__init__()
        self.early = early or []

    def compose(self) -> ComposeResult:
        pane = OutputPane()
        pane.add(self.early)
        yield pane


def texts(pane: OutputPane) -> list[str]:
    return [strip.text.rstrip() for strip in pane.lines]


async def test_a_long_command_is_shortened_in_the_middle_and_keeps_its_end():
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(OutputPane)
        pane.add([PaneLine(RELEASE, "cmd")])
        await pilot.pause()
        (line,) = texts(pane)
        assert len(line) == WIDTH
        assert line.startswith("$ rm -f /var/lib/nvls-tui/lock/") and line.endswith("lock/owner.json.tmp")
        assert line.count(" … ") == 1


async def test_a_long_output_line_stays_whole_to_scroll_to():
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(OutputPane)
        out = "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus. " * 2
        pane.add([PaneLine(out.strip(), "out")])
        await pilot.pause()
        assert texts(pane) == [out.strip()]
        assert pane.virtual_size.width > WIDTH  # the pane scrolls sideways to its end


async def test_a_line_that_fits_is_shown_whole():
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(OutputPane)
        pane.add([PaneLine("$ rmdir /var/lib/nvls-tui/lock", "cmd"), PaneLine("x" * WIDTH, "out")])
        await pilot.pause()
        assert texts(pane) == ["$ rmdir /var/lib/nvls-tui/lock", "x" * WIDTH]


async def test_lines_written_before_the_pane_knew_its_size_are_cut_the_same_way():
    app = PaneApp([PaneLine(RELEASE, "cmd")])
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        (line,) = texts(app.query_one(OutputPane))
        assert len(line) == WIDTH and line.endswith("lock/owner.json.tmp")

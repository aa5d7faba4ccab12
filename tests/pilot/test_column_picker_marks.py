"""Issue 38 item 9: the column picker drew `▐X▌` for a shown column and for a hidden one alike, told apart only
by colour (nothing on a monochrome terminal or with NO_COLOR). A hidden column's box is now empty."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.pickers import ColumnPicker
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, wait_until


def boxes(picker: ColumnPicker) -> dict[str, str]:
    """Each column's label -> the three cells of its box as drawn."""
    from textual.widgets import SelectionList

    lst = picker.query_one(SelectionList)
    drawn = {}
    for y in range(lst.option_count):
        text = "".join(segment.text for segment in lst.render_line(y))
        drawn[text[4:].strip()] = text[:3]
    return drawn


async def test_a_hidden_column_has_an_empty_box_and_a_shown_one_a_mark():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ColumnPicker), "the column picker")
        picker = app.screen
        before = boxes(picker)
        assert set(before.values()) == {"▐X▌"}, before  # every optional column shows at first
        await pilot.press("space")  # hide the first
        await pilot.pause()
        after = boxes(picker)
        first = next(iter(after))
        assert after[first] == "▐ ▌" and all(box == "▐X▌" for label, box in after.items() if label != first)

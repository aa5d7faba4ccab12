"""Esc on the fleet's filter refilters the grid once (issue 30: the filter key's max was Esc bringing
all rows back). Clearing the box sends its own Changed after Esc has refiltered: that one must not
redraw every row a second time; nor does a key that leaves the filter's words as they were."""

from __future__ import annotations

from tests.pilot.test_console_navigation import SIZE, ready, six_nodes
from tests.waiting import wait_until


async def test_esc_refilters_once_and_a_space_typed_not_at_all():
    app = six_nodes()
    async with app.run_test(size=SIZE) as pilot:
        grid = await ready(app, pilot)
        screen = app.screen
        calls: list[str] = []
        original = screen.refresh_grid

        def counted(*args, **kwargs):
            calls.append(screen.filter_text)
            return original(*args, **kwargs)

        screen.refresh_grid = counted
        await pilot.press("slash", *"gpu03")
        await wait_until(pilot, lambda: grid.visible_hosts == ("gpu03",), "the filter")
        calls.clear()
        await pilot.press("space")  # 'gpu03 ' filters as 'gpu03'
        await pilot.pause()
        assert calls == [] and grid.visible_hosts == ("gpu03",)
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(grid.visible_hosts) == 6, "every row back")
        await pilot.pause()
        await pilot.pause()
        assert calls == [""]  # one refilter, with the filter cleared
        assert not screen.query_one("#filter").display

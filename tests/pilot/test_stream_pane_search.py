"""The smoke test's side pane is searched as the repair screen's panes are: ``/`` as you type, ``n``/``N``, Esc.

A failed smoke test's NCCL lines are read there, and the runbook panes could be searched while this one
could not (issue 28 item 9).
"""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.messages import ActionFinished
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.screens.stream_pane import StreamPane
from nvls_tui.console.widgets.output_pane import OutputPane
from nvls_tui.console.widgets.search_bar import SearchBar
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.search import find
from tests.pilot.test_console_repair import SIZE
from tests.pilot.test_console_repair_actions import confirm
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen, wait_until

WORDS = "Rank"
"""all_reduce_perf prints one ``#  Rank N Group ...`` line per GPU."""


async def test_slash_searches_the_smoke_test_side_pane_and_esc_ends_the_search_before_the_pane(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    finished: list[ActionFinished] = []
    async with app.run_test(size=SIZE, message_hook=lambda m: isinstance(m, ActionFinished) and finished.append(m)
                            ) as pilot:
        await open_node_screen(app, pilot, "gpu01")
        await pilot.press("T")
        await confirm(app, pilot)
        pane = app.screen
        assert isinstance(pane, StreamPane)
        await wait_until(pilot, lambda: finished and pane.outcome is not None, "the smoke test's end")
        total = len(find(pane.search_lines(), WORDS))
        assert total >= 2

        await pilot.press("slash", *WORDS)
        bar = pane.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.border_title == f"search 1/{total}", "the first match")
        await pilot.press("enter")
        output = pane.focused
        assert isinstance(output, OutputPane)
        _, line = pane.search_state.current
        assert WORDS in output.lines[line].text
        assert output.scroll_y <= line < output.scroll_y + output.scrollable_content_region.height
        await pilot.press("n")
        assert bar.border_title == f"search 2/{total}"
        await pilot.press("N", "N")
        assert bar.border_title == f"search {total}/{total}"  # wraps around

        await pilot.press("escape")  # ends the search; the pane stays
        assert not bar.display and app.screen is pane
        await pilot.press("escape")  # now closes the pane
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")

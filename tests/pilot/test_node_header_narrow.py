"""The node screen's header is one line at 80 columns.

`` gpu05   ✖ broken · hgx-h100 · driver 580.82.07 · FM 580.82.07 (failed) · polled 0s ago`` is 86 cells, so
at 80 columns ``0s ago`` wrapped under the title. Where the whole header does not fit, the driver's and
FM's versions move to the GPUs panel's title and the header keeps what the node is and how FM is; where
it fits, nothing moves. A version that could not be read stays ``?`` in the panel (unknown is not shown
as nothing).
"""

from __future__ import annotations

from textual.widgets import Static

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.widgets.node_text import header_text, versions_line
from nvls_tui.model import NodeState
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, wait_until


async def node_screen_at(size: tuple[int, int]) -> tuple[str, int, str]:
    """sim:seed-incident's gpu05 at ``size``: the header's text, its height on screen, the GPUs panel's title."""
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None,
                  clock=lambda: 1_785_000_000.0)
    async with app.run_test(size=size) as pilot:
        await first_poll(app, timeout=30)
        app.open_node("gpu05")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen")
        await pilot.pause()
        await pilot.pause()
        header = app.screen.query_one("#node-header", Static)
        text = "".join(header.render_line(y).text for y in range(header.size.height))
        return text, header.size.height, str(app.screen.query_one("#gpus").border_title)


async def test_at_80_columns_the_header_is_one_line_and_the_versions_are_on_the_gpus_panel():
    text, height, gpus_title = await node_screen_at((80, 24))
    assert height == 1
    assert text.rstrip() == " gpu05   ✖ broken · hgx-h100 · FM failed · polled 0s ago"
    assert gpus_title == "GPUs · driver 580.82.07 · FM 580.82.07"


async def test_at_160_columns_the_header_keeps_the_versions():
    text, height, gpus_title = await node_screen_at((160, 48))
    assert height == 1
    assert "· driver 580.82.07 · FM 580.82.07 (failed) · polled 0s ago" in text
    assert gpus_title == "GPUs"


def test_an_unread_version_stays_a_question_mark():
    never = NodeState(host="gpu09", reachable=False, error="ssh: connect timed out")
    assert versions_line(never) == "driver ? · FM ?"
    assert "driver" not in header_text(never, None, None, versions=False).plain

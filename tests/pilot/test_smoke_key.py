"""The node screen's smoke test is on ``T``, never on a key a search also uses (X3 item 2).

Before, ``n`` was "next match" while a search was on and the smoke test the moment Esc ended it: an operator
still stepping through matches got a smoke test offered on the very next ``n``. A key that takes every GPU
of a node for minutes shares no key with moving around.
"""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.binding_table import SPECS
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.widgets.search_bar import SearchBar
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen, wait_until


def _keys(scope: str) -> set[str]:
    return {k for s in SPECS if s.scope == scope for k in s.key.split(",")}


def test_the_smoke_test_is_T_and_shares_no_key_with_the_search_or_the_fleet_moves():
    (smoke,) = [s for s in SPECS if s.id == "node.smoke"]
    assert smoke.key == "T"
    assert "T" not in _keys("search") and "T" not in _keys("fleet")
    assert not {k for s in SPECS if s.scope == "node" and s.destructive for k in s.key.split(",")} & _keys("search")


async def test_n_after_a_search_ended_offers_no_smoke_test_and_T_does():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                  clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        await pilot.press("slash", *"nvidia-", "enter", "n", "escape")
        assert not screen.query_one(SearchBar).display
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)  # no confirmation: n is no action without a search
        await pilot.press("T")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the smoke test's confirmation")

"""Tab on the node screen moves between its framed panels only, each showing that it has the focus.

Found by a new operator's pass in tmux (tenth session): the first Tab from the holders table went to the screen's
scrolling body itself, which has no frame and no title, so nothing on the screen showed where the focus was.
"""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import open_node_screen


async def test_every_tab_stop_is_a_titled_panel():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0)), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        stops = []
        for _ in range(7):
            await pilot.press("tab")
            await pilot.pause()
            stops.append(screen.focused)
        assert all(w is not None and (w.border_title or w.parent.border_title) for w in stops), \
            [(type(w).__name__, w.id if w else None) for w in stops]
        assert [w.id for w in stops[:3]] == ["gpus", "findings-box", "units"]

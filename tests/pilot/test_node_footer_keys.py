"""Issue 38 item 9: the node screen's footer at 160 columns ended at `U Restore q Quit`; `l` (logs), `S` (ssh),
`y` (yank) and Esc (back) were only in `?`. At 160 columns every one of them is in the footer, on screen."""

from __future__ import annotations

from textual.widgets import Footer

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import open_node_screen


async def test_the_node_footer_shows_logs_ssh_yank_and_back_at_160_columns():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        await pilot.pause()
        footer = screen.query_one(Footer)
        keys = {key.description: key.region for key in footer.query("FooterKey")}
        # The command palette's key is docked at the footer's right end: a key drawn under it is not seen.
        edge = keys["palette"].x if "palette" in keys else footer.region.right
        for label in ("Logs", "ssh", "Yank", "Back", "Restore", "Quit", "SIGTERM"):
            assert label in keys, sorted(keys)
            assert keys[label].width > 0 and keys[label].right <= edge, (label, keys[label], edge)

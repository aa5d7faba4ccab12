"""Issue 38 item 9: in read-only mode the fleet's footer said `r Repair` where `r` shows the dry-run plan and
nothing can start: the label says what the key does there (`Dry run`)."""

from __future__ import annotations

from textual.widgets import Footer

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll


def footer_labels(app) -> dict[str, str]:
    return {b.binding.key: b.binding.description for b in app.active_bindings.values() if b.binding.show}


async def test_read_only_labels_r_as_the_dry_run_it_is():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None, read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        assert footer_labels(app)["r"] == "Dry run"
        shown = [key.description for key in app.screen.query_one(Footer).query("FooterKey")]
        assert "Dry run" in shown and "Repair" not in shown, shown


async def test_a_console_that_may_change_nodes_still_labels_r_repair():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        assert footer_labels(app)["r"] == "Repair"

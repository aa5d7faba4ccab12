"""Once a repair has ended, the repair screen's footer no longer offers ``a Abort node`` and ``A Abort all``.

They were only greyed (check_action None) and still read as actions; nothing runs, so there is nothing to
abort: they are hidden. While the repair runs they are offered.
"""

from __future__ import annotations

import asyncio

from textual.widgets._footer import FooterKey

from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet
from tests.pilot.test_console_repair import SIZE, FaultBackend, start_repair
from tests.test_console_fakes import fixed_clock
from tests.waiting import wait_until


def footer_keys(app) -> set[str]:
    return {key.key for key in app.screen.query(FooterKey)}


async def test_the_abort_keys_are_offered_while_the_repair_runs_and_gone_after_it(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    gate = asyncio.Event()  # the reset waits here: the repair is running while the test looks
    backends = [FaultBackend(fleet, n, gate=gate) if n == "gpu05" else SimulatedBackend(fleet, n) for n in fleet.names]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    gpu05 = backends[fleet.names.index("gpu05")]
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"])
        await wait_until(pilot, gpu05.at_gate.is_set, "the reset to be under way")
        await pilot.pause()
        assert screen.running
        assert {"a", "A"} <= footer_keys(app)
        assert screen.check_action("abort", ()) is True and screen.check_action("abort_all", ()) is True
        gate.set()
        await wait_until(pilot, lambda: screen.finished_at is not None, "the repair to end")
        await pilot.pause()
        assert screen.check_action("abort", ()) is False and screen.check_action("abort_all", ()) is False
        assert not {"a", "A"} & footer_keys(app)
        assert "e" in footer_keys(app)  # the report is what the end offers

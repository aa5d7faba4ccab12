"""The console's workers: a newer request supersedes an older one, so what is shown is what was asked last.

The plan screen plans again when the operator changes what the restore puts back. Two quick toggles
used to start two dry runs side by side; when the first (stale) one finished last, its plan was shown
under a checkbox that said the opposite, and typing the names approved a plan nobody saw.
"""

from __future__ import annotations

import asyncio

from textual.widgets import Checkbox

from nvls_tui.app import NvlsApp
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.screens.node import NodeScreen
from nvls_tui.screens.plan import PlanScreen
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.test_console_repair import SIZE, plain
from tests.test_console_repair_actions import open_node
from tests.test_operations_console import DCGM, unit_by_hand
from tests.waiting import wait_until


class GatedReadBackend(SimulatedBackend):
    """A simulated node whose next read, once a gate is set, waits at that gate (a slow node).

    Attributes:
        gate: the event the next ``snapshot()`` waits for; used once, then cleared.
        at_gate: set when a read reached the gate.
        reads: how many reads ended.
    """

    def __init__(self, fleet, name) -> None:
        super().__init__(fleet, name)
        self.gate: asyncio.Event | None = None
        self.at_gate = asyncio.Event()
        self.reads = 0

    async def snapshot(self):
        gate, self.gate = self.gate, None
        if gate is not None:
            self.at_gate.set()
            await gate.wait()
        state = await super().snapshot()
        self.reads += 1
        return state


def plan_workers(app) -> list:
    """The plan screen's dry runs still running."""
    return [w for w in app.workers if w.group == "plan" and not w.is_finished]


async def test_two_quick_toggles_of_put_back_show_the_plan_of_the_last_choice_even_when_the_first_ends_last(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    backends = [GatedReadBackend(fleet, name) if name == "gpu05" else SimulatedBackend(fleet, name)
                for name in fleet.names]
    gpu05 = next(b for b in backends if b.host == "gpu05")
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        node = await open_node(app, pilot, "gpu05")
        await unit_by_hand(app, pilot, node, "s", DCGM, "inactive")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, NodeScreen), "the fleet")
        await pilot.press("r")  # the cursor is on gpu05, the broken node listed first
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes
                         and not plan_workers(app), "the first plan")
        screen = app.screen
        put_back = screen.query_one("#plan-put-back", Checkbox)
        assert put_back.value and f"$ systemctl start {DCGM}" in plain(screen.query_one("#plan-body-0"))

        gate = gpu05.gate = asyncio.Event()
        put_back.toggle()  # leave it stopped: this dry run is slow
        await wait_until(pilot, lambda: gpu05.at_gate.is_set(), "the slow dry run to read the node")
        (slow,), reads = plan_workers(app), gpu05.reads
        put_back.toggle()  # put it back after all: this dry run is quick
        await wait_until(pilot, lambda: gpu05.reads > reads and all(w is slow for w in plan_workers(app)),
                         "the quick dry run to end")
        gate.set()
        await wait_until(pilot, lambda: not plan_workers(app), "every dry run to end")
        await pilot.pause()

        assert put_back.value
        assert f"$ systemctl start {DCGM}" in plain(screen.query_one("#plan-body-0"))


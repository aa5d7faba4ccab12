"""Pilot tests of the console on the simulated fleets (frozen simulator clock, moved by hand)."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.model import Verdict
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.processes import POD_RESTART
from tests.test_console_fakes import fixed_clock
from tests.waiting import click_shown, first_poll, open_node_screen, wait_until

SIZE = (160, 48)




def holders(app, host="gpu05"):
    return app.fleet.get(host).holders


async def confirm_sigterm(app, pilot) -> None:
    await pilot.press("t")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    await click_shown(pilot, "#confirm")
    await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")


async def test_sigterm_on_gpu05_removes_the_holders_and_kubelet_brings_the_pods_back():
    fleet = load_fleet("sim:seed-incident/gpu[05-06]", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        before = {h.pid: h for h in holders(app)}
        assert any(h.pod for h in before.values()) and any(h.unit for h in before.values())
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("a")
        assert set(app.screen.selected) == set(before)
        await confirm_sigterm(app, pilot)
        await wait_until(pilot, lambda: not set(before) & {h.pid for h in holders(app)}, "the holders to go")
        assert app.fleet.get("gpu06").holders  # the other node was not touched

        # kubelet is still running: a few seconds later it has recreated every pod, with new PIDs.
        fleet.clock.advance(POD_RESTART + 1)
        app.poll_now("gpu05")
        old_pods = {h.pod for h in before.values() if h.pod}
        await wait_until(pilot, lambda: {h.pod for h in holders(app) if h.pod} == old_pods,
                         "kubelet to recreate the pods")
        assert not {h.pid for h in holders(app) if h.pod} & set(before)


async def test_a_holder_that_exited_after_selection_is_reported_gone_and_the_rest_are_signalled():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock)
    notes: list[tuple[str, str]] = []
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("space", "down", "space")
        first, second = app.screen.selected.values()
        fleet.sh("gpu05", "kill", "-TERM", str(first.pid))  # it ends behind the console's back
        app.notify = lambda message, **kw: notes.append((message, kw.get("severity")))
        await confirm_sigterm(app, pilot)
        await wait_until(pilot, lambda: notes, "the outcome")
        message, _ = notes[0]
        assert f"{first.pid}({first.user})" in message and "already gone" in message
        assert f"{second.pid}({second.user}) {second.command}: signalled" in message
        assert "1 of 2 signalled" in message


async def test_the_keyboard_answers_while_the_wedged_node_hangs():
    # The latency itself is measured by bench/ui_bench.py (keys); this proves no key waits for the hang.
    app = NvlsApp(sim_backends(load_fleet("sim:wedged", speed=0)), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.verdict("gpu-ok01") is Verdict.HEALTHY, "the healthy node")
        assert app.verdict("gpu-wedged01") is None  # its nvidia-smi is still hanging
        screen = app.screen
        for _ in range(7):
            before = screen.sort_by_verdict
            app.simulate_key("v")
            await wait_until(pilot, lambda before=before: screen.sort_by_verdict is not before, "the key's action")
        assert app.verdict("gpu-wedged01") is None

"""Enter on the plan's names with something else typed says what to type; nothing starts.

Found by a new operator's pass in tmux (tenth session): on gpu06's plan (`Type gpu06 to go on`), `gpu05` and
Enter did nothing at all, with no word why.
"""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.plan import PlanScreen
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until

SIZE = (160, 48)


async def test_a_wrong_name_on_enter_is_answered_and_starts_nothing(tmp_path):
    fleet = load_fleet("sim:seed-incident", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        app.plan_repair(["gpu05"])
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 1,
                         "the plan")
        plan = app.screen
        plan.query_one("#plan-typed").focus()
        await pilot.press(*"gpu06", "enter")
        said = lambda: [str(n.message) for n in app._notifications if "to go on" in str(n.message)]  # noqa: E731
        await wait_until(pilot, said, "the answer to the wrong name")
        assert said()[-1] == "gpu06 is not what this plan repairs: type gpu05 to go on (Esc cancels)."
        assert app.screen is plan  # still the plan: nothing started
    assert not any(argv[:2] == ["systemctl", "stop"] for _, argv in fleet.node("gpu05").cmdlog)

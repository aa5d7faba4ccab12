"""Keys held for a widget that is not there yet: what is replayed, what is dropped, and what it says."""

from __future__ import annotations

from textual import events

from nvls_tui.console.widgets.key_hold import KeyHold, dropped_notice, split_replay
from tests.waiting import first_poll


def keys(*names: str) -> list[events.Key]:
    return [events.Key(n, n if len(n) == 1 else None) for n in names]


def test_everything_is_replayed_when_no_key_stops_it():
    replay, dropped = split_replay(keys("g", "p", "u"), frozenset({"enter"}))
    assert [k.key for k in replay] == ["g", "p", "u"] and dropped == []


def test_an_enter_and_every_key_after_it_are_dropped():
    replay, dropped = split_replay(keys("g", "enter", "x", "enter"), frozenset({"enter"}))
    assert [k.key for k in replay] == ["g"]
    assert [k.key for k in dropped] == ["enter", "x", "enter"]


def test_the_notice_names_the_enter_and_the_keys_after_it():
    hold = KeyHold(lambda: True, "the plan's typed confirmation")
    text = dropped_notice(hold, keys("enter", "x", "y"), delivered=True)
    assert text.startswith("Enter was typed before the plan's typed confirmation was shown")
    assert "(nor 2 keys after it)" in text


def test_the_notice_counts_keys_for_a_widget_that_never_came():
    hold = KeyHold(lambda: False, "the plan's typed confirmation")
    assert dropped_notice(hold, keys("g"), delivered=False) == (
        "1 key typed for the plan's typed confirmation was not used: it was not shown.")


def burst(app, *names: str) -> None:
    """Keys queued together, as a paste reaches the App (Pilot's ``press`` waits for idle after each)."""
    for event in keys(*names):
        app.post_message(event)


async def read_only_console():
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.app import NvlsApp
    from nvls_tui.sim.fleet import load_fleet
    from tests.test_console_fakes import fixed_clock

    return NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                   clock=fixed_clock, read_only=True)


async def test_keys_typed_after_r_in_read_only_mode_reach_neither_the_plan_nor_the_fleet():
    from nvls_tui.console.screens.fleet import FleetScreen
    from nvls_tui.console.screens.plan import PlanScreen
    from nvls_tui.console.widgets.fleet_grid import FleetGrid
    from tests.waiting import wait_until

    app = await read_only_console()
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        first = grid.current_host
        notices: list[str] = []
        app.notify = lambda message, **_: notices.append(message)  # type: ignore[method-assign]
        burst(app, "r", "j", "enter")  # j would move the fleet's cursor, Enter press Cancel
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes
                         and app._hold is None, "the plan and the hold settled")
        assert isinstance(app.screen, PlanScreen)  # Enter did not press Cancel
        assert notices == ["2 keys typed for the plan's typed confirmation were not used: it was not shown."]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet again")
        assert grid.current_host == first

"""Issue 28 item 8: sort the fleet by any column (O, again to reverse; the top line says the order) and
choose the grid's columns (c); both last the session. Unknown values sort last in either direction."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.fleet import FleetScreen
from nvls_tui.console.screens.pickers import ColumnPicker, SortPicker
from nvls_tui.console.widgets.banner import FleetSummary
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.fleet_sort import SortOrder, cell_value, natural, ordered
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, wait_until

HOSTS = ["gpu1", "gpu2", "gpu3", "gpu4", "gpu10"]


def test_numbers_sort_largest_first_then_reversed_and_unknowns_stay_last_both_ways():
    cells = {"gpu1": "3", "gpu2": "?", "gpu3": "8", "gpu4": "3", "gpu10": "–"}

    def value(host: str):
        return cell_value("holders", cells[host])

    first = SortOrder().picked("holders")
    assert ordered(HOSTS, first, value) == ["gpu3", "gpu1", "gpu4", "gpu2", "gpu10"]  # ties in fleet order
    assert ordered(HOSTS, first.picked("holders"), value) == ["gpu1", "gpu4", "gpu3", "gpu2", "gpu10"]
    assert first.words("hold") == "sorted by hold ↓"
    assert first.picked("holders").words("hold") == "sorted by hold ↑"


def test_words_sort_naturally_a_to_z_and_the_fleet_order_can_be_reversed():
    assert sorted(["gpu10", "gpu9", "GPU2"], key=natural) == ["GPU2", "gpu9", "gpu10"]
    by_host = SortOrder().picked("host")
    assert ordered(list(reversed(HOSTS)), by_host, lambda h: cell_value("host", h)) == HOSTS
    assert ordered(HOSTS, SortOrder(""), lambda h: None) == HOSTS
    assert ordered(HOSTS, SortOrder("").picked(""), lambda h: None) == list(reversed(HOSTS))
    assert SortOrder().words() == "sorted by verdict"
    assert SortOrder("").words() == "fleet order"
    assert cell_value("smoke", "✔ 291.9") == (291.9,) and cell_value("smoke", "–") is None


def sim_app() -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None, clock=fixed_clock)


async def pick(pilot, app, label: str) -> None:
    await pilot.press("O")
    await wait_until(pilot, lambda: isinstance(app.screen, SortPicker), "the sort picker")
    options = app.screen.query_one("#picker-list")
    index = next(i for i in range(options.option_count)
                 if str(options.get_option_at_index(i).prompt) == label)
    options.highlighted = index
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet again")
    await pilot.pause()


async def test_o_sorts_by_holders_again_reverses_and_the_top_line_says_so():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        screen, grid = app.screen, app.screen.query_one(FleetGrid)
        summary = screen.query_one(FleetSummary)
        holders = {h: int(grid.get_cell(h, "holders").plain) for h in grid.visible_hosts}
        await pick(pilot, app, "hold")
        counts = [holders[h] for h in grid.visible_hosts]
        assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
        assert "sorted by hold ↓" in str(summary.render())
        await pick(pilot, app, "hold  ↓")  # the current column, marked: again reverses
        counts = [holders[h] for h in grid.visible_hosts]
        assert counts == sorted(counts)
        assert "sorted by hold ↑" in str(summary.render())
        await pilot.press("v")  # back to verdict order
        await pilot.pause()
        assert "sorted by verdict" in str(summary.render()) and grid.visible_hosts[0] == "gpu05"


async def test_c_hides_a_column_for_the_session_and_gives_its_room_to_the_story():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        story = grid.layout_now.width_of("note") or 0
        assert "age" in grid.layout_now.keys
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ColumnPicker), "the column picker")
        columns = app.screen.query_one("#picker-list")
        columns.highlighted = next(i for i in range(columns.option_count)
                                   if columns.get_option_at_index(i).value == "age")
        await pilot.press("space", "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet again")
        await pilot.pause()
        assert "age" not in grid.layout_now.keys
        assert (grid.layout_now.width_of("note") or 0) > story
        app.open_node("gpu05")
        await pilot.pause()
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet again")
        assert "age" not in app.screen.query_one(FleetGrid).layout_now.keys  # kept for the session

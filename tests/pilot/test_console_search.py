"""Issue 28 items 9 and 16: search inside a screen (``/``, ``n``/``N``, "3/7", Esc), and a help that
shows the keys of the screen it was opened on first and filters as you type."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.binding_table import keymap_problem
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.help import HelpScreen, scope_order
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.console.widgets.search_bar import SearchBar
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.search import Search, find
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, open_node_screen, wait_until

LINES = [("a", "nvidia-fabricmanager failed"), ("b", "kubelet active"), ("c", "nvidia-dcgm active"),
         ("d", "Nvidia-Persistenced inactive")]


def test_find_is_case_insensitive_in_screen_order_and_an_empty_query_finds_nothing():
    assert find(LINES, "NVIDIA") == ("a", "c", "d")
    assert find(LINES, "  ") == ()
    assert find(LINES, "nothing here") == ()


def test_a_search_counts_steps_and_wraps():
    search = Search.over(LINES, "nvidia")
    assert (search.current, search.label()) == ("a", "1/3")
    assert search.step(1).step(1).label() == "3/3"
    assert search.step(1).step(1).step(1).current == "a"  # wraps
    assert search.step(-1).current == "d"
    assert Search.over(LINES, "nvidia", near="c").label() == "2/3"  # searching again keeps its place
    assert Search.over(LINES, "zzz").label() == "no match"
    assert Search.over(LINES, "zzz").step(1).current is None
    assert Search().label() == ""


def test_the_search_keys_may_share_a_key_with_a_screen_but_not_with_each_other():
    assert keymap_problem({}) is None  # n is both the fleet's next broken node and the search's next match
    assert "search.next" in (keymap_problem({"search.next": "N"}) or "")


def test_the_help_lists_the_screen_s_own_keys_first():
    assert scope_order("node")[:2] == ["node", "app"]
    assert scope_order(None)[0] == "app"


def sim_app(read_only: bool = False) -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                   clock=fixed_clock, read_only=read_only)


async def test_slash_searches_the_node_screen_n_steps_and_esc_ends_it():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        holders = screen.query_one("#holders")
        await pilot.press("slash", *"nvidia-")
        bar = screen.query_one(SearchBar)
        assert bar.display and screen.focused is bar
        total = len(find(screen.search_lines(), "nvidia-"))
        assert total >= 4
        assert bar.border_title == f"search 1/{total}"
        await pilot.press("enter")
        where, row = screen.search_state.current
        table = screen.query_one(f"#{where}")
        assert screen.focused is table and table.cursor_row == row
        assert "nvidia-" in "  ".join(str(c) for c in table.get_row_at(row)).lower()
        await pilot.press("n")
        assert bar.border_title == f"search 2/{total}"
        await pilot.press("N", "N")
        assert bar.border_title == f"search {total}/{total}"  # wraps backwards
        assert isinstance(app.screen, NodeScreen)  # n stepped: no smoke test was offered
        await pilot.press("escape")
        assert not bar.display and isinstance(app.screen, NodeScreen)  # Esc ended the search, not the screen
        assert screen.focused is holders
        await pilot.press("T")  # the smoke test is T, never n (tests/pilot/test_smoke_key.py)
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the smoke test's confirmation")


async def test_a_query_that_matches_nothing_says_so_and_esc_still_ends_only_the_search():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        await pilot.press("slash", *"no-such-thing")
        bar = screen.query_one(SearchBar)
        assert bar.border_title == "search no match"
        await pilot.press("escape")
        assert not bar.display and isinstance(app.screen, NodeScreen)
        await pilot.press("slash", "escape")  # an empty search ends as well
        assert not bar.display and isinstance(app.screen, NodeScreen)


async def test_help_shows_the_node_keys_first_and_slash_filters_its_rows():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        help_screen = app.screen
        table = help_screen.query_one("#help-table")

        def rows() -> list[list[str]]:
            return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]

        everything = len(rows())
        assert rows()[0][0] == "node" and "node screen's keys first" in str(help_screen.query_one("#help-title").render())
        await pilot.press("slash", *"sigterm")
        assert [r[3] for r in rows()] == ["node.sigterm", "runbook.sigterm"]
        assert help_screen.query_one(SearchBar).border_title == "search 1/2"
        await pilot.press("enter", "n")
        assert table.cursor_row == 1
        await pilot.press("escape")  # ends the filter, the help stays
        assert isinstance(app.screen, HelpScreen) and len(rows()) == everything
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen), "the node screen again")


async def test_help_from_the_fleet_lists_the_fleet_keys_first():
    app = sim_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        table = app.screen.query_one("#help-table")
        assert str(table.get_row_at(0)[0]) == "fleet"


async def test_textual_s_own_palette_entries_are_the_documented_ones_and_the_screenshot_is_private(tmp_path,
                                                                                                  monkeypatch):
    # Keys (Textual's key panel), Theme (the cells' colours are read once from the stylesheet) and its
    # Quit (app: Quit asks first) are gone; Maximize/Minimize and the screenshot stay, and docs say so.
    from pathlib import Path

    import nvls_tui.console.export

    monkeypatch.setattr(nvls_tui.console.export, "export_dir", lambda: tmp_path / "exports")
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_node_screen(app, pilot, "gpu05")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles == ["Maximize", "app: Save a screenshot (SVG)"]
        doc = (Path(__file__).resolve().parents[2] / "docs" / "console.md").read_text()
        assert all(f"`{t}`" in doc for t in [*titles, "Minimize"])
        shot = next(c for c in app.get_system_commands(app.screen) if "screenshot" in c.title)
        shot.callback()
        await wait_until(pilot, lambda: list((tmp_path / "exports").glob("screen-*.svg")), "the screenshot file")
        (svg,) = (tmp_path / "exports").glob("screen-*.svg")
        assert svg.stat().st_mode & 0o777 == 0o600 and "gpu05" in svg.read_text()
        assert any(str(svg) in n.message for n in app._notifications)


async def test_slash_searches_the_repair_screen_s_output_panes():
    # The output panes of a finished repair (recorded run, as the snapshots replay it): / finds a command
    # in them, Enter scrolls the pane to it, n steps, Esc ends the search and leaves the screen up.
    from nvls_tui.console.screens.runbook import RunbookScreen
    from nvls_tui.console.widgets.output_pane import OutputPane
    from snapshots.test_snapshots_repair import replay
    from snapshots.test_snapshots_repair import sim_app as repair_app

    app = repair_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await replay(pilot)
        screen = app.screen
        assert isinstance(screen, RunbookScreen)
        await pilot.press("slash", *"nvidia-smi -r")
        bar = screen.query_one(SearchBar)
        total = len(find(screen.search_lines(), "nvidia-smi -r"))
        assert total >= 2  # a reset on each node
        assert bar.border_title == f"search 1/{total}"
        await pilot.press("enter")
        pane = screen.focused
        assert isinstance(pane, OutputPane)
        key, line = screen.search_state.current
        assert "nvidia-smi -r" in pane.lines[line].text
        assert pane.scroll_y <= line < pane.scroll_y + pane.scrollable_content_region.height
        await pilot.press("n")
        assert bar.border_title == f"search 2/{total}"
        await pilot.press("escape")
        assert not bar.display and app.screen is screen

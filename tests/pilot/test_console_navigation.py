"""k9s/lazygit habits in the fleet (issue 14, item 7): j/k, g/G, Home/End, n/N to the next broken node,
a node-set filter beside the substring one, a visible selection mark, and help that says space moves down."""

from __future__ import annotations

from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.fleet import matches
from nvls_tui.console.screens.help import HelpScreen
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from tests.test_console_fakes import FakeBackend, fixed_clock, make_node
from tests.waiting import first_poll, wait_until

SIZE = (160, 48)
HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06")
BROKEN = ("gpu02", "gpu05")


def six_nodes() -> NvlsApp:
    backends = [FakeBackend(make_node(h, broken=h in BROKEN)) for h in HOSTS]
    return NvlsApp(backends, poll_interval=None, clock=fixed_clock)


async def ready(app, pilot) -> FleetGrid:
    await first_poll(app)
    await pilot.pause()
    screen = app.screen
    screen.action_toggle_sort()  # fleet order: gpu01 .. gpu06
    await pilot.pause()
    grid = screen.query_one(FleetGrid)
    assert grid.visible_hosts == HOSTS
    return grid


async def test_j_k_g_G_home_and_end_move_the_cursor():
    app = six_nodes()
    async with app.run_test(size=SIZE) as pilot:
        grid = await ready(app, pilot)
        await pilot.press("j", "j")
        assert grid.current_host == "gpu03"
        await pilot.press("k")
        assert grid.current_host == "gpu02"
        await pilot.press("G")
        assert grid.current_host == "gpu06"
        await pilot.press("g")
        assert grid.current_host == "gpu01"
        await pilot.press("end")
        assert grid.current_host == "gpu06"
        await pilot.press("home")
        assert grid.current_host == "gpu01"


async def test_n_and_N_jump_to_the_next_and_previous_broken_node_and_wrap():
    app = six_nodes()
    async with app.run_test(size=SIZE) as pilot:
        grid = await ready(app, pilot)
        await pilot.press("n")
        assert grid.current_host == "gpu02"
        await pilot.press("n")
        assert grid.current_host == "gpu05"
        await pilot.press("n")
        assert grid.current_host == "gpu02"  # wraps
        await pilot.press("N")
        assert grid.current_host == "gpu05"


def test_a_node_set_in_the_filter_matches_the_hosts_it_names():
    assert matches("gpu[04-05]", "gpu05", None, [])
    assert not matches("gpu[04-05]", "gpu06", None, [])
    assert matches("gpu[01-08] broken", "gpu05", None, ["FM_NOT_RUNNING"]) is False
    assert matches("gpu[01,05] fm_not", "gpu05", None, ["FM_NOT_RUNNING"])


async def test_the_filter_takes_a_node_set():
    app = six_nodes()
    async with app.run_test(size=SIZE) as pilot:
        grid = await ready(app, pilot)
        await pilot.press("slash")
        await pilot.press(*"gpu[03-04]")
        await wait_until(pilot, lambda: grid.visible_hosts == ("gpu03", "gpu04"), "the node-set filter")


async def test_a_selected_node_carries_a_visible_mark_and_help_says_space_moves_down():
    app = six_nodes()
    async with app.run_test(size=SIZE) as pilot:
        grid = await ready(app, pilot)
        await pilot.press("space")
        assert grid.current_host == "gpu02"  # space selects and moves down
        assert str(grid.get_cell("gpu01", "host")).startswith("● ")
        assert not str(grid.get_cell("gpu02", "host")).startswith("● ")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        from textual.widgets import DataTable

        table = app.screen.query_one(DataTable)
        rows = [" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
        space = next(r for r in rows if "fleet.select" in r)
        assert "moves the cursor down" in space and "●" in space


async def test_enter_submits_a_typed_confirmation_once_it_matches_and_not_before():
    from textual.app import App

    from nvls_tui.console.screens.confirm import ConfirmScreen

    results: list[bool] = []

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(ConfirmScreen("Reset gpu05?", ["nvidia-smi -r"], type_to_confirm="gpu05"),
                             results.append)

    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"gpu0", "enter")  # not yet the name: stays open
        await pilot.pause()
        assert results == [] and isinstance(app.screen, ConfirmScreen)
        await pilot.press("5", "enter")
        await wait_until(pilot, lambda: results == [True], "the confirmation")


async def test_a_value_wider_than_its_column_is_cut_with_a_mark_and_a_real_driver_fits():
    backends = [FakeBackend(make_node("gpu01").replace(driver="580.159.04", fm_version="580.159.04")),
                FakeBackend(make_node("gpu02").replace(driver="580.159.04-custom-build", fm_version="x"))]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app)
        await pilot.pause()
        grid = app.screen.query_one(FleetGrid)
        assert str(grid.get_cell("gpu01", "driver")) == "580.159.04"  # was "580.159.0": a wrong version
        cut = str(grid.get_cell("gpu02", "driver"))
        assert cut.endswith("…") and len(cut) == grid.widths["driver"]


async def test_reordering_keeps_working_while_a_node_is_selected():
    app = six_nodes()
    async with app.run_test(size=SIZE) as pilot:
        grid = await ready(app, pilot)
        await pilot.press("space")
        app.screen.action_toggle_sort()  # verdict order moves the rows; the marked host cell must still sort
        await pilot.pause()
        assert grid.visible_hosts[:2] == ("gpu02", "gpu05")
        assert str(grid.get_cell("gpu01", "host")).startswith("● ")


async def test_the_repair_header_keeps_the_audit_log_path_whole_at_80_columns(tmp_path):
    import math

    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.sim.fleet import load_fleet
    from tests.pilot.test_console_repair import start_repair

    audit = tmp_path / "a-rather-long-audit-directory-name-as-operators-have" / "audit"
    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(audit))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start_repair(app, pilot, ["gpu05"])
        await wait_until(pilot, lambda: screen.audit_path is not None, "the run log")
        screen.draw_header()
        await pilot.pause()
        header = screen.query_one("#runbook-header")
        lines = header.render().plain.split("\n") if hasattr(header.render(), "plain") else []
        path_line = next(line for line in lines if "audit log:" in line)
        assert str(screen.audit_path) in path_line
        # Tall enough for every line, the path's wrapped too: nothing is cut off the screen.
        need = sum(max(1, math.ceil(len(line) / header.size.width)) for line in lines)
        assert header.size.height >= need


async def test_the_plan_says_what_matters_first_and_folds_the_bookkeeping(tmp_path):
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.console.screens.plan import PlanScreen
    from nvls_tui.sim.fleet import load_fleet

    fleet = load_fleet("sim:seed-incident/gpu05", speed=0)
    app = NvlsApp(sim_backends(fleet), poll_interval=None, clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and len(app.screen.outcomes) == 1, "plan")
        from rich.console import Console

        from nvls_tui.console.screens.plan import plan_text

        console = Console(width=120, record=True)
        console.print(plan_text(app.screen.outcomes["gpu05"]))
        text = console.export_text()
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        assert lines[0] == "What this repair does:"
        summary = text[:text.index("1. preflight")]
        assert "stops " in summary and "kubelet.service" in summary and "GPU Operator pods" in summary
        assert "resets all 8 GPUs and 4 NVSwitches (nvidia-smi -r)" in summary  # counted, as the issue asks
        assert "then starts again: " in summary
        assert "$ tee" not in text and "$ mkdir" not in text and "bookkeeping" in text
        assert "$ nvidia-smi -r" in text

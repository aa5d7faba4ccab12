"""Issue 38 item 8 (its first part): k9s's `:` did nothing, not even a message. The fleet screen's `:` opens a
command line with completion: `:node gpu06` (or `:n`), `:logs gpu06`, `:sort hold` (a column's key or label),
`:filter broken`, `:help`, `:q`; anything else is one line saying what is known."""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.command_bar import CommandBar
from nvls_tui.console.screens.fleet import FleetScreen
from nvls_tui.console.screens.logs import LogsScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.views.commands import Command, completions, parse_command
from tests.waiting import first_poll, wait_until

HOSTS = ["gpu01", "gpu05", "gpu06"]
COLUMNS = [("", "fleet order"), ("verdict", "verdict"), ("holders", "hold"), ("fm", "FM unit")]


def test_each_command_is_read_with_its_argument_and_a_typo_is_one_sentence():
    assert parse_command("node gpu06", HOSTS, COLUMNS) == Command("node", "gpu06")
    assert parse_command("  n   gpu05 ", HOSTS, COLUMNS) == Command("node", "gpu05")
    assert parse_command("logs gpu01", HOSTS, COLUMNS) == Command("logs", "gpu01")
    assert parse_command("sort hold", HOSTS, COLUMNS) == Command("sort", "holders")  # the label shown
    assert parse_command("sort fm", HOSTS, COLUMNS) == Command("sort", "fm")  # or the key
    assert parse_command("filter broken", HOSTS, COLUMNS) == Command("filter", "broken")
    assert parse_command("q", HOSTS, COLUMNS) == Command("quit", "")
    assert parse_command("help", HOSTS, COLUMNS) == Command("help", "")
    assert parse_command("node gpu99", HOSTS, COLUMNS) == "no node gpu99 in this console (:node HOST)"
    assert parse_command("sort colour", HOSTS, COLUMNS).startswith("no column colour to sort by (known: ")
    assert parse_command("nde gpu05", HOSTS, COLUMNS) == (
        "unknown command nde (known: node HOST, logs HOST, sort COLUMN, filter TEXT, help, q)")


def test_completion_offers_the_commands_and_their_arguments():
    offered = completions(HOSTS, COLUMNS)
    assert "node gpu06" in offered and "logs gpu05" in offered and "sort hold" in offered and "q" in offered


async def test_colon_on_the_fleet_opens_the_command_line_and_runs_what_is_typed():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)
    notes: list[str] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        fleet = app.screen
        assert isinstance(fleet, FleetScreen)
        await pilot.press("colon")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandBar), "the command line")
        await pilot.press(*"sort hold", "enter")
        await wait_until(pilot, lambda: app.screen is fleet and fleet.grid_order.column == "holders", "the sort")
        app.notify = lambda message, **kw: notes.append(str(message))
        await pilot.press("colon", *"nde", "enter")
        await wait_until(pilot, lambda: notes, "the refusal")
        assert notes[0].startswith("unknown command nde") and app.screen is fleet
        await pilot.press("colon", *"node gpu06", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeScreen) and app.screen.host == "gpu06", "gpu06")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is fleet, "the fleet again")
        await pilot.press("colon", *"logs gpu05", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen), "gpu05's logs")


async def test_tab_takes_the_completion_shown():
    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.press("colon", *"node gpu0")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandBar), "the command line")
        bar = app.screen
        await pilot.press("tab")
        await pilot.pause()
        assert bar.value.startswith("node gpu0") and bar.value in completions(
            list(app.fleet.hosts), [("verdict", "verdict")])

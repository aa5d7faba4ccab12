"""Snapshots of the console on simulated fleets: fixed clock, frozen simulator, one poll, no live ages."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.confirm import ConfirmScreen
from nvls_tui.console.screens.help import HelpScreen
from nvls_tui.console.screens.node import NodeScreen
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import first_poll, give_up_on, wait_until

FIXED_NOW = 1_785_000_000.0
# Every snapshot test on one worker (tests/unit/test_snapshot_group.py says why).
pytestmark = pytest.mark.xdist_group("snapshots")
# Every screen at the two sizes operators use: a wide terminal and the 80x24 of a console over a jump host.
SIZES = pytest.mark.parametrize("size", [(160, 48), (80, 24)], ids=["160x48", "80x24"])


def sim_app(spec: str = "sim:seed-incident", **kwargs) -> NvlsApp:
    """The console on a frozen simulated fleet (speed 0), polling each node once."""
    backends = sim_backends(load_fleet(spec, speed=0))
    return NvlsApp(backends, poll_interval=None, clock=lambda: FIXED_NOW, **kwargs)




async def polled(pilot) -> None:
    """Every node answered (or timed out) once, and the screen caught up."""
    await first_poll(pilot.app, timeout=30)
    await pilot.pause()


async def gpu05(pilot) -> None:
    await polled(pilot)
    pilot.app.open_node("gpu05")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, NodeScreen), "the node screen")
    await pilot.pause()


async def holders_selected(pilot) -> None:
    await gpu05(pilot)
    await pilot.press("space", "down", "down", "space")
    await pilot.pause()


async def sigterm_confirmation(pilot) -> None:
    await holders_selected(pilot)
    await pilot.press("t")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), "the confirmation")
    await pilot.pause()


async def help_screen(pilot) -> None:
    await polled(pilot)
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), "the help")
    await pilot.pause()


async def scrolled(pilot) -> None:
    await polled(pilot)
    await pilot.press("pagedown", "pagedown", "down", "down")
    await pilot.pause()


@SIZES
def test_the_seed_incident_fleet(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=polled)


@SIZES
def test_the_node_screen_of_gpu05(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=gpu05)


@SIZES
def test_holders_selected_on_gpu05(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=holders_selected)


@SIZES
def test_the_sigterm_confirmation(snap_compare, size):
    assert snap_compare(sim_app(), terminal_size=size, run_before=sigterm_confirmation)


@SIZES
def test_the_help_screen(snap_compare, size, monkeypatch):
    # The title names the config file (XDG_CONFIG_HOME's): the usual one, so the picture is the same everywhere.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(Path.home() / ".config"))
    assert snap_compare(sim_app(), terminal_size=size, run_before=help_screen)


@SIZES
def test_read_only_mode_on_gpu05(snap_compare, size):
    assert snap_compare(sim_app(read_only=True), terminal_size=size, run_before=gpu05)


@SIZES
def test_an_unreachable_node(snap_compare, size):
    app = sim_app("sim:wedged")
    give_up_on(app, ["gpu-wedged01"], 0.5)  # gpu-ok01 answers however busy the machine is (tests/waiting.py)
    assert snap_compare(app, terminal_size=size, run_before=polled)


@SIZES
def test_the_fleet_256_scrolled(snap_compare, size):
    assert snap_compare(sim_app("sim:fleet-256"), terminal_size=size, run_before=scrolled)


def test_the_fleet_at_100x30(snap_compare):
    assert snap_compare(sim_app(), terminal_size=(100, 30), run_before=polled)


async def ask_two_rounds(pilot) -> None:
    """Ask mode: the first poll's round, then a second poll's: gpu05 proposed (the debounce held), gpu06 held."""
    app = pilot.app
    await polled(pilot)
    await wait_until(pilot, lambda: app.ask.pilot.number == 1, "the first round")
    app.poll_now()
    await wait_until(pilot, lambda: app.ask.pilot.number == 2, "the second round")
    app.screen.refresh_grid()
    await pilot.pause()


@SIZES
def test_ask_mode_proposes_gpu05(snap_compare, size, tmp_path):
    from nvls_tui.console.ask import AskMode
    from nvls_tui.settings import AutopilotSettings

    hosts = [f"gpu0{i}" for i in range(1, 9)]
    ask = AskMode.open(AutopilotSettings(mode="ask", state_dir=str(tmp_path), limits={"breaker_percent": 50.0}),
                       hosts, audit_dir=str(tmp_path / "audit"), every=0)
    assert snap_compare(sim_app(ask=ask), terminal_size=size, run_before=ask_two_rounds)

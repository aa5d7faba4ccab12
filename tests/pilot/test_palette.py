"""The colour roles: every role is coloured in styles/palette.tcss and read from it when the console mounts."""

from __future__ import annotations

import re

from rich.style import Style

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp, style_dir
from nvls_tui.console.widgets import cells, palette
from nvls_tui.model import NodeState
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock


def test_every_role_has_exactly_one_rule_in_the_stylesheet():
    text = (style_dir() / "palette.tcss").read_text()
    named = re.findall(r"App > \.nvls--([a-z]+) \{", text)
    assert sorted(named) == sorted(palette.ROLES)


async def test_the_console_reads_the_role_colours_from_the_stylesheet():
    app = NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert palette.STYLE["bad"].color is not None
        assert palette.STYLE["bad"].color.triplet.hex == "#ff5f5f"
        assert palette.STYLE["healthy"].bold
        assert palette.STYLE["ok"].bold is not True
        assert palette.STYLE["selected"].reverse
        # Every role got a colour: none is left at the null style.
        assert [role for role in palette.ROLES if palette.STYLE[role].color is None] == []


def test_a_version_mismatch_takes_the_bad_role(monkeypatch):
    roles = {role: Style(color=f"color({i + 1})") for i, role in enumerate(palette.ROLES)}
    monkeypatch.setattr(palette, "STYLE", roles)
    monkeypatch.setattr(cells, "STYLE", roles)
    _, fm = cells.version_texts(NodeState("g", driver="580.82.07", fm_version="580.65.06"))
    assert fm.style == roles["bad"]


async def test_a_node_found_simulated_by_its_poll_raises_the_banner_and_a_lab_node_says_lab():
    # Lab nodes are reached over plain SSH: only the poll (the node's marker file) says they are
    # simulated, so the banner cannot be decided at start-up.
    from nvls_tui.console.widgets.banner import ModeBanner
    from tests.test_console_fakes import FakeBackend, make_node
    from tests.waiting import wait_until

    backend = FakeBackend(make_node("gpu05").replace(simulated=True, lab=True))
    backend.simulated = False
    app = NvlsApp([backend], poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        banner = app.screen.query_one(ModeBanner)
        await wait_until(pilot, lambda: banner.display and "LAB" in str(banner.render()), "the LAB banner")
        assert "simulated GPUs" in str(banner.render())


# ---- which commands the palette offers: the screen says (COMMANDS and palette_commands) ----------------
def palette_titles(screen) -> list[str]:
    """The titles the palette lists over ``screen``: the app's provider's, then the screen's own."""
    from nvls_tui.console.commands import ConsoleCommands, ScreenCommands

    providers = [ConsoleCommands] + [p for p in (ScreenCommands,) if p in type(screen).COMMANDS]
    return [title for provider in providers for title, _, _ in provider(screen).commands()]


async def test_each_screen_offers_its_own_commands_and_the_plan_screen_none_of_the_fleets(tmp_path):
    from nvls_tui.console.screens.plan import PlanScreen
    from tests.waiting import first_poll, open_node_screen, wait_until

    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu[05-06]", speed=0)), poll_interval=None,
                  clock=fixed_clock, audit_dir=str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app, timeout=30)
        await pilot.pause()
        nodes = ["node: Open gpu05", "node: Open gpu06"]
        app_keys = ["app: Show help", "app: Quit"]
        fleet = palette_titles(app.screen)
        assert fleet[:2] == app_keys and fleet[2:4] == nodes
        assert "fleet: Toggle sort by verdict" in fleet and "fleet: Repair selected nodes" in fleet
        assert not any(t.startswith(("holders:", "unit:", "repair:")) for t in fleet)

        node = await open_node_screen(app, pilot, "gpu05")
        titles = palette_titles(node)
        assert "node: Poll gpu05 now" in titles and "node: Restart Fabric Manager on gpu05" in titles
        assert any(t.startswith("unit: Stop ") and t.endswith(" on gpu05") for t in titles)
        assert not any(t.startswith("fleet:") for t in titles)

        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not node, "the fleet again")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen.outcomes, "the plan")
        # The plan offers only what applies anywhere: the fleet's keys ran nothing there.
        assert palette_titles(app.screen) == app_keys + nodes


async def test_a_read_only_node_screen_offers_no_unit_and_no_command_that_changes_the_node(tmp_path):
    from tests.waiting import open_node_screen

    app = NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0)), poll_interval=None,
                  clock=fixed_clock, read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        node = await open_node_screen(app, pilot, "gpu05")
        titles = palette_titles(node)
    assert "node: Poll gpu05 now" in titles
    assert not any(t.startswith("unit:") for t in titles)
    assert not any(w in t for t in titles for w in ("SIGTERM", "Reset", "Restart", "Restore"))

"""The help's title names the config file the console reads its keymap from: ``--config FILE`` where given, else
``$XDG_CONFIG_HOME/nvls-tui/config.toml`` (``~`` for the home directory).

Found by a new operator's pass in tmux (tenth session): with ``XDG_CONFIG_HOME`` set, the title still said
``~/.config/nvls-tui/config.toml``.
"""

from __future__ import annotations

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.screens.help import HelpScreen
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import wait_until


async def title_of_help(app: NvlsApp) -> str:
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        return str(app.screen.query_one("#help-title").render())


def sim_app(**kwargs) -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet("sim:seed-incident/gpu05", speed=0)), poll_interval=None,
                   clock=fixed_clock, **kwargs)


async def test_the_help_names_the_xdg_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert f"remap in {tmp_path / 'cfg' / 'nvls-tui' / 'config.toml'}:" in await title_of_help(sim_app())


async def test_the_help_names_the_config_file_given(tmp_path):
    given = tmp_path / "ops.toml"
    assert f"remap in {given}:" in await title_of_help(sim_app(config_path=given))

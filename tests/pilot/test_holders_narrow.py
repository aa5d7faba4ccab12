"""Issue 28 item 1 at 80x24: the holders table shows what decides a SIGTERM (pid, kind, command).

At 80 columns the table used to show ``pid user kind unit/pod started`` with the command scrolled off
to the right; below ~100 columns the command now comes right after the kind (the owner and start
time follow, reachable by scrolling), and at a wide terminal the order stays as it was.
"""

from __future__ import annotations

import re

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.sim.fleet import load_fleet
from tests.waiting import open_node_screen


def sim_app() -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet("sim:seed-incident", speed=0)), poll_interval=None)


def labels(table) -> list[str]:
    return [c.label.plain for c in table.columns.values()]


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_at_80x24_pid_kind_and_command_of_every_holder_are_on_screen():
    app = sim_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        table = screen.query_one("#holders")
        assert labels(table)[:5] == [" ", "pid", "user", "kind", "command"]
        shown = screen_text(app)
        header = next(line for line in shown.splitlines() if " pid " in line and " kind " in line)
        assert "command" in header  # the header the operator reads names the command column
        # watch's whole command line and nv-hostengine's start are in view on their rows
        assert re.search(r"870000 +ubuntu +watch +watch -n 1 nvidia-smi", shown)
        assert re.search(r"924303 +root +nv-hostengine +/snap/dcgm/62/usr/bin/nv-hoste", shown)


async def test_the_order_follows_the_width_and_a_selection_survives_it():
    app = sim_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu05")
        table = screen.query_one("#holders")
        assert labels(table) == [" ", "pid", "user", "kind", "unit / pod", "started", "command", "devices"]
        await pilot.press("space")  # select the first holder
        await pilot.pause()
        assert len(screen.selected) == 1
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert labels(table)[:5] == [" ", "pid", "user", "kind", "command"]
        assert len(table.rows) == len(app.screen.state.holders)
        marked = [r.value for r in table.rows if table.get_row(r.value)[0].plain == "●"]
        assert marked == [str(pid) for pid in screen.selected]
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.pause()
        assert labels(table)[4:] == ["unit / pod", "started", "command", "devices"]

"""Issue 28 item 11: yank. `y` and the palette's `yank:` entries copy to the clipboard through OSC 52
(Textual's ``App.copy_to_clipboard``), and a toast says what was copied."""

from __future__ import annotations

import json

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.console.app import NvlsApp
from nvls_tui.console.widgets.fleet_grid import FleetGrid
from nvls_tui.console.yank import node_yanks
from nvls_tui.model import Holder, NodeState
from nvls_tui.sim.fleet import load_fleet
from tests.test_console_fakes import fixed_clock
from tests.waiting import first_poll, open_node_screen


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def _app(**kwargs) -> NvlsApp:
    return NvlsApp(sim_backends(load_fleet("seed-incident")), poll_interval=None, clock=fixed_clock, **kwargs)


async def test_y_on_the_fleet_copies_the_host_under_the_cursor_and_says_so():
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await first_poll(app)
        await pilot.pause()
        host = app.screen.query_one(FleetGrid).current_host
        await pilot.press("y")
        await pilot.pause()
        assert host == "gpu05" and app.clipboard == "gpu05"
        assert any(t.startswith("Copied the host: gpu05") for t in _toasts(app)), _toasts(app)


async def test_y_in_the_holders_table_copies_that_holders_command():
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu06")
        table = screen.query_one("#holders")
        screen.set_focus(table)
        await pilot.pause()
        pid = screen._holder_under_cursor()
        holder = next(h for h in app.fleet.get("gpu06").holders if h.pid == pid)
        await pilot.press("y")
        await pilot.pause()
        assert app.clipboard == holder.command
        assert any(t.startswith(f"Copied PID {pid}'s command") for t in _toasts(app))


async def test_the_palette_offers_every_yank_and_read_only_keeps_them(tmp_path):
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    (audit / "repair-old.jsonl").write_text(json.dumps({"event": "step", "node": "gpu06"}) + "\n")
    (audit / "repair-other.jsonl").write_text(json.dumps({"event": "step", "node": "gpu05"}) + "\n")
    app = _app(read_only=True, audit_dir=str(audit))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_node_screen(app, pilot, "gpu06")
        titles = {title: cb for title, cb, _ in screen.palette_commands()}
        yanks = [t for t in titles if t.startswith("yank: ")]
        assert "yank: Copy the host of gpu06" in yanks
        assert "yank: Copy finding FABRIC_OUT_OF_SYNC of gpu06" in yanks
        assert "yank: Copy the --restore command of gpu06" in yanks
        titles["yank: Copy the audit path of gpu06"]()
        await pilot.pause()
        assert app.clipboard == str(audit / "repair-old.jsonl")  # the log that names gpu06, not gpu05's
        titles["yank: Copy the --restore command of gpu06"]()
        assert app.clipboard == "nvls-tui repair gpu06 --restore"


def test_a_hostile_command_line_is_copied_clean_and_on_one_line():
    state = NodeState("gpu01", holders=(Holder(pid=7, user="mallory", command="x\x1b]52;c;ZWNobyBwd24=\x07\nrm -rf ~"),))
    copied = node_yanks("gpu01", state, None, holder_pid=7)[1]
    assert copied.what == "PID 7's command"
    assert "\x1b" not in copied.text and "\x07" not in copied.text and "\n" not in copied.text
    assert copied.text.endswith("rm -rf ~")
